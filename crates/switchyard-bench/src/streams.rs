//! Many concurrent open streams: N streaming `/v1/messages` requests through the
//! gateway, all at once, each on its own client connection, against the slow fake
//! upstream (one SSE frame every 100 ms for ~3 s), read to completion.
//!
//! This is what a machine full of agents looks like to the gateway: thousands of
//! sockets (client side and upstream side) that are mostly idle, each holding
//! per-stream state for seconds. It shows whether any stream fails (file limits,
//! accept backlog, pool caps, timeouts) and whether memory per stream is bounded and
//! handed back afterwards. A stream counts as completed when it ends with the
//! Anthropic `message_stop` event; anything else is an error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use http_body_util::BodyExt;
use tokio::task::JoinSet;

use crate::client::{self, RequestSpec};

/// What the phase measured (memory is sampled by the caller).
#[derive(Debug, Clone)]
pub struct StreamsResult {
    /// Streams started.
    pub requested: usize,
    /// Streams read to `message_stop`.
    pub completed: usize,
    /// Streams that failed.
    pub errors: usize,
    /// Most streams open (first byte seen, end not yet) at the same moment.
    pub max_open: usize,
    /// Wall time from the first request to the last stream's end.
    pub elapsed: Duration,
    /// The first error, for the log.
    pub first_error: Option<String>,
}

struct Gauge {
    open: AtomicUsize,
    max_open: AtomicUsize,
}

/// Opens `n` streams of `spec` at once and reads them all to the end.
pub async fn run(spec: Arc<RequestSpec>, n: usize, timeout: Duration) -> anyhow::Result<StreamsResult> {
    let gauge = Arc::new(Gauge { open: AtomicUsize::new(0), max_open: AtomicUsize::new(0) });
    let started = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..n {
        let (spec, gauge) = (spec.clone(), gauge.clone());
        set.spawn(async move {
            match tokio::time::timeout(timeout, one(&spec, &gauge)).await {
                Ok(result) => result,
                Err(_) => bail!("stream not finished within {timeout:?}"),
            }
        });
    }
    let (mut completed, mut errors, mut first_error) = (0, 0, None);
    while let Some(joined) = set.join_next().await {
        match joined? {
            Ok(()) => completed += 1,
            Err(e) => {
                errors += 1;
                first_error.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
    Ok(StreamsResult {
        requested: n,
        completed,
        errors,
        max_open: gauge.max_open.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        first_error,
    })
}

async fn one(spec: &RequestSpec, gauge: &Gauge) -> anyhow::Result<()> {
    let mut conn = client::connect(spec.addr).await?;
    conn.ready().await?;
    let response = conn.send_request(spec.request()?).await?;
    if !response.status().is_success() {
        bail!("HTTP {}", response.status());
    }
    let mut body = response.into_body();
    let mut tail: Vec<u8> = Vec::new();
    let mut open = false;
    let mut outcome: anyhow::Result<()> = Ok(());
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    if !open {
                        open = true;
                        let now = gauge.open.fetch_add(1, Ordering::Relaxed) + 1;
                        gauge.max_open.fetch_max(now, Ordering::Relaxed);
                    }
                    // Keep only the end of the stream: enough to see the last event.
                    tail.extend_from_slice(&data);
                    let excess = tail.len().saturating_sub(512);
                    tail.drain(..excess);
                }
            }
            Err(e) => {
                outcome = Err(e.into());
                break;
            }
        }
    }
    if open {
        gauge.open.fetch_sub(1, Ordering::Relaxed);
    }
    outcome?;
    if memchr::memmem::find(&tail, b"event: message_stop").is_none() {
        bail!("stream ended without message_stop");
    }
    Ok(())
}
