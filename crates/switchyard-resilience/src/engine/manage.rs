//! Management views and operator actions (SPEC §7): breakers per provider, cooldowns
//! per connection (never credentials), lockouts; reset breakers, clear cooldowns
//! (terminal states are never cleared there), clear a lockout, and reset a
//! connection whose credentials changed. Every read refreshes lazily; every change
//! emits events like the request path does.

use switchyard_types::UnixMillis;
use switchyard_types::resilience::{
    BreakerResetResult, ConnectionCooldownView, CooldownsClearRequest, CooldownsClearResult,
    LockoutClearRequest, ModelLockoutView, ProviderBreakerView,
};

use super::{ConnectionEntry, Engine, EngineEvent, breaker_events, lock, read};
use crate::breaker::{BreakerObservation, BreakerState, transition as breaker_transition};
use crate::cooldown::{
    CooldownChange, CooldownObservation, CooldownState, transition as cooldown_transition,
};
use crate::lockout::LockoutChange;

fn ms_u32(ms: i64) -> u32 {
    u32::try_from(ms.max(0)).unwrap_or(u32::MAX)
}

fn lockout_views(e: &ConnectionEntry, now: UnixMillis) -> Vec<ModelLockoutView> {
    e.lockouts
        .active(now)
        .map(|(k, l)| ModelLockoutView {
            provider: e.config.provider.clone(),
            connection: e.config.id.clone(),
            model: k.name.clone(),
            scope: k.scope,
            reason: l.reason,
            expires_at: l.until,
            remaining_ms: ms_u32(now.millis_until(l.until)),
            failure_count: l.failure_count,
        })
        .collect()
}

impl Engine {
    /// Every known provider's breaker, sorted by provider (for the health API).
    pub fn breakers(&self) -> Vec<ProviderBreakerView> {
        let now = self.now();
        let policies = self.inner.policies.load();
        let mut out: Vec<ProviderBreakerView> = read(&self.inner.providers)
            .iter()
            .map(|(name, entry)| {
                let e = lock(entry);
                let policy = policies.breaker(e.category);
                let (rec, _) = e.breaker.refreshed(now, policy);
                let gate = policies.window(e.category).enabled.then(|| e.window.cooling(now)).flatten();
                ProviderBreakerView {
                    provider: name.to_string(),
                    state: rec.state.name(),
                    failure_count: rec.failures,
                    degradation_threshold: policy.degradation_threshold,
                    failure_threshold: policy.failure_threshold,
                    last_failure_at: rec.last_failure_at,
                    last_failure_kind: rec.last_failure_kind,
                    open_cycles: rec.open_cycles,
                    retry_after_ms: u32::try_from(rec.retry_after_ms(now, policy)).unwrap_or(u32::MAX),
                    open_until: match rec.state {
                        BreakerState::Open { until, .. } => Some(until),
                        _ => None,
                    },
                    gate_cooling_until: gate,
                }
            })
            .collect();
        out.sort_by(|a, b| a.provider.cmp(&b.provider));
        out
    }

    /// Every known connection's cooldown view (of `provider`, when given), sorted by
    /// connection id.
    pub fn cooldowns(&self, provider: Option<&str>) -> Vec<ConnectionCooldownView> {
        let now = self.now();
        let mut out: Vec<ConnectionCooldownView> = read(&self.inner.connections)
            .values()
            .filter_map(|entry| {
                let e = lock(entry);
                if provider.is_some_and(|p| p != e.config.provider) {
                    return None;
                }
                let h = e.health.refreshed(now);
                let until = match h.state {
                    CooldownState::Cooling { until, .. } => Some(until),
                    _ => None,
                };
                Some(ConnectionCooldownView {
                    connection: e.config.id.clone(),
                    provider: e.config.provider.clone(),
                    status: h.status(now),
                    rate_limited_until: until,
                    remaining_ms: until.map_or(0, |u| ms_u32(now.millis_until(u))),
                    backoff_level: h.backoff_level,
                    last_error_kind: h.last_error.as_ref().map(|l| l.reason),
                    last_error: h.last_error.as_ref().map(|l| l.message.clone()),
                    error_code: h.last_error.as_ref().and_then(|l| l.status),
                    last_error_at: h.last_error.as_ref().map(|l| l.at),
                    lockouts: lockout_views(&e, now),
                })
            })
            .collect();
        out.sort_by(|a, b| a.connection.cmp(&b.connection));
        out
    }

    /// Every active model lockout, longest remaining first.
    pub fn lockouts(&self) -> Vec<ModelLockoutView> {
        let now = self.now();
        let mut out: Vec<ModelLockoutView> = read(&self.inner.connections)
            .values()
            .flat_map(|entry| lockout_views(&lock(entry), now))
            .collect();
        out.sort_by(|a, b| b.remaining_ms.cmp(&a.remaining_ms).then_with(|| a.connection.cmp(&b.connection)));
        out
    }

