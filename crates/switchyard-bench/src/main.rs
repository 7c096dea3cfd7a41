//! `switchyard-bench`: the gateway's performance benchmark, in one run.
//!
//! Starts a fast fake upstream in-process and the `switchyard` gateway as a child
//! process (and, for an A/B run, a second one from an older build), then measures the gateway's added latency at fixed rates, streaming
//! time to first byte, maximum throughput, RSS at idle and under load, and 1,000
//! concurrent open streams, each against the same fake upstream called directly.
//! Prints a Markdown report; `--write-docs` also writes it into
//! `docs/benchmarks.md`. See `run` for the plan and each phase's module for what it
//! measures and why.

#![expect(clippy::disallowed_methods, reason = "a benchmark measures real elapsed time and waits for real")]

mod ab;
mod agent_request;
mod client;
mod closed_loop;
mod flow;
mod gateway;
mod history;
mod hop_ab;
mod machine;
mod open_loop;
mod relay;
mod report;
mod run;
mod scaling;
mod soak;
mod stats;
mod streams;
mod targets;
mod team;
mod train;
mod turns;
mod upstream;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Benchmark the Switchyard gateway against a fake upstream, directly and through it.
#[derive(Parser, Debug)]
#[command(name = "switchyard-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Internal>,
    /// Open-loop request rates (requests/s) for the added-latency runs.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,2000")]
    rates: Vec<u32>,
    /// Measured seconds per run (after the warm-up).
    #[arg(long, default_value_t = 5.0)]
    duration_secs: f64,
    /// Fewest samples a way at an open-loop rate: a low rate runs longer than
    /// --duration-secs to collect them (its p50 rests on them: a hundred samples at
    /// 10 req/s leave the median uncertain by tens of µs). 0: --duration-secs only.
    #[arg(long, default_value_t = 300)]
    min_samples: u32,
    /// Warm-up seconds before each measured run.
    #[arg(long, default_value_t = 1.0)]
    warmup_secs: f64,
    /// Closed-loop workers (= connections) for the throughput runs.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Keep-alive client connections for the open-loop runs.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Concurrent streams in the open-streams phase.
    #[arg(long, default_value_t = 5000)]
    streams: usize,
    /// Open-loop rate (requests/s) for the streaming TTFB runs.
    #[arg(long, default_value_t = 200)]
    stream_rate: u32,
    /// Open-loop rate (requests/s) for the agent-sized request (~50 KB).
    #[arg(long, default_value_t = 10)]
    agent_rate: u32,
    /// The `switchyard` binary [default: `switchyard` next to this executable].
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// An older `switchyard` binary to compare against: started with the same
    /// config, it joins the added-latency runs as one more interleaved way, and the
    /// report gets an A/B section (see scripts/bench-ab.sh).
    #[arg(long)]
    baseline_bin: Option<PathBuf>,
    /// The baseline's name in the report [default: derived from --baseline-bin's
    /// path, e.g. `1f49985` for `/…/ab/1f49985-target/release/switchyard`].
    #[arg(long, requires = "baseline_bin")]
    baseline_label: Option<String>,
    /// The gateway under test's name in the A/B section [default: this checkout's
    /// commit]; for a --gateway-bin built from another revision.
    #[arg(long, requires = "baseline_bin")]
    gateway_label: Option<String>,
    /// Also write the report into docs/benchmarks.md.
    #[arg(long)]
    write_docs: bool,
    /// Where --write-docs writes.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/benchmarks.md"))]
    docs_file: PathBuf,
    /// Smoke run: short windows, fewer and shorter streams (numbers are not meaningful).
    #[arg(long)]
    quick: bool,
}

/// Other runs of the benchmark binary.
#[derive(Subcommand, Debug)]
enum Internal {
    /// A long steady load through one gateway, sampling its RSS, descriptors, threads
    /// and latency every minute (see `soak`); exits non-zero when memory or
    /// descriptors grow or a request fails.
    Soak(SoakArgs),
    /// Team mode's costs: propagation latency between two replicas sharing one
    /// Postgres, and the hot path on Postgres against SQLite (see `team`).
    Team(team::TeamArgs),
    /// What a long request history costs: the summary endpoint and per-request
    /// cost with a million log rows, and the file after retention (see `history`).
    History(history::HistoryArgs),
    /// The proxy hop's HTTP client: the same relay on hyper's connection-level
    /// client, hyper-util's pooled client and reqwest, in one run (ADR 0011).
    HopAb(hop_ab::HopAbArgs),
    /// The profile-guided build's training workload: every client format against
    /// both upstream formats, streamed and not, at an agent's pace and under load
    /// (see `train` and scripts/pgo-build.sh).
    Train(train::TrainArgs),
    /// The reference relay (see `relay`); started by the benchmark itself.
    #[command(hide = true)]
    Relay {
        /// Address to listen on.
        #[arg(long)]
        listen: SocketAddr,
        /// The fake upstream.
        #[arg(long)]
        upstream: SocketAddr,
        /// The client it forwards with.
        #[arg(long, value_enum, default_value_t)]
        client: relay::HopClient,
    },
}

