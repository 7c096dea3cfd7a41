//! The forwarding path: read the client body once, rewrite only its `model`, build
//! upstream headers from scratch, try candidates in order with failover decided by
//! the resilience engine's verdict, and relay the chosen response chunk by chunk.
//!
//! Map: [`forward`] (the candidate loop; `flow` orders it by the combo strategy and
//! waits for a slot when every candidate is at its cap) → `attempt` (one attempt as stages:
//! credentials → dispatch → judge → commit) → `relay` (the committed body, with the
//! stall watchdog and the deadline) over `sse` (framing and progress); `guard` owns
//! an attempt's permits; `upstream_error` types what can fail below HTTP; `failure`
//! builds the client's error when nothing could be relayed; `combo_wait` waits out a
//! combo's brief rate limits (`comboCooldownWait`); `session` applies session
//! affinity (pinned connections first, re-pinned on success); `lease` fences
//! exclusive leases (leased connection first, others' leases out, checked again
//! at every dispatch); `keepalive` keeps a
//! streaming client's connection alive while the gateway itself waits.

mod attempt;
mod body;
mod claude_wall;
mod combo_wait;
mod failure;
mod flow;
mod forward;
mod frontier;
mod guard;
pub(crate) mod headers;
pub mod hop;
mod keepalive;
pub mod lease;
mod redact;
mod relay;
mod session;
mod sse;
mod strict_json;
mod trace;
pub mod translation;
mod upstream_error;
mod usage_tap;

pub use body::ClientBody;
pub(crate) use failure::excluded_targets_error;
pub use forward::{ForwardRequest, forward};
pub use headers::upstream_headers;
pub use keepalive::GatewayWaits;
pub use trace::{new_request_id, refused_row};

/// The address of a function every inference request runs (the body's JSON
/// check), for the huge-page mover at start (`switchyard-huge-text`): a
/// profile-guided build puts it among the request's hot code, whether the linker's
/// sort left that at the start of the text or BOLT moved it into a segment of its
/// own.
pub fn hot_path_anchor() -> usize {
    let probe: for<'a> fn(&'a [u8]) -> Result<strict_json::Probe<'a>, String> = strict_json::probe;
    probe as usize
}
