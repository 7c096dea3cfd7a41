//! The pure resilience engine (SPEC §4.1, 4.2, 4.5, 4.8): provider circuit breaker,
//! connection cooldown, model lockout and outcome classification, combined by a
//! thread-safe façade ([`Engine`]) the gateway calls on its request path.
//!
//! Deterministic: the layers are pure functions of `(state, observation, now,
//! policy)`; the façade reads time only through an injected [`clock::Clock`]. No
//! sockets, no database, no async, no background timers (expired state is refreshed
//! on read). Persisted state leaves through events and [`EngineSnapshot`].
//!
//! Map of the crate: [`clock`], [`outcome`] (what the gateway reports),
//! [`classify`] (restatement → rules → hints → verdict), [`backoff`], [`breaker`]
//! (+ the optional window gate), [`cooldown`], [`lockout`], [`candidates`] (eligible
//! list + exclusion diagnostics), [`engine`] (façade), [`claude_wall`] (the Claude
//! usage wall, SPEC 4.3: low-priority lane + session limit reset, its own façade),
//! [`stream_watch`] (what counts as progress in a streamed answer), [`flow`] (SPEC
//! 4.6: concurrency gates, queue admission, combo strategies; its only async part
//! is waiting in a gate's line, on tokio's semaphore, and it has no timers: the
//! caller bounds every wait on its own clock).

#![warn(missing_docs)]

pub mod backoff;
pub mod breaker;
pub mod candidates;
pub mod classify;
pub mod claude_wall;
pub mod clock;
pub mod cooldown;
pub mod engine;
pub mod error;
pub mod flow;
pub mod lockout;
pub mod outcome;
pub mod stream_watch;

pub use candidates::{Decision, Exclusion, Selection};
pub use classify::Verdict;
pub use claude_wall::{ClaudeWall, WallDecision, WallOptions, WallSignals};
pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{Attempt, Engine, EngineEvent, EngineSnapshot, EventSink, QuotaFamilies, Recorded};
pub use error::{ResilienceError, Result};
pub use outcome::{
    AttemptOutcome, AuthCategory, Candidate, ConnectionConfig, HeaderSource, SharedTarget, Target,
    TransportFailure,
};
