//! The response body relayed to the client, chunk by chunk as it arrives.
//!
//! For SSE, bytes are released up to the last complete frame (`\n\n` or
//! `\r\n\r\n`, see [`super::sse`]); a partial frame waits for its end, which is
//! exactly when a client could parse it anyway. That is what makes an upstream
//! failure mid-stream recoverable in form: the partial frame is dropped and one
//! complete `error` event of the client's format ends the stream. A frame that grows
//! past 1 MiB without ending ends the stream the same way. Non-SSE bodies are passed
//! through as-is and an upstream failure aborts them, so the client sees a broken
//! response, never a silently truncated one. Dropping the relay (client gone) drops
//! the upstream response, which closes the upstream connection.
//!
//! Watchdogs, on the gateway's one clock (SPEC 4.7): the stall watchdog ends an SSE
//! stream that released no model progress (judged per event by
//! [`super::sse::ProgressWatch`]; heartbeats never count, reasoning does) within the
//! stall budget, and records a stall on the engine (the error is recorded on the
//! connection; it cools only if `streamStallCooldown.enabled`). The throughput
//! watchdog (off by default; [`switchyard_resilience::stream_watch::throughput`])
//! ends a stream whose assistant text arrives under its minimum rate, judged as
//! frames arrive, and records it the same way (log kind `stream_too_slow`). It
//! needs a warm-up and a full window, so it always acts after the commit: the
//! client gets the frames that came with the verdict and then one error event;
//! there is no blind retry of a stream the client has partly seen. The hard per-attempt
//! deadline ends any body that outlives it. A stream the upstream breaks mid-way is a
//! server-side failure of the connection (cooldown, breaker count); a client that
//! leaves records nothing. The engine attempt is settled exactly once, when the
//! stream ends, not when it starts.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::Stream;
use switchyard_resilience::stream_watch::throughput::TooSlow;
use switchyard_resilience::{AttemptOutcome, TransportFailure};
use switchyard_types::ClientFormat;

use switchyard_translate::StreamTranslator;

use super::usage_tap::UsageTap;

use super::guard::AttemptGuard;
use super::sse::SseState;
use crate::clock::{GatewayClock, Wait};
use crate::conn::after_write;
use crate::errors::stream_error_frame;
use crate::request_log::AttemptLog;

use super::hop::UpstreamStream;

/// The no-progress budget of an SSE stream and its timer.
struct StallWatch {
    budget: Duration,
    last_progress: Instant,
    timer: Wait,
}

/// The client-facing body of a committed attempt.
pub struct Relay {
    upstream: UpstreamStream,
    first: Option<Bytes>,
    sse: Option<SseState>,
    format: ClientFormat,
    log: AttemptLog,
    guard: AttemptGuard,
    healthy: bool,
    status: u16,
    bytes: u64,
    /// The declared length of a plain body: once relayed, the attempt is complete
    /// (hyper stops polling a body at its declared length).
    expected: Option<u64>,
    clock: Arc<dyn GatewayClock>,
    stall: Option<StallWatch>,
    deadline: Wait,
    /// The throughput watchdog's verdict, found while framing a chunk.
    too_slow: Option<TooSlow>,
    /// Rewrites an SSE answer into the client's format, frame by frame. Boxed, like
    /// `body_usage`: most relays have neither, and every open stream carries its
    /// relay (an unboxed `None` costs the full size).
    translator: Option<Box<StreamTranslator>>,
    /// Reads a plain answer's usage from its end.
    body_usage: Option<Box<UsageTap>>,
    finished: bool,
}

