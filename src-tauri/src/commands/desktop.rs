//! Desktop-only commands (no REST twin): preferences, the hosted gateway's
//! status, and the settings window's closing.

use switchyard_types::ErrorCode;
use tauri::{AppHandle, Runtime, State, WebviewWindow};

use crate::document::Doc;
use crate::host::{DesktopStatusView, GatewayHost};
use crate::ipc_error::{IpcError, IpcResult};
use crate::prefs::{self, DesktopPrefs};
use crate::window::UnsavedEdits;

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

/// Whether the settings page has edits not saved yet (the UI's unsaved-changes
/// guard, as it turns on and off): closing the window then hides it instead of
/// destroying it, so the draft survives. Synchronous, as is the close below: tauri
/// runs such commands on the main thread in the order the page sent them, so a
/// close always sees the report sent before it.
#[tauri::command]
#[specta::specta]
pub fn desktop_set_unsaved_edits(edits: State<'_, UnsavedEdits>, unsaved: bool) -> IpcResult<()> {
    edits.set(unsaved);
    Ok(())
}

/// Closes the calling window as its title bar's close button does (the UI's
/// Ctrl+W): destroyed, or hidden while it has unsaved edits.
#[tauri::command]
#[specta::specta]
pub fn desktop_close_window<R: Runtime>(window: WebviewWindow<R>) -> IpcResult<()> {
    window
        .close()
        .map_err(|e| IpcError::new(ErrorCode::InternalError, format!("could not close the window: {e}")))
}
