//! One connection's flow state: its gates (its provider's shared cap, the
//! connection cap and per-model caps),
//! the live counts the strategies and the UI read (in flight, queued, dispatched),
//! and the quota reset its last answers announced.
//!
//! Cost when nothing is capped: entering is two relaxed atomic increments and one
//! `ArcSwap` load; there is no lock and no allocation. The routing snapshot holds
//! each connection's `Arc<ConnectionFlow>`, so the request path never looks it up.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU32, AtomicU64, Ordering};

use arc_swap::{ArcSwap, ArcSwapOption};
use switchyard_types::UnixMillis;

use super::gate::{Gate, GatePermit, Queued};

/// A connection's flow-control configuration, from its stored record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowLimits {
    /// Concurrent requests at most (the stricter of `max_concurrent` and
    /// `rateLimitOverrides.maxConcurrent`); `None` = no gate.
    pub cap: Option<u32>,
    /// Concurrent requests at most per upstream model id.
    pub model_caps: BTreeMap<String, u32>,
    /// Queue-wait budget override, ms.
    pub max_wait_ms: Option<u32>,
    /// Execution bound override, ms.
    pub execution_max_wait_ms: Option<u32>,
}

#[derive(Debug, Default)]
struct Gates {
    connection: Option<Arc<Gate>>,
    models: HashMap<String, Arc<Gate>>,
    max_wait_ms: Option<u32>,
    execution_max_wait_ms: Option<u32>,
}

/// Which gate a request found full or was waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateKind {
    /// The cap shared by every connection of the provider (`providerConcurrency`).
    Provider,
    /// The gateway-wide cap (`requestQueue.globalConcurrentRequests`).
    Global,
    /// The connection's cap.
    Connection,
    /// The cap of the model on this connection.
    Model,
    /// The connection's queue is paced: the upstream asked for a pause (rate-limit
    /// protection, SPEC §4.6).
    Paced,
}

/// A gate's live numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateStats {
    /// The cap.
    pub cap: u32,
    /// Holding a slot.
    pub in_flight: u32,
    /// Waiting for one.
    pub queued: u32,
}

impl GateStats {
    pub(super) fn of(gate: &Gate) -> GateStats {
        GateStats { cap: gate.cap(), in_flight: gate.in_flight(), queued: gate.queued() }
    }
}

/// One connection's flow state.
#[derive(Debug)]
pub struct ConnectionFlow {
    id: Box<str>,
    in_flight: AtomicU32,
    queued: AtomicU32,
    dispatched: AtomicU64,
    /// Unix ms of the next announced quota reset; 0 = unknown.
    quota_reset_at: AtomicI64,
    /// Unix ms until which nothing is dispatched here (protection pacing); 0 = none.
    paced_until: AtomicI64,
    gates: ArcSwap<Gates>,
    /// The provider's shared gate (owned by [`super::FlowControl`]), if it has one.
    provider_gate: ArcSwapOption<Gate>,
    /// The gateway-wide gate (owned by [`super::FlowControl`]), if there is one.
    global_gate: ArcSwapOption<Gate>,
}

/// Where a waiting request is: the gate it waits for now.
#[derive(Debug, Default)]
pub struct WaitStage(AtomicU8);

impl WaitStage {
    fn set(&self, kind: GateKind) {
        self.0.store(kind as u8, Ordering::Relaxed);
    }

    /// The gate waited for (the connection gate before the first one is reached:
    /// it is what a request over a connection's cap waits for).
    pub fn get(&self) -> GateKind {
        match self.0.load(Ordering::Relaxed) {
            x if x == GateKind::Model as u8 => GateKind::Model,
            x if x == GateKind::Paced as u8 => GateKind::Paced,
            x if x == GateKind::Provider as u8 => GateKind::Provider,
            x if x == GateKind::Global as u8 => GateKind::Global,
            _ => GateKind::Connection,
        }
    }

