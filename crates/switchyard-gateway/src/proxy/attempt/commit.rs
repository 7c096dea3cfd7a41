//! Stage 4: a successful answer. Until a byte reaches the client a broken upstream
//! can still be replaced by the next candidate without the client noticing, so the
//! attempt waits — within the readiness budget, on the gateway's clock — for the
//! first body byte of a plain answer, or for the first model event of a stream
//! (heartbeats and comments are held back with it, not counted). Silence, an empty
//! stream, a break or an oversized frame before then fail over; after it, the answer
//! is committed and relayed with the stall watchdog and the hard deadline.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};

use switchyard_resilience::classify::hints::quota_reset_from_headers;
use switchyard_resilience::stream_watch::throughput::ThroughputPolicy;

use super::{AttemptCx, AttemptResult};
use crate::errors::{ErrorFormat, GatewayError};
use crate::header_names;
use crate::proxy::hop::{HopResponse, UpstreamStream, body_stream};
use crate::proxy::relay::{Relay, RelayParts};
use crate::proxy::sse::{MAX_FRAME_BYTES, ProgressWatch, SseFraming, SseState};
use crate::proxy::translation::format_of;
use crate::proxy::upstream_error::UpstreamError;
use crate::proxy::usage_tap::UsageTap;

/// What arrived before the commit.
struct Ready {
    first: Option<Bytes>,
    sse: Option<SseState>,
}

/// Waits for readiness, then commits to relaying `response`.
pub(super) async fn relay(mut cx: Box<AttemptCx<'_>>, response: HopResponse) -> AttemptResult {
    let status = response.status().as_u16();
    // Reset-aware combos order by the quota reset each account last announced.
    if let Some(at) = quota_reset_from_headers(response.headers(), cx.state.clock.now_wall()) {
        cx.candidate.connection.flow.note_quota_reset(at);
    }
    let sse = is_event_stream(response.headers());
    let (parts, body) = response.into_parts();
    let mut client_headers = client_headers(&cx, parts.headers, sse);
    let mut stream = body_stream(body);
    // One binding for the result and its value: a second would keep 576 more bytes
    // in this future for as long as it lives.
    let mut timer = cx.timer(cx.budgets.wait_until());
    let mut ready = match tokio::select! {
        ready = until_ready(&mut stream, sse, &cx) => ready,
        () = timer.wait() => {
            Err(cx.budgets.expired(if sse { "model event" } else { "body byte" }))
        }
    } {
        Ok(r) => r,
        Err(e) => return (*cx).failed(&e),
    };
    cx.keep(timer);
    let created = u64::try_from(cx.state.clock.now_wall().0 / 1_000).unwrap_or_default();
    let mut translator = None;
    if let Some(t) = cx.translation {
        client_headers.remove(header::CONTENT_LENGTH);
        let streaming = cx.req.body.streaming();
        if sse && streaming {
            translator = Some(t.stream(cx.req, created));
        } else {
            // A complete answer is translated whole (it is one JSON document); so is
            // a stream a non-streaming client gets from an upstream that streamed
            // anyway (with the partial frame the framing held back).
            let mut first = ready.first.take().unwrap_or_default();
            if let Some(mut state) = ready.sse.take() {
                first = [first.as_ref(), state.0.take_tail().as_ref()].concat().into();
            }
            let mut timer = cx.timer(cx.budgets.deadline);
            let whole = tokio::select! {
                whole = read_rest(&mut stream, Some(first)) => whole,
                () = timer.wait() => Err(cx.budgets.expired("body byte")),
            };
            cx.keep(timer);
            // A streaming client whose upstream answered whole still gets a stream.
            let translated = whole.and_then(|body| {
                let out = match (sse, streaming) {
                    (true, _) => t.response_from_stream(cx.req, &body, created),
                    (false, true) => t.response_as_stream(cx.req, &body, created),
                    (false, false) => t.response(cx.req, &body, created),
                };
                out.map_err(|e| {
                    UpstreamError::BrokenBeforeFirstByte(format!(
                        "the upstream's answer could not be translated: {e}"
                    ))
                })
            });
            match translated {
                Ok(body) => {
                    let kind = if streaming { "text/event-stream" } else { "application/json" };
                    client_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
                    client_headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
                    ready.first = Some(body);
                    stream = Box::pin(futures_util::stream::empty());
                }
                Err(e) => return (*cx).failed(&e),
            }
        }
    }
    let expected = client_headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let stall_ms = cx.state.resilience.settings().stream_recovery.stall_budget_ms;
    let sse_relayed = ready.sse.is_some();
    let format = cx.req.format;
    // A plain answer's deadline is the instant the stages above waited for: their
    // timer carries on.
    let deadline = cx.timer(cx.budgets.deadline).wait;
    let parts = RelayParts {
        first: ready.first,
        sse: ready.sse,
        format,
        log: cx.log,
        guard: cx.guard,
        status,
        expected,
        clock: cx.state.clock.clone(),
        stall_budget: Duration::from_millis(u64::from(stall_ms)),
        deadline,
        translator,
        // A plain answer's usage is read from its end, in the format relayed (the
        // client's: a translated answer is already in it).
        body_usage: (!sse_relayed && status < 400).then(|| UsageTap::new(format_of(format))),
    };
    let relay = Relay::new(stream, parts);
    let mut builder =
        Response::builder().status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY));
    if let Some(h) = builder.headers_mut() {
        *h = client_headers;
    }
    match builder.body(Body::from_stream(relay)) {
        Ok(response) => AttemptResult::Committed(response),
        Err(e) => AttemptResult::Committed(GatewayError::internal(e).render(ErrorFormat::Client(format))),
    }
}

