//! Flow control, live: every connection's in-flight and queued counts, its gates
//! and the queue budgets in force (`GET /api/rate-limits`).

use switchyard_types::api::{ConnectionFlowView, GateView, ModelGateView, RateLimitsView};

use super::ManagementService;

impl ManagementService {
    /// Every connection's flow control, live, in routing order (priority, id).
    pub fn rate_limits(&self) -> RateLimitsView {
        let table = self.routing.load();
        let settings = self.resilience.settings();
        let queue = &settings.request_queue;
        let mut connections: Vec<_> = table.by_id.values().collect();
        connections.sort_by(|a, b| (a.priority, &a.id).cmp(&(b.priority, &b.id)));
        let gate = |g: switchyard_resilience::flow::GateStats| GateView {
            cap: g.cap,
            in_flight: g.in_flight,
            queued: g.queued,
        };
        RateLimitsView {
            connections: connections
                .into_iter()
                .map(|c| ConnectionFlowView {
                    connection_id: c.id.clone(),
                    provider: c.provider.clone(),
                    name: c.name.clone(),
                    in_flight: c.flow.in_flight(),
                    queued: c.flow.queued(),
                    gate: c.flow.gate_stats().map(gate),
                    models: c
                        .flow
                        .model_gate_stats()
                        .into_iter()
                        .map(|(model, g)| ModelGateView { model, gate: gate(g) })
                        .collect(),
                    max_wait_ms: c.flow.max_wait_ms(queue.max_wait_ms),
                    execution_max_wait_ms: c.flow.execution_max_wait_ms(queue.execution_max_wait_ms),
                })
                .collect(),
        }
    }
}