    /// Marks the wait for a paced queue (the caller sleeps until the pace ends).
    pub fn set_paced(&self) {
        self.set(GateKind::Paced);
    }
}

impl ConnectionFlow {
    pub(super) fn new(id: &str, limits: &FlowLimits) -> ConnectionFlow {
        let flow = ConnectionFlow {
            id: id.into(),
            in_flight: AtomicU32::new(0),
            queued: AtomicU32::new(0),
            dispatched: AtomicU64::new(0),
            quota_reset_at: AtomicI64::new(0),
            paced_until: AtomicI64::new(0),
            gates: ArcSwap::from_pointee(Gates::default()),
            provider_gate: ArcSwapOption::empty(),
            global_gate: ArcSwapOption::empty(),
        };
        flow.configure(limits);
        flow
    }

    /// The connection id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Applies new limits: gates that stay are resized in place (their slots and
    /// lines kept), removed ones are closed (their waiters pass), new ones start empty.
    pub(super) fn configure(&self, limits: &FlowLimits) {
        let old = self.gates.load();
        let keep = |existing: Option<&Arc<Gate>>, cap: u32| match existing {
            Some(gate) => {
                gate.resize(cap);
                gate.clone()
            }
            None => Gate::new(cap),
        };
        let connection = limits.cap.map(|cap| keep(old.connection.as_ref(), cap));
        if limits.cap.is_none()
            && let Some(gate) = &old.connection
        {
            gate.close();
        }
        let models: HashMap<String, Arc<Gate>> =
            limits.model_caps.iter().map(|(m, &cap)| (m.clone(), keep(old.models.get(m), cap))).collect();
        for (model, gate) in &old.models {
            if !models.contains_key(model) {
                gate.close();
            }
        }
        self.gates.store(Arc::new(Gates {
            connection,
            models,
            max_wait_ms: limits.max_wait_ms,
            execution_max_wait_ms: limits.execution_max_wait_ms,
        }));
    }

    /// Links the shared gates (or unlinks them). They belong to the provider and
    /// the gateway: they are never closed here.
    pub(super) fn set_shared_gates(&self, provider: Option<Arc<Gate>>, global: Option<Arc<Gate>>) {
        self.provider_gate.store(provider);
        self.global_gate.store(global);
    }

    /// Closes every gate of its own (the connection was removed).
    pub(super) fn close(&self) {
        let gates = self.gates.swap(Arc::new(Gates::default()));
        if let Some(gate) = &gates.connection {
            gate.close();
        }
        for gate in gates.models.values() {
            gate.close();
        }
    }

    /// Requests in flight (capped or not).
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Requests waiting in this connection's queue.
    pub fn queued(&self) -> u32 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Requests ever dispatched through this connection (since start).
    pub fn dispatched(&self) -> u64 {
        self.dispatched.load(Ordering::Relaxed)
    }

    /// The queue-wait budget for this connection: its override, else `default_ms`.
    pub fn max_wait_ms(&self, default_ms: u32) -> u32 {
        self.gates.load().max_wait_ms.unwrap_or(default_ms)
    }

    /// The execution bound for this connection: its override, else `default_ms`.
    pub fn execution_max_wait_ms(&self, default_ms: u32) -> u32 {
        self.gates.load().execution_max_wait_ms.unwrap_or(default_ms)
    }

    /// The connection gate's numbers, when it has one.
    pub fn gate_stats(&self) -> Option<GateStats> {
        self.gates.load().connection.as_deref().map(GateStats::of)
    }

