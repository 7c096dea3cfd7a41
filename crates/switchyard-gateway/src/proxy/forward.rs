//! The attempt loop: try each candidate in order, fail over while nothing has been
//! sent to the client, and commit to the first usable upstream response.
//!
//! Failover happens on a connect error, a timeout before the first body byte, an
//! upstream status that belongs to the account or the upstream rather than to the
//! request (401, 402, 403, 408, 429, 5xx), or a stream that breaks before its first
//! byte. Any other status (400, 404, 413, 422, ...) describes the request itself and
//! is relayed as-is. Once a body byte has reached the client there is no failover:
//! the client retries the whole request itself.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use switchyard_resilience::classify::restate::{BUILTIN_RULES, restate};
use switchyard_resilience::claude_wall::WaitWindow;
use switchyard_resilience::{Attempt, AttemptOutcome, Decision, Target, TransportFailure};
use switchyard_types::{ClientFormat, ErrorCode};

use super::body::ClientBody;
use super::claude_wall::{WallAction, WallHook};
use super::failure::{
    Failure, RESTATE_PEEK_LIMIT, all_failed, error_chain, error_detail, excluded_error, read_error_body,
    read_prefix, retry_after_secs,
};
use super::headers::upstream_headers;
use super::relay::{Relay, RelayParts, Settle, UpstreamStream};
use crate::errors::{ErrorFormat, GatewayError};
use crate::oauth::{RefreshError, needs_refresh};
use crate::request_log::AttemptLog;
use crate::routing::{Candidate, CandidatePlan, UpstreamEndpoint};
use crate::state::GatewayState;
use crate::store::AttemptLogRow;

/// A client request ready to forward.
pub struct ForwardRequest<'a> {
    /// The client's wire format.
    pub format: ClientFormat,
    /// The upstream endpoint family.
    pub endpoint: UpstreamEndpoint,
    /// The client route, for the log.
    pub route: &'static str,
    /// The client's raw query string.
    pub query: Option<&'a str>,
    /// The client's headers.
    pub headers: &'a HeaderMap,
    /// The validated body.
    pub body: ClientBody,
    /// The candidates.
    pub plan: CandidatePlan,
    /// The client key's id.
    pub api_key_id: Option<String>,
    /// Id shared by the attempts.
    pub request_id: String,
}

/// What the upstream did, for the resilience engine's classifier.
enum Observed {
    Http { status: u16, headers: HeaderMap, body: String },
    Transport(TransportFailure),
}

/// What one attempt produced.
enum AttemptResult {
    /// Relay this response (the relay settles the engine attempt when it ends).
    Committed(Response),
    /// Fail over; the caller records the outcome on the engine.
    Failed(Failure, Observed),
}

