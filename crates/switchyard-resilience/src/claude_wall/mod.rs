//! The Claude subscription usage wall (SPEC 4.3; scope: one Claude OAuth connection):
//! the low-priority lane ([`lane`]), the session limit reset ([`limit_reset`]), and a
//! thread-safe per-connection façade ([`ClaudeWall`]) the gateway's executor calls.
//!
//! Pure and deterministic: every function takes `now`; nothing here sleeps, sends a
//! request or spawns a task. A wait is *returned* (milliseconds) for the caller to
//! sleep on; jitter comes from an injected [`Jitter`]; the two upstream calls of the
//! limit reset are *described* (paths and body) for the caller to make.
//!
//! Invariants (property-tested): a lane is never active past the announced reset +
//! 60 s; a `max_wait` end blocks re-acceptance for exactly 10 minutes; no returned wait
//! exceeds the request's remaining start budget minus 5 s; a caught wall 429 is never
//! sent down the cooldown path; a 429 without the unified headers always is.
//!
//! Failure behaviour: fail-closed towards the upstream's contract, fail-open for
//! traffic. Malformed or missing hints fall back to the defaults (clamped, never
//! rejected, since they come from an upstream); anything not recognised as the wall
//! takes the ordinary path; state is in memory only (a restart costs one extra wall
//! 429).

pub mod lane;
pub mod limit_reset;
mod signals;
mod wall;

pub use lane::{LaneDecision, LanePhase, LaneState, Observation, Refusal, RetryVia, WaitWindow};
pub use limit_reset::{ClaimOutcome, JuniperTide, ResetAdmission, ResetState, ResetStep, discover_org_uuid};
pub use signals::{
    Jitter, SeededJitter, SlowOffer, WallOptions, WallSignals, clamp_max_wait_ms, clamp_retry_after_ms,
    jittered,
};
pub use wall::{AWAIT_RESET_POLL_MS, ClaudeWall, ConnWall, CooldownWhy, WallDecision, WallObserver};

/// Request header sent on every request while the lane is active.
pub const USAGE_LIMIT_HEADER: &str = "anthropic-usage-limit";
/// Its value.
pub const USAGE_LIMIT_SLOW: &str = "slow";

/// Default wait between slow-lane retries when the upstream gives none.
pub const DEFAULT_RETRY_AFTER_MS: u32 = 20_000;
/// Shortest honoured `slow-retry-after`.
pub const MIN_RETRY_AFTER_MS: u32 = 5_000;
/// Longest honoured `slow-retry-after`.
pub const MAX_RETRY_AFTER_MS: u32 = 600_000;
/// Default longest wait of one request on the lane.
pub const DEFAULT_MAX_WAIT_MS: u32 = 1_200_000;
/// Shortest honoured `slow-max-wait`.
pub const MIN_MAX_WAIT_MS: u32 = 60_000;
/// Longest honoured `slow-max-wait`.
pub const MAX_MAX_WAIT_MS: u32 = 21_600_000;
/// Relative jitter of each wait: a factor uniform in `[0.7, 1.3]`.
pub const JITTER_RATIO: f64 = 0.3;
/// The lane outlives the announced reset by this much.
pub const RESET_GRACE_MS: i64 = 60_000;
/// A `5h-reset` this far past the accepted reset means the window rolled over.
pub const ROLLOVER_TOLERANCE_MS: i64 = 60_000;
/// After a `max_wait` end no lane is accepted for this long.
pub const COOL_OFF_MS: i64 = 600_000;
/// The longest a `budget_exhausted` memo is kept (8 days).
pub const BUDGET_MEMO_CAP_MS: i64 = 691_200_000;
/// A wait always leaves this much of the request's start budget unused.
pub const REQUEST_MARGIN_MS: u64 = 5_000;
