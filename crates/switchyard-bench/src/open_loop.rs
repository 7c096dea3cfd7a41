//! Open-loop, fixed-rate runs: the added-latency and streaming-TTFB phases.
//!
//! Requests are sent on a fixed timeline (request *i* at `start + i / rate`),
//! whatever happened to earlier requests, and each latency is measured from the
//! request's SCHEDULED send time, not from when it actually went out. A closed loop
//! (send, wait, send) or an open loop timed from the actual send both suffer from
//! coordinated omission: when the server stalls, the client stops sending, so the
//! requests that would have queued behind the stall are never measured and the tail
//! looks far better than what users see. Timing from the schedule charges every
//! stall to all the requests it delayed.
//!
//! The schedule is kept by a dedicated OS thread sleeping with 1 µs timer slack
//! (tokio's timer wheel has 1 ms granularity, far too coarse at 2,000 requests/s),
//! which hands each request to the runtime as its own task. Its lateness (`lag`:
//! actual start minus schedule) is reported so the generator's own noise is visible;
//! the same generator drives the direct and the gateway run, so it cancels out of
//! the added latency as far as percentiles of separate samples allow.
//!
//! The targets of one measurement (direct, gateway, relay, and a baseline gateway
//! in an A/B run) each get a warm-up window, sent but not measured, and then take
//! turns in one-second slices, in an order balanced for carry-over (see `turns`),
//! so slow drifts and bursts of host noise are shared between them rather than
//! landing on one. Besides the pooled histograms, each slice is summarised on its
//! own: the slices of one round ran within seconds of each other, which is what
//! the paired A/B comparison (`ab`) builds on. A request that fails or exceeds the
//! timeout counts as an error and is left out of the histograms.

use std::num::NonZeroU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::task::TaskTracker;

use crate::client::{Pool, RequestSpec, Until};
use crate::stats::{self, Summary};
use crate::turns;

/// One fixed-rate measurement.
#[derive(Debug, Clone, Copy)]
pub struct OpenLoop {
    /// Requests per second.
    pub rate: u32,
    /// Sent to each target before its first slice, not measured.
    pub warmup: Duration,
    /// Measured time per target, split into [`SLICE`]-long slices.
    pub duration: Duration,
    /// Keep-alive connections in each target's client pool.
    pub connections: usize,
    /// Where the latency stops.
    pub until: Until,
    /// Per-request timeout.
    pub timeout: Duration,
}

/// Length of one measured slice. The targets take turns slice by slice (in a
/// carry-over-balanced order), so a burst of noise from the host (steal time, another
/// process) lands on all of them alike instead of skewing one run.
pub const SLICE: Duration = Duration::from_secs(1);

/// What a run measured for one target.
#[derive(Debug, Clone)]
pub struct OpenLoopResult {
    /// Latency from the scheduled send time.
    pub latency: Summary,
    /// Latency from the actual send time (what a naive generator would report).
    pub service: Summary,
    /// Generator lateness: actual start minus scheduled time.
    pub lag: Summary,
    /// Latency from the scheduled send time of each measured slice alone, in time
    /// order: entry *i* is this target's slice of round *i*.
    pub slices: Vec<Summary>,
    /// Requests sent, warm-up included.
    pub sent: u64,
    /// Measured requests that failed or timed out.
    pub errors: u64,
    /// The first error, for the log.
    pub first_error: Option<String>,
}

struct Recorded {
    latency: Histogram<u64>,
    service: Histogram<u64>,
    lag: Histogram<u64>,
    /// The current slice's latencies; summarised into `slices` and cleared when
    /// the slice ends.
    slice: Histogram<u64>,
    slices: Vec<Summary>,
    sent: u64,
    errors: u64,
    first_error: Option<String>,
}

/// One target: its request, its connection pool and what it recorded so far.
struct Target {
    spec: Arc<RequestSpec>,
    pool: Arc<Pool>,
    recorded: Arc<Mutex<Recorded>>,
}

