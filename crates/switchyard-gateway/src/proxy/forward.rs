//! The candidate loop: filter the candidates through the resilience engine, then try
//! the eligible ones in order ([`super::attempt`]), fail over while nothing has been
//! sent to the client, and commit to the first usable answer. Which answers fail
//! over is the engine's verdict alone; this loop only obeys it. Once a body byte has
//! reached the client there is no failover: the client retries the whole request.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::response::Response;
use http::HeaderMap;
use switchyard_resilience::Decision;
use switchyard_resilience::claude_wall::WaitWindow;
use switchyard_resilience::flow::FlowPermit;
use switchyard_types::{ClientFormat, ErrorCode, UnixMillis};
use tracing::Instrument;

use super::attempt::{self, AttemptResult};
use super::body::ClientBody;
use super::combo_wait::{self, ComboWait, WaitCall};
use super::failure::{Failure, all_failed, excluded_error};
use super::flow;
use super::frontier::Frontier;
use super::guard::AttemptGuard;
use super::keepalive::{self, GatewayWaits};
use super::lease::{self, Fence, HeldLease};
use super::session::SessionPass;
use super::trace::Trace;
use crate::affinity::SessionKey;
use crate::errors::{ErrorFormat, GatewayError};
use crate::routing::connection::pace_budget_ms;
use crate::routing::{Candidate, CandidatePlan, UpstreamEndpoint};
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
    pub plan: Arc<CandidatePlan>,
    /// The client key's id.
    pub api_key_id: Option<Arc<str>>,
    /// Id shared by the attempts.
    pub request_id: Arc<str>,
    /// The gateway's own waits for this request in flight (for keep-alives).
    pub waits: GatewayWaits,
    /// The client session, when affinity is on and the request names one.
    pub session: Option<SessionKey>,
    /// The exclusive lease the request presented, checked at arrival.
    pub lease: Option<HeldLease>,
    /// The client asked for the 1M-token context (`model[1m]`, Claude Code's
    /// long-context ids): Anthropic upstreams get the context beta flag.
    pub long_context: bool,
}

