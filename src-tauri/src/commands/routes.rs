//! Combos and aliases (REST: `/api/combos`, `/api/aliases`).

use switchyard_types::api::{AliasView, ComboView};
use tauri::State;

use super::call;
use crate::document::Doc;
use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;

/// Every combo (`GET /api/combos`).
#[tauri::command]
#[specta::specta]
pub async fn combos_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<ComboView>> {
    call(host, |m| async move { m.list_combos().await }).await
}

/// Creates or replaces a combo (`POST /api/combos`).
#[tauri::command]
#[specta::specta]
pub async fn combos_put(host: State<'_, GatewayHost>, combo: Doc<ComboView>) -> IpcResult<ComboView> {
    let combo = combo.parse()?;
    call(host, |m| async move { m.put_combo(combo.clone()).await.map(|_| combo) }).await
}

/// Deletes a combo (`DELETE /api/combos/{name}`).
#[tauri::command]
#[specta::specta]
pub async fn combos_delete(host: State<'_, GatewayHost>, name: String) -> IpcResult<()> {
    call(host, |m| async move { m.delete_combo(&name).await }).await
}

/// Every model alias (`GET /api/aliases`).
#[tauri::command]
#[specta::specta]
pub async fn aliases_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<AliasView>> {
    call(host, |m| async move { m.list_aliases().await }).await
}

/// Creates or replaces an alias (`POST /api/aliases`).
#[tauri::command]
#[specta::specta]
pub async fn aliases_put(host: State<'_, GatewayHost>, alias: Doc<AliasView>) -> IpcResult<AliasView> {
    let alias = alias.parse()?;
    call(host, |m| async move { m.put_alias(alias.clone()).await.map(|_| alias) }).await
}

/// Deletes an alias (`DELETE /api/aliases/{from}`).
#[tauri::command]
#[specta::specta]
pub async fn aliases_delete(host: State<'_, GatewayHost>, from: String) -> IpcResult<()> {
    call(host, |m| async move { m.delete_alias(&from).await }).await
}
