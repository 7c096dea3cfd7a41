//! The settings window. It exists only while the user has it open: made when they
//! open it (the tray, a second launch, or at start unless the app starts hidden,
//! from its entry in `tauri.conf.json`, which has `create: false`) and destroyed
//! when they close it. A loaded page is a WebKit web process beside the app's own
//! (~300 MB of RSS open on the Overview, 186 MB hidden, and the page's timers:
//! ADR 0004 decision 9); a tray app that sits closed all day holds none of it.
//! What a user would miss is kept: it opens again on the page it was closed on, and
//! closing only hides it while a page has edits not saved yet (the UI's
//! unsaved-changes guard reports them), so a close never loses a draft.

use std::sync::Mutex;
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

/// The page the window showed when it was last closed (`requests/abc`), so opening
/// it again without a page asked for lands where the user left, as a hidden window
/// did.
#[derive(Debug, Default)]
pub struct LastPage(Mutex<Option<String>>);

impl LastPage {
    fn put(&self, route: Option<String>) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = route;
    }

    fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }
}

/// The UI route in a page address (`tauri://localhost/#/requests/abc` →
/// `requests/abc`), if it looks like one of ours: it goes back into an address.
fn route_of(url: &str) -> Option<String> {
    let route = url.split_once("#/")?.1;
    let ours = !route.is_empty()
        && route.len() <= 200
        && route.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'/' | b'%'));
    ours.then(|| route.to_owned())
}

/// The page a new window opens on: the one asked for, else the one the last window
/// was closed on (forgotten once used), else the UI's default.
pub fn opening_route<R: Runtime>(app: &AppHandle<R>, asked: Option<&str>) -> Option<String> {
    let remembered = app.state::<LastPage>().take();
    asked.map(str::to_owned).or(remembered)
}

/// Remembers the page the window shows now (before it is destroyed).
pub fn remember_page<R: Runtime>(app: &AppHandle<R>) {
    let url = app.get_webview_window(MAIN).and_then(|w| w.url().ok());
    app.state::<LastPage>().put(url.and_then(|u| route_of(u.as_str())));
}

/// Shows, unminimises and focuses the window, making it first if it is closed (on
/// the page it was closed on, unless `route` asks for one); `route` selects a page
/// (`cooldowns`, ...) through the UI's hash router.
pub fn show_main<R: Runtime>(app: &AppHandle<R>, route: Option<&str>) {
    let window = match app.get_webview_window(MAIN) {
        Some(window) => {
            if let Some(route) = route {
                // Routes are our own constants, never user input.
                let _ = window.eval(format!("window.location.hash = '#/{route}'"));
            }
            window
        }
        None => match create_main(app, opening_route(app, route).as_deref()) {
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
    match event {
        WindowEvent::CloseRequested { api, .. } => {
            if window.state::<UnsavedEdits>().get() {
                api.prevent_close();
                let _ = window.hide();
                tracing::info!(event = "desktop.window_hidden", "kept hidden: a page has unsaved edits");
            } else {
                remember_page(window.app_handle());
            }
        }
        WindowEvent::Destroyed => {
            window.state::<UnsavedEdits>().set(false);
            tracing::info!(event = "desktop.window_closed");
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::route_of;

    #[test]
    fn a_route_is_read_from_the_page_address_only_when_it_looks_like_ours() {
        assert_eq!(route_of("tauri://localhost/#/requests/req-1_a").as_deref(), Some("requests/req-1_a"));
        assert_eq!(route_of("tauri://localhost/index.html#/model-lockout").as_deref(), Some("model-lockout"));
        for url in
            ["tauri://localhost/", "tauri://localhost/#/", "tauri://localhost/#overview", "x#/a'b", "x#/a b"]
        {
            assert_eq!(route_of(url), None, "{url}");
        }
        assert_eq!(route_of(&format!("x#/{}", "a".repeat(201))), None, "too long");
    }
}
