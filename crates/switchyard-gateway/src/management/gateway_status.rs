//! Gateway status for the Overview page and the tray: base URL, routing pause, and
//! request counts from the request log.

use switchyard_types::status::{GatewayStatusView, MonitoringSummaryView, RoutingPauseRequest};

use super::{ManagementService, MgmtResult};

/// Failed attempts listed on the Overview.
const RECENT_ERRORS: u32 = 10;

impl ManagementService {
    /// Base URL, version, pause state and whether clients need a key.
    pub fn gateway_status(&self) -> GatewayStatusView {
        let table = self.routing.load();
        GatewayStatusView {
            base_url: format!("http://{}", self.listen),
            listen: self.listen.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            paused: self.control.is_paused(),
            client_key_required: !table.gateway.allow_unauthenticated_loopback,
        }
    }

    /// Pauses or resumes routing (inference requests get 503 `routing_paused`
    /// while paused; management keeps working).
    pub fn set_paused(&self, request: RoutingPauseRequest) -> GatewayStatusView {
        self.control.set_paused(request.paused);
        self.gateway_status()
    }

    /// Request and attempt counts over the last hour and day (whole minutes, from
    /// the per-minute counts: the same cost at ten rows and ten million), and the
    /// latest failures.
    pub async fn monitoring_summary(&self) -> MgmtResult<MonitoringSummaryView> {
        self.log.flush().await;
        let counts = self.store.summary_counts(self.clock.now_wall()).await?;
        Ok(MonitoringSummaryView {
            clients_last_hour: counts.clients_last_hour,
            clients_last_day: counts.clients_last_day,
            attempts_last_hour: counts.attempts_last_hour.0,
            failed_attempts_last_hour: counts.attempts_last_hour.1,
            attempts_last_day: counts.attempts_last_day.0,
            failed_attempts_last_day: counts.attempts_last_day.1,
            recent_errors: self.store.list_failed_attempts(RECENT_ERRORS).await?,
        })
    }
}
