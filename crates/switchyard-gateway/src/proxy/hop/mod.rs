//! The proxy hop's HTTP client (ADR 0011): hyper's, not reqwest. Plain `http://`
//! upstreams go through each lane's own pool of hyper connection-level clients
//! ([`plain_pool`]); `https://` through hyper-util's pooled client over a rustls
//! connector. The same-run A/B (`switchyard-bench hop-ab`) measured
//! reqwest's stack at about twice the CPU per forwarded request of hyper's; the hop is
//! the one call every inference request makes, so it gets the lean client.
//!
//! It is configured as reqwest was: a 10 s connect timeout (over DNS, TCP and the TLS
//! handshake together, on the gateway's clock), `TCP_NODELAY`, TCP
//! keep-alive (15 s, 3 probes) and a 30 s user timeout, idle pools of 64 per host
//! in all (shared out among the connection lanes, at least 8 each) reaped after
//! 30 s, HTTP/2 when TLS negotiates it, redirects never followed (a gateway relays
//! them). TLS trusts what reqwest trusts: the same rustls provider and
//! the platform verifier, so the side calls and the hop accept the same servers.
//!
//! An upstream the user's `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` (minus `NO_PROXY`)
//! sends through a proxy goes through reqwest, which speaks to proxies (CONNECT
//! tunnels, absolute-form requests, proxy credentials); the match is the one reqwest
//! itself makes (hyper-util's matcher). Without those variables every request takes
//! the direct path and the matcher is never consulted.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use futures_util::Stream;
use http::uri::Scheme;
use http::{HeaderMap, HeaderValue, Method, Request, Uri, header};
use http_body_util::{BodyDataStream, Either, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;
use tower_service::Service;

use crate::clock::GatewayClock;
use crate::state::ProxyOptions;

mod plain_pool;

/// How soon the idle upstream connections a burst left close (`conn::lane_memory`
/// waits longer before it flushes a lane's cache).
pub(crate) use plain_pool::BURST_IDLE as POOL_BURST_IDLE;

use plain_pool::PlainPool;
pub use plain_pool::{ConnectFailed, PooledBody};

/// An answer's body: hyper's on the direct path, reqwest's through a proxy.
pub type HopBody = Either<PooledBody, reqwest::Body>;

/// An upstream answer, headers read, body not yet.
pub type HopResponse = http::Response<HopBody>;

/// A failure of the hop or of reading an answer's body (its cause chain is what
/// [`super::upstream_error::UpstreamError::from_hop`] sorts).
pub type HopError = Box<dyn StdError + Send + Sync>;

/// The body of an answer as a stream of data chunks.
pub type UpstreamStream = Pin<Box<dyn Stream<Item = Result<Bytes, HopError>> + Send>>;

/// Which proxy, if any, the hop sends through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum UpstreamProxy {
    /// The environment's `ALL_PROXY`/`HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`, as curl
    /// and reqwest read them.
    #[default]
    FromEnv,
    /// Every upstream through this proxy URL (tests; an embedding app).
    Url(String),
    /// No proxy whatever the environment says (tests; an embedding app).
    Direct,
}

/// Pool and socket options, shared with the side-call client so both behave alike.
const POOL_IDLE: Duration = Duration::from_secs(30);
/// A burst of 1,000 streams must not pin 1,000 idle upstream sockets afterwards.
/// The side-call client's cap; the hop shares it out among its lanes' pools.
const POOL_MAX_IDLE_PER_HOST: usize = 64;
/// The least a lane's pool keeps idle per host however many lanes there are.
const LANE_MIN_IDLE_PER_HOST: usize = 8;
const TCP_KEEPALIVE: Duration = Duration::from_secs(15);
const TCP_KEEPALIVE_RETRIES: u32 = 3;
#[cfg(target_os = "linux")]
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);

/// The variables that can name a proxy (hyper-util's matcher reads the same).
const PROXY_VARIABLES: [&str; 6] =
    ["ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"];

