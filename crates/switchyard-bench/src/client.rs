//! The load generator's HTTP/1.1 client: keep-alive connections made with hyper's
//! connection-level API, a small fixed-size pool for the open-loop runs, and the
//! request specs replayed by every phase.
//!
//! Why not a general-purpose client: the load generator shares two cores with the
//! gateway and the fake upstream, so every microsecond it spends is stolen from the
//! system under test. A bare `SendRequest` per connection has no pool bookkeeping,
//! no DNS, no redirects and no per-request allocation beyond the request itself.
//!
//! Failure behaviour: any transport error, non-2xx status or empty body is an error
//! for the caller to count; a connection that failed is dropped, never reused.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Empty, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

/// One keep-alive HTTP/1.1 connection.
pub type Conn = SendRequest<Full<Bytes>>;

/// A request to replay: where it goes and exactly what it carries.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// Server address.
    pub addr: SocketAddr,
    /// Origin-form path.
    pub path: &'static str,
    /// All request headers, including `host`.
    pub headers: HeaderMap,
    /// The JSON body.
    pub body: Bytes,
}

impl RequestSpec {
    /// A JSON `POST` to `addr` + `path` with the given extra headers.
    pub fn post_json(
        addr: SocketAddr,
        path: &'static str,
        extra: &[(&'static str, &str)],
        body: Bytes,
    ) -> anyhow::Result<RequestSpec> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::try_from(addr.to_string())?);
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in extra {
            headers.insert(*name, HeaderValue::try_from(*value)?);
        }
        Ok(RequestSpec { addr, path, headers, body })
    }

    /// The request, ready to send.
    pub fn request(&self) -> anyhow::Result<Request<Full<Bytes>>> {
        let mut req =
            Request::builder().method(Method::POST).uri(self.path).body(Full::new(self.body.clone()))?;
        *req.headers_mut() = self.headers.clone();
        Ok(req)
    }
}

/// The point in the exchange at which the measurement stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// The whole response body has arrived.
    FullBody,
    /// The first body chunk has arrived (time to first byte of a stream). The rest
    /// of the body is still read, so the connection can be reused.
    FirstByte,
}

/// Opens a keep-alive connection with Nagle off.
pub async fn connect(addr: SocketAddr) -> anyhow::Result<Conn> {
    let stream = TcpStream::connect(addr).await.with_context(|| format!("connect {addr}"))?;
    stream.set_nodelay(true)?;
    let (conn, driver) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = driver.await;
    });
    Ok(conn)
}

/// Sends `spec` on `conn` and reads the response to its end; returns when the
/// measured point ([`Until`]) was reached.
pub async fn exchange(conn: &mut Conn, spec: &RequestSpec, until: Until) -> anyhow::Result<Instant> {
    conn.ready().await?;
    let response = conn.send_request(spec.request()?).await?;
    let status = response.status();
    let mut body = response.into_body();
    let mut bytes = 0usize;
    let mut measured_at = None;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            if bytes == 0 && !data.is_empty() && until == Until::FirstByte {
                measured_at = Some(Instant::now());
            }
            bytes += data.len();
        }
    }
    if !status.is_success() {
        bail!("HTTP {status}");
    }
    if bytes == 0 {
        bail!("empty body");
    }
    Ok(measured_at.unwrap_or_else(Instant::now))
}

/// A fixed-size set of keep-alive connections to one address. A caller waits for a
/// free connection when all are busy; in an open-loop run that wait counts as latency,
/// exactly as a real client's queueing would.
pub struct Pool {
    addr: SocketAddr,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
}

impl Pool {
    /// A pool of at most `size` connections, opened on demand.
    pub fn new(addr: SocketAddr, size: usize) -> Arc<Pool> {
        Arc::new(Pool { addr, idle: Mutex::new(Vec::with_capacity(size)), permits: Semaphore::new(size) })
    }

    /// Runs one exchange on a pooled connection.
    pub async fn exchange(&self, spec: &RequestSpec, until: Until) -> anyhow::Result<Instant> {
        let _permit = self.permits.acquire().await?;
        let mut conn = loop {
            let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            // The server closes keep-alive connections it saw idle too long (the
            // gateway after its header timeout); like any HTTP client's pool, skip
            // one already known closed, and one that turns out closed when asked
            // whether it can send (nothing was sent on it yet).
            match idle {
                Some(mut conn) => {
                    if !conn.is_closed() && conn.ready().await.is_ok() {
                        break conn;
                    }
                }
                None => break connect(self.addr).await?,
            }
        };
        let result = exchange(&mut conn, spec, until).await;
        if result.is_ok() && !conn.is_closed() {
            self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
        }
        result
    }
}

/// A one-off request without a body (readiness probe, management API); returns the
/// status and the body.
pub async fn simple(
    addr: SocketAddr,
    method: Method,
    path: &str,
    bearer: Option<&str>,
) -> anyhow::Result<(StatusCode, Bytes)> {
    let stream = TcpStream::connect(addr).await?;
    let (mut conn, driver) = http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = driver.await;
    });
    let mut req = Request::builder().method(method).uri(path).body(Empty::new())?;
    req.headers_mut().insert(header::HOST, HeaderValue::try_from(addr.to_string())?);
    if let Some(token) = bearer {
        req.headers_mut().insert(header::AUTHORIZATION, HeaderValue::try_from(format!("Bearer {token}"))?);
    }
    let response = conn.send_request(req).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, body))
}
