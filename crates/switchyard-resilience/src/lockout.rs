//! Model lockout (SPEC 4.5; scope: provider + connection + model). One
//! [`LockoutTable`] per connection holds its locks, keyed by what they cover: a quota
//! family (429/403/402), the model itself (404), or the exact model (anything else);
//! an explicit scope from a rule wins.
//!
//! Escalation: a failure within the escalation window (the breaker reset timeout
//! plus the previous lockout) counts up, and the lockout is `base × 2^(count−1)`
//! capped at `maxCooldownMs` (fixed `base` without exponential backoff); an upstream
//! reset longer than the base wins (header resets uncapped up to the hint clamp,
//! body/rule ones capped). Recovery: a success halves the failure count (floor) and
//! deletes the entry at 0, even before its timer ends; timer expiry also re-enables
//! (lazily). In memory only. Fail-open: disabled → nothing is locked by status.

use serde::{Deserialize, Serialize};
use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ErrorReason, LockScope};
use switchyard_types::settings::ModelLockoutSettings;

use crate::backoff::{as_i64, exponential, same_herd};
use crate::classify::hints::{HintSource, RetryHint};

/// Lockout parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockoutPolicy {
    /// Master switch for status-driven lockouts.
    pub enabled: bool,
    /// Statuses that lock.
    pub error_codes: Vec<u16>,
    /// First lockout.
    pub base_ms: u32,
    /// Cap.
    pub max_ms: u32,
    /// Highest escalation step.
    pub max_steps: u32,
    /// Exponential escalation.
    pub exponential: bool,
    /// Base escalation window (the breaker reset timeout of the category).
    pub escalation_window_ms: u32,
}

impl LockoutPolicy {
    /// From settings; `escalation_window_ms` is the category's breaker reset timeout.
    pub fn from_settings(s: &ModelLockoutSettings, escalation_window_ms: u32) -> LockoutPolicy {
        LockoutPolicy {
            enabled: s.enabled,
            error_codes: s.error_codes.clone(),
            base_ms: s.base_cooldown_ms,
            max_ms: s.max_cooldown_ms.max(s.base_cooldown_ms),
            max_steps: s.max_backoff_steps,
            exponential: s.use_exponential_backoff,
            escalation_window_ms,
        }
    }

    /// Whether a status locks (switch on and status listed).
    pub fn locks_status(&self, status: Option<u16>) -> bool {
        self.enabled && status.is_some_and(|s| self.error_codes.contains(&s))
    }
}

/// What a lock covers on its connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LockKey {
    /// Scope.
    pub scope: LockScope,
    /// The family name (quota family) or the model.
    pub name: String,
}

impl LockKey {
    /// Whether the lock covers `model` (of quota family `family`).
    pub fn covers(&self, model: &str, family: &str) -> bool {
        match self.scope {
            LockScope::QuotaFamily => self.name == family,
            LockScope::Model | LockScope::Exact => self.name == model,
        }
    }
}

/// One lock and its escalation state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockoutEntry {
    /// Why.
    pub reason: ErrorReason,
    /// End of the lock.
    pub until: UnixMillis,
    /// When the current lock started.
    pub locked_at: UnixMillis,
    /// Failures counted for escalation.
    pub failure_count: u32,
    /// When the last one happened.
    pub last_failure_at: UnixMillis,
    /// The last lock's length.
    pub last_cooldown_ms: u64,
}

/// A failure that locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockFailure<'a> {
    /// What to lock.
    pub scope: LockScope,
    /// The model.
    pub model: &'a str,
    /// Its quota family (the model itself when it has none).
    pub family: &'a str,
    /// Why.
    pub reason: ErrorReason,
    /// The upstream's retry hint.
    pub hint: Option<RetryHint>,
    /// A rule's fixed lockout.
    pub fixed_ms: Option<u32>,
    /// `fixed_ms` is the upstream's own retry time (a protected connection's long
    /// hint, SPEC §4.6): kept as is, not capped by `maxCooldownMs`.
    pub fixed_is_upstream: bool,
    /// When the attempt was dispatched (herd guard).
    pub dispatched_at: UnixMillis,
}

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockoutChange {
    /// Locked (or extended) until `until`.
    Locked {
        /// The key.
        key: LockKey,
        /// End.
        until: UnixMillis,
        /// Escalation count.
        failure_count: u32,
    },
    /// A success halved the count.
    Decayed {
        /// The key.
        key: LockKey,
        /// The new count.
        failure_count: u32,
    },
    /// The entry was removed (decay to 0, or operator clear).
    Cleared {
        /// The key.
        key: LockKey,
    },
}

/// The locks of one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockoutTable {
    /// Entries, including expired ones kept for escalation.
    pub entries: Vec<(LockKey, LockoutEntry)>,
}

