//! Gateway status for the Overview page and the tray: base URL, routing pause, and
//! request counts from the request log.

use switchyard_types::status::{GatewayStatusView, MonitoringSummaryView, RoutingPauseRequest};

use super::{ManagementService, MgmtResult};

/// Failed attempts listed on the Overview.
const RECENT_ERRORS: u32 = 10;
const HOUR_MS: i64 = 3_600_000;

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

    /// Attempt counts over the last hour and day, and the latest failures.
    pub async fn monitoring_summary(&self) -> MgmtResult<MonitoringSummaryView> {
        let now = self.clock.now_wall();
        let counts =
            self.store.count_attempts(now.plus_millis(-HOUR_MS), now.plus_millis(-24 * HOUR_MS)).await?;
        Ok(MonitoringSummaryView {
            clients_last_hour: self.store.count_requests(now.plus_millis(-HOUR_MS)).await?,
            clients_last_day: self.store.count_requests(now.plus_millis(-24 * HOUR_MS)).await?,
            attempts_last_hour: counts.recent,
            failed_attempts_last_hour: counts.recent_failed,
            attempts_last_day: counts.since,
            failed_attempts_last_day: counts.since_failed,
            recent_errors: self.store.list_failed_attempts(RECENT_ERRORS).await?,
        })
    }
}
