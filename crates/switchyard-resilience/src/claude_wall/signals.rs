//! What the wall logic reads: the per-connection options from `provider_specific`,
//! the `anthropic-ratelimit-unified-*` response headers parsed into plain data, the
//! hint clamps, and the injected jitter source.
//!
//! Parsers are total: malformed input reads as absent, never a panic. Numeric headers
//! that are empty, non-finite or negative are absent (property-tested).

use switchyard_types::UnixMillis;
use switchyard_types::resilience::ClaudeSlowStatus;

use super::{JITTER_RATIO, MAX_MAX_WAIT_MS, MAX_RETRY_AFTER_MS, MIN_MAX_WAIT_MS, MIN_RETRY_AFTER_MS};
use crate::classify::hints::epoch_or_delay;
use crate::outcome::HeaderSource;

/// A connection's wall options, from its `provider_specific` JSON. Both off by
/// default; only a real JSON `true` turns one on (the string `"true"` does not).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WallOptions {
    /// `lowPriorityMode`: accept the slow-lane offer at the wall.
    pub low_priority_mode: bool,
    /// `autoLimitReset`: try the weekly session-limit reset at the wall (first).
    pub auto_limit_reset: bool,
    /// `organizationUUID` (or `organization_uuid`): the org whose limit is reset.
    pub organization_uuid: Option<String>,
}

impl WallOptions {
    /// Reads the options from a connection's `provider_specific` object; anything
    /// else (absent, `null`, not an object) means both off.
    pub fn from_provider_specific(v: Option<&serde_json::Value>) -> WallOptions {
        let Some(obj) = v.and_then(serde_json::Value::as_object) else {
            return WallOptions::default();
        };
        let flag = |k: &str| obj.get(k).and_then(serde_json::Value::as_bool).unwrap_or(false);
        let org = ["organizationUUID", "organization_uuid"]
            .iter()
            .find_map(|k| obj.get(*k).and_then(serde_json::Value::as_str))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        WallOptions {
            low_priority_mode: flag("lowPriorityMode"),
            auto_limit_reset: flag("autoLimitReset"),
            organization_uuid: org,
        }
    }

    /// Whether either option is on (otherwise the wall is an ordinary 429).
    pub fn any(&self) -> bool {
        self.low_priority_mode || self.auto_limit_reset
    }
}

/// `anthropic-ratelimit-unified-slow-offer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlowOffer {
    /// The account may take the slow lane.
    Treatment,
    /// It may not.
    Control,
}

/// The unified headers of one upstream response, parsed. Instants are wall-clock.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WallSignals {
    /// `unified-status: rejected`.
    pub rejected: bool,
    /// `unified-reset` (the 5-hour window's reset).
    pub reset: Option<UnixMillis>,
    /// `unified-5h-reset` (a later value than the accepted reset means a rollover).
    pub reset_5h: Option<UnixMillis>,
    /// `unified-7d-reset`.
    pub reset_7d: Option<UnixMillis>,
    /// `unified-representative-claim` is present.
    pub has_claim: bool,
    /// `unified-representative-claim` names a window other than `five_hour` (a reset
    /// of the 5-hour session would not help).
    pub claim_not_five_hour: bool,
    /// `unified-overage-status` is present.
    pub has_overage_status: bool,
    /// `unified-overage-in-use: true`.
    pub overage_in_use: bool,
    /// `unified-slow-offer`.
    pub slow_offer: Option<SlowOffer>,
    /// `unified-slow-status`.
    pub slow_status: Option<ClaudeSlowStatus>,
    /// `unified-slow-retry-after`, clamped (ms).
    pub slow_retry_after_ms: Option<u32>,
    /// `unified-slow-max-wait`, clamped (ms).
    pub slow_max_wait_ms: Option<u32>,
    /// `unified-slow-budget-reset`.
    pub slow_budget_reset: Option<UnixMillis>,
    /// Any `anthropic-ratelimit-unified-*` header was present.
    pub any_unified: bool,
}

const PREFIX: &str = "anthropic-ratelimit-unified-";
const NAMES: [&str; 13] = [
    "status",
    "reset",
    "5h-reset",
    "7d-reset",
    "representative-claim",
    "overage-status",
    "overage-in-use",
    "slow-offer",
    "slow-status",
    "slow-retry-after",
    "slow-max-wait",
    "slow-budget-utilization",
    "slow-budget-reset",
];

/// Non-negative finite seconds; anything else is absent.
fn seconds(v: Option<&str>) -> Option<f64> {
    let s = v?.trim().parse::<f64>().ok()?;
    (s.is_finite() && s >= 0.0).then_some(s)
}

/// Seconds as rounded milliseconds, saturating.
fn secs_to_ms(s: f64) -> u64 {
    let ms = (s * 1_000.0).round().min(9.0e15);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "finite, non-negative, bounded"
    )]
    let ms = ms as u64;
    ms
}

/// A clamp of a millisecond count into `u32` bounds.
fn clamp_ms(ms: u64, lo: u32, hi: u32) -> u32 {
    u32::try_from(ms.clamp(u64::from(lo), u64::from(hi))).unwrap_or(hi)
}

/// `slow-retry-after` seconds → milliseconds, clamped to 5–600 s.
pub fn clamp_retry_after_ms(secs: f64) -> u32 {
    clamp_ms(secs_to_ms(secs.max(0.0)), MIN_RETRY_AFTER_MS, MAX_RETRY_AFTER_MS)
}