    /// Resets one provider's breaker (or all, with `None`) to Closed.
    pub fn reset_breakers(&self, provider: Option<&str>) -> BreakerResetResult {
        let now = self.now();
        let policies = self.inner.policies.load();
        let entries: Vec<_> = read(&self.inner.providers)
            .iter()
            .filter(|(name, _)| provider.is_none_or(|p| p == &***name))
            .map(|(name, e)| (name.to_string(), e.clone()))
            .collect();
        let mut events = Vec::new();
        for (name, entry) in &entries {
            let mut e = lock(entry);
            let (rec, ts) = breaker_transition(
                &e.breaker,
                BreakerObservation::ManualReset,
                now,
                policies.breaker(e.category),
            );
            e.breaker = rec;
            e.window = Default::default();
            let changed = ts.len();
            events.extend(breaker_events(name, &ts, &rec));
            if changed == 0 {
                // Persist the cleared counters even when the state was already Closed.
                events.push(EngineEvent::Breaker {
                    provider: name.clone(),
                    transition: crate::breaker::BreakerTransition {
                        from: rec.state.name(),
                        to: rec.state.name(),
                        cause: "manual-reset",
                    },
                    record: rec,
                });
            }
        }
        self.inner.emit(&events);
        BreakerResetResult { reset_count: u32::try_from(entries.len()).unwrap_or(u32::MAX) }
    }

    /// Cooldown Manager clear: the given connections, or all (of a provider). Clears
    /// cooldowns, error fields, backoff level, streaks and the connections' lockouts;
    /// terminal connections are skipped and counted.
    pub fn clear_cooldowns(&self, req: &CooldownsClearRequest) -> CooldownsClearResult {
        let now = self.now();
        let policies = self.inner.policies.load();
        let map = read(&self.inner.connections);
        let targets: Vec<_> = if req.all {
            map.values().cloned().collect()
        } else {
            req.connection_ids.iter().filter_map(|id| map.get(id.as_str()).cloned()).collect()
        };
        drop(map);
        let mut result = CooldownsClearResult::default();
        if !req.all {
            let unknown = req.connection_ids.len().saturating_sub(targets.len());
            result.unchanged = u32::try_from(unknown).unwrap_or(u32::MAX);
        }
        let mut events = Vec::new();
        for entry in targets {
            let mut e = lock(&entry);
            if req.all && req.provider.as_deref().is_some_and(|p| p != e.config.provider) {
                continue;
            }
            if matches!(e.health.state, CooldownState::Terminal { .. }) {
                result.skipped_terminal += 1;
                continue;
            }
            let lock_changes = e.lockouts.clear_all(now);
            result.lockouts_cleared += u32::try_from(lock_changes.len()).unwrap_or(u32::MAX);
            let policy = policies.cooldown(e.config.category);
            let (health, change) = cooldown_transition(&e.health, &CooldownObservation::Clear, now, policy);
            e.health = health;
            e.window = Default::default();
            match change {
                Some(change) => {
                    result.cleared += 1;
                    events.push(self.cooldown_event(&e, change));
                }
                None if lock_changes.is_empty() => result.unchanged += 1,
                None => result.cleared += 1,
            }
            events.extend(lock_changes.into_iter().map(|c| self.lockout_event(&e, c)));
        }
        self.inner.emit(&events);
        result
    }

    /// Re-enables a model: removes the lockouts named `model` on one connection, or on
    /// every connection of the provider. Returns how many active locks were removed.
    pub fn clear_lockout(&self, req: &LockoutClearRequest) -> u32 {
        let now = self.now();
        let entries: Vec<_> = read(&self.inner.connections).values().cloned().collect();
        let mut events = Vec::new();
        for entry in entries {
            let mut e = lock(&entry);
            let matches = e.config.provider == req.provider
                && req.connection.as_deref().is_none_or(|c| c == e.config.id);
            if matches {
                let changes = e.lockouts.clear(&req.model, now);
                events.extend(changes.into_iter().map(|c| self.lockout_event(&e, c)));
            }
        }
        self.inner.emit(&events);
        u32::try_from(events.len()).unwrap_or(u32::MAX)
    }

    /// The connection's credentials changed (or an operator reset it): everything is
    /// cleared, terminal states and lockouts included.
    pub fn reset_connection(&self, connection: &str) -> Vec<EngineEvent> {
        let now = self.now();
        let policies = self.inner.policies.load();
        let Some(entry) = read(&self.inner.connections).get(connection).cloned() else { return Vec::new() };
        let mut events = Vec::new();
        {
            let mut e = lock(&entry);
            let policy = policies.cooldown(e.config.category);
            let (health, change) = cooldown_transition(&e.health, &CooldownObservation::Reset, now, policy);
            e.health = health;
            e.window = Default::default();
            if let Some(change) = change {
                events.push(self.cooldown_event(&e, change));
            }
            let changes = e.lockouts.clear_all(now);
            events.extend(changes.into_iter().map(|c| self.lockout_event(&e, c)));
        }
        self.inner.emit(&events);
        events
    }

    fn cooldown_event(&self, e: &ConnectionEntry, change: CooldownChange) -> EngineEvent {
        EngineEvent::Cooldown {
            connection: e.config.id.clone(),
            provider: e.config.provider.clone(),
            change,
            health: e.health.clone(),
        }
    }

    fn lockout_event(&self, e: &ConnectionEntry, change: LockoutChange) -> EngineEvent {
        EngineEvent::Lockout { connection: e.config.id.clone(), provider: e.config.provider.clone(), change }
    }
}
