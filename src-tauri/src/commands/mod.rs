//! The IPC commands: one per `ManagementService` operation, named
//! `<area>_<verb>`, each the twin of one REST route (the parity test holds them
//! to the same answers), plus the desktop-only `desktop_*` commands.
//!
//! Each command is a thin call into the running gateway's management service;
//! `GatewayHost::management` answers `gateway_unavailable` when it is not running.

pub mod connections;
pub mod desktop;
pub mod gateway;
pub mod keys;
pub mod monitoring;
pub mod resilience;
pub mod routes;

use tauri::State;

use crate::host::GatewayHost;
use crate::ipc_error::IpcResult;
use switchyard_gateway::management::{ManagementService, MgmtResult};

/// The running gateway's management service.
fn service(host: &State<'_, GatewayHost>) -> IpcResult<ManagementService> {
    host.management()
}

/// Runs one management operation and converts its error.
async fn call<T, F>(host: State<'_, GatewayHost>, op: impl FnOnce(ManagementService) -> F) -> IpcResult<T>
where
    F: Future<Output = MgmtResult<T>>,
{
    let service = service(&host)?;
    Ok(op(service).await?)
}
