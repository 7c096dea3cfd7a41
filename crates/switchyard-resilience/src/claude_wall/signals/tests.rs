use proptest::prelude::*;
use switchyard_types::UnixMillis;
use switchyard_types::resilience::ClaudeSlowStatus;

use super::*;
use crate::claude_wall::{DEFAULT_MAX_WAIT_MS, DEFAULT_RETRY_AFTER_MS};

const NOW: UnixMillis = UnixMillis(1_800_000_000_000);

fn sig(pairs: &[(&str, &str)]) -> WallSignals {
    WallSignals::parse(&pairs, NOW)
}

#[test]
fn scenario_1_config_reader() {
    let off = WallOptions::default();
    assert_eq!(WallOptions::from_provider_specific(None), off);
    assert_eq!(WallOptions::from_provider_specific(Some(&serde_json::json!({}))), off);
    let s = serde_json::json!({"lowPriorityMode": "true"});
    assert!(!WallOptions::from_provider_specific(Some(&s)).low_priority_mode, "a string is not a boolean");
    let s =
        serde_json::json!({"lowPriorityMode": true, "autoLimitReset": true, "organizationUUID": " org-1 "});
    let o = WallOptions::from_provider_specific(Some(&s));
    assert!(o.low_priority_mode && o.auto_limit_reset && o.any());
    assert_eq!(o.organization_uuid.as_deref(), Some("org-1"));
    let s = serde_json::json!({"organization_uuid": "org-2"});
    assert_eq!(WallOptions::from_provider_specific(Some(&s)).organization_uuid.as_deref(), Some("org-2"));
}

#[test]
fn scenario_3_header_parsers() {
    let mut map = http::HeaderMap::new();
    map.insert("anthropic-ratelimit-unified-slow-offer", http::HeaderValue::from_static("treatment"));
    assert_eq!(WallSignals::parse(&map, NOW).slow_offer, Some(SlowOffer::Treatment));
    assert_eq!(
        sig(&[("Anthropic-RateLimit-Unified-Slow-Offer", "treatment")]).slow_offer,
        Some(SlowOffer::Treatment)
    );
    assert_eq!(sig(&[("anthropic-ratelimit-unified-slow-offer", "bogus")]).slow_offer, None);
    let s = |v| sig(&[("anthropic-ratelimit-unified-slow-status", v)]).slow_status;
    assert_eq!(s("slot_busy"), Some(ClaudeSlowStatus::SlotBusy));
    assert_eq!(s("???"), Some(ClaudeSlowStatus::Unrecognized));
    assert_eq!(s(""), None);
    assert_eq!(sig(&[]).slow_status, None);
    assert!(!sig(&[]).any_unified);
}

#[test]
fn wall_needs_429_and_rejected() {
    let rejected = sig(&[("anthropic-ratelimit-unified-status", "rejected")]);
    assert!(rejected.is_wall(429));
    assert!(!rejected.is_wall(200));
    assert!(!sig(&[("anthropic-ratelimit-unified-status", "allowed")]).is_wall(429));
    assert!(!sig(&[("retry-after", "3")]).is_wall(429));
}

#[test]
fn scenario_6_clamping() {
    assert_eq!(
        sig(&[("anthropic-ratelimit-unified-slow-retry-after", "1")]).slow_retry_after_ms,
        Some(5_000)
    );
    assert_eq!(
        sig(&[("anthropic-ratelimit-unified-slow-max-wait", "999999")]).slow_max_wait_ms,
        Some(21_600_000)
    );
    assert_eq!(clamp_retry_after_ms(4.9), 5_000);
    assert_eq!(clamp_retry_after_ms(5.0), 5_000);
    assert_eq!(clamp_retry_after_ms(20.0), DEFAULT_RETRY_AFTER_MS);
    assert_eq!(clamp_retry_after_ms(600.0), 600_000);
    assert_eq!(clamp_retry_after_ms(601.0), 600_000);
    assert_eq!(clamp_max_wait_ms(59.0), 60_000);
    assert_eq!(clamp_max_wait_ms(1_200.0), DEFAULT_MAX_WAIT_MS);
    assert_eq!(clamp_max_wait_ms(21_600.0), 21_600_000);
    assert_eq!(clamp_max_wait_ms(21_601.0), 21_600_000);
    for bad in ["", " ", "-3", "NaN", "inf", "soon"] {
        assert_eq!(
            sig(&[("anthropic-ratelimit-unified-slow-retry-after", bad)]).slow_retry_after_ms,
            None,
            "{bad}"
        );
    }
}

#[test]
fn jitter_spans_plus_minus_thirty_percent() {
    assert_eq!(jittered(20_000, &mut || 0.5), 20_000);
    assert_eq!(jittered(20_000, &mut || 0.0), 14_000);
    assert_eq!(jittered(20_000, &mut || 1.0), 26_000);
    assert_eq!(jittered(20_000, &mut || f64::NAN), 20_000);
    assert_eq!(jittered(20_000, &mut || 7.0), 26_000);
}

proptest! {
    #[test]
    fn jitter_always_within_bounds(seed in any::<u64>(), secs in 0.0f64..10_000.0) {
        let base = clamp_retry_after_ms(secs);
        let mut rng = SeededJitter::new(seed);
        for _ in 0..16 {
            let got = jittered(base, &mut rng);
            prop_assert!(got as f64 >= f64::from(base) * 0.7 - 0.5);
            prop_assert!(got as f64 <= f64::from(base) * 1.3 + 0.5);
            prop_assert!((3_500..=780_000).contains(&got));
        }
    }

    #[test]
    fn clamps_stay_in_range(secs in proptest::num::f64::ANY) {
        prop_assert!((5_000..=600_000).contains(&clamp_retry_after_ms(secs)) || secs.is_nan());
        prop_assert!((60_000..=21_600_000).contains(&clamp_max_wait_ms(secs)) || secs.is_nan());
    }

    #[test]
    fn parser_never_panics(name in "anthropic-ratelimit-unified-[a-z0-9-]{0,24}", value in "\\PC{0,30}", now in any::<i64>()) {
        let pairs: &[(&str, &str)] = &[(name.as_str(), value.as_str())];
        let _ = WallSignals::parse(&pairs, UnixMillis(now));
    }
}