/// Forwards the request: filters the candidates through the resilience engine,
/// then tries the eligible ones in order, recording every outcome.
pub async fn forward(state: &GatewayState, req: ForwardRequest<'_>) -> Response {
    let engine = &state.resilience.engine;
    let targets: Vec<Target<'_>> = req
        .plan
        .candidates
        .iter()
        .map(|c| Target { provider: &c.connection.provider, connection: &c.connection.id, model: &c.model })
        .collect();
    let selection = engine.filter(&targets);
    let now = engine.now();
    let format = ErrorFormat::Client(req.format);
    match selection.decision(now) {
        Decision::Proceed => {}
        Decision::AllCoolingDown { retry_after_secs, .. } => {
            let excluded = selection.excluded_views(&targets, now);
            return excluded_error(&req, ErrorCode::AllTargetsCoolingDown, &excluded, Some(retry_after_secs))
                .render(format);
        }
        Decision::NoExecutableTargets => {
            let excluded = selection.excluded_views(&targets, now);
            return excluded_error(&req, ErrorCode::NoExecutableTargets, &excluded, None).render(format);
        }
    }
    let mut failures: Vec<Failure> = Vec::new();
    // The usage wall's wait budget spans all of this request's retries.
    let mut wait = WaitWindow::default();
    for &index in &selection.eligible {
        let (Some(candidate), Some(target)) = (req.plan.candidates.get(index), targets.get(index)) else {
            continue;
        };
        // Re-checked at dispatch: state may have changed since the filter, and a
        // half-open breaker hands out its single probe here.
        let Ok(permit) = engine.begin(*target) else { continue };
        let mut permit = Some(permit);
        match attempt(state, &req, candidate, &mut permit, &mut wait).await {
            // The relay settles the attempt on the engine when the body ends.
            AttemptResult::Committed(response) => return response,
            AttemptResult::Failed(failure, observed) => {
                let Some(permit) = permit.take() else { continue };
                let recorded = match &observed {
                    Observed::Http { status, headers, body } => engine
                        .record_failure(permit, &AttemptOutcome::Http { status: *status, headers, body }),
                    Observed::Transport(t) => engine.record_failure(permit, &AttemptOutcome::Transport(*t)),
                };
                tracing::info!(
                    event = "attempt.failed",
                    request_id = %req.request_id,
                    connection = %failure.connection,
                    outcome = %failure.outcome,
                    reason = ?recorded.verdict.reason,
                );
                let mut failure = failure;
                if recorded.verdict.restated.is_some() {
                    // The client hears the restated status (e.g. 429), not the upstream's.
                    failure.status = recorded.verdict.status;
                    let hint = recorded.verdict.restated.map(|r| u64::from(r.default_retry_after_ms / 1000));
                    failure.retry_after_secs = failure.retry_after_secs.or(hint);
                }
                failures.push(failure);
            }
        }
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
        return excluded_error(&req, ErrorCode::AllTargetsCoolingDown, &excluded, retry.or(Some(1)))
            .render(format);
    }
    all_failed(&req, &failures).render(format)
}