/// What a relay is made of, besides the upstream stream.
pub struct RelayParts {
    /// Bytes already received and released (sent to the client first, as-is).
    pub first: Option<Bytes>,
    /// For SSE: the framing state (with any held-back partial frame) and the watch.
    pub sse: Option<SseState>,
    /// The client's format (for the error event).
    pub format: ClientFormat,
    /// The attempt's log row.
    pub log: AttemptLog,
    /// The engine attempt to settle.
    pub guard: AttemptGuard,
    /// Upstream status.
    pub status: u16,
    /// Declared length of a plain body.
    pub expected: Option<u64>,
    /// The gateway's clock.
    pub clock: Arc<dyn GatewayClock>,
    /// No-progress budget for SSE streams.
    pub stall_budget: Duration,
    /// The hard deadline of the attempt, on `clock`.
    pub deadline: Wait,
    /// For a translated SSE answer: its translator (`first` is upstream frames).
    pub translator: Option<StreamTranslator>,
    /// For a plain answer: reads its usage for the log.
    pub body_usage: Option<UsageTap>,
}

impl Relay {
    /// Relays `upstream`, starting with the already-received bytes.
    pub fn new(upstream: UpstreamStream, parts: RelayParts) -> Relay {
        let bytes = parts.first.as_ref().map_or(0, |b| b.len() as u64);
        let now = parts.clock.now_mono();
        let stall = parts.sse.is_some().then(|| StallWatch {
            budget: parts.stall_budget,
            last_progress: now,
            timer: parts.clock.sleep_until(now + parts.stall_budget),
        });
        let mut translator = parts.translator;
        let first = match (parts.first, translator.as_mut()) {
            (Some(first), Some(t)) => Some(t.push(&first)),
            (first, _) => first,
        };
        let mut relay = Relay {
            expected: if parts.sse.is_some() { None } else { parts.expected },
            upstream,
            first,
            sse: parts.sse,
            format: parts.format,
            log: parts.log,
            guard: parts.guard,
            healthy: parts.status < 400,
            status: parts.status,
            bytes,
            deadline: parts.deadline,
            clock: parts.clock,
            stall,
            too_slow: None,
            translator: translator.map(Box::new),
            body_usage: parts.body_usage.map(Box::new),
            finished: false,
        };
        if let (Some(tap), Some(first)) = (relay.body_usage.as_mut(), relay.first.as_ref()) {
            tap.body_chunk(first);
        }
        relay.check_complete();
        relay
    }

    /// Frames a chunk (SSE) and notes progress; returns the bytes to release.
    fn frame(&mut self, chunk: Bytes) -> Result<Bytes, ()> {
        let Some((framing, watch)) = self.sse.as_deref_mut() else { return Ok(chunk) };
        let out = framing.push(chunk).map_err(|_| ())?;
        let now = self.clock.now_mono();
        if watch.saw_progress(&out, now)
            && let Some(stall) = self.stall.as_mut()
        {
            stall.last_progress = now;
        }
        if self.too_slow.is_none() {
            self.too_slow = watch.too_slow(now);
        }
        Ok(match self.translator.as_mut() {
            Some(t) if !out.is_empty() => t.push(&out),
            _ => out,
        })
    }

    /// Hands the usage a stream that ended in an upstream error reported to its row.
    fn note_stream_tokens(&mut self) {
        let tokens =
            self.sse.as_deref_mut().and_then(|(_, watch)| watch.usage.as_mut()).and_then(UsageTap::view);
        self.log.set_tokens(tokens);
    }

    /// A plain body whose declared length has been relayed is complete.
    fn check_complete(&mut self) {
        if self.expected.is_some_and(|n| self.bytes >= n) && !self.finished {
            self.succeeded();
        }
    }

    /// The answer is complete and sound: its settlement (usage, log row, the
    /// engine's success) runs once the bytes are written (`after_write`).
    fn succeeded(&mut self) {
        self.finished = true;
        // Built in its box: moved into a closure and then into one, its ~580 bytes
        // were copied three times more on every request.
        let settlement = Box::new(Settlement {
            usage: match (self.body_usage.take(), self.sse.as_deref_mut()) {
                (Some(tap), _) => Some(*tap),
                (None, Some((_, watch))) => watch.usage.take(),
                (None, None) => None,
            },
            log: self.log.take(),
            guard: self.guard.take(),
            status: self.status,
            bytes: self.bytes,
            healthy: self.healthy,
        });
        after_write::defer_boxed(settlement);
    }

