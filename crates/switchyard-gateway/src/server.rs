//! Start-up and shutdown of a gateway: data directory, store, config import,
//! management token, listener, request-log writer, and a graceful stop that lets
//! in-flight streams finish up to a bound.
//!
//! The headless binary, the tests and (later) the desktop shell all start the
//! gateway through [`Gateway::start`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use arc_swap::ArcSwap;
use switchyard_types::settings::{EnvSource, ProcessEnv};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, GatewayClock, SystemClock};
use crate::config::ConfigFile;
use crate::conn::ConnectionOptions;
use crate::conn::lane_memory::ThreadMemory;
use crate::conn::lanes::{Lanes, TrimAfterBursts};
use crate::control::Control;
use crate::management::ManagementService;
use crate::oauth::TokenRefresher;
use crate::proxy::hop::{HopClient, side_call_client};
use crate::request_log::{FLUSH_TIMEOUT, RequestLogSink, spawn_writer};
use crate::resilience::Resilience;
use crate::routing::RoutingTable;
use crate::secrets::generate_secret;
use crate::sleeper::{ClockSleeper, Sleeper};
use crate::state::{GatewayState, ProxyOptions};
use crate::store::{Backend, Store};
use crate::team::Team;
use crate::team::listen::Replica;
use crate::team::token::{self, TokenCheck};
use switchyard_resilience::claude_wall::ClaudeWall;

/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7821";
/// File in the data directory holding the management token.
pub const MANAGEMENT_TOKEN_FILE: &str = "management-token";

/// How to start a gateway.
#[derive(Clone)]
pub struct GatewayConfig {
    /// Directory for the database and the management token.
    pub data_dir: PathBuf,
    /// Address to bind (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Permit a non-loopback listen address.
    pub allow_remote: bool,
    /// Host names (besides loopback names and a non-loopback listen IP) accepted in
    /// the Host header, e.g. the machine's LAN name when serving with `allow_remote`.
    pub allowed_hosts: Vec<String>,
    /// Config file to import at start.
    pub config_file: Option<PathBuf>,
    /// Management token override (not persisted).
    pub management_token: Option<String>,
    /// Request-path tunables.
    pub proxy: ProxyOptions,
    /// Client-connection timeouts and cap.
    pub connections: ConnectionOptions,
    /// Rows kept in the request log.
    pub log_retention_rows: u32,
    /// How long a request-log batch stays open after its first row; `None`: the
    /// database's own ([`crate::request_log::batch_interval`]). Not a user setting:
    /// readers flush, so it bounds what a crash loses and how late other replicas
    /// see the rows. Tests that look for another timer on a manual clock move it
    /// out of the way.
    pub log_batch_interval: Option<Duration>,
    /// How long in-flight requests may run on after shutdown starts.
    pub shutdown_grace: Duration,
    /// The one clock: the engine, deadlines, stream watchdogs, waits and the
    /// shutdown grace all read it (tests pass a [`crate::clock::ManualClock`]).
    pub clock: Arc<dyn GatewayClock>,
    /// Environment for settings defaults (tests pass a map).
    pub env: Arc<dyn EnvSource + Send + Sync>,
    /// Deliberate waits; `None` waits on `clock` (tests may pass a manual sleeper
    /// that advances the clock at once).
    pub sleeper: Option<Arc<dyn Sleeper>>,
    /// The built settings UI (`ui/dist`) to serve under `/ui/`.
    pub ui_dir: Option<PathBuf>,
    /// Team mode: the shared Postgres (`--database-url`); `None` keeps the
    /// embedded SQLite file in the data directory.
    pub database_url: Option<String>,
    /// The allocator's per-thread controls, with which each connection lane hands
    /// its thread cache back after a burst (`conn::lane_memory`). The headless
    /// binary passes jemalloc's; `None` (an allocator without thread caches to
    /// hand back): no hook.
    pub thread_memory: Option<Arc<dyn ThreadMemory>>,
}

impl GatewayConfig {
    /// Defaults for a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> GatewayConfig {
        GatewayConfig {
            data_dir: data_dir.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 7821)),
            allow_remote: false,
            allowed_hosts: Vec::new(),
            config_file: None,
            management_token: None,
            proxy: ProxyOptions::default(),
            connections: ConnectionOptions::default(),
            log_retention_rows: 100_000,
            log_batch_interval: None,
            shutdown_grace: Duration::from_secs(30),
            clock: Arc::new(SystemClock),
            env: Arc::new(ProcessEnv),
            sleeper: None,
            ui_dir: None,
            database_url: None,
            thread_memory: None,
        }
    }
}

/// Where the management token came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    /// Generated now and written to the data directory (print it once).
    Generated,
    /// Read from the data directory.
    Stored,
    /// Given by flag or environment.
    Override,
    /// Team mode: the team's token, which another replica set through the shared
    /// database; this replica's own stored token is not valid.
    Team,
}