    /// Each model gate's numbers, by model id.
    pub fn model_gate_stats(&self) -> Vec<(String, GateStats)> {
        let gates = self.gates.load();
        let mut out: Vec<(String, GateStats)> =
            gates.models.iter().map(|(m, g)| (m.clone(), GateStats::of(g))).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The gate a request for `model` would wait for here now, if any, in the
    /// order requests take them (see [`Self::try_enter`]).
    pub fn full_gate(&self, model: &str) -> Option<GateKind> {
        let gates = self.gates.load();
        let full = |g: Option<&Arc<Gate>>| g.is_some_and(|g| !g.has_room());
        if full(gates.connection.as_ref()) {
            Some(GateKind::Connection)
        } else if full(gates.models.get(model)) {
            Some(GateKind::Model)
        } else if full(self.provider_gate.load().as_ref()) {
            Some(GateKind::Provider)
        } else if full(self.global_gate.load().as_ref()) {
            Some(GateKind::Global)
        } else {
            None
        }
    }

    /// The cap of the gate of `kind` for `model`, for messages.
    pub fn cap_of(&self, kind: GateKind, model: &str) -> Option<u32> {
        let gates = self.gates.load();
        match kind {
            GateKind::Global => self.global_gate.load().as_ref().map(|g| g.cap()),
            GateKind::Provider => self.provider_gate.load().as_ref().map(|g| g.cap()),
            GateKind::Connection => gates.connection.as_ref().map(|g| g.cap()),
            GateKind::Model => gates.models.get(model).map(|g| g.cap()),
            GateKind::Paced => None,
        }
    }

    /// Whether any gate applies to `model` here.
    pub fn is_gated(&self, model: &str) -> bool {
        let gates = self.gates.load();
        gates.connection.is_some()
            || gates.models.contains_key(model)
            || self.provider_gate.load().is_some()
            || self.global_gate.load().is_some()
    }

    /// Takes the slots for `model` without waiting, narrowest first: the
    /// connection's, the model's, then the shared ones (provider, gateway). Every
    /// request uses this order, so two never wait on each other in a cycle; and a
    /// request waiting for its own connection holds no shared slot meanwhile, so it
    /// never starves requests other accounts could serve. `Err` names the full gate;
    /// no slot is kept then.
    pub fn try_enter(self: &Arc<Self>, model: &str) -> Result<FlowPermit, GateKind> {
        let gates = self.gates.load();
        let connection = match &gates.connection {
            Some(gate) => Some(gate.try_enter().ok_or(GateKind::Connection)?),
            None => None,
        };
        let model_slot = match gates.models.get(model) {
            Some(gate) => Some(gate.try_enter().ok_or(GateKind::Model)?),
            None => None,
        };
        let provider = match self.provider_gate.load().as_ref() {
            Some(gate) => Some(gate.try_enter().ok_or(GateKind::Provider)?),
            None => None,
        };
        let global = match self.global_gate.load().as_ref() {
            Some(gate) => Some(gate.try_enter().ok_or(GateKind::Global)?),
            None => None,
        };
        Ok(FlowPermit::new(self.clone(), [connection, model_slot, provider, global]))
    }

    /// Waits in this connection's queue for the slots for `model`, in the same
    /// order as [`Self::try_enter`]; `stage` says which gate it waits for. Counted
    /// in [`Self::queued`] while it waits. Cancel-safe: dropping the future leaves
    /// every line and returns any slot already taken.
    pub async fn enter(self: &Arc<Self>, model: &str, stage: &WaitStage) -> FlowPermit {
        let _waiting = self.queue_place();
        let own = self.enter_own(model, stage).await;
        let shared = self.enter_shared(stage).await;
        self.permit(own, shared)
    }

    /// Counts a request in this connection's queue while the place is held.
    pub fn queue_place(&self) -> QueuePlace<'_> {
        QueuePlace(Queued::new(&self.queued))
    }

    /// Waits for this connection's own slots for `model`: its gate, then the
    /// model's.
    pub async fn enter_own(self: &Arc<Self>, model: &str, stage: &WaitStage) -> OwnSlots {
        let gates = self.gates.load_full();
        stage.set(GateKind::Connection);
        let connection = match &gates.connection {
            Some(gate) => Some(gate.enter().await),
            None => None,
        };
        stage.set(GateKind::Model);
        let model = match gates.models.get(model) {
            Some(gate) => Some(gate.enter().await),
            None => None,
        };
        OwnSlots { connection, model }
    }

