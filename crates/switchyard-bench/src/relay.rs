//! A reference point: the cheapest possible HTTP/1.1 reverse proxy, run as a
//! separate process (this binary re-executed with the hidden `relay` subcommand).
//!
//! It forwards each client connection's requests over its own upstream connection,
//! bodies streamed through untouched, with no auth, routing, parsing or logging.
//! Whatever it adds over the direct run is the cost of the extra loopback hop and
//! process on this machine (syscalls, thread wake-ups, TCP), the floor that no
//! gateway can beat. The report puts it next to the gateway's figures so the
//! gateway's own share of its added latency can be read off.
//!
//! Failure behaviour: an upstream failure closes that client connection.
//!
//! `hop-ab` (ADR 0011) also starts it with another [`HopClient`]: the same relay
//! with the request body read whole first (as the gateway must, to parse it) and
//! one upstream client swapped for another, so the difference between two of
//! them is the cost of the client stack alone.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Either, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1 as client_http1;
use hyper::server::conn::http1 as server_http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::Client as LegacyClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// The upstream HTTP client a relay forwards with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum HopClient {
    /// The reference relay: hyper's connection-level client, one upstream
    /// connection per client connection, bodies streamed through untouched.
    #[default]
    Reference,
    /// hyper's connection-level client, one upstream connection per client
    /// connection; the request body read whole first. A lower bound for a pool of
    /// such connections, which would add a checkout (lock, pop, readiness check).
    HyperConn,
    /// hyper-util's pooled client (the stack reqwest wraps), set up as reqwest sets
    /// it up: HTTP connector with `TCP_NODELAY`, tokio timers (so idle connections
    /// are reaped), 30 s idle pool of 64 per host; the request body read whole first.
    HyperPool,
    /// reqwest configured as the gateway's proxy hop (rustls, no redirects,
    /// `TCP_NODELAY`, 10 s connect timeout, 30 s idle pool of 64 per host); the
    /// request body read whole first.
    Reqwest,
}

impl HopClient {
    /// Its name on the command line and in the report (clap's, so the two cannot differ).
    pub fn name(self) -> String {
        use clap::ValueEnum as _;
        self.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default()
    }
}

/// Serves the relay forever (the `relay` subcommand).
pub async fn serve(listen: SocketAddr, upstream: SocketAddr, client: HopClient) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    let pooled = Pooled::for_client(client, upstream)?.map(Arc::new);
    loop {
        let (stream, _) = listener.accept().await?;
        let pooled = pooled.clone();
        tokio::spawn(async move {
            let served = match pooled {
                Some(pooled) => relay_pooled(stream, pooled).await,
                None => relay_connection(stream, upstream, client).await,
            };
            if let Err(e) = served {
                eprintln!("relay: {e:#}");
            }
        });
    }
}

/// A pooled upstream client shared by every client connection.
enum Pooled {
    HyperPool { client: Box<LegacyClient<HttpConnector, Full<Bytes>>>, base: String },
    Reqwest { client: reqwest::Client, base: String },
}

/// The settings of the gateway's proxy hop (`server.rs`, `state.rs`).
const POOL_IDLE: Duration = Duration::from_secs(30);
const POOL_MAX_IDLE_PER_HOST: usize = 64;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl Pooled {
    /// The shared client of a pooled `client`; None for the per-connection ones.
    fn for_client(client: HopClient, upstream: SocketAddr) -> anyhow::Result<Option<Pooled>> {
        let base = format!("http://{upstream}");
        Ok(Some(match client {
            HopClient::Reference | HopClient::HyperConn => return Ok(None),
            HopClient::Reqwest => Pooled::Reqwest {
                client: reqwest::Client::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .pool_idle_timeout(POOL_IDLE)
                    .pool_max_idle_per_host(POOL_MAX_IDLE_PER_HOST)
                    .redirect(reqwest::redirect::Policy::none())
                    .tcp_nodelay(true)
                    .build()?,
                base,
            },
            HopClient::HyperPool => {
                let mut connector = HttpConnector::new();
                connector.set_nodelay(true);
                connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
                let client = LegacyClient::builder(TokioExecutor::new())
                    .timer(TokioTimer::new())
                    .pool_timer(TokioTimer::new())
                    .pool_idle_timeout(POOL_IDLE)
                    .pool_max_idle_per_host(POOL_MAX_IDLE_PER_HOST)
                    .build(connector);
                Pooled::HyperPool { client: Box::new(client), base }
            }
        }))
    }

    /// Forwards one request, its body read whole first.
    async fn forward(&self, request: Request<Incoming>) -> anyhow::Result<Response<RelayBody>> {
        let (mut parts, body) = request.into_parts();
        let body = body.collect().await?.to_bytes();
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.headers.remove(http::header::HOST);
        match self {
            Pooled::HyperPool { client, base } => {
                parts.uri = format!("{base}{path}").parse()?;
                let response = client.request(Request::from_parts(parts, Full::new(body))).await?;
                Ok(response.map(Either::Left))
            }
            Pooled::Reqwest { client, base } => {
                let response = client
                    .request(parts.method, format!("{base}{path}"))
                    .headers(parts.headers)
                    .body(body)
                    .send()
                    .await?;
                Ok(http::Response::from(response).map(Either::Right))
            }
        }
    }
}

