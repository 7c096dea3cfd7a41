//! The tray icon and its menu: a status line (listening address, healthy and
//! degraded connections, paused), Open Switchyard, one item per page, Copy base
//! URL, Pause / Resume routing, Quit. The status line and the pause item are
//! refreshed on every change batch from the gateway.
//!
//! Fail-soft: with no tray host (a bare X server), tauri only warns; every action
//! is also reachable from the window.

use switchyard_types::routability::{ConnectionRoutabilityView, RoutabilityState};
use tauri::menu::{Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_clipboard_manager::ClipboardExt;

use crate::host::GatewayHost;
use crate::window::show_main;

/// The menu items whose text changes.
pub struct TrayItems<R: Runtime> {
    status: MenuItem<R>,
    pause: MenuItem<R>,
}

/// Pages reachable from the tray: (menu id, label, UI route).
const PAGES: [(&str, &str, &str); 6] = [
    ("page-overview", "Overview", "overview"),
    ("page-connections", "Connections", "connections"),
    ("page-combos", "Combos", "combos"),
    ("page-resilience", "Resilience", "resilience"),
    ("page-model-lockout", "Model Lockout", "model-lockout"),
    ("page-cooldowns", "Cooldown Manager", "cooldowns"),
];

/// Builds the tray icon and manages its items.
pub fn build<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let status = MenuItem::with_id(app, "status", "Switchyard: starting…", false, None::<&str>)?;
    let open = MenuItem::with_id(app, "open", "Open Switchyard", true, None::<&str>)?;
    let copy = MenuItem::with_id(app, "copy-base-url", "Copy base URL", true, None::<&str>)?;
    let pause = MenuItem::with_id(app, "pause", "Pause routing", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit Switchyard", true, None::<&str>)?;
    let pages: Vec<MenuItem<R>> = PAGES
        .iter()
        .map(|(id, label, _)| MenuItem::with_id(app, *id, *label, true, None::<&str>))
        .collect::<tauri::Result<_>>()?;
    let sep = || PredefinedMenuItem::separator(app);
    let (sep1, sep2, sep3) = (sep()?, sep()?, sep()?);
    let mut items: Vec<&dyn tauri::menu::IsMenuItem<R>> = vec![&status, &sep1, &open];
    items.extend(pages.iter().map(|p| p as &dyn tauri::menu::IsMenuItem<R>));
    items.extend([&sep2 as &dyn tauri::menu::IsMenuItem<R>, &copy, &pause, &sep3, &quit]);
    let menu = Menu::with_items(app, &items)?;

    let mut tray = TrayIconBuilder::with_id("switchyard")
        .tooltip("Switchyard")
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, event| on_menu(app, event.id.as_ref()));
    if let Some(icon) = app.default_window_icon() {
        tray = tray.icon(icon.clone());
    }
    tray.build(app)?;
    app.manage(TrayItems { status, pause });
    Ok(())
}

fn on_menu<R: Runtime>(app: &AppHandle<R>, id: &str) {
    match id {
        "open" => show_main(app, None),
        "copy-base-url" => {
            if let Some(url) = app.state::<GatewayHost>().base_url()
                && let Err(e) = app.clipboard().write_text(url)
            {
                tracing::warn!(event = "desktop.clipboard_failed", error = %e);
            }
        }
        "pause" => {
            if let Some(control) = app.state::<GatewayHost>().control() {
                control.set_paused(!control.is_paused());
            }
            refresh(app);
        }
        "quit" => app.exit(0),
        page => {
            if let Some((_, _, route)) = PAGES.iter().find(|(pid, _, _)| *pid == page) {
                show_main(app, Some(route));
            }
        }
    }
}

/// Recomputes the status line and the pause item.
pub fn refresh<R: Runtime>(app: &AppHandle<R>) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let host = app.state::<GatewayHost>();
        let (line, paused) = status_line(&host).await;
        if let Some(items) = app.try_state::<TrayItems<R>>() {
            let _ = items.status.set_text(line);
            let _ = items.pause.set_text(if paused { "Resume routing" } else { "Pause routing" });
            let _ = items.pause.set_enabled(host.control().is_some());
        }
    });
}