type DirectClient = Client<ConnectDeadline<HttpsConnector<HttpConnector>>, Full<Bytes>>;

/// The proxy hop's client. Cheap to clone (the pools are shared).
#[derive(Clone)]
pub struct HopClient {
    /// One pool per connection lane (`crate::conn::lanes`), then one for every other
    /// thread: an upstream connection's task runs on the lane that opened it, so a
    /// lane reusing only its own connections never wakes another thread.
    direct: Arc<[DirectClient]>,
    /// The same, for plain-HTTP upstreams: connection-level clients.
    plain: Arc<[Arc<PlainPool>]>,
    proxied: Option<Arc<Proxied>>,
}

/// The path through a proxy: which upstreams take it, and the client that speaks it.
struct Proxied {
    matcher: Matcher,
    client: reqwest::Client,
}

impl HopClient {
    /// Builds the client with a pool for each of `lanes` connection lanes;
    /// `options.connect_timeout` bounds name resolution, the TCP connect and the TLS
    /// handshake together, on `clock`.
    pub fn new(
        options: &ProxyOptions,
        lanes: usize,
        clock: Arc<dyn GatewayClock>,
    ) -> anyhow::Result<HopClient> {
        let connect_timeout = options.connect_timeout;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(connect_timeout));
        tcp.set_keepalive(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_interval(Some(TCP_KEEPALIVE));
        tcp.set_keepalive_retries(Some(TCP_KEEPALIVE_RETRIES));
        #[cfg(target_os = "linux")]
        tcp.set_tcp_user_timeout(Some(TCP_USER_TIMEOUT));
        let plain_connector =
            ConnectDeadline { inner: tcp.clone(), timeout: connect_timeout, clock: Arc::clone(&clock) };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(&options.extra_tls_roots)?)
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(tcp);
        let connector =
            ConnectDeadline { inner: connector, timeout: connect_timeout, clock: Arc::clone(&clock) };
        // The lanes share the idle cap, so more cores do not mean more idle sockets
        // (and their buffers) after a burst.
        let idle_per_lane = (POOL_MAX_IDLE_PER_HOST / lanes.max(1)).max(LANE_MIN_IDLE_PER_HOST);
        let direct = (0..=lanes)
            .map(|_| {
                Client::builder(TokioExecutor::new())
                    .timer(TokioTimer::new())
                    .pool_timer(TokioTimer::new())
                    .pool_idle_timeout(POOL_IDLE)
                    .pool_max_idle_per_host(idle_per_lane)
                    .build(connector.clone())
            })
            .collect();
        let plain = (0..=lanes)
            .map(|_| {
                Arc::new(PlainPool::new(
                    plain_connector.clone(),
                    idle_per_lane,
                    POOL_IDLE,
                    Arc::clone(&clock),
                ))
            })
            .collect();
        // Which upstreams go through a proxy, and reqwest's client for them (it reads
        // the environment's proxies itself; an explicit one is given to it).
        let side_calls = || side_call_client(connect_timeout, &options.extra_tls_roots);
        let proxied = match &options.upstream_proxy {
            UpstreamProxy::Direct => None,
            UpstreamProxy::FromEnv => PROXY_VARIABLES
                .iter()
                .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
                .then(|| anyhow::Ok((Matcher::from_env(), side_calls()?)))
                .transpose()?,
            UpstreamProxy::Url(url) => {
                let explicit = reqwest::Proxy::all(url.as_str()).context("the upstream proxy URL")?;
                Some((Matcher::builder().all(url.clone()).build(), side_calls()?.proxy(explicit)))
            }
        };
        let proxied = match proxied {
            None => None,
            Some((matcher, client)) => {
                let client = client.build().context("building the proxied upstream client")?;
                Some(Arc::new(Proxied { matcher, client }))
            }
        };
        Ok(HopClient { direct, plain, proxied })
    }

    /// Sends a POST with `body` to `uri` (absolute) and returns once the answer's
    /// headers are in. `accept: */*` is added when the client sent no `accept`, as
    /// reqwest did.
    ///
    /// Not an async fn: that future kept the request's parts twice (its by-value
    /// arguments and the locals made from them) and the largest path's state inline,
    /// ~690 bytes that the attempt's future carried and copied twice per request. The
    /// request is prepared here, and each path's future is one that already exists:
    /// the plain pool's, boxed (as before), hyper-util's (boxed by hyper-util) or
    /// reqwest's, boxed (only requests through a configured proxy take it).
    pub fn post(
        &self,
        uri: Uri,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> impl Future<Output = Result<HopResponse, HopError>> + Send + '_ {
        use futures_util::FutureExt;
        use futures_util::future::Either as Path;
        if !headers.contains_key(header::ACCEPT) {
            headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        }
        if let Some(proxied) = self.proxied.as_deref()
            && proxied.matcher.intercept(&uri).is_some()
        {
            let send = proxied.client.post(uri.to_string()).headers(headers).body(body).send();
            return Path::Left(Box::pin(async move {
                let response = send.await?;
                Ok(http::Response::<reqwest::Body>::from(response).map(Either::Right))
            }));
        }
        let pool = Self::pool_index();
        if uri.scheme() == Some(&Scheme::HTTP) {
            let plain = &self.plain[pool % self.plain.len()];
            // Boxed, as hyper-util boxes its own: the request's future, which axum
            // moves into a box of its own and keeps while an answer streams, does
            // not grow by the size of the hop's.
            let answer = Box::pin(plain.post(uri, headers, body));
            return Path::Right(Path::Left(answer.map(|answer| Ok(answer?.map(Either::Left)))));
        }
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let answer = self.direct[pool % self.direct.len()].request(request);
        Path::Right(Path::Right(
            answer.map(|answer| Ok(answer?.map(|body| Either::Left(PooledBody::unpooled(body))))),
        ))
    }

    /// This thread's pools: its lane's, or the ones for threads off the lanes.
    fn pool_index() -> usize {
        crate::conn::lanes::current().map_or(0, |lane| lane + 1)
    }
}

