//! Flow control, live: every connection's in-flight and queued counts, its gates
//! and the queue budgets in force (`GET /api/rate-limits`).

use switchyard_types::ErrorCode;
use switchyard_types::api::{
    ConnectionFlowView, GateView, ModelGateView, ProviderGateView, RateLimitToggle, RateLimitToggleResult,
    RateLimitsView, SessionPinsClear, SessionPinsCleared, SessionPinsView,
};

use super::{ManagementService, MgmtResult};
use crate::errors::GatewayError;

impl ManagementService {
    /// Every connection's flow control, live, in routing order (priority, id).
    pub fn rate_limits(&self) -> RateLimitsView {
        let table = self.routing.load();
        let settings = self.resilience.settings();
        let queue = &settings.request_queue;
        let pins = self.resilience.affinity.counts(settings.session_affinity_ttl_ms, self.clock.now_wall());
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
                    protected: crate::routing::connection::is_protected(c, &settings),
                    protection_forced: c.protection_forced,
                    paced_until: c.flow.paced_until(self.clock.now_wall()),
                    connection_id: c.id.to_string(),
                    provider: c.provider.to_string(),
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
                    pinned_sessions: pins.get(&*c.id).copied().unwrap_or(0),
                })
                .collect(),
            global: self.resilience.flow.global_gate().map(|g| GateView {
                cap: g.cap(),
                in_flight: g.in_flight(),
                queued: g.queued(),
            }),
            providers: self
                .resilience
                .flow
                .provider_gate_stats()
                .into_iter()
                .map(|(provider, g)| ProviderGateView { provider, gate: gate(g) })
                .collect(),
        }
    }
}

impl ManagementService {
    /// `POST /api/rate-limits`: forces a connection's rate-limit protection on, or
    /// back to following the settings (SPEC §4.6: `false` equals unset). A versioned
    /// connection write like any other (it bumps the connection's version).
    pub async fn set_rate_limit_protection(
        &self,
        toggle: RateLimitToggle,
    ) -> MgmtResult<RateLimitToggleResult> {
        let _writing = self.writing().await;
        let Some(mut record) = self.store.get_connection(&toggle.connection_id).await? else {
            return Err(GatewayError::new(
                ErrorCode::NotFound,
                format!("connection '{}' does not exist", toggle.connection_id),
            ));
        };
        let wanted = toggle.enabled.then_some(true);
        if record.rate_limit_protection != wanted {
            record.rate_limit_protection = wanted;
            record.updated_at = self.clock.now_wall();
            self.store.put_connection(&record, Some(record.version)).await?;
            self.reload().await?;
        }
        let table = self.routing.load();
        let protected = table
            .by_id
            .get(&toggle.connection_id)
            .is_some_and(|c| crate::routing::connection::is_protected(c, &self.resilience.settings()));
        Ok(RateLimitToggleResult {
            success: true,
            connection_id: toggle.connection_id,
            enabled: toggle.enabled,
            protected,
        })
    }
}

impl ManagementService {
    /// `GET /api/sessions`: the live session-affinity pins.
    pub fn session_pins(&self) -> SessionPinsView {
        let ttl_ms = self.resilience.settings().session_affinity_ttl_ms;
        SessionPinsView { ttl_ms, pins: self.resilience.affinity.list(ttl_ms, self.clock.now_wall()) }
    }

    /// `DELETE /api/sessions`: forgets pins (the sessions are placed afresh on their
    /// next request).
    pub async fn clear_session_pins(&self, clear: &SessionPinsClear) -> MgmtResult<SessionPinsCleared> {
        let removed = self.resilience.affinity.clear(clear.connection.as_deref());
        // Stored rows of sessions no longer in memory (evicted, or not restored)
        // must not come back at the next start.
        self.store.delete_session_pins(clear.connection.as_deref()).await?;
        if removed > 0 {
            self.control.notify(switchyard_types::status::ChangeTopic::Connections);
        }
        Ok(SessionPinsCleared { removed })
    }
}
