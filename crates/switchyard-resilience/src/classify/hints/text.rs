//! Retry hints written as text: durations (`20s`, `1m30s`, `6m0s`, `20ms`,
//! `164h27m24s`, `2 hours`, `1.5 seconds`) and reset phrases in error bodies
//! ("please retry in 20s", "try again in 1m30s", "resets in 5h", "try again at
//! 2026-01-02T03:04:05Z", Gemini's `"retryDelay": "33s"`).
//!
//! Byte-level scanning over an ASCII-lower-cased copy: slices are taken only at
//! positions found by `str::find` or after ASCII bytes, so non-ASCII bodies (GLM's
//! Chinese messages) cannot split a character. Total functions; arithmetic saturates.

use switchyard_types::UnixMillis;

use super::date::parse_rfc3339_prefix;

/// Bodies longer than this are scanned only up to here.
pub const BODY_SCAN_LIMIT: usize = 16 * 1024;

const MS_PER_UNIT: &[(&str, u64)] = &[
    ("ms", 1),
    ("msec", 1),
    ("msecs", 1),
    ("millisecond", 1),
    ("milliseconds", 1),
    ("s", 1_000),
    ("sec", 1_000),
    ("secs", 1_000),
    ("second", 1_000),
    ("seconds", 1_000),
    ("m", 60_000),
    ("min", 60_000),
    ("mins", 60_000),
    ("minute", 60_000),
    ("minutes", 60_000),
    ("h", 3_600_000),
    ("hr", 3_600_000),
    ("hrs", 3_600_000),
    ("hour", 3_600_000),
    ("hours", 3_600_000),
    ("d", 86_400_000),
    ("day", 86_400_000),
    ("days", 86_400_000),
];

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| *c == b' ' || *c == b'\t') {
        i += 1;
    }
    i
}

/// A decimal number at `i` as thousandths (`1.5` → 1500), and the index after it.
fn number_milli(b: &[u8], mut i: usize) -> Option<(u64, usize)> {
    let start = i;
    let mut whole: u64 = 0;
    while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
        whole = whole.saturating_mul(10).saturating_add(u64::from(c - b'0'));
        i += 1;
    }
    if i == start {
        return None;
    }
    let mut frac: u64 = 0;
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        let mut scale = 100;
        while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            frac += u64::from(c - b'0') * scale;
            scale /= 10;
            i += 1;
        }
    }
    Some((whole.saturating_mul(1_000).saturating_add(frac), i))
}

/// A bare number counts as seconds only when it is not the start of a date or time.
fn ends_bare_number(next: Option<&u8>) -> bool {
    matches!(next, None | Some(b' ' | b'\t' | b'\n' | b'.' | b',' | b';' | b')' | b'"'))
}

/// Parses a duration at the start of `text` (lower-case units). A bare number is
/// seconds. Returns milliseconds and the bytes consumed.
pub fn parse_duration_prefix(text: &str) -> Option<(u64, usize)> {
    let b = text.as_bytes();
    let mut i = skip_spaces(b, 0);
    let mut total: u64 = 0;
    let mut parts = 0;
    while let Some((n, after_num)) = number_milli(b, i) {
        let unit_start = skip_spaces(b, after_num);
        let mut unit_end = unit_start;
        while b.get(unit_end).is_some_and(u8::is_ascii_lowercase) {
            unit_end += 1;
        }
        let unit = b.get(unit_start..unit_end).and_then(|u| std::str::from_utf8(u).ok()).unwrap_or("");
        let per = MS_PER_UNIT.iter().find(|(name, _)| *name == unit).map(|(_, ms)| *ms);
        match per {
            Some(per) => {
                total = total.saturating_add(n.saturating_mul(per) / 1_000);
                parts += 1;
                i = skip_spaces(b, unit_end);
            }
            None if parts == 0 && unit.is_empty() && ends_bare_number(b.get(after_num)) => {
                return Some((n, after_num));
            }
            None => break,
        }
    }
    (parts > 0).then_some((total, i))
}

/// Parses a whole duration (`"33s"`, `"6m0s"`).
pub fn parse_duration(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    parse_duration_prefix(&lower).filter(|(_, used)| *used == lower.len()).map(|(ms, _)| ms)
}

/// Phrases followed by a delay.
const DELAY_PHRASES: &[&str] = &[
    "retry in ",
    "retry after ",
    "try again in ",
    "try again after ",
    "resets in ",
    "reset in ",
    "resets after ",
    "reset after ",
    "available in ",
    "wait ",
];

