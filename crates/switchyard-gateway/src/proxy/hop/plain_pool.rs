//! A connection lane's pool of plain-HTTP/1.1 upstream connections (ADR 0011, step 2):
//! hyper's connection-level client, each connection's task on the lane that opened it,
//! idle connections kept per host and handed out most recent first.
//!
//! Why not hyper-util's pooled client, which the hop keeps for `https://`: for every
//! request it hashes the pool key with SipHash under a lock, formats the `host`
//! header, and spawns a task that waits for the connection to become idle again.
//! On the one call every inference request makes, that is measurable:
//! `scripts/instructions.sh` counts the lane's instructions per request at 104.7k
//! with it and 92.7k with this pool. Plain HTTP is where those microseconds show
//! (local model servers, a gateway on loopback). Here a connection goes back to its
//! host's idle list when its answer's body ends, and the lane is the only thread
//! that touches the list, so the lock is never contended.
//!
//! It behaves as hyper-util's pool did: the same connector (`HttpConnector` under the
//! hop's one connect deadline), idle connections closed after [`super::POOL_IDLE`] (a
//! reaper on the gateway's clock while any are idle, so no socket outlives it), at
//! most the lane's share of idle connections per host, and a request that a reused
//! connection never sent (the upstream closed it meanwhile) sent again on a new one.
//!
//! One thing it does that hyper-util's pool cannot: only the host's
//! [`WARM_IDLE_PER_HOST`] most recently used idle connections wait the full idle
//! timeout; the others, what a burst of concurrent requests leaves behind, close
//! after [`BURST_IDLE`]. After 5,000 concurrent streams the lanes kept their share
//! of 64 idle connections for 30 s, each with hyper's buffers and its task (~40 KB,
//! and the slabs they pinned): a quarter of what the gateway still held 10 s after
//! the burst. Under steady load a connection is reused within milliseconds, and an
//! agent's pace needs a few, so neither notices.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery};
use http::{HeaderMap, HeaderValue, Method, Request, Response, Uri, header};
use http_body_util::Full;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1;
use hyper_util::client::legacy::connect::HttpConnector;
use tower_service::Service;

use tokio::sync::Notify;

use super::{ConnectDeadline, HopError};
use crate::clock::GatewayClock;

/// Idle connections per host (the most recently used) that a lane keeps for the
/// pool's whole idle timeout: a few agents' requests at once.
pub(super) const WARM_IDLE_PER_HOST: usize = 4;
/// How long the other idle connections of a host stay.
pub(crate) const BURST_IDLE: Duration = Duration::from_secs(2);

type Sender = http1::SendRequest<Full<Bytes>>;

/// One lane's idle plain-HTTP connections, by host.
pub(super) struct PlainPool {
    connector: ConnectDeadline<HttpConnector>,
    idle: Mutex<IdleHosts>,
    max_idle_per_host: usize,
    idle_timeout: Duration,
    clock: Arc<dyn GatewayClock>,
    /// Wakes the reaper early when a host's idle list grows past the warm ones.
    burst: Arc<Notify>,
}

#[derive(Default)]
struct IdleHosts {
    /// By the URI's authority: the few hosts a user configures, found by comparing
    /// (cheaper than hashing the key for so few).
    hosts: Vec<(Authority, Vec<Idle>)>,
    /// Each host's `host` header, made once: a clone shares its bytes, where making
    /// it is an allocation and a copy on every request. Cleared when it outgrows
    /// [`HOST_HEADERS_KEPT`] (hosts a changed configuration no longer uses).
    host_headers: Vec<(Authority, HeaderValue)>,
    /// Whether a reaper task is running (it stops once nothing is idle).
    reaping: bool,
}

struct Idle {
    sender: Sender,
    since: Instant,
}

impl PlainPool {
    pub(super) fn new(
        connector: ConnectDeadline<HttpConnector>,
        max_idle_per_host: usize,
        idle_timeout: Duration,
        clock: Arc<dyn GatewayClock>,
    ) -> PlainPool {
        PlainPool {
            connector,
            idle: Mutex::default(),
            max_idle_per_host,
            idle_timeout,
            clock,
            burst: Arc::new(Notify::new()),
        }
    }