/// One attempt. On commit the engine permit moves into the relay; on failure it stays
/// in `permit` for the caller to record.
async fn attempt(
    state: &GatewayState,
    req: &ForwardRequest<'_>,
    candidate: &Candidate,
    permit: &mut Option<Attempt>,
    wait: &mut WaitWindow,
) -> AttemptResult {
    let conn = &candidate.connection;
    let mut log = AttemptLog::start(
        &state.log,
        AttemptLogRow {
            at: state.clock.now_wall(),
            request_id: req.request_id.clone(),
            api_key_id: req.api_key_id.clone(),
            route: req.route,
            provider: conn.provider.clone(),
            connection_id: conn.id.clone(),
            model: candidate.model.clone(),
            status: None,
            latency_ms: 0,
            bytes: 0,
            error_kind: None,
        },
    );
    let fail = |log: &mut AttemptLog, observed: Observed, kind: &str, outcome: String, retry: Option<u64>| {
        let status = match &observed {
            Observed::Http { status, .. } => Some(*status),
            Observed::Transport(_) => None,
        };
        log.finish(status.or(log.status()), 0, Some(kind.to_owned()));
        let failure = Failure {
            connection: conn.id.clone(),
            model: candidate.model.clone(),
            outcome,
            status,
            retry_after_secs: retry,
        };
        AttemptResult::Failed(failure, observed)
    };
    let transport = Observed::Transport;

    let deadline = tokio::time::Instant::now() + state.options.start_timeout;
    // OAuth: refresh a token about to expire before using it, and once after a 401.
    let mut sender = conn.clone();
    if needs_refresh(&sender, state.clock.now_wall()) {
        match state.refresher.refresh(&sender, &state.routing, &state.management).await {
            Ok(fresh) => sender = fresh,
            Err(e) => return fail(&mut log, refresh_failed(&e), "oauth_refresh", e.0, None),
        }
    }
    let mut refreshed_after_401 = false;
    let wall_hook = WallHook::for_connection(conn);
    let response = loop {
        let Some(url) = sender.url(req.endpoint, req.query) else {
            let outcome = format!("base URL '{}' is not a valid URL", conn.base_url);
            return fail(&mut log, transport(TransportFailure::Connect), "config", outcome, None);
        };
        let mut headers = upstream_headers(req.headers, &sender);
        let sent_slow =
            wall_hook.as_ref().is_some_and(|h| h.stamp(&state.claude_wall, &sender, &mut headers, state));
        let send = state.http.post(url).headers(headers).body(req.body.with_model(&candidate.model)).send();
        let sent = tokio::time::timeout_at(deadline, send).await;
        if let Ok(Ok(r)) = &sent
            && r.status() == StatusCode::UNAUTHORIZED
            && sender.oauth.is_some()
            && !refreshed_after_401
        {
            refreshed_after_401 = true;
            match state.refresher.refresh(&sender, &state.routing, &state.management).await {
                Ok(fresh) => {
                    sender = fresh;
                    continue;
                }
                Err(e) => return fail(&mut log, refresh_failed(&e), "oauth_refresh", e.0, None),
            }
        }
        // The Claude usage wall sees every final response of a Claude OAuth attempt.
        let action = match (&wall_hook, &sent) {
            (Some(hook), Ok(Ok(r))) => {
                hook.after_response(state, &sender, r, sent_slow, wait, deadline).await
            }
            _ => WallAction::Proceed,
        };
        match action {
            WallAction::Proceed => break sent,
            WallAction::Retry(delay) => {
                drop(sent);
                if !delay.is_zero() {
                    state.sleeper.sleep(delay).await;
                }
            }
        }
    };
    let response = match response {
        Err(_) => {
            let secs = state.options.start_timeout.as_secs();
            return fail(
                &mut log,
                transport(TransportFailure::Timeout),
                "timeout",
                format!("no response within {secs} s"),
                None,
            );
        }
        Ok(Err(e)) if e.is_connect() => {
            return fail(
                &mut log,
                transport(TransportFailure::Connect),
                "connect",
                "connection failed".into(),
                None,
            );
        }
        Ok(Err(e)) if e.is_timeout() => {
            return fail(&mut log, transport(TransportFailure::Timeout), "timeout", "timed out".into(), None);
        }
        Ok(Err(e)) => {
            return fail(
                &mut log,
                transport(TransportFailure::Connect),
                "transport",
                format!("transport error: {}", error_chain(&e)),
                None,
            );
        }
        Ok(Ok(r)) => r,
    };

    let status = response.status().as_u16();
    log.set_status(status);
    // A 400 may be a misreported quota exhaustion (SPEC 4.8): read it (bounded) and
    // let the restatement registry decide; when it stands, relay what was read.
    let response = if status == 400 {
        let headers = response.headers().clone();
        let mut stream: UpstreamStream = Box::pin(response.bytes_stream());
        let prefix = read_prefix(&mut stream, RESTATE_PEEK_LIMIT, state.options.error_body_timeout).await;
        let text = String::from_utf8_lossy(&prefix).into_owned();
        if let Some(r) = restate(BUILTIN_RULES, &conn.provider, status, &text.to_ascii_lowercase()) {
            let detail = error_detail(&text).unwrap_or_default();
            let outcome = format!("HTTP {status} (restated as {}): {detail}", r.status);
            let kind = format!("http_{}", r.status);
            let retry = Some(u64::from(r.default_retry_after_ms / 1000));
            let observed = Observed::Http { status, headers, body: text };
            return fail(&mut log, observed, &kind, outcome, retry);
        }
        return relay_request_error(req, conn, log, permit, status, &headers, prefix, stream);
    } else {
        response
    };
    if fails_over(status) {
        let retry = retry_after_secs(response.headers());
        let headers = response.headers().clone();
        let body = read_error_body(response, state.options.error_body_timeout).await;
        let outcome = match error_detail(&body) {
            Some(d) => format!("HTTP {status}: {d}"),
            None => format!("HTTP {status}"),
        };
        let observed = Observed::Http { status, headers, body };
        return fail(&mut log, observed, &format!("http_{status}"), outcome, retry);
    }

    let sse = is_event_stream(response.headers());
    let mut client_headers = relay_headers(response.headers(), sse);
    insert_header(&mut client_headers, "x-switchyard-request-id", &req.request_id);
    insert_header(&mut client_headers, "x-switchyard-connection", &conn.id);
    let mut stream: UpstreamStream = Box::pin(response.bytes_stream());

    // Wait for the first body byte before committing: until then a broken upstream
    // can still be replaced by the next candidate without the client noticing.
    let first = match tokio::time::timeout_at(deadline, stream.next()).await {
        Err(_) => {
            let secs = state.options.start_timeout.as_secs();
            return fail(
                &mut log,
                transport(TransportFailure::Timeout),
                "timeout",
                format!("no body within {secs} s"),
                None,
            );
        }
        Ok(Some(Err(e))) => {
            return fail(
                &mut log,
                transport(TransportFailure::BrokenBeforeFirstByte),
                "stream_interrupted",
                format!("body failed before its first byte: {}", error_chain(&e)),
                None,
            );
        }
        Ok(None) if sse => {
            return fail(
                &mut log,
                transport(TransportFailure::BrokenBeforeFirstByte),
                "empty_stream",
                "stream ended before its first event".into(),
                None,
            );
        }
        Ok(None) => None,
        Ok(Some(Ok(chunk))) => Some(chunk),
    };

    let expected = client_headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let Some(permit) = permit.take() else {
        let e = GatewayError::internal("attempt permit missing");
        return AttemptResult::Committed(e.render(ErrorFormat::Client(req.format)));
    };
    let stall_ms = state.resilience.settings().stream_recovery.stall_budget_ms;
    let parts = RelayParts {
        first,
        sse,
        format: req.format,
        log,
        settle: Settle::new(state.resilience.engine.clone(), permit, status < 400),
        status,
        expected,
        stall_budget: Duration::from_millis(u64::from(stall_ms)),
    };
    let relay = Relay::new(stream, parts);
    let mut builder =
        Response::builder().status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY));
    if let Some(h) = builder.headers_mut() {
        *h = client_headers;
    }
    match builder.body(Body::from_stream(relay)) {
        Ok(response) => AttemptResult::Committed(response),
        Err(e) => AttemptResult::Committed(GatewayError::internal(e).render(ErrorFormat::Client(req.format))),
    }
}

