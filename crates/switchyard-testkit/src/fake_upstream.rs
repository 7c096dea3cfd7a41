//! The scriptable fake provider.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use axum::serve::ListenerExt;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How a scripted SSE stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// Cleanly, after the last frame.
    Complete,
    /// With a transport error (the connection is cut mid-body).
    Reset,
    /// Never: the stream stays open until the client goes away.
    Hang,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete body with a status and headers.
    Body {
        /// HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body bytes.
        body: Bytes,
        /// Content type.
        content_type: String,
    },
    /// An SSE stream: frames sent with a delay before each.
    Sse {
        /// HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// `(delay before, frame text)`; frames should end with a blank line.
        frames: Vec<(Duration, String)>,
        /// How the stream ends.
        end: StreamEnd,
    },
    /// Wait, then answer with the inner reply (use to trigger timeouts).
    Delayed(Duration, Box<Reply>),
    /// An SSE stream whose frames the test sends one by one through the
    /// [`LiveFeed`] returned by [`Reply::live`]; it ends when the feed is dropped.
    Live(LiveStream),
    /// Hold the request until the test lets it through ([`Hold::release`]), then
    /// answer with the inner reply. Held requests count in
    /// [`FakeUpstream::in_flight`]: use it to see how many reach the upstream at once.
    Held(Hold, Box<Reply>),
    /// Never answer (not even headers) until the client goes away.
    Silent,
    /// Drop the connection without any response.
    Hangup,
}

/// The valve of [`Reply::Held`] replies: shared by every reply made with it.
#[derive(Debug, Clone)]
pub struct Hold(Arc<tokio::sync::Semaphore>);

impl Default for Hold {
    fn default() -> Self {
        Hold(Arc::new(tokio::sync::Semaphore::new(0)))
    }
}

impl Hold {
    /// A closed valve.
    pub fn new() -> Hold {
        Hold::default()
    }

    /// Lets `n` held requests through (the longest held first).
    pub fn release(&self, n: usize) {
        self.0.add_permits(n);
    }

    /// Lets every held request through, now and later.
    pub fn open(&self) {
        self.0.close();
    }

    async fn pass(&self) {
        if let Ok(permit) = self.0.acquire().await {
            permit.forget();
        }
    }
}

/// The receiving end of a [`Reply::Live`] stream (used once).
#[derive(Debug, Clone)]
pub struct LiveStream(Arc<Mutex<Option<mpsc::UnboundedReceiver<Bytes>>>>);

/// Sends frames into a [`Reply::Live`] stream.
#[derive(Debug, Clone)]
pub struct LiveFeed(mpsc::UnboundedSender<Bytes>);

impl LiveFeed {
    /// Sends one frame (should end with a blank line); false once the reader is gone.
    pub fn send(&self, frame: &str) -> bool {
        self.0.send(Bytes::from(frame.to_owned())).is_ok()
    }

    /// Sends raw bytes.
    pub fn send_bytes(&self, bytes: Bytes) -> bool {
        self.0.send(bytes).is_ok()
    }
}

impl Reply {
    /// A live SSE stream and the feed that drives it.
    pub fn live() -> (Reply, LiveFeed) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Reply::Live(LiveStream(Arc::new(Mutex::new(Some(rx))))), LiveFeed(tx))
    }

    /// `status` with a JSON body.
    pub fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply::Body {
            status,
            headers: Vec::new(),
            body: Bytes::from(body.to_string()),
            content_type: "application/json".into(),
        }
    }

    /// An SSE stream of `frames`, sent at once, ending cleanly.
    pub fn sse(frames: Vec<String>) -> Reply {
        Reply::Sse {
            status: 200,
            headers: Vec::new(),
            frames: frames.into_iter().map(|f| (Duration::ZERO, f)).collect(),
            end: StreamEnd::Complete,
        }
    }

    /// Adds a response header.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        match &mut self {
            Reply::Body { headers, .. } | Reply::Sse { headers, .. } => {
                headers.push((name.to_owned(), value.to_owned()));
            }
            Reply::Delayed(_, inner) | Reply::Held(_, inner) => {
                let updated = inner.as_ref().clone().with_header(name, value);
                **inner = updated;
            }
            Reply::Hangup | Reply::Live(_) | Reply::Silent => {}
        }
        self
    }

    /// This reply, held until `hold` lets it through.
    pub fn held(self, hold: &Hold) -> Reply {
        Reply::Held(hold.clone(), Box::new(self))
    }

    /// Sets how an SSE reply ends.
    pub fn ending(mut self, how: StreamEnd) -> Reply {
        if let Reply::Sse { end, .. } = &mut self {
            *end = how;
        }
        self
    }
}

/// A request the fake received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Method.
    pub method: String,
    /// The HTTP version it was spoken in.
    pub version: http::Version,
    /// Path.
    pub path: String,
    /// Raw query string.
    pub query: Option<String>,
    /// Headers as received.
    pub headers: HeaderMap,
    /// Body as received.
    pub body: Bytes,
}

