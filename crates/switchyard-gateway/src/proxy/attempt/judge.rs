//! Stage 3: an answer from 400 up. Its first part (bounded in size and time) is read
//! and the engine judges status, headers and text — restatement, operator rules,
//! built-in markers, status table — for every status, 400/404/422 included. The
//! gateway obeys: relay the answer as-is (what was read, then the rest), or fail
//! over. The engine has already applied the verdict's cooldown, lockout and breaker
//! count. The text is redacted first ([`crate::proxy::redact`]): a credential the
//! upstream echoes reaches neither the client nor the engine's `lastError`.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http::StatusCode;
use switchyard_resilience::AttemptOutcome;
use switchyard_resilience::classify::Action;

use super::{AttemptCx, AttemptResult};
use crate::errors::{ErrorFormat, GatewayError};
use crate::proxy::failure::{Failure, error_detail};
use crate::proxy::hop::{HopError, HopResponse, UpstreamStream, body_stream};
use crate::proxy::redact::Redactor;

/// How much of an error answer is read for the verdict.
pub const ERROR_PEEK_LIMIT: usize = 64 * 1024;

/// Judges an error answer and obeys the verdict.
pub(super) async fn error_answer(mut cx: Box<AttemptCx<'_>>, response: HopResponse) -> AttemptResult {
    let (parts, body) = response.into_parts();
    let (status, headers) = (parts.status.as_u16(), parts.headers);
    let mut stream = body_stream(body);
    let budget = cx.state.options.error_body_timeout;
    let raw = read_prefix(&cx, &mut stream, budget).await;
    // The upstream may echo a credential: nothing below sees it (the client, the
    // summary, the engine's `lastError`).
    let redactor = Redactor::for_connection(&cx.candidate.connection);
    let text = redactor.redact(&String::from_utf8_lossy(&raw)).into_owned();
    let redacted = text.as_bytes() != raw.as_ref();
    let prefix = if redacted { Bytes::from(text.clone()) } else { raw };
    let Some(recorded) = cx.guard.fail(&AttemptOutcome::Http { status, headers: &headers, body: &text })
    else {
        let e = GatewayError::internal("attempt judged twice");
        return AttemptResult::Committed(e.render(ErrorFormat::Client(cx.req.format)));
    };
    let verdict = recorded.verdict;
    if verdict.action == Action::Relay {
        cx.log.finish(Some(status), prefix.len() as u64, None);
        return relay_as_is(&cx, status, headers, prefix, stream, redacted);
    }
    let shown = verdict.status.unwrap_or(status);
    let detail = error_detail(&text);
    let outcome = match (verdict.restated, detail) {
        (Some(_), Some(d)) => format!("HTTP {status} (restated as {shown}): {d}"),
        (Some(_), None) => format!("HTTP {status} (restated as {shown})"),
        (None, Some(d)) => format!("HTTP {status}: {d}"),
        (None, None) => format!("HTTP {status}"),
    };
    cx.log.finish(Some(status), 0, Some(format!("http_{shown}")));
    tracing::info!(
        event = "attempt.failed",
        request_id = %cx.req.request_id,
        connection = %cx.candidate.connection.id,
        model = %cx.candidate.model,
        status,
        reason = ?verdict.reason,
        rule = ?verdict.rule,
    );
    let now = cx.state.clock.now_wall();
    AttemptResult::Failed(Failure {
        connection: cx.candidate.connection.id.to_string(),
        model: cx.candidate.model.to_string(),
        outcome,
        status: Some(shown),
        reason: verdict.reason,
        execution_timeout: false,
        retry_after_secs: verdict.hint.map(|h| h.remaining_ms(now).div_ceil(1_000)),
    })
}

/// Reads up to [`ERROR_PEEK_LIMIT`] bytes, the end, or `budget` of the gateway's
/// clock; the rest stays in the stream.
async fn read_prefix(cx: &AttemptCx<'_>, stream: &mut UpstreamStream, budget: Duration) -> Bytes {
    let mut buf = BytesMut::new();
    let read = async {
        while buf.len() < ERROR_PEEK_LIMIT {
            match stream.next().await {
                Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                _ => break,
            }
        }
    };
    tokio::select! {
        () = read => {}
        () = cx.state.clock.sleep(budget) => {}
    }
    buf.freeze()
}

/// Relays a request-shaped error (its already-read prefix, then the rest) as-is.
fn relay_as_is(
    cx: &AttemptCx<'_>,
    status: u16,
    headers: http::HeaderMap,
    prefix: Bytes,
    rest: UpstreamStream,
    redacted: bool,
) -> AttemptResult {
    let mut client_headers = super::commit::client_headers(cx, headers, false);
    if redacted {
        // The redacted prefix changed the body's length.
        client_headers.remove(http::header::CONTENT_LENGTH);
    }
    // A translated attempt answers in the client's error envelope (the prefix holds
    // any error body worth reading; the rest is dropped).
    let (prefix, rest): (Bytes, UpstreamStream) = match cx.translation {
        Some(t) => {
            let body = t.error(status, &prefix);
            client_headers
                .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
            client_headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(body.len()));
            (body, Box::pin(futures_util::stream::empty()))
        }
        None => (prefix, rest),
    };
    let body = futures_util::stream::once(async move { Ok::<Bytes, HopError>(prefix) })
        .chain(rest)
        .map(|r| r.map_err(std::io::Error::other));
    let mut builder =
        Response::builder().status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST));
    if let Some(h) = builder.headers_mut() {
        *h = client_headers;
    }
    match builder.body(Body::from_stream(body)) {
        Ok(response) => AttemptResult::Committed(response),
        Err(e) => {
            AttemptResult::Committed(GatewayError::internal(e).render(ErrorFormat::Client(cx.req.format)))
        }
    }
}
