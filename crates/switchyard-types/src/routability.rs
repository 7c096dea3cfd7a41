//! A connection's one derived status (SPEC §6: "a connection's status badge is its
//! effective routability ... derived in one place and shown the same everywhere").
//!
//! The gateway computes it from every source that can keep a request off the
//! connection (the switch, routing pause, terminal state, provider breaker,
//! connection cooldown, model lockouts, the last Test, the Claude usage wall), and
//! every page, the tray line and the health API show this value instead of
//! re-deriving it.

use serde::{Deserialize, Serialize};

use crate::UnixMillis;

/// What decides a connection's status, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum RoutabilityState {
    /// Switched off by the user.
    Disabled,
    /// Routing is paused for the whole gateway.
    Paused,
    /// Out until the user acts: banned, credentials expired, credits exhausted.
    Terminal,
    /// Its provider's breaker is open: no connection of the provider is tried.
    BreakerOpen,
    /// The connection is cooling down after an upstream refusal.
    Cooling,
    /// Its last Test failed (and nothing has succeeded on it since).
    TestFailed,
    /// Its provider's breaker lets one probe through at a time.
    BreakerHalfOpen,
    /// Some of its models are locked out; the others route.
    ModelsLocked,
    /// A Claude account in the usage wall's low-priority lane: it routes, slowly.
    UsageWall,
    /// In rotation.
    Routable,
}

/// A connection's derived status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RoutabilityView {
    /// The deciding state.
    pub state: RoutabilityState,
    /// Whether a request for one of its models could be dispatched to it now.
    pub routable: bool,
    /// A short badge text ("Cooling", "Breaker open", ...).
    pub label: String,
    /// One sentence in words: why, and what happens next.
    pub detail: String,
    /// When the deciding state ends by itself, if it does.
    pub until: Option<UnixMillis>,
    /// Models (or quota families) locked out on it now.
    pub locked_models: Vec<String>,
}

/// One connection's status, for the health API and the tray.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionRoutabilityView {
    /// Connection id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Provider id.
    pub provider: String,
    /// Its status.
    pub status: RoutabilityView,
}

/// The outcome of the latest `POST /api/providers/{id}/test`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct LastTestView {
    /// When it ran.
    pub at: UnixMillis,
    /// Whether the upstream accepted the credentials.
    pub ok: bool,
    /// What happened, in words.
    pub message: String,
}