/// A connector with one deadline over all of connecting (DNS, TCP, TLS), as reqwest
/// had: `HttpConnector`'s own timeout covers each TCP attempt only, so an upstream
/// that accepts and then stalls the handshake would otherwise hold the attempt until
/// its answer budget ran out, and be logged as a slow answer instead of a failed
/// connection.
#[derive(Clone)]
struct ConnectDeadline<C> {
    inner: C,
    timeout: Duration,
    clock: Arc<dyn GatewayClock>,
}

impl<C> Service<Uri> for ConnectDeadline<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
    C::Error: Into<HopError>,
{
    type Response = C::Response;
    type Error = HopError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, HopError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), HopError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.inner.call(uri);
        let deadline = self.clock.sleep(self.timeout);
        let ms = self.timeout.as_millis();
        Box::pin(async move {
            tokio::select! {
                connected = connecting => connected.map_err(Into::into),
                () = deadline => Err(Box::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no connection within {ms} ms (DNS, TCP and TLS)"),
                )) as HopError),
            }
        })
    }
}

/// An answer's body as a stream of its data chunks (trailers are dropped).
pub fn body_stream(body: HopBody) -> UpstreamStream {
    Box::pin(BodyDataStream::new(body))
}

/// The reqwest builder the side calls (OAuth, usage, connection tests) and the proxied
/// hop share: the hop's socket and pool options, proxies from the environment, the
/// platform's TLS roots and `extra_roots`.
pub fn side_call_client(
    connect_timeout: Duration,
    extra_roots: &[CertificateDer<'static>],
) -> anyhow::Result<reqwest::ClientBuilder> {
    let extra_roots = extra_roots
        .iter()
        .map(|der| reqwest::Certificate::from_der(der))
        .collect::<Result<Vec<_>, _>>()
        .context("an extra TLS root")?;
    Ok(reqwest::Client::builder()
        .tls_certs_merge(extra_roots)
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(POOL_IDLE)
        .pool_max_idle_per_host(POOL_MAX_IDLE_PER_HOST)
        // A gateway relays redirects to the client; it never follows them itself.
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true))
}