/// `slow-max-wait` seconds → milliseconds, clamped to 1 min–6 h.
pub fn clamp_max_wait_ms(secs: f64) -> u32 {
    clamp_ms(secs_to_ms(secs.max(0.0)), MIN_MAX_WAIT_MS, MAX_MAX_WAIT_MS)
}

impl WallSignals {
    /// Parses a response's unified headers (an `http::HeaderMap` or any
    /// [`HeaderSource`]).
    pub fn parse(h: &dyn HeaderSource, now: UnixMillis) -> WallSignals {
        let get = |name: &str| h.header(&format!("{PREFIX}{name}")).map(str::trim);
        let epoch = |name: &str| {
            seconds(get(name)).and_then(|s| {
                #[expect(clippy::cast_possible_truncation, reason = "finite, non-negative, bounded by min")]
                let v = s.min(9.0e15) as i64;
                epoch_or_delay(v, now)
            })
        };
        let claim = get("representative-claim").filter(|c| !c.is_empty());
        WallSignals {
            rejected: get("status").is_some_and(|s| s.eq_ignore_ascii_case("rejected")),
            reset: epoch("reset"),
            reset_5h: epoch("5h-reset"),
            reset_7d: epoch("7d-reset"),
            has_claim: claim.is_some(),
            claim_not_five_hour: claim.is_some_and(|c| !c.eq_ignore_ascii_case("five_hour")),
            has_overage_status: get("overage-status").is_some(),
            overage_in_use: get("overage-in-use").is_some_and(|v| v.eq_ignore_ascii_case("true")),
            slow_offer: match get("slow-offer") {
                Some(v) if v.eq_ignore_ascii_case("treatment") => Some(SlowOffer::Treatment),
                Some(v) if v.eq_ignore_ascii_case("control") => Some(SlowOffer::Control),
                _ => None,
            },
            slow_status: get("slow-status").and_then(parse_slow_status),
            slow_retry_after_ms: seconds(get("slow-retry-after")).map(clamp_retry_after_ms),
            slow_max_wait_ms: seconds(get("slow-max-wait")).map(clamp_max_wait_ms),
            slow_budget_reset: epoch("slow-budget-reset"),
            any_unified: NAMES.iter().any(|n| get(n).is_some()),
        }
    }

    /// The usage wall: a 429 carrying `unified-status: rejected` (SPEC 4.3).
    pub fn is_wall(&self, status: u16) -> bool {
        status == 429 && self.rejected
    }

    /// The reset the lane lasts until: `unified-reset`, else `unified-5h-reset`.
    pub fn lane_reset(&self) -> Option<UnixMillis> {
        self.reset.or(self.reset_5h)
    }

    /// `ineligible` + `overage-in-use: true`: extra usage took over.
    pub fn extra_usage(&self) -> bool {
        self.overage_in_use && self.slow_status == Some(ClaudeSlowStatus::Ineligible)
    }
}

/// Parses a slow status; empty is absent, anything unknown is `Unrecognized`.
pub fn parse_slow_status(v: &str) -> Option<ClaudeSlowStatus> {
    let v = v.trim();
    Some(match v.to_ascii_lowercase().as_str() {
        "" => return None,
        "active" => ClaudeSlowStatus::Active,
        "not_needed" => ClaudeSlowStatus::NotNeeded,
        "slot_busy" => ClaudeSlowStatus::SlotBusy,
        "weekly_limit" => ClaudeSlowStatus::WeeklyLimit,
        "budget_exhausted" => ClaudeSlowStatus::BudgetExhausted,
        "ineligible" => ClaudeSlowStatus::Ineligible,
        "off" => ClaudeSlowStatus::Off,
        _ => ClaudeSlowStatus::Unrecognized,
    })
}

/// A source of uniform random numbers in `[0, 1]` for wait jitter. Injected so tests
/// are deterministic; the gateway may wrap any RNG (a closure works).
pub trait Jitter {
    /// A number in `[0, 1]` (values outside are clamped by the caller).
    fn unit(&mut self) -> f64;
}

impl<F: FnMut() -> f64> Jitter for F {
    fn unit(&mut self) -> f64 {
        self()
    }
}

/// A small seeded generator (SplitMix64): deterministic for a seed.
#[derive(Debug, Clone)]
pub struct SeededJitter(u64);

impl SeededJitter {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SeededJitter {
        SeededJitter(seed)
    }
}

impl Jitter for SeededJitter {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        #[expect(clippy::cast_precision_loss, reason = "53 random bits fit a double exactly")]
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        unit
    }
}

/// `base` scaled by a factor uniform in `[1 − 0.3, 1 + 0.3]`, rounded.
pub fn jittered(base_ms: u32, jitter: &mut dyn Jitter) -> u64 {
    let r = jitter.unit();
    let r = if r.is_finite() { r.clamp(0.0, 1.0) } else { 0.5 };
    let factor = 1.0 + (2.0 * r - 1.0) * JITTER_RATIO;
    let ms = (f64::from(base_ms) * factor).round().max(0.0);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "≤ 1.3 × u32::MAX, non-negative"
    )]
    let ms = ms as u64;
    ms
}

#[cfg(test)]
mod tests;
