//! The settings window. It exists only while the user has it open: made when they
//! open it (the tray, a second launch, or at start unless the app starts hidden,
//! from its entry in `tauri.conf.json`, which has `create: false`) and destroyed
//! when they close it. A loaded page is a WebKit web process beside the app's own
//! (~300 MB of RSS open on the Overview, 186 MB hidden, and the page's timers:
//! ADR 0004 decision 9); a tray app that sits closed all day holds none of it.
//! Closing keeps the window, hidden, only while a page has edits not saved yet (the
//! UI's unsaved-changes guard reports them), so a close never loses a draft.

use std::sync::atomic::{AtomicBool, Ordering};

use tauri::{
    AppHandle, Manager, Runtime, WebviewUrl, WebviewWindow, WebviewWindowBuilder, Window, WindowEvent,
};

/// The window's label in `tauri.conf.json`.
pub const MAIN: &str = "main";

/// Whether the open page has edits not saved yet (set through
/// `desktop_set_unsaved_edits`; false again once the window is gone).
#[derive(Debug, Default)]
pub struct UnsavedEdits(AtomicBool);

impl UnsavedEdits {
    pub fn set(&self, unsaved: bool) {
        self.0.store(unsaved, Ordering::Relaxed);
    }

    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Shows, unminimises and focuses the window, making it first if it is closed;
/// `route` selects a page (`cooldowns`, ...) through the UI's hash router.
pub fn show_main<R: Runtime>(app: &AppHandle<R>, route: Option<&str>) {
    let window = match app.get_webview_window(MAIN) {
        Some(window) => {
            if let Some(route) = route {
                // Routes are our own constants, never user input.
                let _ = window.eval(format!("window.location.hash = '#/{route}'"));
            }
            window
        }
        None => match create_main(app, route) {
            Ok(window) => window,
            Err(e) => {
                tracing::warn!(event = "desktop.window_failed", error = %e, "could not open the settings window");
                return;
            }
        },
    };
    let _ = window.show();
    let _ = window.unminimize();
    let _ = window.set_focus();
}

/// The window from its `tauri.conf.json` entry, loading `route` if given.
fn create_main<R: Runtime>(app: &AppHandle<R>, route: Option<&str>) -> tauri::Result<WebviewWindow<R>> {
    let mut config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == MAIN)
        .cloned()
        .ok_or(tauri::Error::WindowNotFound)?;
    if let Some(route) = route {
        config.url = WebviewUrl::App(format!("index.html#/{route}").into());
    }
    WebviewWindowBuilder::from_config(app, &config)?.build()
}

/// The main window's close and destruction. Closing never quits: the app stays in
/// the tray (its `ExitRequested` without an exit code is refused).
pub fn on_event<R: Runtime>(window: &Window<R>, event: &WindowEvent) {
    if window.label() != MAIN {
        return;
    }
    let edits = window.state::<UnsavedEdits>();
    match event {
        WindowEvent::CloseRequested { api, .. } if edits.get() => {
            api.prevent_close();
            let _ = window.hide();
            tracing::info!(event = "desktop.window_hidden", "kept hidden: a page has unsaved edits");
        }
        WindowEvent::Destroyed => {
            edits.set(false);
            tracing::info!(event = "desktop.window_closed");
        }
        _ => {}
    }
}