    /// Ends the stream with an error event (SSE) or a body error (plain), recording
    /// `outcome` on the engine.
    fn fail(
        &mut self,
        kind: &str,
        message: &str,
        outcome: AttemptOutcome<'_>,
    ) -> Option<Result<Bytes, std::io::Error>> {
        self.finished = true;
        self.guard.fail(&outcome);
        self.log.finish(Some(self.status), self.bytes, Some(kind.to_owned()));
        Some(match self.sse {
            Some(_) => Ok(stream_error_frame(self.format, message)),
            None => Err(std::io::Error::other(message.to_owned())),
        })
    }

    /// Ends a stream the throughput watchdog found too slow: the frames that came
    /// with the verdict go out first, then one error event.
    fn fail_too_slow(&mut self, slow: TooSlow, frames: Bytes) -> Option<Result<Bytes, std::io::Error>> {
        tracing::warn!(event = "stream.too_slow", bytes = slow.bytes, window_ms = slow.window_ms);
        let message = format!(
            "the upstream produced {} bytes of text in the last {} ms, under the throughput minimum of {}; retry the request",
            slow.bytes, slow.window_ms, slow.required_bytes
        );
        let error = self.fail("stream_too_slow", &message, AttemptOutcome::StreamStall);
        join_before(frames, error)
    }

    /// Whether the stall budget has run out; re-arms the timer when progress came
    /// since it was set.
    fn stalled(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(stall) = self.stall.as_mut() else { return false };
        loop {
            if stall.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            let due = stall.last_progress + stall.budget;
            if self.clock.now_mono() >= due {
                return true;
            }
            stall.timer = self.clock.sleep_until(due);
        }
    }
}

/// What settling a complete, sound answer takes, moved out of its relay.
struct Settlement {
    /// A plain body's tap (its usage read from the body's end) or a stream's (read
    /// event by event).
    usage: Option<UsageTap>,
    log: AttemptLog,
    guard: AttemptGuard,
    status: u16,
    bytes: u64,
    healthy: bool,
}

impl after_write::Deferred for Settlement {
    /// Notes the usage on the log row, writes it, and records the attempt: a success
    /// (a relayed request error only releases its permits).
    fn run(mut self: Box<Self>) {
        let tokens = self.usage.as_mut().and_then(|tap| {
            // A no-op for a stream's tap, which kept no body.
            tap.finish_body();
            tap.view()
        });
        self.log.set_tokens(tokens);
        self.log.finish(Some(self.status), self.bytes, None);
        if self.healthy {
            self.guard.succeed();
        } else {
            self.guard.release();
        }
    }
}

/// `frames` (already translated) followed by the error ending the stream.
fn join_before(
    frames: Bytes,
    error: Option<Result<Bytes, std::io::Error>>,
) -> Option<Result<Bytes, std::io::Error>> {
    match error {
        Some(Ok(e)) if !frames.is_empty() => Some(Ok([frames.as_ref(), e.as_ref()].concat().into())),
        other => other,
    }
}

