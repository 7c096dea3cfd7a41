//! Usage windows per account, read passively from every upstream response's
//! headers (no extra calls): a Claude subscription's `anthropic-ratelimit-unified-*`
//! (5-hour and 7-day utilisation, status, reset) and Codex's `x-codex-primary-*` /
//! `x-codex-secondary-*`. The latest reading per connection is kept in memory and
//! shown on the connection; the binding window's reset feeds the `reset-aware`
//! strategy. A response without these headers costs two header lookups (and no
//! allocation).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use http::HeaderMap;
use switchyard_types::UnixMillis;
use switchyard_types::usage::{UsageSource, UsageView, UsageWindowView};

const CLAUDE: &str = "anthropic-ratelimit-unified-";
const CODEX: &str = "x-codex-";
/// Present on every answer that carries a Claude reading.
const CLAUDE_MARK: &str = "anthropic-ratelimit-unified-status";
/// Present on every answer that carries a Codex reading.
const CODEX_MARK: &str = "x-codex-primary-used-percent";
/// Resets closer than this are the same reset (Codex sends "seconds from now").
const RESET_TOLERANCE_MS: i64 = 60_000;

fn text<'h>(h: &'h HeaderMap, name: &str) -> Option<&'h str> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty())
}

/// A finite, non-negative number.
fn number(h: &HeaderMap, name: &str) -> Option<f64> {
    text(h, name).and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0)
}

fn permille(fraction_or_percent: f64, scale: f64) -> u32 {
    (fraction_or_percent * scale).round().clamp(0.0, f64::from(u32::MAX)) as u32
}

fn epoch_secs(h: &HeaderMap, name: &str) -> Option<UnixMillis> {
    number(h, name).map(|s| UnixMillis((s * 1000.0) as i64))
}

/// The Claude unified headers' windows (`5h`, `7d`).
fn claude(h: &HeaderMap, now: UnixMillis) -> Option<UsageView> {
    let mut windows = Vec::new();
    for (window, minutes) in [("5h", 300), ("7d", 10_080)] {
        let utilization = number(h, &format!("{CLAUDE}{window}-utilization"));
        let resets_at = epoch_secs(h, &format!("{CLAUDE}{window}-reset"));
        let status = text(h, &format!("{CLAUDE}{window}-status")).map(str::to_owned);
        if utilization.is_none() && resets_at.is_none() && status.is_none() {
            continue;
        }
        windows.push(UsageWindowView {
            window: window.to_owned(),
            window_minutes: Some(minutes),
            // A fraction: 0.42 is 42 %.
            used_permille: utilization.map_or(0, |u| permille(u, 1000.0)),
            resets_at,
            status,
        });
    }
    let status = text(h, &format!("{CLAUDE}status")).map(str::to_owned);
    if windows.is_empty() && status.is_none() {
        return None;
    }
    let binding_window = text(h, &format!("{CLAUDE}representative-claim")).map(|c| match c {
        "five_hour" => "5h".to_owned(),
        "seven_day" => "7d".to_owned(),
        other => other.to_owned(),
    });
    Some(UsageView { source: UsageSource::ClaudeUnified, observed_at: now, status, binding_window, windows })
}

/// Codex's headers' windows (`primary`, `secondary`).
fn codex(h: &HeaderMap, now: UnixMillis) -> Option<UsageView> {
    let mut windows = Vec::new();
    for window in ["primary", "secondary"] {
        let Some(used) = number(h, &format!("{CODEX}{window}-used-percent")) else { continue };
        let resets_at = epoch_secs(h, &format!("{CODEX}{window}-reset-at")).or_else(|| {
            number(h, &format!("{CODEX}{window}-reset-after-seconds"))
                .map(|s| now.plus_millis((s * 1000.0) as i64))
        });
        windows.push(UsageWindowView {
            window: window.to_owned(),
            window_minutes: number(h, &format!("{CODEX}{window}-window-minutes")).map(|m| m as u32),
            // A percentage: 42 is 42 %.
            used_permille: permille(used, 10.0),
            resets_at,
            status: None,
        });
    }
    if windows.is_empty() {
        return None;
    }
    // The fuller window binds.
    let binding_window = windows.iter().max_by_key(|w| w.used_permille).map(|w| w.window.clone());
    Some(UsageView { source: UsageSource::Codex, observed_at: now, status: None, binding_window, windows })
}

