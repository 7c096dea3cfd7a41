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

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use memchr::memmem;
use switchyard_types::ClientFormat;

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

/// The client-facing body of a committed attempt.
pub struct Relay {
    upstream: UpstreamStream,
    first: Option<Bytes>,
    framing: Option<SseFraming>,
    format: ClientFormat,
    log: AttemptLog,
    status: u16,
    bytes: u64,
    /// The declared length of a plain body: once relayed, the attempt is complete
    /// (hyper stops polling a body at its declared length).
    expected: Option<u64>,
    finished: bool,
}

impl Relay {
    /// Relays `upstream`, starting with the already-received `first` chunk.
    pub fn new(
        upstream: UpstreamStream,
        first: Option<Bytes>,
        sse: bool,
        format: ClientFormat,
        log: AttemptLog,
        status: u16,
        expected: Option<u64>,
    ) -> Relay {
        let bytes = first.as_ref().map_or(0, |b| b.len() as u64);
        Relay {
            expected: if sse { None } else { expected },
            upstream,
            first,
            framing: sse.then(SseFraming::default),
            format,
            log,
            status,
            bytes,
            finished: false,
        }
    }

    fn frame(&mut self, chunk: Bytes) -> Bytes {
        let out = match self.framing.as_mut() {
            Some(framing) => framing.push(chunk),
            None => chunk,
        };
        if self.expected.is_some_and(|n| self.bytes >= n) && !self.finished {
            self.finished = true;
            self.log.finish(Some(self.status), self.bytes, None);
        }
        out
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
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => {
                    this.bytes += chunk.len() as u64;
                    let out = this.frame(chunk);
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(out)));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.finished = true;
                    tracing::warn!(event = "stream.interrupted", error = %e);
                    this.log.finish(Some(this.status), this.bytes, Some("stream_interrupted".into()));
                    return Poll::Ready(Some(match this.framing {
                        Some(_) => Ok(stream_error_frame(
                            this.format,
                            "the upstream stream was interrupted before it completed; retry the request",
                        )),
                        None => Err(std::io::Error::other("upstream body interrupted")),
                    }));
                }
                Poll::Ready(None) => {
                    this.finished = true;
                    this.log.finish(Some(this.status), this.bytes, None);
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
