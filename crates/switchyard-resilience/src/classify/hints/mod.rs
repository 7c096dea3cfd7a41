//! Upstream retry hints (SPEC 4.2): `Retry-After` (seconds or HTTP date),
//! `retry-after-ms`, Anthropic `anthropic-ratelimit-*-reset` (RFC 3339) and
//! `anthropic-ratelimit-unified-reset` (epoch seconds, when the unified status is
//! `rejected`), OpenAI `x-ratelimit-reset-*` (durations), `x-ratelimit-reset` (epoch or
//! seconds), and reset text in bodies.
//!
//! A hint is an instant; only a future one counts. Hints do not come from a user, so
//! they are clamped (to [`MAX_HINT_MS`] ahead) rather than rejected, and the clamp is
//! flagged for logging. Parsers are total: any input yields `None` or a hint, never a
//! panic (property-tested).

mod date;
mod text;

use switchyard_types::UnixMillis;

use crate::outcome::HeaderSource;

pub use date::{epoch_or_delay, parse_http_date, parse_rfc3339};
pub use text::{BODY_SCAN_LIMIT, hint_from_body, parse_duration};

/// The longest hint honoured: 30 days (weekly and monthly quotas reset within it).
pub const MAX_HINT_MS: i64 = 30 * 86_400_000;

/// Where a hint came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HintSource {
    /// A response header (authoritative).
    Header,
    /// Text in the error body.
    Body,
    /// A restatement rule's default.
    Rule,
    /// The reference duration of the quota window a body names (daily, weekly,
    /// session, subscription; a retired model): as binding as a header.
    QuotaWindow,
}

/// When the upstream says to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryHint {
    /// The instant to retry at.
    pub at: UnixMillis,
    /// Where it came from.
    pub source: HintSource,
    /// Whether it was pulled in to [`MAX_HINT_MS`].
    pub clamped: bool,
}

impl RetryHint {
    /// A hint at `at`, clamped to at most [`MAX_HINT_MS`] after `now`; `None` unless
    /// `at` is in the future.
    pub fn new(at: UnixMillis, source: HintSource, now: UnixMillis) -> Option<RetryHint> {
        if at <= now {
            return None;
        }
        let cap = now.plus_millis(MAX_HINT_MS);
        Some(RetryHint { at: at.min(cap), source, clamped: at > cap })
    }

    /// Milliseconds from `now` until the hint.
    pub fn remaining_ms(&self, now: UnixMillis) -> u64 {
        u64::try_from(now.millis_until(self.at)).unwrap_or(0)
    }
}

/// `Retry-After`: integer (or decimal) seconds, else an HTTP date.
pub fn parse_retry_after(value: &str, now: UnixMillis) -> Option<UnixMillis> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(now.plus_millis(i64::try_from(secs.saturating_mul(1_000)).unwrap_or(i64::MAX)));
    }
    if let Ok(secs) = v.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        let ms = (secs * 1_000.0).min(9.0e15);
        #[expect(clippy::cast_possible_truncation, reason = "finite, non-negative, bounded above")]
        return Some(now.plus_millis(ms as i64));
    }
    parse_http_date(v)
}

/// What every rate-limit header's name contains.
const RATE_LIMIT: &str = "ratelimit";

const ANTHROPIC_RESETS: [(&str, &str); 4] = [
    ("anthropic-ratelimit-requests-reset", "anthropic-ratelimit-requests-remaining"),
    ("anthropic-ratelimit-tokens-reset", "anthropic-ratelimit-tokens-remaining"),
    ("anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-input-tokens-remaining"),
    ("anthropic-ratelimit-output-tokens-reset", "anthropic-ratelimit-output-tokens-remaining"),
];

const OPENAI_RESETS: [(&str, &str); 2] = [
    ("x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"),
    ("x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"),
];

/// The hint carried by response headers, in this order: `retry-after-ms`,
/// `retry-after`, the Claude unified reset (when rejected), per-limit reset headers
/// (the latest of the exhausted limits, else the earliest of all), `x-ratelimit-reset`.
pub fn hint_from_headers(h: &dyn HeaderSource, now: UnixMillis) -> Option<RetryHint> {
    let header = |at: Option<UnixMillis>| at.and_then(|at| RetryHint::new(at, HintSource::Header, now));
    if let Some(v) = h.header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok())
        && v.is_finite()
        && v > 0.0
    {
        #[expect(clippy::cast_possible_truncation, reason = "finite, positive, bounded by min")]
        let ms = v.min(9.0e15) as i64;
        return header(Some(now.plus_millis(ms)));
    }
    if let Some(hint) = header(h.header("retry-after").and_then(|v| parse_retry_after(v, now))) {
        return Some(hint);
    }
    let unified_rejected = h
        .header("anthropic-ratelimit-unified-status")
        .is_some_and(|s| s.trim().eq_ignore_ascii_case("rejected"));
    if unified_rejected {
        let at = h
            .header("anthropic-ratelimit-unified-reset")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .and_then(|v| epoch_or_delay(v, now));
        if let Some(hint) = header(at) {
            return Some(hint);
        }
    }
    if let Some(hint) = header(per_limit_reset(h, now)) {
        return Some(hint);
    }
    header(
        h.header("x-ratelimit-reset")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .and_then(|v| epoch_or_delay(v, now)),
    )
}

