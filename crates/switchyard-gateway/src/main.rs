//! The `switchyard` headless binary: `switchyard serve` runs the gateway until
//! SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use switchyard_gateway::claude_import;
use switchyard_gateway::clock::SystemClock;
use switchyard_gateway::config::ConfigFile;
use switchyard_gateway::conn::lane_memory;
use switchyard_gateway::management::ConnectionUpsert;
use switchyard_gateway::server::{DEFAULT_LISTEN, MANAGEMENT_TOKEN_FILE};
use switchyard_gateway::{Gateway, GatewayConfig, TokenSource};

/// Switchyard: a local LLM gateway for IDE coding agents.
#[derive(Parser)]
#[command(name = "switchyard", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway (headless) until interrupted.
    Serve(ServeArgs),
    /// Add or update a Claude subscription connection from Claude Code's login
    /// (`~/.claude/.credentials.json`). A running gateway sees it at its next start.
    ImportClaude(ImportClaudeArgs),
    /// Point an agent at the running gateway (`claude-code`: ~/.claude/settings.json;
    /// `codex`: ~/.codex/config.toml), with a client key made for it; `--undo`
    /// puts the file back exactly as it was.
    Setup(SetupArgs),
}

#[derive(clap::Args)]
struct SetupArgs {
    /// `claude-code` or `codex`.
    agent: String,
    /// Restore the agent's file as it was before setup.
    #[arg(long)]
    undo: bool,
    /// With --undo: restore even if the file was edited after setup (those edits are lost).
    #[arg(long, requires = "undo")]
    force: bool,
    /// The running gateway [default: http://127.0.0.1:7821].
    #[arg(long, env = "SWITCHYARD_URL")]
    url: Option<String>,
    /// Data directory holding the management token [default: the OS data dir].
    #[arg(long, env = "SWITCHYARD_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Management token [default: the one stored in the data directory].
    #[arg(long, env = "SWITCHYARD_MANAGEMENT_TOKEN", hide_env_values = true)]
    management_token: Option<String>,
}

#[derive(clap::Args)]
struct ImportClaudeArgs {
    /// Claude Code's credentials file [default: ~/.claude/.credentials.json].
    #[arg(long)]
    file: Option<PathBuf>,
    /// Data directory [default: the OS data dir].
    #[arg(long, env = "SWITCHYARD_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Connection id to create or update.
    #[arg(long, default_value = "claude-code")]
    id: String,
    /// Routing priority (lower is tried first) [default: 0, or the existing value].
    #[arg(long)]
    priority: Option<i32>,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on [default: the config file's gateway.listen, else 127.0.0.1:7821].
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Allow a non-loopback listen address (client API keys are then always required).
    #[arg(long)]
    allow_remote: bool,
    /// Extra host name accepted in the Host header (repeatable), e.g. this machine's
    /// LAN name with --allow-remote. Loopback names are always accepted.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Data directory for the database and management token [default: the OS data dir].
    #[arg(long, env = "SWITCHYARD_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// TOML config file imported at start (idempotent).
    #[arg(long, env = "SWITCHYARD_CONFIG")]
    config: Option<PathBuf>,
    /// Management API token (overrides the stored one; not persisted).
    #[arg(long, env = "SWITCHYARD_MANAGEMENT_TOKEN", hide_env_values = true)]
    management_token: Option<String>,
    /// Team mode: keep all state in this Postgres database (postgres://user:pass@host/db),
    /// shared by every replica started with it [default: SQLite in the data directory].
    #[arg(long, env = "SWITCHYARD_DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// Seconds in-flight requests may run on after SIGINT/SIGTERM.
    #[arg(long, default_value_t = 30)]
    shutdown_grace_secs: u64,
    /// Rows kept in the request log.
    #[arg(long, default_value_t = 100_000)]
    log_retention_rows: u32,
    /// The built settings UI (`npm run ui:build` writes `ui/dist`), served under `/ui/`.
    #[arg(long, env = "SWITCHYARD_UI_DIR")]
    ui_dir: Option<PathBuf>,
    /// Seconds a client has to send a complete request head, on a new connection and
    /// between requests on a kept-alive one (so also the idle keep-alive timeout).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout_secs: u64,
    /// Seconds a client has to send a complete request body after its head.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    body_read_timeout_secs: u64,
    /// Seconds a write to a client may wait for it to read (a client that stopped
    /// reading); then the connection closes and its upstream stream and slots are
    /// freed. Counted per stall: a slow but steady reader is never cut off.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    write_stall_timeout_secs: u64,
    /// Open client connections at most [default: derived from the open-file limit].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: Option<u64>,
    /// Move the hot code onto huge pages at start (Linux, transparent huge pages on):
    /// fewer TLB misses for a request that runs cold. `false` keeps the code
    /// file-backed, for profilers that attach to the file (uprobes, perf).
    #[arg(long, env = switchyard_gateway::hot_text::ENV, default_value_t = true, action = clap::ArgAction::Set)]
    huge_text: bool,
}

fn default_data_dir() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("switchyard")
}

