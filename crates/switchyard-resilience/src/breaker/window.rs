//! The optional windowed provider cooldown gate (SPEC 4.1 last bullet; off by
//! default). Provider entries: `failure_threshold` counted failures within
//! `failure_window_ms` cool the provider for `cooldown_ms`; a success clears the
//! window. Connection entries: each counted failure cools the connection for
//! `min × 2^(n−1)`, capped at `max`; a success clears it.
//!
//! When disabled, recording is a no-op and nothing ever cools (fail-open). Lazy like
//! every timed state: an elapsed cooldown simply stops counting.

use serde::{Deserialize, Serialize};
use switchyard_types::UnixMillis;
use switchyard_types::settings::{ProviderCooldownSettings, WindowGateSettings};

use crate::backoff::{as_i64, exponential};
use crate::outcome::AuthCategory;

/// The gate's parameters for one category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPolicy {
    /// Master switch.
    pub enabled: bool,
    /// Failures within the window that cool the provider.
    pub failure_threshold: u32,
    /// The window.
    pub failure_window_ms: u32,
    /// The provider cooldown.
    pub cooldown_ms: u32,
    /// First connection-entry cooldown.
    pub min_retry_ms: u32,
    /// Connection-entry cap.
    pub max_retry_ms: u32,
}

impl WindowPolicy {
    /// The gate for `category` from settings; Local providers use 2 failures in 5 min
    /// → 1 min.
    pub fn from_settings(category: AuthCategory, s: &ProviderCooldownSettings) -> WindowPolicy {
        let g = match category {
            AuthCategory::Oauth => s.oauth,
            AuthCategory::ApiKey => s.apikey,
            AuthCategory::Local => {
                WindowGateSettings { failure_threshold: 2, failure_window_ms: 300_000, cooldown_ms: 60_000 }
            }
        };
        WindowPolicy {
            enabled: s.enabled,
            failure_threshold: g.failure_threshold.max(1),
            failure_window_ms: g.failure_window_ms,
            cooldown_ms: g.cooldown_ms,
            min_retry_ms: s.min_retry_cooldown_ms,
            max_retry_ms: s.max_retry_cooldown_ms.max(s.min_retry_cooldown_ms),
        }
    }
}

/// A provider's window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderWindow {
    /// Counted failures inside the window (at most the threshold).
    pub failures: Vec<UnixMillis>,
    /// End of the provider cooldown.
    pub cooling_until: Option<UnixMillis>,
}

impl ProviderWindow {
    /// Records a counted failure; returns the cooldown end when this failure starts one.
    pub fn record_failure(&mut self, now: UnixMillis, p: &WindowPolicy) -> Option<UnixMillis> {
        if !p.enabled {
            return None;
        }
        let since = now.plus_millis(-i64::from(p.failure_window_ms));
        self.failures.retain(|at| *at > since);
        self.failures.push(now);
        if u32::try_from(self.failures.len()).unwrap_or(u32::MAX) < p.failure_threshold {
            return None;
        }
        self.failures.clear();
        let until = now.plus_millis(i64::from(p.cooldown_ms));
        self.cooling_until = Some(self.cooling_until.map_or(until, |u| u.max(until)));
        self.cooling_until
    }

    /// A success clears the window (a running cooldown stays: the success came from
    /// an attempt dispatched before it).
    pub fn record_success(&mut self) {
        self.failures.clear();
    }

    /// The cooldown end, if the provider is cooling at `now`.
    pub fn cooling(&self, now: UnixMillis) -> Option<UnixMillis> {
        self.cooling_until.filter(|u| *u > now)
    }
}

/// A connection's entry in the gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionWindow {
    /// Counted failures since the last success.
    pub failures: u32,
    /// End of the entry's cooldown.
    pub cooling_until: Option<UnixMillis>,
}

impl ConnectionWindow {
    /// Records a counted failure; returns the cooldown end.
    pub fn record_failure(&mut self, now: UnixMillis, p: &WindowPolicy) -> Option<UnixMillis> {
        if !p.enabled {
            return None;
        }
        self.failures = self.failures.saturating_add(1);
        let ms = exponential(p.min_retry_ms, self.failures - 1, 63, u64::from(p.max_retry_ms));
        let until = now.plus_millis(as_i64(ms));
        self.cooling_until = Some(self.cooling_until.map_or(until, |u| u.max(until)));
        self.cooling_until
    }

    /// A success clears the entry.
    pub fn record_success(&mut self) {
        *self = ConnectionWindow::default();
    }

    /// The cooldown end, if cooling at `now`.
    pub fn cooling(&self, now: UnixMillis) -> Option<UnixMillis> {
        self.cooling_until.filter(|u| *u > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(category: AuthCategory) -> WindowPolicy {
        let s = ProviderCooldownSettings { enabled: true, ..ProviderCooldownSettings::default() };
        WindowPolicy::from_settings(category, &s)
    }

    #[test]
    fn off_by_default() {
        let p = WindowPolicy::from_settings(AuthCategory::Oauth, &ProviderCooldownSettings::default());
        let mut w = ProviderWindow::default();
        for i in 0..50 {
            assert_eq!(w.record_failure(UnixMillis(i), &p), None);
        }
        assert_eq!(w.cooling(UnixMillis(50)), None);
    }

    #[test]
    fn oauth_cools_after_10_failures_in_15_minutes() {
        let p = policy(AuthCategory::Oauth);
        let mut w = ProviderWindow::default();
        for i in 0..9 {
            assert_eq!(w.record_failure(UnixMillis(i * 60_000), &p), None);
        }
        let at = UnixMillis(9 * 60_000);
        assert_eq!(w.record_failure(at, &p), Some(at.plus_millis(300_000)));
        assert_eq!(w.cooling(at.plus_millis(299_999)), Some(at.plus_millis(300_000)));
        assert_eq!(w.cooling(at.plus_millis(300_000)), None);
    }

    #[test]
    fn failures_outside_the_window_do_not_count_and_success_clears() {
        let p = policy(AuthCategory::ApiKey); // 15 in 30 min
        let mut w = ProviderWindow::default();
        for i in 0..14 {
            w.record_failure(UnixMillis(i), &p);
        }
        assert_eq!(w.record_failure(UnixMillis(1_800_000 + 5), &p), None, "old failures left the window");
        w.record_success();
        assert!(w.failures.is_empty());
    }

    #[test]
    fn connection_entries_back_off_exponentially_to_the_cap() {
        let p = policy(AuthCategory::Oauth);
        let mut c = ConnectionWindow::default();
        let ends: Vec<i64> = (0..8).map(|_| c.record_failure(UnixMillis(0), &p).map_or(0, |u| u.0)).collect();
        assert_eq!(ends, vec![5_000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
        c.record_success();
        assert_eq!(c, ConnectionWindow::default());
    }
}