/// `switchyard-bench soak` options.
#[derive(clap::Args, Debug)]
struct SoakArgs {
    /// Requests per second.
    #[arg(long, default_value_t = 500)]
    rate: u32,
    /// Minutes of load.
    #[arg(long, default_value_t = 30.0)]
    minutes: f64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 60.0)]
    sample_secs: f64,
    /// Every n-th request is a streamed Messages request (0: none).
    #[arg(long, default_value_t = 10)]
    stream_every: u32,
    /// Keep-alive client connections.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// The `switchyard` binary [default: `switchyard` next to this executable].
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// Also write the report into the soak section of docs/reliability.md.
    #[arg(long)]
    write_docs: bool,
    /// Where --write-docs writes.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/reliability.md"))]
    docs_file: PathBuf,
}

impl SoakArgs {
    fn settings(&self, command: String) -> anyhow::Result<soak::SoakSettings> {
        let secs = |s: f64, what: &str| {
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .with_context(|| format!("--{what} must be a positive number"))
        };
        anyhow::ensure!(self.rate > 0, "--rate must be positive");
        Ok(soak::SoakSettings {
            rate: self.rate,
            duration: secs(self.minutes * 60.0, "minutes")?,
            sample_every: secs(self.sample_secs, "sample-secs")?,
            stream_every: self.stream_every,
            connections: self.connections.max(1),
            timeout: Duration::from_secs(10),
            settle: Duration::from_secs(5),
            command,
        })
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn interrupted() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// Runs the soak and reports; an error when a check fails.
async fn soak_main(args: &SoakArgs, command: String) -> anyhow::Result<()> {
    let settings = args.settings(command)?;
    let bin = match &args.gateway_bin {
        Some(path) => path.clone(),
        None => default_gateway_bin()?,
    };
    // Dropping the run on a signal kills the gateway child (kill-on-drop), so an
    // interrupted soak leaves no process behind.
    let result = tokio::select! {
        result = soak::run(settings, &bin) => result?,
        () = interrupted() => anyhow::bail!("interrupted: the soak and its gateway were stopped"),
    };
    let text = soak::markdown(&result);
    println!("{text}");
    if args.write_docs {
        soak::write_docs(&args.docs_file, &text)?;
        eprintln!("[soak] wrote {}", args.docs_file.display());
    }
    let failed: Vec<String> = soak::checks(&result).into_iter().filter(|c| !c.ok).map(|c| c.what).collect();
    anyhow::ensure!(failed.is_empty(), "soak failed: {}", failed.join("; "));
    Ok(())
}

impl Cli {
    fn settings(&self, command: String) -> anyhow::Result<run::Settings> {
        let secs = |s: f64, what: &str| {
            Duration::try_from_secs_f64(s).with_context(|| format!("--{what} must be a non-negative number"))
        };
        let mut settings = run::Settings {
            rates: self.rates.clone(),
            warmup: secs(self.warmup_secs, "warmup-secs")?,
            duration: secs(self.duration_secs, "duration-secs")?,
            min_samples: self.min_samples,
            connections: self.connections.max(1),
            concurrency: self.concurrency.max(1),
            streams: self.streams,
            stream_rate: self.stream_rate.max(1),
            agent_rate: self.agent_rate.max(1),
            // 6 s streams: long enough that all of 5,000 are open at once.
            slow_frames: 61,
            slow_interval: Duration::from_millis(100),
            timeout: Duration::from_secs(10),
            settle: Duration::from_secs(3),
            stream_settle: Duration::from_secs(10),
            // Past jemalloc's ten-second decay of the previous phase's pages.
            idle_settle: (Duration::from_secs(11), Duration::from_secs(30)),
            command,
            baseline: self.baseline_bin.as_ref().map(|bin| run::Baseline {
                bin: bin.clone(),
                label: self.baseline_label.clone().unwrap_or_else(|| label_from_path(bin)),
                candidate_label: self.gateway_label.clone(),
            }),
        };
        if self.quick {
            settings.warmup = Duration::from_millis(300);
            settings.duration = Duration::from_secs(1);
            settings.min_samples = 0;
            settings.streams = settings.streams.min(200);
            settings.slow_frames = 11;
            settings.settle = Duration::from_secs(1);
            settings.stream_settle = Duration::from_secs(1);
            settings.idle_settle = (Duration::ZERO, Duration::from_secs(2));
        }
        if settings.rates.is_empty() || settings.rates.contains(&0) {
            anyhow::bail!("--rates needs at least one positive rate");
        }
        Ok(settings)
    }
}

/// The default gateway binary: `switchyard` in the directory of this executable
/// (`target/release` or `$CARGO_TARGET_DIR/release`).
fn default_gateway_bin() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating this executable")?;
    let dir = exe.parent().context("this executable has no parent directory")?;
    Ok(dir.join("switchyard"))
}

/// A name for a baseline binary from its path: the nearest ancestor directory
/// that is not a build-layout name (`release`, `debug`, `target`, `bin`), without a
/// `-target` suffix; so `/…/ab/1f49985-target/release/switchyard` is `1f49985`. The
/// whole path when nothing fits.
fn label_from_path(bin: &std::path::Path) -> String {
    bin.ancestors()
        .skip(1)
        .filter_map(|dir| dir.file_name()?.to_str())
        .find(|name| !matches!(*name, "release" | "debug" | "target" | "bin"))
        .map(|name| name.strip_suffix("-target").unwrap_or(name).to_owned())
        .unwrap_or_else(|| bin.display().to_string())
}

/// 1,000 streams need ~3,000 sockets across client, gateway and upstream: lift the
/// soft open-file limit to the hard one (the gateway child inherits it).
fn raise_nofile_limit() -> Option<u64> {
    let limit = getrlimit(Resource::Nofile);
    if limit.maximum != limit.current {
        let raised = Rlimit { current: limit.maximum, maximum: limit.maximum };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            eprintln!("[bench] could not raise RLIMIT_NOFILE: {e}");
        }
    }
    getrlimit(Resource::Nofile).current
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let command = std::env::args()
        .enumerate()
        .map(|(i, a)| if i == 0 { "switchyard-bench".to_owned() } else { a })
        .collect::<Vec<_>>()
        .join(" ");
    match &cli.command {
        Some(Internal::Relay { listen, upstream, client }) => {
            return relay::serve(*listen, *upstream, *client).await;
        }
        Some(Internal::HopAb(args)) => {
            raise_nofile_limit();
            let exe = std::env::current_exe().context("locating this executable")?;
            return hop_ab::run(args, &exe, &command).await;
        }
        Some(Internal::History(args)) => {
            let bin = args.gateway_bin.clone().map_or_else(default_gateway_bin, Ok)?;
            return history::run(args, &bin, &command).await;
        }
        Some(Internal::Train(args)) => {
            raise_nofile_limit();
            let bin = args.gateway_bin.clone().map_or_else(default_gateway_bin, Ok)?;
            return train::run(args, &bin).await;
        }
        Some(Internal::Team(args)) => {
            raise_nofile_limit();
            let bin = args.gateway_bin(default_gateway_bin()?);
            return team::run(args, &bin).await;
        }
        Some(Internal::Soak(args)) => {
            raise_nofile_limit();
            return soak_main(args, command).await;
        }
        None => {}
    }
    let settings = cli.settings(command)?;
    let nofile = raise_nofile_limit();
    eprintln!(
        "[bench] open-file limit: {}",
        nofile.map_or_else(|| "unlimited".to_owned(), |n| n.to_string())
    );
    let bin = match &cli.gateway_bin {
        Some(path) => path.clone(),
        None => default_gateway_bin()?,
    };

    let exe = std::env::current_exe().context("locating this executable")?;
    let results = run::run(settings, &bin, &exe).await?;
    let text = report::markdown(&results);
    println!("{text}");
    if let Some(warning) = report::not_quiet(results.interference) {
        eprintln!("[bench] {}", warning.replace("**", ""));
    }
    if cli.write_docs {
        report::write_docs(&cli.docs_file, &text)?;
        eprintln!("[bench] wrote {}", cli.docs_file.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_labels_come_from_the_build_directory() {
        let label = |p: &str| label_from_path(std::path::Path::new(p));
        assert_eq!(label("/var/cache/switchyard/ab/1f49985-target/release/switchyard"), "1f49985");
        assert_eq!(label("/tmp/old-build/target/release/switchyard"), "old-build");
        assert_eq!(label("/usr/local/bin/switchyard"), "local");
        assert_eq!(label("switchyard"), "switchyard");
    }
}
