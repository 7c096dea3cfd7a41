//! Gateway status and the routing pause (REST: `/api/gateway`).

use switchyard_types::status::{GatewayStatusView, RoutingPauseRequest};
use tauri::State;

use super::call;
use crate::document::Doc;
use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;

/// Base URL, version, pause state, whether clients need a key (`GET /api/gateway`).
#[tauri::command]
#[specta::specta]
pub async fn gateway_status(host: State<'_, GatewayHost>) -> IpcResult<GatewayStatusView> {
    call(host, |m| async move { Ok(m.gateway_status()) }).await
}

/// Pauses or resumes routing (`POST /api/gateway/pause`).
#[tauri::command]
#[specta::specta]
pub async fn gateway_set_paused(
    host: State<'_, GatewayHost>,
    request: Doc<RoutingPauseRequest>,
) -> IpcResult<GatewayStatusView> {
    let request = request.parse()?;
    call(host, |m| async move { Ok(m.set_paused(request)) }).await
}