    /// POSTs `body` to `uri` (absolute, `http://`) and returns once the answer's
    /// headers are in; the connection goes back to the pool when the body ends.
    pub(super) async fn post(
        self: &Arc<Self>,
        uri: Uri,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response<PooledBody>, HopError> {
        let authority = uri.authority().cloned().ok_or("the upstream URL has no host")?;
        if !headers.contains_key(header::HOST) {
            headers.insert(header::HOST, self.host_header(&authority)?);
        }
        // HTTP/1.1 to an origin server: the request line carries the path only.
        let path = uri.path_and_query().cloned().unwrap_or_else(|| PathAndQuery::from_static("/"));
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = Uri::from(path);
        *request.headers_mut() = headers;
        if let Some(mut sender) = self.checkout(&authority) {
            match sender.try_send_request(request).await {
                Ok(response) => return Ok(self.pooled(response, sender, authority)),
                // The connection closed before the request went out (the upstream
                // dropped an idle connection): it is safe to send it again.
                Err(mut failed) => match failed.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(failed.into_error().into()),
                },
            }
        }
        // Boxed: connecting holds hyper's whole connection state while it runs, and
        // inline it would make every request's future (which axum moves into a box
        // of its own) that much larger.
        let mut sender = Box::pin(self.connect(&uri)).await?;
        let response = sender.send_request(request).await?;
        Ok(self.pooled(response, sender, authority))
    }

    /// A new connection, its task spawned on this thread's runtime (the lane).
    async fn connect(&self, uri: &Uri) -> Result<Sender, HopError> {
        let io = self.connector.clone().call(uri.clone()).await.map_err(ConnectFailed)?;
        let (sender, connection) = http1::handshake(io).await.map_err(|e| ConnectFailed(e.into()))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "upstream connection ended with an error");
            }
        });
        Ok(sender)
    }

    fn pooled(
        self: &Arc<Self>,
        response: Response<Incoming>,
        sender: Sender,
        authority: Authority,
    ) -> Response<PooledBody> {
        let back = Some(Box::new(Release { pool: Arc::clone(self), authority, sender }));
        response.map(|inner| PooledBody { inner, back })
    }

    /// The `host` header for `authority`, kept from an earlier request when there was one.
    fn host_header(&self, authority: &Authority) -> Result<HeaderValue, HopError> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, value)) = idle.host_headers.iter().find(|(a, _)| a == authority) {
            return Ok(value.clone());
        }
        let value = host_header(authority)?;
        if idle.host_headers.len() >= HOST_HEADERS_KEPT {
            idle.host_headers.clear();
        }
        idle.host_headers.push((authority.clone(), value.clone()));
        Ok(value)
    }

    /// The most recently used idle connection to `authority` that is still ready;
    /// expired and closed ones are dropped on the way.
    fn checkout(&self, authority: &Authority) -> Option<Sender> {
        let now = self.clock.now_mono();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let (_, list) = idle.hosts.iter_mut().find(|(a, _)| a == authority)?;
        while let Some(candidate) = list.pop() {
            // An idle connection was ready when it came back and nothing has used
            // it since, so one that is not ready now is closing.
            if candidate.sender.is_ready()
                && now.saturating_duration_since(candidate.since) < self.idle_timeout
            {
                return Some(candidate.sender);
            }
        }
        None
    }

    /// Keeps `sender` for the next request to `authority`, unless the host already
    /// has its share idle. Starts the reaper when it is not running.
    fn put(self: &Arc<Self>, authority: Authority, sender: Sender) {
        let since = self.clock.now_mono();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let at = match idle.hosts.iter().position(|(a, _)| *a == authority) {
            Some(at) => at,
            None => {
                idle.hosts.push((authority, Vec::new()));
                idle.hosts.len() - 1
            }
        };
        let list = &mut idle.hosts[at].1;
        if list.len() >= self.max_idle_per_host {
            return;
        }
        list.push(Idle { sender, since });
        if list.len() == WARM_IDLE_PER_HOST + 1 {
            // The reaper may be in its long sleep: the extra ones go sooner.
            self.burst.notify_one();
        }
        if !idle.reaping
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            idle.reaping = true;
            runtime.spawn(reap(Arc::downgrade(self)));
        }
    }

    /// Drops expired and closed idle connections: a host's warm ones (its
    /// [`WARM_IDLE_PER_HOST`] most recent) after the idle timeout, the rest after
    /// [`BURST_IDLE`]. Returns when to look again, or `None` when nothing is idle,
    /// and then marks the reaper stopped (under the same lock, so a `put` after it
    /// starts a new one).
    fn prune(&self) -> Option<Duration> {
        let now = self.clock.now_mono();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let mut extra = false;
        idle.hosts.retain_mut(|(_, list)| {
            // Oldest first: `put` appends, `checkout` takes from the end.
            let cold = list.len().saturating_sub(WARM_IDLE_PER_HOST);
            let mut at = 0;
            list.retain(|i| {
                let limit = if at < cold { BURST_IDLE } else { self.idle_timeout };
                at += 1;
                !i.sender.is_closed() && now.saturating_duration_since(i.since) < limit
            });
            extra |= list.len() > WARM_IDLE_PER_HOST;
            !list.is_empty()
        });
        idle.reaping = !idle.hosts.is_empty();
        idle.reaping.then_some(if extra { BURST_IDLE / 2 } else { self.idle_timeout / 2 })
    }

    #[cfg(test)]
    pub(super) fn idle_count(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .hosts
            .iter()
            .map(|(_, list)| list.len())
            .sum()
    }
}

