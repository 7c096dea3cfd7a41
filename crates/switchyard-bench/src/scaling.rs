//! The scaling phase (issue 16): one model served by [`POOL_SIZE`] connections of
//! one provider against a model served by one, through the same gateway.
//!
//! - **Latency**: both models interleaved slice by slice in one open-loop run at
//!   the phase's rate, so host noise falls on both alike.
//! - **CPU and throughput**: closed-loop slices of one second, the two models taking
//!   turns in the carry-over-balanced order of `turns`, with the gateway's on-CPU time read around each slice. One long
//!   run after the other put whatever drifts over a run (the log's growth and its
//!   retention passes, the host) on the second; a difference of ×1.1–×1.3 between
//!   identical runs was noise of that kind.
//!
//! Routing work that grows with the number of connections (planning, filtering,
//! ordering, the route written to the log) shows up as a difference here.

use crate::client::Until;
use crate::closed_loop::{self, Saturated};
use crate::gateway::{self, GatewayProcess, POOL_SIZE};
use crate::open_loop::{self, OpenLoopResult};
use crate::run::{self, Settings};

/// What the phase measured.
#[derive(Debug, Clone)]
pub struct ScalingPhase {
    /// Open-loop rate of the latency comparison.
    pub rate: u32,
    /// Closed-loop workers.
    pub workers: usize,
    /// One connection, open loop.
    pub one: OpenLoopResult,
    /// [`POOL_SIZE`] connections, open loop.
    pub pool: OpenLoopResult,
    /// One connection, closed-loop slices.
    pub one_throughput: Saturated,
    /// [`POOL_SIZE`] connections, closed-loop slices.
    pub pool_throughput: Saturated,
    /// Gateway CPU per completed request, closed loop: (one, pool), µs.
    pub cpu_us: Option<(f64, f64)>,
}

/// Runs the phase against a started gateway (started with the pool connections).
pub async fn run(settings: &Settings, gw: &GatewayProcess) -> anyhow::Result<ScalingPhase> {
    let spec = |model: &str| run::spec_for(gw.addr(), "/v1/chat/completions", &run::chat_body_for(model));
    let (one, pool) = (spec(gateway::CHAT_MODEL)?, spec(gateway::POOL_MODEL)?);
    let rate = 1_000.min(settings.rates.iter().copied().max().unwrap_or(1_000));
    let cfg = settings.open_loop(rate, Until::FullBody);
    eprintln!("[bench] scaling: 1 vs {POOL_SIZE} connections @ {rate} req/s, interleaved");
    let mut results = open_loop::run(&[one.clone(), pool.clone()], cfg).await?.into_iter();
    let (Some(one_run), Some(pool_run)) = (results.next(), results.next()) else {
        anyhow::bail!("open loop returned too few results");
    };
    let slices = settings.slices();
    eprintln!(
        "[bench] scaling: closed loop, {slices} alternating 1 s slices of 1 and {POOL_SIZE} connections"
    );
    let targets = [(one.clone(), gw.pid()), (pool.clone(), gw.pid())];
    let [one_throughput, pool_throughput] =
        closed_loop::alternate_two(settings, targets, ["scaling one", "scaling pool"]).await?;
    let cpu_us = one_throughput.cpu_us().zip(pool_throughput.cpu_us());
    Ok(ScalingPhase {
        rate,
        workers: settings.concurrency,
        one: one_run,
        pool: pool_run,
        one_throughput,
        pool_throughput,
        cpu_us,
    })
}

/// The report section.
pub fn markdown(s: &ScalingPhase, out: &mut String) {
    use std::fmt::Write as _;

    use crate::stats::ms;
    let _ = writeln!(
        out,
        "## Many connections (issue 16)\n\nThe same request through the same gateway to a model served by one \
         connection and to one served by {POOL_SIZE} connections of one provider (all to the fast upstream; \
         priority routing, so the first serves). Latency interleaved at {} req/s; CPU per request and throughput \
         from closed-loop slices of 1 s ({} workers), alternating between the two.\n",
        s.rate, s.workers
    );
    let _ = writeln!(
        out,
        "| connections | p50 (ms) | p99 (ms) | closed-loop req/s | CPU µs/request | errors |\n|---|---:|---:|---:|---:|---:|"
    );
    let cpu = |i: usize| {
        s.cpu_us.map_or_else(|| "—".to_owned(), |c| format!("{:.1}", if i == 0 { c.0 } else { c.1 }))
    };
    for (i, (what, open, closed)) in
        [("1", &s.one, &s.one_throughput), (&*POOL_SIZE.to_string(), &s.pool, &s.pool_throughput)]
            .into_iter()
            .enumerate()
    {
        let _ = writeln!(
            out,
            "| {what} | {} | {} | {:.0} | {} | {} |",
            ms(open.latency.p50),
            ms(open.latency.p99),
            closed.rps(),
            cpu(i),
            open.errors + closed.errors
        );
    }
    let p50 = (s.pool.latency.p50 as f64 - s.one.latency.p50 as f64) / 1e3;
    let _ = write!(out, "\n{POOL_SIZE} connections against one: p50 {p50:+.1} µs");
    if let Some((one, pool)) = s.cpu_us {
        let _ = write!(out, ", CPU per request ×{:.3}", pool / one.max(1e-9));
    }
    let _ =
        writeln!(out, ", throughput ×{:.3}.\n", s.pool_throughput.rps() / s.one_throughput.rps().max(1e-9));
}
