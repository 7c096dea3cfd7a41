//! The request log's write side. The request path appends its rows to a shared
//! buffer (a short mutex, no channel, no wake-up); a background task takes the
//! whole buffer and writes it as one transaction ([`Store::write_log`]) when a batch
//! is due: an interval of the gateway's clock after its first row
//! ([`batch_interval`]), or at [`BATCH_MAX`] rows. So the writer wakes twice per
//! batch (for the first row, and when the batch is due) instead of once per request
//! (issue 16; the per-row channel hand-off and a transaction every 100 ms were a
//! third of the gateway's CPU at low rates). A transaction's cost is mostly per
//! batch (the pages it appends to the write-ahead log, the wake-ups of a writer that
//! runs cold), so at an agent's pace the interval sets it: ~1 ms of CPU per batch
//! however few its rows (docs/benchmarks.md, nineteenth session). With the embedded
//! file, which only this process reads, batches stay open [`LOCAL_FLUSH_INTERVAL`]:
//! every reader flushes first, so the interval only bounds what a crash loses. In
//! team mode other replicas read the shared database without this one's flush, so
//! batches stay open [`TEAM_FLUSH_INTERVAL`] there: how late they see its rows. A
//! stop writes what is pending.
//!
//! Readers see their writes: the management API asks for a flush ([`RequestLogSink::flush`])
//! before it reads the log, so the interval only delays what nobody is looking at.
//! Fail-open: when the buffer is full a row is dropped and counted, never blocking
//! a request. Retention is bounded by row count and runs in small transactions.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::clock::GatewayClock;
use crate::store::{AttemptLogRow, Backend, LogBatch, LogStore, MINUTE_MS, RequestLogRow, Store};
use switchyard_types::UnixMillis;

/// Rows the buffer holds at most; past that rows are dropped (and counted). Two
/// rows a request: three seconds of saturation on this hardware.
const QUEUE_CAPACITY: usize = 32_768;
/// Rows at which a batch is written at once, before its interval ends (a batch
/// that grew while the writer was busy is written whole, in one transaction).
pub const BATCH_MAX: usize = 1_024;
/// How long a batch stays open after its first row with the embedded SQLite file:
/// this process is its only reader and every read flushes first, so this bounds
/// only what a crash loses. Thirty seconds instead of five: a batch costs ~1 ms of
/// CPU at an agent's pace however few its rows, which at one request a second was
/// ~190 µs of each request's ~450 (docs/benchmarks.md, nineteenth session).
pub const LOCAL_FLUSH_INTERVAL: Duration = Duration::from_secs(30);
/// How long a batch stays open in team mode: other replicas read the shared
/// database without this one's flush, so this is how late their Requests and
/// Overview pages see its rows.
pub const TEAM_FLUSH_INTERVAL: Duration = Duration::from_secs(5);

/// How long a batch stays open with `backend`.
pub fn batch_interval(backend: Backend) -> Duration {
    match backend {
        Backend::Sqlite => LOCAL_FLUSH_INTERVAL,
        Backend::Postgres => TEAM_FLUSH_INTERVAL,
    }
}
/// Retention runs after a tenth of the retained rows (between 1,000 and 10,000)
/// were written since it last ran: under load, not after every batch. Each request
/// writes two rows (its attempt and its client request).
pub fn prune_every(retention_rows: u32) -> usize {
    usize::try_from(retention_rows / 10).unwrap_or(usize::MAX).clamp(1_000, 10_000)
}
/// A retention pass that deleted this many rows gives the space back to the file
/// system; smaller passes leave their pages free for the next rows.
const RECLAIM_AFTER_ROWS: u64 = 10_000;
/// Per-minute counts are kept for the summary's day, and a day more.
const STATS_KEPT_MS: i64 = 48 * 60 * MINUTE_MS;
/// How long a reader waits for the writer to flush before reading anyway.
const FLUSH_WAIT: Duration = Duration::from_secs(2);

