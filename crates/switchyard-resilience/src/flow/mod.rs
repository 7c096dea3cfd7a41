//! Flow control (SPEC §4.6): concurrency gates per connection and per model, the
//! request queue's admission check, the live counts, and the combo strategies.
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

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

pub use connection::{ConnectionFlow, FlowLimits, FlowPermit, GateKind, GateStats, WaitStage};
pub use gate::{Gate, GatePermit};
pub use strategy::{Strategies, StrategyInput};

/// Every connection's flow state, kept across routing reloads so that slots,
/// lines and counts survive a settings change.
#[derive(Debug, Default)]
pub struct FlowControl {
    connections: RwLock<HashMap<String, Arc<ConnectionFlow>>>,
    /// The combo strategies' state.
    pub strategies: Strategies,
}

impl FlowControl {
    /// The flow state of connection `id`, configured with `limits` (created on first
    /// use; gates resized in place afterwards).
    pub fn configure(&self, id: &str, limits: &FlowLimits) -> Arc<ConnectionFlow> {
        if let Some(flow) = self.connections.read().unwrap_or_else(PoisonError::into_inner).get(id) {
            flow.configure(limits);
            return flow.clone();
        }
        let mut map = self.connections.write().unwrap_or_else(PoisonError::into_inner);
        let flow = map.entry(id.to_owned()).or_insert_with(|| Arc::new(ConnectionFlow::new(id, limits)));
        flow.configure(limits);
        flow.clone()
    }

    /// Drops the connections `keep` rejects; their gates open for good, so nobody
    /// waits on a connection that is gone.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        let mut map = self.connections.write().unwrap_or_else(PoisonError::into_inner);
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
        let flow = fc.configure("a", &capped);
        let held = flow.try_enter("m");
        assert!(held.is_ok());
        let again = fc.configure("a", &FlowLimits { cap: Some(2), ..FlowLimits::default() });
        assert!(Arc::ptr_eq(&flow, &again));
        assert_eq!(again.in_flight(), 1);
        assert!(again.try_enter("m").is_ok());
        fc.retain(|id| id != "a");
        assert!(fc.get("a").is_none());
        assert!(!flow.is_gated("m"), "a removed connection keeps nobody waiting");
    }
}
