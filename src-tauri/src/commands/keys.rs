//! Client API keys (REST: `/api/keys`).

use switchyard_types::api::{ApiKeyCreateRequest, ApiKeyCreatedResult, ApiKeyView};
use tauri::State;

use super::call;
use crate::document::Doc;
use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;

/// Every client key (never the key itself) (`GET /api/keys`).
#[tauri::command]
#[specta::specta]
pub async fn keys_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<ApiKeyView>> {
    call(host, |m| async move { m.list_api_keys().await }).await
}

/// Creates a client key; its plaintext is in this answer only (`POST /api/keys`).
#[tauri::command]
#[specta::specta]
pub async fn keys_create(
    host: State<'_, GatewayHost>,
    request: Doc<ApiKeyCreateRequest>,
) -> IpcResult<ApiKeyCreatedResult> {
    let request = request.parse()?;
    call(host, |m| async move { m.create_api_key(request).await }).await
}

/// Deletes a client key (`DELETE /api/keys/{id}`).
#[tauri::command]
#[specta::specta]
pub async fn keys_delete(host: State<'_, GatewayHost>, id: String) -> IpcResult<()> {
    call(host, |m| async move { m.delete_api_key(&id).await }).await
}
