//! Closed-loop maximum throughput: N workers, each on its own keep-alive
//! connection, send the next request as soon as the previous answer is complete.
//!
//! This is the right tool for "how many requests per second can it serve" (and the
//! wrong one for latency, see `open_loop`): the offered load adapts to the server,
//! so the count of completions in the measured window is the saturation throughput.
//! On this machine the load generator, the fake upstream and the gateway share the
//! same cores, so the figure is a lower bound on what the gateway alone could do.
//!
//! A failed request counts as an error; its worker reconnects and carries on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::task::JoinSet;

use crate::client::{self, RequestSpec, Until};
use crate::machine::Runtime;
use crate::stats::{self, Summary};
use crate::turns;

/// One throughput run.
#[derive(Debug, Clone, Copy)]
pub struct ClosedLoop {
    /// Concurrent workers (= connections).
    pub workers: usize,
    /// Run, not counted.
    pub warmup: Duration,
    /// Counted.
    pub duration: Duration,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct ClosedLoopResult {
    /// Requests completed inside the measured window.
    pub completed: u64,
    /// Requests sent in total, warm-up included.
    pub sent: u64,
    /// Failed requests inside the measured window.
    pub errors: u64,
    /// Completed per second of the measured window.
    pub rps: f64,
    /// Per-request latency under saturation (closed loop: for orientation only).
    pub latency: Summary,
    /// The first error, for the log.
    pub first_error: Option<String>,
}

struct WorkerTally {
    completed: u64,
    sent: u64,
    errors: u64,
    latency: Histogram<u64>,
    first_error: Option<String>,
}

/// Saturates `spec` with `cfg.workers` closed-loop workers.
pub async fn run(spec: Arc<RequestSpec>, cfg: ClosedLoop) -> anyhow::Result<ClosedLoopResult> {
    let start = Instant::now();
    let measure_from = start + cfg.warmup;
    let end = measure_from + cfg.duration;
    let mut workers = JoinSet::new();
    for _ in 0..cfg.workers {
        workers.spawn(worker(spec.clone(), measure_from, end));
    }
    let mut latency = stats::histogram()?;
    let (mut completed, mut sent, mut errors, mut first_error) = (0, 0, 0, None);
    while let Some(joined) = workers.join_next().await {
        let tally = joined??;
        completed += tally.completed;
        sent += tally.sent;
        errors += tally.errors;
        latency.add(&tally.latency)?;
        first_error = first_error.or(tally.first_error);
    }
    Ok(ClosedLoopResult {
        completed,
        sent,
        errors,
        rps: completed as f64 / cfg.duration.as_secs_f64(),
        latency: Summary::of(&latency),
        first_error,
    })
}

async fn worker(spec: Arc<RequestSpec>, measure_from: Instant, end: Instant) -> anyhow::Result<WorkerTally> {
    let mut tally =
        WorkerTally { completed: 0, sent: 0, errors: 0, latency: stats::histogram()?, first_error: None };
    let mut conn = None;
    loop {
        let sent_at = Instant::now();
        if sent_at >= end {
            break;
        }
        let outcome = match conn.as_mut() {
            Some(c) => client::exchange(c, &spec, Until::FullBody).await,
            None => match client::connect(spec.addr).await {
                Ok(mut c) => {
                    let outcome = client::exchange(&mut c, &spec, Until::FullBody).await;
                    conn = Some(c);
                    outcome
                }
                Err(e) => Err(e),
            },
        };
        tally.sent += 1;
        let done = Instant::now();
        // Throughput counts completions inside the window, wherever they started.
        let counted = done >= measure_from && done <= end;
        match outcome {
            Ok(_) if counted => {
                tally.completed += 1;
                stats::record(&mut tally.latency, done - sent_at);
            }
            Ok(_) => {}
            Err(e) => {
                conn = None;
                if counted {
                    tally.errors += 1;
                    tally.first_error.get_or_insert_with(|| format!("{e:#}"));
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }
    Ok(tally)
}

/// Closed-loop totals over one target's slices (see [`alternate`]).
#[derive(Debug, Clone, Default)]
pub struct Saturated {
    /// Requests completed inside the measured windows.
    pub completed: u64,
    /// Requests sent in the measured slices.
    pub sent: u64,
    /// Requests sent in the untimed warm-up before the slices.
    pub warmup_sent: u64,
    /// Failed requests inside the measured windows.
    pub errors: u64,
    /// Measured seconds.
    pub seconds: f64,
    /// The target process's on-CPU time over the slices (None without /proc schedstat), ns.
    pub cpu_ns: Option<u64>,
    /// The first error, for the log.
    pub first_error: Option<String>,
}

impl Saturated {
    /// Completed per measured second.
    pub fn rps(&self) -> f64 {
        self.completed as f64 / self.seconds.max(1e-9)
    }

    /// The process's CPU per request sent in the measured slices, µs.
    pub fn cpu_us(&self) -> Option<f64> {
        self.cpu_ns.map(|ns| ns as f64 / 1e3 / self.sent.max(1) as f64)
    }
}

/// `rounds` rounds of one 1-second closed-loop slice per target (a request and the
/// pid of the process serving it), `workers` workers each, in the carry-over-balanced
/// order of `turns`, after one untimed `warmup` run of each; the serving process's
/// on-CPU time is read around each of its slices. One long run after the other would
/// put whatever drifts over a run on the later target. Totals in the order of `targets`.
pub async fn alternate(
    targets: &[(Arc<RequestSpec>, u32)],
    workers: usize,
    warmup: Duration,
    rounds: u32,
) -> anyhow::Result<Vec<Saturated>> {
    let slice = ClosedLoop { workers, warmup: Duration::ZERO, duration: Duration::from_secs(1) };
    let mut totals = Vec::with_capacity(targets.len());
    for (spec, _) in targets {
        // Not measured, but served (a gateway's request-log check counts them).
        let warmup_sent = run(spec.clone(), ClosedLoop { duration: warmup, ..slice }).await?.sent;
        totals.push(Saturated { warmup_sent, cpu_ns: Some(0), ..Saturated::default() });
    }
    for round in 0..rounds as usize {
        for k in turns::order(round, targets.len()) {
            let (spec, pid) = &targets[k];
            let before = Runtime::read(*pid);
            let result = run(spec.clone(), slice).await?;
            let cpu = before.zip(Runtime::read(*pid)).map(|(b, a)| a.since(&b));
            let total = &mut totals[k];
            total.completed += result.completed;
            total.sent += result.sent;
            total.errors += result.errors;
            total.seconds += slice.duration.as_secs_f64();
            total.cpu_ns = total.cpu_ns.zip(cpu).map(|(t, c)| t + c);
            if total.first_error.is_none() {
                total.first_error = result.first_error;
            }
        }
    }
    Ok(totals)
}

/// [`alternate`] for two targets named `names` (for the log of their first errors),
/// [`Settings::slices`](crate::run::Settings::slices) slices each.
pub async fn alternate_two(
    settings: &crate::run::Settings,
    targets: [(Arc<RequestSpec>, u32); 2],
    names: [&str; 2],
) -> anyhow::Result<[Saturated; 2]> {
    let totals = alternate(&targets, settings.concurrency, settings.warmup, settings.slices()).await?;
    let pair = <[Saturated; 2]>::try_from(totals)
        .map_err(|_| anyhow::anyhow!("closed loop returned too few totals"))?;
    for (name, r) in names.iter().zip(&pair) {
        if let Some(e) = &r.first_error {
            eprintln!("[bench]   {name}: {} error(s), first: {e}", r.errors);
        }
    }
    Ok(pair)
}
