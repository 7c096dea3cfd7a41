//! The low-priority lane of one Claude OAuth connection (SPEC 4.3, `lowPriorityMode`).
//!
//! `Inactive` → (wall 429 with `slow-offer: treatment`, no cool-off, no budget memo,
//! a future reset) → `Active{resets_at, accepted_at}` → `Inactive` on: the announced
//! reset + 60 s (lazily, on read), a 5-hour window roll, a terminal slow status
//! (`weekly_limit`, `budget_exhausted`, `off`, `ineligible`, or `ineligible` +
//! `overage-in-use` = `extra_usage`), a wall 429 without a slow status, or a request
//! that waited as long as it may (`max_wait`, then a 10-minute cool-off).
//!
//! Waits (`slot_busy` 429, or a 529): the server's `slow-retry-after` (clamped 5–600 s,
//! ±30 % jitter), never past the request's wait window (`slow-max-wait`, clamped 1 min
//! – 6 h, counted from its first wait after the acceptance) nor past its remaining
//! start budget minus 5 s. The window is per request ([`WaitWindow`]), the lane per
//! connection ([`LaneState`]).
//!
//! Fail-open: an inactive lane never intercepts anything; only a response recognised
//! as the lane's own is absorbed, everything else goes the ordinary way.

use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ClaudeLaneEnd, ClaudeSlowStatus};

use super::signals::{Jitter, SlowOffer, WallSignals, jittered};
use super::{
    BUDGET_MEMO_CAP_MS, COOL_OFF_MS, DEFAULT_MAX_WAIT_MS, DEFAULT_RETRY_AFTER_MS, REQUEST_MARGIN_MS,
    RESET_GRACE_MS, ROLLOVER_TOLERANCE_MS,
};
use crate::backoff::as_i64;

/// One upstream response, as the wall needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// Upstream status of the attempt's final response.
    pub status: u16,
    /// Its unified headers ([`WallSignals::parse`]).
    pub signals: WallSignals,
    /// Whether the request carried `anthropic-usage-limit: slow`.
    pub sent_slow: bool,
    /// The request's remaining upstream start budget in ms (`None` = unbounded); the
    /// wall keeps 5 s of it unused.
    pub remaining_budget_ms: Option<u64>,
}

/// The lane's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum LanePhase {
    /// No lane: requests go at full speed, without the header.
    #[default]
    Inactive,
    /// Every request carries `anthropic-usage-limit: slow` until `resets_at` + 60 s.
    Active {
        /// The announced 5-hour window reset.
        resets_at: UnixMillis,
        /// When the offer was accepted.
        accepted_at: UnixMillis,
    },
}

/// Why a wall 429 did not open a lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// `lowPriorityMode` (and `autoLimitReset`, where it applies) is off.
    Disabled,
    /// No `slow-offer` header.
    NoOffer,
    /// `slow-offer: control`.
    Control,
    /// Within the 10-minute cool-off after a `max_wait` end.
    CoolingOff,
    /// The slow budget is spent until its announced reset.
    BudgetExhausted,
    /// No reset instant in the future to run the lane until.
    NoFutureReset,
    /// A lane is already active (the caller should have observed through it).
    AlreadyActive,
}

/// Why the executor retries the same connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryVia {
    /// The session limit was reset: full speed, no slow header.
    LimitReset,
    /// The slow-lane offer was accepted at the wall.
    LaneAccepted,
    /// A request sent without the header (raced the acceptance) hit the wall.
    JoinedLane,
    /// `slot_busy`: every slow slot is taken.
    SlotBusy,
    /// A 529 on the lane.
    CapacityBusy,
}

/// What the lane makes of one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneDecision {
    /// Not the lane's business (the lane may still be active).
    Pass,
    /// Retry the same connection after `delay_ms`.
    Retry {
        /// Milliseconds to wait first (0 = at once).
        delay_ms: u64,
        /// Why.
        via: RetryVia,
    },
    /// The lane ended.
    Ended(ClaudeLaneEnd),
}

/// One request's wait window on the lane: created per client request, carried
/// across its attempts on the connection, never shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WaitWindow {
    since: Option<UnixMillis>,
    accepted_at: Option<UnixMillis>,
    attempts: u32,
}

impl WaitWindow {
    /// Waits taken so far in the current window.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// When the current window's first wait started.
    pub fn since(&self) -> Option<UnixMillis> {
        self.since
    }

    /// Forgets the window (a served request, or an end).
    pub fn clear(&mut self) {
        *self = WaitWindow::default();
    }
}

