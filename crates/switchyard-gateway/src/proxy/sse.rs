//! SSE on the relay path: frame boundaries found in the raw bytes (so frames are
//! relayed byte for byte, never re-encoded), a bound on an unfinished frame, and the
//! progress watch that reads each released frame's fields with `sse-parse` and asks
//! the engine's [`switchyard_resilience::stream_watch`] whether it is model output.
//!
//! A frame that grows past [`MAX_FRAME_BYTES`] without ending is refused: the relay
//! ends the stream with an error event instead of buffering an upstream's garbage
//! without bound.

use bytes::{Bytes, BytesMut};
use memchr::memmem::{Finder, FinderRev};
use sse_parse::SseParser;
use std::sync::LazyLock;
use std::time::Instant;

use super::usage_tap::UsageTap;
use switchyard_resilience::stream_watch::is_progress;
use switchyard_resilience::stream_watch::judge::judge;
use switchyard_resilience::stream_watch::throughput::{ThroughputPolicy, ThroughputWatch, TooSlow};

/// The largest unfinished SSE frame held back (1 MiB).
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// An SSE frame grew past [`MAX_FRAME_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLarge;

/// A streamed answer's relay state: its framing and its progress watch, boxed
/// wherever it travels. At ~570 bytes it was half of the relay and most of the
/// futures that carry it to the commit, and every move of those (six per request,
/// plain answers included, which have none) copied it; boxed, a plain answer moves
/// 8 bytes and a stream pays one allocation.
pub type SseState = Box<(SseFraming, ProgressWatch)>;

/// Holds back the unfinished tail of an SSE byte stream.
#[derive(Debug, Default)]
pub struct SseFraming {
    tail: BytesMut,
}

// The searchers, built once: `memmem::find` and `rfind` build one per call, and
// on a stream's path (two searches a chunk, two an event) building them was ~6k
// instructions of a 7-frame stream's ~206k (`KIND=stream scripts/instructions.sh`).
static LF_LF: LazyLock<FinderRev<'static>> = LazyLock::new(|| FinderRev::new(b"\n\n"));
static CRLF_CRLF: LazyLock<FinderRev<'static>> = LazyLock::new(|| FinderRev::new(b"\r\n\r\n"));
static ERROR_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"error\""));

/// End offset of the last complete SSE frame in `buf`, if any.
fn last_frame_end(buf: &[u8]) -> Option<usize> {
    let lf = LF_LF.rfind(buf).map(|i| i + 2);
    let crlf = CRLF_CRLF.rfind(buf).map(|i| i + 4);
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

/// Reads released frames and tells whether they carried model progress; with the
/// throughput watchdog on, also counts their assistant text against its minimum.
#[derive(Debug)]
pub struct ProgressWatch {
    parser: SseParser,
    throughput: Option<(ThroughputWatch, Instant)>,
    /// The first error the upstream reported inside its stream.
    upstream_error: Option<StreamError>,
    /// The usage the stream reports, for the request log.
    pub usage: Option<UsageTap>,
}

impl Default for ProgressWatch {
    fn default() -> Self {
        ProgressWatch {
            parser: SseParser::new().max_buffer(MAX_FRAME_BYTES),
            throughput: None,
            upstream_error: None,
            usage: None,
        }
    }
}

/// An error an upstream reported inside a 200 stream (Anthropic `event: error`,
/// Responses `error` / `response.failed`, a Chat chunk carrying `error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError {
    /// The provider's error type or code (`overloaded_error`, `rate_limit_exceeded`, …).
    pub kind: String,
    /// Its message.
    pub message: String,
}