impl Stream for Relay {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        // The bytes received before the commit go out first, even when they already
        // completed a plain body of declared length.
        if let Some(first) = this.first.take()
            && !first.is_empty()
        {
            return Poll::Ready(Some(Ok(first)));
        }
        if this.finished {
            return Poll::Ready(None);
        }
        loop {
            match this.upstream.as_mut().poll_next(cx) {
                Poll::Pending => {
                    if this.deadline.as_mut().poll(cx).is_ready() {
                        tracing::warn!(event = "stream.deadline", status = this.status);
                        return Poll::Ready(this.fail(
                            "attempt_deadline",
                            "the upstream answer outlived the attempt deadline; retry the request",
                            AttemptOutcome::StreamStall,
                        ));
                    }
                    if !this.stalled(cx) {
                        return Poll::Pending;
                    }
                    tracing::warn!(event = "stream.stalled", status = this.status);
                    return Poll::Ready(this.fail(
                        "stream_stall",
                        "the upstream stopped producing output within the stall budget; retry the request",
                        AttemptOutcome::StreamStall,
                    ));
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    this.bytes += chunk.len() as u64;
                    if let Some(tap) = this.body_usage.as_mut() {
                        tap.body_chunk(&chunk);
                    }
                    let Ok(out) = this.frame(chunk) else {
                        tracing::warn!(event = "stream.frame_too_large", status = this.status);
                        return Poll::Ready(this.fail(
                            "frame_too_large",
                            "the upstream sent an event larger than 1 MiB; retry the request",
                            AttemptOutcome::Transport(TransportFailure::BrokenMidStream),
                        ));
                    };
                    this.check_complete();
                    if let Some(slow) = this.too_slow.take() {
                        return Poll::Ready(this.fail_too_slow(slow, out));
                    }
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(out)));
                    }
                    if this.finished {
                        return Poll::Ready(None);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    tracing::warn!(event = "stream.interrupted", error = %e);
                    return Poll::Ready(this.fail(
                        "stream_interrupted",
                        "the upstream stream was interrupted before it completed; retry the request",
                        AttemptOutcome::Transport(TransportFailure::BrokenMidStream),
                    ));
                }
                Poll::Ready(None) => {
                    let tail = this.sse.as_deref_mut().map(|(f, _)| f.take_tail()).unwrap_or_default();
                    if !tail.is_empty()
                        && let Some((_, watch)) = this.sse.as_deref_mut()
                    {
                        // The last event may lack its blank line; it is still read.
                        watch.saw_progress(&[tail.as_ref(), b"\n\n"].concat(), this.clock.now_mono());
                    }
                    let tail = match this.translator.as_mut() {
                        None => tail,
                        Some(t) => {
                            // The last event may lack its blank line; it still counts.
                            let mut last = t.push(&[tail.as_ref(), b"\n\n"].concat());
                            match t.finish() {
                                Some(closing) => {
                                    last = [last.as_ref(), closing.as_ref()].concat().into();
                                    last
                                }
                                None => {
                                    tracing::warn!(event = "stream.truncated", status = this.status);
                                    let error = this.fail(
                                        "stream_truncated",
                                        "the upstream stream ended before the answer was complete; retry the request",
                                        AttemptOutcome::Transport(TransportFailure::BrokenMidStream),
                                    );
                                    return Poll::Ready(join_before(last, error));
                                }
                            }
                        }
                    };
                    // An error the upstream reported inside its stream (and relayed to
                    // the client in its format) is that attempt's outcome, judged like
                    // the status the provider would have answered with.
                    let reported = this.sse.as_deref().and_then(|(_, w)| w.upstream_error().cloned());
                    match reported {
                        Some(e) => {
                            tracing::warn!(event = "stream.upstream_error", kind = %e.kind, status = this.status);
                            this.finished = true;
                            this.note_stream_tokens();
                            this.log.finish(
                                Some(this.status),
                                this.bytes,
                                Some(format!("stream_error:{}", e.kind)),
                            );
                            let headers = http::HeaderMap::new();
                            let outcome = AttemptOutcome::Http {
                                status: e.status(),
                                headers: &headers,
                                body: &e.message,
                            };
                            this.guard.fail(&outcome);
                        }
                        None => this.succeeded(),
                    }
                    return Poll::Ready((!tail.is_empty()).then_some(Ok(tail)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Relay;

    /// Every open stream holds its relay for as long as it streams (issue 16's
    /// memory line is per open stream), and every request moves it into its body's
    /// box: a field added inline, or an optional part left unboxed, moves it up the
    /// allocator's size classes (640 bytes here; 1,280 while the stream state was
    /// inline, which every plain answer carried and copied too).
    #[test]
    fn a_relay_fits_its_memory_budget() {
        let size = std::mem::size_of::<Relay>();
        assert!(size <= 640, "a Relay is {size} bytes; box what most streams do not use");
    }
}