/// A failed token refresh, as the engine sees it: an auth failure of the connection.
fn refresh_failed(e: &RefreshError) -> Observed {
    Observed::Http { status: 401, headers: HeaderMap::new(), body: format!("token refresh failed: {}", e.0) }
}

/// Relays a request-shaped error (its already-read prefix, then the rest) as-is.
#[expect(clippy::too_many_arguments, reason = "one call site; the parts of one attempt")]
fn relay_request_error(
    req: &ForwardRequest<'_>,
    conn: &crate::routing::Connection,
    mut log: AttemptLog,
    permit: &mut Option<Attempt>,
    status: u16,
    headers: &HeaderMap,
    prefix: Bytes,
    rest: UpstreamStream,
) -> AttemptResult {
    // A request-shaped error says nothing about the connection: release the permit.
    drop(permit.take());
    log.finish(Some(status), prefix.len() as u64, None);
    let mut client_headers = relay_headers(headers, false);
    insert_header(&mut client_headers, "x-switchyard-request-id", &req.request_id);
    insert_header(&mut client_headers, "x-switchyard-connection", &conn.id);
    let body = futures_util::stream::once(async move { Ok::<Bytes, reqwest::Error>(prefix) })
        .chain(rest)
        .map(|r| r.map_err(std::io::Error::other));
    let mut builder =
        Response::builder().status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST));
    if let Some(h) = builder.headers_mut() {
        *h = client_headers;
    }
    match builder.body(Body::from_stream(body)) {
        Ok(response) => AttemptResult::Committed(response),
        Err(e) => AttemptResult::Committed(GatewayError::internal(e).render(ErrorFormat::Client(req.format))),
    }
}

/// Statuses that describe the account or the upstream, not the request.
fn fails_over(status: u16) -> bool {
    matches!(status, 401 | 402 | 403 | 408 | 429) || status >= 500
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Upstream response headers worth relaying: all but hop-by-hop headers and cookies.
/// `content-length` is kept for plain bodies (relayed byte for byte) and dropped for
/// SSE, where an error event may be appended.
fn relay_headers(upstream: &HeaderMap, sse: bool) -> HeaderMap {
    const DROP: [&str; 9] = [
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "set-cookie",
    ];
    let mut out = HeaderMap::with_capacity(upstream.len() + 2);
    for (name, value) in upstream {
        let dropped = DROP.contains(&name.as_str()) || (sse && name == header::CONTENT_LENGTH);
        if !dropped {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

fn insert_header(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::try_from(value) {
        headers.insert(name, v);
    }
}
