//! Resilience settings, breakers, cooldowns and model lockouts
//! (REST: `/api/resilience/*`).

use switchyard_gateway::resilience::Resilience;
use switchyard_types::ResilienceSettings;
use switchyard_types::api::Versioned;
use switchyard_types::resilience::{
    BreakerResetRequest, BreakerResetResult, ConnectionCooldownView, CooldownsClearRequest,
    CooldownsClearResult, LockoutClearRequest, LockoutClearResult, ModelLockoutView, ProviderBreakerView,
};
use switchyard_types::settings::{
    ModelLockoutPatch, ModelLockoutSettings, ResilienceSettingsPatch, SettingsRanges,
};
use tauri::State;

use super::call;
use crate::document::Doc;
use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;

/// The effective resilience settings and their version (`GET /api/resilience`).
#[tauri::command]
#[specta::specta]
pub async fn resilience_get(host: State<'_, GatewayHost>) -> IpcResult<Versioned<ResilienceSettings>> {
    call(host, |m| async move { Ok(m.resilience_get()) }).await
}

/// Applies a partial settings document; rejected whole, with every bad field, on any
/// issue (`PATCH /api/resilience`). `expectedVersion` is the version the change was
/// made to (REST: `If-Match`): settings changed since answer `412`.
#[tauri::command]
#[specta::specta]
pub async fn resilience_patch(
    host: State<'_, GatewayHost>,
    patch: Doc<ResilienceSettingsPatch>,
    expected_version: Option<u64>,
) -> IpcResult<Versioned<ResilienceSettings>> {
    // The REST route's own parser: unknown fields and wrong types become the same
    // path-addressed issues.
    let patch = Resilience::parse_patch(&patch.to_bytes())?;
    call(host, |m| async move { m.resilience_patch(patch, expected_version).await }).await
}

/// The defaults "reset to defaults" restores (`GET /api/resilience/defaults`).
#[tauri::command]
#[specta::specta]
pub async fn resilience_defaults(host: State<'_, GatewayHost>) -> IpcResult<ResilienceSettings> {
    call(host, |m| async move { Ok(m.resilience_defaults()) }).await
}

/// The validator's ranges table, for forms (`GET /api/resilience/ranges`).
#[tauri::command]
#[specta::specta]
pub async fn resilience_ranges(host: State<'_, GatewayHost>) -> IpcResult<SettingsRanges> {
    call(host, |m| async move { Ok(m.resilience_ranges()) }).await
}

/// Every provider breaker (`GET /api/resilience/breakers`).
#[tauri::command]
#[specta::specta]
pub async fn breakers_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<ProviderBreakerView>> {
    call(host, |m| async move { Ok(m.breakers()) }).await
}

/// Resets one provider's breaker, or all (`POST /api/resilience/reset`).
#[tauri::command]
#[specta::specta]
pub async fn breakers_reset(
    host: State<'_, GatewayHost>,
    request: Doc<BreakerResetRequest>,
) -> IpcResult<BreakerResetResult> {
    let request = request.parse()?;
    call(host, |m| async move { m.reset_breakers(request) }).await
}

/// Connection cooldown states, optionally of one provider
/// (`GET /api/resilience/cooldowns?provider=`).
#[tauri::command]
#[specta::specta]
pub async fn cooldowns_list(
    host: State<'_, GatewayHost>,
    provider: Option<String>,
) -> IpcResult<Vec<ConnectionCooldownView>> {
    call(host, |m| async move { Ok(m.cooldowns(provider.as_deref())) }).await
}

/// Clears cooldowns by id, all, or all of a provider; never terminal states
/// (`POST /api/resilience/cooldowns`).
#[tauri::command]
#[specta::specta]
pub async fn cooldowns_clear(
    host: State<'_, GatewayHost>,
    request: Doc<CooldownsClearRequest>,
) -> IpcResult<CooldownsClearResult> {
    let request = request.parse()?;
    call(host, |m| async move { m.clear_cooldowns(request) }).await
}

/// Active model lockouts (`GET /api/resilience/model-cooldowns`).
#[tauri::command]
#[specta::specta]
pub async fn lockouts_list(host: State<'_, GatewayHost>) -> IpcResult<Vec<ModelLockoutView>> {
    call(host, |m| async move { Ok(m.lockouts()) }).await
}

/// Re-enables a locked-out model (`DELETE /api/resilience/model-cooldowns`).
#[tauri::command]
#[specta::specta]
pub async fn lockouts_clear(
    host: State<'_, GatewayHost>,
    request: Doc<LockoutClearRequest>,
) -> IpcResult<LockoutClearResult> {
    let request = request.parse()?;
    call(host, |m| async move { m.clear_lockout(request) }).await
}

/// The model-lockout settings, with the settings document's version
/// (`GET /api/resilience/model-lockout`).
#[tauri::command]
#[specta::specta]
pub async fn model_lockout_get(host: State<'_, GatewayHost>) -> IpcResult<Versioned<ModelLockoutSettings>> {
    call(host, |m| async move { Ok(m.model_lockout_get()) }).await
}

/// Applies a partial model-lockout document (`PATCH /api/resilience/model-lockout`;
/// `expectedVersion` as for `resilience_patch`).
#[tauri::command]
#[specta::specta]
pub async fn model_lockout_patch(
    host: State<'_, GatewayHost>,
    patch: Doc<ModelLockoutPatch>,
    expected_version: Option<u64>,
) -> IpcResult<Versioned<ModelLockoutSettings>> {
    let patch = patch.parse()?;
    call(host, |m| async move { m.model_lockout_patch(patch, expected_version).await }).await
}