/// When the connection's quota window next resets, from the rate-limit headers of
/// any answer (a success included): the Claude unified reset, else the per-limit
/// resets (the latest exhausted one, else the earliest), else `x-ratelimit-reset`.
/// The `reset-aware` combo strategy prefers the connection whose window resets
/// soonest. `None` when the answer carries none of them.
pub fn quota_reset_from_headers(h: &dyn HeaderSource, now: UnixMillis) -> Option<UnixMillis> {
    // Every header read below names a rate limit (a test holds the lists to it).
    if !h.mentions(RATE_LIMIT) {
        return None;
    }
    let epoch = |name: &str| {
        h.header(name).and_then(|v| v.trim().parse::<i64>().ok()).and_then(|v| epoch_or_delay(v, now))
    };
    epoch("anthropic-ratelimit-unified-reset")
        .or_else(|| per_limit_reset(h, now))
        .or_else(|| epoch("x-ratelimit-reset"))
        .filter(|at| *at > now)
}

/// Per-limit reset headers: the latest reset among limits reported exhausted
/// (`remaining: 0`), else the earliest future reset.
fn per_limit_reset(h: &dyn HeaderSource, now: UnixMillis) -> Option<UnixMillis> {
    let mut exhausted: Option<UnixMillis> = None;
    let mut earliest: Option<UnixMillis> = None;
    let mut note = |at: UnixMillis, remaining: Option<&str>| {
        if at <= now {
            return;
        }
        if remaining.is_some_and(|r| r.trim() == "0") {
            exhausted = Some(exhausted.map_or(at, |e| e.max(at)));
        }
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
    };
    for (reset, remaining) in ANTHROPIC_RESETS {
        if let Some(at) = h.header(reset).and_then(parse_rfc3339) {
            note(at, h.header(remaining));
        }
    }
    for (reset, remaining) in OPENAI_RESETS {
        if let Some(ms) = h.header(reset).and_then(parse_duration) {
            note(now.plus_millis(i64::try_from(ms).unwrap_or(i64::MAX)), h.header(remaining));
        }
    }
    exhausted.or(earliest)
}