/// Closes idle connections once they have been idle too long (see
/// [`PlainPool::prune`]), on the gateway's clock, for as long as any are idle.
async fn reap(pool: Weak<PlainPool>) {
    let Some((clock, burst, mut pause)) =
        pool.upgrade().map(|p| (Arc::clone(&p.clock), Arc::clone(&p.burst), p.idle_timeout / 2))
    else {
        return;
    };
    loop {
        tokio::select! {
            () = clock.sleep(pause) => {}
            () = burst.notified() => {}
        }
        match pool.upgrade().and_then(|p| p.prune()) {
            Some(next) => pause = next,
            None => return,
        }
    }
}

/// Hosts whose `host` header a lane's pool keeps at most.
const HOST_HEADERS_KEPT: usize = 64;

/// The `host` header for `authority`: the port is left out when it is HTTP's default,
/// as hyper-util and reqwest write it.
fn host_header(authority: &Authority) -> Result<HeaderValue, HopError> {
    let value = match authority.port_u16() {
        Some(80) => HeaderValue::from_str(authority.host()),
        _ => HeaderValue::from_str(authority.as_str()),
    };
    Ok(value?)
}

/// A failure to reach the upstream (DNS, TCP, the connect deadline): what
/// [`crate::proxy::upstream_error::UpstreamError::from_hop`] reads as a connect error.
#[derive(Debug)]
pub struct ConnectFailed(pub HopError);

impl std::fmt::Display for ConnectFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("could not connect to the upstream")
    }
}

impl std::error::Error for ConnectFailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.0)
    }
}

/// Where a connection goes once its answer has been read.
struct Release {
    pool: Arc<PlainPool>,
    authority: Authority,
    sender: Sender,
}

impl Release {
    /// Back to the pool when ready; a connection still finishing its answer (a body
    /// dropped unread is drained by hyper) is put back once it is; a closed one is
    /// dropped.
    fn release(self) {
        let Release { pool, authority, mut sender } = self;
        if sender.is_ready() {
            pool.put(authority, sender);
        } else if !sender.is_closed()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                if sender.ready().await.is_ok() {
                    pool.put(authority, sender);
                }
            });
        }
    }
}

/// An answer's body from a pooled connection, which it hands back at its end.
pub struct PooledBody {
    inner: Incoming,
    /// Boxed: answers are held across many awaits of the request's future, which
    /// would otherwise grow by the connection's handle at each of them.
    back: Option<Box<Release>>,
}

impl PooledBody {
    /// A body whose connection is not this pool's (hyper-util's client owns it).
    pub(super) fn unpooled(inner: Incoming) -> PooledBody {
        PooledBody { inner, back: None }
    }

    /// Hands the connection back (once).
    fn give_back(&mut self) {
        if let Some(back) = self.back.take() {
            (*back).release();
        }
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.give_back(),
            Poll::Ready(Some(Ok(_))) if this.inner.is_end_stream() => this.give_back(),
            // A broken answer breaks its connection: never reuse it.
            Poll::Ready(Some(Err(_))) => this.back = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for PooledBody {
    fn drop(&mut self) {
        self.give_back();
    }
}
