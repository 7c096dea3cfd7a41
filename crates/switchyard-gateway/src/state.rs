//! The shared runtime state every handler sees.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use switchyard_resilience::claude_wall::ClaudeWall;
use tokio::time::Instant;

use crate::clock::GatewayClock;
use crate::management::ManagementService;
use crate::oauth::TokenRefresher;
use crate::proxy::hop::{HopClient, UpstreamProxy};
use crate::request_log::RequestLogSink;
use crate::resilience::Resilience;
use crate::routing::SharedRouting;
use crate::sleeper::Sleeper;
use crate::team::token::TokenCheck;

/// Tunables of the request path (not user settings: fixed at start).
#[derive(Debug, Clone)]
pub struct ProxyOptions {
    /// Largest accepted client body.
    pub max_body_bytes: usize,
    /// Time allowed to connect to an upstream.
    pub connect_timeout: Duration,
    /// Time allowed to read a failed attempt's error body.
    pub error_body_timeout: Duration,
    /// The proxy upstreams are reached through (the environment's by default).
    pub upstream_proxy: UpstreamProxy,
    /// Certificate authorities the hop and the side calls trust beside the
    /// platform's (an embedding app; the tests' loopback TLS upstreams). Not a user
    /// setting: on Linux the platform's store is the one `SSL_CERT_FILE` /
    /// `SSL_CERT_DIR` name, when set, so a private CA goes there.
    pub extra_tls_roots: Vec<CertificateDer<'static>>,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            max_body_bytes: 32 * 1024 * 1024,
            connect_timeout: Duration::from_secs(10),
            error_body_timeout: Duration::from_secs(5),
            upstream_proxy: UpstreamProxy::FromEnv,
            extra_tls_roots: Vec::new(),
        }
    }
}

/// Everything shared by the routers.
pub struct GatewayState {
    /// The routing snapshot.
    pub routing: SharedRouting,
    /// The proxy hop's client (ADR 0011): every forwarded request.
    pub hop: HopClient,
    /// The side calls' client (usage and limit-reset calls, OAuth refresh).
    pub http: reqwest::Client,
    /// The one clock (engine, deadlines, watchdogs, waits).
    pub clock: Arc<dyn GatewayClock>,
    /// Request-log sink.
    pub log: RequestLogSink,
    /// Request path tunables.
    pub options: ProxyOptions,
    /// The resilience engine and its settings.
    pub resilience: Arc<Resilience>,
    /// Management operations.
    pub management: ManagementService,
    /// OAuth token refresh (single-flight per connection).
    pub refresher: TokenRefresher,
    /// The Claude usage-wall state of every Claude OAuth connection (in memory).
    pub claude_wall: Arc<ClaudeWall>,
    /// Deliberate waits (usage-wall retries).
    pub sleeper: Arc<dyn Sleeper>,
    /// Checks the management token (only its hash is held).
    pub management_token: Arc<TokenCheck>,
    /// The bound address.
    pub listen: SocketAddr,
    /// Lower-cased host names accepted in the Host header besides loopback names.
    pub extra_hosts: Vec<String>,
    /// The built settings UI served under `/ui/`, if any.
    pub ui_dir: Option<std::path::PathBuf>,
    /// Process start, for uptime.
    pub started: Instant,
}

/// Handle passed to axum.
pub type AppState = Arc<GatewayState>;
