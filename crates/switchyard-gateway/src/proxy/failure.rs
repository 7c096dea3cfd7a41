//! What failed attempts leave behind: the per-attempt failure summary, the upstream
//! error body and its message, and the client errors built from them (all attempts
//! failed; every target excluded before dispatch).

use std::time::Duration;

use futures_util::StreamExt;
use http::{HeaderMap, header};
use switchyard_types::ErrorCode;
use switchyard_types::resilience::ExcludedTargetView;

use super::forward::ForwardRequest;
use crate::errors::GatewayError;

/// Largest part of a failed attempt's body read for the error summary.
const ERROR_BODY_LIMIT: usize = 16 * 1024;
/// How much of a 400 body is read to check it against the restatement registry.
pub(super) const RESTATE_PEEK_LIMIT: usize = 64 * 1024;

/// Reads from `stream` until `limit` bytes, its end, or `budget`; the rest stays in
/// the stream for the caller to relay.
pub(super) async fn read_prefix(
    stream: &mut super::relay::UpstreamStream,
    limit: usize,
    budget: Duration,
) -> bytes::Bytes {
    let mut buf = bytes::BytesMut::new();
    let read = async {
        while buf.len() < limit {
            match stream.next().await {
                Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(budget, read).await;
    buf.freeze()
}

/// One failed attempt, for the final error.
pub(super) struct Failure {
    pub(super) connection: String,
    pub(super) model: String,
    pub(super) outcome: String,
    pub(super) status: Option<u16>,
    pub(super) retry_after_secs: Option<u64>,
}

/// `503 all_targets_cooling_down` / `404 no_executable_targets` with diagnostics.
pub(super) fn excluded_error(
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

/// `Retry-After` in seconds, when given as a number (dates are handled by the
/// resilience engine's hint parser).
pub(super) fn retry_after_secs(headers: &HeaderMap) -> Option<u64> {
    headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<u64>().ok()
}

/// A failed attempt's body (its first part), as text for the classifier.
pub(super) async fn read_error_body(response: reqwest::Response, budget: Duration) -> String {
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
pub(super) fn error_detail(body: &str) -> Option<String> {
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

pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

pub(super) fn all_failed(req: &ForwardRequest<'_>, failures: &[Failure]) -> GatewayError {
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
