//! Connections (REST: `/api/providers`).

use switchyard_types::api::{
    AgentSetupResult, AgentSetupView, AgentUndoResult, ClaudeLoginImportRequest, ClaudeLoginImportResult,
    ConnectionCreateRequest, ConnectionPatch, ConnectionTestResult, ConnectionView,
};
use switchyard_types::presets::ProviderPresetView;
use tauri::State;

use super::call;
use crate::document::Doc;
use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;

/// Every connection, with its Claude usage-wall state (`GET /api/providers`).
#[tauri::command]
#[specta::specta]
pub async fn connections_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<ConnectionView>> {
    call(host, |m| async move { m.list_connections().await }).await
}

/// One connection (`GET /api/providers/{id}`).
#[tauri::command]
#[specta::specta]
pub async fn connections_get(host: State<'_, GatewayHost>, id: String) -> IpcResult<ConnectionView> {
    call(host, |m| async move { m.get_connection(&id).await }).await
}

/// Creates a connection; secrets go in, never come back (`POST /api/providers`).
#[tauri::command]
#[specta::specta]
pub async fn connections_create(
    host: State<'_, GatewayHost>,
    request: Doc<ConnectionCreateRequest>,
) -> IpcResult<ConnectionView> {
    let request = request.parse()?;
    call(host, |m| async move { m.create_connection(request).await }).await
}

/// Applies a partial change, e.g. the Claude options in `providerSpecific`
/// (`PATCH /api/providers/{id}`). `expectedVersion` is the version the change was
/// made to (REST: `If-Match`): a connection changed since answers `412`.
#[tauri::command]
#[specta::specta]
pub async fn connections_update(
    host: State<'_, GatewayHost>,
    id: String,
    patch: Doc<ConnectionPatch>,
    expected_version: Option<u64>,
) -> IpcResult<ConnectionView> {
    let patch = patch.parse()?;
    call(host, |m| async move { m.update_connection(&id, patch, expected_version).await }).await
}

/// Deletes a connection (`DELETE /api/providers/{id}`; `expectedVersion` as for
/// updates).
#[tauri::command]
#[specta::specta]
pub async fn connections_delete(
    host: State<'_, GatewayHost>,
    id: String,
    expected_version: Option<u64>,
) -> IpcResult<()> {
    call(host, |m| async move { m.delete_connection(&id, expected_version).await }).await
}

/// Checks a connection's credentials with one cheap upstream call
/// (`POST /api/providers/{id}/test`).
#[tauri::command]
#[specta::specta]
pub async fn connections_test(host: State<'_, GatewayHost>, id: String) -> IpcResult<ConnectionTestResult> {
    call(host, |m| async move { m.test_connection(&id).await }).await
}

/// The provider presets, with the base URLs in force (`GET /api/presets`).
#[tauri::command]
#[specta::specta]
pub async fn presets_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<ProviderPresetView>> {
    call(host, |m| async move { Ok(m.presets()) }).await
}

/// Adds (or refreshes) a Claude subscription account from Claude Code's login on
/// this machine (`POST /api/providers/import-claude-login`).
#[tauri::command]
#[specta::specta]
pub async fn connections_import_claude_login(
    host: State<'_, GatewayHost>,
    request: Doc<ClaudeLoginImportRequest>,
) -> IpcResult<ClaudeLoginImportResult> {
    let request = request.parse()?;
    call(host, |m| async move { m.import_claude_login_request(request).await }).await
}

/// Whether Claude Code and Codex are set up to use this gateway (`GET /api/setup`).
#[tauri::command]
#[specta::specta]
pub async fn setup_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<AgentSetupView>> {
    call(host, |m| async move { Ok(m.agent_setups()) }).await
}

/// Points an agent (`claude-code`, `codex`) at this gateway with a key of its own,
/// keeping its previous file for undo (`POST /api/setup/{agent}`).
#[tauri::command]
#[specta::specta]
pub async fn setup_apply(host: State<'_, GatewayHost>, agent: String) -> IpcResult<AgentSetupResult> {
    call(host, |m| async move { m.setup_agent(&agent).await }).await
}

/// Puts an agent's file back exactly as it was before setup; a file edited since
/// is refused unless `force` (`DELETE /api/setup/{agent}?force=true`).
#[tauri::command]
#[specta::specta]
pub async fn setup_undo(
    host: State<'_, GatewayHost>,
    agent: String,
    force: bool,
) -> IpcResult<AgentUndoResult> {
    call(host, |m| async move { m.undo_agent_setup(&agent, force).await }).await
}
