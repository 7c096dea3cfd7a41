//! The Switchyard desktop app: a tray app that hosts the gateway in-process (the
//! same library as `switchyard serve`) and a settings window whose UI reaches the
//! gateway's `ManagementService` through typed IPC commands and events.
//!
//! Layout: `host` (the hosted gateway and its start failure), `commands` (one IPC
//! command per management operation), `document` (strictly parsed document
//! arguments), `ipc_error`, `events` (typed change events), `prefs` (desktop
//! preferences in tauri-plugin-store), `tray`, `window`. The only crate that
//! depends on tauri: the gateway builds and tests without GUI libraries.

pub mod commands;
pub mod document;
pub mod events;
pub mod host;
pub mod ipc_error;
pub mod prefs;
mod tray;
mod window;

#[cfg(test)]
mod tests;

/// jemalloc on Linux, as in the headless binary (ADR 0010, decision 6): the gateway
/// in this process returns the memory a burst took (glibc's per-thread arenas kept
/// it), and its lanes hand their thread caches back after one (`host::gateway_config`
/// passes the controls). Declared in the library so its tests run on it too. C code
/// (GTK, WebKit's client side, SQLite) keeps allocating from glibc.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::sync::Arc;

use tauri::{Manager, RunEvent};

use crate::host::{GatewayHost, gateway_config};

/// The tauri-specta builder for runtime `$r`: every command and event. A macro
/// because the desktop commands are generic over the runtime and tauri-specta
/// needs their runtime spelled out (the app uses `Wry`, the tests `MockRuntime`).
macro_rules! specta_builder {
    ($r:ty) => {{
        use $crate::commands::connections::*;
        use $crate::commands::desktop::*;
        use $crate::commands::gateway::*;
        use $crate::commands::keys::*;
        use $crate::commands::monitoring::*;
        use $crate::commands::resilience::*;
        use $crate::commands::routes::*;
        use $crate::events::*;
        tauri_specta::Builder::<$r>::new()
            .commands(tauri_specta::collect_commands![
                connections_list,
                connections_get,
                connections_create,
                connections_update,
                connections_delete,
                connections_test,
                keys_list,
                keys_create,
                keys_delete,
                combos_list,
                combos_put,
                combos_delete,
                aliases_list,
                aliases_put,
                aliases_delete,
                monitoring_health,
                monitoring_summary,
                logs_list,
                rate_limits_get,
                rate_limits_set,
                sessions_list,
                sessions_clear,
                leases_list,
                leases_release,
                requests_list,
                request_get,
                presets_list,
                connections_import_claude_login,
                setup_list,
                setup_apply,
                setup_undo,
                resilience_get,
                resilience_patch,
                resilience_defaults,
                resilience_ranges,
                breakers_list,
                breakers_reset,
                cooldowns_list,
                cooldowns_clear,
                lockouts_list,
                lockouts_clear,
                model_lockout_get,
                model_lockout_patch,
                gateway_status,
                gateway_set_paused,
                desktop_prefs_get::<$r>,
                desktop_prefs_set::<$r>,
                desktop_status,
                desktop_set_unsaved_edits,
                desktop_close_window::<$r>,
            ])
            // The validator's ranges table and the default settings document, so UI
            // tests and forms see the Rust values instead of a hand-kept copy.
            .constant("SETTINGS_RANGES", switchyard_types::settings::SettingsRanges::current())
            .constant("DEFAULT_RESILIENCE_SETTINGS", switchyard_types::ResilienceSettings::default())
            .events(tauri_specta::collect_events![
                BreakersChanged,
                CooldownsChanged,
                LockoutsChanged,
                LanesChanged,
                ConnectionsChanged,
                SettingsChanged,
                RoutingChanged,
                LeasesChanged,
            ])
    }};
}
#[cfg(test)]
pub(crate) use specta_builder;

/// Command-line flag the login item passes: start in the tray.
const HIDDEN_FLAG: &str = "--hidden";

/// The hosted gateway's hot code onto huge pages, as `switchyard serve` does
/// (ADR 0016): first thing, before tauri, GTK or the gateway start a thread.
/// `SWITCHYARD_HUGE_TEXT=false` leaves it where it is (profilers that attach to the
/// file).
fn move_hot_text() {
    use switchyard_gateway::hot_text;
    let enabled = hot_text::enabled_from_env().unwrap_or_else(|problem| {
        tracing::warn!(event = "desktop.bad_huge_text_env", problem = %problem, "moving the hot code anyway");
        true
    });
    tracing::info!(event = "desktop.hot_text", code = %hot_text::move_hot_text(enabled));
}

/// Runs the desktop app until Quit.
pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SWITCHYARD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    move_hot_text();
    let builder = specta_builder!(tauri::Wry);
    let app = tauri::Builder::default()
        // First, so a second launch is caught before anything else starts.
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| window::show_main(app, None)))
        .plugin(tauri_plugin_store::Builder::default().build())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            Some(vec![HIDDEN_FLAG]),
        ))
        .plugin(tauri_plugin_clipboard_manager::init())
        .manage(GatewayHost::default())
        .manage(window::UnsavedEdits::default())
        .manage(window::LastPage::default())
        .invoke_handler(builder.invoke_handler())
        .setup(move |app| {
            builder.mount_events(app);
            let prefs = prefs::load(app);
            // SWITCHYARD_PORT overrides the preference (scripts, the e2e test).
            let (port, source) = match std::env::var(host::PORT_FROM_ENV).map(|t| (t.parse::<u16>(), t)) {
                Ok((Ok(port), _)) => (port, host::PORT_FROM_ENV),
                Ok((Err(_), text)) => {
                    tracing::warn!(event = "desktop.bad_port_env", value = %text, "not a port; using the preference");
                    (prefs.port, host::PORT_FROM_PREFERENCES)
                }
                Err(_) => (prefs.port, host::PORT_FROM_PREFERENCES),
            };
            let host = app.state::<GatewayHost>();
            host.set_port(port, source);
            let started = tauri::async_runtime::block_on(host.start(gateway_config(port)));
            let handle = app.handle().clone();
            if let Err(e) = tray::build(&handle) {
                tracing::warn!(event = "desktop.tray_unavailable", error = %e);
            }
            if let Some(control) = host.control() {
                events::spawn_forwarder(
                    handle.clone(),
                    control,
                    Arc::new(switchyard_gateway::clock::SystemClock),
                    |app, _| tray::refresh(app),
                );
            }
            tray::refresh(&handle);
            let hidden = prefs.start_hidden || std::env::args().any(|a| a == HIDDEN_FLAG);
            // A failed start is shown even when starting hidden: the user must see it.
            if !hidden || started.is_err() {
                window::show_main(&handle, None);
            }
            Ok(())
        })
        .on_window_event(window::on_event)
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(e) => {
            eprintln!("Switchyard could not start its window: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| match event {
        // The last window closing is not Quit; only the tray's Quit (an exit code) is.
        RunEvent::ExitRequested { api, code: None, .. } => api.prevent_exit(),
        RunEvent::Exit => {
            let host = app.state::<GatewayHost>();
            tauri::async_runtime::block_on(host.shutdown());
        }
        _ => {}
    });
}