impl RecordedRequest {
    /// A header as a string.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body parsed as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

#[derive(Default)]
struct Script {
    queue: VecDeque<Reply>,
    default: Option<Reply>,
    requests: Vec<RecordedRequest>,
}

struct Shared {
    script: Mutex<Script>,
    abandoned_streams: AtomicUsize,
    completed_streams: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl Shared {
    fn script(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A fake provider on 127.0.0.1.
pub struct FakeUpstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
    expected_calls: Option<usize>,
}

impl FakeUpstream {
    /// Starts a fake that answers `default` to every request not otherwise scripted.
    pub async fn start(default: Reply) -> FakeUpstream {
        match FakeUpstream::bind(0, default).await {
            Ok(fake) => fake,
            Err(e) => panic!("fake upstream cannot bind 127.0.0.1: {e}"),
        }
    }

    /// Like [`FakeUpstream::start`] on `127.0.0.1:port` (`0` picks a free port),
    /// returning the bind error instead of panicking.
    pub async fn bind(port: u16, default: Reply) -> std::io::Result<FakeUpstream> {
        let shared = Arc::new(Shared {
            script: Mutex::new(Script { default: Some(default), ..Script::default() }),
            abandoned_streams: AtomicUsize::new(0),
            completed_streams: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
        });
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let app = Router::new().fallback(handle).with_state(shared.clone());
        // Without TCP_NODELAY, a stream's second small frame waits for the client's
        // delayed ACK (~40 ms on loopback): every streamed test would pay it.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeUpstream { addr, shared, server, expected_calls: None })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply for the next request (before the default).
    pub fn push(&self, reply: Reply) {
        self.shared.script().queue.push_back(reply);
    }

    /// Replaces the default reply.
    pub fn set_default(&self, reply: Reply) {
        self.shared.script().default = Some(reply);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.script().requests.clone()
    }

    /// The number of requests received.
    pub fn calls(&self) -> usize {
        self.shared.script().requests.len()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.script().requests.last().cloned()
    }

    /// Streams whose reader went away before the fake finished sending.
    pub fn abandoned_streams(&self) -> usize {
        self.shared.abandoned_streams.load(Ordering::SeqCst)
    }

    /// Streams the fake finished sending.
    pub fn completed_streams(&self) -> usize {
        self.shared.completed_streams.load(Ordering::SeqCst)
    }

    /// Requests received and not yet answered (headers not yet sent).
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests that were ever in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// Asserts on drop that exactly `n` requests arrived.
    pub fn expect_calls(&mut self, n: usize) {
        self.expected_calls = Some(n);
    }

    /// Waits (up to `timeout`) until `cond` holds for this fake.
    pub async fn wait_until(&self, timeout: Duration, cond: impl Fn(&FakeUpstream) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while tokio::time::Instant::now() < deadline {
            if cond(self) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cond(self)
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        self.server.abort();
        if let Some(n) = self.expected_calls {
            let calls = self.calls();
            if calls != n && !std::thread::panicking() {
                panic!("fake upstream {} expected {n} call(s), got {calls}", self.addr);
            }
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let reply = {
        let mut script = shared.script();
        script.requests.push(RecordedRequest {
            method: parts.method.to_string(),
            version: parts.version,
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().map(str::to_owned),
            headers: parts.headers.clone(),
            body,
        });
        script.queue.pop_front().or_else(|| script.default.clone())
    };
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let _answered = InFlight(&shared.in_flight);
    respond(shared.clone(), reply.unwrap_or(Reply::json(500, serde_json::json!({"error": "unscripted"}))))
        .await
}

/// Counts a request in flight until its answer's headers are ready (or the client
/// went away).
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn build(status: u16, headers: &[(String, String)], content_type: &str, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        map.insert(http::header::CONTENT_TYPE, v);
    }
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            map.append(k, v);
        }
    }
    response
}

async fn respond(shared: Arc<Shared>, reply: Reply) -> Response {
    match reply {
        Reply::Silent => std::future::pending().await,
        Reply::Live(LiveStream(slot)) => {
            let rx = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
            let Some(rx) = rx else {
                return build(500, &[], "text/plain", Body::from("live stream used twice"));
            };
            let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
            })
            .boxed();
            build(200, &[], "text/event-stream", Body::from_stream(stream))
        }
        Reply::Delayed(wait, inner) => {
            tokio::time::sleep(wait).await;
            Box::pin(respond(shared, *inner)).await
        }
        Reply::Held(hold, inner) => {
            hold.pass().await;
            Box::pin(respond(shared, *inner)).await
        }
        Reply::Hangup => {
            // An error body makes hyper cut the connection before any bytes.
            let failing = futures_util::stream::once(async {
                Err::<Bytes, std::io::Error>(std::io::Error::other("hangup"))
            });
            let mut response = Response::new(Body::from_stream(failing));
            *response.status_mut() = StatusCode::OK;
            response
        }
        Reply::Body { status, headers, body, content_type } => {
            build(status, &headers, &content_type, Body::from(body))
        }
        Reply::Sse { status, headers, frames, end } => {
            let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(1);
            tokio::spawn(async move {
                for (delay, frame) in frames {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    if tx.send(Ok(Bytes::from(frame))).await.is_err() {
                        shared.abandoned_streams.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                }
                match end {
                    StreamEnd::Complete => {
                        shared.completed_streams.fetch_add(1, Ordering::SeqCst);
                    }
                    StreamEnd::Reset => {
                        let _ = tx.send(Err(std::io::Error::other("scripted reset"))).await;
                    }
                    StreamEnd::Hang => {
                        tx.closed().await;
                        shared.abandoned_streams.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
            let stream =
                futures_util::stream::unfold(
                    rx,
                    |mut rx| async move { rx.recv().await.map(|item| (item, rx)) },
                )
                .boxed();
            build(status, &headers, "text/event-stream", Body::from_stream(stream))
        }
    }
}
