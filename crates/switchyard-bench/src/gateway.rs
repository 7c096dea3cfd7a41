//! The gateway under test, run as a separate process exactly as a user runs it:
//! `switchyard serve` with a config file, a fresh data directory (SQLite in WAL
//! mode) and the request log on (its default).
//!
//! A separate process, not an in-process `Gateway::start`, so that its RSS is its
//! own (read from `/proc/PID/status`) and its runtime does not share worker threads
//! with the load generator. The child inherits the raised open-file limit.
//!
//! Failure behaviour: if the child exits before it answers `HEAD /api/hello`, start
//! fails with the tail of its stderr. The child is killed when this handle drops,
//! so an aborted benchmark leaves no gateway behind.

use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use http::{Method, StatusCode};
use tempfile::TempDir;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::client;

/// The client key the config file creates.
pub const CLIENT_KEY: &str = "sy-bench-client-key-000000000001";
/// The management token the gateway is started with.
pub const MANAGEMENT_TOKEN: &str = "bench-token";
/// Chat model routed to the fast OpenAI-compatible connection.
pub const CHAT_MODEL: &str = "bench-model";
/// Messages model routed by its `claude-` prefix to the fast Anthropic connection.
pub const MESSAGES_MODEL: &str = "claude-bench";
/// Messages model routed by catalogue to the slow Anthropic-format connection.
pub const SLOW_MODEL: &str = "claude-slow";
/// Chat model on a connection whose connection and model caps are set far above
/// any load (the gates' cost without waiting).
pub const GATED_MODEL: &str = "bench-gated";
/// Chat model served by [`POOL_SIZE`] connections of one provider (issue 16's
/// scaling check), all to the fast upstream.
pub const POOL_MODEL: &str = "bench-pool";
/// Connections serving [`POOL_MODEL`].
pub const POOL_SIZE: usize = 200;
/// Chat model on a connection capped at [`crate::flow::SATURATED_CAP`].
pub const CAPPED_MODEL: &str = "bench-capped";

const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `switchyard serve` child.
pub struct GatewayProcess {
    child: Child,
    pid: u32,
    addr: SocketAddr,
    log_path: PathBuf,
    _data_dir: Option<TempDir>,
}

/// The config file: one client key, the fast upstream in both formats, and the
/// slow upstream as its own Anthropic-format provider; with `flow`, also the two
/// flow-control connections (gated, capped) and the [`POOL_SIZE`] pool connections
/// the scaling check uses. An A/B baseline gets the same file; one from before flow
/// control refuses their `rate_limit_overrides` and falls back to the file without
/// them (`run::start_baseline`).
fn config_toml(fast: SocketAddr, slow: SocketAddr, flow: bool) -> String {
    let mut text = format!(
        r#"[[api_keys]]
name = "bench"
key = "{CLIENT_KEY}"

[[connections]]
id = "fast"
provider = "openai-compatible"
api_key = "upstream-key"
base_url = "http://{fast}/v1"
models = ["{CHAT_MODEL}"]

[[connections]]
id = "fast-anthropic"
provider = "anthropic"
api_key = "upstream-key"
base_url = "http://{fast}"

[[connections]]
id = "slow-anthropic"
provider = "anthropic-slow"
api_format = "anthropic"
api_key = "upstream-key"
base_url = "http://{slow}"
models = ["{SLOW_MODEL}"]
"#
    );
    if flow {
        text.push_str(&format!(
            r#"
[[connections]]
id = "fast-gated"
provider = "gated"
api_format = "openai"
api_key = "upstream-key"
base_url = "http://{fast}/v1"
models = ["{GATED_MODEL}"]
max_concurrent = 10000
[connections.rate_limit_overrides]
model_concurrency = {{ "{GATED_MODEL}" = 10000 }}

[[connections]]
id = "fast-capped"
provider = "capped"
api_format = "openai"
api_key = "upstream-key"
base_url = "http://{fast}/v1"
models = ["{CAPPED_MODEL}"]
max_concurrent = {cap}
"#,
            cap = crate::flow::SATURATED_CAP
        ));
        for i in 0..POOL_SIZE {
            text.push_str(&format!(
                r#"
[[connections]]
id = "pool-{i:03}"
provider = "pool"
api_format = "openai"
api_key = "upstream-key"
base_url = "http://{fast}/v1"
models = ["{POOL_MODEL}"]
"#
            ));
        }
    }
    text
}