/// The hint of a response: headers first (authoritative), then the body.
pub fn hint_from_response(h: &dyn HeaderSource, body: &str, now: UnixMillis) -> Option<RetryHint> {
    hint_from_headers(h, now)
        .or_else(|| hint_from_body(body, now).and_then(|at| RetryHint::new(at, HintSource::Body, now)))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const NOW: UnixMillis = UnixMillis(1_772_366_400_000); // 2026-03-01T12:00:00Z

    fn hint(pairs: &[(&str, &str)]) -> Option<(i64, HintSource)> {
        hint_from_headers(&pairs, NOW).map(|h| (h.at.0 - NOW.0, h.source))
    }

    /// The quota reset is read from an `http::HeaderMap` as from a list, and a map
    /// without rate-limit headers is passed over by its names alone; every name
    /// the reader looks up says "ratelimit", which is what lets it skip.
    #[test]
    fn the_quota_reset_skips_maps_without_rate_limit_headers() {
        let names = ANTHROPIC_RESETS
            .iter()
            .chain(OPENAI_RESETS.iter())
            .flat_map(|(reset, remaining)| [*reset, *remaining])
            .chain(["anthropic-ratelimit-unified-reset", "x-ratelimit-reset"]);
        for name in names {
            assert!(name.contains(RATE_LIMIT), "{name}");
        }
        let at = NOW.0 / 1_000 + 90;
        let mut map = http::HeaderMap::new();
        map.insert("content-type", http::HeaderValue::from_static("application/json"));
        assert!(!map.mentions(RATE_LIMIT));
        assert_eq!(quota_reset_from_headers(&map, NOW), None);
        map.insert("x-ratelimit-reset", http::HeaderValue::from(at));
        let list: &[(&str, &str)] = &[("x-ratelimit-reset", &at.to_string())];
        assert_eq!(quota_reset_from_headers(&map, NOW), Some(UnixMillis(at * 1_000)));
        assert_eq!(quota_reset_from_headers(&list, NOW), Some(UnixMillis(at * 1_000)));
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        assert_eq!(hint(&[("retry-after", "7")]), Some((7_000, HintSource::Header)));
        assert_eq!(
            hint(&[("retry-after", "Sun, 01 Mar 2026 12:00:30 GMT")]),
            Some((30_000, HintSource::Header))
        );
        assert_eq!(hint(&[("retry-after", "1.5")]), Some((1_500, HintSource::Header)));
        assert_eq!(hint(&[("retry-after-ms", "250")]), Some((250, HintSource::Header)));
        assert_eq!(hint(&[("retry-after", "0")]), None);
        assert_eq!(hint(&[("retry-after", "garbage")]), None);
    }

    #[test]
    fn anthropic_reset_headers() {
        let h = [
            ("anthropic-ratelimit-requests-reset", "2026-03-01T12:00:05Z"),
            ("anthropic-ratelimit-requests-remaining", "12"),
            ("anthropic-ratelimit-tokens-reset", "2026-03-01T12:00:40Z"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
        ];
        assert_eq!(hint(&h), Some((40_000, HintSource::Header)), "the exhausted limit decides");
        let h = [
            ("anthropic-ratelimit-requests-reset", "2026-03-01T12:00:05Z"),
            ("anthropic-ratelimit-tokens-reset", "2026-03-01T12:00:40Z"),
        ];
        assert_eq!(hint(&h), Some((5_000, HintSource::Header)), "else the earliest reset");
    }

    #[test]
    fn unified_reset_only_when_rejected() {
        let reset = (NOW.0 / 1000 + 3_600).to_string();
        let h = [
            ("anthropic-ratelimit-unified-status", "rejected"),
            ("anthropic-ratelimit-unified-reset", &reset),
        ];
        assert_eq!(hint(&h), Some((3_600_000, HintSource::Header)));
        let h = [
            ("anthropic-ratelimit-unified-status", "allowed"),
            ("anthropic-ratelimit-unified-reset", &reset),
        ];
        assert_eq!(hint(&h), None);
    }

    #[test]
    fn openai_reset_headers() {
        let h = [("x-ratelimit-reset-requests", "6m0s"), ("x-ratelimit-reset-tokens", "20ms")];
        assert_eq!(hint(&h), Some((20, HintSource::Header)));
        let h = [
            ("x-ratelimit-reset-requests", "1s"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-tokens", "20ms"),
        ];
        assert_eq!(hint(&h), Some((1_000, HintSource::Header)));
        assert_eq!(hint(&[("x-ratelimit-reset", "30")]), Some((30_000, HintSource::Header)));
    }

    #[test]
    fn retry_after_wins_over_reset_headers() {
        let h = [("retry-after", "3"), ("x-ratelimit-reset-requests", "6m0s")];
        assert_eq!(hint(&h), Some((3_000, HintSource::Header)));
    }

    #[test]
    fn headers_win_over_the_body_and_hints_are_clamped() {
        let h: &[(&str, &str)] = &[("retry-after", "9")];
        let got = hint_from_response(&h, "retry in 60s", NOW).map(|h| (h.at.0 - NOW.0, h.source));
        assert_eq!(got, Some((9_000, HintSource::Header)));
        let none: &[(&str, &str)] = &[];
        let got = hint_from_response(&none, "retry in 60s", NOW).map(|h| (h.at.0 - NOW.0, h.source));
        assert_eq!(got, Some((60_000, HintSource::Body)));
        let far_headers: &[(&str, &str)] = &[("retry-after", "99999999")];
        let far = hint_from_headers(&far_headers, NOW);
        assert_eq!(far.map(|h| (h.at.0 - NOW.0, h.clamped)), Some((MAX_HINT_MS, true)));
    }

    proptest! {
        #[test]
        fn header_parsers_never_panic(name in "(retry-after|retry-after-ms|x-ratelimit-reset|x-ratelimit-reset-tokens|anthropic-ratelimit-tokens-reset)",
                                      value in "\\PC{0,40}", now in any::<i64>()) {
            let pairs = [(name.as_str(), value.as_str()), ("anthropic-ratelimit-unified-status", "rejected"),
                         ("anthropic-ratelimit-unified-reset", value.as_str())];
            let pairs: &[(&str, &str)] = &pairs;
            if let Some(h) = hint_from_headers(&pairs, UnixMillis(now)) {
                prop_assert!(h.at > UnixMillis(now));
                prop_assert!(h.at.0 - now <= MAX_HINT_MS);
            }
            let _ = parse_retry_after(&value, UnixMillis(now));
        }
    }
}
