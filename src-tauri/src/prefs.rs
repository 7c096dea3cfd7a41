//! Desktop preferences (SPEC §5): what is about the app, not the gateway's state:
//! port, launch at login, start hidden, theme. Kept by tauri-plugin-store in the
//! app's config directory (`desktop.json`); gateway settings stay in SQLite.
//!
//! Validated like every user input (a bad value is rejected with its path, nothing
//! stored); a stored document that no longer reads falls back to the defaults.

use serde::{Deserialize, Serialize};
use switchyard_types::api::ValidationIssue;
use tauri::{Manager, Runtime};
use tauri_plugin_store::StoreExt;

use crate::ipc_error::{IpcError, IpcResult};

/// The store file, in the app's config directory.
pub const STORE_FILE: &str = "desktop.json";
const KEY: &str = "preferences";
/// The gateway's default port.
pub const DEFAULT_PORT: u16 = 7821;

/// The window's colour scheme.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub enum Theme {
    /// Follow the operating system.
    #[default]
    System,
    /// Always light.
    Light,
    /// Always dark.
    Dark,
}

/// The desktop preferences.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DesktopPrefs {
    /// Port of the gateway on 127.0.0.1 (1024–65535); applies at the next start.
    pub port: u16,
    /// Start Switchyard when the user logs in.
    pub launch_at_login: bool,
    /// Start in the tray without opening the window.
    pub start_hidden: bool,
    /// Colour scheme of the window.
    pub theme: Theme,
}

impl Default for DesktopPrefs {
    fn default() -> Self {
        DesktopPrefs { port: DEFAULT_PORT, launch_at_login: false, start_hidden: false, theme: Theme::System }
    }
}

impl DesktopPrefs {
    /// Every rule a user's document must meet.
    pub fn validate(&self) -> Vec<ValidationIssue> {
        let mut issues = Vec::new();
        if self.port < 1024 {
            issues.push(ValidationIssue {
                path: "/port".into(),
                message: "must be between 1024 and 65535 (ports below 1024 need root)".into(),
            });
        }
        issues
    }
}

/// The stored preferences, or the defaults.
pub fn load<R: Runtime>(app: &impl Manager<R>) -> DesktopPrefs {
    let stored = app.store(STORE_FILE).ok().and_then(|s| s.get(KEY));
    match stored.map(serde_json::from_value::<DesktopPrefs>) {
        Some(Ok(prefs)) if prefs.validate().is_empty() => prefs,
        Some(_) => {
            tracing::warn!(event = "desktop.prefs_unreadable", "stored preferences ignored; using defaults");
            DesktopPrefs::default()
        }
        None => DesktopPrefs::default(),
    }
}

/// Validates and stores `prefs`, and applies launch-at-login now.
pub fn save<R: Runtime>(app: &impl Manager<R>, prefs: &DesktopPrefs) -> IpcResult<()> {
    let issues = prefs.validate();
    if !issues.is_empty() {
        return Err(IpcError::validation(issues));
    }
    let store = app.store(STORE_FILE).map_err(internal)?;
    store.set(KEY, serde_json::to_value(prefs).map_err(internal)?);
    store.save().map_err(internal)?;
    apply_launch_at_login(app, prefs.launch_at_login);
    Ok(())
}

/// Turns the login item on or off (fail-soft: a desktop without autostart support
/// only logs).
fn apply_launch_at_login<R: Runtime>(app: &impl Manager<R>, on: bool) {
    // Absent when the plugin is not installed (the test app).
    let Some(manager) = app.try_state::<tauri_plugin_autostart::AutoLaunchManager>() else {
        return;
    };
    let result = if on { manager.enable() } else { manager.disable() };
    if let Err(e) = result {
        tracing::warn!(event = "desktop.autostart_failed", error = %e);
    }
}

fn internal(e: impl std::fmt::Display) -> IpcError {
    IpcError::new(switchyard_types::ErrorCode::InternalError, format!("preferences: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_privileged_port_is_rejected_by_path() {
        let prefs = DesktopPrefs { port: 80, ..DesktopPrefs::default() };
        let paths: Vec<String> = prefs.validate().into_iter().map(|i| i.path).collect();
        assert_eq!(paths, ["/port"]);
        assert!(DesktopPrefs::default().validate().is_empty());
    }

    #[test]
    fn unknown_fields_are_refused() {
        let bad = serde_json::json!({"port": 7821, "launchAtLogin": false, "startHidden": false,
                                      "theme": "dark", "colour": "red"});
        assert!(serde_json::from_value::<DesktopPrefs>(bad).is_err());
    }
}