/// Drives each of `specs` at `cfg.rate` requests/s, interleaved slice by slice,
/// and measures them; results are in the order of `specs`.
pub async fn run(specs: &[Arc<RequestSpec>], cfg: OpenLoop) -> anyhow::Result<Vec<OpenLoopResult>> {
    let mut targets = Vec::with_capacity(specs.len());
    for spec in specs {
        targets.push(Target {
            spec: spec.clone(),
            pool: Pool::new(spec.addr, cfg.connections),
            recorded: Arc::new(Mutex::new(Recorded {
                latency: stats::histogram()?,
                service: stats::histogram()?,
                lag: stats::histogram()?,
                slice: stats::histogram()?,
                slices: Vec::new(),
                sent: 0,
                errors: 0,
                first_error: None,
            })),
        });
    }
    for target in &targets {
        window(target, cfg, cfg.warmup, false).await?;
    }
    let slices = (cfg.duration.as_secs_f64() / SLICE.as_secs_f64()).ceil().max(1.0) as u32;
    let slice = cfg.duration / slices;
    for round in 0..slices as usize {
        for k in turns::order(round, targets.len()) {
            window(&targets[k], cfg, slice, true).await?;
        }
    }
    Ok(targets
        .iter()
        .map(|t| {
            let r = t.recorded.lock().unwrap_or_else(PoisonError::into_inner);
            OpenLoopResult {
                latency: Summary::of(&r.latency),
                service: Summary::of(&r.service),
                lag: Summary::of(&r.lag),
                slices: r.slices.clone(),
                sent: r.sent,
                errors: r.errors,
                first_error: r.first_error.clone(),
            }
        })
        .collect())
}

/// Sends `target`'s request at `cfg.rate` for `length`, recording when `measured`,
/// and returns once every request of the window has finished or timed out.
async fn window(target: &Target, cfg: OpenLoop, length: Duration, measured: bool) -> anyhow::Result<()> {
    let total = (length.as_secs_f64() * f64::from(cfg.rate)).round() as u64;
    let period_ns = 1e9 / f64::from(cfg.rate.max(1));
    let tracker = TaskTracker::new();
    let handle = Handle::current();
    let start = Instant::now() + Duration::from_millis(2);
    let (done_tx, done_rx) = oneshot::channel::<()>();
    let scheduler = {
        let tracker = tracker.clone();
        let (pool, spec, recorded) = (target.pool.clone(), target.spec.clone(), target.recorded.clone());
        std::thread::Builder::new().name("bench-scheduler".into()).spawn(move || {
            let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1_000));
            for i in 0..total {
                let at = start + Duration::from_nanos((i as f64 * period_ns) as u64);
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                let task = one(pool.clone(), spec.clone(), recorded.clone(), at, measured, cfg);
                tracker.spawn_on(task, &handle);
            }
            let _ = done_tx.send(());
        })?
    };
    // The scheduler signals before it exits, so joining it below does not block.
    let _ = done_rx.await;
    let _ = scheduler.join();
    tracker.close();
    // Every request carries its own timeout, so this only guards against a wedged runtime.
    if tokio::time::timeout(cfg.timeout + Duration::from_secs(1), tracker.wait()).await.is_err() {
        eprintln!("[bench] {} request(s) still running after their timeout", tracker.len());
    }
    let mut r = target.recorded.lock().unwrap_or_else(PoisonError::into_inner);
    r.sent += total;
    if measured {
        let slice = Summary::of(&r.slice);
        r.slices.push(slice);
        r.slice.reset();
    }
    Ok(())
}

async fn one(
    pool: Arc<Pool>,
    spec: Arc<RequestSpec>,
    recorded: Arc<Mutex<Recorded>>,
    scheduled: Instant,
    measured: bool,
    cfg: OpenLoop,
) {
    let started = Instant::now();
    let outcome = tokio::time::timeout(cfg.timeout, pool.exchange(&spec, cfg.until)).await;
    if !measured {
        return;
    }
    let mut r = recorded.lock().unwrap_or_else(PoisonError::into_inner);
    match outcome {
        Ok(Ok(done)) => {
            let latency = done.saturating_duration_since(scheduled);
            stats::record(&mut r.latency, latency);
            stats::record(&mut r.slice, latency);
            stats::record(&mut r.service, done.saturating_duration_since(started));
            stats::record(&mut r.lag, started.saturating_duration_since(scheduled));
        }
        Ok(Err(e)) => {
            r.errors += 1;
            r.first_error.get_or_insert_with(|| format!("{e:#}"));
        }
        Err(_) => {
            r.errors += 1;
            r.first_error.get_or_insert_with(|| format!("timeout after {:?}", cfg.timeout));
        }
    }
}
