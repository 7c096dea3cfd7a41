//! `GatewayHost`: the gateway running inside the desktop app (the same library as
//! `switchyard serve`), and what the app knows when it is not running.
//!
//! Fail-soft: a gateway that cannot start (its port taken, an unreadable data
//! directory) leaves the app up with the reason in `DesktopStatusView`, the tray
//! status line and the window banner; management commands then answer
//! `gateway_unavailable`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use switchyard_gateway::conn::lane_memory;
use switchyard_gateway::control::Control;
use switchyard_gateway::management::ManagementService;
use switchyard_gateway::{Gateway, GatewayConfig};
use switchyard_types::ErrorCode;
use tokio::sync::oneshot;

use crate::ipc_error::{IpcError, IpcResult};

/// Whether the hosted gateway runs, for the window banner and the tray.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "camelCase")]
pub struct DesktopStatusView {
    /// The gateway accepts requests.
    pub running: bool,
    /// The address it listens on while running.
    pub listen: Option<String>,
    /// Why it is not running (e.g. "port 7821 is already in use").
    pub error: Option<String>,
    /// The port it was started on (or tried), whatever the preference says.
    pub port: Option<u16>,
    /// Where that port came from: `preferences`, or `SWITCHYARD_PORT` (which then
    /// overrides the preference until it is unset).
    pub port_source: Option<String>,
}

enum HostState {
    Starting,
    Running(Box<Running>),
    Failed(String),
    Stopped,
}

struct Running {
    management: ManagementService,
    addr: SocketAddr,
    /// `None` when the gateway is owned elsewhere (tests attach one).
    gateway: Option<GatewayThread>,
}

/// The gateway's own thread, running it on the runtime `switchyard serve` runs it
/// on (`lane_memory::main_runtime`: one thread, its allocator cache handed back
/// after a burst) rather than on tauri's runtime, whose two work-stealing workers
/// have no park hook and pass the accept loop's and the writers' tasks between
/// them. tauri's runtime keeps the IPC commands, which call the gateway's
/// management service from there as before.
struct GatewayThread {
    stop: oneshot::Sender<()>,
    stopped: oneshot::Receiver<()>,
}

impl GatewayThread {
    /// Starts the gateway on a new thread; returns once it listens (or failed to).
    /// Needs no async runtime of the caller's: only channel waits.
    async fn start(config: GatewayConfig) -> anyhow::Result<(GatewayThread, ManagementService, SocketAddr)> {
        let (started_tx, started) = oneshot::channel::<anyhow::Result<(ManagementService, SocketAddr)>>();
        let (stop, stop_rx) = oneshot::channel::<()>();
        let (stopped_tx, stopped) = oneshot::channel::<()>();
        // The gateway's own clock times the trim's quiet wait, as it does the lanes'.
        let (memory, clock) = (config.thread_memory.clone(), config.clock.clone());
        std::thread::Builder::new().name("switchyard-main".to_owned()).spawn(move || {
            let runtime = match lane_memory::main_runtime(memory, clock) {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = started_tx
                        .send(Err(anyhow::Error::from(e).context("starting the gateway's runtime")));
                    return;
                }
            };
            runtime.block_on(async move {
                match Gateway::start(config).await {
                    Ok(gateway) => {
                        let _ = started_tx.send(Ok((gateway.management().clone(), gateway.addr())));
                        // A stop request, or the host gone without one: stop either way.
                        let _ = stop_rx.await;
                        gateway.shutdown().await;
                    }
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                    }
                }
            });
            drop(runtime);
            let _ = stopped_tx.send(());
        })?;
        let (management, addr) =
            started.await.map_err(|_| anyhow::anyhow!("the gateway's thread ended while starting"))??;
        Ok((GatewayThread { stop, stopped }, management, addr))
    }

    /// Stops the gateway gracefully and waits until its thread has.
    async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.stopped.await;
    }
}

