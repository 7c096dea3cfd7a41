//! How long an exhausted quota lasts when the upstream gives no reset (reference facts
//! §2.4): the wording says which window ran out, and the window sets the wait —
//! daily → the next local midnight, subscription usage limit → 1 h, weekly → 24 h,
//! session window → 5 h, a retired model (404/410) → 24 h. Never the seconds-scale
//! backoff: retrying an exhausted account every few seconds only burns requests.
//!
//! Pure lookups over the lower-cased body; the local midnight needs the caller's UTC
//! offset (the engine reads it from its clock).

use switchyard_types::UnixMillis;

/// Which quota window a body says ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaWindow {
    /// A daily quota: resets at the next local midnight.
    Daily,
    /// A weekly (or monthly) limit: 24 h unless the body says when.
    Weekly,
    /// A session window (Claude's 5-hour window): 5 h.
    Session,
    /// A subscription usage limit or an unspecified quota: 1 h.
    Subscription,
}

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// Daily-quota wording.
pub const DAILY_MARKERS: &[&str] =
    &["today's quota", "daily quota", "daily limit", "try again tomorrow", "tpd rate limit", "per day"];
/// Weekly / monthly wording.
pub const WEEKLY_MARKERS: &[&str] = &[
    "weekly usage limit",
    "weekly limit",
    "reached your weekly",
    "1-week quota",
    "week quota",
    "monthly limit",
    "monthly quota",
];
/// Session-window wording.
pub const SESSION_MARKERS: &[&str] = &["session usage limit", "session limit reached", "5-hour limit"];
/// A model that was retired or moved (404/410 bodies).
pub const RETIRED_MARKERS: &[&str] = &[
    "no longer available",
    "no longer supported",
    "end of life",
    "has been deprecated",
    "was deprecated",
    "has been retired",
    "was retired",
    "has been decommissioned",
    "was decommissioned",
    "has been discontinued",
    "endpoint has moved",
    "update your base url",
];

impl QuotaWindow {
    /// The window a quota body names (weekly before daily: "weekly limit, try again
    /// tomorrow" is still a weekly limit).
    pub fn of(lower: &str) -> QuotaWindow {
        let has = |markers: &[&str]| markers.iter().any(|m| lower.contains(m));
        if has(WEEKLY_MARKERS) {
            QuotaWindow::Weekly
        } else if has(SESSION_MARKERS) {
            QuotaWindow::Session
        } else if has(DAILY_MARKERS) {
            QuotaWindow::Daily
        } else {
            QuotaWindow::Subscription
        }
    }

    /// When the window resets, for a failure at `now` in a zone `utc_offset_ms` from UTC.
    pub fn resets_at(self, now: UnixMillis, utc_offset_ms: i64) -> UnixMillis {
        match self {
            QuotaWindow::Daily => next_local_midnight(now, utc_offset_ms),
            QuotaWindow::Weekly => now.plus_millis(DAY_MS),
            QuotaWindow::Session => now.plus_millis(5 * HOUR_MS),
            QuotaWindow::Subscription => now.plus_millis(HOUR_MS),
        }
    }
}

/// Whether a 404/410 body says the model was retired or moved for good.
pub fn is_retired(lower: &str) -> bool {
    RETIRED_MARKERS.iter().any(|m| lower.contains(m))
}

/// How long a retired model stays locked.
pub const RETIRED_LOCK_MS: i64 = DAY_MS;

/// The next midnight in a zone `utc_offset_ms` from UTC; at least one minute and at
/// most 24 h ahead (a DST change never makes it longer than a day).
pub fn next_local_midnight(now: UnixMillis, utc_offset_ms: i64) -> UnixMillis {
    let local = now.0.saturating_add(utc_offset_ms);
    let into_day = local.rem_euclid(DAY_MS);
    let wait = (DAY_MS - into_day).clamp(60_000, DAY_MS);
    now.plus_millis(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_by_wording() {
        assert_eq!(QuotaWindow::of("you've reached your weekly limit"), QuotaWindow::Weekly);
        assert_eq!(QuotaWindow::of("daily quota exceeded"), QuotaWindow::Daily);
        assert_eq!(QuotaWindow::of("session limit reached"), QuotaWindow::Session);
        assert_eq!(QuotaWindow::of("usage limit reached"), QuotaWindow::Subscription);
        assert_eq!(QuotaWindow::of("insufficient_quota"), QuotaWindow::Subscription);
        assert_eq!(QuotaWindow::of("weekly limit, try again tomorrow"), QuotaWindow::Weekly);
    }

    #[test]
    fn durations() {
        let now = UnixMillis(1_000 * DAY_MS + 10 * HOUR_MS);
        assert_eq!(QuotaWindow::Subscription.resets_at(now, 0), now.plus_millis(HOUR_MS));
        assert_eq!(QuotaWindow::Session.resets_at(now, 0), now.plus_millis(5 * HOUR_MS));
        assert_eq!(QuotaWindow::Weekly.resets_at(now, 0), now.plus_millis(DAY_MS));
        // 10:00 UTC: midnight is 14 h away in UTC, 12 h away at UTC+2.
        assert_eq!(QuotaWindow::Daily.resets_at(now, 0), now.plus_millis(14 * HOUR_MS));
        assert_eq!(QuotaWindow::Daily.resets_at(now, 2 * HOUR_MS), now.plus_millis(12 * HOUR_MS));
        assert_eq!(QuotaWindow::Daily.resets_at(now, -11 * HOUR_MS), now.plus_millis(HOUR_MS));
    }

    #[test]
    fn midnight_is_never_now() {
        let midnight = UnixMillis(1_000 * DAY_MS);
        assert_eq!(next_local_midnight(midnight, 0), midnight.plus_millis(DAY_MS));
        assert_eq!(
            next_local_midnight(UnixMillis(1_000 * DAY_MS - 1), 0),
            UnixMillis(1_000 * DAY_MS - 1 + 60_000)
        );
    }

    #[test]
    fn retired_models() {
        assert!(is_retired("the model claude-2 has been retired"));
        assert!(is_retired("this model is no longer available"));
        assert!(!is_retired("model not found"));
    }
}
