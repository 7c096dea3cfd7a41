//! `switchyard-bench hop-ab`: which HTTP client the gateway's proxy hop should use
//! (issue 16, ADR 0011), measured in one run.
//!
//! Three relays, identical but for the client that forwards to the fake upstream
//! (see [`HopClient`]): hyper's connection-level client, hyper-util's pooled client
//! and reqwest configured as the gateway's. Each reads the request body whole first,
//! as the gateway must. The reference relay of the main benchmark runs beside them
//! as the anchor that ties this run to the main report's relay floor. The open-loop
//! rates and the saturated closed loop take turns between them (1 s slices, whole
//! balanced cycles of `turns`), so host noise lands on all of them alike, and the
//! CPU each relay process used is read from the scheduler per request it served.
//! The difference between two relays is the cost of the client stack alone: the
//! gateway around it is the same whichever client it uses.
//!
//! One bias, against `hyper-conn`: it dials its upstream connection when a client
//! connection opens, and each closed-loop slice opens 64 new client connections,
//! so it alone reconnects upstream every slice.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::client::{RequestSpec, Until};
use crate::closed_loop::{self, Saturated};
use crate::machine::{Machine, Runtime};
use crate::open_loop::{self, OpenLoop};
use crate::relay::{HopClient, RelayProcess};
use crate::run;
use crate::stats;
use crate::upstream::{FakeUpstream, Pace};

/// `switchyard-bench hop-ab` options.
#[derive(clap::Args, Debug)]
pub struct HopAbArgs {
    /// Open-loop rates (requests/s).
    #[arg(long, value_delimiter = ',', default_value = "10,100,2000")]
    rates: Vec<u32>,
    /// Measured seconds per rate and of the saturated loop, per relay (rounded up
    /// to whole balanced cycles of 1 s slices).
    #[arg(long, default_value_t = 10)]
    duration_secs: u64,
    /// Closed-loop workers (= connections) at saturation.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
}

const CLIENTS: [HopClient; 4] =
    [HopClient::Reference, HopClient::HyperConn, HopClient::HyperPool, HopClient::Reqwest];
const WARMUP: Duration = Duration::from_secs(1);
/// Client connections per relay in the open-loop runs (the main benchmark's default).
const OPEN_LOOP_CONNECTIONS: usize = 64;
const PATH: &str = "/v1/chat/completions";

/// `secs` rounded up to whole balanced cycles of 1 s slices for `n` targets.
fn balanced_rounds(secs: u64, n: usize) -> u64 {
    let cycle = crate::turns::cycle(n) as u64;
    secs.max(1).div_ceil(cycle) * cycle
}

/// One relay's figures at one rate.
struct AtRate {
    added_p50_ms: f64,
    added_p99_ms: f64,
    cpu_us: Option<f64>,
    errors: u64,
}

/// Runs the comparison and prints a Markdown report.
pub async fn run(args: &HopAbArgs, exe: &Path, command: &str) -> anyhow::Result<()> {
    let machine = Machine::detect();
    let fast = FakeUpstream::start(Pace::Fast).await?;
    let mut relays = Vec::new();
    for client in CLIENTS {
        relays.push(RelayProcess::start(exe, fast.addr(), client).await?);
    }
    let body = run::chat_body();
    let direct = run::spec_for(fast.addr(), PATH, &body)?;
    let specs: Vec<Arc<RequestSpec>> =
        relays.iter().map(|r| run::spec_for(r.addr(), PATH, &body)).collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for &rate in &args.rates {
        rows.push((rate, at_rate(rate, args, &direct, &specs, &relays).await?));
    }
    let saturated = saturate(args, &specs, &relays).await?;
    for relay in relays {
        relay.stop().await?;
    }
    println!("{}", markdown(&machine, command, &rows, &saturated));
    Ok(())
}

