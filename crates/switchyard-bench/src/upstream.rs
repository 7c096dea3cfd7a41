//! The fake provider the benchmark drives, directly and through the gateway.
//!
//! It is deliberately as cheap as an HTTP/1.1 server can be: a bare hyper
//! connection per socket, bodies built once at start and shared as `Bytes`, no
//! request recording, no locks, no routing table. Anything slower would hide the
//! gateway's own cost inside the upstream's (the testkit's `FakeUpstream` records
//! every request behind a mutex, which is right for tests and wrong here).
//!
//! Answers:
//! - `POST /v1/chat/completions`: a small fixed Chat Completions JSON body, or its
//!   SSE stream when the body has `"stream":true`.
//! - `POST /v1/messages`: with `"stream":true` in the body, a fixed Anthropic SSE
//!   stream; otherwise a fixed Anthropic message.
//! - `POST /v1/responses`: a fixed Responses API object, or its SSE stream.
//! - anything else: 404.
//!
//! [`Pace::Fast`] sends the 7-frame stream at once; [`Pace::Slow`] sends one frame per
//! interval, so that streams stay open long enough to hold many of them at once (the
//! Anthropic stream only: the other two formats' streams are always sent at once;
//! only the PGO training run, `train`, asks for them).
//! The server runs until dropped (its accept loop is aborted).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use switchyard_testkit::wire;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// How the SSE answer is paced.
#[derive(Debug, Clone, Copy)]
pub enum Pace {
    /// The whole 7-frame stream at once.
    Fast,
    /// `frames` frames, the first at once and then one every `interval`.
    Slow {
        /// Gap between frames.
        interval: Duration,
        /// Frames in the stream (at least 7).
        frames: usize,
    },
}

/// Bodies built once and shared by every response.
struct Bodies {
    chat: Bytes,
    chat_sse: Arc<[Bytes]>,
    message: Bytes,
    sse: Arc<[Bytes]>,
    responses: Bytes,
    responses_sse: Arc<[Bytes]>,
    pace: Pace,
}

impl Bodies {
    fn new(pace: Pace) -> Bodies {
        let chat = wire::chat_completion("bench-model", "pong").to_string();
        let message = wire::anthropic_message("claude-bench", "pong").to_string();
        let sse = match pace {
            Pace::Fast => wire::anthropic_sse("claude-bench", "pong"),
            Pace::Slow { frames, .. } => long_anthropic_sse(frames),
        };
        let frames = |texts: Vec<String>| -> Arc<[Bytes]> { texts.into_iter().map(Bytes::from).collect() };
        Bodies {
            chat: Bytes::from(chat),
            chat_sse: frames(wire::chat_sse("bench-model", "pong")),
            message: Bytes::from(message),
            sse: frames(sse),
            responses: Bytes::from(wire::responses_json("bench-model", "pong").to_string()),
            responses_sse: frames(wire::responses_sse("bench-model", "pong")),
            pace,
        }
    }
}

/// An Anthropic stream of `frames` frames: the usual opening and closing frames of
/// `wire::anthropic_sse`, with extra text deltas in between.
fn long_anthropic_sse(frames: usize) -> Vec<String> {
    let base = wire::anthropic_sse("claude-slow", "tok ");
    let (head, tail) = base.split_at(3.min(base.len()));
    let tail = tail.get(1..).unwrap_or_default(); // drop the single delta, re-added below
    let deltas = frames.saturating_sub(head.len() + tail.len()).max(1);
    let mut out = head.to_vec();
    for i in 0..deltas {
        let delta = json!({
            "type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": format!("tok{i} ")}
        });
        out.push(format!("event: content_block_delta\ndata: {delta}\n\n"));
    }
    out.extend_from_slice(tail);
    out
}

/// A running fake upstream.
pub struct FakeUpstream {
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl FakeUpstream {
    /// Binds 127.0.0.1:0 and serves until dropped.
    pub async fn start(pace: Pace) -> anyhow::Result<FakeUpstream> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let bodies = Arc::new(Bodies::new(pace));
        let accept = tokio::spawn(accept_loop(listener, bodies));
        Ok(FakeUpstream { addr, accept })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, bodies: Arc<Bodies>) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                eprintln!("[bench] fake upstream accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let bodies = bodies.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| answer(req, bodies.clone()));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

async fn answer(req: Request<Incoming>, bodies: Arc<Bodies>) -> Result<Response<ResponseBody>, hyper::Error> {
    if req.method() != Method::POST {
        return Ok(status_only(StatusCode::METHOD_NOT_ALLOWED));
    }
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await?.to_bytes();
    let response = match path.as_str() {
        "/v1/chat/completions" if wants_stream(&body) => sse_response(bodies.chat_sse.clone(), Pace::Fast),
        "/v1/chat/completions" => json_response(bodies.chat.clone()),
        "/v1/messages" if wants_stream(&body) => sse_response(bodies.sse.clone(), bodies.pace),
        "/v1/messages" => json_response(bodies.message.clone()),
        "/v1/responses" if wants_stream(&body) => sse_response(bodies.responses_sse.clone(), Pace::Fast),
        "/v1/responses" => json_response(bodies.responses.clone()),
        _ => status_only(StatusCode::NOT_FOUND),
    };
    Ok(response)
}

/// Whether a JSON request body asks for a stream (compact or spaced JSON).
pub(crate) fn wants_stream(body: &[u8]) -> bool {
    memchr::memmem::find(body, b"\"stream\":true").is_some()
        || memchr::memmem::find(body, b"\"stream\": true").is_some()
}

fn status_only(status: StatusCode) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *response.status_mut() = status;
    response
}

fn json_response(body: Bytes) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(body).boxed_unsync());
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn sse_response(frames: Arc<[Bytes]>, pace: Pace) -> Response<ResponseBody> {
    let body = match pace {
        Pace::Fast => {
            let chunks: Vec<Result<Frame<Bytes>, Infallible>> =
                frames.iter().map(|f| Ok(Frame::data(f.clone()))).collect();
            StreamBody::new(stream::iter(chunks)).boxed_unsync()
        }
        Pace::Slow { interval, .. } => {
            let paced = stream::unfold(0usize, move |i| {
                let frames = frames.clone();
                async move {
                    let frame = frames.get(i)?.clone();
                    if i > 0 {
                        tokio::time::sleep(interval).await;
                    }
                    Some((Ok(Frame::data(frame)), i + 1))
                }
            });
            StreamBody::new(paced).boxed_unsync()
        }
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_stream_has_the_requested_frame_count_and_ends_properly() {
        let frames = long_anthropic_sse(31);
        assert_eq!(frames.len(), 31);
        assert!(frames[0].starts_with("event: message_start"));
        assert!(frames[30].starts_with("event: message_stop"));
        assert!(frames.iter().filter(|f| f.starts_with("event: content_block_delta")).count() >= 20);
    }

    #[test]
    fn stream_flag_is_found_in_compact_and_spaced_json() {
        assert!(wants_stream(br#"{"model":"m","stream":true}"#));
        assert!(wants_stream(br#"{"model": "m", "stream": true}"#));
        assert!(!wants_stream(br#"{"model":"m","stream":false}"#));
    }
}