impl LockoutTable {
    /// Records a locking failure.
    pub fn record_failure(
        &mut self,
        f: &LockFailure<'_>,
        now: UnixMillis,
        p: &LockoutPolicy,
    ) -> LockoutChange {
        self.prune(now, p);
        let name = match f.scope {
            LockScope::QuotaFamily => f.family,
            LockScope::Model | LockScope::Exact => f.model,
        };
        let pos = self.entries.iter().position(|(k, _)| k.scope == f.scope && k.name == name);
        let key = LockKey { scope: f.scope, name: name.to_owned() };
        let previous = pos.and_then(|i| self.entries.get(i)).map(|(_, e)| e.clone());
        if let Some(e) =
            previous.as_ref().filter(|e| e.until > now && same_herd(f.dispatched_at, e.locked_at))
        {
            // Thundering herd: this attempt left before the running lock began.
            return LockoutChange::Locked { key, until: e.until, failure_count: e.failure_count };
        }
        let count = match &previous {
            Some(e) if within_window(e, now, p) => e.failure_count.saturating_add(1),
            _ => 1,
        };
        let ms = lock_ms(f, count, p, now);
        let mut until = now.plus_millis(as_i64(ms));
        if let Some(e) = previous.as_ref().filter(|e| e.until > now) {
            until = until.max(e.until);
        }
        let entry = LockoutEntry {
            reason: f.reason,
            until,
            locked_at: now,
            failure_count: count,
            last_failure_at: now,
            last_cooldown_ms: ms,
        };
        match pos.and_then(|i| self.entries.get_mut(i)) {
            Some(slot) => slot.1 = entry,
            None => self.entries.push((key.clone(), entry)),
        }
        LockoutChange::Locked { key, until, failure_count: count }
    }

    /// Success decay for `model`: halves the count of every entry covering it and
    /// deletes entries that reach 0.
    pub fn decay(&mut self, model: &str, family: &str) -> Vec<LockoutChange> {
        let mut changes = Vec::new();
        self.entries.retain_mut(|(key, e)| {
            if !key.covers(model, family) {
                return true;
            }
            e.failure_count /= 2;
            if e.failure_count == 0 {
                changes.push(LockoutChange::Cleared { key: key.clone() });
                false
            } else {
                changes.push(LockoutChange::Decayed { key: key.clone(), failure_count: e.failure_count });
                true
            }
        });
        changes
    }

    /// The latest end among active locks covering `model`, with the binding entry.
    pub fn blocked_until(
        &self,
        model: &str,
        family: &str,
        now: UnixMillis,
    ) -> Option<(&LockKey, &LockoutEntry)> {
        self.entries
            .iter()
            .filter(|(k, e)| e.until > now && k.covers(model, family))
            .max_by_key(|(_, e)| e.until)
            .map(|(k, e)| (k, e))
    }

    /// Active locks at `now`.
    pub fn active(&self, now: UnixMillis) -> impl Iterator<Item = (&LockKey, &LockoutEntry)> {
        self.entries.iter().filter(move |(_, e)| e.until > now).map(|(k, e)| (k, e))
    }

    /// Removes the entries named `name` (any scope); returns how many active ones.
    pub fn clear(&mut self, name: &str, now: UnixMillis) -> Vec<LockoutChange> {
        self.clear_where(now, |k| k.name == name)
    }

    /// Removes every entry; returns the changes for active ones.
    pub fn clear_all(&mut self, now: UnixMillis) -> Vec<LockoutChange> {
        self.clear_where(now, |_| true)
    }

    fn clear_where(&mut self, now: UnixMillis, pred: impl Fn(&LockKey) -> bool) -> Vec<LockoutChange> {
        let mut changes = Vec::new();
        self.entries.retain(|(k, e)| {
            if !pred(k) {
                return true;
            }
            if e.until > now {
                changes.push(LockoutChange::Cleared { key: k.clone() });
            }
            false
        });
        changes
    }

    /// Drops expired entries whose escalation window has passed.
    pub fn prune(&mut self, now: UnixMillis, p: &LockoutPolicy) {
        self.entries.retain(|(_, e)| e.until > now || within_window(e, now, p));
    }
}

fn within_window(e: &LockoutEntry, now: UnixMillis, p: &LockoutPolicy) -> bool {
    let window = u64::from(p.escalation_window_ms).saturating_add(e.last_cooldown_ms);
    now.0.saturating_sub(e.last_failure_at.0) <= as_i64(window)
}

fn lock_ms(f: &LockFailure<'_>, count: u32, p: &LockoutPolicy, now: UnixMillis) -> u64 {
    let max = u64::from(p.max_ms);
    if let Some(ms) = f.fixed_ms {
        return if f.fixed_is_upstream { u64::from(ms) } else { u64::from(ms).min(max) };
    }
    let computed = if p.exponential {
        exponential(p.base_ms, count.saturating_sub(1), p.max_steps, max)
    } else {
        u64::from(p.base_ms).min(max)
    };
    let hinted = f.hint.map(|h| match h.source {
        HintSource::Header | HintSource::QuotaWindow => h.remaining_ms(now),
        HintSource::Body | HintSource::Rule => h.remaining_ms(now).min(max),
    });
    match hinted {
        Some(h) if h > u64::from(p.base_ms) => h,
        _ => computed,
    }
}

#[cfg(test)]
mod tests;