/// "Listening on 127.0.0.1:7821 · 3 healthy · 1 degraded", or why it is not.
async fn status_line(host: &GatewayHost) -> (String, bool) {
    let status = host.status();
    let (Some(listen), Ok(m)) = (status.listen, host.management()) else {
        let why = status.error.unwrap_or_else(|| "not running".to_owned());
        return (format!("Gateway not running: {}", first_clause(&why)), false);
    };
    let paused = m.control().is_paused();
    let Ok(health) = m.health().await else {
        return (format!("Listening on {listen}"), paused);
    };
    (summary_line(&listen.to_string(), &health.connections, paused), paused)
}

/// The status line from the connections' derived statuses (the same ones every
/// page shows): "Listening on 127.0.0.1:7821 · 3 routable · 1 out (glm-a: Breaker
/// open)". Disabled connections are not counted; paused routing says so instead.
fn summary_line(listen: &str, connections: &[ConnectionRoutabilityView], paused: bool) -> String {
    let mut line = format!("Listening on {listen}");
    if paused {
        line.push_str(" · routing paused");
        return line;
    }
    let counted: Vec<&ConnectionRoutabilityView> =
        connections.iter().filter(|c| c.status.state != RoutabilityState::Disabled).collect();
    let out: Vec<&&ConnectionRoutabilityView> = counted.iter().filter(|c| !c.status.routable).collect();
    line.push_str(&format!(" · {} routable", counted.len() - out.len()));
    if let Some(first) = out.first() {
        let more = if out.len() > 1 { format!(" +{}", out.len() - 1) } else { String::new() };
        line.push_str(&format!(" · {} out ({}: {}{more})", out.len(), first.name, first.status.label));
    }
    line
}

/// The part of a reason that fits a menu line.
fn first_clause(reason: &str) -> &str {
    reason.split([';', '(']).next().unwrap_or(reason).trim()
}

#[cfg(test)]
mod tests {
    use switchyard_types::routability::{ConnectionRoutabilityView, RoutabilityState, RoutabilityView};

    use super::{first_clause, summary_line};

    fn conn(name: &str, state: RoutabilityState, routable: bool, label: &str) -> ConnectionRoutabilityView {
        ConnectionRoutabilityView {
            id: name.to_owned(),
            name: name.to_owned(),
            provider: "p".to_owned(),
            status: RoutabilityView {
                state,
                routable,
                label: label.to_owned(),
                detail: String::new(),
                until: None,
                locked_models: Vec::new(),
            },
        }
    }

    #[test]
    fn the_status_line_counts_derived_statuses_and_names_the_first_one_out() {
        let all = [
            conn("a", RoutabilityState::Routable, true, "Active"),
            conn("glm", RoutabilityState::BreakerOpen, false, "Breaker open"),
            conn("b", RoutabilityState::Cooling, false, "Cooling"),
            conn("off", RoutabilityState::Disabled, false, "Disabled"),
        ];
        assert_eq!(
            summary_line("127.0.0.1:7821", &all, false),
            "Listening on 127.0.0.1:7821 · 1 routable · 2 out (glm: Breaker open +1)"
        );
        assert_eq!(
            summary_line("127.0.0.1:7821", &all[..1], false),
            "Listening on 127.0.0.1:7821 · 1 routable"
        );
        assert_eq!(
            summary_line("127.0.0.1:7821", &all, true),
            "Listening on 127.0.0.1:7821 · routing paused"
        );
    }

    #[test]
    fn the_status_line_keeps_the_first_clause_of_a_reason() {
        assert_eq!(
            first_clause("port 7821 is already in use (another Switchyard); choose another port"),
            "port 7821 is already in use"
        );
    }
}
