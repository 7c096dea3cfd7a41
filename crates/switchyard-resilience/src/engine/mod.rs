//! The engine façade: one thread-safe object the gateway holds, combining the three
//! scopes (breaker = provider, cooldown = connection, lockout = model) that never
//! call each other. Time is read only through the injected [`Clock`].
//!
//! Request path: [`Engine::filter`] (eligible targets + exclusion diagnostics) →
//! [`Engine::begin`] for the target actually dispatched (re-checks, takes a HalfOpen
//! probe) → [`Engine::record_failure`] / [`Engine::record_success`] with the returned
//! [`Attempt`]. All synchronous and allocation-light; no async, no I/O.
//!
//! Concurrency: one `Mutex` per provider and per connection, looked up in maps
//! behind `RwLock`s that are write-locked only to add a key; each lock hold performs
//! one transition; events are collected under the lock and emitted (returned and
//! passed to the sink) after it is released. Policies are swapped atomically.
//!
//! Failure behaviour: fail-open. Unknown providers are Closed, unknown connections
//! Active; a poisoned lock is recovered (state is plain data, valid after any
//! panic).

mod adopt;
mod events;
mod hash;
mod manage;
mod permit;
mod plan;
mod policy;
mod record;
mod snapshot;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};

use arc_swap::ArcSwap;
use switchyard_types::resilience::ExclusionReason;
use switchyard_types::{ResilienceSettings, UnixMillis};

use crate::breaker::window::{ConnectionWindow, ProviderWindow};
use crate::breaker::{Admission, BreakerObservation, BreakerRecord, take_probe, transition};
use crate::candidates::{Blocks, Exclusion, Selection, judge};
use crate::clock::Clock;
use crate::cooldown::{Availability, ConnectionHealth};
use crate::lockout::LockoutTable;
use crate::outcome::{AuthCategory, Candidate, ConnectionConfig, SharedTarget};

pub use events::EngineEvent;
pub use permit::Attempt;
pub use plan::{LockPlan, Plan, effect_for, plan};
pub use policy::{FamilyRule, Policies, QuotaFamilies};
pub use record::Recorded;
pub use snapshot::{BreakerSnapshot, ConnectionSnapshot, EngineSnapshot, SNAPSHOT_VERSION};

/// Receives every batch of events after the engine's locks are released.
pub type EventSink = Box<dyn Fn(&[EngineEvent]) + Send + Sync>;

#[derive(Debug)]
struct ProviderEntry {
    category: AuthCategory,
    breaker: BreakerRecord,
    window: ProviderWindow,
}

#[derive(Debug)]
struct ConnectionEntry {
    config: ConnectionConfig,
    health: ConnectionHealth,
    lockouts: LockoutTable,
    window: ConnectionWindow,
    /// When this connection last counted a failure for its provider's breaker.
    breaker_counted_at: Option<UnixMillis>,
}

type Map<T> = RwLock<HashMap<Box<str>, Arc<Mutex<T>>, hash::FnvBuild>>;

pub(crate) struct Inner {
    clock: Arc<dyn Clock>,
    policies: ArcSwap<Policies>,
    providers: Map<ProviderEntry>,
    connections: Map<ConnectionEntry>,
    sink: Option<EventSink>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

fn get_or_insert<T>(map: &Map<T>, key: &str, make: impl FnOnce() -> T) -> Arc<Mutex<T>> {
    if let Some(e) = read(map).get(key) {
        return Arc::clone(e);
    }
    let mut w = map.write().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(w.entry(key.into()).or_insert_with(|| Arc::new(Mutex::new(make()))))
}

impl Inner {
    fn emit(&self, events: &[EngineEvent]) {
        if let (Some(sink), false) = (&self.sink, events.is_empty()) {
            sink(events);
        }
    }

    fn provider(&self, provider: &str, category: AuthCategory) -> Arc<Mutex<ProviderEntry>> {
        get_or_insert(&self.providers, provider, || ProviderEntry {
            category,
            breaker: BreakerRecord::default(),
            window: ProviderWindow::default(),
        })
    }