/// A relayed answer's body, whichever client fetched it.
type RelayBody = Either<Incoming, reqwest::Body>;

async fn relay_pooled(client: TcpStream, pooled: Arc<Pooled>) -> anyhow::Result<()> {
    client.set_nodelay(true)?;
    let service = service_fn(move |request| {
        let pooled = pooled.clone();
        async move { pooled.forward(request).await }
    });
    server_http1::Builder::new().serve_connection(TokioIo::new(client), service).await?;
    Ok(())
}

/// One client connection over its own upstream connection (`Reference` or
/// `HyperConn`; the latter collects the request body before sending it on).
async fn relay_connection(client: TcpStream, upstream: SocketAddr, hop: HopClient) -> anyhow::Result<()> {
    let read_whole = hop == HopClient::HyperConn;
    client.set_nodelay(true)?;
    let stream = TcpStream::connect(upstream).await?;
    stream.set_nodelay(true)?;
    type Outgoing = Either<Incoming, Full<Bytes>>;
    let (sender, driver) = client_http1::handshake::<_, Outgoing>(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = driver.await;
    });
    // One request at a time per HTTP/1.1 connection, so the lock is never contended.
    let sender = Arc::new(Mutex::new(sender));
    let service = service_fn(move |req: Request<Incoming>| {
        let sender = sender.clone();
        async move {
            let req = if read_whole {
                let (parts, body) = req.into_parts();
                Request::from_parts(parts, Either::Right(Full::new(body.collect().await?.to_bytes())))
            } else {
                req.map(Either::Left)
            };
            anyhow::Ok(sender.lock().await.send_request(req).await?)
        }
    });
    server_http1::Builder::new().serve_connection(TokioIo::new(client), service).await?;
    Ok(())
}

/// The relay child process.
pub struct RelayProcess {
    child: Child,
    addr: SocketAddr,
}

impl RelayProcess {
    /// Starts `exe relay --listen ... --upstream ... --client ...` and waits until it accepts.
    pub async fn start(exe: &Path, upstream: SocketAddr, client: HopClient) -> anyhow::Result<RelayProcess> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut child = Command::new(exe)
            .arg("relay")
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--upstream")
            .arg(upstream.to_string())
            .arg("--client")
            .arg(client.name())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} relay", exe.display()))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).await.is_err() {
            if let Some(status) = child.try_wait()? {
                bail!("relay exited during start ({status})");
            }
            if Instant::now() > deadline {
                bail!("relay not accepting on {addr} after 10 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(RelayProcess { child, addr })
    }

    /// Its pid (0 if it already exited).
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// Its listen address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Kills it.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client;
    use crate::upstream::{FakeUpstream, Pace};

    /// What `addr` answers to the benchmark's chat request: status and body.
    async fn answer(addr: SocketAddr) -> anyhow::Result<(http::StatusCode, Bytes)> {
        let spec = crate::run::spec_for(addr, "/v1/chat/completions", &crate::run::chat_body())?;
        let mut conn = client::connect(addr).await?;
        let response = conn.send_request(spec.request()?).await?;
        let status = response.status();
        Ok((status, response.into_body().collect().await?.to_bytes()))
    }

    #[tokio::test]
    async fn every_hop_client_relays_the_upstream_answer_unchanged() -> anyhow::Result<()> {
        let upstream = FakeUpstream::start(Pace::Fast).await?;
        let direct = answer(upstream.addr()).await?;
        assert_eq!(direct.0, http::StatusCode::OK);
        for &client in <HopClient as clap::ValueEnum>::value_variants() {
            let listen = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
            let relay = tokio::spawn(serve(listen, upstream.addr(), client));
            let mut relayed = None;
            for _ in 0..100 {
                if let Ok(a) = answer(listen).await {
                    relayed = Some(a);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            relay.abort();
            assert_eq!(relayed.as_ref(), Some(&direct), "{} relay", client.name());
        }
        Ok(())
    }
}