/// The hosted gateway (managed tauri state).
pub struct GatewayHost {
    state: RwLock<HostState>,
    /// The port chosen at start and where it came from.
    port: RwLock<Option<(u16, &'static str)>>,
}

impl Default for GatewayHost {
    fn default() -> Self {
        GatewayHost { state: RwLock::new(HostState::Starting), port: RwLock::new(None) }
    }
}

/// Where the port the app starts its gateway on comes from.
pub const PORT_FROM_PREFERENCES: &str = "preferences";
/// The environment variable that overrides the port preference.
pub const PORT_FROM_ENV: &str = "SWITCHYARD_PORT";

/// Where the desktop app's gateway keeps its data and what it imports: the same
/// environment variables as `switchyard serve`, so scripts and tests can point
/// both at one directory.
pub fn gateway_config(port: u16) -> GatewayConfig {
    let data_dir = std::env::var_os("SWITCHYARD_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("switchyard"));
    let mut config = GatewayConfig::new(data_dir);
    config.listen = SocketAddr::from(([127, 0, 0, 1], port));
    config.config_file = std::env::var_os("SWITCHYARD_CONFIG").map(PathBuf::from);
    config.management_token = std::env::var("SWITCHYARD_MANAGEMENT_TOKEN").ok();
    // This process allocates from jemalloc (the crate's global allocator).
    config.thread_memory = lane_memory::jemalloc_threads();
    config
}

impl GatewayHost {
    /// Starts the gateway; on failure records a user-facing reason.
    pub async fn start(&self, config: GatewayConfig) -> Result<(), String> {
        let listen = config.listen;
        match GatewayThread::start(config).await {
            Ok((thread, management, addr)) => {
                tracing::info!(event = "desktop.gateway_started", listen = %addr);
                self.set(HostState::Running(Box::new(Running { management, addr, gateway: Some(thread) })));
                Ok(())
            }
            Err(e) => {
                let reason = explain_start_failure(listen, &e);
                tracing::error!(event = "desktop.gateway_failed", reason = %reason);
                self.set(HostState::Failed(reason.clone()));
                Err(reason)
            }
        }
    }

    /// Serves the commands from a gateway started and owned elsewhere (tests).
    pub fn attach(&self, management: ManagementService, addr: SocketAddr) {
        self.set(HostState::Running(Box::new(Running { management, addr, gateway: None })));
    }

    fn set(&self, next: HostState) {
        *self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner) = next;
    }

    fn running(&self) -> Option<(ManagementService, SocketAddr)> {
        match &*self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner) {
            HostState::Running(r) => Some((r.management.clone(), r.addr)),
            _ => None,
        }
    }

    /// The management service of the running gateway.
    pub fn management(&self) -> IpcResult<ManagementService> {
        self.running().map(|(m, _)| m).ok_or_else(|| {
            let status = self.status();
            IpcError::new(
                ErrorCode::GatewayUnavailable,
                status.error.unwrap_or_else(|| "the gateway is not running".to_owned()),
            )
        })
    }

    /// The runtime control (pause switch, change feed) of the running gateway.
    pub fn control(&self) -> Option<Arc<Control>> {
        self.running().map(|(m, _)| m.control().clone())
    }

    /// `http://<addr>` of the running gateway.
    pub fn base_url(&self) -> Option<String> {
        self.running().map(|(_, addr)| format!("http://{addr}"))
    }

    /// Records the port the gateway is started on and where it came from.
    pub fn set_port(&self, port: u16, source: &'static str) {
        *self.port.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((port, source));
    }

    /// Running, listening address, or the reason it is not; and the port in force.
    pub fn status(&self) -> DesktopStatusView {
        let (running, listen, error) =
            match &*self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner) {
                HostState::Running(r) => (true, Some(r.addr.to_string()), None),
                HostState::Starting => (false, None, Some("the gateway is starting".to_owned())),
                HostState::Failed(reason) => (false, None, Some(reason.clone())),
                HostState::Stopped => (false, None, Some("the gateway has stopped".to_owned())),
            };
        let port = *self.port.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        DesktopStatusView {
            running,
            listen,
            error,
            port: port.map(|p| p.0),
            port_source: port.map(|p| p.1.to_owned()),
        }
    }

    /// Stops the gateway gracefully (Quit).
    pub async fn shutdown(&self) {
        let previous = std::mem::replace(
            &mut *self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner),
            HostState::Stopped,
        );
        if let HostState::Running(running) = previous
            && let Some(gateway) = running.gateway
        {
            gateway.shutdown().await;
        }
    }
}