    fn connection(&self, id: &str, provider: &str, category: AuthCategory) -> Arc<Mutex<ConnectionEntry>> {
        get_or_insert(&self.connections, id, || ConnectionEntry {
            config: ConnectionConfig {
                id: id.to_owned(),
                provider: provider.to_owned(),
                category,
                disable_cooling: false,
                quota_families: None,
            },
            health: ConnectionHealth::default(),
            lockouts: LockoutTable::default(),
            window: ConnectionWindow::default(),
            breaker_counted_at: None,
        })
    }

    /// One breaker transition under the provider's lock; events emitted after.
    fn provider_transition(
        &self,
        provider: &str,
        obs: BreakerObservation,
        now: UnixMillis,
    ) -> Vec<EngineEvent> {
        let Some(entry) = read(&self.providers).get(provider).cloned() else { return Vec::new() };
        let policies = self.policies.load();
        let events = {
            let mut e = lock(&entry);
            let (rec, ts) = transition(&e.breaker, obs, now, policies.breaker(e.category));
            e.breaker = rec;
            breaker_events(provider, &ts, &rec)
        };
        self.emit(&events);
        events
    }
}

fn breaker_events(
    provider: &str,
    ts: &[crate::breaker::BreakerTransition],
    rec: &BreakerRecord,
) -> Vec<EngineEvent> {
    ts.iter()
        .map(|t| EngineEvent::Breaker { provider: provider.to_owned(), transition: *t, record: *rec })
        .collect()
}

/// The resilience engine. Cheap to clone (shared state).
#[derive(Clone, Debug)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    /// An engine with default settings.
    pub fn new(clock: Arc<dyn Clock>) -> Engine {
        Engine::with_sink(clock, None)
    }