fn visibly_different(a: &UsageView, b: &UsageView) -> bool {
    a.status != b.status
        || a.binding_window != b.binding_window
        || a.windows.len() != b.windows.len()
        || a.windows.iter().zip(&b.windows).any(|(x, y)| {
            x.window != y.window
                || x.status != y.status
                || match (x.resets_at, y.resets_at) {
                    (Some(a), Some(b)) => (a.0 - b.0).abs() >= RESET_TOLERANCE_MS,
                    (a, b) => a.is_some() != b.is_some(),
                }
                || x.used_permille.abs_diff(y.used_permille) >= 10
        })
}

/// The usage reading of one response, if it carries one.
pub fn read(h: &HeaderMap, now: UnixMillis) -> Option<UsageView> {
    // Most answers carry neither reading: one pass over the names tells, where the
    // look-ups below would each parse their name again.
    let (mut has_claude, mut has_codex) = (false, false);
    for name in h.keys() {
        has_claude |= name.as_str().starts_with(CLAUDE);
        has_codex |= name.as_str().starts_with(CODEX);
    }
    let claude_mark = has_claude
        && (h.contains_key(CLAUDE_MARK) || h.contains_key("anthropic-ratelimit-unified-5h-utilization"));
    if claude_mark && let Some(reading) = claude(h, now) {
        return Some(reading);
    }
    if has_codex && (h.contains_key(CODEX_MARK) || h.contains_key("x-codex-secondary-used-percent")) {
        return codex(h, now);
    }
    None
}

impl UsageViewExt for UsageView {
    fn binding_reset(&self) -> Option<UnixMillis> {
        let binding = self.binding_window.as_deref();
        self.windows
            .iter()
            .find(|w| Some(w.window.as_str()) == binding)
            .or_else(|| self.windows.iter().max_by_key(|w| w.used_permille))
            .and_then(|w| w.resets_at)
    }
}

/// What the routing reads of a reading.
pub trait UsageViewExt {
    /// The reset of the window that binds (the one the upstream names, else the
    /// fullest).
    fn binding_reset(&self) -> Option<UnixMillis>;
}

/// The latest reading per connection.
#[derive(Debug, Default)]
pub struct UsageBook {
    latest: Mutex<HashMap<String, UsageView>>,
}

impl UsageBook {
    /// Reads `headers`; keeps the reading for `connection` when there is one.
    /// Also says whether it differs visibly from the previous one (a status, a
    /// reset, or a whole percent), so the UI hears of it without a refetch per answer.
    pub fn observe(
        &self,
        connection: &str,
        headers: &HeaderMap,
        now: UnixMillis,
    ) -> Option<(UsageView, bool)> {
        let reading = read(headers, now)?;
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = latest.get(connection).is_none_or(|before| visibly_different(before, &reading));
        latest.insert(connection.to_owned(), reading.clone());
        Some((reading, changed))
    }

    /// The latest reading of `connection`.
    pub fn latest(&self, connection: &str) -> Option<UsageView> {
        self.latest.lock().unwrap_or_else(PoisonError::into_inner).get(connection).cloned()
    }

