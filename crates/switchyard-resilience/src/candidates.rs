//! Candidate filtering (SPEC §3 step 3): given what each layer says about a target,
//! decide whether it is eligible and, if not, which reason binds (the one that lasts
//! longest) and when it lapses. The selection keeps input order, carries exclusion
//! diagnostics per target, and answers the request-level question: proceed, `503
//! all_targets_cooling_down` (with the earliest retry), or `404
//! no_executable_targets` (no timer involved).
//!
//! Pure: the engine gathers the per-layer facts under its locks and calls [`judge`].

use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ExcludedTargetView, ExclusionReason};

use switchyard_types::resilience::ErrorReason;

use crate::cooldown::TerminalKind;
use crate::outcome::Candidate;

/// What the layers say about one target at `now` (each `Some(until)` blocks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Blocks {
    /// Provider breaker open (or its probe out) until.
    pub breaker: Option<UnixMillis>,
    /// Window gate cools the provider until.
    pub provider_gate: Option<UnixMillis>,
    /// The connection is terminal.
    pub terminal: Option<TerminalKind>,
    /// The connection cools until (cooldown or window-gate entry).
    pub connection: Option<UnixMillis>,
    /// A model lockout covers the model until.
    pub lockout: Option<UnixMillis>,
    /// What cooled the connection (its last error's reason).
    pub connection_cause: Option<ErrorReason>,
    /// What locked the model.
    pub lockout_cause: Option<ErrorReason>,
}

/// Why and until when a target is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exclusion {
    /// Index of the target in the input.
    pub index: usize,
    /// The binding reason.
    pub reason: ExclusionReason,
    /// When it lapses; `None` for a terminal state.
    pub until: Option<UnixMillis>,
    /// The terminal state, for [`ExclusionReason::Unavailable`].
    pub terminal: Option<TerminalKind>,
    /// The error reason behind a connection cooldown or model lockout, when known
    /// (the combo cooldown wait only waits out rate limits).
    pub cause: Option<ErrorReason>,
}

/// The binding exclusion of a target, or `None` when it is eligible. A terminal state
/// binds (no timer will lift it); otherwise the latest-lapsing timer binds.
pub fn judge(index: usize, b: &Blocks) -> Option<Exclusion> {
    if let Some(kind) = b.terminal {
        return Some(Exclusion {
            index,
            reason: ExclusionReason::Unavailable,
            until: None,
            terminal: Some(kind),
            cause: None,
        });
    }
    let timers = [
        (ExclusionReason::CircuitOpen, b.breaker),
        (ExclusionReason::ProviderCooldown, b.provider_gate),
        (ExclusionReason::ConnectionCooldown, b.connection),
        (ExclusionReason::ModelLockout, b.lockout),
    ];
    timers
        .iter()
        .filter_map(|(reason, until)| until.map(|u| (*reason, u)))
        .fold(None, |best: Option<(ExclusionReason, UnixMillis)>, (reason, until)| match best {
            Some((_, b)) if b >= until => best,
            _ => Some((reason, until)),
        })
        .map(|(reason, until)| Exclusion {
            index,
            reason,
            until: Some(until),
            terminal: None,
            cause: match reason {
                ExclusionReason::ConnectionCooldown => b.connection_cause,
                ExclusionReason::ModelLockout => b.lockout_cause,
                _ => None,
            },
        })
}

/// What the request should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// At least one target is eligible.
    Proceed,
    /// Every target is out and at least one comes back by a timer: `503
    /// all_targets_cooling_down`, `Retry-After: retry_after_secs`.
    AllCoolingDown {
        /// Earliest lapse.
        retry_at: UnixMillis,
        /// Whole seconds until then, at least 1.
        retry_after_secs: u32,
    },
    /// Nothing to run and no timer involved: `404 no_executable_targets`.
    NoExecutableTargets,
}

/// The filtered candidate list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Indices of eligible targets, in input order.
    pub eligible: Vec<usize>,
    /// One entry per excluded target, in input order.
    pub excluded: Vec<Exclusion>,
}

/// Whole seconds from `now` until `at`, rounded up, at least 1.
pub fn retry_after_secs(now: UnixMillis, at: UnixMillis) -> u32 {
    let ms = now.millis_until(at);
    u32::try_from(ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0)).unwrap_or(u32::MAX).max(1)
}