    /// An engine whose events also go to `sink` (called outside the locks; keep it
    /// cheap, e.g. a channel send).
    pub fn with_sink(clock: Arc<dyn Clock>, sink: Option<EventSink>) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                clock,
                policies: ArcSwap::from_pointee(Policies::default()),
                providers: RwLock::default(),
                connections: RwLock::default(),
                sink,
            }),
        }
    }

    /// The engine's current wall-clock time.
    pub fn now(&self) -> UnixMillis {
        self.inner.clock.now_wall()
    }

    /// Installs new settings (validated or clamped by the caller). Existing state is
    /// kept; new thresholds apply from the next observation.
    pub fn apply_settings(&self, settings: &ResilienceSettings) {
        let families = self.inner.policies.load().families.clone();
        self.inner.policies.store(Arc::new(Policies::from_settings(settings, families)));
    }

    /// Installs the provider-defined quota families.
    pub fn set_quota_families(&self, families: QuotaFamilies) {
        let mut next = Policies::clone(&self.inner.policies.load());
        next.families = families;
        self.inner.policies.store(Arc::new(next));
    }

    /// Declares the connections the gateway routes to (the full set, e.g. on every
    /// routing-snapshot change). State of known connections is kept; connections and
    /// providers no longer listed are forgotten. A provider's breaker profile is OAuth
    /// if any of its connections is OAuth, else API key if any is, else Local. Call
    /// before [`Engine::restore`] at start-up.
    pub fn sync_connections<I: IntoIterator<Item = ConnectionConfig>>(&self, configs: I) {
        let rank = |c: AuthCategory| match c {
            AuthCategory::Oauth => 0,
            AuthCategory::ApiKey => 1,
            AuthCategory::Local => 2,
        };
        let mut categories: HashMap<String, AuthCategory> = HashMap::new();
        let mut ids: Vec<String> = Vec::new();
        for config in configs {
            let slot = categories.entry(config.provider.clone()).or_insert(config.category);
            if rank(config.category) < rank(*slot) {
                *slot = config.category;
            }
            let entry = self.inner.connection(&config.id, &config.provider, config.category);
            ids.push(config.id.clone());
            lock(&entry).config = config;
        }
        for (provider, category) in &categories {
            lock(&self.inner.provider(provider, *category)).category = *category;
        }
        let mut connections = self.inner.connections.write().unwrap_or_else(PoisonError::into_inner);
        connections.retain(|id, _| ids.iter().any(|known| known.as_str() == &**id));
        drop(connections);
        let mut providers = self.inner.providers.write().unwrap_or_else(PoisonError::into_inner);
        providers.retain(|name, _| categories.contains_key(&**name));
    }

    /// Filters `candidates` at the engine's now: eligible indices in input order and
    /// one exclusion per excluded target. Reads only; takes no probe.
    pub fn filter<C: Candidate>(&self, candidates: &[C]) -> Selection {
        self.filter_range(candidates, 0..candidates.len(), None)
    }

    /// [`Engine::filter`] of `candidates[range]` only, with indices into the whole
    /// slice: a caller that tries candidates in list order judges them a few at a
    /// time, so a request served by the first of 200 does not judge the other 199.
    /// As in [`Engine::begin_since`], a breaker that opened at or after
    /// `request_started` (this request's own failures) does not exclude its later
    /// candidates: judged late, they are judged as if judged at the start.
    pub fn filter_range<C: Candidate>(
        &self,
        candidates: &[C],
        range: Range<usize>,
        request_started: Option<UnixMillis>,
    ) -> Selection {
        let now = self.now();
        let policies = self.inner.policies.load();
        let providers = read(&self.inner.providers);
        let connections = read(&self.inner.connections);
        let part = candidates.get(range.clone()).unwrap_or_default();
        let mut selection = Selection { eligible: Vec::with_capacity(part.len()), excluded: Vec::new() };
        // Provider verdicts are computed once per provider per call: the latest
        // provider's at hand, earlier ones in a list (most plans name one provider,
        // which then costs no allocation).
        let mut latest: Option<(&str, Blocks)> = None;
        let mut earlier: Vec<(&str, Blocks)> = Vec::new();
        for (i, c) in part.iter().enumerate().map(|(i, c)| (i + range.start, c)) {
            let known = latest.iter().chain(&earlier).find(|(p, _)| *p == c.provider());
            let mut blocks = match known {
                Some((_, b)) => *b,
                None => {
                    let entry = providers.get(c.provider()).map(|e| lock(e));
                    let mut b = provider_blocks(entry.as_deref(), now, &policies);
                    if entry.as_deref().is_some_and(|e| opened_since(e, request_started)) {
                        b.breaker = None;
                    }
                    earlier.extend(latest.replace((c.provider(), b)));
                    b
                }
            };
            if let Some(entry) = connections.get(c.connection()) {
                connection_blocks(&lock(entry), c.model(), now, &policies, &mut blocks);
            }
            match judge(i, &blocks) {
                None => selection.eligible.push(i),
                Some(x) => selection.excluded.push(x),
            }
        }
        selection
    }

    /// Dispatch check for one target: re-checks every layer and, when the provider
    /// is HalfOpen, takes its single probe. `Err` names why the target is out.
    pub fn begin(&self, target: impl Into<SharedTarget>) -> Result<Attempt, Exclusion> {
        self.begin_since(target, None)
    }

    /// [`Engine::begin`] for a request admitted at `request_started`: a breaker that
    /// opened during this very request (its own failures, or its failed probe) does
    /// not turn away the request's remaining candidates — the healthy sibling that
    /// is next in line still gets its try; later requests see the breaker.
    pub fn begin_since(
        &self,
        target: impl Into<SharedTarget>,
        request_started: Option<UnixMillis>,
    ) -> Result<Attempt, Exclusion> {
        let target = target.into();
        let now = self.now();
        let policies = self.inner.policies.load();
        let provider = read(&self.inner.providers).get(&*target.provider).cloned();
        let mut opened_during_request = false;
        let mut blocks = match provider.as_ref().map(|e| lock(e)) {
            Some(e) => {
                opened_during_request = opened_since(&e, request_started);
                provider_blocks(Some(&e), now, &policies)
            }
            None => Blocks::default(),
        };
        if opened_during_request {
            blocks.breaker = None;
        }
        if let Some(entry) = read(&self.inner.connections).get(&*target.connection).cloned() {
            connection_blocks(&lock(&entry), &target.model, now, &policies, &mut blocks);
        }
        if let Some(x) = judge(0, &blocks) {
            return Err(x);
        }
        let mut probe = None;
        if let Some(entry) = provider.filter(|_| !opened_during_request) {
            let events = {
                let mut e = lock(&entry);
                let policy = policies.breaker(e.category);
                if e.breaker.admission(now, policy) == Admission::ProbeAvailable {
                    let Some(taken) = take_probe(&e.breaker, now, policy) else {
                        return Err(circuit_open(now.plus_millis(i64::from(policy.reset_timeout_ms))));
                    };
                    e.breaker = taken.record;
                    probe = Some(taken.probe);
                    breaker_events(
                        &target.provider,
                        &taken.refreshed.into_iter().collect::<Vec<_>>(),
                        &taken.record,
                    )
                } else if let Admission::Refused { until } = e.breaker.admission(now, policy) {
                    return Err(circuit_open(until));
                } else {
                    Vec::new()
                }
            };
            self.inner.emit(&events);
        }
        Ok(Attempt {
            inner: Arc::clone(&self.inner),
            provider: target.provider,
            connection: target.connection,
            model: target.model,
            dispatched_at: now,
            probe,
            done: false,
        })
    }
}

