//! The record step: classify the outcome (no locks), plan, then one transition per
//! lock hold — the connection's, then the provider's — and emit the events.
//!
//! The breaker hears one failure per connection per [`BREAKER_DEDUP_MS`] (reference
//! facts §1.7): a dead connection retried by many requests, or one bad request fanning
//! out, counts once, so the breaker opens only when the provider fails across its
//! connections. A failure that holds the HalfOpen probe always reaches the breaker.

use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ErrorReason, LockScope};

use super::{Attempt, Engine, EngineEvent, Inner, LockPlan, breaker_events, lock, plan, read};
use crate::breaker::{BreakerObservation, transition as breaker_transition};
use crate::classify::hints::HintSource;
use crate::classify::{Action, ClassifyContext, Verdict, classify};
use crate::cooldown::{
    CooldownEffect, CooldownFailure, CooldownObservation, LastError, transition as cooldown_transition,
};
use crate::lockout::{LockFailure, LockoutChange};
use crate::outcome::{AttemptOutcome, AuthCategory};

/// A connection's counted breaker failures are de-duplicated within this window.
pub const BREAKER_DEDUP_MS: i64 = 5_000;

/// What recording a failure decided and changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The classifier's verdict (for the request log, client errors and failover).
    pub verdict: Verdict,
    /// What changed (already passed to the sink).
    pub events: Vec<EngineEvent>,
    /// A protected connection's queue is paced until then instead of cooled (see
    /// [`Engine::judge_protected`]).
    pub paced_until: Option<UnixMillis>,
}

/// The longest lock a protected connection's long retry hint becomes (24 h).
pub const PROTECTED_LOCK_MAX_MS: u64 = 86_400_000;

fn error_body<'a>(outcome: &AttemptOutcome<'a>) -> &'a str {
    match *outcome {
        AttemptOutcome::Http { body, .. } => body,
        AttemptOutcome::Transport(_) | AttemptOutcome::StreamStall | AttemptOutcome::Local => "",
    }
}

impl Inner {
    fn category_of(&self, provider: &str, connection: &str) -> AuthCategory {
        if let Some(c) = read(&self.connections).get(connection) {
            return lock(c).config.category;
        }
        read(&self.providers).get(provider).map_or(AuthCategory::ApiKey, |p| lock(p).category)
    }
}

impl Engine {
    /// Judges an upstream answer that was not a success (any status from 400 up, or
    /// a typed transport failure) and applies the verdict: the one place that decides
    /// whether the gateway relays it or fails over, and what it does to the provider
    /// breaker (and window gate), the connection cooldown and the model lockouts. A
    /// HalfOpen probe that failed for an account-level reason is released; a relayed
    /// answer changes nothing.
    pub fn judge(&self, attempt: Attempt, outcome: &AttemptOutcome<'_>) -> Recorded {
        self.judge_protected(attempt, outcome, None)
    }

