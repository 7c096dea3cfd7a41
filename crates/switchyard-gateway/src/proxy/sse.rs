//! SSE on the relay path: frame boundaries found in the raw bytes (so frames are
//! relayed byte for byte, never re-encoded), a bound on an unfinished frame, and the
//! progress watch that reads each released frame's fields with `sse-parse` and asks
//! the engine's [`switchyard_resilience::stream_watch`] whether it is model output.
//!
//! A frame that grows past [`MAX_FRAME_BYTES`] without ending is refused: the relay
//! ends the stream with an error event instead of buffering an upstream's garbage
//! without bound.

use bytes::{Bytes, BytesMut};
use memchr::memmem;
use sse_parse::SseParser;
use switchyard_resilience::stream_watch::is_progress;

/// The largest unfinished SSE frame held back (1 MiB).
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// An SSE frame grew past [`MAX_FRAME_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLarge;

/// Holds back the unfinished tail of an SSE byte stream.
#[derive(Debug, Default)]
pub struct SseFraming {
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
    pub fn push(&mut self, chunk: Bytes) -> Result<Bytes, FrameTooLarge> {
        if self.tail.is_empty() {
            return match last_frame_end(&chunk) {
                Some(end) if end == chunk.len() => Ok(chunk),
                Some(end) => {
                    self.hold(&chunk[end..])?;
                    Ok(chunk.slice(..end))
                }
                None => {
                    self.hold(&chunk)?;
                    Ok(Bytes::new())
                }
            };
        }
        let searched_from = self.tail.len().saturating_sub(3);
        self.tail.extend_from_slice(&chunk);
        match last_frame_end(&self.tail[searched_from..]) {
            Some(rel) => {
                let out = self.tail.split_to(searched_from + rel).freeze();
                if self.tail.len() > MAX_FRAME_BYTES {
                    return Err(FrameTooLarge);
                }
                Ok(out)
            }
            None if self.tail.len() > MAX_FRAME_BYTES => Err(FrameTooLarge),
            None => Ok(Bytes::new()),
        }
    }

    fn hold(&mut self, bytes: &[u8]) -> Result<(), FrameTooLarge> {
        if bytes.len() > MAX_FRAME_BYTES {
            return Err(FrameTooLarge);
        }
        self.tail.extend_from_slice(bytes);
        Ok(())
    }

    /// What is left when the upstream ends cleanly.
    pub fn take_tail(&mut self) -> Bytes {
        self.tail.split().freeze()
    }
}

/// Reads released frames and tells whether they carried model progress.
#[derive(Debug)]
pub struct ProgressWatch {
    parser: SseParser,
}

impl Default for ProgressWatch {
    fn default() -> Self {
        ProgressWatch { parser: SseParser::new().max_buffer(MAX_FRAME_BYTES) }
    }
}

impl ProgressWatch {
    /// Feeds complete frames; true when any of their events is progress.
    pub fn saw_progress(&mut self, frames: &[u8]) -> bool {
        if frames.is_empty() {
            return false;
        }
        self.parser.feed(frames);
        let mut progress = false;
        while let Some(event) = self.parser.next_event() {
            progress |= is_progress(&event.event, &event.data);
        }
        progress
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_all(chunks: &[&str]) -> Vec<String> {
        let mut f = SseFraming::default();
        chunks
            .iter()
            .map(|c| match f.push(Bytes::from((*c).to_owned())) {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(_) => "<too large>".to_owned(),
            })
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
        assert_eq!(push_all(&["data: a\r\n", "\r\ndata: b"]), ["", "data: a\r\n\r\n"]);
        assert_eq!(push_all(&["data: a\n", "\n"]), ["", "data: a\n\n"]);
    }

    #[test]
    fn an_endless_frame_is_refused_at_the_bound() {
        let mut f = SseFraming::default();
        let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
        let mut refused = false;
        for _ in 0..32 {
            if f.push(chunk.clone()).is_err() {
                refused = true;
                break;
            }
        }
        assert!(refused);
        assert!(f.tail.len() <= MAX_FRAME_BYTES + chunk.len());
    }

    #[test]
    fn progress_is_judged_per_event() {
        let mut w = ProgressWatch::default();
        assert!(!w.saw_progress(b"event: ping\ndata: {\"type\": \"ping\"}\n\n: keep-alive\n\n"));
        assert!(w.saw_progress(
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"\"}}\n\n"
        ));
        assert!(w.saw_progress(b"data: {\"choices\":[]}\n\n"));
    }
}
