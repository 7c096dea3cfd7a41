//! The per-connection façade the gateway's executor calls around each upstream attempt
//! of a Claude OAuth connection: before sending, [`ClaudeWall::sends_slow`]; after the
//! final response of the attempt, [`ClaudeWall::observe`], which returns a
//! [`WallDecision`]; for the limit reset, [`ClaudeWall::reset_on_usage`] /
//! [`ClaudeWall::reset_claim_step`] / [`ClaudeWall::finish_limit_reset`].
//!
//! Concurrency: one `Mutex` per connection in a map behind an `RwLock` that is
//! write-locked only to add a connection; each call is one transition under one lock
//! hold. A poisoned lock is recovered (the state is plain data).
//!
//! Order at the wall (SPEC 4.3): the limit reset first (when `autoLimitReset` is on
//! and the wall blames the 5-hour window), then the lane (`lowPriorityMode`), else the
//! ordinary cooldown path. A caught wall 429 never yields
//! [`WallDecision::TakeCooldownPath`]; a 429 without the unified headers always does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use switchyard_types::UnixMillis;
use switchyard_types::resilience::{ClaudeLaneEnd, ClaudeWallView};

use super::lane::{LaneDecision, LaneState, Observation, Refusal, RetryVia, WaitWindow};
use super::limit_reset::{ClaimOutcome, JuniperTide, ResetAdmission, ResetState, ResetStep, USAGE_PATH};
use super::signals::{Jitter, WallOptions, WallSignals};

/// How often a request waiting on a sibling's limit reset checks again.
pub const AWAIT_RESET_POLL_MS: u64 = 1_000;

/// Why a failed response goes down the ordinary cooldown path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CooldownWhy {
    /// Not the usage wall (e.g. a 429 without the unified headers, a 500).
    NotTheWall,
    /// The wall, but no lane was opened.
    NotAccepted(Refusal),
    /// The lane ended on this response.
    LaneEnded(ClaudeLaneEnd),
}

/// What the executor does with a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WallDecision {
    /// A non-failure response: relay it as usual. `lane_ended` is for the log.
    Relay {
        /// The lane ended on this response (the next request goes without the header).
        lane_ended: Option<ClaudeLaneEnd>,
    },
    /// A failure the wall does not absorb: the ordinary cooldown / failover path.
    TakeCooldownPath {
        /// Why.
        why: CooldownWhy,
    },
    /// Sleep `delay_ms`, then retry on the same connection (call
    /// [`ClaudeWall::sends_slow`] again for the header). Never cooled, never rotated.
    RetrySameConnection {
        /// Milliseconds to wait (0 = at once); within the request's budget − 5 s.
        delay_ms: u64,
        /// Why.
        via: RetryVia,
    },
    /// Make the usage call `GET {base}{usage_path}` (timeout 5 s), then
    /// [`ClaudeWall::reset_on_usage`].
    RunLimitReset {
        /// [`USAGE_PATH`].
        usage_path: &'static str,
    },
    /// A sibling request is resetting the limit: sleep `poll_ms`, then call
    /// [`ClaudeWall::observe`] again with the same observation.
    AwaitLimitReset {
        /// Milliseconds to wait.
        poll_ms: u64,
    },
}

/// One connection's wall state: its lane and its limit-reset memo. Team mode
/// announces it to the other replicas, which take it over ([`ClaudeWall::adopt`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnWall {
    /// The low-priority lane.
    pub lane: LaneState,
    /// The limit-reset memo (an attempt in flight, a recent reset, the next try).
    pub reset: ResetState,
}

impl ConnWall {
    /// What other replicas must know: the lane's phase and bars to acceptance,
    /// and the reset memo; not the per-request counters, which change on every
    /// slow-lane answer.
    fn shared_part(&self) -> impl PartialEq + use<> {
        let l = &self.lane;
        (l.phase, l.last_end, l.cool_off_until, l.budget_exhausted_until, self.reset)
    }
}

/// Called with a connection's new state after a change others must know of
/// (outside the entry's lock), and the time of the change.
pub type WallObserver = Box<dyn Fn(&str, &ConnWall, UnixMillis) + Send + Sync>;

/// The usage-wall state of every Claude OAuth connection (in memory; shared with
/// other replicas in team mode through an observer).
#[derive(Default)]
pub struct ClaudeWall {
    conns: RwLock<HashMap<String, Arc<Mutex<ConnWall>>>>,
    observer: std::sync::OnceLock<WallObserver>,
}

impl std::fmt::Debug for ClaudeWall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeWall").finish_non_exhaustive()
    }
}

