//! Health, request counts, the request log, live flow control, session pins and
//! exclusive leases (REST: `/api/monitoring/*`, `/api/logs`, `/api/rate-limits`,
//! `/api/sessions`, `/api/leases`).

use switchyard_types::api::{
    HealthView, LeaseReleased, LeasesView, LogsQuery, RateLimitToggle, RateLimitToggleResult, RateLimitsView,
    RequestLogEntryView, SessionPinsClear, SessionPinsCleared, SessionPinsView,
};
use switchyard_types::requests::{RequestDetailView, RequestEntryView, RequestsQuery};
use switchyard_types::status::MonitoringSummaryView;
use tauri::State;

use super::call;
use crate::document::Doc;
use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;

/// Liveness, breakers, out-of-rotation counts, Claude accounts
/// (`GET /api/monitoring/health`).
#[tauri::command]
#[specta::specta]
pub async fn monitoring_health(host: State<'_, GatewayHost>) -> IpcResult<HealthView> {
    call(host, |m| async move { m.health().await }).await
}

/// Request counts over the last hour and day, and the latest failures
/// (`GET /api/monitoring/summary`).
#[tauri::command]
#[specta::specta]
pub async fn monitoring_summary(host: State<'_, GatewayHost>) -> IpcResult<MonitoringSummaryView> {
    call(host, |m| async move { m.monitoring_summary().await }).await
}

/// Recent upstream attempts, newest first (`GET /api/logs`).
#[tauri::command]
#[specta::specta]
pub async fn logs_list(
    host: State<'_, GatewayHost>,
    query: Doc<LogsQuery>,
) -> IpcResult<Vec<RequestLogEntryView>> {
    let query = query.parse()?;
    call(host, |m| async move { m.logs(query).await }).await
}

/// Every connection's flow control, live: in flight, queued, its gates and the
/// queue budgets in force (`GET /api/rate-limits`).
#[tauri::command]
#[specta::specta]
pub async fn rate_limits_get(host: State<'_, GatewayHost>) -> IpcResult<RateLimitsView> {
    call(host, |m| async move { Ok(m.rate_limits()) }).await
}

/// Forces a connection's rate-limit protection on, or back to following the
/// settings (`POST /api/rate-limits`).
#[tauri::command]
#[specta::specta]
pub async fn rate_limits_set(
    host: State<'_, GatewayHost>,
    toggle: Doc<RateLimitToggle>,
) -> IpcResult<RateLimitToggleResult> {
    let toggle = toggle.parse()?;
    call(host, |m| async move { m.set_rate_limit_protection(toggle).await }).await
}

/// The live session-affinity pins and the TTL in force (`GET /api/sessions`).
#[tauri::command]
#[specta::specta]
pub async fn sessions_list(host: State<'_, GatewayHost>) -> IpcResult<SessionPinsView> {
    call(host, |m| async move { Ok(m.session_pins()) }).await
}

/// Forgets session pins, on one connection or all (`DELETE /api/sessions`).
#[tauri::command]
#[specta::specta]
pub async fn sessions_clear(
    host: State<'_, GatewayHost>,
    clear: Doc<SessionPinsClear>,
) -> IpcResult<SessionPinsCleared> {
    let clear = clear.parse()?;
    call(host, |m| async move { m.clear_session_pins(&clear).await }).await
}

/// The active exclusive session leases (`GET /api/leases`).
#[tauri::command]
#[specta::specta]
pub async fn leases_list(host: State<'_, GatewayHost>) -> IpcResult<LeasesView> {
    call(host, |m| async move { m.leases().await }).await
}

/// Releases an active lease: its owner's next request is refused as stale
/// (`DELETE /api/leases/{id}`).
#[tauri::command]
#[specta::specta]
pub async fn leases_release(host: State<'_, GatewayHost>, id: u32) -> IpcResult<LeaseReleased> {
    call(host, |m| async move { m.release_lease(id).await }).await
}

/// Client requests, newest first, filtered (`GET /api/requests`).
#[tauri::command]
#[specta::specta]
pub async fn requests_list(
    host: State<'_, GatewayHost>,
    query: Doc<RequestsQuery>,
) -> IpcResult<Vec<RequestEntryView>> {
    let query = query.parse()?;
    call(host, |m| async move { m.requests(query).await }).await
}

/// One client request: its attempts and why it went where it went
/// (`GET /api/requests/{id}`).
#[tauri::command]
#[specta::specta]
pub async fn request_get(host: State<'_, GatewayHost>, request_id: String) -> IpcResult<RequestDetailView> {
    call(host, |m| async move { m.request_detail(&request_id).await }).await
}
