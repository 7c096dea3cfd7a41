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
use switchyard_types::{ClientFormat, ErrorCode};

use super::body::ClientBody;
use super::headers::upstream_headers;
use super::relay::{Relay, UpstreamStream};
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

/// What one attempt produced.
enum AttemptResult {
    Committed(Response),
    Failed(Failure),
}

/// Forwards the request, failing over across the plan's candidates.
pub async fn forward(state: &GatewayState, req: ForwardRequest<'_>) -> Response {
    let mut failures: Vec<Failure> = Vec::new();
    for candidate in &req.plan.candidates {
        match attempt(state, &req, candidate).await {
            AttemptResult::Committed(response) => return response,
            AttemptResult::Failed(failure) => {
                tracing::info!(
                    event = "attempt.failed",
                    request_id = %req.request_id,
                    connection = %failure.connection,
                    outcome = %failure.outcome,
                );
                failures.push(failure);
            }
        }
    }
    all_failed(&req, &failures).render(ErrorFormat::Client(req.format))
}

async fn attempt(state: &GatewayState, req: &ForwardRequest<'_>, candidate: &Candidate) -> AttemptResult {
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
    let fail =
        |log: &mut AttemptLog, status: Option<u16>, kind: &str, outcome: String, retry: Option<u64>| {
            log.finish(status, 0, Some(kind.to_owned()));
            AttemptResult::Failed(Failure {
                connection: conn.id.clone(),
                model: candidate.model.clone(),
                outcome,
                status,
                retry_after_secs: retry,
            })
        };

    let deadline = tokio::time::Instant::now() + state.options.start_timeout;
    let send = state
        .http
        .post(conn.url(req.endpoint, req.query))
        .headers(upstream_headers(req.headers, conn))
        .body(req.body.with_model(&candidate.model))
        .send();
    let response = match tokio::time::timeout_at(deadline, send).await {
        Err(_) => {
            let secs = state.options.start_timeout.as_secs();
            return fail(&mut log, None, "timeout", format!("no response within {secs} s"), None);
        }
        Ok(Err(e)) if e.is_connect() => {
            return fail(&mut log, None, "connect", "connection failed".into(), None);
        }
        Ok(Err(e)) if e.is_timeout() => {
            return fail(&mut log, None, "timeout", "timed out".into(), None);
        }
        Ok(Err(e)) => {
            return fail(&mut log, None, "transport", format!("transport error: {}", error_chain(&e)), None);
        }
        Ok(Ok(r)) => r,
    };

    let status = response.status().as_u16();
    log.set_status(status);
    if fails_over(status) {
        let retry = retry_after_secs(response.headers());
        let detail = read_error_detail(response, state.options.error_body_timeout).await;
        let outcome = match detail {
            Some(d) => format!("HTTP {status}: {d}"),
            None => format!("HTTP {status}"),
        };
        return fail(&mut log, Some(status), &format!("http_{status}"), outcome, retry);
    }

    let sse = is_event_stream(response.headers());
    let mut client_headers = relay_headers(response.headers());
    insert_header(&mut client_headers, "x-switchyard-request-id", &req.request_id);
    insert_header(&mut client_headers, "x-switchyard-connection", &conn.id);
    let mut stream: UpstreamStream = Box::pin(response.bytes_stream());

    // Wait for the first body byte before committing: until then a broken upstream
    // can still be replaced by the next candidate without the client noticing.
    let first = match tokio::time::timeout_at(deadline, stream.next()).await {
        Err(_) => {
            let secs = state.options.start_timeout.as_secs();
            return fail(&mut log, Some(status), "timeout", format!("no body within {secs} s"), None);
        }
        Ok(Some(Err(e))) => {
            return fail(
                &mut log,
                Some(status),
                "stream_interrupted",
                format!("body failed before its first byte: {}", error_chain(&e)),
                None,
            );
        }
        Ok(None) if sse => {
            return fail(
                &mut log,
                Some(status),
                "empty_stream",
                "stream ended before its first event".into(),
                None,
            );
        }
        Ok(None) => None,
        Ok(Some(Ok(chunk))) => Some(chunk),
    };

    let relay = Relay::new(stream, first, sse, req.format, log, status);
    let mut builder =
        Response::builder().status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY));
    if let Some(h) = builder.headers_mut() {
        *h = client_headers;
    }
    match builder.body(Body::from_stream(relay)) {
        Ok(r) => AttemptResult::Committed(r),
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

/// Upstream response headers worth relaying: all but hop-by-hop headers, framing
/// (the body is re-chunked), and cookies.
fn relay_headers(upstream: &HeaderMap) -> HeaderMap {
    const DROP: [&str; 10] = [
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "set-cookie",
    ];
    let mut out = HeaderMap::with_capacity(upstream.len() + 2);
    for (name, value) in upstream {
        if !DROP.contains(&name.as_str()) {
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

/// The upstream's own error message, if its body says one, shortened.
async fn read_error_detail(response: reqwest::Response, budget: Duration) -> Option<String> {
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
    let value: serde_json::Value = serde_json::from_slice(&buf).ok()?;
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
