//! The flow-control phase (issue 11): what the concurrency gates cost.
//!
//! - **Gates set vs unset**: the same non-streaming request through the same
//!   gateway to the same fake upstream, once on a connection with no gate and once
//!   on a connection whose connection cap and model cap are set far above the load
//!   (so every request takes and returns two slots but never waits), interleaved
//!   slice by slice in one open-loop run. The difference is the gates' own cost.
//!   Whether "unset" costs anything against a build without flow control at all is
//!   the A/B run's question (`scripts/bench-ab.sh`).
//! - **Queue throughput at saturation**: closed-loop workers far outnumbering a
//!   connection cap of [`SATURATED_CAP`], so nearly every request waits in the
//!   connection's FIFO queue for a slot; against the same load on the ungated
//!   connection. It shows what queueing costs per request, and that the queue
//!   drains at the upstream's pace rather than collapsing.

use crate::client::Until;
use crate::closed_loop::{self, ClosedLoop, ClosedLoopResult};
use crate::gateway::{self, GatewayProcess};
use crate::open_loop::{self, OpenLoopResult};
use crate::run::{self, Settings};

/// The connection cap of the saturation run.
pub const SATURATED_CAP: u32 = 4;

/// What the phase measured.
#[derive(Debug, Clone)]
pub struct FlowPhase {
    /// Open-loop rate of the gate-cost run.
    pub rate: u32,
    /// Ungated connection.
    pub ungated: OpenLoopResult,
    /// Connection and model caps set, never reached.
    pub gated: OpenLoopResult,
    /// Closed-loop workers of the saturation runs.
    pub workers: usize,
    /// Ungated, closed loop.
    pub ungated_throughput: ClosedLoopResult,
    /// Capped at [`SATURATED_CAP`], closed loop.
    pub saturated_throughput: ClosedLoopResult,
}

/// Runs the phase against a started gateway.
pub async fn run(settings: &Settings, gw: &GatewayProcess) -> anyhow::Result<FlowPhase> {
    let spec = |model: &str| run::spec_for(gw.addr(), "/v1/chat/completions", &run::chat_body_for(model));
    let ungated = spec(gateway::CHAT_MODEL)?;
    let gated = spec(gateway::GATED_MODEL)?;
    let capped = spec(gateway::CAPPED_MODEL)?;
    let rate = settings.rates.iter().copied().max().unwrap_or(1000);
    let cfg = settings.open_loop(rate, Until::FullBody);
    eprintln!("[bench] flow control: gates set vs unset @ {rate} req/s, interleaved");
    let mut results = open_loop::run(&[ungated.clone(), gated], cfg).await?.into_iter();
    let (Some(ungated_run), Some(gated_run)) = (results.next(), results.next()) else {
        anyhow::bail!("open loop returned too few results");
    };
    let workers = settings.concurrency;
    let tp = ClosedLoop { workers, warmup: settings.warmup, duration: settings.duration };
    eprintln!("[bench] flow control: {workers} workers, ungated vs cap {SATURATED_CAP}");
    let ungated_throughput = closed_loop::run(ungated, tp).await?;
    let saturated_throughput = closed_loop::run(capped, tp).await?;
    for (what, r) in [("ungated", &ungated_throughput), ("saturated", &saturated_throughput)] {
        if let Some(e) = &r.first_error {
            eprintln!("[bench]   {what}: {} error(s), first: {e}", r.errors);
        }
    }
    Ok(FlowPhase {
        rate,
        ungated: ungated_run,
        gated: gated_run,
        workers,
        ungated_throughput,
        saturated_throughput,
    })
}

/// The report section.
pub fn markdown(f: &FlowPhase, out: &mut String) {
    use std::fmt::Write as _;

    use crate::stats::ms;
    let _ = writeln!(
        out,
        "## Flow control (issue 11)\n\nGates set vs unset: the same request through the same gateway, to a \
         connection without a gate and to one whose connection cap and model cap are set far above the load \
         (every request takes and returns two slots, none waits), interleaved at {} req/s. Queue at \
         saturation: {} closed-loop workers on a connection capped at {SATURATED_CAP} (nearly every request \
         waits in its FIFO queue) against the same load ungated.\n",
        f.rate, f.workers
    );
    let _ = writeln!(out, "| run | p50 (ms) | p99 (ms) | errors |\n|---|---:|---:|---:|");
    for (what, r) in [("gates unset", &f.ungated), ("gates set, never full", &f.gated)] {
        let _ = writeln!(out, "| {what} | {} | {} | {} |", ms(r.latency.p50), ms(r.latency.p99), r.errors);
    }
    let p50_us = (f.gated.latency.p50 as f64 - f.ungated.latency.p50 as f64) / 1e3;
    let p99_us = (f.gated.latency.p99 as f64 - f.ungated.latency.p99 as f64) / 1e3;
    let _ = writeln!(out, "\nGates' cost: {p50_us:+.1} µs at p50, {p99_us:+.1} µs at p99.\n");
    let _ = writeln!(
        out,
        "| closed loop, {} workers | req/s | p50 (ms) | p99 (ms) | errors |\n|---|---:|---:|---:|---:|",
        f.workers
    );
    for (what, r) in [
        ("ungated".to_owned(), &f.ungated_throughput),
        (format!("capped at {SATURATED_CAP} (queueing)"), &f.saturated_throughput),
    ] {
        let _ = writeln!(
            out,
            "| {what} | {:.0} | {} | {} | {} |",
            r.rps,
            ms(r.latency.p50),
            ms(r.latency.p99),
            r.errors
        );
    }
    let _ = writeln!(out);
}