    /// [`Engine::judge`] for a connection under rate-limit protection (SPEC §4.6):
    /// a rate limit whose retry hint comes from the answer's body (Gemini
    /// `RetryInfo.retryDelay`, "retry after N s"; a `Retry-After` header keeps the
    /// connection cooldown of §4.2) and is at most `pace_up_to_ms` away paces the
    /// connection's queue until then ([`Recorded::paced_until`]; requests wait for it
    /// rather than fail over to nothing) instead of cooling the connection; a longer
    /// hint locks just that model on that connection for the hinted time (at most
    /// 24 h) instead of cooling the whole connection. Neither counts for the breaker:
    /// the upstream answered, and said when to come back. `None` = not protected.
    pub fn judge_protected(
        &self,
        mut attempt: Attempt,
        outcome: &AttemptOutcome<'_>,
        pace_up_to_ms: Option<u32>,
    ) -> Recorded {
        attempt.done = true;
        let now = self.now();
        let inner = &self.inner;
        let policies = inner.policies.load();
        let category = inner.category_of(&attempt.provider, &attempt.connection);
        let cx = ClassifyContext {
            provider: &attempt.provider,
            restatements: policies.restatements,
            operator: &policies.operator,
            now,
            utc_offset_ms: inner.clock.utc_offset_ms(now),
        };
        let verdict = classify(outcome, &cx);
        let mut plan = plan(&verdict, policies.lockout(category), policies.cooldown(category).stall_cooldown);
        let mut paced_until = None;
        let mut protected_lock = false;
        if let (Some(limit), ErrorReason::RateLimit, Some(hint)) =
            (pace_up_to_ms, verdict.reason, verdict.hint)
            && hint.source == HintSource::Body
            && verdict.action != Action::Relay
        {
            let wait_ms = hint.remaining_ms(now);
            plan.breaker = None;
            plan.cooldown = Some(CooldownEffect::RecordOnly);
            if wait_ms <= u64::from(limit) {
                plan.lockout = None;
                paced_until = Some(hint.at);
            } else {
                let ms = u32::try_from(wait_ms.min(PROTECTED_LOCK_MAX_MS)).unwrap_or(u32::MAX);
                plan.lockout = Some(LockPlan { scope: LockScope::Exact, fixed_ms: Some(ms) });
                protected_lock = true;
            }
        }
        let mut events = Vec::new();

        if plan.cooldown.is_some() || plan.lockout.is_some() || plan.breaker.is_some() {
            let entry = inner.connection(&attempt.connection, &attempt.provider, category);
            let mut guard = lock(&entry);
            let e = &mut *guard;
            if plan.breaker.is_some() && attempt.probe.is_none() {
                let recent =
                    e.breaker_counted_at.is_some_and(|at| now.0.saturating_sub(at.0) < BREAKER_DEDUP_MS);
                if recent {
                    plan.breaker = None;
                } else {
                    e.breaker_counted_at = Some(now);
                }
            }
            let mut policy = *policies.cooldown(e.config.category);
            policy.disable_cooling = e.config.disable_cooling;
            if let Some(effect) = plan.cooldown {
                let failure = CooldownFailure {
                    effect,
                    error: LastError::new(verdict.reason, verdict.status, error_body(outcome), now),
                    hint: verdict.hint,
                    dispatched_at: attempt.dispatched_at,
                };
                let (health, change) =
                    cooldown_transition(&e.health, &CooldownObservation::Failure(failure), now, &policy);
                e.health = health;
                if let Some(change) = change {
                    events.push(cooldown_event(&attempt, change, &e.health));
                }
            }
            if plan.breaker.is_some() {
                e.window.record_failure(now, policies.window(e.config.category));
            }
            if let Some(lp) = plan.lockout {
                let family = e.config.family_of(&policies.families, &attempt.model);
                let failure = LockFailure {
                    scope: lp.scope,
                    model: &attempt.model,
                    family,
                    reason: verdict.reason,
                    hint: verdict.hint,
                    fixed_ms: lp.fixed_ms,
                    fixed_is_upstream: protected_lock,
                    dispatched_at: attempt.dispatched_at,
                };
                let change = e.lockouts.record_failure(&failure, now, policies.lockout(e.config.category));
                events.push(lockout_event(&attempt, change));
            }
        }

        let provider_obs = match (plan.breaker, attempt.probe) {
            (Some(kind), probe) => Some(BreakerObservation::Failure { kind, probe }),
            (None, Some(probe)) => Some(BreakerObservation::ReleaseProbe { probe }),
            (None, None) => None,
        };
        if let Some(obs) = provider_obs {
            let entry = inner.provider(&attempt.provider, category);
            let mut guard = lock(&entry);
            let e = &mut *guard;
            let (rec, ts) = breaker_transition(&e.breaker, obs, now, policies.breaker(e.category));
            e.breaker = rec;
            events.extend(breaker_events(&attempt.provider, &ts, &rec));
            if plan.breaker.is_some()
                && let Some(until) = e.window.record_failure(now, policies.window(e.category))
            {
                events.push(EngineEvent::ProviderGate {
                    provider: attempt.provider.to_string(),
                    cooling_until: until,
                });
            }
        }
        inner.emit(&events);
        Recorded { verdict, events, paced_until }
    }

    /// Records a successful attempt: a HalfOpen probe closes the breaker, counts
    /// recover, the window gate clears, the connection's errors clear (unless the
    /// attempt predates its current cooldown) and the model's lockouts decay.
    pub fn record_success(&self, mut attempt: Attempt) -> Vec<EngineEvent> {
        attempt.done = true;
        let now = self.now();
        let inner = &self.inner;
        let policies = inner.policies.load();
        let mut events = Vec::new();
        if let Some(entry) = read(&inner.providers).get(&*attempt.provider).cloned() {
            let mut e = lock(&entry);
            let (rec, ts) = breaker_transition(
                &e.breaker,
                BreakerObservation::Success { probe: attempt.probe },
                now,
                policies.breaker(e.category),
            );
            e.breaker = rec;
            e.window.record_success();
            events.extend(breaker_events(&attempt.provider, &ts, &rec));
        }
        if let Some(entry) = read(&inner.connections).get(&*attempt.connection).cloned() {
            let mut guard = lock(&entry);
            let e = &mut *guard;
            let policy = policies.cooldown(e.config.category);
            let obs = CooldownObservation::Success { dispatched_at: attempt.dispatched_at };
            let (health, change) = cooldown_transition(&e.health, &obs, now, policy);
            e.health = health;
            if let Some(change) = change {
                events.push(cooldown_event(&attempt, change, &e.health));
            }
            e.window.record_success();
            if !e.lockouts.entries.is_empty() {
                let family = e.config.family_of(&policies.families, &attempt.model);
                for change in e.lockouts.decay(&attempt.model, family) {
                    events.push(lockout_event(&attempt, change));
                }
            }
        }
        inner.emit(&events);
        events
    }

    /// A connection test of one of `provider`'s connections succeeded: a Degraded
    /// breaker heals at once.
    pub fn record_connection_test_ok(&self, provider: &str) -> Vec<EngineEvent> {
        self.inner.provider_transition(provider, BreakerObservation::ConnectionTestOk, self.now())
    }
}

fn cooldown_event(
    a: &Attempt,
    change: crate::cooldown::CooldownChange,
    h: &crate::cooldown::ConnectionHealth,
) -> EngineEvent {
    EngineEvent::Cooldown {
        connection: a.connection.to_string(),
        provider: a.provider.to_string(),
        change,
        health: h.clone(),
    }
}

fn lockout_event(a: &Attempt, change: LockoutChange) -> EngineEvent {
    EngineEvent::Lockout { connection: a.connection.to_string(), provider: a.provider.to_string(), change }
}
