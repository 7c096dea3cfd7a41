//! The response body relayed to the client, chunk by chunk as it arrives.
//!
//! For SSE, bytes are released up to the last complete frame (`\n\n` or
//! `\r\n\r\n`); a partial frame waits for its end, which is exactly when a client
//! could parse it anyway. That is what makes an upstream failure mid-stream
//! recoverable in form: the partial frame is dropped and one complete `error` event
//! of the client's format ends the stream. Non-SSE bodies are passed through as-is
//! and an upstream failure aborts them, so the client sees a broken response, never
//! a silently truncated one. Dropping the relay (client gone) drops the upstream
//! response, which closes the upstream connection.
//!
//! The stall watchdog (SPEC 4.7): an SSE stream that releases no progress (anything
//! but heartbeats such as `ping` events and comments) within the stall budget is
//! ended with an error event and recorded on the engine as a stall (which records
//! the error on the connection and cools it only if `streamStallCooldown.enabled`).
//! A stream the upstream breaks mid-way is recorded as a server-side transport
//! failure (connection record, breaker count); a client that leaves records nothing.
//! The engine attempt is settled when the stream ends, not when it starts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use memchr::memmem;
use switchyard_resilience::{Attempt, AttemptOutcome, Engine, TransportFailure};
use switchyard_types::ClientFormat;
use tokio::time::Sleep;

use crate::errors::stream_error_frame;
use crate::request_log::AttemptLog;

/// The upstream body stream.
pub type UpstreamStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// Holds back the unfinished tail of an SSE byte stream.
#[derive(Debug, Default)]
struct SseFraming {
    tail: BytesMut,
}

/// End offset of the last complete SSE frame in `buf`, if any.
fn last_frame_end(buf: &[u8]) -> Option<usize> {
    let lf = memmem::rfind(buf, b"\n\n").map(|i| i + 2);
    let crlf = memmem::rfind(buf, b"\r\n\r\n").map(|i| i + 4);
    lf.max(crlf)
}

impl SseFraming {
    /// Accepts a chunk; returns the bytes that complete frames (possibly empty).
    fn push(&mut self, chunk: Bytes) -> Bytes {
        if self.tail.is_empty() {
            return match last_frame_end(&chunk) {
                Some(end) if end == chunk.len() => chunk,
                Some(end) => {
                    self.tail.extend_from_slice(&chunk[end..]);
                    chunk.slice(..end)
                }
                None => {
                    self.tail.extend_from_slice(&chunk);
                    Bytes::new()
                }
            };
        }
        let searched_from = self.tail.len().saturating_sub(3);
        self.tail.extend_from_slice(&chunk);
        match last_frame_end(&self.tail[searched_from..]) {
            Some(rel) => self.tail.split_to(searched_from + rel).freeze(),
            None => Bytes::new(),
        }
    }

    /// What is left when the upstream ends cleanly.
    fn take_tail(&mut self) -> Bytes {
        self.tail.split().freeze()
    }
}

/// Whether released SSE bytes carry progress: anything but heartbeats (Anthropic
/// `ping` events, SSE comment lines). Reasoning frames count as progress.
fn is_progress(bytes: &[u8]) -> bool {
    bytes.split(|b| *b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        (line.starts_with(b"data:") && memmem::find(line, b"\"type\":\"ping\"").is_none())
            || (line.starts_with(b"event:") && !line.ends_with(b"ping"))
    })
}

/// The engine attempt a relay settles when its stream ends.
pub struct Settle {
    engine: Arc<Engine>,
    attempt: Option<Attempt>,
    /// Whether a clean end counts as a success (2xx/3xx).
    healthy: bool,
}

impl Settle {
    /// Settles `attempt` on `engine` when the stream ends.
    pub fn new(engine: Arc<Engine>, attempt: Attempt, healthy: bool) -> Settle {
        Settle { engine, attempt: Some(attempt), healthy }
    }

    fn success(&mut self) {
        if let Some(a) = self.attempt.take()
            && self.healthy
        {
            self.engine.record_success(a);
        }
    }

    fn stall(&mut self) {
        if let Some(a) = self.attempt.take() {
            self.engine.record_failure(a, &AttemptOutcome::StreamStall);
        }
    }

    /// The upstream broke the stream mid-way: a server-side failure for the
    /// connection's record and the provider's breaker.
    fn interrupted(&mut self) {
        if let Some(a) = self.attempt.take() {
            self.engine.record_failure(a, &AttemptOutcome::Transport(TransportFailure::BrokenMidStream));
        }
    }
}

/// The client-facing body of a committed attempt.
pub struct Relay {
    upstream: UpstreamStream,
    first: Option<Bytes>,
    framing: Option<SseFraming>,
    format: ClientFormat,
    log: AttemptLog,
    settle: Settle,
    status: u16,
    bytes: u64,
    /// The declared length of a plain body: once relayed, the attempt is complete
    /// (hyper stops polling a body at its declared length).
    expected: Option<u64>,
    /// The stall budget of an SSE stream and its running timer.
    stall: Option<(Duration, Pin<Box<Sleep>>)>,
    finished: bool,
}