impl StreamError {
    /// Reads one event as an error report, when it is one. The JSON is parsed only
    /// for an `error`-named event or data that mentions `"error"`.
    fn from_event(event: &str, data: &str) -> Option<StreamError> {
        let named = event == "error" || event == "response.failed";
        if !named && ERROR_KEY.find(data.as_bytes()).is_none() {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(data.trim()).ok()?;
        let kind_of =
            |v: &serde_json::Value| v.get("type").and_then(serde_json::Value::as_str).map(str::to_owned);
        let error = match kind_of(&v).as_deref() {
            Some("response.failed") => v.get("response")?.get("error")?.clone(),
            Some("error") => v.get("error").cloned().unwrap_or_else(|| v.clone()),
            _ if named => v.get("error").cloned().unwrap_or_else(|| v.clone()),
            // A Chat chunk (no type) that carries an error object.
            None => v.get("error").filter(|e| e.is_object())?.clone(),
            Some(_) => return None,
        };
        let text = |k: &str| error.get(k).and_then(serde_json::Value::as_str);
        Some(StreamError {
            kind: text("type")
                .filter(|t| *t != "error")
                .or_else(|| text("code"))
                .unwrap_or("api_error")
                .to_owned(),
            message: text("message").unwrap_or("the upstream reported an error in its stream").to_owned(),
        })
    }

    /// The HTTP status the provider would have answered with, for the engine's
    /// verdict (an overload counts against the provider, a rate limit cools the
    /// connection, a request error costs nothing).
    pub fn status(&self) -> u16 {
        match self.kind.as_str() {
            "overloaded_error" => 529,
            "rate_limit_error" | "rate_limit_exceeded" | "insufficient_quota" => 429,
            "invalid_request_error" | "tool_use_failed" | "context_length_exceeded" => 400,
            "authentication_error" => 401,
            "permission_error" => 403,
            "not_found_error" => 404,
            "request_too_large" => 413,
            _ => 500,
        }
    }
}

fn ms_since(start: Instant, now: Instant) -> u64 {
    u64::try_from(now.saturating_duration_since(start).as_millis()).unwrap_or(u64::MAX)
}

impl ProgressWatch {
    /// A watch for a stream that started at `start`, with the throughput watchdog
    /// when `throughput` is set (it is off by default and then costs nothing).
    pub fn new(throughput: Option<ThroughputPolicy>, start: Instant) -> ProgressWatch {
        ProgressWatch { throughput: throughput.map(|p| (ThroughputWatch::new(p), start)), ..Self::default() }
    }

    /// Feeds complete frames received at `now`; true when any of their events is
    /// progress.
    pub fn saw_progress(&mut self, frames: &[u8], now: Instant) -> bool {
        if frames.is_empty() {
            return false;
        }
        // The usage the previous chunk reported is read now, after that chunk was
        // written to the client.
        if let Some(tap) = self.usage.as_mut() {
            tap.catch_up();
        }
        self.parser.feed(frames);
        let mut progress = false;
        while let Some(event) = self.parser.next_event() {
            if let Some((watch, start)) = self.throughput.as_mut() {
                // One parse answers both watchdogs.
                let judged = judge(&event.event, &event.data);
                progress |= judged.progress;
                watch.observe(ms_since(*start, now), judged.throughput);
            } else {
                // The stall watchdog alone needs only the event's `type`.
                progress |= is_progress(&event.event, &event.data);
            }
            if self.upstream_error.is_none() {
                self.upstream_error = StreamError::from_event(&event.event, &event.data);
            }
            if let Some(tap) = self.usage.as_mut() {
                tap.event(event.data);
            }
        }
        progress
    }

    /// The first error the upstream reported inside the stream, if any.
    pub fn upstream_error(&self) -> Option<&StreamError> {
        self.upstream_error.as_ref()
    }

