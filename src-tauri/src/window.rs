//! The settings window: shown from the tray (optionally on one page), hidden (not
//! closed) when the user closes it, so the app keeps running in the tray.

use tauri::{AppHandle, Manager, Runtime};

/// The window's label in `tauri.conf.json`.
pub const MAIN: &str = "main";

/// Shows, unminimises and focuses the window; `route` selects a page
/// (`cooldowns`, ...) through the UI's hash router.
pub fn show_main<R: Runtime>(app: &AppHandle<R>, route: Option<&str>) {
    let Some(window) = app.get_webview_window(MAIN) else {
        return;
    };
    if let Some(route) = route {
        // Routes are our own constants, never user input.
        let _ = window.eval(format!("window.location.hash = '#/{route}'"));
    }
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
}