/// A free loopback port (bound and released; the gateway binds it right after).
fn free_port() -> anyhow::Result<u16> {
    Ok(StdTcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl GatewayProcess {
    /// Writes the config, starts `bin serve ...` and waits until it answers.
    /// `flow`: include the flow-control connections (see [`config_toml`]).
    pub async fn start(
        bin: &Path,
        fast: SocketAddr,
        slow: SocketAddr,
        flow: bool,
    ) -> anyhow::Result<GatewayProcess> {
        GatewayProcess::start_with(bin, fast, slow, flow, "", &[]).await
    }

    /// [`GatewayProcess::start`] with `extra_toml` appended to the config and
    /// `extra_args` after `serve`'s own (team mode's `--database-url`).
    pub async fn start_with(
        bin: &Path,
        fast: SocketAddr,
        slow: SocketAddr,
        flow: bool,
        extra_toml: &str,
        extra_args: &[String],
    ) -> anyhow::Result<GatewayProcess> {
        if !bin.is_file() {
            bail!(
                "gateway binary not found at {}; build it with `cargo build --release -p switchyard-gateway` \
                 or pass --gateway-bin",
                bin.display()
            );
        }
        let data_dir = tempfile::Builder::new().prefix("switchyard-bench-").tempdir()?;
        let dir = data_dir.path().to_path_buf();
        GatewayProcess::spawn(
            bin,
            &dir,
            config_toml(fast, slow, flow) + extra_toml,
            extra_args,
            Some(data_dir),
        )
        .await
    }

    /// A gateway on the existing data directory `dir` (the default config; the
    /// directory outlives the process).
    pub async fn start_in(
        bin: &Path,
        fast: SocketAddr,
        slow: SocketAddr,
        dir: &Path,
        extra_args: &[String],
    ) -> anyhow::Result<GatewayProcess> {
        GatewayProcess::spawn(bin, dir, config_toml(fast, slow, false), extra_args, None).await
    }

    async fn spawn(
        bin: &Path,
        dir: &Path,
        config_text: String,
        extra_args: &[String],
        owned: Option<TempDir>,
    ) -> anyhow::Result<GatewayProcess> {
        if !bin.is_file() {
            bail!("gateway binary not found at {}", bin.display());
        }
        let config = dir.join("bench.toml");
        std::fs::write(&config, config_text)?;
        let log_path = dir.join("gateway.log");
        let log = std::fs::File::create(&log_path)?;
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));

        let child = Command::new(bin)
            .arg("serve")
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--data-dir")
            .arg(dir)
            .arg("--config")
            .arg(&config)
            .arg("--management-token")
            .arg(MANAGEMENT_TOKEN)
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let pid = child.id().context("gateway exited at once")?;
        let mut gateway = GatewayProcess { child, pid, addr, log_path, _data_dir: owned };
        gateway.wait_ready().await?;
        Ok(gateway)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("gateway exited during start ({status}):\n{}", self.log_tail());
            }
            if let Ok((StatusCode::OK, _)) = client::simple(self.addr, Method::HEAD, "/api/hello", None).await
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("gateway not ready after {READY_TIMEOUT:?}:\n{}", self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The last lines of the gateway's stderr.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// The gateway's listen address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The child's resident set size now, in bytes.
    pub fn rss(&self) -> anyhow::Result<u64> {
        rss_bytes(self.pid)
    }

    /// The child's RSS once it holds still: read every half second, from `min` on,
    /// until the last [`SETTLED_SAMPLES`] readings lie within 1 % (at least 128 KB)
    /// of each other, or `max` has passed. What an idle process returns to after a
    /// load is not there the moment the load ends: jemalloc gives unused pages back
    /// over ten seconds, in steps with pauses between them, so a reading taken right
    /// after a phase depends on how far that has got (`min` waits that out).
    /// Returns the last reading and how long it waited.
    pub async fn settled_rss(&self, min: Duration, max: Duration) -> anyhow::Result<(u64, Duration)> {
        let started = std::time::Instant::now();
        let mut readings = vec![self.rss()?];
        loop {
            let recent = &readings[readings.len().saturating_sub(SETTLED_SAMPLES)..];
            let (low, high) = (recent.iter().min().copied(), recent.iter().max().copied());
            let still = recent.len() == SETTLED_SAMPLES
                && low.zip(high).is_some_and(|(low, high)| high - low <= (high / 100).max(128 << 10));
            if (still && started.elapsed() >= min) || started.elapsed() >= max {
                return Ok((readings[readings.len() - 1], started.elapsed()));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            readings.push(self.rss()?);
        }
    }

    /// The child's open file descriptors now (sockets, database files, ...).
    pub fn open_fds(&self) -> anyhow::Result<usize> {
        Ok(std::fs::read_dir(format!("/proc/{}/fd", self.pid))?.count())
    }

    /// The child's threads now (`Threads` in /proc/PID/status).
    pub fn threads(&self) -> anyhow::Result<u64> {
        status_field(self.pid, "Threads:")
    }

    /// Starts sampling the child's RSS every `every`; [`RssSampler::stop`] returns the peak.
    pub fn sample_rss(&self, every: Duration) -> RssSampler {
        RssSampler::start(self.pid, every)
    }

    /// The newest request-log row id (the log's row count since start, as rows are
    /// only appended), read through the management API.
    pub async fn request_log_rows(&self) -> anyhow::Result<u64> {
        let (status, body) =
            client::simple(self.addr, Method::GET, "/api/logs?limit=1", Some(MANAGEMENT_TOKEN)).await?;
        if status != StatusCode::OK {
            bail!("GET /api/logs answered {status}");
        }
        let rows: serde_json::Value = serde_json::from_slice(&body)?;
        let id = rows.pointer("/0/id").and_then(serde_json::Value::as_f64).unwrap_or(0.0);
        Ok(id as u64)
    }

    /// Sends SIGTERM and waits for a graceful exit (SIGKILL after 10 s).
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.pid)?).context("pid 0")?;
        rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    eprintln!("[bench] gateway exited with {status}:\n{}", self.log_tail());
                }
            }
            Err(_) => {
                eprintln!("[bench] gateway did not stop within 10 s of SIGTERM; killing it");
                self.child.kill().await?;
            }
        }
        Ok(())
    }
}