impl Selection {
    /// The earliest instant an excluded target comes back.
    pub fn earliest_retry_at(&self) -> Option<UnixMillis> {
        self.excluded.iter().filter_map(|e| e.until).min()
    }

    /// The request-level decision at `now`.
    pub fn decision(&self, now: UnixMillis) -> Decision {
        if !self.eligible.is_empty() {
            return Decision::Proceed;
        }
        match self.earliest_retry_at() {
            Some(retry_at) => {
                Decision::AllCoolingDown { retry_at, retry_after_secs: retry_after_secs(now, retry_at) }
            }
            None => Decision::NoExecutableTargets,
        }
    }

    /// The `diagnostics.excluded` entries for the 503 body.
    pub fn excluded_views<C: Candidate>(&self, candidates: &[C], now: UnixMillis) -> Vec<ExcludedTargetView> {
        self.excluded
            .iter()
            .filter_map(|e| {
                let c = candidates.get(e.index)?;
                Some(ExcludedTargetView {
                    provider: c.provider().to_owned(),
                    connection: c.connection().to_owned(),
                    model: c.model().to_owned(),
                    reason: e.reason,
                    seconds_left: e.until.map(|u| retry_after_secs(now, u)),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Target;

    const NOW: UnixMillis = UnixMillis(1_000_000);

    #[test]
    fn no_block_is_eligible() {
        assert_eq!(judge(0, &Blocks::default()), None);
    }

    #[test]
    fn the_latest_timer_binds_and_terminal_beats_timers() {
        let b = Blocks {
            breaker: Some(NOW.plus_millis(5_000)),
            lockout: Some(NOW.plus_millis(90_000)),
            connection: Some(NOW.plus_millis(10_000)),
            ..Blocks::default()
        };
        let e = judge(3, &b);
        assert_eq!(
            e.map(|e| (e.index, e.reason, e.until)),
            Some((3, ExclusionReason::ModelLockout, Some(NOW.plus_millis(90_000))))
        );
        let t = Blocks { terminal: Some(TerminalKind::Banned), ..b };
        assert_eq!(judge(0, &t).map(|e| (e.reason, e.until)), Some((ExclusionReason::Unavailable, None)));
    }

    #[test]
    fn decisions() {
        let targets = [
            Target { provider: "anthropic", connection: "a", model: "m" },
            Target { provider: "glm", connection: "g", model: "m" },
        ];
        let cooling = Selection {
            eligible: vec![],
            excluded: vec![
                Exclusion {
                    index: 0,
                    reason: ExclusionReason::CircuitOpen,
                    until: Some(NOW.plus_millis(6_500)),
                    terminal: None,
                    cause: None,
                },
                Exclusion {
                    index: 1,
                    reason: ExclusionReason::ConnectionCooldown,
                    until: Some(NOW.plus_millis(42_000)),
                    terminal: None,
                    cause: None,
                },
            ],
        };
        assert_eq!(
            cooling.decision(NOW),
            Decision::AllCoolingDown { retry_at: NOW.plus_millis(6_500), retry_after_secs: 7 }
        );
        let views = cooling.excluded_views(&targets, NOW);
        assert_eq!(views[0].seconds_left, Some(7));
        assert_eq!(views[1].connection, "g");
        let terminal = Selection {
            eligible: vec![],
            excluded: vec![Exclusion {
                index: 0,
                reason: ExclusionReason::Unavailable,
                until: None,
                terminal: Some(TerminalKind::Expired),
                cause: None,
            }],
        };
        assert_eq!(terminal.decision(NOW), Decision::NoExecutableTargets);
        assert_eq!(Selection::default().decision(NOW), Decision::NoExecutableTargets);
        assert_eq!(Selection { eligible: vec![1], ..cooling }.decision(NOW), Decision::Proceed);
    }

    #[test]
    fn retry_after_rounds_up_and_is_at_least_one() {
        assert_eq!(retry_after_secs(NOW, NOW.plus_millis(1)), 1);
        assert_eq!(retry_after_secs(NOW, NOW.plus_millis(7_000)), 7);
        assert_eq!(retry_after_secs(NOW, NOW.plus_millis(7_001)), 8);
        assert_eq!(retry_after_secs(NOW, NOW), 1);
    }
}
