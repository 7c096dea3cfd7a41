//! The agent's view of the request log: one entry per client request with its
//! final outcome (separate from the upstream attempts it took), and the route it
//! took: which candidates there were, which were excluded and why, in which order
//! the strategy tried them. Never a secret or a body.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::UnixMillis;
use crate::api::RequestLogEntryView;

/// How a client request ended, as the agent saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum RequestOutcome {
    /// Served by its first attempt.
    Served,
    /// Served after one or more failed attempts were absorbed by failover.
    ServedAfterFailover,
    /// Relayed an upstream error the request itself caused (400, 404, 422 ...).
    UpstreamRejected,
    /// Answered by the gateway without any upstream attempt (every target cooling,
    /// a lease, a queue timeout, a bad request ...).
    RefusedByGateway,
    /// Every attempt failed.
    Failed,
    /// The client went away before the answer (while the gateway waited, or
    /// before the upstream's headers); logged with status 499.
    Cancelled,
}

/// What happened to one candidate of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "kebab-case")]
pub enum CandidateFate {
    /// Ruled out before dispatch (breaker, cooldown, lockout, terminal).
    Excluded,
    /// Held by another agent's exclusive lease.
    Leased,
    /// An attempt was made and failed over.
    Failed,
    /// The attempt whose answer went to the client.
    Served,
    /// Eligible but never reached (an earlier candidate answered).
    NotReached,
}

// Its names are the routing snapshot's shared texts (a string on the wire): the
// gateway writes one of these per request it serves, and a copy of each name per
// row cost an allocation on the request path and a free on the log writer's thread.
// (A plain comment: doc comments go into the UI's TypeScript bindings.)
/// One candidate of a request's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RouteCandidateView {
    /// Provider id.
    pub provider: Arc<str>,
    /// Connection id.
    pub connection: Arc<str>,
    /// Upstream model id.
    pub model: Arc<str>,
    /// What happened to it.
    pub fate: CandidateFate,
    /// Why, in words, when it was excluded or failed.
    pub reason: Option<String>,
    /// Its place in the order tried (1 = first), when it was eligible.
    pub rank: Option<u32>,
}

/// Why a request went where it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RouteTraceView {
    // Shared with the plan, which words it once.
    /// How the model name matched (`combo 'team'`, `alias 'fast' → ...`, `provider/model`, `catalogue`).
    pub resolved_as: Arc<str>,
    /// The strategy that ordered the candidates (`priority`, `round-robin`, ...).
    pub strategy: Arc<str>,
    /// Every candidate in plan order.
    pub candidates: Vec<RouteCandidateView>,
    /// Further decisions in words (session pinned to a connection, exclusive
    /// lease, a wait for a slot or a cooldown).
    pub notes: Vec<String>,
}

/// One client request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RequestEntryView {
    /// The request id (also the attempts' `requestId`).
    pub request_id: String,
    /// When it arrived.
    pub at: UnixMillis,
    /// The client key's id.
    pub api_key_id: Option<String>,
    /// The client route.
    pub route: String,
    /// The model the client asked for.
    pub model: String,
    /// The status the client received.
    pub status: u16,
    /// How it ended.
    pub outcome: RequestOutcome,
    /// The gateway's error code, when the gateway answered the error itself.
    pub error_code: Option<String>,
    /// The connection that served it (or whose error was relayed).
    pub connection: Option<String>,
    /// Upstream attempts made.
    pub attempts: u32,
    /// Milliseconds until the answer's headers (the stream may run longer; its
    /// attempt row has the full time and bytes).
    pub latency_ms: u32,
}

/// `GET /api/requests/{id}`: the request, its attempts and its route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RequestDetailView {
    /// The request.
    pub request: RequestEntryView,
    /// Its upstream attempts, in order.
    pub attempts: Vec<RequestLogEntryView>,
    /// Why it went where it went.
    pub route: RouteTraceView,
}

/// Query of `GET /api/requests` (newest first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestsQuery {
    /// At most this many (1–1000, default 100).
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only requests that arrived before this one (paging), by request id.
    #[serde(default)]
    pub before: Option<String>,
    /// `ok` (2xx), `error` (anything else), or one status code (`429`).
    #[serde(default)]
    pub status: Option<String>,
    /// Only requests served by (or last tried on) this connection.
    #[serde(default)]
    pub connection: Option<String>,
    /// Only requests for this model (as the client named it).
    #[serde(default)]
    pub model: Option<String>,
    /// Only requests of this client key id.
    #[serde(default)]
    pub key: Option<String>,
    /// Only requests at or after this instant.
    #[serde(default)]
    pub since: Option<UnixMillis>,
    /// Only requests before this instant.
    #[serde(default)]
    pub until: Option<UnixMillis>,
}

/// Client requests and their outcomes over a period (the Overview's agent view).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct RequestCountsView {
    /// Client requests.
    pub requests: u32,
    /// Served on the first attempt.
    pub served: u32,
    /// Served after failover absorbed failed attempts.
    pub served_after_failover: u32,
    /// Answered with an error (gateway refusals, failed, upstream-rejected).
    pub errors: u32,
    /// Upstream attempts made for them.
    pub attempts: u32,
    /// Attempts that failed (absorbed or not).
    pub failed_attempts: u32,
}
