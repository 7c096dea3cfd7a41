//! An account's usage windows, read passively from the upstream's own response
//! headers (no extra calls): a Claude subscription's `anthropic-ratelimit-unified-*`
//! (5-hour and 7-day utilisation, status, reset) and Codex's `x-codex-primary-*` /
//! `x-codex-secondary-*` (used percent, window length, reset).

use serde::{Deserialize, Serialize};

use crate::UnixMillis;

/// Which headers a usage reading came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum UsageSource {
    /// `anthropic-ratelimit-unified-*` (Claude subscription accounts).
    ClaudeUnified,
    /// `x-codex-*` (ChatGPT / Codex accounts).
    Codex,
}

/// One usage window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct UsageWindowView {
    /// `5h`, `7d` (Claude); `primary`, `secondary` (Codex).
    pub window: String,
    /// The window's length in minutes, when known (300 for 5 hours).
    pub window_minutes: Option<u32>,
    /// Share used, in tenths of a percent (0–1000; more when over the limit).
    pub used_permille: u32,
    /// When the window resets.
    pub resets_at: Option<UnixMillis>,
    /// The upstream's status word for this window (`allowed`, `allowed_warning`,
    /// `rejected`), when it sends one.
    pub status: Option<String>,
}

/// A connection's latest usage reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct UsageView {
    /// Which headers it came from.
    pub source: UsageSource,
    /// When the response carrying it arrived.
    pub observed_at: UnixMillis,
    /// The account-wide status word (`allowed`, `allowed_warning`, `rejected`).
    pub status: Option<String>,
    /// The window the upstream says is binding (`5h`, `7d`), when it says.
    pub binding_window: Option<String>,
    /// The windows, shortest first.
    pub windows: Vec<UsageWindowView>,
}
