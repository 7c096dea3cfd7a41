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
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use switchyard_resilience::{Attempt, AttemptOutcome, Decision, Target, TransportFailure};
use switchyard_types::resilience::ExcludedTargetView;
use switchyard_types::{ClientFormat, ErrorCode};

use super::body::ClientBody;
use super::headers::upstream_headers;
use super::relay::{Relay, RelayParts, Settle, UpstreamStream};
use crate::errors::{ErrorFormat, GatewayError};
use crate::request_log::AttemptLog;
use crate::routing::{Candidate, CandidatePlan, UpstreamEndpoint};
use crate::state::GatewayState;
use crate::store::AttemptLogRow;

/// Largest part of a failed attempt's body read for the error summary.
const ERROR_BODY_LIMIT: usize = 16 * 1024;

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

/// One failed attempt, for the final error.
struct Failure {
    connection: String,
    model: String,
    outcome: String,
    status: Option<u16>,
    retry_after_secs: Option<u64>,
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
    for &index in &selection.eligible {
        let (Some(candidate), Some(target)) = (req.plan.candidates.get(index), targets.get(index)) else {
            continue;
        };
        // Re-checked at dispatch: state may have changed since the filter, and a
        // half-open breaker hands out its single probe here.
        let Ok(permit) = engine.begin(*target) else { continue };
        let mut permit = Some(permit);
        match attempt(state, &req, candidate, &mut permit).await {
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

/// `503 all_targets_cooling_down` / `404 no_executable_targets` with diagnostics.
fn excluded_error(
    req: &ForwardRequest<'_>,
    code: ErrorCode,
    excluded: &[ExcludedTargetView],
    retry_after_secs: Option<u32>,
) -> GatewayError {
    let reasons = excluded
        .iter()
        .map(|e| {
            let left = e.seconds_left.map_or_else(|| "until reset".to_owned(), |s| format!("{s} s"));
            let reason = serde_json::to_value(e.reason).ok().and_then(|v| v.as_str().map(str::to_owned));
            format!("{}/{} on {}: {} ({left})", e.provider, e.model, e.connection, reason.unwrap_or_default())
        })
        .collect::<Vec<_>>()
        .join("; ");
    let message = match code {
        ErrorCode::AllTargetsCoolingDown => format!(
            "every target of model '{}' is cooling down; retry after {} s: {reasons}",
            req.body.model(),
            retry_after_secs.unwrap_or(1)
        ),
        _ => format!("no target of model '{}' can run now: {reasons}", req.body.model()),
    };
    let diagnostics = serde_json::json!({
        "poolSize": req.plan.candidates.len(),
        "attempted": 0,
        "excluded": excluded,
        "terminalReason": code.as_str(),
    });
    GatewayError::new(code, message)
        .with_retry_after(retry_after_secs.map(u64::from))
        .with_diagnostics(diagnostics)
}

/// One attempt. On commit the engine permit moves into the relay; on failure it stays
/// in `permit` for the caller to record.
async fn attempt(
    state: &GatewayState,
    req: &ForwardRequest<'_>,
    candidate: &Candidate,
    permit: &mut Option<Attempt>,
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
    let Some(url) = conn.url(req.endpoint, req.query) else {
        let outcome = format!("base URL '{}' is not a valid URL", conn.base_url);
        return fail(&mut log, transport(TransportFailure::Connect), "config", outcome, None);
    };
    let send = state
        .http
        .post(url)
        .headers(upstream_headers(req.headers, conn))
        .body(req.body.with_model(&candidate.model))
        .send();
    let response = match tokio::time::timeout_at(deadline, send).await {
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

/// `Retry-After` in seconds, when given as a number (dates are handled by the
/// resilience engine's hint parser).
fn retry_after_secs(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<u64>().ok()
}

/// A failed attempt's body (its first part), as text for the classifier.
async fn read_error_body(response: reqwest::Response, budget: Duration) -> String {
    let mut stream = response.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let read = async {
        while let Some(Ok(chunk)) = stream.next().await {
            buf.extend_from_slice(&chunk);
            if buf.len() >= ERROR_BODY_LIMIT {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(budget, read).await;
    buf.truncate(ERROR_BODY_LIMIT);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The upstream's own error message, if its body says one, shortened.
fn error_detail(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let message = value
        .pointer("/error/message")
        .or_else(|| value.pointer("/message"))
        .or_else(|| value.pointer("/error"))
        .and_then(|m| m.as_str())?;
    let mut short: String = message.chars().take(200).collect();
    if short.len() < message.len() {
        short.push('…');
    }
    Some(short)
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn all_failed(req: &ForwardRequest<'_>, failures: &[Failure]) -> GatewayError {
    let summary = failures
        .iter()
        .map(|f| format!("{} ({}): {}", f.connection, f.model, f.outcome))
        .collect::<Vec<_>>()
        .join("; ");
    let all_rate_limited = !failures.is_empty() && failures.iter().all(|f| f.status == Some(429));
    let code =
        if all_rate_limited { ErrorCode::AllAttemptsRateLimited } else { ErrorCode::AllAttemptsFailed };
    let retry =
        if all_rate_limited { failures.iter().filter_map(|f| f.retry_after_secs).min() } else { None };
    GatewayError::new(
        code,
        format!("all {} attempt(s) for model '{}' failed: {summary}", failures.len(), req.body.model()),
    )
    .with_retry_after(retry)
}
