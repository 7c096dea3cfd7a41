//! Flow control (SPEC §4.6): concurrency gates (gateway-wide, per provider, per
//! connection and per model), the request queue's admission check, the live
//! counts, and the combo strategies.
//!
//! Gate order, the same for every attempt so none waits on another in a cycle:
//! narrowest first — the connection gate, the model gate, then the shared ones,
//! the provider gate (all its connections) and the gateway-wide gate. The
//! strictest applies. Narrow first (SPEC §4.6 lists them wide to narrow) so that a
//! request waiting for its busy connection holds no shared slot meanwhile and
//! never starves requests that idle accounts could serve. Every slot lives in the
//! attempt's permit, so a streamed answer holds them until its last byte.
//!
//! Layering, for one request: the engine rules targets out (breakers, cooldowns,
//! lockouts); a [`Strategies`] order puts the eligible ones in the combo's order;
//! the request path then takes the first candidate whose gates have room
//! ([`ConnectionFlow::try_enter`]). Only when every eligible candidate is full does
//! the request wait: [`admission::admit`] first (the queue depth), then in line on
//! each of them at once ([`ConnectionFlow::enter`]), the first slot wins. The wait
//! is bounded by the caller on the gateway's clock. A full gate is not a failure of
//! anyone: it never cools a connection, opens a breaker or locks a model.
//!
//! The [`FlowPermit`] a request holds counts it in flight and holds its slots; it
//! lives in the attempt's guard and is dropped exactly once, however the attempt ends.

pub mod admission;
mod connection;
mod gate;
mod strategy;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

pub use connection::{
    ConnectionFlow, FlowLimits, FlowPermit, GateKind, GateStats, OwnSlots, QueuePlace, SharedSlots, WaitStage,
};
pub use gate::{Gate, GatePermit};
pub use strategy::{Strategies, StrategyInput};

/// Every connection's flow state, kept across routing reloads so that slots,
/// lines and counts survive a settings change.
#[derive(Debug, Default)]
pub struct FlowControl {
    connections: RwLock<HashMap<String, Arc<ConnectionFlow>>>,
    shared: Mutex<SharedGates>,
    /// The combo strategies' state.
    pub strategies: Strategies,
}

/// The gates shared by many connections.
#[derive(Debug, Default)]
struct SharedGates {
    global: Option<Arc<Gate>>,
    providers: HashMap<String, Arc<Gate>>,
    /// Which provider each connection belongs to.
    provider_of: HashMap<String, String>,
}

/// A cap applied to a gate that may not exist yet: kept ones are resized in place
/// (slots and lines kept), removed ones closed (their waiters pass).
fn reconcile(slot: &mut Option<Arc<Gate>>, cap: Option<u32>) {
    match (slot.as_ref(), cap) {
        (Some(gate), Some(cap)) => gate.resize(cap),
        (None, Some(cap)) => *slot = Some(Gate::new(cap)),
        (Some(gate), None) => {
            gate.close();
            *slot = None;
        }
        (None, None) => {}
    }
}

impl FlowControl {
    /// The flow state of connection `id` of `provider`, configured with `limits`
    /// (created on first use; gates resized in place afterwards) and linked to its
    /// provider's gate.
    pub fn configure(&self, id: &str, provider: &str, limits: &FlowLimits) -> Arc<ConnectionFlow> {
        let flow = self.connection(id, limits);
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        shared.provider_of.insert(id.to_owned(), provider.to_owned());
        flow.set_shared_gates(shared.providers.get(provider).cloned(), shared.global.clone());
        flow
    }

    fn connection(&self, id: &str, limits: &FlowLimits) -> Arc<ConnectionFlow> {
        if let Some(flow) = self.connections.read().unwrap_or_else(PoisonError::into_inner).get(id) {
            flow.configure(limits);
            return flow.clone();
        }
        let mut map = self.connections.write().unwrap_or_else(PoisonError::into_inner);
        let flow = map.entry(id.to_owned()).or_insert_with(|| Arc::new(ConnectionFlow::new(id, limits)));
        flow.configure(limits);
        flow.clone()
    }