/// A sentence a user can act on: the common case is another program (or another
/// Switchyard) on the port.
fn explain_start_failure(listen: SocketAddr, e: &anyhow::Error) -> String {
    let in_use = e.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::AddrInUse)
    });
    if in_use {
        format!(
            "port {} is already in use (another Switchyard or another program); choose another port in \
             Preferences, or stop the other program, then restart Switchyard",
            listen.port()
        )
    } else {
        format!("the gateway could not start: {e:#}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn the_hosted_gateway_allocates_from_jemalloc_and_its_lanes_hand_caches_back() {
        let memory = gateway_config(7821).thread_memory.unwrap_or_else(|| panic!("no allocator controls"));
        // Counted by jemalloc: this process allocates from it, not from glibc.
        let before = memory.allocated();
        let block = std::hint::black_box(vec![1_u8; 4 << 20]);
        let after = memory.allocated();
        assert!(after - before >= 4 << 20, "jemalloc counted {} bytes", after - before);
        drop(block);
        memory.release();
    }

    /// The status line of a `GET path` to `addr` (plain std sockets: no runtime here).
    fn status_line(addr: SocketAddr, path: &str) -> String {
        use std::io::{BufRead, BufReader, Write};
        let mut stream = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut line = String::new();
        BufReader::new(stream).read_line(&mut line).unwrap_or_else(|e| panic!("{e}"));
        line.trim_end().to_owned()
    }

    #[test]
    fn the_gateway_runs_on_a_thread_of_its_own_and_outlives_the_runtime_that_started_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut config = GatewayConfig::new(dir.path().to_path_buf());
        config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        let host = GatewayHost::default();
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        // Started from a runtime that is then dropped: on it, the accept loop and the
        // writers' tasks would have gone with it.
        runtime().block_on(host.start(config)).unwrap_or_else(|e| panic!("{e}"));
        let addr = host
            .running()
            .map(|(_, addr)| addr)
            .unwrap_or_else(|| panic!("not running: {:?}", host.status()));
        assert_eq!(status_line(addr, "/api/hello"), "HTTP/1.1 200 OK");
        assert_eq!(status_line(addr, "/api/hello"), "HTTP/1.1 200 OK", "and keeps serving");
        runtime().block_on(host.shutdown());
        assert!(std::net::TcpStream::connect(addr).is_err(), "stopped: nothing listens on {addr}");
        assert!(!host.status().running);
    }

    #[test]
    fn a_taken_port_is_explained_as_such() {
        let io = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let e = anyhow::Error::from(io).context("cannot listen on 127.0.0.1:7821");
        let text = explain_start_failure(SocketAddr::from(([127, 0, 0, 1], 7821)), &e);
        assert!(text.starts_with("port 7821 is already in use"), "{text}");
    }

    #[test]
    fn commands_before_start_say_the_gateway_is_unavailable() {
        let host = GatewayHost::default();
        let err = host.management().err().map(|e| e.code);
        assert_eq!(err, Some(ErrorCode::GatewayUnavailable));
        assert!(!host.status().running);
    }

    #[tokio::test]
    async fn the_status_names_the_port_in_force_and_where_it_came_from_even_when_it_is_taken() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = taken.local_addr().map(|a| a.port()).unwrap_or_default();
        let host = GatewayHost::default();
        host.set_port(port, PORT_FROM_ENV);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let mut config = GatewayConfig::new(dir.path().to_path_buf());
        config.listen = SocketAddr::from(([127, 0, 0, 1], port));
        assert!(host.start(config).await.is_err());
        let status = host.status();
        assert!(!status.running);
        assert_eq!((status.port, status.port_source.as_deref()), (Some(port), Some("SWITCHYARD_PORT")));
        assert!(status.error.is_some_and(|e| e.contains("already in use")));
    }
}
