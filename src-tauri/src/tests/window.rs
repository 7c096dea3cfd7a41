//! The settings window's making on tauri's mock runtime: `show_main` builds it from
//! its config entry when it does not exist (on the page asked for), and reuses it
//! while it does, and reopens on the page it was closed on; the UI's unsaved-edits
//! report reaches the state a close reads.

use serde_json::json;
use tauri::test::{MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets};
use tauri::utils::config::WindowConfig;
use tauri::{App, Manager};

use crate::window::{LastPage, MAIN, UnsavedEdits, opening_route, remember_page, show_main};

fn app() -> App<MockRuntime> {
    let mut context = mock_context(noop_assets());
    // The app's own entry: made on demand, not at start.
    context.config_mut().app.windows =
        vec![WindowConfig { label: MAIN.to_owned(), create: false, visible: false, ..Default::default() }];
    mock_builder()
        .manage(UnsavedEdits::default())
        .manage(LastPage::default())
        .invoke_handler(crate::specta_builder!(MockRuntime).invoke_handler())
        .build(context)
        .unwrap_or_else(|e| panic!("mock app: {e}"))
}

fn url(app: &App<MockRuntime>) -> Option<String> {
    app.get_webview_window(MAIN).map(|w| w.url().map(|u| u.to_string()).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn the_window_is_made_when_first_shown_on_the_page_asked_for() {
    let app = app();
    assert_eq!(url(&app), None, "create: false, so no window before it is opened");
    show_main(app.handle(), Some("cooldowns"));
    let first = url(&app).unwrap_or_else(|| panic!("show_main made no window"));
    assert!(first.ends_with("/index.html#/cooldowns"), "{first}");
    // Shown again while it exists: the same window (a route goes to its hash router).
    show_main(app.handle(), Some("leases"));
    assert_eq!(app.webview_windows().len(), 1);
}

#[test]
fn the_window_opens_on_the_default_page_without_a_route() {
    let app = app();
    show_main(app.handle(), None);
    let url = url(&app).unwrap_or_else(|| panic!("show_main made no window"));
    assert!(!url.contains('#'), "{url}");
}

#[test]
fn the_unsaved_edits_command_sets_what_a_close_decides_on() {
    let app = app();
    show_main(app.handle(), None);
    let webview = app.get_webview_window(MAIN).unwrap_or_else(|| panic!("no window"));
    let edits = || app.state::<UnsavedEdits>().get();
    for unsaved in [true, false, true] {
        let request = super::ipc_request("desktop_set_unsaved_edits", json!({ "unsaved": unsaved }));
        get_ipc_response(&webview, request).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(edits(), unsaved);
    }
}

#[test]
fn a_closed_window_opens_again_on_the_page_it_was_closed_on() {
    let app = app();
    show_main(app.handle(), Some("model-lockout"));
    // What the close handler does before tauri destroys the window (the mock
    // runtime does not destroy one).
    remember_page(app.handle());
    assert_eq!(opening_route(app.handle(), None).as_deref(), Some("model-lockout"));
    assert_eq!(opening_route(app.handle(), None), None, "used once");
    remember_page(app.handle());
    assert_eq!(opening_route(app.handle(), Some("cooldowns")).as_deref(), Some("cooldowns"), "asked wins");
    assert_eq!(opening_route(app.handle(), None), None, "and the remembered page is dropped");
}