/// Phrases followed by an instant.
const INSTANT_PHRASES: &[&str] = &[
    "try again at ",
    "retry at ",
    "wait until ",
    "resets at ",
    "reset at ",
    "available at ",
    "retry after ",
];

/// Finds a retry hint in an error body: Gemini `retryDelay` first, then delay
/// phrases, then instant phrases. Only a future instant counts.
pub fn hint_from_body(body: &str, now: UnixMillis) -> Option<UnixMillis> {
    let mut end = body.len().min(BODY_SCAN_LIMIT);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let lower = body.get(..end)?.to_ascii_lowercase();
    let future = |at: UnixMillis| (at > now).then_some(at);
    if let Some(ms) = retry_delay_field(&lower) {
        return future(now.plus_millis(i64::try_from(ms).unwrap_or(i64::MAX)));
    }
    for phrase in DELAY_PHRASES {
        for (pos, _) in lower.match_indices(phrase) {
            let rest = lower.get(pos + phrase.len()..).unwrap_or("");
            if let Some((ms, _)) = parse_duration_prefix(rest).filter(|(ms, _)| *ms > 0) {
                return future(now.plus_millis(i64::try_from(ms).unwrap_or(i64::MAX)));
            }
        }
    }
    for phrase in INSTANT_PHRASES {
        for (pos, _) in lower.match_indices(phrase) {
            let rest = lower.get(pos + phrase.len()..).unwrap_or("").trim_start();
            if let Some((at, _)) = parse_rfc3339_prefix(rest) {
                return future(at);
            }
        }
    }
    None
}

/// `"retrydelay": "33s"` (Google RPC `RetryInfo`).
fn retry_delay_field(lower: &str) -> Option<u64> {
    let pos = lower.find("\"retrydelay\"")?;
    let rest = lower.get(pos + "\"retrydelay\"".len()..)?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let close = rest.find('"')?;
    parse_duration(rest.get(..close)?)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn durations() {
        let cases = [
            ("20s", 20_000),
            ("1m30s", 90_000),
            ("6m0s", 360_000),
            ("20ms", 20),
            ("164h27m24s", 592_044_000),
            ("1.5 seconds", 1_500),
            ("2 hours", 7_200_000),
            ("33", 33_000),
            ("0.25s", 250),
        ];
        for (text, ms) in cases {
            assert_eq!(parse_duration(text), Some(ms), "{text}");
        }
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("5 parsecs"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn body_phrases() {
        let now = UnixMillis(1_000_000);
        let at = |ms: i64| Some(UnixMillis(1_000_000 + ms));
        assert_eq!(hint_from_body("Rate limited. Please retry in 20s.", now), at(20_000));
        assert_eq!(hint_from_body("Please try again in 1m30s", now), at(90_000));
        assert_eq!(hint_from_body("Your limit resets in 164h27m24s", now), at(592_044_000));
        assert_eq!(hint_from_body(r#"{"details":[{"retryDelay": "33s"}]}"#, now), at(33_000));
        assert_eq!(hint_from_body("Please retry after 20 seconds", now), at(20_000));
        assert_eq!(
            hint_from_body("limit reached, try again at 1970-01-01T00:20:00Z", now),
            Some(UnixMillis(1_200_000))
        );
        assert_eq!(
            hint_from_body("try again at 1970-01-01T00:00:01Z", now),
            None,
            "past instants do not count"
        );
        assert_eq!(
            hint_from_body("retry after 1970-01-01T00:20:00Z", now),
            Some(UnixMillis(1_200_000)),
            "a date is not a bare number of seconds"
        );
        assert_eq!(hint_from_body("并发数过高，请稍后再试", now), None);
        assert_eq!(hint_from_body("no hint here", now), None);
    }

    proptest! {
        #[test]
        fn text_parsers_never_panic(s in "\\PC{0,80}", now in any::<i64>()) {
            let _ = parse_duration(&s);
            let _ = parse_duration_prefix(&s);
            let _ = hint_from_body(&s, UnixMillis(now));
            let _ = hint_from_body(&format!("retry in {s}"), UnixMillis(now));
            let _ = hint_from_body(&format!("\"retryDelay\": \"{s}\""), UnixMillis(now));
        }

        #[test]
        fn digit_soup_never_panics(n in any::<u64>(), unit in "(ms|s|m|h|d|days|x)?", now in any::<i64>()) {
            let _ = hint_from_body(&format!("try again in {n}{unit}"), UnixMillis(now));
            let _ = parse_duration(&format!("{n}.{n}{unit}"));
        }
    }
}