/// A running gateway.
pub struct Gateway {
    addr: SocketAddr,
    token: String,
    token_source: TokenSource,
    imported_changes: usize,
    state: Arc<GatewayState>,
    shutdown: CancellationToken,
    server: JoinHandle<()>,
    /// The connections' runtimes: dropped last, after the store closed, so nothing
    /// that was opened on them (a Postgres connection) outlives its reactor while in use.
    _lanes: Arc<Lanes>,
    log_writer: JoinHandle<()>,
    log_shutdown: CancellationToken,
    persister: JoinHandle<()>,
    pin_writer: JoinHandle<()>,
    pin_shutdown: CancellationToken,
    /// Team mode's announcer and receiver.
    team_tasks: Vec<JoinHandle<()>>,
    team_shutdown: CancellationToken,
    grace: Duration,
    clock: Arc<dyn GatewayClock>,
    max_connections: usize,
    fd_limit: Option<u64>,
}

impl Gateway {
    /// Starts a gateway and returns once it accepts connections.
    pub async fn start(config: GatewayConfig) -> anyhow::Result<Gateway> {
        if !config.listen.ip().is_loopback() && !config.allow_remote {
            anyhow::bail!(
                "refusing to listen on {} (not loopback) without --allow-remote; \
                 client API keys are then always required",
                config.listen
            );
        }
        prepare_data_dir(&config.data_dir)?;
        let store = Store::open_configured(&config.data_dir, config.database_url.as_deref())
            .await
            .context("opening the database")?;
        let (token, mut token_source) = management_token(&config.data_dir, config.management_token.clone())?;
        let team = (store.backend() == Backend::Postgres).then(Team::new);

        let trim = config
            .thread_memory
            .clone()
            .map(|memory| TrimAfterBursts { memory, clock: config.clock.clone() });
        let lanes = Lanes::start(config.connections.lanes, trim.as_ref())?;
        let hop = HopClient::new(&config.proxy, lanes.count(), config.clock.clone())
            .context("building the proxy hop's HTTP client")?;
        let http = side_call_client(config.proxy.connect_timeout, &config.proxy.extra_tls_roots)?
            .build()
            .context("building the side calls' HTTP client")?;
        let routing = Arc::new(ArcSwap::from_pointee(RoutingTable::default()));
        let listener = TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let clock: Arc<dyn Clock> = config.clock.clone();
        let control = Control::new(clock.clone());
        if let Some(team) = &team {
            control.attach_team(team.clone());
        }
        let (resilience, persister) = Resilience::start(
            store.clone(),
            clock.clone(),
            config.env.clone(),
            control.clone(),
            team.clone(),
            shutdown.child_token(),
        )
        .await
        .map_err(|e| anyhow::anyhow!(e.message))?;
        let claude_wall = Arc::new(ClaudeWall::new());
        let log = RequestLogSink::new();
        let management = ManagementService::new(
            store.clone(),
            routing.clone(),
            clock.clone(),
            http.clone(),
            addr.to_string(),
            resilience.clone(),
            claude_wall.clone(),
            control.clone(),
        )
        .with_log(log.clone());
        management.reload().await.map_err(|e| anyhow::anyhow!(e.message))?;
        let known: Vec<String> = routing.load().by_id.keys().cloned().collect();
        resilience.restore(&known).await.map_err(|e| anyhow::anyhow!(e.message))?;
        let imported_changes = match &config.config_file {
            Some(path) => ConfigFile::load(path)?.import(path, &management).await?,
            None => 0,
        };
        // Leases loaded from the store that the configuration no longer allows end now.
        management.reconcile_leases_now().await.map_err(|e| anyhow::anyhow!(e.message))?;

        // Its own token, cancelled once in-flight requests are done: the rows they
        // record while draining (their attempts, their client-request rows) are
        // written too.
        let log_shutdown = CancellationToken::new();
        let log_writer = spawn_writer(
            &log,
            store.clone(),
            config.log_retention_rows,
            config.log_batch_interval.unwrap_or_else(|| crate::request_log::batch_interval(store.backend())),
            config.clock.clone(),
            log_shutdown.clone(),
        );
        // Its own token: cancelled once in-flight requests are done, so pins made
        // while they drain are written too.
        let pin_shutdown = CancellationToken::new();
        let pin_writer = crate::affinity::persist::spawn_writer(
            store.clone(),
            resilience.affinity.clone(),
            resilience.clone(),
            config.clock.clone(),
            pin_shutdown.clone(),
        );
        let mut extra_hosts: Vec<String> =
            config.allowed_hosts.iter().map(|h| h.trim().to_ascii_lowercase()).collect();
        if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
            extra_hosts.push(addr.ip().to_string());
        }
        let token_check = Arc::new(TokenCheck::new(&token));
        let mut team_tasks = Vec::new();
        // Its own token, cancelled once in-flight requests are done: transitions
        // they make while draining are still announced, and the replica keeps
        // hearing the others until then.
        let team_shutdown = CancellationToken::new();
        if let (Some(team), Some(url)) = (&team, store.postgres_url()) {
            let explicit = token_source == TokenSource::Override;
            match token::share(&store, &token_check, &token, explicit, clock.now_wall()).await? {
                token::Shared::Own => {}
                token::Shared::Rotated => team.token_rotated(),
                token::Shared::Adopted => token_source = TokenSource::Team,
            }
            let replica = Replica {
                store: store.clone(),
                resilience: resilience.clone(),
                management: management.clone(),
                control: control.clone(),
                token: token_check.clone(),
                claude_wall: claude_wall.clone(),
            };
            team_tasks = crate::team::start(team.clone(), replica, url, team_shutdown.clone()).await?;
        }
        let refresher = TokenRefresher::new(http.clone(), clock.clone());
        let sleeper = config.sleeper.clone().unwrap_or_else(|| Arc::new(ClockSleeper(config.clock.clone())));
        let state = Arc::new(GatewayState {
            routing,
            hop,
            http,
            clock: config.clock.clone(),
            log,
            options: config.proxy.clone(),
            resilience,
            refresher,
            claude_wall,
            sleeper,
            management,
            management_token: token_check,
            listen: addr,
            extra_hosts,
            ui_dir: config.ui_dir.clone(),
            started: tokio::time::Instant::now(),
        });
        let app = crate::http::App::new(state.clone());
        let server = crate::conn::spawn(
            listener,
            app,
            &config.connections,
            lanes,
            config.clock.clone(),
            shutdown.clone(),
        )?;
        tracing::info!(event = "gateway.started", listen = %addr);
        Ok(Gateway {
            addr,
            token,
            token_source,
            imported_changes,
            state,
            shutdown,
            server: server.task,
            _lanes: server.lanes,
            log_writer,
            log_shutdown,
            persister,
            pin_writer,
            pin_shutdown,
            team_tasks,
            team_shutdown,
            grace: config.shutdown_grace,
            clock: config.clock.clone(),
            max_connections: server.max_connections,
            fd_limit: server.fd_limit,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The management token (for the binary to print once, and for tests).
    pub fn management_token(&self) -> &str {
        &self.token
    }

    /// Where the token came from.
    pub fn token_source(&self) -> TokenSource {
        self.token_source
    }

    /// Items the config import changed.
    pub fn imported_changes(&self) -> usize {
        self.imported_changes
    }

    /// The cap on open client connections in force.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// The soft open-file limit after start raised it (`None`: no such limit here).
    pub fn fd_limit(&self) -> Option<u64> {
        self.fd_limit
    }

    /// Team mode's replica state (`None` with the embedded SQLite file).
    pub fn team(&self) -> Option<&Arc<Team>> {
        self.state.management.control().team()
    }

    /// The management service (what the desktop IPC will call).
    pub fn management(&self) -> &ManagementService {
        &self.state.management
    }

    /// Stops accepting connections, lets in-flight requests finish for up to the
    /// grace period, flushes the request log and closes the store.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        self.state.management.control().close();
        let mut server = self.server;
        let grace = self.clock.sleep(self.grace);
        tokio::select! {
            _ = &mut server => {}
            () = grace => {
                tracing::warn!(event = "gateway.shutdown_grace_elapsed", grace_s = self.grace.as_secs());
                server.abort();
            }
        }
        self.log_shutdown.cancel();
        let _ = tokio::time::timeout(FLUSH_TIMEOUT, self.log_writer).await;
        let _ = tokio::time::timeout(FLUSH_TIMEOUT, self.persister).await;
        self.pin_shutdown.cancel();
        let _ = tokio::time::timeout(FLUSH_TIMEOUT, self.pin_writer).await;
        // After the pins are written: their last flush needs no announcer, but
        // the persister's last batch above may have produced notices.
        self.team_shutdown.cancel();
        for task in self.team_tasks {
            let _ = tokio::time::timeout(FLUSH_TIMEOUT, task).await;
        }
        self.state.management.store().close().await;
        tracing::info!(event = "gateway.stopped");
    }
}

/// Creates the data directory with owner-only permissions.
fn prepare_data_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data directory {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot restrict permissions of {}", dir.display()))?;
    }
    Ok(())
}

/// The override, else the stored token, else a new one written with mode 0600.
fn management_token(dir: &Path, override_token: Option<String>) -> anyhow::Result<(String, TokenSource)> {
    if let Some(t) = override_token.filter(|t| !t.trim().is_empty()) {
        return Ok((t.trim().to_owned(), TokenSource::Override));
    }
    let path = dir.join(MANAGEMENT_TOKEN_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        let token = text.trim().to_owned();
        if !token.is_empty() {
            return Ok((token, TokenSource::Stored));
        }
    }
    let token = generate_secret("sym-");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    use std::io::Write;
    let mut file = options.open(&path).with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(format!("{token}\n").as_bytes())?;
    Ok((token, TokenSource::Generated))
}
