//! Client connections: the accept loop in front of the axum application, and the
//! hygiene `axum::serve` does not offer: a header-read timeout (hyper's own, which
//! also closes idle keep-alive connections and sockets that never send a request),
//! a body-read timeout, a write-stall timeout (a client that stops reading), and a
//! cap on open connections below the process's fd limit where an idle connection
//! gives way to a newcomer. Timers run on the gateway's clock. See `docs/adr/0006-connection-hygiene.md`.
//!
//! The gateway speaks HTTP/1.1 (and 1.0) to clients: every supported agent does,
//! and one protocol keeps the Host rules and timeouts simple (no `:authority`).
//!
//! Failure behaviour: a failed `accept` is retried (after closing an idle
//! connection and a short pause when the process is out of fds); one connection's
//! error never ends the loop. On stop the listener closes at once, idle connections
//! close, and busy ones finish their response.

pub mod after_write;
mod body;
mod connection;
mod fd_limit;
pub mod lane_memory;
pub mod lanes;
mod linger;
mod slots;
mod timer;
mod write_stall;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use body::{BodyReadTimeout, find_cause};
pub use fd_limit::{connection_cap, raise_nofile_limit};
pub use timer::ClockTimer;

use crate::clock::GatewayClock;
use crate::http::App;
use connection::ConnectionContext;
use lanes::Lanes;
use slots::Slots;

/// Default [`ConnectionOptions::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default [`ConnectionOptions::body_read_timeout`].
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Default [`ConnectionOptions::write_stall_timeout`] (nginx's `send_timeout`).
pub const DEFAULT_WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause after `accept` failed for want of resources (fds, memory).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Client-connection limits (fixed at start).
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// A request head must arrive in full within this, counted from when the
    /// gateway starts waiting for it: on a new connection, and between requests on
    /// a kept-alive one. So it is also the idle keep-alive timeout, and a socket
    /// that never sends a request is closed after it.
    pub header_read_timeout: Duration,
    /// A request body must arrive in full within this, counted from its head.
    pub body_read_timeout: Duration,
    /// A write the client leaves waiting (it stopped reading) fails after this, and
    /// the connection closes with its response: the upstream stream, permits and
    /// place under the cap are freed. Counted per stall, so a client that reads
    /// slowly but steadily is never cut off (`write_stall`).
    pub write_stall_timeout: Duration,
    /// Open client connections at most; `None` derives the cap from the open-file
    /// limit ([`connection_cap`]).
    pub max_connections: Option<usize>,
    /// Single-threaded runtimes serving the connections ([`lanes`]); one per core
    /// by default.
    pub lanes: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            write_stall_timeout: DEFAULT_WRITE_STALL_TIMEOUT,
            max_connections: None,
            lanes: lanes::default_count(),
        }
    }
}

/// A running accept loop.
pub struct Server {
    /// The connection cap in force.
    pub max_connections: usize,
    /// The soft open-file limit after raising it (`None`: no such limit here).
    pub fd_limit: Option<u64>,
    /// The loop; ends once `stop` fired and every connection has closed.
    pub task: tokio::task::JoinHandle<()>,
    /// The lanes the connections run on; they stop when the last holder drops them
    /// (the loop holds them until it ends).
    pub lanes: Arc<Lanes>,
}

