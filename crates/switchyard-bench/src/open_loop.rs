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
//! Requests in the warm-up window are sent but not measured. A request that fails or
//! exceeds the timeout counts as an error and is left out of the histograms.

use std::num::NonZeroU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::task::TaskTracker;

use crate::client::{Pool, RequestSpec, Until};
use crate::stats::{self, Summary};

/// One fixed-rate run.
#[derive(Debug, Clone, Copy)]
pub struct OpenLoop {
    /// Requests per second.
    pub rate: u32,
    /// Sent, not measured.
    pub warmup: Duration,
    /// Measured.
    pub duration: Duration,
    /// Keep-alive connections in the client pool.
    pub connections: usize,
    /// Where the latency stops.
    pub until: Until,
    /// Per-request timeout.
    pub timeout: Duration,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct OpenLoopResult {
    /// Latency from the scheduled send time.
    pub latency: Summary,
    /// Latency from the actual send time (what a naive generator would report).
    pub service: Summary,
    /// Generator lateness: actual start minus scheduled time.
    pub lag: Summary,
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
    errors: u64,
    first_error: Option<String>,
}

/// Drives `spec` at `cfg.rate` requests/s and measures it.
pub async fn run(spec: Arc<RequestSpec>, cfg: OpenLoop) -> anyhow::Result<OpenLoopResult> {
    let pool = Pool::new(spec.addr, cfg.connections);
    let recorded = Arc::new(Mutex::new(Recorded {
        latency: stats::histogram()?,
        service: stats::histogram()?,
        lag: stats::histogram()?,
        errors: 0,
        first_error: None,
    }));
    let tracker = TaskTracker::new();
    let handle = Handle::current();
    let total = ((cfg.warmup + cfg.duration).as_secs_f64() * f64::from(cfg.rate)).round() as u64;
    let period_ns = 1e9 / f64::from(cfg.rate.max(1));
    let start = Instant::now() + Duration::from_millis(5);
    let measure_from = start + cfg.warmup;

    let (done_tx, done_rx) = oneshot::channel::<()>();
    let scheduler = {
        let tracker = tracker.clone();
        let recorded = recorded.clone();
        std::thread::Builder::new().name("bench-scheduler".into()).spawn(move || {
            let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1_000));
            for i in 0..total {
                let at = start + Duration::from_nanos((i as f64 * period_ns) as u64);
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                let task = one(pool.clone(), spec.clone(), recorded.clone(), at, at >= measure_from, cfg);
                tracker.spawn_on(task, &handle);
            }
            let _ = done_tx.send(());
        })?
    };
    // The scheduler signals before it exits, so joining it below does not block.
    let _ = done_rx.await;
    let _ = scheduler.join();
    tracker.close();
    if tokio::time::timeout(cfg.timeout + Duration::from_secs(1), tracker.wait()).await.is_err() {
        eprintln!("[bench] some requests outlived the timeout; counted as errors");
    }

    let r = recorded.lock().unwrap_or_else(PoisonError::into_inner);
    let measured = r.latency.len() + r.errors;
    let expected = (cfg.duration.as_secs_f64() * f64::from(cfg.rate)).round() as u64;
    // Requests still stuck when we gave up never reported: they are errors too.
    let missing = expected.saturating_sub(measured);
    Ok(OpenLoopResult {
        latency: Summary::of(&r.latency),
        service: Summary::of(&r.service),
        lag: Summary::of(&r.lag),
        sent: total,
        errors: r.errors + missing,
        first_error: r.first_error.clone(),
    })
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
            stats::record(&mut r.latency, done.saturating_duration_since(scheduled));
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
