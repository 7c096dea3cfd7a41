//! Desktop-only commands (no REST twin): preferences and the hosted gateway's
//! status.

use tauri::{AppHandle, Runtime, State};

use crate::document::Doc;
use crate::host::{DesktopStatusView, GatewayHost};
use crate::ipc_error::IpcResult;
use crate::prefs::{self, DesktopPrefs};

/// The desktop preferences (port, launch at login, start hidden, theme).
#[tauri::command]
#[specta::specta]
pub async fn desktop_prefs_get<R: Runtime>(app: AppHandle<R>) -> IpcResult<DesktopPrefs> {
    Ok(prefs::load(&app))
}

/// Validates and stores the desktop preferences; launch at login applies now, the
/// port at the next start.
#[tauri::command]
#[specta::specta]
pub async fn desktop_prefs_set<R: Runtime>(
    app: AppHandle<R>,
    prefs: Doc<DesktopPrefs>,
) -> IpcResult<DesktopPrefs> {
    let prefs = prefs.parse()?;
    prefs::save(&app, &prefs)?;
    Ok(prefs)
}

/// Whether the hosted gateway runs, and why not (e.g. its port is taken).
#[tauri::command]
#[specta::specta]
pub async fn desktop_status(host: State<'_, GatewayHost>) -> IpcResult<DesktopStatusView> {
    Ok(host.status())
}