/// One connection's lane state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LaneState {
    /// Inactive or active.
    pub phase: LanePhase,
    /// Current wait between retries (hinted, clamped).
    pub retry_after_ms: u32,
    /// Current longest wait of one request (hinted, clamped).
    pub max_wait_ms: u32,
    /// The last slow status seen while active.
    pub last_slow_status: Option<ClaudeSlowStatus>,
    /// Why the lane last ended.
    pub last_end: Option<ClaudeLaneEnd>,
    /// No acceptance before this instant (after `max_wait`).
    pub cool_off_until: Option<UnixMillis>,
    /// No acceptance before this instant (after `budget_exhausted`).
    pub budget_exhausted_until: Option<UnixMillis>,
    /// Requests served on the slow lane since the acceptance.
    pub requests_served: u32,
    /// Requests served at full speed (`not_needed`) since the acceptance.
    pub requests_served_standard: u32,
}

impl Default for LaneState {
    fn default() -> LaneState {
        LaneState {
            phase: LanePhase::Inactive,
            retry_after_ms: DEFAULT_RETRY_AFTER_MS,
            max_wait_ms: DEFAULT_MAX_WAIT_MS,
            last_slow_status: None,
            last_end: None,
            cool_off_until: None,
            budget_exhausted_until: None,
            requests_served: 0,
            requests_served_standard: 0,
        }
    }
}

impl LaneState {
    /// Lazy expiry: an active lane whose reset + 60 s has come ends with `reset`.
    /// Returns the end, if this call caused one.
    pub fn refresh(&mut self, now: UnixMillis) -> Option<ClaudeLaneEnd> {
        match self.active_until() {
            Some(until) if now >= until => {
                self.end(ClaudeLaneEnd::Reset, now);
                Some(ClaudeLaneEnd::Reset)
            }
            _ => None,
        }
    }

    /// The instant the active lane expires (reset + 60 s), if active.
    pub fn active_until(&self) -> Option<UnixMillis> {
        match self.phase {
            LanePhase::Active { resets_at, .. } => Some(resets_at.plus_millis(RESET_GRACE_MS)),
            LanePhase::Inactive => None,
        }
    }

    /// Whether the lane is active (call [`LaneState::refresh`] first).
    pub fn is_active(&self) -> bool {
        matches!(self.phase, LanePhase::Active { .. })
    }

    /// Whether a request sent now must carry `anthropic-usage-limit: slow`.
    pub fn sends_slow(&mut self, now: UnixMillis) -> bool {
        self.refresh(now);
        self.is_active()
    }

    /// Ends the lane (no-op when inactive; returns whether it was active). Only
    /// `max_wait` starts the cool-off.
    pub fn end(&mut self, reason: ClaudeLaneEnd, now: UnixMillis) -> bool {
        if !self.is_active() {
            return false;
        }
        self.phase = LanePhase::Inactive;
        self.requests_served = 0;
        self.requests_served_standard = 0;
        self.last_end = Some(reason);
        if reason == ClaudeLaneEnd::MaxWait {
            self.cool_off_until = Some(now.plus_millis(COOL_OFF_MS));
        }
        true
    }

    /// Accepts the slow-lane offer of a wall 429, if allowed.
    pub fn try_accept(&mut self, sig: &WallSignals, now: UnixMillis) -> Result<(), Refusal> {
        self.refresh(now);
        if self.is_active() {
            return Err(Refusal::AlreadyActive);
        }
        match sig.slow_offer {
            Some(SlowOffer::Treatment) => {}
            Some(SlowOffer::Control) => return Err(Refusal::Control),
            None => return Err(Refusal::NoOffer),
        }
        if self.budget_exhausted_until.is_some_and(|u| now < u) {
            return Err(Refusal::BudgetExhausted);
        }
        if self.cool_off_until.is_some_and(|u| now < u) {
            return Err(Refusal::CoolingOff);
        }
        let resets_at = sig.lane_reset().filter(|r| *r > now).ok_or(Refusal::NoFutureReset)?;
        self.retry_after_ms = sig.slow_retry_after_ms.unwrap_or(DEFAULT_RETRY_AFTER_MS);
        self.max_wait_ms = sig.slow_max_wait_ms.unwrap_or(DEFAULT_MAX_WAIT_MS);
        self.requests_served = 0;
        self.requests_served_standard = 0;
        self.last_slow_status = None;
        self.phase = LanePhase::Active { resets_at, accepted_at: now };
        Ok(())
    }