    /// Waits for the shared slots, after the own ones: the provider's gate, then
    /// the gateway's.
    pub async fn enter_shared(&self, stage: &WaitStage) -> SharedSlots {
        stage.set(GateKind::Provider);
        let provider = match self.provider_gate.load_full() {
            Some(gate) => Some(gate.enter().await),
            None => None,
        };
        stage.set(GateKind::Global);
        let global = match self.global_gate.load_full() {
            Some(gate) => Some(gate.enter().await),
            None => None,
        };
        SharedSlots { provider, global }
    }

    /// The request's permit from its own and shared slots.
    pub fn permit(self: &Arc<Self>, own: OwnSlots, shared: SharedSlots) -> FlowPermit {
        FlowPermit::new(self.clone(), [own.connection, own.model, shared.provider, shared.global])
    }

    /// Paces this connection's queue: nothing is dispatched here before `at` (the
    /// upstream's retry time; a later pace extends, an earlier one never shortens).
    pub fn pace_until(&self, at: UnixMillis) {
        self.paced_until.fetch_max(at.0, Ordering::Relaxed);
    }

    /// Until when the queue is paced, if it still is at `now`.
    pub fn paced_until(&self, now: UnixMillis) -> Option<UnixMillis> {
        let at = self.paced_until.load(Ordering::Relaxed);
        (at > now.0).then_some(UnixMillis(at))
    }

    /// Records the next quota reset the upstream announced for this connection.
    pub fn note_quota_reset(&self, at: UnixMillis) {
        self.quota_reset_at.store(at.0, Ordering::Relaxed);
    }

    /// The next announced quota reset still ahead of `now`.
    pub fn quota_reset_at(&self, now: UnixMillis) -> Option<UnixMillis> {
        let at = self.quota_reset_at.load(Ordering::Relaxed);
        (at > now.0).then_some(UnixMillis(at))
    }
}

/// A waiting request's place in a connection's queue count.
#[derive(Debug)]
pub struct QueuePlace<'a>(#[allow(dead_code, reason = "held for its drop")] Queued<'a>);

/// A connection's own slots (its gate's and the model's), before they join a permit.
#[derive(Debug)]
pub struct OwnSlots {
    connection: Option<GatePermit>,
    model: Option<GatePermit>,
}

/// The shared slots (the provider's and the gateway's), before they join a permit.
#[derive(Debug)]
pub struct SharedSlots {
    provider: Option<GatePermit>,
    global: Option<GatePermit>,
}

/// A request's place on a connection: counted in flight, holding its gate slots,
/// all given back exactly once when it drops.
#[derive(Debug)]
pub struct FlowPermit {
    flow: Arc<ConnectionFlow>,
    _slots: [Option<GatePermit>; 4],
}

impl FlowPermit {
    fn new(flow: Arc<ConnectionFlow>, slots: [Option<GatePermit>; 4]) -> FlowPermit {
        flow.in_flight.fetch_add(1, Ordering::Relaxed);
        flow.dispatched.fetch_add(1, Ordering::Relaxed);
        FlowPermit { flow, _slots: slots }
    }

    /// The connection's flow state.
    pub fn flow(&self) -> &Arc<ConnectionFlow> {
        &self.flow
    }
}

