//! The cooldown-aware combo wait (SPEC §4.6, `comboCooldownWait`): a combo request
//! that would fail only because its targets are briefly rate limited waits for the
//! earliest one to come back and dispatches again, instead of answering 503/429.
//!
//! It waits only for transient reasons — a rate limit, a concurrency refusal, a
//! model at capacity — never for exhausted quota, auth, not-found or a terminal
//! account (those answers stand). Each wait is at most `maxWaitMs`, at most
//! `maxAttempts` re-dispatches, and all waits together at most `budgetMs`; a wait
//! the bounds do not allow is refused at once with `429 combo_rate_limited` and the
//! earliest retry time. The waits are the gateway's own: a streaming client hears
//! SSE keep-alives meanwhile ([`super::keepalive`]).

use std::time::Duration;

use switchyard_resilience::Selection;
use switchyard_types::UnixMillis;
use switchyard_types::resilience::ErrorReason;
use switchyard_types::settings::ComboCooldownWaitSettings;

/// Whether an error reason is a short, transient refusal worth waiting out.
pub fn is_transient(reason: ErrorReason) -> bool {
    matches!(reason, ErrorReason::RateLimit | ErrorReason::ConcurrencyLimited | ErrorReason::ModelCapacity)
}

/// When every excluded target is out only for a transient reason (and none is
/// eligible), the earliest instant one comes back.
pub fn transient_until(selection: &Selection) -> Option<UnixMillis> {
    if !selection.eligible.is_empty() || selection.excluded.is_empty() {
        return None;
    }
    let transient = selection.excluded.iter().all(|x| x.until.is_some() && x.cause.is_some_and(is_transient));
    if transient { selection.earliest_retry_at() } else { None }
}

/// One request's wait budget.
#[derive(Debug)]
pub struct ComboWait {
    settings: ComboCooldownWaitSettings,
    waited_ms: u64,
    cycles: u32,
}

/// What the wait says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCall {
    /// Wait this long, then dispatch again.
    Wait(Duration),
    /// A wait is not allowed (too long, too many, over budget): refuse with a 429.
    Refuse,
}

impl ComboWait {
    /// The wait for a combo request, when the setting is on; `None` otherwise.
    pub fn for_request(settings: &ComboCooldownWaitSettings, is_combo: bool) -> Option<ComboWait> {
        (is_combo && settings.enabled).then_some(ComboWait { settings: *settings, waited_ms: 0, cycles: 0 })
    }

    /// Whether to wait from `now` until `until` and dispatch again.
    pub fn call(&mut self, now: UnixMillis, until: UnixMillis) -> WaitCall {
        let wait_ms = u64::try_from(now.millis_until(until)).unwrap_or(0);
        let allowed = self.cycles < self.settings.max_attempts
            && wait_ms <= u64::from(self.settings.max_wait_ms)
            && self.waited_ms + wait_ms <= u64::from(self.settings.budget_ms);
        if !allowed {
            return WaitCall::Refuse;
        }
        self.cycles += 1;
        self.waited_ms += wait_ms;
        WaitCall::Wait(Duration::from_millis(wait_ms))
    }

    /// Counts a re-dispatch that needs no wait (every attempt was refused
    /// transiently and nothing is cooling); `false` when the attempts are spent.
    pub fn retry_now(&mut self) -> bool {
        if self.cycles >= self.settings.max_attempts {
            return false;
        }
        self.cycles += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use switchyard_resilience::Exclusion;
    use switchyard_types::resilience::ExclusionReason;

    use super::*;

    fn excluded(cause: Option<ErrorReason>, until_ms: i64) -> Exclusion {
        Exclusion {
            index: 0,
            reason: ExclusionReason::ConnectionCooldown,
            until: Some(UnixMillis(until_ms)),
            terminal: None,
            cause,
        }
    }

    #[test]
    fn only_transient_exclusions_are_waited_for() {
        let rate = Selection {
            eligible: vec![],
            excluded: vec![
                excluded(Some(ErrorReason::RateLimit), 5_000),
                excluded(Some(ErrorReason::RateLimit), 3_000),
            ],
        };
        assert_eq!(transient_until(&rate), Some(UnixMillis(3_000)));
        let quota = Selection {
            eligible: vec![],
            excluded: vec![
                excluded(Some(ErrorReason::RateLimit), 3_000),
                excluded(Some(ErrorReason::QuotaExhausted), 9_000),
            ],
        };
        assert_eq!(transient_until(&quota), None, "one exhausted quota means no wait");
        let unknown = Selection { eligible: vec![], excluded: vec![excluded(None, 3_000)] };
        assert_eq!(transient_until(&unknown), None);
        let eligible =
            Selection { eligible: vec![1], excluded: vec![excluded(Some(ErrorReason::RateLimit), 3_000)] };
        assert_eq!(transient_until(&eligible), None);
    }

    #[test]
    fn waits_stay_within_each_bound() {
        let settings = ComboCooldownWaitSettings {
            enabled: true,
            max_wait_ms: 5_000,
            max_attempts: 2,
            budget_ms: 8_000,
        };
        assert!(ComboWait::for_request(&settings, false).is_none());
        let off = ComboCooldownWaitSettings { enabled: false, ..settings };
        assert!(ComboWait::for_request(&off, true).is_none());
        let mut w = ComboWait::for_request(&settings, true).unwrap_or_else(|| panic!("on"));
        let now = UnixMillis(0);
        assert_eq!(w.call(now, UnixMillis(6_000)), WaitCall::Refuse, "over maxWaitMs");
        assert_eq!(w.call(now, UnixMillis(5_000)), WaitCall::Wait(Duration::from_secs(5)));
        assert_eq!(w.call(now, UnixMillis(4_000)), WaitCall::Refuse, "over budgetMs (5 + 4 > 8)");
        assert_eq!(w.call(now, UnixMillis(3_000)), WaitCall::Wait(Duration::from_secs(3)));
        assert_eq!(w.call(now, UnixMillis(0)), WaitCall::Refuse, "maxAttempts spent");
        assert!(!w.retry_now());
    }
}
