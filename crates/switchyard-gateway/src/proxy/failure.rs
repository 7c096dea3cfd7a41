//! What failed attempts leave behind: the per-attempt failure summary, the upstream
//! error body and its message, and the client errors built from them (all attempts
//! failed; every target excluded before dispatch).

use switchyard_types::ErrorCode;
use switchyard_types::resilience::{ErrorReason, ExcludedTargetView};

use super::forward::ForwardRequest;
use crate::errors::GatewayError;

/// One failed attempt, for the final error.
pub struct Failure {
    /// Connection id.
    pub connection: String,
    /// Upstream model.
    pub model: String,
    /// What happened, for the summary.
    pub outcome: String,
    /// The status the client would hear (after restatement).
    pub status: Option<u16>,
    /// The engine's reason.
    pub reason: ErrorReason,
    /// The attempt ran out of `executionMaxWaitMs` (no verdict was recorded).
    pub execution_timeout: bool,
    /// When to retry, from the verdict's hint (header seconds or date, body text,
    /// restatement default, quota window).
    pub retry_after_secs: Option<u64>,
}

/// `503 all_targets_cooling_down` / `404 no_executable_targets` with diagnostics.
pub(super) fn excluded_error(
    req: &ForwardRequest,
    code: ErrorCode,
    excluded: &[ExcludedTargetView],
    retry_after_secs: Option<u32>,
) -> GatewayError {
    excluded_targets_error(req.body.model(), req.plan.candidates.len(), code, excluded, retry_after_secs)
}

/// [`excluded_error`] for `model` resolved to `pool_size` candidates (also
/// answered by a lease acquire that finds every connection ruled out).
pub(crate) fn excluded_targets_error(
    model: &str,
    pool_size: usize,
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
            "every target of model '{model}' is cooling down; retry after {} s: {reasons}",
            retry_after_secs.unwrap_or(1)
        ),
        _ => format!("no target of model '{model}' can run now: {reasons}"),
    };
    let diagnostics = serde_json::json!({
        "poolSize": pool_size,
        "attempted": 0,
        "excluded": excluded,
        "terminalReason": code.as_str(),
    });
    GatewayError::new(code, message)
        .with_retry_after(retry_after_secs.map(u64::from))
        .with_diagnostics(diagnostics)
}

/// The upstream's own error message, if its body says one, shortened.
pub fn error_detail(body: &str) -> Option<String> {
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

pub(super) fn all_failed(req: &ForwardRequest, failures: &[Failure]) -> GatewayError {
    let summary = failures
        .iter()
        .map(|f| format!("{} ({}): {}", f.connection, f.model, f.outcome))
        .collect::<Vec<_>>()
        .join("; ");
    let all_rate_limited = !failures.is_empty() && failures.iter().all(|f| f.status == Some(429));
    // A model no target has is the client's answer only once every target said so.
    let all_not_found = !failures.is_empty() && failures.iter().all(|f| f.reason == ErrorReason::NotFound);
    let all_execution_timeouts = !failures.is_empty() && failures.iter().all(|f| f.execution_timeout);
    let code = if all_execution_timeouts {
        ErrorCode::RateLimitExecutionTimeout
    } else if all_rate_limited {
        ErrorCode::AllAttemptsRateLimited
    } else if all_not_found {
        ErrorCode::ModelNotFound
    } else {
        ErrorCode::AllAttemptsFailed
    };
    let retry =
        if all_rate_limited { failures.iter().filter_map(|f| f.retry_after_secs).min() } else { None };
    GatewayError::new(
        code,
        format!("all {} attempt(s) for model '{}' failed: {summary}", failures.len(), req.body.model()),
    )
    .with_retry_after(retry)
}