/// What the request path left for the writer.
#[derive(Debug, Default)]
struct Pending {
    batch: LogBatch,
    /// Readers waiting for everything queued so far to be written.
    flush_waiters: Vec<oneshot::Sender<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    pending: Mutex<Pending>,
    /// Wakes the writer: a batch opened or filled, a reader wants a flush.
    wake: Notify,
    dropped: AtomicU64,
    /// Whether a writer task serves this buffer (a flush without one returns).
    writing: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding this lock cannot leave the batch inconsistent (a
        // push either happened or not), so a poisoned lock is still usable.
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Cheap handle for recording attempts.
#[derive(Debug, Clone)]
pub struct RequestLogSink {
    shared: Arc<Shared>,
}

impl Default for RequestLogSink {
    fn default() -> RequestLogSink {
        RequestLogSink::new()
    }
}

impl RequestLogSink {
    /// An empty buffer; [`spawn_writer`] starts the task that writes it.
    pub fn new() -> RequestLogSink {
        RequestLogSink { shared: Arc::new(Shared::default()) }
    }

    /// Queues a row; drops it (and counts the drop) when the writer lags.
    pub fn record(&self, row: AttemptLogRow) {
        self.push(|batch| batch.push_attempt(row));
    }

    /// Queues a client request's outcome, like [`RequestLogSink::record`].
    pub fn record_request(&self, row: RequestLogRow) {
        self.push(|batch| batch.push_request(row));
    }

    fn push(&self, add: impl FnOnce(&mut LogBatch)) {
        let rows = {
            let mut pending = self.shared.lock();
            if pending.batch.len() >= QUEUE_CAPACITY {
                None
            } else {
                add(&mut pending.batch);
                Some(pending.batch.len())
            }
        };
        match rows {
            None => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
            // The first row opens a batch (the writer starts its timer); a full one
            // is written at once. Every other row wakes nobody.
            Some(1 | BATCH_MAX) => self.shared.wake.notify_one(),
            Some(_) => {}
        }
    }

    /// Waits until every row queued before this call is written (or the writer
    /// took [`FLUSH_WAIT`] without finishing, or is gone), so a read that follows
    /// sees them.
    pub async fn flush(&self) {
        // Rows of answers already written may still be on their way here.
        crate::conn::after_write::settled().await;
        if !self.shared.writing.load(Ordering::Acquire) {
            return;
        }
        let (tx, rx) = oneshot::channel();
        self.shared.lock().flush_waiters.push(tx);
        self.shared.wake.notify_one();
        // An error means the writer stopped; a timeout that it is stuck on a lock.
        let _ = tokio::time::timeout(FLUSH_WAIT, rx).await;
    }

    /// Rows dropped so far because the writer lagged (reset when logged).
    #[cfg(test)]
    fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

/// Starts the task that writes what `sink` collects. It writes what is queued when
/// `shutdown` fires, then stops.
pub fn spawn_writer(
    sink: &RequestLogSink,
    store: Store,
    retention_rows: u32,
    batch_interval: Duration,
    clock: Arc<dyn GatewayClock>,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let shared = sink.shared.clone();
    shared.writing.store(true, Ordering::Release);
    tokio::spawn(async move {
        let mut writer = Writer { source: store, store: None, retention_rows, since_prune: 0 };
        // Its own connection (see Store::for_log_writer), opened now so the first
        // batch does not wait for it.
        writer.connection().await;
        loop {
            // Idle until a batch opens or a reader asks.
            tokio::select! {
                () = shared.wake.notified() => {}
                () = shutdown.cancelled() => break,
            }
            // The batch's interval runs on the gateway's clock, like every other wait.
            let due = clock.now_mono() + batch_interval;
            loop {
                {
                    let pending = shared.lock();
                    if pending.batch.len() >= BATCH_MAX || !pending.flush_waiters.is_empty() {
                        break;
                    }
                    if pending.batch.is_empty() {
                        // A wake-up left over from the batch just written: idle again.
                        break;
                    }
                }
                tokio::select! {
                    () = clock.sleep_until(due) => break,
                    () = shared.wake.notified() => {}
                    () = shutdown.cancelled() => break,
                }
            }
            let (batch, waiters) = take(&shared);
            let latest = writer.write(batch).await;
            // Readers wait for the rows, not for retention.
            for waiter in waiters {
                let _ = waiter.send(());
            }
            writer.maybe_prune(latest).await;
            if shutdown.is_cancelled() {
                break;
            }
        }
        // Shutdown: write whatever is still queued.
        shared.writing.store(false, Ordering::Release);
        let (batch, waiters) = take(&shared);
        writer.write(batch).await;
        drop(waiters);
        writer.prune(UnixMillis(0)).await;
        if let Some(store) = writer.store {
            store.close().await;
        }
    })
}

/// Empties the buffer (the request path starts a new batch at once).
fn take(shared: &Shared) -> (LogBatch, Vec<oneshot::Sender<()>>) {
    let mut pending = shared.lock();
    let batch = std::mem::take(&mut pending.batch);
    let waiters = std::mem::take(&mut pending.flush_waiters);
    drop(pending);
    let lost = shared.dropped.swap(0, Ordering::Relaxed);
    if lost > 0 {
        tracing::warn!(event = "request_log.rows_dropped", rows = lost);
    }
    (batch, waiters)
}

/// The writer task's own state.
struct Writer {
    /// The database, to open the writer's connection from.
    source: Store,
    /// The writer's connection, once open.
    store: Option<LogStore>,
    retention_rows: u32,
    since_prune: usize,
}

impl Writer {
    /// The writer's connection, opened if it is not yet (when that fails, the
    /// next batch tries again; this one is lost, and said so).
    async fn connection(&mut self) -> Option<&LogStore> {
        if self.store.is_none() {
            match self.source.for_log_writer().await {
                Ok(store) => self.store = Some(store),
                Err(e) => tracing::warn!(event = "request_log.connection_failed", error = %e),
            }
        }
        self.store.as_ref()
    }

    /// Writes a batch; returns the newest row's time (for retention).
    async fn write(&mut self, batch: LogBatch) -> Option<UnixMillis> {
        if batch.is_empty() {
            return None;
        }
        let latest = batch.attempts.iter().map(|r| r.at).chain(batch.requests.iter().map(|r| r.at)).max();
        let rows = batch.len();
        let failure = match self.connection().await {
            Some(store) => store.write_log(batch).await.err().map(|e| e.to_string()),
            None => Some("no connection to the database".to_owned()),
        };
        if let Some(error) = failure {
            tracing::warn!(event = "request_log.write_failed", rows, error = %error);
        }
        self.since_prune += rows;
        latest
    }

    /// Runs retention once enough rows were written since it last ran.
    async fn maybe_prune(&mut self, latest: Option<UnixMillis>) {
        if let Some(latest) = latest
            && self.since_prune >= prune_every(self.retention_rows)
        {
            self.since_prune = 0;
            self.prune(latest).await;
        }
    }

    /// Retention: the log by row count, the per-minute counts by age (relative to
    /// the newest row written, so no clock is needed), then the space back to the
    /// file system when much was deleted.
    async fn prune(&mut self, latest: UnixMillis) {
        let retention_rows = self.retention_rows;
        let Some(store) = self.connection().await else { return };
        match store.prune_log(retention_rows).await {
            Ok(deleted) if deleted >= RECLAIM_AFTER_ROWS => match store.reclaim().await {
                Ok(true) => tracing::info!(event = "request_log.space_reclaimed", rows_deleted = deleted),
                Ok(false) => {}
                Err(e) => tracing::warn!(event = "request_log.reclaim_failed", error = %e),
            },
            Ok(_) => {}
            Err(e) => tracing::warn!(event = "request_log.prune_failed", error = %e),
        }
        if latest.0 > STATS_KEPT_MS
            && let Err(e) = store.prune_stats(UnixMillis(latest.0 - STATS_KEPT_MS)).await
        {
            tracing::warn!(event = "request_log.prune_failed", error = %e);
        }
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

    /// Moves the unwritten row into a new log (to finish later, elsewhere); this
    /// one is left finished.
    pub fn take(&mut self) -> AttemptLog {
        AttemptLog { sink: self.sink.clone(), row: self.row.take(), started: self.started }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ManualClock, SystemClock};
    use crate::store::DATABASE_FILE;

    /// Polls `done` until it holds (the writer runs on this runtime; its database
    /// work on SQLite's own threads), failing after five seconds.
    async fn until(mut done: impl AsyncFnMut() -> bool) {
        for _ in 0..500 {
            if done().await {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the writer did not get there in five seconds");
    }

    fn row(i: usize) -> AttemptLogRow {
        AttemptLogRow {
            at: UnixMillis(1_700_000_000_000 + i as i64),
            request_id: format!("req-{i:08}").into(),
            api_key_id: None,
            route: "/v1/messages",
            provider: "anthropic".into(),
            connection_id: "conn".into(),
            // Wide rows, so a few thousand make megabytes.
            model: format!("model-{}", "x".repeat(300)).into(),
            status: Some(200),
            latency_ms: 5,
            bytes: 100,
            error_kind: None,
            tokens: None,
        }
    }

    fn size(path: &std::path::Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    /// A sink and its writer over `store`.
    struct Running {
        sink: RequestLogSink,
        stop: CancellationToken,
        writer: JoinHandle<()>,
    }

    impl Running {
        fn start(store: &Store, retention_rows: u32, clock: Arc<dyn GatewayClock>) -> Running {
            let sink = RequestLogSink::new();
            let stop = CancellationToken::new();
            let writer =
                spawn_writer(&sink, store.clone(), retention_rows, LOCAL_FLUSH_INTERVAL, clock, stop.clone());
            Running { sink, stop, writer }
        }

        /// Stops the writer (it writes what is queued first) and hands the sink back.
        async fn stop(self) -> RequestLogSink {
            self.stop.cancel();
            self.writer.await.unwrap_or_else(|e| panic!("{e}"));
            self.sink
        }
    }

    async fn logged(store: &Store) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM request_log").fetch_one(store.pool()).await.unwrap_or(-1)
    }

    #[tokio::test]
    async fn rows_wait_for_their_batch_and_a_reader_flushes_them() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let log = Running::start(&store, 1_000, Arc::new(SystemClock));
        for i in 0..3 {
            log.sink.record(row(i));
        }
        assert_eq!(logged(&store).await, 0, "the batch stays open for its interval");
        log.sink.flush().await;
        assert_eq!(logged(&store).await, 3, "a flush writes what was queued before it");
        let sink = log.stop().await;
        // Without a writer, rows are kept (then dropped past the buffer) and a
        // flush returns at once.
        sink.flush().await;
        for i in 0..QUEUE_CAPACITY + 5 {
            sink.record(row(i));
        }
        assert_eq!(sink.dropped(), 5, "rows past the buffer are dropped and counted");
    }

    #[tokio::test]
    async fn a_batch_is_written_one_interval_of_the_gateway_clock_after_its_first_row() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let clock = Arc::new(ManualClock::new(UnixMillis(1_700_000_000_000)));
        let log = Running::start(&store, 1_000, clock.clone());
        for i in 0..3 {
            log.sink.record(row(i));
        }
        // The first row opened a batch: the writer waits out its interval.
        until(async || clock.pending_timers() == 1).await;
        clock.advance(LOCAL_FLUSH_INTERVAL - Duration::from_millis(1));
        tokio::task::yield_now().await;
        assert_eq!(clock.pending_timers(), 1, "the batch is not due yet");
        assert_eq!(logged(&store).await, 0);
        clock.advance_ms(1);
        until(async || logged(&store).await == 3).await;
        log.stop().await;
    }

    #[tokio::test]
    async fn retention_gives_the_space_back_after_a_large_cleanup() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join(DATABASE_FILE);
        let wal = dir.path().join(format!("{DATABASE_FILE}-wal"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        // A large log kept by a generous retention.
        let log = Running::start(&store, 1_000_000, Arc::new(SystemClock));
        for i in 0..30_000 {
            log.sink.record(row(i));
            if i % 4_000 == 0 {
                log.sink.flush().await;
            }
        }
        log.sink.flush().await;
        log.stop().await;
        let full = size(&db) + size(&wal);
        assert!(full > 8_000_000, "30,000 wide rows take megabytes: {full}");
        // Retention cut to 1,000 rows: after the next 1,000 rows the rest is pruned,
        // in small transactions, and the file and its write-ahead log shrink. The
        // writer's shutdown waits for that pass to finish.
        let log = Running::start(&store, 1_000, Arc::new(SystemClock));
        for i in 30_000..31_000 {
            log.sink.record(row(i));
        }
        log.stop().await;
        assert_eq!(logged(&store).await, 1_000);
        let (db_after, wal_after) = (size(&db), size(&wal));
        assert!(db_after * 4 < full, "the file shrank: {full} -> {db_after}");
        assert!(wal_after < 1_000_000, "the write-ahead log was truncated: {wal_after}");
    }

    /// The writer's own connection is opened when needed: a batch that finds none
    /// (the database could not be opened) is lost and said so, and the next batch
    /// tries again instead of giving up for the gateway's life.
    #[tokio::test]
    async fn a_writer_without_a_connection_opens_one_at_the_next_batch() {
        let parent = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = parent.path().join("data");
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(&dir).await.unwrap_or_else(|e| panic!("{e}"));
        // The data directory is gone (the shared pool keeps its open file):
        // the writer cannot open a connection of its own.
        std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let mut writer = Writer { source: store, store: None, retention_rows: 1_000, since_prune: 0 };
        assert!(writer.connection().await.is_none());
        let mut lost = LogBatch::default();
        lost.push_attempt(row(0));
        assert_eq!(writer.write(lost).await.map(|at| at.0), Some(1_700_000_000_000));
        assert!(writer.store.is_none(), "the failed batch left no connection behind");

        // The directory is back, with a database in it: the next batch opens the
        // writer's connection and lands.
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        let reopened = Store::open(&dir).await.unwrap_or_else(|e| panic!("{e}"));
        let mut batch = LogBatch::default();
        for i in 1..4 {
            batch.push_attempt(row(i));
        }
        writer.write(batch).await;
        assert!(writer.store.is_some());
        assert_eq!(logged(&reopened).await, 3, "only the rows written after the connection opened");
        if let Some(store) = writer.store.take() {
            store.close().await;
        }
    }
}
