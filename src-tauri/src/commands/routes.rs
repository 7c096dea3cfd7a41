//! Combos and aliases (REST: `/api/combos`, `/api/aliases`). Every document carries
//! its version; a write's `expectedVersion` (REST: `If-Match`) is the version it
//! was made to, and a document changed since answers `412`.

use switchyard_types::api::{AliasView, ComboView, Versioned};
use tauri::State;

use super::call;
use crate::document::Doc;
use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;

/// Every combo (`GET /api/combos`).
#[tauri::command]
#[specta::specta]
pub async fn combos_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<Versioned<ComboView>>> {
    call(host, |m| async move { m.list_combos().await }).await
}

/// Creates or replaces a combo (`POST /api/combos`).
#[tauri::command]
#[specta::specta]
pub async fn combos_put(
    host: State<'_, GatewayHost>,
    combo: Doc<ComboView>,
    expected_version: Option<u64>,
) -> IpcResult<Versioned<ComboView>> {
    let combo = combo.parse()?;
    call(host, |m| async move { m.put_combo(combo, expected_version).await.map(|p| p.doc) }).await
}

/// Deletes a combo (`DELETE /api/combos/{name}`).
#[tauri::command]
#[specta::specta]
pub async fn combos_delete(
    host: State<'_, GatewayHost>,
    name: String,
    expected_version: Option<u64>,
) -> IpcResult<()> {
    call(host, |m| async move { m.delete_combo(&name, expected_version).await }).await
}

/// Every model alias (`GET /api/aliases`).
#[tauri::command]
#[specta::specta]
pub async fn aliases_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<Versioned<AliasView>>> {
    call(host, |m| async move { m.list_aliases().await }).await
}

/// Creates or replaces an alias (`POST /api/aliases`).
#[tauri::command]
#[specta::specta]
pub async fn aliases_put(
    host: State<'_, GatewayHost>,
    alias: Doc<AliasView>,
    expected_version: Option<u64>,
) -> IpcResult<Versioned<AliasView>> {
    let alias = alias.parse()?;
    call(host, |m| async move { m.put_alias(alias, expected_version).await.map(|p| p.doc) }).await
}

/// Deletes an alias (`DELETE /api/aliases/{from}`).
#[tauri::command]
#[specta::specta]
pub async fn aliases_delete(
    host: State<'_, GatewayHost>,
    from: String,
    expected_version: Option<u64>,
) -> IpcResult<()> {
    call(host, |m| async move { m.delete_alias(&from, expected_version).await }).await
}