/// Raises the fd limit, then serves `app` on `listener` until `stop` fires, each
/// connection on one of `lanes`.
pub fn spawn(
    listener: TcpListener,
    app: App,
    options: &ConnectionOptions,
    lanes: Arc<Lanes>,
    clock: Arc<dyn GatewayClock>,
    stop: CancellationToken,
) -> anyhow::Result<Server> {
    let fd_limit = raise_nofile_limit();
    let max_connections = match options.max_connections {
        Some(0) => anyhow::bail!("max_connections must be at least 1"),
        Some(n) => n,
        None => connection_cap(fd_limit),
    };
    let mut http = http1::Builder::new();
    http.timer(ClockTimer(clock.clone())).header_read_timeout(options.header_read_timeout).keep_alive(true);
    let context = Arc::new(ConnectionContext {
        app,
        http,
        clock: clock.clone(),
        body_read_timeout: options.body_read_timeout,
        write_stall_timeout: options.write_stall_timeout,
    });
    let slots = Slots::new(max_connections, clock.clone());
    tracing::info!(
        event = "server.limits",
        max_connections,
        fd_limit = fd_limit.unwrap_or_default(),
        lanes = lanes.count()
    );
    let task = tokio::spawn(accept_loop(listener, context, slots, lanes.clone(), clock, stop));
    Ok(Server { max_connections, fd_limit, task, lanes })
}

async fn accept_loop(
    listener: TcpListener,
    context: Arc<ConnectionContext>,
    slots: Arc<Slots>,
    lanes: Arc<Lanes>,
    clock: Arc<dyn GatewayClock>,
    stop: CancellationToken,
) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            // A finished connection's task is released as it ends, not at the next
            // accept: after a burst, thousands of them would keep their memory
            // until a new client came.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            () = stop.cancelled() => break,
        };
        let (tcp, peer): (_, SocketAddr) = match accepted {
            Ok(accepted) => accepted,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of fds or memory: make room and try again shortly.
                tracing::warn!(event = "server.accept_failed", error = %e, open = slots.open());
                slots.ask_longest_idle_to_close();
                tokio::select! {
                    () = clock.sleep(ACCEPT_BACKOFF) => continue,
                    () = stop.cancelled() => break,
                }
            }
        };
        // Small writes (SSE frames, headers before a streamed body) must not wait
        // for Nagle's algorithm: on loopback that would add up to 40 ms per response.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(event = "server.nodelay_failed", error = %e);
        }
        let Some(admitted) = slots.admit(&stop).await else { break };
        // The socket moves to its lane's reactor: registered with this runtime's,
        // every readiness event would cross threads.
        let tcp = match tcp.into_std() {
            Ok(tcp) => tcp,
            Err(e) => {
                tracing::debug!(event = "server.handoff_failed", error = %e);
                continue;
            }
        };
        // A token of the connection's own, cancelled with the server's: the
        // connection's task checks it each time it is polled, several times a
        // request, and checking a token locks its node. One node shared by every
        // connection of both lanes had each check contend across cores; the
        // parent's lock is now taken only as the connection opens and closes.
        let (context, stop) = (context.clone(), stop.child_token());
        lanes.spawn(&mut connections, async move {
            match TcpStream::from_std(tcp) {
                Ok(tcp) => connection::serve(tcp, peer, context, admitted, stop).await,
                Err(e) => tracing::debug!(event = "server.handoff_failed", error = %e),
            }
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Errors of one incoming connection (it was reset before it was accepted), as
/// opposed to the listener's.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;

    #[tokio::test]
    async fn an_explicit_cap_is_used_as_given_and_zero_is_refused() {
        let options = |max| ConnectionOptions { max_connections: max, ..ConnectionOptions::default() };
        let listen = || async { TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}")) };
        let stop = CancellationToken::new();
        let lanes = Lanes::start(1, None).unwrap_or_else(|e| panic!("{e}"));
        let spawn = |listener, options: &ConnectionOptions| {
            spawn(
                listener,
                App::routes_only(axum::Router::new()),
                options,
                lanes.clone(),
                Arc::new(SystemClock),
                stop.clone(),
            )
        };
        let zero = spawn(listen().await, &options(Some(0)));
        assert!(zero.err().is_some_and(|e| e.to_string().contains("at least 1")));
        let five = spawn(listen().await, &options(Some(5)));
        assert_eq!(five.as_ref().map(|s| s.max_connections).ok(), Some(5));
        let derived = spawn(listen().await, &options(None));
        assert_eq!(derived.map(|s| s.max_connections).ok(), Some(connection_cap(raise_nofile_limit())));
        stop.cancel();
    }
}