    /// The throughput watchdog's verdict at `now` (`None` when it is off).
    pub fn too_slow(&mut self, now: Instant) -> Option<TooSlow> {
        let (watch, start) = self.throughput.as_mut()?;
        watch.too_slow(ms_since(*start, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    /// An instant on a manual clock (the gateway never reads the system clock).
    fn at() -> Instant {
        ManualClock::new(switchyard_types::UnixMillis(0)).now_mono()
    }

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

    mod fuzz {
        use proptest::prelude::*;

        use super::super::*;

        /// SSE-ish bytes: mostly line breaks, field names and JSON punctuation, so
        /// frame ends (and near misses such as `\r\n\n`) are common.
        fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
            proptest::collection::vec(
                prop_oneof![
                    Just(b'\n'),
                    Just(b'\r'),
                    Just(b':'),
                    Just(b' '),
                    Just(b'{'),
                    Just(b'"'),
                    Just(b'd'),
                    any::<u8>()
                ],
                0..400,
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

            /// However the bytes are cut into chunks, the framer releases them in
            /// order, each release ending on a frame end, and holds back only an
            /// unfinished frame: released bytes then the held tail are exactly the
            /// input (nothing lost, duplicated or reordered), and the tail holds no
            /// complete frame. (Where a release ends may depend on the cuts: a blank
            /// line after a frame end can start the next frame instead.)
            #[test]
            fn chunking_never_loses_reorders_or_holds_a_complete_frame(input in sse_bytes(), cuts in proptest::collection::vec(0..400_usize, 0..12)) {
                let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(input.len())).collect();
                cuts.sort_unstable();
                let mut framing = SseFraming::default();
                let mut released = Vec::new();
                let mut start = 0;
                for end in cuts.into_iter().chain(std::iter::once(input.len())) {
                    let out = framing.push(Bytes::copy_from_slice(&input[start..end])).map_err(|_| TestCaseError::fail("bound"))?;
                    prop_assert!(out.is_empty() || out.ends_with(b"\n\n") || out.ends_with(b"\r\n\r\n"), "a release ends on a frame end");
                    released.extend_from_slice(&out);
                    start = end;
                }
                let tail = framing.take_tail();
                prop_assert!(last_frame_end(&tail).is_none(), "a complete frame was held back: {:?}", tail);
                released.extend_from_slice(&tail);
                prop_assert_eq!(released, input);
            }

            /// In one piece, exactly the input up to its last frame end is released.
            #[test]
            fn one_chunk_releases_up_to_the_last_frame_end(input in sse_bytes()) {
                let mut framing = SseFraming::default();
                let out = framing.push(Bytes::copy_from_slice(&input)).map_err(|_| TestCaseError::fail("bound"))?;
                let boundary = last_frame_end(&input).unwrap_or(0);
                prop_assert_eq!(&out[..], &input[..boundary]);
            }

            /// The progress watch reads any bytes without panicking.
            #[test]
            fn the_progress_watch_takes_any_frames(input in sse_bytes()) {
                let mut watch = ProgressWatch::default();
                let _ = watch.saw_progress(&input, super::at());
            }
        }
    }

    #[test]
    fn progress_is_judged_per_event() {
        let mut w = ProgressWatch::default();
        assert!(!w.saw_progress(b"event: ping\ndata: {\"type\": \"ping\"}\n\n: keep-alive\n\n", at()));
        assert!(w.saw_progress(
            b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"\"}}\n\n",
            at()
        ));
        assert!(w.saw_progress(b"data: {\"choices\":[]}\n\n", at()));
    }

    #[test]
    fn errors_reported_inside_a_stream_are_read_in_every_format() {
        let read = |event: &str, data: &str| {
            StreamError::from_event(event, data).map(|e| (e.kind.clone(), e.status()))
        };
        assert_eq!(
            read("error", r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
            Some(("overloaded_error".into(), 529))
        );
        assert_eq!(
            read(
                "error",
                r#"{"type":"error","sequence_number":2,"code":"insufficient_quota","message":"quota"}"#
            ),
            Some(("insufficient_quota".into(), 429))
        );
        assert_eq!(
            read(
                "response.failed",
                r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}"#
            ),
            Some(("server_error".into(), 500))
        );
        assert_eq!(
            read(
                "message",
                r#"{"error":{"message":"Tool call validation failed","type":"invalid_request_error","code":"tool_use_failed"}}"#
            ),
            Some(("invalid_request_error".into(), 400))
        );
        // Model text that talks about errors, and null error fields, are not errors.
        assert_eq!(
            read("message", r#"{"choices":[{"delta":{"content":"the \"error\" word"}}],"error":null}"#),
            None
        );
        assert_eq!(
            read(
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"error"}}"#
            ),
            None
        );
    }
}