/// Holds an entry's lock and remembers its shared part, to announce a change
/// when the guard is dropped (after the lock is released).
struct Watched<'a> {
    wall: &'a ClaudeWall,
    conn: &'a str,
    now: UnixMillis,
    entry: Arc<Mutex<ConnWall>>,
}

impl<'a> Watched<'a> {
    /// Runs `f` on the entry and announces the state if its shared part changed.
    fn with<R>(&self, f: impl FnOnce(&mut ConnWall) -> R) -> R {
        let (out, changed) = {
            let mut g = lock(&self.entry);
            let before = self.wall.observer.get().map(|_| g.shared_part());
            let out = f(&mut g);
            let changed = before.filter(|b| *b != g.shared_part()).map(|_| *g);
            (out, changed)
        };
        if let (Some(observer), Some(state)) = (self.wall.observer.get(), changed) {
            observer(self.conn, &state, self.now);
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn failure(status: u16) -> bool {
    status >= 400
}

fn from_lane(status: u16, d: LaneDecision) -> WallDecision {
    match d {
        LaneDecision::Retry { delay_ms, via } => WallDecision::RetrySameConnection { delay_ms, via },
        LaneDecision::Ended(end) if failure(status) => {
            WallDecision::TakeCooldownPath { why: CooldownWhy::LaneEnded(end) }
        }
        LaneDecision::Ended(end) => WallDecision::Relay { lane_ended: Some(end) },
        LaneDecision::Pass if failure(status) => {
            WallDecision::TakeCooldownPath { why: CooldownWhy::NotTheWall }
        }
        LaneDecision::Pass => WallDecision::Relay { lane_ended: None },
    }
}

impl ClaudeWall {
    /// An empty registry.
    pub fn new() -> ClaudeWall {
        ClaudeWall::default()
    }

    fn entry(&self, conn: &str) -> Arc<Mutex<ConnWall>> {
        if let Some(e) = self.conns.read().unwrap_or_else(PoisonError::into_inner).get(conn) {
            return Arc::clone(e);
        }
        let mut w = self.conns.write().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(w.entry(conn.to_owned()).or_default())
    }

    fn existing(&self, conn: &str) -> Option<Arc<Mutex<ConnWall>>> {
        self.conns.read().unwrap_or_else(PoisonError::into_inner).get(conn).map(Arc::clone)
    }

    /// Before each attempt: whether the request must carry
    /// `anthropic-usage-limit: slow` (the lane is active). Remember the answer as
    /// [`Observation::sent_slow`].
    pub fn sends_slow(&self, conn: &str, now: UnixMillis) -> bool {
        self.existing(conn).is_some_and(|e| lock(&e).lane.sends_slow(now))
    }

    /// After the final response of an attempt on a Claude OAuth connection. `wait` is
    /// the request's own window (one per client request, kept across its retries).
    pub fn observe(
        &self,
        conn: &str,
        opts: &WallOptions,
        obs: &Observation,
        wait: &mut WaitWindow,
        now: UnixMillis,
        jitter: &mut dyn Jitter,
    ) -> WallDecision {
        let (status, sig) = (obs.status, &obs.signals);
        if !sig.any_unified && !self.existing(conn).is_some_and(|e| lock(&e).lane.sends_slow(now)) {
            return from_lane(status, LaneDecision::Pass);
        }
        self.watch(conn, now).with(|g| {
            g.lane.refresh(now);
            if g.lane.is_active() {
                let d = g.lane.observe(obs, wait, now, jitter);
                return from_lane(status, d);
            }
            if !sig.is_wall(status) {
                return from_lane(status, LaneDecision::Pass);
            }
            if opts.auto_limit_reset && !sig.claim_not_five_hour {
                match g.reset.admit(now) {
                    ResetAdmission::Go => return WallDecision::RunLimitReset { usage_path: USAGE_PATH },
                    ResetAdmission::RecentReset => {
                        return WallDecision::RetrySameConnection { delay_ms: 0, via: RetryVia::LimitReset };
                    }
                    ResetAdmission::InFlight => {
                        return WallDecision::AwaitLimitReset { poll_ms: AWAIT_RESET_POLL_MS };
                    }
                    ResetAdmission::MemoSkip => {}
                }
            }
            accept_lane(&mut g.lane, opts, sig, wait, now)
        })
    }

    fn watch<'a>(&'a self, conn: &'a str, now: UnixMillis) -> Watched<'a> {
        Watched { wall: self, conn, now, entry: self.entry(conn) }
    }

    /// Team mode: report changes others must know of to `observer` from now on.
    pub fn observe_changes(&self, observer: WallObserver) {
        let _ = self.observer.set(observer);
    }

    /// Takes over a connection's state from another replica (not announced again).
    pub fn adopt(&self, conn: &str, state: ConnWall) {
        *lock(&self.entry(conn)) = state;
    }

    /// After the usage call of [`WallDecision::RunLimitReset`] (`None` when it failed;
    /// see [`JuniperTide::from_http`]). The org UUID is `organizationUUID`, if set.
    pub fn reset_on_usage(&self, conn: &str, opts: &WallOptions, usage: Option<&JuniperTide>) -> ResetStep {
        lock(&self.entry(conn)).reset.on_usage(usage, opts.organization_uuid.as_deref())
    }

    /// After discovering the org UUID ([`super::limit_reset::discover_org_uuid`]).
    pub fn reset_claim_step(&self, conn: &str, org_uuid: Option<&str>) -> ResetStep {
        lock(&self.entry(conn)).reset.claim_step(org_uuid)
    }

    /// Ends a limit-reset attempt: records `outcome` (the claim's, or a
    /// [`ResetStep::Done`]'s) and decides: granted → retry at full speed; otherwise
    /// the lane (when `lowPriorityMode` is on), else the ordinary cooldown path.
    pub fn finish_limit_reset(
        &self,
        conn: &str,
        opts: &WallOptions,
        outcome: ClaimOutcome,
        obs: &Observation,
        wait: &mut WaitWindow,
        now: UnixMillis,
    ) -> WallDecision {
        self.watch(conn, now).with(|g| {
            g.reset.record(outcome, now);
            if outcome.granted() {
                return WallDecision::RetrySameConnection { delay_ms: 0, via: RetryVia::LimitReset };
            }
            g.lane.refresh(now);
            if g.lane.is_active() {
                // A sibling opened the lane meanwhile: join it.
                return WallDecision::RetrySameConnection { delay_ms: 0, via: RetryVia::JoinedLane };
            }
            accept_lane(&mut g.lane, opts, &obs.signals, wait, now)
        })
    }

    /// Ends a connection's lane by operator request; returns whether one was active.
    pub fn end_lane(&self, conn: &str, now: UnixMillis) -> bool {
        self.existing(conn).is_some()
            && self.watch(conn, now).with(|g| g.lane.end(ClaudeLaneEnd::Operator, now))
    }

    /// Drops connections not in `keep` (deleted, or no longer Claude OAuth).
    pub fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        self.conns.write().unwrap_or_else(PoisonError::into_inner).retain(|k, _| keep(k));
    }

    /// The view of one connection (empty when it never met the wall).
    pub fn view(&self, conn: &str, now: UnixMillis) -> ClaudeWallView {
        self.existing(conn).map(|e| view_of(&mut lock(&e), now)).unwrap_or_default()
    }

    /// Views of every connection that met the wall, sorted by id.
    pub fn views(&self, now: UnixMillis) -> Vec<(String, ClaudeWallView)> {
        let entries: Vec<_> = {
            let r = self.conns.read().unwrap_or_else(PoisonError::into_inner);
            r.iter().map(|(k, v)| (k.clone(), Arc::clone(v))).collect()
        };
        let mut out: Vec<_> = entries.into_iter().map(|(k, e)| (k, view_of(&mut lock(&e), now))).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

fn accept_lane(
    lane: &mut LaneState,
    opts: &WallOptions,
    sig: &WallSignals,
    wait: &mut WaitWindow,
    now: UnixMillis,
) -> WallDecision {
    if !opts.low_priority_mode {
        return WallDecision::TakeCooldownPath { why: CooldownWhy::NotAccepted(Refusal::Disabled) };
    }
    match lane.try_accept(sig, now) {
        Ok(()) => {
            wait.clear();
            WallDecision::RetrySameConnection { delay_ms: 0, via: RetryVia::LaneAccepted }
        }
        Err(r) => WallDecision::TakeCooldownPath { why: CooldownWhy::NotAccepted(r) },
    }
}

fn view_of(c: &mut ConnWall, now: UnixMillis) -> ClaudeWallView {
    c.lane.refresh(now);
    let future = |t: Option<UnixMillis>| t.filter(|t| *t > now);
    ClaudeWallView {
        lane_active_until: c.lane.active_until(),
        last_slow_status: c.lane.last_slow_status,
        last_lane_end: c.lane.last_end,
        cool_off_until: future(c.lane.cool_off_until),
        budget_exhausted_until: future(c.lane.budget_exhausted_until),
        last_reset_result: c.reset.last_result,
        next_reset_available_at: future(c.reset.next_try_at),
    }
}

#[cfg(test)]
mod tests;
