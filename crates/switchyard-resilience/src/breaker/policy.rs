//! Breaker profiles (SPEC 4.1, facts §1.3): thresholds, reset timeout, escalation of
//! the open hold after failed probes, per-kind holds (`cooldownByKind`), and the
//! DEGRADED quiet window. Pure arithmetic, saturating.

use switchyard_types::resilience::ErrorReason;
use switchyard_types::settings::{BreakerProfileSettings, CooldownByKind, defaults as d};

use crate::backoff::exponential;
use crate::outcome::AuthCategory;

/// Local profile: OPEN at this many failures.
pub const LOCAL_FAILURE_THRESHOLD: u32 = 2;
/// Local profile reset timeout.
pub const LOCAL_RESET_TIMEOUT_MS: u32 = 15_000;

/// One breaker profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// OPEN at this many counted failures.
    pub failure_threshold: u32,
    /// DEGRADED at this many (below `failure_threshold`).
    pub degradation_threshold: u32,
    /// The base open hold.
    pub reset_timeout_ms: u32,
    /// The escalated hold never exceeds base × this.
    pub max_backoff_multiplier: u32,
    /// Failed probes tolerated before the hold escalates.
    pub backoff_escalation_count: u32,
    /// Per-kind base holds replacing `reset_timeout_ms`.
    pub cooldown_by_kind: CooldownByKind,
}

/// The reference gateway's derived degradation threshold: 60 % of the failure
/// threshold, rounded up, kept below it (and at least 1).
pub fn derived_degradation(failure_threshold: u32) -> u32 {
    let sixty = failure_threshold.saturating_mul(3).div_ceil(5);
    sixty.min(failure_threshold.saturating_sub(1)).max(1)
}

impl BreakerPolicy {
    /// The built-in profile of a category (the OAuth and API-key ones are the settings
    /// defaults).
    pub fn for_category(category: AuthCategory) -> BreakerPolicy {
        match category {
            AuthCategory::Oauth => BreakerPolicy {
                failure_threshold: d::BREAKER_OAUTH_FAILURE_THRESHOLD,
                degradation_threshold: d::BREAKER_OAUTH_DEGRADATION_THRESHOLD,
                reset_timeout_ms: d::BREAKER_OAUTH_RESET_TIMEOUT_MS,
                max_backoff_multiplier: 8,
                backoff_escalation_count: 2,
                cooldown_by_kind: CooldownByKind::default(),
            },
            AuthCategory::ApiKey => BreakerPolicy {
                failure_threshold: d::BREAKER_APIKEY_FAILURE_THRESHOLD,
                degradation_threshold: d::BREAKER_APIKEY_DEGRADATION_THRESHOLD,
                reset_timeout_ms: d::BREAKER_APIKEY_RESET_TIMEOUT_MS,
                max_backoff_multiplier: 4,
                backoff_escalation_count: 3,
                cooldown_by_kind: CooldownByKind::default(),
            },
            AuthCategory::Local => BreakerPolicy {
                failure_threshold: LOCAL_FAILURE_THRESHOLD,
                degradation_threshold: derived_degradation(LOCAL_FAILURE_THRESHOLD),
                reset_timeout_ms: LOCAL_RESET_TIMEOUT_MS,
                max_backoff_multiplier: 16,
                backoff_escalation_count: 3,
                cooldown_by_kind: CooldownByKind::default(),
            },
        }
    }

    /// The category's profile with the editable fields taken from settings.
    pub fn from_settings(category: AuthCategory, s: &BreakerProfileSettings) -> BreakerPolicy {
        BreakerPolicy {
            failure_threshold: s.failure_threshold.max(1),
            degradation_threshold: s.degradation_threshold.max(1),
            reset_timeout_ms: s.reset_timeout_ms,
            cooldown_by_kind: s.cooldown_by_kind,
            ..BreakerPolicy::for_category(category)
        }
    }

    /// The base hold for a failure kind: `cooldownByKind[kind]`, else the reset timeout.
    pub fn base_hold_ms(&self, kind: Option<ErrorReason>) -> u32 {
        let k = &self.cooldown_by_kind;
        let by_kind = match kind {
            Some(ErrorReason::ServerError) => k.server_error,
            Some(ErrorReason::Timeout) => k.timeout,
            Some(ErrorReason::Unreachable) => k.unreachable,
            Some(ErrorReason::RateLimit) => k.rate_limit,
            Some(ErrorReason::QuotaExhausted) => k.quota_exhausted,
            _ => None,
        };
        by_kind.unwrap_or(self.reset_timeout_ms)
    }

    /// The open hold after `open_cycles` failed probes: the base while cycles ≤ the
    /// escalation count, then base × 2^(cycles − count), at most base × multiplier.
    pub fn hold_ms(&self, kind: Option<ErrorReason>, open_cycles: u32) -> u64 {
        let base = self.base_hold_ms(kind);
        let cap = u64::from(base).saturating_mul(u64::from(self.max_backoff_multiplier.max(1)));
        let step = open_cycles.saturating_sub(self.backoff_escalation_count);
        exponential(base, step, 63, cap)
    }

    /// How long DEGRADED (or a non-zero CLOSED count) must stay free of failures to
    /// heal: the longest OPEN hold for the last failure kind (base × multiplier), at
    /// least one base hold (SPEC 4.1).
    pub fn quiet_window_ms(&self, kind: Option<ErrorReason>) -> u64 {
        let base = u64::from(self.base_hold_ms(kind));
        base.saturating_mul(u64::from(self.max_backoff_multiplier)).max(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_follow_spec() {
        let o = BreakerPolicy::for_category(AuthCategory::Oauth);
        assert_eq!((o.degradation_threshold, o.failure_threshold, o.reset_timeout_ms), (5, 8, 60_000));
        let a = BreakerPolicy::for_category(AuthCategory::ApiKey);
        assert_eq!((a.degradation_threshold, a.failure_threshold, a.reset_timeout_ms), (7, 12, 30_000));
        let l = BreakerPolicy::for_category(AuthCategory::Local);
        assert_eq!((l.degradation_threshold, l.failure_threshold, l.reset_timeout_ms), (1, 2, 15_000));
    }

    #[test]
    fn derived_degradation_is_sixty_percent_below_the_threshold() {
        assert_eq!(derived_degradation(5), 3);
        assert_eq!(derived_degradation(2), 1);
        assert_eq!(derived_degradation(1), 1);
        assert_eq!(derived_degradation(10), 6);
    }

    #[test]
    fn the_hold_escalates_after_the_escalation_count_and_is_capped() {
        let o = BreakerPolicy::for_category(AuthCategory::Oauth); // 60 s, escalate after 2, ×8
        let holds: Vec<u64> = (0..7).map(|c| o.hold_ms(None, c)).collect();
        assert_eq!(holds, vec![60_000, 60_000, 60_000, 120_000, 240_000, 480_000, 480_000]);
    }

    #[test]
    fn cooldown_by_kind_replaces_the_base_and_escalates_the_same_way() {
        let mut o = BreakerPolicy::for_category(AuthCategory::Oauth);
        o.cooldown_by_kind.timeout = Some(10_000);
        assert_eq!(o.hold_ms(Some(ErrorReason::Timeout), 0), 10_000);
        assert_eq!(o.hold_ms(Some(ErrorReason::Timeout), 3), 20_000);
        assert_eq!(o.hold_ms(Some(ErrorReason::ServerError), 0), 60_000);
        assert_eq!(o.quiet_window_ms(Some(ErrorReason::Timeout)), 80_000);
        assert_eq!(o.quiet_window_ms(None), 480_000);
    }
}