/// The largest complete answer read whole for translation.
const MAX_TRANSLATED_BODY: usize = 64 * 1024 * 1024;

/// Reads the rest of a plain body after `first`.
async fn read_rest(stream: &mut UpstreamStream, first: Option<Bytes>) -> Result<Bytes, UpstreamError> {
    let mut body = BytesMut::from(first.unwrap_or_default().as_ref());
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| UpstreamError::from_hop(&*e, false))?;
        body.extend_from_slice(&chunk);
        if body.len() > MAX_TRANSLATED_BODY {
            return Err(UpstreamError::BrokenBeforeFirstByte("the upstream's answer is over 64 MiB".into()));
        }
    }
    Ok(body.freeze())
}

/// Reads until the first body byte (plain) or first model event (SSE).
async fn until_ready(
    stream: &mut UpstreamStream,
    sse: bool,
    cx: &AttemptCx<'_>,
) -> Result<Ready, UpstreamError> {
    if !sse {
        return match stream.next().await {
            Some(Ok(chunk)) => Ok(Ready { first: Some(chunk), sse: None }),
            None => Ok(Ready { first: None, sse: None }),
            Some(Err(e)) => Err(UpstreamError::from_hop(&*e, false)),
        };
    }
    let clock = &cx.state.clock;
    let throughput =
        ThroughputPolicy::from_settings(&cx.state.resilience.settings().stream_recovery.throughput_watchdog);
    // Boxed from the start (`SseState`): this future holds it across its awaits.
    let mut state: SseState =
        Box::new((SseFraming::default(), ProgressWatch::new(throughput, clock.now_mono())));
    let (framing, watch) = &mut *state;
    // Usage is read from the upstream's own events (its format, before translation).
    let wire = cx.translation.map_or(cx.req.format, |t| t.upstream);
    watch.usage = Some(UsageTap::new(format_of(wire)));
    let mut held = BytesMut::new();
    loop {
        match stream.next().await {
            Some(Ok(chunk)) => {
                let released = framing.push(chunk).map_err(|_| {
                    UpstreamError::BrokenBeforeFirstByte("the stream sent an event larger than 1 MiB".into())
                })?;
                let progress = watch.saw_progress(&released, clock.now_mono());
                held.extend_from_slice(&released);
                if progress {
                    return Ok(Ready { first: Some(held.freeze()), sse: Some(state) });
                }
                if held.len() > MAX_FRAME_BYTES {
                    return Err(UpstreamError::BrokenBeforeFirstByte(
                        "the stream sent over 1 MiB of heartbeats before its first event".into(),
                    ));
                }
            }
            Some(Err(e)) => return Err(UpstreamError::from_hop(&*e, false)),
            None => {
                return Err(UpstreamError::BrokenBeforeFirstByte(
                    "the stream ended before its first event".into(),
                ));
            }
        }
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Hop-by-hop headers (RFC 9110 §7.6.1, and the old `keep-alive` and
/// `proxy-connection`), and cookies: never relayed to the client.
const NOT_RELAYED: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    header::PROXY_AUTHENTICATE,
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::SET_COOKIE,
];

/// The upstream's response headers worth relaying (all but hop-by-hop headers and
/// cookies; `content-length` is dropped for SSE, where an error event may be
/// appended), plus the gateway's request id and the connection that answered.
/// Trimmed in place: a new map would be two allocations and a copy of every header
/// on every request.
pub(super) fn client_headers(cx: &AttemptCx<'_>, mut headers: HeaderMap, sse: bool) -> HeaderMap {
    for name in &NOT_RELAYED {
        headers.remove(name);
    }
    if sse {
        headers.remove(header::CONTENT_LENGTH);
    }
    insert_header(&mut headers, header_names::REQUEST_ID, &cx.req.request_id);
    if let Some(id) = &cx.candidate.connection.id_header {
        headers.insert(header_names::CONNECTION, id.clone());
    }
    headers
}

fn insert_header(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::try_from(value) {
        headers.insert(name, v);
    }
}