    /// Applies the shared caps: `global` (0 = none) and the per-provider caps.
    pub fn set_shared_caps(&self, global: u32, providers: &BTreeMap<String, u32>) {
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        reconcile(&mut shared.global, (global > 0).then_some(global));
        let mut next: HashMap<String, Arc<Gate>> = HashMap::new();
        for (provider, &cap) in providers {
            let mut slot = shared.providers.remove(provider);
            reconcile(&mut slot, Some(cap));
            if let Some(gate) = slot {
                next.insert(provider.clone(), gate);
            }
        }
        for (_, gate) in shared.providers.drain() {
            gate.close();
        }
        shared.providers = next;
        let connections = self.connections.read().unwrap_or_else(PoisonError::into_inner);
        for (id, flow) in connections.iter() {
            let gate = shared.provider_of.get(id).and_then(|p| shared.providers.get(p)).cloned();
            flow.set_shared_gates(gate, shared.global.clone());
        }
    }

    /// The gateway-wide gate, when there is a cap.
    pub fn global_gate(&self) -> Option<Arc<Gate>> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner).global.clone()
    }

    /// Each provider gate's numbers, by provider id.
    pub fn provider_gate_stats(&self) -> Vec<(String, GateStats)> {
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<(String, GateStats)> =
            shared.providers.iter().map(|(p, g)| (p.clone(), GateStats::of(g))).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Drops the connections `keep` rejects; their gates open for good, so nobody
    /// waits on a connection that is gone.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        // Lock order everywhere: shared gates, then the connection map.
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let mut map = self.connections.write().unwrap_or_else(PoisonError::into_inner);
        shared.provider_of.retain(|id, _| keep(id));
        map.retain(|id, flow| {
            let kept = keep(id);
            if !kept {
                flow.close();
            }
            kept
        });
    }

    /// The flow state of connection `id`, if it is known.
    pub fn get(&self, id: &str) -> Option<Arc<ConnectionFlow>> {
        self.connections.read().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_survives_a_reconfigure_and_removed_connections_open() {
        let fc = FlowControl::default();
        let capped = FlowLimits { cap: Some(1), ..FlowLimits::default() };
        let flow = fc.configure("a", "p", &capped);
        let held = flow.try_enter("m");
        assert!(held.is_ok());
        let again = fc.configure("a", "p", &FlowLimits { cap: Some(2), ..FlowLimits::default() });
        assert!(Arc::ptr_eq(&flow, &again));
        assert_eq!(again.in_flight(), 1);
        assert!(again.try_enter("m").is_ok());
        fc.retain(|id| id != "a");
        assert!(fc.get("a").is_none());
        assert!(!flow.is_gated("m"), "a removed connection keeps nobody waiting");
    }

    #[test]
    fn provider_and_global_caps_apply_resize_and_go() {
        let fc = FlowControl::default();
        let a = fc.configure("a", "glm", &FlowLimits::default());
        let b = fc.configure("b", "glm", &FlowLimits::default());
        let other = fc.configure("c", "zai", &FlowLimits::default());
        assert!(fc.global_gate().is_none());
        fc.set_shared_caps(3, &BTreeMap::from([("glm".to_owned(), 1)]));
        assert_eq!(fc.global_gate().map(|g| g.cap()), Some(3));
        let held = a.try_enter("m");
        assert!(held.is_ok());
        assert_eq!(b.try_enter("m").err(), Some(GateKind::Provider));
        assert!(other.try_enter("m").is_ok(), "another provider is not capped");
        fc.set_shared_caps(3, &BTreeMap::from([("glm".to_owned(), 2)]));
        assert!(b.try_enter("m").is_ok(), "resized in place, the held slot counted");
        assert_eq!(
            fc.provider_gate_stats(),
            vec![("glm".to_owned(), GateStats { cap: 2, in_flight: 1, queued: 0 })]
        );
        let late = fc.configure("d", "glm", &FlowLimits::default());
        assert!(late.is_gated("m"), "a connection added later joins its provider's gate");
        fc.set_shared_caps(0, &BTreeMap::new());
        assert!(fc.global_gate().is_none());
        assert!(!a.is_gated("m") && fc.provider_gate_stats().is_empty());
    }
}
