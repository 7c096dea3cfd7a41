//! One client connection: HTTP/1.1 served by hyper with the header-read timeout on
//! the gateway's clock, every request body under the body-read deadline, the
//! connection's busy/idle state kept for the cap, and the two ways it ends early: a
//! gateway stop (idle connections close at once, busy ones after their response)
//! and a newcomer at the cap (an idle connection gives way). Its socket closes
//! gracefully (`linger`): a client still sending reads its answer, not a reset; and
//! a client that stops reading is let go once a write has waited too long
//! (`write_stall`).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::after_write;
use super::body::{DeadlineBody, TrackedBody};
use super::linger::LingeringClose;
use super::slots::Admitted;
use super::write_stall::WriteStallLimit;
use crate::clock::{GatewayClock, Wait};
use crate::http::App;

/// How long an evicted connection that has served requests may take to flush its
/// last response before it is dropped.
const EVICTION_FLUSH_GRACE: Duration = Duration::from_secs(1);

/// What every connection of one listener shares.
pub struct ConnectionContext {
    /// The application.
    pub app: App,
    /// hyper's HTTP/1.1 settings (timer, header-read timeout, keep-alive).
    pub http: http1::Builder,
    /// The gateway's clock.
    pub clock: Arc<dyn GatewayClock>,
    /// Time allowed for a request body to arrive in full.
    pub body_read_timeout: Duration,
    /// Time a write may wait for the client to read.
    pub write_stall_timeout: Duration,
}

/// Serves `tcp` until the client or hyper closes it, the gateway stops, or a
/// newcomer at the cap needs its place while it is idle.
pub async fn serve(
    tcp: TcpStream,
    peer: SocketAddr,
    context: Arc<ConnectionContext>,
    admitted: Admitted,
    stop: CancellationToken,
) {
    let slot = admitted.slot().clone();
    let service = {
        let (context, slot) = (context.clone(), slot.clone());
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let busy = slot.begin();
            let clock = context.clock.clone();
            let timeout = context.body_read_timeout;
            let request = request.map(|b| Body::new(DeadlineBody::new(b, clock, timeout)));
            let context = context.clone();
            async move {
                let response = context.app.call(request, peer).await;
                Ok::<_, Infallible>(response.map(|b| Body::new(TrackedBody::new(b, busy))))
            }
        })
    };
    let tcp = LingeringClose::new(tcp, context.clock.clone());
    let tcp = WriteStallLimit::new(tcp, context.clock.clone(), context.write_stall_timeout);
    let connection = context.http.serve_connection(TokioIo::new(tcp), service);
    tokio::pin!(connection);
    let mut stopping = false;
    let mut flush_deadline: Option<Wait> = None;
    loop {
        tokio::select! {
            // Bookkeeping the response deferred runs after each poll, once hyper
            // has written what it could (`after_write`).
            result = after_write::Scoped(connection.as_mut()) => {
                if let Err(e) = result {
                    // Client resets, header timeouts and malformed requests end here.
                    tracing::debug!(event = "conn.closed", %peer, error = %e);
                }
                break;
            }
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                if !slot.has_served() && slot.is_idle() {
                    break;
                }
                connection.as_mut().graceful_shutdown();
            }
            () = slot.close_requested() => {
                if !slot.is_idle() {
                    slot.decline();
                    continue;
                }
                tracing::debug!(event = "conn.evicted", %peer);
                if !slot.has_served() {
                    break;
                }
                // A kept-alive connection closes cleanly once its last response is
                // flushed; a client that stopped reading does not get to keep it.
                connection.as_mut().graceful_shutdown();
                if flush_deadline.is_none() {
                    flush_deadline = Some(context.clock.sleep(EVICTION_FLUSH_GRACE));
                }
            }
            () = async {
                match flush_deadline.as_mut() {
                    Some(deadline) => deadline.await,
                    None => std::future::pending().await,
                }
            } => break,
        }
    }
    drop(admitted);
}