/// What a relay is made of, besides the upstream stream.
pub struct RelayParts {
    /// The already-received first chunk.
    pub first: Option<Bytes>,
    /// Whether the body is SSE.
    pub sse: bool,
    /// The client's format (for the error event).
    pub format: ClientFormat,
    /// The attempt's log row.
    pub log: AttemptLog,
    /// The engine attempt to settle.
    pub settle: Settle,
    /// Upstream status.
    pub status: u16,
    /// Declared length of a plain body.
    pub expected: Option<u64>,
    /// No-progress budget for SSE streams.
    pub stall_budget: Duration,
}

impl Relay {
    /// Relays `upstream`, starting with the already-received first chunk.
    pub fn new(upstream: UpstreamStream, parts: RelayParts) -> Relay {
        let bytes = parts.first.as_ref().map_or(0, |b| b.len() as u64);
        let stall = parts.sse.then(|| (parts.stall_budget, Box::pin(tokio::time::sleep(parts.stall_budget))));
        Relay {
            expected: if parts.sse { None } else { parts.expected },
            upstream,
            first: parts.first,
            framing: parts.sse.then(SseFraming::default),
            format: parts.format,
            log: parts.log,
            settle: parts.settle,
            status: parts.status,
            bytes,
            stall,
            finished: false,
        }
    }

    fn frame(&mut self, chunk: Bytes) -> Bytes {
        let out = match self.framing.as_mut() {
            Some(framing) => framing.push(chunk),
            None => chunk,
        };
        if let Some((budget, timer)) = self.stall.as_mut()
            && is_progress(&out)
        {
            timer.as_mut().reset(tokio::time::Instant::now() + *budget);
        }
        if self.expected.is_some_and(|n| self.bytes >= n) && !self.finished {
            self.finished = true;
            self.log.finish(Some(self.status), self.bytes, None);
            self.settle.success();
        }
        out
    }

    /// Ends the stream with an error event (SSE) or a body error (plain).
    fn fail(&mut self, kind: &str, message: &str) -> Option<Result<Bytes, std::io::Error>> {
        self.finished = true;
        self.log.finish(Some(self.status), self.bytes, Some(kind.to_owned()));
        Some(match self.framing {
            Some(_) => Ok(stream_error_frame(self.format, message)),
            None => Err(std::io::Error::other(message.to_owned())),
        })
    }
}

impl Stream for Relay {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        if let Some(first) = this.first.take() {
            let out = this.frame(first);
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(out)));
            }
        }
        loop {
            match this.upstream.as_mut().poll_next(cx) {
                Poll::Pending => {
                    let stalled = this.stall.as_mut().is_some_and(|(_, t)| t.as_mut().poll(cx).is_ready());
                    if !stalled {
                        return Poll::Pending;
                    }
                    tracing::warn!(event = "stream.stalled", status = this.status);
                    this.settle.stall();
                    return Poll::Ready(this.fail(
                        "stream_stall",
                        "the upstream stopped producing output within the stall budget; retry the request",
                    ));
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    this.bytes += chunk.len() as u64;
                    let out = this.frame(chunk);
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(out)));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    tracing::warn!(event = "stream.interrupted", error = %e);
                    this.settle.interrupted();
                    return Poll::Ready(this.fail(
                        "stream_interrupted",
                        "the upstream stream was interrupted before it completed; retry the request",
                    ));
                }
                Poll::Ready(None) => {
                    this.finished = true;
                    this.log.finish(Some(this.status), this.bytes, None);
                    this.settle.success();
                    let tail = this.framing.as_mut().map(SseFraming::take_tail).unwrap_or_default();
                    return Poll::Ready((!tail.is_empty()).then_some(Ok(tail)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_all(chunks: &[&str]) -> Vec<String> {
        let mut f = SseFraming::default();
        chunks
            .iter()
            .map(|c| String::from_utf8_lossy(&f.push(Bytes::from((*c).to_owned()))).into_owned())
            .collect()
    }

    #[test]
    fn whole_frames_pass_unchanged() {
        assert_eq!(
            push_all(&["data: a\n\n", "data: b\n\ndata: c\n\n"]),
            ["data: a\n\n", "data: b\n\ndata: c\n\n"]
        );
    }

    #[test]
    fn partial_frames_wait_for_their_end() {
        assert_eq!(
            push_all(&["data: a\n\ndata: b", "c\n", "\ndata: d"]),
            ["data: a\n\n", "", "data: bc\n\n"]
        );
    }

    #[test]
    fn crlf_boundaries_count() {
        assert_eq!(push_all(&["data: a\r\n", "\r\ndata: b"]), ["", "data: a\r\n\r\n"]);
    }

    #[test]
    fn boundary_split_across_chunks() {
        assert_eq!(push_all(&["data: a\n", "\n"]), ["", "data: a\n\n"]);
    }
}

#[cfg(test)]
mod progress_tests {
    use super::is_progress;

    #[test]
    fn heartbeats_are_not_progress() {
        assert!(!is_progress(b"event: ping\ndata: {\"type\":\"ping\"}\n\n"));
        assert!(!is_progress(b": keep-alive\n\n"));
        assert!(!is_progress(b""));
    }

    #[test]
    fn model_output_and_reasoning_are_progress() {
        assert!(is_progress(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"\"}}\n\n"));
        assert!(is_progress(b"data: {\"choices\":[]}\n\n"));
        assert!(is_progress(b"event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_stop\ndata: {}\n\n"));
    }
}