/// SIGINT/SIGTERM, registered before the gateway starts so a signal that arrives
/// while it is starting (or right after the banner) is never lost to the default
/// action.
struct ShutdownSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn register() -> anyhow::Result<ShutdownSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(ShutdownSignals {
                interrupt: signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
                terminate: signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(ShutdownSignals {})
    }

    async fn wait(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let hot_text = switchyard_gateway::hot_text::move_hot_text(args.huge_text);
    let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
    let file_listen = match &args.config {
        Some(path) => ConfigFile::load(path)?.gateway.listen,
        None => None,
    };
    let listen = match (args.listen, file_listen) {
        (Some(l), _) => l,
        (None, Some(text)) => {
            text.parse().with_context(|| format!("gateway.listen '{text}' is not an address"))?
        }
        (None, None) => DEFAULT_LISTEN.parse()?,
    };
    let mut config = GatewayConfig::new(&data_dir);
    config.listen = listen;
    config.allow_remote = args.allow_remote;
    config.allowed_hosts = args.allowed_hosts;
    config.config_file = args.config;
    config.management_token = args.management_token;
    config.database_url = args.database_url.filter(|u| !u.trim().is_empty());
    config.shutdown_grace = Duration::from_secs(args.shutdown_grace_secs);
    config.log_retention_rows = args.log_retention_rows;
    if let Some(dir) = &args.ui_dir
        && !dir.join("index.html").is_file()
    {
        anyhow::bail!(
            "--ui-dir {}: no index.html there (build the UI with `npm run ui:build`)",
            dir.display()
        );
    }
    config.ui_dir = args.ui_dir.clone();
    config.connections.header_read_timeout = Duration::from_secs(args.header_read_timeout_secs);
    config.connections.body_read_timeout = Duration::from_secs(args.body_read_timeout_secs);
    config.connections.write_stall_timeout = Duration::from_secs(args.write_stall_timeout_secs);
    config.connections.max_connections =
        args.max_connections.map(|n| usize::try_from(n).unwrap_or(usize::MAX));

    config.thread_memory = lane_memory::jemalloc_threads();

    let signals = ShutdownSignals::register()?;
    let gateway = Gateway::start(config).await?;
    eprintln!("Switchyard gateway listening on {}", gateway.base_url());
    eprintln!("  data directory: {}", data_dir.display());
    eprintln!("  code: {hot_text}");
    if let Some(team) = gateway.team() {
        eprintln!("  team mode: shared Postgres database, replica {}", team.origin());
    }
    let fd_limit = gateway.fd_limit().map_or_else(String::new, |l| format!(" (open-file limit {l})"));
    eprintln!("  client connections: up to {}{fd_limit}", gateway.max_connections());
    eprintln!("  Claude Code:  ANTHROPIC_BASE_URL={}", gateway.base_url());
    eprintln!("  Codex / OpenAI SDKs: base_url = {}/v1", gateway.base_url());
    if args.ui_dir.is_some() {
        eprintln!("  settings UI: {}/ui/ (it asks for the management token)", gateway.base_url());
    }
    if gateway.imported_changes() > 0 {
        eprintln!("  config import: {} item(s) created or updated", gateway.imported_changes());
    }
    match gateway.token_source() {
        TokenSource::Generated => {
            eprintln!(
                "  management token (shown once, stored in {}):",
                data_dir.join(MANAGEMENT_TOKEN_FILE).display()
            );
            println!("{}", gateway.management_token());
        }
        TokenSource::Stored => {
            eprintln!("  management token: see {}", data_dir.join(MANAGEMENT_TOKEN_FILE).display());
        }
        TokenSource::Override => eprintln!("  management token: as given"),
        TokenSource::Team => eprintln!(
            "  management token: the team's (set through the shared database by the replica that started \
             first, or given with --management-token)"
        ),
    }
    signals.wait().await;
    eprintln!("shutting down: letting in-flight requests finish");
    gateway.shutdown().await;
    Ok(())
}

async fn import_claude(args: ImportClaudeArgs) -> anyhow::Result<()> {
    let data_dir = args.data_dir.unwrap_or_else(default_data_dir);
    let file = args.file.unwrap_or_else(claude_import::default_credentials_path);
    let outcome = claude_import::import_claude_credentials(&data_dir, &file, &args.id, args.priority).await?;
    let change = match outcome.change {
        ConnectionUpsert::Created => "created",
        ConnectionUpsert::Updated => "updated",
        ConnectionUpsert::Unchanged => "unchanged",
    };
    let plan = outcome.subscription.map(|s| format!(" ({s} plan)")).unwrap_or_default();
    eprintln!("Claude account{plan} imported as connection '{}': {change}", outcome.id);
    if let Some(at) = outcome.expires_at {
        eprintln!("  access token expires at {} ms since the epoch; it is refreshed automatically", at.0);
    }
    eprintln!("  restart a running gateway to pick it up");
    Ok(())
}

/// `switchyard setup`: asks the running gateway (which makes the key and edits the
/// file as the same user) through its management API.
async fn setup(args: SetupArgs) -> anyhow::Result<()> {
    let url = args.url.unwrap_or_else(|| format!("http://{DEFAULT_LISTEN}"));
    let token = match args.management_token {
        Some(t) => t,
        None => {
            let dir = args.data_dir.unwrap_or_else(default_data_dir);
            let path = dir.join(MANAGEMENT_TOKEN_FILE);
            std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read the management token at {}", path.display()))?
                .trim()
                .to_owned()
        }
    };
    let force = if args.force { "?force=true" } else { "" };
    let endpoint = format!("{}/api/setup/{}{force}", url.trim_end_matches('/'), args.agent);
    let client = reqwest::Client::builder().no_proxy().build()?;
    let request = if args.undo { client.delete(&endpoint) } else { client.post(&endpoint) };
    let response = request.bearer_auth(token).send().await.with_context(|| {
        format!("cannot reach the gateway at {url}: start it first (scripts/start.sh or `switchyard serve`)")
    })?;
    let status = response.status();
    let body: serde_json::Value = serde_json::from_slice(&response.bytes().await?).unwrap_or_default();
    if !status.is_success() {
        let message = body["error"]["message"].as_str().unwrap_or("the gateway refused");
        anyhow::bail!("{message}");
    }
    if args.undo {
        let how =
            if body["restored"] == true { "restored as it was" } else { "removed (it did not exist before)" };
        eprintln!("{}: {how}", body["path"].as_str().unwrap_or_default());
    } else {
        eprintln!(
            "{} now uses {} with its own client key '{}' (previous file kept in {}); undo: switchyard setup {} --undo",
            body["path"].as_str().unwrap_or_default(),
            body["baseUrl"].as_str().unwrap_or_default(),
            body["keyName"].as_str().unwrap_or_default(),
            body["backupPath"].as_str().unwrap_or_default(),
            args.agent,
        );
    }
    Ok(())
}

/// jemalloc on Linux: glibc keeps what a burst freed in its per-thread arenas (a
/// burst of 5,000 streams left the gateway at twice its idle RSS for good), while
/// jemalloc's background thread purges pages unused for five seconds (the decay is set in
/// `.cargo/config.toml`). Measured in docs/benchmarks.md ("Memory back after bursts").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// One thread for the runtime `main` starts: client connections run on the lanes
/// (`conn::lanes`), one per core, so what is left here is the accept loop and the
/// background writers. A second worker would only cost a thread, its allocator
/// arena (~0.5 MB of idle RSS with two) and the wake-ups work stealing adds. The
/// accept loop allocates each new connection's task and socket state here, so this
/// thread, like the lanes, hands its allocator cache back after a burst
/// (`lane_memory::main_runtime`, which the desktop app's gateway thread uses too).
fn main() -> anyhow::Result<()> {
    let runtime =
        lane_memory::main_runtime(lane_memory::jemalloc_threads(), std::sync::Arc::new(SystemClock))
            .context("starting the async runtime")?;
    runtime.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SWITCHYARD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(args) => serve(args).await,
        Command::ImportClaude(args) => import_claude(args).await,
        Command::Setup(args) => setup(args).await,
    }
}