    /// Forgets connections no longer present.
    pub fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        self.latest.lock().unwrap_or_else(PoisonError::into_inner).retain(|k, _| keep(k));
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    const NOW: UnixMillis = UnixMillis(1_900_000_000_000);

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap_or_else(|e| panic!("{e}")));
        }
        h
    }

    #[test]
    fn claude_unified_headers_give_the_5h_and_7d_windows() {
        let h = headers(&[
            ("anthropic-ratelimit-unified-status", "allowed_warning"),
            ("anthropic-ratelimit-unified-5h-utilization", "0.873"),
            ("anthropic-ratelimit-unified-5h-reset", "1900003600"),
            ("anthropic-ratelimit-unified-5h-status", "allowed_warning"),
            ("anthropic-ratelimit-unified-7d-utilization", "0.31"),
            ("anthropic-ratelimit-unified-7d-reset", "1900400000"),
            ("anthropic-ratelimit-unified-representative-claim", "five_hour"),
        ]);
        let u = read(&h, NOW).unwrap_or_else(|| panic!("no reading"));
        assert_eq!(u.source, UsageSource::ClaudeUnified);
        assert_eq!(u.status.as_deref(), Some("allowed_warning"));
        assert_eq!(u.binding_window.as_deref(), Some("5h"));
        let w: Vec<(&str, u32, Option<i64>)> = u
            .windows
            .iter()
            .map(|w| (w.window.as_str(), w.used_permille, w.resets_at.map(|r| r.0)))
            .collect();
        assert_eq!(w, [("5h", 873, Some(1_900_003_600_000)), ("7d", 310, Some(1_900_400_000_000))]);
        assert_eq!(u.binding_reset(), Some(UnixMillis(1_900_003_600_000)));
    }

    #[test]
    fn codex_headers_give_the_primary_and_secondary_windows() {
        let h = headers(&[
            ("x-codex-primary-used-percent", "12.5"),
            ("x-codex-primary-window-minutes", "300"),
            ("x-codex-primary-reset-after-seconds", "600"),
            ("x-codex-secondary-used-percent", "77"),
            ("x-codex-secondary-window-minutes", "10080"),
            ("x-codex-secondary-reset-at", "1900500000"),
        ]);
        let u = read(&h, NOW).unwrap_or_else(|| panic!("no reading"));
        assert_eq!(u.source, UsageSource::Codex);
        let w: Vec<(&str, Option<u32>, u32, Option<i64>)> = u
            .windows
            .iter()
            .map(|w| (w.window.as_str(), w.window_minutes, w.used_permille, w.resets_at.map(|r| r.0)))
            .collect();
        assert_eq!(
            w,
            [
                ("primary", Some(300), 125, Some(NOW.0 + 600_000)),
                ("secondary", Some(10_080), 770, Some(1_900_500_000_000))
            ]
        );
        assert_eq!(u.binding_window.as_deref(), Some("secondary"), "the fuller window binds");
    }

    #[test]
    fn a_reset_announced_in_seconds_from_now_is_not_a_change_every_answer() {
        let book = UsageBook::default();
        let h = headers(&[
            ("x-codex-primary-used-percent", "12"),
            ("x-codex-primary-reset-after-seconds", "600"),
        ]);
        assert!(book.observe("c", &h, NOW).is_some_and(|(_, changed)| changed), "the first reading is news");
        let later = NOW.plus_millis(2_000);
        let h2 = headers(&[
            ("x-codex-primary-used-percent", "12"),
            ("x-codex-primary-reset-after-seconds", "598"),
        ]);
        assert!(book.observe("c", &h2, later).is_some_and(|(_, changed)| !changed));
        let h3 = headers(&[
            ("x-codex-primary-used-percent", "14"),
            ("x-codex-primary-reset-after-seconds", "597"),
        ]);
        assert!(
            book.observe("c", &h3, later).is_some_and(|(_, changed)| changed),
            "two percent more is news"
        );
    }

    #[test]
    fn answers_without_them_or_with_junk_give_nothing() {
        assert_eq!(read(&headers(&[("content-type", "application/json")]), NOW), None);
        assert_eq!(read(&headers(&[("x-codex-primary-used-percent", "-3")]), NOW), None);
        assert_eq!(read(&headers(&[("anthropic-ratelimit-unified-5h-utilization", "NaN")]), NOW), None);
    }
}
