//! The request log's write side: attempts are queued on a bounded channel and a
//! background task writes them in batches, so the request path never waits on
//! SQLite. A batch closes after [`FLUSH_INTERVAL`] or [`BATCH_MAX`] rows, whichever
//! comes first: one transaction per interval instead of one per request (the
//! benchmark measured the per-request transaction at ~40 % of the gateway's CPU).
//! Fail-open: when the queue is full a row is dropped and counted, never blocking a
//! request. Retention is bounded by row count.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::store::{AttemptLogRow, RequestLogRow, Store};

/// What the writer writes: an upstream attempt, or a client request's outcome.
#[derive(Debug)]
pub enum LogRow {
    /// One upstream attempt.
    Attempt(AttemptLogRow),
    /// One client request (boxed: its route trace is the larger row).
    Request(Box<RequestLogRow>),
}

/// Queue capacity between the request path and the writer.
const QUEUE_CAPACITY: usize = 16_384;
/// Rows written per transaction at most.
pub const BATCH_MAX: usize = 1_024;
/// How long a batch stays open after its first row.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Cheap handle for recording attempts.
#[derive(Debug, Clone)]
pub struct RequestLogSink {
    tx: mpsc::Sender<LogRow>,
    dropped: Arc<AtomicU64>,
}

impl RequestLogSink {
    /// Queues a row; drops it (and counts the drop) when the writer lags.
    pub fn record(&self, row: AttemptLogRow) {
        self.send(LogRow::Attempt(row));
    }

    /// Queues a client request's outcome, like [`RequestLogSink::record`].
    pub fn record_request(&self, row: RequestLogRow) {
        self.send(LogRow::Request(Box::new(row)));
    }

    fn send(&self, row: LogRow) {
        if self.tx.try_send(row).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Starts the writer task. It flushes what is queued when `shutdown` fires.
pub fn spawn_writer(
    store: Store,
    retention_rows: u32,
    shutdown: CancellationToken,
) -> (RequestLogSink, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<LogRow>(QUEUE_CAPACITY);
    let dropped = Arc::new(AtomicU64::new(0));
    let sink = RequestLogSink { tx, dropped: dropped.clone() };
    let handle = tokio::spawn(async move {
        let mut batch: Vec<LogRow> = Vec::with_capacity(BATCH_MAX);
        let mut since_prune: usize = 0;
        loop {
            let first = tokio::select! {
                row = rx.recv() => row,
                () = shutdown.cancelled() => None,
            };
            let Some(first) = first else { break };
            batch.push(first);
            let deadline = tokio::time::Instant::now() + FLUSH_INTERVAL;
            while batch.len() < BATCH_MAX {
                tokio::select! {
                    row = rx.recv() => match row {
                        Some(row) => batch.push(row),
                        None => break,
                    },
                    () = tokio::time::sleep_until(deadline) => break,
                    () = shutdown.cancelled() => break,
                }
            }
            since_prune += batch.len();
            let lost = dropped.swap(0, Ordering::Relaxed);
            if lost > 0 {
                tracing::warn!(event = "request_log.rows_dropped", rows = lost);
            }
            write_batch(&store, &mut batch).await;
            if since_prune >= 1_000 {
                since_prune = 0;
                prune(&store, retention_rows).await;
            }
        }
        // Shutdown: drain whatever is still queued.
        while let Ok(row) = rx.try_recv() {
            batch.push(row);
        }
        write_batch(&store, &mut batch).await;
        prune(&store, retention_rows).await;
    });
    (sink, handle)
}

async fn prune(store: &Store, retention_rows: u32) {
    if let Err(e) = store.prune_attempts(retention_rows).await {
        tracing::warn!(event = "request_log.prune_failed", error = %e);
    }
    if let Err(e) = store.prune_requests(retention_rows).await {
        tracing::warn!(event = "request_log.prune_failed", error = %e);
    }
}

async fn write_batch(store: &Store, batch: &mut Vec<LogRow>) {
    let mut attempts: Vec<AttemptLogRow> = Vec::new();
    let mut requests: Vec<RequestLogRow> = Vec::new();
    for row in batch.drain(..) {
        match row {
            LogRow::Attempt(a) => attempts.push(a),
            LogRow::Request(r) => requests.push(*r),
        }
    }
    if let Err(e) = store.insert_attempts(&attempts).await {
        tracing::warn!(event = "request_log.write_failed", rows = attempts.len(), error = %e);
    }
    if let Err(e) = store.insert_requests(&requests).await {
        tracing::warn!(event = "request_log.write_failed", rows = requests.len(), error = %e);
    }
}

/// One attempt being timed. Finishing it queues the row; dropping it unfinished
/// (the client went away mid-stream) queues it as `client_disconnected`.
#[derive(Debug)]
pub struct AttemptLog {
    sink: RequestLogSink,
    row: Option<AttemptLogRow>,
    started: Instant,
}

impl AttemptLog {
    /// Starts timing an attempt described by `row` (status and outcome filled later).
    pub fn start(sink: &RequestLogSink, row: AttemptLogRow) -> AttemptLog {
        AttemptLog { sink: sink.clone(), row: Some(row), started: Instant::now() }
    }

    /// Notes the tokens the upstream reported (kept for the row written at finish).
    pub fn set_tokens(&mut self, tokens: Option<switchyard_types::api::TokenUsageView>) {
        if let Some(row) = self.row.as_mut() {
            row.tokens = tokens;
        }
    }

    /// Records the final status, byte count and failure kind.
    pub fn finish(&mut self, status: Option<u16>, bytes: u64, error_kind: Option<String>) {
        if let Some(mut row) = self.row.take() {
            row.status = status.or(row.status);
            row.bytes = bytes;
            row.error_kind = error_kind;
            row.latency_ms = elapsed_ms(self.started);
            self.sink.record(row);
        }
    }

    /// The status noted so far.
    pub fn status(&self) -> Option<u16> {
        self.row.as_ref().and_then(|r| r.status)
    }

    /// Notes the upstream status before the body is done.
    pub fn set_status(&mut self, status: u16) {
        if let Some(row) = self.row.as_mut() {
            row.status = Some(status);
        }
    }
}

impl Drop for AttemptLog {
    fn drop(&mut self) {
        if let Some(mut row) = self.row.take() {
            row.error_kind = Some("client_disconnected".to_owned());
            row.latency_ms = elapsed_ms(self.started);
            self.sink.record(row);
        }
    }
}

fn elapsed_ms(started: Instant) -> u32 {
    u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX)
}

/// How long the writer may take to flush at shutdown.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);