fn circuit_open(until: UnixMillis) -> Exclusion {
    Exclusion {
        index: 0,
        reason: ExclusionReason::CircuitOpen,
        until: Some(until),
        terminal: None,
        cause: None,
    }
}

/// The provider's breaker opened at or after `request_started`: by the request's
/// own failures (or its failed probe), so it does not turn the request's remaining
/// candidates away; later requests see it.
fn opened_since(e: &ProviderEntry, request_started: Option<UnixMillis>) -> bool {
    request_started.is_some_and(|since| {
        matches!(e.breaker.state, crate::breaker::BreakerState::Open { .. }) && e.breaker.entered_at >= since
    })
}

fn provider_blocks(entry: Option<&ProviderEntry>, now: UnixMillis, policies: &Policies) -> Blocks {
    let Some(e) = entry else { return Blocks::default() };
    let breaker = match e.breaker.admission(now, policies.breaker(e.category)) {
        Admission::Refused { until } => Some(until),
        Admission::Allowed | Admission::ProbeAvailable => None,
    };
    let provider_gate = policies.window(e.category).enabled.then(|| e.window.cooling(now)).flatten();
    Blocks { breaker, provider_gate, ..Blocks::default() }
}

fn connection_blocks(
    e: &ConnectionEntry,
    model: &str,
    now: UnixMillis,
    policies: &Policies,
    blocks: &mut Blocks,
) {
    match e.health.availability(now) {
        Availability::Available => {}
        Availability::CoolingUntil(until) => {
            blocks.connection = Some(until);
            blocks.connection_cause = e.health.last_error.as_ref().map(|l| l.reason);
        }
        Availability::Terminal(kind) => blocks.terminal = Some(kind),
    }
    if policies.window(e.config.category).enabled
        && let Some(until) = e.window.cooling(now)
    {
        blocks.connection = Some(blocks.connection.map_or(until, |u| u.max(until)));
    }
    if !e.lockouts.entries.is_empty() {
        let family = e.config.family_of(&policies.families, model);
        if let Some((_, entry)) = e.lockouts.blocked_until(model, family, now) {
            blocks.lockout = Some(entry.until);
            blocks.lockout_cause = Some(entry.reason);
        }
    }
}

#[cfg(test)]
mod tests;