/// Forwards the request in a `request` span. A streaming request hears SSE
/// keep-alives while the gateway waits by its own choice ([`super::keepalive`]).
///
/// The request and attempt spans are at DEBUG (`SWITCHYARD_LOG=debug` shows them):
/// at the default INFO level, building and formatting two spans per request cost
/// 14 % of the gateway's added latency (docs/benchmarks.md, A/B section). The
/// failure events at INFO carry the request id and connection themselves.
///
/// The request comes boxed: an async fn keeps a by-value argument twice (as passed
/// and as its local), which for the 408-byte request would sit in every request's
/// future.
pub async fn forward(state: AppState, req: Box<ForwardRequest>) -> Response {
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

/// What one pass over the candidates came to.
enum Pass {
    /// The answer for the client.
    Done(Response),
    /// Every target is out, or every attempt was refused, only for transient
    /// reasons: a combo may wait (until the given instant, or at once) and pass again.
    Transient {
        /// The answer if it does not.
        error: GatewayError,
        /// The earliest target comes back then; `None`: nothing is cooling.
        until: Option<UnixMillis>,
    },
}

/// The candidate loop, then the request's row for the log (its outcome and route).
async fn candidates(state: &GatewayState, req: &ForwardRequest) -> Response {
    let mut trace = Trace::new(req, &state.log, state.clock.now_wall());
    let response = candidate_passes(state, req, &mut trace).await;
    trace.record(&req.plan, &response);
    response
}

async fn candidate_passes(state: &GatewayState, req: &ForwardRequest, trace: &mut Trace) -> Response {
    let format = ErrorFormat::Client(req.format);
    let settings = state.resilience.settings();
    let mut combo_wait = ComboWait::for_request(&settings.combo_cooldown_wait, req.plan.combo.is_some());
    drop(settings);
    // The usage wall's wait budget spans all of this request's retries.
    let mut wall_wait = WaitWindow::default();
    loop {
        let (error, until) = match pass(state, req, &mut wall_wait, trace).await {
            Pass::Done(response) => return response,
            Pass::Transient { error, until } => (error, until),
        };
        let Some(waiting) = combo_wait.as_mut() else { return error.render(format) };
        let now = state.clock.now_wall();
        match until {
            Some(until) => match waiting.call(now, until) {
                WaitCall::Wait(delay) => {
                    tracing::info!(
                        event = "combo.cooldown_wait",
                        request_id = %req.request_id,
                        wait_ms = delay.as_millis() as u64,
                    );
                    trace.note(format!(
                        "every target was briefly rate limited: waited {} ms for the first to come back \
                         (comboCooldownWait)",
                        delay.as_millis()
                    ));
                    let _waiting = req.waits.enter();
                    state.sleeper.sleep(delay).await;
                }
                WaitCall::Refuse => return combo_refusal(req, now, until).render(format),
            },
            None if waiting.retry_now() => {}
            None => return error.render(format),
        }
    }
}

/// `429 combo_rate_limited`: the combo's targets are only briefly rate limited,
/// but for longer than `comboCooldownWait` lets a request wait.
fn combo_refusal(req: &ForwardRequest, now: UnixMillis, until: UnixMillis) -> GatewayError {
    let secs = switchyard_resilience::candidates::retry_after_secs(now, until);
    GatewayError::new(
        ErrorCode::ComboRateLimited,
        format!(
            "every target of combo '{}' is rate limited for {secs} s more, longer than comboCooldownWait \
             allows this request to wait; retry after {secs} s",
            req.body.model()
        ),
    )
    .with_retry_after(Some(u64::from(secs)))
}

/// Filters the candidates, then tries the eligible ones in strategy order, taking
/// free slots first and waiting for one only when every candidate is full.
async fn pass(
    state: &GatewayState,
    req: &ForwardRequest,
    wall_wait: &mut WaitWindow,
    trace: &mut Trace,
) -> Pass {
    let engine = &state.resilience.engine;
    let targets: &[Candidate] = &req.plan.candidates;
    let started = engine.now();
    let mut frontier = Frontier::new(state, req, started);
    let selection = frontier.first(engine, targets, trace);
    match selection.decision(started) {
        Decision::Proceed => {}
        Decision::AllCoolingDown { retry_after_secs, .. } => {
            let excluded = selection.excluded_views(targets, started);
            let error =
                excluded_error(req, ErrorCode::AllTargetsCoolingDown, &excluded, Some(retry_after_secs));
            return match combo_wait::transient_until(&selection) {
                Some(until) => Pass::Transient { error, until: Some(until) },
                None => Pass::Done(error.render(ErrorFormat::Client(req.format))),
            };
        }
        Decision::NoExecutableTargets => {
            let excluded = selection.excluded_views(targets, started);
            let error = excluded_error(req, ErrorCode::NoExecutableTargets, &excluded, None);
            return Pass::Done(error.render(ErrorFormat::Client(req.format)));
        }
    }
    let mut failures: Vec<Failure> = Vec::new();
    let mut order = flow::order(state, req, &selection.eligible);
    let mut session = SessionPass::prefer(state, req, &mut order);
    let leased = lease::restrict(state, req, &mut order);
    trace.ordered(0, &order, &selection.eligible);
    frontier.ranked(order.len());
    session.note_pins(req, trace);
    let leased = match leased {
        Ok(Some(connection)) => {
            trace.note(format!("exclusive lease: its connection '{connection}' goes first"));
            Some(connection)
        }
        Ok(None) => None,
        Err(error) => return Pass::Done(error.render(ErrorFormat::Client(req.format))),
    };
    let mut pending: VecDeque<usize> = order.into();
    loop {
        // Every candidate with room, in order; the full ones are kept for a wait.
        let mut saturated: Vec<usize> = Vec::new();
        // A leased connection that is only full is waited for: its owner's lease
        // moves to another connection when it is ruled out or fails, not when busy.
        let mut deferred: Vec<usize> = Vec::new();
        // The judged candidates first; the frontier judges more only when they are
        // used up, and a request waits only once every candidate is judged.
        while let Some(index) = pending.pop_front().or_else(|| {
            frontier.more(engine, targets, trace).and_then(|more| {
                pending.extend(more);
                pending.pop_front()
            })
        }) {
            let Some(candidate) = req.plan.candidates.get(index) else { continue };
            // A paced queue (the upstream asked a protected connection to pause) is
            // full until the pause ends.
            let full = candidate.connection.flow.paced_until(engine.now()).is_some();
            let slot = if full { None } else { candidate.connection.flow.try_enter(&candidate.model).ok() };
            match slot {
                Some(slot) => {
                    let view = PassView { started, failed: session.failed_indices() };
                    let result = dispatch(state, req, &view, index, slot, wall_wait).await;
                    if let Some(done) =
                        settle(state, req, (&mut session, trace), index, result, &mut failures)
                    {
                        return done;
                    }
                }
                None => {
                    saturated.push(index);
                    if leased.as_deref() == Some(&*candidate.connection.id) {
                        deferred.extend(pending.drain(..));
                    }
                }
            }
        }
        if saturated.is_empty() {
            break;
        }
        let (index, slot) = match flow::wait_for_slot(state, req, &saturated).await {
            Ok(granted) => {
                trace.note("every candidate was at its concurrency cap: waited in line for a slot");
                granted
            }
            Err(error) => return Pass::Done(error.render(ErrorFormat::Client(req.format))),
        };
        let view = PassView { started, failed: session.failed_indices() };
        let result = dispatch(state, req, &view, index, slot, wall_wait).await;
        if let Some(done) = settle(state, req, (&mut session, trace), index, result, &mut failures) {
            return done;
        }
        pending = saturated.into_iter().filter(|&i| i != index).chain(deferred).collect();
    }
    if failures.is_empty() {
        // Every eligible target was taken out between the filter and dispatch: by
        // the engine, or by leases taken meanwhile.
        let selection = engine.filter(targets);
        trace.excluded(&selection.excluded);
        if let Err(error) = lease::restrict(state, req, &mut selection.eligible.clone()) {
            return Pass::Done(error.render(ErrorFormat::Client(req.format)));
        }
        let now = engine.now();
        let excluded = selection.excluded_views(targets, now);
        let retry = match selection.decision(now) {
            Decision::AllCoolingDown { retry_after_secs, .. } => Some(retry_after_secs),
            _ => None,
        };
        let error = excluded_error(req, ErrorCode::AllTargetsCoolingDown, &excluded, retry.or(Some(1)));
        return match combo_wait::transient_until(&selection) {
            Some(until) => Pass::Transient { error, until: Some(until) },
            None => Pass::Done(error.render(ErrorFormat::Client(req.format))),
        };
    }
    let error = all_failed(req, &failures);
    if failures.iter().all(|f| combo_wait::is_transient(f.reason)) {
        // The refusals cooled their connections (or not, for a refusal that does
        // not cool): the next pass finds out how long to wait.
        let until = combo_wait::transient_until(&engine.filter(targets));
        return Pass::Transient { error, until };
    }
    Pass::Done(error.render(ErrorFormat::Client(req.format)))
}

/// What an attempt on `index` came to: the answer when it committed (noting a
/// successful one for session affinity), else its failure is kept.
fn settle(
    state: &GatewayState,
    req: &ForwardRequest,
    (session, trace): (&mut SessionPass, &mut Trace),
    index: usize,
    result: Option<AttemptResult>,
    failures: &mut Vec<Failure>,
) -> Option<Pass> {
    match result {
        Some(AttemptResult::Committed(response)) => {
            trace.served(index);
            if response.status().is_success() {
                session.served(state, req, index, state.clock.now_wall());
                if let Some(c) = req.plan.candidates.get(index) {
                    state.resilience.tests.note_success(&c.connection.id);
                }
            }
            return Some(Pass::Done(response));
        }
        // The gateway answered for this candidate without sending anything upstream.
        Some(AttemptResult::Refused(response)) => return Some(Pass::Done(response)),
        Some(AttemptResult::Failed(failure)) => {
            trace.failed(index, &failure.outcome);
            failures.push(failure);
        }
        None => {}
    }
    session.failed(index);
    None
}

/// What [`dispatch`] reads of its pass: when the pass started, and the candidates
/// that already failed in it.
struct PassView<'p> {
    started: UnixMillis,
    failed: &'p [usize],
}

