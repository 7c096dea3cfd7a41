//! SSE keep-alive while the gateway itself waits (SPEC 4.7; reference facts §7.4,
//! `SSE_HEARTBEAT_INTERVAL_MS`). A streaming client that hears nothing for minutes —
//! while a Claude account's slow lane is `slot_busy`, or a queue or combo wait holds
//! the request — is cut off by its own HTTP stack or agent. So every 15 s of request
//! age, on the gateway's clock, the request is checked: if the gateway is in one of
//! its own waits ([`GatewayWaits`]), the answer is committed early as `200
//! text/event-stream` and an SSE comment (`: keep-alive`) goes out, then one every
//! 15 s until the real answer is ready. Waiting on an upstream is not a gateway
//! wait: that stays uncommitted so a failure can still fail over with its status.
//!
//! After an early commit the status line is spent: a streamed success is piped on
//! as-is; anything else (a relayed upstream error, the gateway's own error) becomes
//! one complete `error` event of the client's format, as a mid-stream failure does.
//! Comments are invisible to SSE parsers, so every client format accepts them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::{HeaderValue, StatusCode, header};
use switchyard_types::ClientFormat;

use super::failure::error_detail;
use crate::clock::GatewayClock;
use crate::errors::stream_error_frame;

/// How often a waiting streaming client hears a comment.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// The comment sent.
pub const KEEPALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// Largest error body read to restate it as an error event.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Counts the gateway's own waits in flight for one request. Only a streaming
/// request's keep-alive reads the count, so only it has one: a plain request's
/// waits count nothing, and it skips the allocation.
#[derive(Debug, Clone)]
pub struct GatewayWaits(Option<Arc<AtomicUsize>>);

impl GatewayWaits {
    /// The count for a request: kept when it is `streaming`, else none.
    pub fn for_request(streaming: bool) -> GatewayWaits {
        GatewayWaits(streaming.then(Arc::default))
    }

    /// Marks a wait as begun; it ends when the returned guard drops.
    pub fn enter(&self) -> WaitGuard {
        if let Some(count) = &self.0 {
            count.fetch_add(1, Ordering::AcqRel);
        }
        WaitGuard(self.0.clone())
    }

    /// Whether the gateway is waiting by its own choice right now.
    pub fn active(&self) -> bool {
        self.0.as_ref().is_some_and(|count| count.load(Ordering::Acquire) > 0)
    }
}

/// One gateway wait; dropping it ends the wait.
#[derive(Debug)]
pub struct WaitGuard(Option<Arc<AtomicUsize>>);

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if let Some(count) = &self.0 {
            count.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The request's work: resolves to the response it would have sent.
pub type Work = Pin<Box<dyn Future<Output = Response> + Send>>;

/// Runs `work`; answers with its response, unless a keep-alive tick finds the
/// gateway waiting first: then commits an SSE response at once and streams the
/// comments, then the real answer.
pub async fn respond(
    mut work: Work,
    waits: GatewayWaits,
    clock: Arc<dyn GatewayClock>,
    format: ClientFormat,
    request_id: &str,
) -> Response {
    let mut next_tick = clock.now_mono() + KEEPALIVE_INTERVAL;
    loop {
        tokio::select! {
            response = &mut work => return response,
            () = clock.sleep_until(next_tick) => {
                next_tick += KEEPALIVE_INTERVAL;
                if waits.active() {
                    break;
                }
            }
        }
    }
    tracing::info!(
        event = "stream.keepalive_commit",
        request_id,
        "the gateway is waiting: committed an SSE answer early"
    );
    let body = EarlyStream { stage: Stage::Waiting(work), clock, next_tick, format, sent_first: false };
    let mut response = Response::new(Body::from_stream(body.into_stream()));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::try_from(request_id) {
        headers.insert(crate::header_names::REQUEST_ID, v);
    }
    *response.status_mut() = StatusCode::OK;
    response
}

enum Stage {
    /// The request is still being worked on.
    Waiting(Work),
    /// The real answer is a stream: its body follows.
    Piping(axum::body::BodyDataStream),
    /// Nothing more to send.
    Done,
}

struct EarlyStream {
    stage: Stage,
    clock: Arc<dyn GatewayClock>,
    next_tick: Instant,
    format: ClientFormat,
    sent_first: bool,
}

impl EarlyStream {
    fn into_stream(self) -> impl Stream<Item = Result<Bytes, axum::Error>> + Send {
        futures_util::stream::unfold(self, |mut s| async move {
            let item = s.next_item().await?;
            Some((item, s))
        })
    }

    async fn next_item(&mut self) -> Option<Result<Bytes, axum::Error>> {
        if !self.sent_first {
            // The tick that committed the answer sends its comment at once.
            self.sent_first = true;
            return Some(Ok(Bytes::from_static(KEEPALIVE_COMMENT)));
        }
        loop {
            match &mut self.stage {
                Stage::Done => return None,
                Stage::Piping(body) => return body.next().await,
                Stage::Waiting(work) => {
                    let response = tokio::select! {
                        response = work => response,
                        () = self.clock.sleep_until(self.next_tick) => {
                            self.next_tick += KEEPALIVE_INTERVAL;
                            return Some(Ok(Bytes::from_static(KEEPALIVE_COMMENT)));
                        }
                    };
                    if streamed_success(&response) {
                        self.stage = Stage::Piping(response.into_body().into_data_stream());
                        continue;
                    }
                    self.stage = Stage::Done;
                    return Some(Ok(error_event(self.format, response).await));
                }
            }
        }
    }
}

/// The answer that cannot be sent as a status, as one error event.
async fn error_event(format: ClientFormat, response: Response) -> Bytes {
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), ERROR_BODY_LIMIT).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    let detail = error_detail(&text).unwrap_or_else(|| text.chars().take(200).collect());
    let message = format!("HTTP {}: {detail}", status.as_u16());
    stream_error_frame(format, &message)
}

fn streamed_success(response: &Response) -> bool {
    response.status().is_success()
        && response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_nest_and_end_with_their_guards() {
        let waits = GatewayWaits::for_request(true);
        assert!(!waits.active());
        let a = waits.enter();
        let b = waits.clone().enter();
        drop(a);
        assert!(waits.active());
        drop(b);
        assert!(!waits.active());
    }

    #[test]
    fn a_plain_request_counts_no_waits() {
        let waits = GatewayWaits::for_request(false);
        let guard = waits.enter();
        assert!(!waits.active());
        drop(guard);
        assert!(!waits.active());
    }
}