    /// Observes one response while the lane may be active.
    pub fn observe(
        &mut self,
        obs: &Observation,
        wait: &mut WaitWindow,
        now: UnixMillis,
        jitter: &mut dyn Jitter,
    ) -> LaneDecision {
        let (status, sig, sent_slow, budget_ms) =
            (obs.status, &obs.signals, obs.sent_slow, obs.remaining_budget_ms);
        if let Some(end) = self.refresh(now) {
            wait.clear();
            return LaneDecision::Ended(end);
        }
        let LanePhase::Active { resets_at, accepted_at } = self.phase else {
            return LaneDecision::Pass;
        };
        if !sent_slow {
            // A sibling dispatched before the acceptance: it joins the lane at the
            // wall, and is no lane telemetry otherwise.
            return if sig.is_wall(status) {
                LaneDecision::Retry { delay_ms: 0, via: RetryVia::JoinedLane }
            } else {
                LaneDecision::Pass
            };
        }
        if let Some(ms) = sig.slow_retry_after_ms {
            self.retry_after_ms = ms;
        }
        if let Some(ms) = sig.slow_max_wait_ms {
            self.max_wait_ms = ms;
        }
        if sig.slow_status.is_some() {
            self.last_slow_status = sig.slow_status;
        }
        if let Some(reason) = self.terminal_reason(sig, now) {
            self.end(reason, now);
            wait.clear();
            return LaneDecision::Ended(reason);
        }
        let slow = sig.slow_status;
        if status == 429 {
            if slow == Some(ClaudeSlowStatus::SlotBusy) {
                return self.wait_or_give_up(RetryVia::SlotBusy, accepted_at, wait, budget_ms, now, jitter);
            }
            if sig.rejected || sig.has_claim || sig.has_overage_status {
                self.end(ClaudeLaneEnd::Wall, now);
                wait.clear();
                return LaneDecision::Ended(ClaudeLaneEnd::Wall);
            }
            return LaneDecision::Pass;
        }
        if status == 529 {
            return self.wait_or_give_up(RetryVia::CapacityBusy, accepted_at, wait, budget_ms, now, jitter);
        }
        if status < 400 {
            if sig.reset_5h.is_some_and(|r| r >= resets_at.plus_millis(ROLLOVER_TOLERANCE_MS)) {
                self.end(ClaudeLaneEnd::Reset, now);
                wait.clear();
                return LaneDecision::Ended(ClaudeLaneEnd::Reset);
            }
            match slow {
                Some(ClaudeSlowStatus::Active) => {
                    self.requests_served = self.requests_served.saturating_add(1);
                    wait.clear();
                }
                Some(ClaudeSlowStatus::NotNeeded) => {
                    self.requests_served_standard = self.requests_served_standard.saturating_add(1);
                    wait.clear();
                }
                _ => {}
            }
        }
        LaneDecision::Pass
    }

    /// A slow status that ends the lane on any response, recording the budget memo.
    fn terminal_reason(&mut self, sig: &WallSignals, now: UnixMillis) -> Option<ClaudeLaneEnd> {
        if sig.extra_usage() {
            return Some(ClaudeLaneEnd::ExtraUsage);
        }
        Some(match sig.slow_status? {
            ClaudeSlowStatus::WeeklyLimit => ClaudeLaneEnd::Weekly,
            ClaudeSlowStatus::Off => ClaudeLaneEnd::Off,
            ClaudeSlowStatus::Ineligible => ClaudeLaneEnd::Ineligible,
            ClaudeSlowStatus::BudgetExhausted => {
                let cap = now.plus_millis(BUDGET_MEMO_CAP_MS);
                self.budget_exhausted_until =
                    sig.slow_budget_reset.or(sig.reset_7d).filter(|u| *u > now).map(|u| u.min(cap));
                ClaudeLaneEnd::Budget
            }
            _ => return None,
        })
    }

    /// Waits the jittered retry-after, unless the request's window or budget is used.
    fn wait_or_give_up(
        &mut self,
        via: RetryVia,
        accepted_at: UnixMillis,
        wait: &mut WaitWindow,
        budget_ms: Option<u64>,
        now: UnixMillis,
        jitter: &mut dyn Jitter,
    ) -> LaneDecision {
        if wait.accepted_at != Some(accepted_at) || wait.since.is_none() {
            *wait = WaitWindow { since: Some(now), accepted_at: Some(accepted_at), attempts: 0 };
        }
        let since = wait.since.unwrap_or(now);
        let mut deadline = since.plus_millis(i64::from(self.max_wait_ms));
        if let Some(budget) = budget_ms {
            deadline = deadline.min(now.plus_millis(as_i64(budget.saturating_sub(REQUEST_MARGIN_MS))));
        }
        if now >= deadline {
            self.end(ClaudeLaneEnd::MaxWait, now);
            wait.clear();
            return LaneDecision::Ended(ClaudeLaneEnd::MaxWait);
        }
        let room = u64::try_from(now.millis_until(deadline)).unwrap_or(0);
        wait.attempts = wait.attempts.saturating_add(1);
        LaneDecision::Retry { delay_ms: jittered(self.retry_after_ms, jitter).min(room), via }
    }
}

#[cfg(test)]
mod tests;
