//! Typed IPC events pushed when the gateway's state changes (DESIGN §6: push,
//! don't poll). Each carries only the time: the UI refetches what it shows. The
//! forwarder coalesces bursts (a storm of cooldowns becomes one event per topic).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchyard_gateway::control::{Control, next_batch};
use switchyard_types::UnixMillis;
use switchyard_types::status::ChangeTopic;
use tauri::{AppHandle, Runtime};
use tauri_specta::Event;

/// How long a burst is gathered before the UI hears of it.
const COALESCE: Duration = Duration::from_millis(150);

macro_rules! change_event {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type, Event)]
            #[serde(rename_all = "camelCase")]
            pub struct $name {
                /// When the change was published.
                pub at: UnixMillis,
            }
        )*
    };
}

change_event!(
    /// A provider breaker changed state.
    BreakersChanged,
    /// A connection cooldown started, escalated or ended.
    CooldownsChanged,
    /// A model lockout started or ended.
    LockoutsChanged,
    /// A Claude account's usage-wall lane or limit-reset state changed.
    LanesChanged,
    /// A connection (or key, combo, alias) was created, changed or deleted.
    ConnectionsChanged,
    /// The resilience settings changed.
    SettingsChanged,
    /// Routing was paused or resumed.
    RoutingChanged,
    /// An exclusive session lease was acquired, renewed, moved or ended.
    LeasesChanged,
);

/// Emits the typed event of one topic.
fn emit<R: Runtime>(app: &AppHandle<R>, topic: ChangeTopic, at: UnixMillis) -> tauri::Result<()> {
    match topic {
        ChangeTopic::Breakers => BreakersChanged { at }.emit(app),
        ChangeTopic::Cooldowns => CooldownsChanged { at }.emit(app),
        ChangeTopic::Lockouts => LockoutsChanged { at }.emit(app),
        ChangeTopic::Lanes => LanesChanged { at }.emit(app),
        ChangeTopic::Connections => ConnectionsChanged { at }.emit(app),
        ChangeTopic::Settings => SettingsChanged { at }.emit(app),
        ChangeTopic::Routing => RoutingChanged { at }.emit(app),
        ChangeTopic::Leases => LeasesChanged { at }.emit(app),
    }
}

/// Forwards the gateway's change feed to the webview until the feed closes;
/// `on_batch` also sees every batch (the tray refreshes its status line).
pub fn spawn_forwarder<R: Runtime>(
    app: AppHandle<R>,
    control: Arc<Control>,
    clock: Arc<dyn switchyard_gateway::clock::Clock>,
    on_batch: impl Fn(&AppHandle<R>, &[ChangeTopic]) + Send + 'static,
) {
    let mut rx = control.subscribe();
    tauri::async_runtime::spawn(async move {
        while let Some(topics) = next_batch(&mut rx, COALESCE).await {
            let at = clock.now_wall();
            for topic in &topics {
                if let Err(e) = emit(&app, *topic, at) {
                    tracing::debug!(event = "desktop.emit_failed", error = %e);
                }
            }
            on_batch(&app, &topics);
        }
    });
}