/// The relays and the direct way interleaved at one open-loop rate.
async fn at_rate(
    rate: u32,
    args: &HopAbArgs,
    direct: &Arc<RequestSpec>,
    specs: &[Arc<RequestSpec>],
    relays: &[RelayProcess],
) -> anyhow::Result<Vec<AtRate>> {
    let secs = balanced_rounds(args.duration_secs, specs.len() + 1);
    eprintln!("[hop-ab] {rate} req/s: direct and {} relays, interleaved, {secs} s each", relays.len());
    let cfg = OpenLoop {
        rate,
        warmup: WARMUP,
        duration: Duration::from_secs(secs),
        connections: OPEN_LOOP_CONNECTIONS,
        until: Until::FullBody,
        timeout: Duration::from_secs(10),
    };
    let mut all = vec![direct.clone()];
    all.extend(specs.iter().cloned());
    let before: Vec<_> = relays.iter().map(|r| Runtime::read(r.pid())).collect();
    let results = open_loop::run(&all, cfg).await?;
    let after: Vec<_> = relays.iter().map(|r| Runtime::read(r.pid())).collect();
    let d = &results[0].latency;
    Ok(results[1..]
        .iter()
        .zip(before.iter().zip(&after))
        .map(|(r, (b, a))| AtRate {
            added_p50_ms: stats::added_ms(r.latency.p50, d.p50),
            added_p99_ms: stats::added_ms(r.latency.p99, d.p99),
            cpu_us: b.as_ref().zip(a.as_ref()).map(|(b, a)| a.since(b) as f64 / 1e3 / r.sent.max(1) as f64),
            errors: r.errors,
        })
        .collect())
}

/// Alternating 1 s closed-loop slices on each relay, after one warm-up each.
async fn saturate(
    args: &HopAbArgs,
    specs: &[Arc<RequestSpec>],
    relays: &[RelayProcess],
) -> anyhow::Result<Vec<Saturated>> {
    let rounds = balanced_rounds(args.duration_secs, specs.len());
    eprintln!("[hop-ab] saturation: {rounds} alternating 1 s closed-loop slices each");
    let targets: Vec<_> = specs.iter().cloned().zip(relays.iter().map(RelayProcess::pid)).collect();
    closed_loop::alternate(&targets, args.concurrency, WARMUP, u32::try_from(rounds)?).await
}

fn markdown(
    machine: &Machine,
    command: &str,
    rows: &[(u32, Vec<AtRate>)],
    saturated: &[Saturated],
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### Proxy-hop client A/B ({}, commit {}, {} CPUs)\n\nCommand: `{command}`\n",
        machine.date, machine.commit, machine.cpus
    );
    let header: Vec<String> = CLIENTS.iter().map(|c| c.name()).collect();
    let _ = writeln!(out, "| Rate | Figure | {} |", header.join(" | "));
    let _ = writeln!(out, "|---|---|{}", "---:|".repeat(CLIENTS.len()));
    for (rate, per) in rows {
        let cells = |f: &dyn Fn(&AtRate) -> String| per.iter().map(f).collect::<Vec<_>>().join(" | ");
        let _ = writeln!(
            out,
            "| {rate} req/s | added p50 | {} |",
            cells(&|r| format!("{:+.3} ms", r.added_p50_ms))
        );
        let _ = writeln!(
            out,
            "| {rate} req/s | added p99 | {} |",
            cells(&|r| format!("{:+.3} ms", r.added_p99_ms))
        );
        let _ = writeln!(
            out,
            "| {rate} req/s | CPU per request | {} |",
            cells(&|r| r.cpu_us.map_or("n/a".to_owned(), |c| format!("{c:.1} µs")))
        );
        if per.iter().any(|r| r.errors > 0) {
            let _ = writeln!(out, "| {rate} req/s | errors | {} |", cells(&|r| r.errors.to_string()));
        }
    }
    let sat = |f: &dyn Fn(&Saturated) -> String| saturated.iter().map(f).collect::<Vec<_>>().join(" | ");
    let _ = writeln!(out, "| saturated | requests/s | {} |", sat(&|s| format!("{:.0}", s.rps())));
    let _ = writeln!(
        out,
        "| saturated | CPU per request | {} |",
        sat(&|s| s.cpu_us().map_or("n/a".to_owned(), |c| format!("{c:.1} µs")))
    );
    if saturated.iter().any(|s| s.errors > 0) {
        let _ = writeln!(out, "| saturated | errors | {} |", sat(&|s| s.errors.to_string()));
    }
    out
}