/// Runs one attempt on `index` holding its flow `slot`. The engine re-checks the
/// target at dispatch: state may have changed since the filter (a breaker this
/// request opened does not turn its next candidate away), and a half-open breaker
/// hands out its single probe here. `None` when the target was taken out meanwhile
/// (the slot is returned), or when another owner's lease now holds it. A request
/// whose own lease ended meanwhile is answered without going upstream.
async fn dispatch(
    state: &GatewayState,
    req: &ForwardRequest,
    pass: &PassView<'_>,
    index: usize,
    slot: FlowPermit,
    wait: &mut WaitWindow,
) -> Option<AttemptResult> {
    let candidate = req.plan.candidates.get(index)?;
    let engine = &state.resilience.engine;
    // The engine first: a lease moves only for a dispatch that will happen.
    let permit = engine.begin_since(candidate.shared_target(), Some(pass.started)).ok()?;
    match lease::fence(state, req, candidate, pass.failed).await {
        Fence::Go => {}
        Fence::Skip => return None,
        Fence::Reject(error) => {
            return Some(AttemptResult::Refused(error.render(ErrorFormat::Client(req.format))));
        }
    }
    let pace = pace_budget_ms(&candidate.connection, &state.resilience.settings());
    let guard = AttemptGuard::new(engine.clone(), permit, slot, pace);
    Some(attempt::run(state, req, candidate, guard, wait).await)
}