impl Drop for FlowPermit {
    fn drop(&mut self) {
        self.flow.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(cap: Option<u32>, models: &[(&str, u32)]) -> FlowLimits {
        FlowLimits {
            cap,
            model_caps: models.iter().map(|(m, c)| ((*m).to_owned(), *c)).collect(),
            ..FlowLimits::default()
        }
    }

    #[test]
    fn uncapped_connections_only_count() {
        let flow = Arc::new(ConnectionFlow::new("c", &FlowLimits::default()));
        let permits: Vec<_> = (0..100).filter_map(|_| flow.try_enter("m").ok()).collect();
        assert_eq!((flow.in_flight(), flow.dispatched()), (100, 100));
        assert!(!flow.is_gated("m") && flow.full_gate("m").is_none());
        drop(permits);
        assert_eq!(flow.in_flight(), 0);
    }

    #[test]
    fn a_model_cap_holds_for_that_model_only_and_a_failed_try_keeps_nothing() {
        let flow = Arc::new(ConnectionFlow::new("c", &limits(Some(3), &[("glm-5", 1)])));
        let first = flow.try_enter("glm-5");
        assert!(first.is_ok());
        assert_eq!(flow.try_enter("glm-5").err(), Some(GateKind::Model));
        assert_eq!(
            flow.gate_stats().map(|g| g.in_flight),
            Some(1),
            "the refused try returned its connection slot"
        );
        let others: Vec<_> = (0..2).filter_map(|_| flow.try_enter("glm-4.6").ok()).collect();
        assert_eq!(others.len(), 2);
        assert_eq!(flow.try_enter("glm-4.6").err(), Some(GateKind::Connection));
        assert_eq!(flow.full_gate("glm-4.6"), Some(GateKind::Connection));
    }

    #[test]
    fn removing_a_cap_releases_its_waiters() {
        let flow = Arc::new(ConnectionFlow::new("c", &limits(Some(1), &[])));
        let _held = flow.try_enter("m");
        let stage = WaitStage::default();
        let mut waiter = Box::pin(flow.enter("m", &stage));
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        assert!(waiter.as_mut().poll(&mut cx).is_pending());
        assert_eq!(flow.queued(), 1);
        flow.configure(&FlowLimits::default());
        assert!(waiter.as_mut().poll(&mut cx).is_ready());
        drop(waiter);
        assert_eq!(flow.queued(), 0);
        assert!(flow.try_enter("m").is_ok());
    }

    #[test]
    fn a_provider_gate_is_shared_taken_after_the_own_ones_and_never_closed_by_a_connection() {
        let shared = Gate::new(1);
        let (a, b) = (
            Arc::new(ConnectionFlow::new("a", &limits(Some(5), &[]))),
            Arc::new(ConnectionFlow::new("b", &FlowLimits::default())),
        );
        a.set_shared_gates(Some(shared.clone()), None);
        b.set_shared_gates(Some(shared.clone()), None);
        let held = a.try_enter("m");
        assert!(held.is_ok());
        assert_eq!(b.try_enter("m").err(), Some(GateKind::Provider), "one slot for the whole provider");
        assert_eq!(
            (b.full_gate("m"), b.cap_of(GateKind::Provider, "m")),
            (Some(GateKind::Provider), Some(1))
        );
        assert_eq!(a.gate_stats().map(|g| g.in_flight), Some(1));
        a.close();
        assert!(b.try_enter("m").is_err(), "closing a connection leaves its provider's gate alone");
        drop(held);
        assert!(b.try_enter("m").is_ok());
    }

    #[test]
    fn a_pace_only_extends() {
        let flow = ConnectionFlow::new("c", &FlowLimits::default());
        assert_eq!(flow.paced_until(UnixMillis(0)), None);
        flow.pace_until(UnixMillis(5_000));
        flow.pace_until(UnixMillis(2_000));
        assert_eq!(flow.paced_until(UnixMillis(1_000)), Some(UnixMillis(5_000)));
        assert_eq!(flow.paced_until(UnixMillis(5_000)), None);
    }

    #[test]
    fn quota_resets_in_the_past_are_unknown() {
        let flow = ConnectionFlow::new("c", &FlowLimits::default());
        assert_eq!(flow.quota_reset_at(UnixMillis(10)), None);
        flow.note_quota_reset(UnixMillis(100));
        assert_eq!(flow.quota_reset_at(UnixMillis(10)), Some(UnixMillis(100)));
        assert_eq!(flow.quota_reset_at(UnixMillis(100)), None);
    }
}
