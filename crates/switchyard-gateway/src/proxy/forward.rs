//! The candidate loop: filter the candidates through the resilience engine, then try
//! the eligible ones in order ([`super::attempt`]), fail over while nothing has been
//! sent to the client, and commit to the first usable answer. Which answers fail
//! over is the engine's verdict alone; this loop only obeys it. Once a body byte has
//! reached the client there is no failover: the client retries the whole request.

use std::collections::VecDeque;

use axum::response::Response;
use http::HeaderMap;
use switchyard_resilience::claude_wall::WaitWindow;
use switchyard_resilience::flow::FlowPermit;
use switchyard_resilience::{Decision, Target};
use switchyard_types::{ClientFormat, ErrorCode};
use tracing::Instrument;

use super::attempt::{self, AttemptResult};
use super::body::ClientBody;
use super::failure::{Failure, all_failed, excluded_error};
use super::flow;
use super::guard::AttemptGuard;
use super::keepalive::{self, GatewayWaits};
use crate::errors::ErrorFormat;
use crate::routing::{CandidatePlan, UpstreamEndpoint};
use crate::state::{AppState, GatewayState};

/// A client request ready to forward.
pub struct ForwardRequest {
    /// The client's wire format.
    pub format: ClientFormat,
    /// The upstream endpoint family.
    pub endpoint: UpstreamEndpoint,
    /// The client route, for the log.
    pub route: &'static str,
    /// The client's raw query string.
    pub query: Option<String>,
    /// The client's headers.
    pub headers: HeaderMap,
    /// The validated body.
    pub body: ClientBody,
    /// The candidates.
    pub plan: CandidatePlan,
    /// The client key's id.
    pub api_key_id: Option<String>,
    /// Id shared by the attempts.
    pub request_id: String,
    /// The gateway's own waits for this request in flight (for keep-alives).
    pub waits: GatewayWaits,
}

/// Forwards the request in a `request` span. A streaming request hears SSE
/// keep-alives while the gateway waits by its own choice ([`super::keepalive`]).
///
/// The request and attempt spans are at DEBUG (`SWITCHYARD_LOG=debug` shows them):
/// at the default INFO level, building and formatting two spans per request cost
/// 14 % of the gateway's added latency (docs/benchmarks.md, A/B section). The
/// failure events at INFO carry the request id and connection themselves.
pub async fn forward(state: AppState, req: ForwardRequest) -> Response {
    let span = tracing::debug_span!(
        "request",
        request_id = %req.request_id,
        client_key = req.api_key_id.as_deref().unwrap_or("-"),
        model = %req.body.model(),
        route = req.route,
    );
    if !req.body.streaming() {
        return candidates(&state, &req).instrument(span).await;
    }
    let (waits, clock, format, request_id) =
        (req.waits.clone(), state.clock.clone(), req.format, req.request_id.clone());
    let work = Box::pin(async move { candidates(&state, &req).await }.instrument(span));
    keepalive::respond(work, waits, clock, format, &request_id).await
}

async fn candidates(state: &GatewayState, req: &ForwardRequest) -> Response {
    let engine = &state.resilience.engine;
    let targets: Vec<Target<'_>> = req
        .plan
        .candidates
        .iter()
        .map(|c| Target { provider: &c.connection.provider, connection: &c.connection.id, model: &c.model })
        .collect();
    let selection = engine.filter(&targets);
    let started = engine.now();
    let format = ErrorFormat::Client(req.format);
    match selection.decision(started) {
        Decision::Proceed => {}
        Decision::AllCoolingDown { retry_after_secs, .. } => {
            let excluded = selection.excluded_views(&targets, started);
            return excluded_error(req, ErrorCode::AllTargetsCoolingDown, &excluded, Some(retry_after_secs))
                .render(format);
        }
        Decision::NoExecutableTargets => {
            let excluded = selection.excluded_views(&targets, started);
            return excluded_error(req, ErrorCode::NoExecutableTargets, &excluded, None).render(format);
        }
    }
    let mut failures: Vec<Failure> = Vec::new();
    // The usage wall's wait budget spans all of this request's retries.
    let mut wait = WaitWindow::default();
    let mut pending: VecDeque<usize> = flow::order(state, req, &selection.eligible).into();
    loop {
        // Every candidate with room, in order; the full ones are kept for a wait.
        let mut saturated: Vec<usize> = Vec::new();
        while let Some(index) = pending.pop_front() {
            let Some(candidate) = req.plan.candidates.get(index) else { continue };
            match candidate.connection.flow.try_enter(&candidate.model) {
                Ok(slot) => match dispatch(state, req, &targets, index, slot, started, &mut wait).await {
                    Some(AttemptResult::Committed(response)) => return response,
                    Some(AttemptResult::Failed(failure)) => failures.push(failure),
                    None => {}
                },
                Err(_) => saturated.push(index),
            }
        }
        if saturated.is_empty() {
            break;
        }
        let (index, slot) = match flow::wait_for_slot(state, req, &saturated).await {
            Ok(granted) => granted,
            Err(error) => return error.render(format),
        };
        match dispatch(state, req, &targets, index, slot, started, &mut wait).await {
            Some(AttemptResult::Committed(response)) => return response,
            Some(AttemptResult::Failed(failure)) => failures.push(failure),
            None => {}
        }
        pending = saturated.into_iter().filter(|&i| i != index).collect();
    }
    if failures.is_empty() {
        // Every eligible target was taken out between the filter and dispatch.
        let selection = engine.filter(&targets);
        let now = engine.now();
        let excluded = selection.excluded_views(&targets, now);
        let retry = match selection.decision(now) {
            Decision::AllCoolingDown { retry_after_secs, .. } => Some(retry_after_secs),
            _ => None,
        };
        return excluded_error(req, ErrorCode::AllTargetsCoolingDown, &excluded, retry.or(Some(1)))
            .render(format);
    }
    all_failed(req, &failures).render(format)
}

/// Runs one attempt on `index` holding its flow `slot`. The engine re-checks the
/// target at dispatch: state may have changed since the filter (a breaker this
/// request opened does not turn its next candidate away), and a half-open breaker
/// hands out its single probe here. `None` when the target was taken out meanwhile
/// (the slot is returned).
async fn dispatch(
    state: &GatewayState,
    req: &ForwardRequest,
    targets: &[Target<'_>],
    index: usize,
    slot: FlowPermit,
    started: switchyard_types::UnixMillis,
    wait: &mut WaitWindow,
) -> Option<AttemptResult> {
    let (candidate, target) = (req.plan.candidates.get(index)?, targets.get(index)?);
    let engine = &state.resilience.engine;
    let permit = engine.begin_since(*target, Some(started)).ok()?;
    let guard = AttemptGuard::new(engine.clone(), permit, slot);
    Some(attempt::run(state, req, candidate, guard, wait).await)
}
