//! Provider presets: what the connection form fills in for a well-known provider
//! (provider id, wire format, auth, base URL, a models list), so adding one takes
//! only its key. `GET /api/presets` serves them with each base URL as in force
//! (`SWITCHYARD_PRESET_<ID>_BASE_URL` points a preset at a mirror or proxy).

use serde::{Deserialize, Serialize};

use crate::{ApiFormat, AuthKind};

/// One preset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ProviderPresetView {
    /// Stable preset id (`glm`, `glm-anthropic`, `ollama`, ...).
    pub id: String,
    /// What the form shows.
    pub label: String,
    /// The provider id the connection gets (its breaker's scope).
    pub provider: String,
    /// The wire format of the endpoint.
    pub api_format: ApiFormat,
    /// How it authenticates.
    pub auth_kind: AuthKind,
    /// The base URL in force.
    pub base_url: String,
    /// Models it serves, most useful first.
    pub models: Vec<String>,
    /// Where the user gets a key, in words (empty when none is needed).
    pub key_hint: String,
    /// A Claude subscription account: added by importing the Claude Code login, not by key.
    pub claude_login: bool,
}