/// The hop's TLS: the platform verifier (what reqwest uses, so both clients accept
/// the same servers) over the platform's roots and `extra_roots`.
fn tls_config(extra_roots: &[CertificateDer<'static>]) -> anyhow::Result<rustls::ClientConfig> {
    let provider = crypto_provider();
    let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(
        extra_roots.iter().cloned(),
        Arc::clone(&provider),
    )
    .context("loading the platform's TLS roots")?;
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("the TLS protocol versions")?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// The process's rustls provider if one was installed, else aws-lc-rs: what reqwest
/// picks, so both clients negotiate alike.
fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::convert::Infallible;

    use http_body_util::BodyExt;
    use hyper_util::rt::TokioIo;
    use tokio::task::JoinSet;

    use super::*;
    use crate::clock::SystemClock;
    use crate::conn::lanes::Lanes;
    use crate::test_support::eventually;

    /// A loopback upstream that answers each request with the number of the TCP
    /// connection it came on (`connection: close` too when `close` is set), and
    /// counts the connections that have ended.
    struct Numbering {
        uri: Uri,
        ended: Arc<std::sync::atomic::AtomicUsize>,
    }

    async fn numbering_upstream_with(close: bool) -> Numbering {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let ended = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&ended);
        tokio::spawn(async move {
            let mut number = 0u32;
            while let Ok((tcp, _)) = listener.accept().await {
                number += 1;
                let answer = hyper::service::service_fn(move |_| async move {
                    let mut response = http::Response::new(Full::new(Bytes::from(number.to_string())));
                    if close {
                        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                    }
                    Ok::<_, Infallible>(response)
                });
                let counter = Arc::clone(&counter);
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), answer)
                        .await;
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                });
            }
        });
        let uri = format!("http://{addr}/v1/messages").parse().unwrap_or_else(|e| panic!("{e}"));
        Numbering { uri, ended }
    }

    async fn numbering_upstream() -> Uri {
        numbering_upstream_with(false).await.uri
    }

    fn direct_options() -> ProxyOptions {
        ProxyOptions {
            connect_timeout: Duration::from_secs(5),
            upstream_proxy: UpstreamProxy::Direct,
            ..ProxyOptions::default()
        }
    }

    fn hop_on(clock: Arc<dyn GatewayClock>) -> HopClient {
        HopClient::new(&direct_options(), 1, clock).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The upstream connections that answered three requests sent one after the other.
    async fn connections_used(hop: HopClient, uri: Uri) -> BTreeSet<String> {
        let mut used = BTreeSet::new();
        for _ in 0..3 {
            let answer = hop.post(uri.clone(), HeaderMap::new(), Bytes::from_static(b"{}")).await;
            let body = answer.unwrap_or_else(|e| panic!("{e}")).into_body();
            let read = body.collect().await.unwrap_or_else(|e| panic!("{e}")).to_bytes();
            used.insert(String::from_utf8_lossy(&read).into_owned());
        }
        used
    }

    /// Each lane uses only its own upstream connections (their tasks run on the lane
    /// that opened them), and threads off the lanes have a pool of their own: the
    /// connections two lanes and the test's thread used never overlap. With one
    /// shared pool the test's requests would reuse a connection a lane left idle.
    #[tokio::test]
    async fn each_lane_keeps_its_own_upstream_connections() {
        let uri = numbering_upstream().await;
        let lanes = Lanes::start(2, None).unwrap_or_else(|e| panic!("{e}"));
        let hop = HopClient::new(&direct_options(), lanes.count(), Arc::new(SystemClock))
            .unwrap_or_else(|e| panic!("{e}"));
        let (used_tx, mut used_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut on_lanes = JoinSet::new();
        for _ in 0..2 {
            let (hop, uri, used_tx) = (hop.clone(), uri.clone(), used_tx.clone());
            lanes.spawn(&mut on_lanes, async move {
                let _ = used_tx.send(connections_used(hop, uri).await);
            });
        }
        while let Some(done) = on_lanes.join_next().await {
            done.unwrap_or_else(|e| panic!("{e}"));
        }
        let mut pools = vec![connections_used(hop.clone(), uri).await];
        while let Ok(used) = used_rx.try_recv() {
            pools.push(used);
        }
        assert_eq!(pools.len(), 3);
        assert!(pools.iter().all(|used| used.len() == 1), "a pool did not reuse its connection: {pools:?}");
        let all: BTreeSet<&String> = pools.iter().flatten().collect();
        assert_eq!(
            all.len(),
            pools.iter().map(BTreeSet::len).sum::<usize>(),
            "pools shared a connection: {pools:?}"
        );
    }

    /// Plain-HTTP requests one after another reuse one upstream connection, the
    /// `host` header names the upstream (its port too), and an answer that says
    /// `connection: close` is not reused: the next request opens a new connection.
    #[tokio::test]
    async fn plain_http_reuses_a_connection_until_the_upstream_closes_it() {
        let hop = hop_on(Arc::new(SystemClock));
        assert_eq!(connections_used(hop.clone(), numbering_upstream().await).await.len(), 1);
        let closing = numbering_upstream_with(true).await;
        let used = connections_used(hop, closing.uri).await;
        assert_eq!(used.len(), 3, "{used:?}");
    }

    /// An idle connection is closed once it has been idle for the pool's timeout on
    /// the gateway's clock (the upstream sees it end), and the next request opens a
    /// new one; before that, it is reused.
    #[tokio::test]
    async fn idle_plain_connections_are_closed_after_the_idle_timeout() {
        let clock = Arc::new(crate::clock::ManualClock::new(switchyard_types::UnixMillis(0)));
        let hop = hop_on(clock.clone());
        let upstream = numbering_upstream_with(false).await;
        let first = connections_used(hop.clone(), upstream.uri.clone()).await;
        assert_eq!(hop.plain[0].idle_count(), 1);
        clock.advance(POOL_IDLE - Duration::from_secs(1));
        assert_eq!(
            connections_used(hop.clone(), upstream.uri.clone()).await,
            first,
            "reused before the timeout"
        );
        assert_eq!(upstream.ended.load(std::sync::atomic::Ordering::SeqCst), 0);
        clock.advance(POOL_IDLE + Duration::from_secs(1));
        eventually("the reaper closing the idle connection", || hop.plain[0].idle_count() == 0).await;
        eventually("the upstream seeing the connection end", || {
            upstream.ended.load(std::sync::atomic::Ordering::SeqCst) == 1
        })
        .await;
        let after = connections_used(hop, upstream.uri).await;
        assert!(after.is_disjoint(&first), "{after:?} after {first:?}");
    }

    /// After a burst of concurrent requests only the host's warm idle connections
    /// (the most recently used) wait out the idle timeout: the others close after
    /// `BURST_IDLE`, the upstream sees them end, and the warm ones are still reused.
    #[tokio::test]
    async fn a_bursts_extra_idle_connections_close_soon_and_the_warm_ones_stay() {
        use super::plain_pool::{BURST_IDLE, WARM_IDLE_PER_HOST};
        use std::sync::atomic::Ordering::SeqCst;
        let clock = Arc::new(crate::clock::ManualClock::new(switchyard_types::UnixMillis(0)));
        let hop = hop_on(clock.clone());
        let upstream = numbering_upstream_with(false).await;
        let burst = WARM_IDLE_PER_HOST + 3;
        // Answers held unread keep their connections busy: each request opens one.
        let mut held = Vec::new();
        for _ in 0..burst {
            let answer = hop.post(upstream.uri.clone(), HeaderMap::new(), Bytes::from_static(b"{}")).await;
            held.push(answer.unwrap_or_else(|e| panic!("{e}")));
        }
        for answer in held {
            answer.into_body().collect().await.unwrap_or_else(|e| panic!("{e}"));
        }
        eventually("the burst's connections going back idle", || hop.plain[0].idle_count() == burst).await;
        clock.advance(BURST_IDLE / 2);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(hop.plain[0].idle_count(), burst, "none closed before BURST_IDLE");
        assert_eq!(upstream.ended.load(SeqCst), 0);
        clock.advance(BURST_IDLE);
        eventually("the extra ones closing", || hop.plain[0].idle_count() == WARM_IDLE_PER_HOST).await;
        eventually("the upstream seeing them end", || {
            upstream.ended.load(SeqCst) == burst - WARM_IDLE_PER_HOST
        })
        .await;
        // The warm ones stay, and are what the next requests use.
        clock.advance(POOL_IDLE / 2);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(hop.plain[0].idle_count(), WARM_IDLE_PER_HOST);
        let used = connections_used(hop.clone(), upstream.uri.clone()).await;
        assert_eq!(used.len(), 1, "{used:?}");
        let number: usize = used.iter().next().and_then(|n| n.parse().ok()).unwrap_or_default();
        assert!(number <= burst, "a new connection instead of a warm one: {used:?}");
        assert_eq!(upstream.ended.load(SeqCst), burst - WARM_IDLE_PER_HOST);
    }

    /// A connection whose answer's body was dropped unread goes back to the pool
    /// once hyper has drained the rest, instead of being lost.
    #[tokio::test]
    async fn a_connection_whose_body_was_dropped_unread_is_reused() {
        let hop = hop_on(Arc::new(SystemClock));
        let uri = numbering_upstream().await;
        let answer = hop.post(uri.clone(), HeaderMap::new(), Bytes::from_static(b"{}")).await;
        drop(answer.unwrap_or_else(|e| panic!("{e}")));
        eventually("the connection going back to the pool", || hop.plain[0].idle_count() == 1).await;
        assert_eq!(connections_used(hop, uri).await, BTreeSet::from(["1".to_owned()]));
    }

    /// A plain upstream nobody listens on is a connect failure, as hyper-util's
    /// connector failures are.
    #[tokio::test]
    async fn an_unreachable_plain_upstream_is_a_connect_failure() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        drop(listener);
        let uri: Uri = format!("http://{addr}/v1/messages").parse().unwrap_or_else(|e| panic!("{e}"));
        let hop = hop_on(Arc::new(SystemClock));
        let Err(e) = hop.post(uri, HeaderMap::new(), Bytes::new()).await else {
            panic!("a closed port answered")
        };
        let sorted = crate::proxy::upstream_error::UpstreamError::from_hop(&*e, true);
        assert_eq!(sorted.kind(), "connect", "{sorted:?}");
    }

    /// The hop's future and its answer stay small: both are part of every request's
    /// future, which axum boxes (a copy of all of it) and which an open stream keeps;
    /// the plain pool's future and its hold on the connection are boxed apart.
    #[test]
    fn the_hop_future_is_small() {
        let hop = hop_on(Arc::new(SystemClock));
        let uri = Uri::from_static("http://127.0.0.1:9/v1/messages");
        let post = hop.post(uri, HeaderMap::new(), Bytes::new());
        let size = std::mem::size_of_val(&post);
        // 688 bytes as an async fn (the request's parts twice, reqwest's future
        // inline); each path's own future, boxed, is a pointer or two.
        assert!(size <= 32, "the hop's future is {size} bytes");
        // hyper's answer with hyper-util's client was 152 bytes.
        let answer = std::mem::size_of::<HopResponse>();
        assert!(answer <= 160, "the hop's answer is {answer} bytes");
    }
}