/// `VmRSS` of `pid`, in bytes.
pub fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    Ok(status_field(pid, "VmRSS:")? * 1024)
}

/// Readings (half a second apart) that must agree for [`GatewayProcess::settled_rss`].
const SETTLED_SAMPLES: usize = 6;

/// A numeric field of `/proc/PID/status` (`VmRSS:` is in kB, `Threads:` a count).
fn status_field(pid: u32, field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .with_context(|| format!("no {field} line in /proc/{pid}/status"))?;
    line.trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .with_context(|| format!("unparsable {line:?}"))
}

/// Background RSS sampling of one process.
pub struct RssSampler {
    stop: CancellationToken,
    task: JoinHandle<u64>,
}

impl RssSampler {
    fn start(pid: u32, every: Duration) -> RssSampler {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            let mut peak = 0u64;
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => peak = peak.max(rss_bytes(pid).unwrap_or(0)),
                    () = token.cancelled() => break,
                }
            }
            peak.max(rss_bytes(pid).unwrap_or(0))
        });
        RssSampler { stop, task }
    }

    /// Stops sampling; returns the peak RSS seen, in bytes.
    pub async fn stop(self) -> anyhow::Result<u64> {
        self.stop.cancel();
        Ok(self.task.await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_rss() -> anyhow::Result<()> {
        let rss = rss_bytes(std::process::id())?;
        assert!(rss > 1024 * 1024, "rss {rss}");
        Ok(())
    }

    #[test]
    fn config_parses_as_toml_with_the_flow_and_pool_connections() -> anyhow::Result<()> {
        let (fast, slow) = ("127.0.0.1:1".parse()?, "127.0.0.1:2".parse()?);
        let doc: toml::Table = toml::from_str(&config_toml(fast, slow, true))?;
        assert_eq!(doc["connections"].as_array().map(Vec::len), Some(5 + POOL_SIZE));
        assert_eq!(doc["connections"][0]["base_url"].as_str(), Some("http://127.0.0.1:1/v1"));
        assert_eq!(doc["connections"][2]["base_url"].as_str(), Some("http://127.0.0.1:2"));
        let gated = &doc["connections"][3]["rate_limit_overrides"]["model_concurrency"][GATED_MODEL];
        assert_eq!(gated.as_integer(), Some(10_000));
        let plain: toml::Table = toml::from_str(&config_toml(fast, slow, false))?;
        assert_eq!(
            plain["connections"].as_array().map(Vec::len),
            Some(3),
            "a baseline gets no flow connections"
        );
        Ok(())
    }
}
