//! Instants as upstreams write them: RFC 3339 timestamps (Anthropic reset headers,
//! ISO times in bodies), HTTP dates (`Retry-After`, via `httpdate`), and Unix epochs
//! in seconds or milliseconds. Total functions: malformed input gives `None`, never a
//! panic.

use std::time::UNIX_EPOCH;

use switchyard_types::UnixMillis;

/// Days from 1970-01-01 to the civil date (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses `n` ASCII digits at `at`.
fn digits(b: &[u8], at: usize, n: usize) -> Option<i64> {
    let slice = b.get(at..at + n)?;
    slice.iter().try_fold(0i64, |acc, c| c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0')))
}

/// Parses an RFC 3339 timestamp at the start of `text` (`2026-01-02T03:04:05Z`,
/// fractional seconds and `±hh:mm` offsets allowed, `t`/`z`/space accepted). Returns
/// the instant and the number of bytes consumed.
pub fn parse_rfc3339_prefix(text: &str) -> Option<(UnixMillis, usize)> {
    let b = text.as_bytes();
    let year = digits(b, 0, 4)?;
    let (month, day) = (digits(b, 5, 2)?, digits(b, 8, 2)?);
    let (hour, minute, second) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    let seps = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if seps.iter().any(|(i, c)| b.get(*i) != Some(c)) || !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let mut scale = 100;
        while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
            millis += i64::from(c - b'0') * scale;
            scale /= 10;
            i += 1;
        }
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') => {
            i += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            let (h, m) = (digits(b, i + 1, 2)?, digits(b, i + 4, 2)?);
            if b.get(i + 3) != Some(&b':') || h > 23 || m > 59 {
                return None;
            }
            i += 6;
            if *sign == b'+' { h * 60 + m } else { -(h * 60 + m) }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_min * 60;
    Some((UnixMillis(secs * 1_000 + millis), i))
}

/// Parses a whole RFC 3339 timestamp (surrounding whitespace allowed).
pub fn parse_rfc3339(text: &str) -> Option<UnixMillis> {
    let t = text.trim();
    parse_rfc3339_prefix(t).filter(|(_, used)| *used == t.len()).map(|(at, _)| at)
}

/// Parses an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT` and the obsolete forms).
pub fn parse_http_date(text: &str) -> Option<UnixMillis> {
    let t = httpdate::parse_http_date(text.trim()).ok()?;
    let ms = t.duration_since(UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(ms).ok().map(UnixMillis)
}

/// Interprets an integer as an instant or a delay: values above 10^10 are epoch
/// milliseconds, values above 10^9 epoch seconds, smaller ones seconds from `now`.
pub fn epoch_or_delay(value: i64, now: UnixMillis) -> Option<UnixMillis> {
    match value {
        v if v > 10_000_000_000 => Some(UnixMillis(v)),
        v if v > 1_000_000_000 => Some(UnixMillis(v.saturating_mul(1_000))),
        v if v >= 0 => Some(now.plus_millis(v.saturating_mul(1_000))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn rfc3339_forms() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(UnixMillis(0)));
        assert_eq!(parse_rfc3339("2026-03-01T12:00:30.250Z"), Some(UnixMillis(1_772_366_430_250)));
        assert_eq!(parse_rfc3339("2026-03-01T14:00:30+02:00"), Some(UnixMillis(1_772_366_430_000)));
        assert_eq!(parse_rfc3339("2026-03-01t12:00:30z"), Some(UnixMillis(1_772_366_430_000)));
        assert_eq!(parse_rfc3339("2026-13-01T12:00:30Z"), None);
        assert_eq!(parse_rfc3339("2026-03-01T12:00:30"), None);
        assert_eq!(parse_rfc3339("soon"), None);
    }

    #[test]
    fn http_dates() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:07 GMT"), Some(UnixMillis(7_000)));
        assert_eq!(parse_http_date("not a date"), None);
    }

    #[test]
    fn epochs_and_delays() {
        let now = UnixMillis(1_700_000_000_000);
        assert_eq!(epoch_or_delay(30, now), Some(UnixMillis(1_700_000_030_000)));
        assert_eq!(epoch_or_delay(1_700_000_100, now), Some(UnixMillis(1_700_000_100_000)));
        assert_eq!(epoch_or_delay(1_700_000_100_000, now), Some(UnixMillis(1_700_000_100_000)));
        assert_eq!(epoch_or_delay(-1, now), None);
    }

    proptest! {
        #[test]
        fn date_parsers_never_panic(s in "\\PC{0,40}") {
            let _ = parse_rfc3339(&s);
            let _ = parse_rfc3339_prefix(&s);
            let _ = parse_http_date(&s);
        }

        #[test]
        fn rfc3339_round_trips_whole_seconds(secs in 0i64..4_102_444_800) {
            let days = secs.div_euclid(86_400);
            let rem = secs.rem_euclid(86_400);
            // civil_from_days, to build the text
            let z = days + 719_468;
            let era = z.div_euclid(146_097);
            let doe = z - era * 146_097;
            let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
            let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
            let mp = (5 * doy + 2) / 153;
            let d = doy - (153 * mp + 2) / 5 + 1;
            let m = if mp < 10 { mp + 3 } else { mp - 9 };
            let y = yoe + era * 400 + i64::from(m <= 2);
            let text = format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60);
            prop_assert_eq!(parse_rfc3339(&text), Some(UnixMillis(secs * 1000)));
        }
    }
}
