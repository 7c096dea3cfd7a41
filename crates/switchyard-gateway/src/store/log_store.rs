//! The request log writer's handle on the database ([`Store::for_log_writer`]):
//! one connection of its own, and everything the writer does with it (a batch's
//! rows in one transaction, retention, giving space back).
//!
//! On a SQLite file the connection lives on a thread of its own and a whole flush
//! is one job there (`log_thread`: why not sqlx). Postgres (team mode) stays on
//! sqlx's `Any`, like every other statement of team mode, in multi-row statements
//! (`multi_insert`).

use rusqlite::{CachedStatement, TransactionBehavior};
use sqlx::{Any, AnyPool};

use super::client_requests::{REQUEST_INSERT, bind_request};
use super::log_thread::LogThread;
use super::multi_insert::{InsertQuery, LogValues, MultiInsert, chunk_sizes, sqlite_chunk_sizes};
use super::request_log::{ATTEMPT_INSERT, bind_attempt};
use super::request_stats::{STATS_JSON, stats_rows};
use super::{Location, LogBatch, PoolUse, RECLAIM_MIN_PAGES, Store, StoreError, StoreResult, connect};

/// Rows one retention transaction deletes at most.
pub const PRUNE_CHUNK: i64 = 2_000;

/// The log writer's connection.
pub struct LogStore {
    pool: LogPool,
}

enum LogPool {
    /// A SQLite file, on the writer's own thread.
    Sqlite(LogThread),
    /// A Postgres server (team mode), through `Any`.
    Postgres(AnyPool),
}

impl std::fmt::Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = match self.pool {
            LogPool::Sqlite(_) => "sqlite",
            LogPool::Postgres(_) => "postgres",
        };
        f.debug_struct("LogStore").field("backend", &backend).finish()
    }
}

impl Store {
    /// A connection of the request log writer's own, kept open: its statements
    /// are prepared once and stay prepared, and on SQLite the writer always
    /// works with the same thread.
    pub async fn for_log_writer(&self) -> StoreResult<LogStore> {
        let pool = match &*self.location {
            Location::File(url) => {
                let path = url.strip_prefix("sqlite://").unwrap_or(url);
                LogPool::Sqlite(LogThread::open(std::path::Path::new(path)).await?)
            }
            Location::Server(_) => LogPool::Postgres(connect(&self.location, 1, PoolUse::LogWriter).await?),
        };
        Ok(LogStore { pool })
    }
}

impl LogStore {
    /// Writes a batch in one transaction: its attempts, its client requests and
    /// their per-minute counts land together or not at all. On SQLite, one job
    /// on the connection's thread (see `write_sqlite`); on Postgres, multi-row
    /// statements of fixed sizes (see `multi_insert`).
    pub async fn write_log(&self, batch: LogBatch) -> StoreResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let stats = stats_rows(&batch.stats).map_err(unwritable)?;
        match &self.pool {
            LogPool::Sqlite(thread) => thread.run(move |conn| write_sqlite(conn, batch, &stats)).await,
            LogPool::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                for query in inserts(&ATTEMPT_INSERT, batch.attempts, bind_attempt) {
                    query.execute(&mut *tx).await?;
                }
                for query in inserts(&REQUEST_INSERT, batch.requests, bind_request) {
                    query.execute(&mut *tx).await?;
                }
                Store::add_stats(&mut tx, &batch.stats).await?;
                tx.commit().await?;
                Ok(())
            }
        }
    }

    /// Retention: deletes all but the newest `keep` attempts and `keep` client
    /// requests, oldest first, [`PRUNE_CHUNK`] ids per transaction. Small
    /// transactions keep the write-ahead log small (one statement deleting a
    /// million rows grew it by 143 MB) and let the log writer and management writes
    /// in between. Returns the rows deleted.
    ///
    /// Each chunk is a plain range of ids, bound as a value: SQLite deletes such a
    /// range in one pass as it walks the table. The chunk used to be chosen by a
    /// subquery (`id IN (SELECT id … ORDER BY id LIMIT n)`), which makes SQLite
    /// collect the ids in a temporary table first and then look each one up again:
    /// ~20 % more work per row, and at saturation retention deletes as many rows as
    /// the log writes.
    pub async fn prune_log(&self, keep: u32) -> StoreResult<u64> {
        let mut deleted = 0;
        for table in ["request_log", "client_requests"] {
            let Some((oldest, newest)) = self.id_range(table).await? else { continue };
            // Ids only grow and retention removes the oldest, so the newest `keep`
            // rows are those above `last` (a gap left by a rolled-back batch on
            // Postgres keeps a row fewer, never more).
            let last = newest - i64::from(keep);
            let sql = format!("DELETE FROM {table} WHERE id <= $1");
            let mut from = oldest;
            while from <= last {
                let to = last.min(from + PRUNE_CHUNK - 1);
                let rows = self.execute(&sql, &[to]).await?;
                deleted += rows;
                from = to + 1;
                if rows == 0 {
                    // A stretch of ids with no rows (a Postgres sequence can jump):
                    // go on from the next row instead of stepping through the gap.
                    match self.id_range(table).await? {
                        Some((next, _)) => from = from.max(next),
                        None => break,
                    }
                }
                tokio::task::yield_now().await;
            }
        }
        Ok(deleted)
    }

    /// The oldest and newest id in `table`, or `None` when it is empty.
    async fn id_range(&self, table: &'static str) -> StoreResult<Option<(i64, i64)>> {
        // Two subqueries, each answered from one end of the table's key.
        let sql = format!("SELECT (SELECT MIN(id) FROM {table}), (SELECT MAX(id) FROM {table})");
        let (oldest, newest): (Option<i64>, Option<i64>) = match &self.pool {
            LogPool::Sqlite(thread) => {
                thread.run(move |conn| conn.query_row(&sql, [], |row| Ok((row.get(0)?, row.get(1)?)))).await?
            }
            LogPool::Postgres(pool) => sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_one(pool).await?,
        };
        Ok(oldest.zip(newest))
    }

    /// Deletes minute rows older than `before` (the summary reads one day).
    pub async fn prune_stats(&self, before: switchyard_types::UnixMillis) -> StoreResult<u64> {
        self.execute("DELETE FROM request_stats WHERE minute < $1", &[before.0]).await
    }

    /// After retention deleted many rows: when much of the file is free pages
    /// (over a quarter, and over 4 MB: a retention that just caught up with a
    /// large log, not the steady state, where new rows reuse the pages old ones
    /// freed), gives them back to the file system (`incremental_vacuum`; the file
    /// shrinks) and truncates the write-ahead log. Returns whether it did. A
    /// Postgres server reclaims space itself (autovacuum).
    pub async fn reclaim(&self) -> StoreResult<bool> {
        let LogPool::Sqlite(thread) = &self.pool else { return Ok(false) };
        thread
            .run(|conn| {
                let free: i64 = conn.query_row("PRAGMA freelist_count", [], |row| row.get(0))?;
                let pages: i64 = conn.query_row("PRAGMA page_count", [], |row| row.get(0))?;
                if free < RECLAIM_MIN_PAGES || free * 4 < pages {
                    return Ok(false);
                }
                // The pragma frees one page per step (a result row each): step it
                // to the end.
                let mut vacuum = conn.prepare("PRAGMA incremental_vacuum")?;
                let mut freed = vacuum.raw_query();
                while freed.next()?.is_some() {}
                drop(freed);
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
                Ok(true)
            })
            .await
    }

    /// Closes the connection (on SQLite, checkpointing the WAL).
    pub async fn close(&self) {
        match &self.pool {
            LogPool::Sqlite(thread) => thread.close().await,
            LogPool::Postgres(pool) => pool.close().await,
        }
    }

    /// Runs `sql` with integer parameters `values`; returns the rows it changed.
    async fn execute(&self, sql: &str, values: &[i64]) -> StoreResult<u64> {
        match &self.pool {
            LogPool::Sqlite(thread) => {
                let (sql, values) = (sql.to_owned(), values.to_vec());
                thread
                    .run(move |conn| {
                        let changed =
                            conn.prepare_cached(&sql)?.execute(rusqlite::params_from_iter(values))?;
                        Ok(changed as u64)
                    })
                    .await
            }
            LogPool::Postgres(pool) => {
                let sql = sqlx::AssertSqlSafe(sql.to_owned());
                let query = values.iter().fold(sqlx::query(sql), |q, v| q.bind(*v));
                Ok(query.execute(pool).await?.rows_affected())
            }
        }
    }
}

/// A batch on SQLite, on the connection's thread: one transaction, each table's
/// rows through its prepared statements of a few sizes (SQLite's `INSERT OR FAIL`
/// texts, see `multi_insert`), then the per-minute counts. Any error returns
/// before the commit, and the transaction rolls back as it drops: a batch lands
/// whole or not at all.
fn write_sqlite(conn: &mut rusqlite::Connection, batch: LogBatch, stats: &str) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    insert_sqlite(&tx, &ATTEMPT_INSERT, batch.attempts, |values, row| bind_attempt(values, row))?;
    insert_sqlite(&tx, &REQUEST_INSERT, batch.requests, |values, row| bind_request(values, row))?;
    tx.prepare_cached(STATS_JSON.text())?.execute([stats])?;
    tx.commit()
}

/// `rows` through `insert`'s SQLite statements, [`SQLITE_CHUNKS`] rows at a time,
/// each row's values bound in order by `bind`.
///
/// [`SQLITE_CHUNKS`]: super::multi_insert::SQLITE_CHUNKS
fn insert_sqlite<R>(
    tx: &rusqlite::Transaction<'_>,
    insert: &MultiInsert,
    rows: Vec<R>,
    bind: impl for<'s, 'c> Fn(RowBinder<'s, 'c>, R) -> RowBinder<'s, 'c>,
) -> rusqlite::Result<()> {
    let sizes = sqlite_chunk_sizes(rows.len());
    let mut rows = rows.into_iter();
    for size in sizes {
        let mut statement = tx.prepare_cached(insert.sqlite_text(size))?;
        let binder = rows.by_ref().take(size).fold(RowBinder::new(&mut statement), &bind);
        binder.execute()?;
    }
    Ok(())
}

/// Binds one row's values straight into a prepared statement, in order (no
/// intermediate list); the first failure is kept and returned by `execute`.
struct RowBinder<'s, 'c> {
    statement: &'s mut CachedStatement<'c>,
    next: usize,
    failed: Option<rusqlite::Error>,
}

impl<'s, 'c> RowBinder<'s, 'c> {
    fn new(statement: &'s mut CachedStatement<'c>) -> Self {
        RowBinder { statement, next: 1, failed: None }
    }

    fn bind<T: rusqlite::ToSql>(mut self, value: T) -> Self {
        if self.failed.is_none()
            && let Err(e) = self.statement.raw_bind_parameter(self.next, value)
        {
            self.failed = Some(e);
        }
        self.next += 1;
        self
    }

    /// Steps the statement once with the values bound.
    fn execute(self) -> rusqlite::Result<usize> {
        match self.failed {
            Some(e) => Err(e),
            None => self.statement.raw_execute(),
        }
    }
}

impl LogValues for RowBinder<'_, '_> {
    fn int(self, value: i64) -> Self {
        self.bind(value)
    }
    fn opt_int(self, value: Option<i64>) -> Self {
        self.bind(value)
    }
    fn text(self, value: String) -> Self {
        self.bind(value.as_str())
    }
    fn opt_text(self, value: Option<String>) -> Self {
        self.bind(value.as_deref())
    }
    fn shared(self, value: std::sync::Arc<str>) -> Self {
        self.bind(&*value)
    }
    fn opt_shared(self, value: Option<std::sync::Arc<str>>) -> Self {
        self.bind(value.as_deref())
    }
    fn word(self, value: &'static str) -> Self {
        self.bind(value)
    }
}

/// A batch's per-minute counts that do not serialise (they always do).
fn unwritable(source: serde_json::Error) -> StoreError {
    StoreError::Corrupt { table: "request_stats", column: "batch", source }
}

/// `rows` as the multi-row Postgres statements of `insert` (chunks of [`CHUNKS`]'s sizes,
/// largest first), each bound when it is reached.
///
/// [`CHUNKS`]: super::multi_insert::CHUNKS
fn inserts<'q, R>(
    insert: &'static MultiInsert,
    rows: Vec<R>,
    bind: fn(InsertQuery<'q, Any>, R) -> InsertQuery<'q, Any>,
) -> impl Iterator<Item = InsertQuery<'q, Any>> {
    let sizes = chunk_sizes(rows.len());
    let mut rows = rows.into_iter();
    sizes.map(move |size| {
        let query = sqlx::query(sqlx::AssertSqlSafe(insert.text(size)));
        rows.by_ref().take(size).fold(query, bind)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AttemptLogRow, RequestLogRow};
    use switchyard_types::UnixMillis;
    use switchyard_types::api::TokenUsageView;
    use switchyard_types::requests::{RequestOutcome, RequestsQuery, RouteTraceView};

    /// A store in a new data directory (kept while the directory is).
    async fn fresh_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        (dir, store)
    }

    /// The log writer's connection to `store`.
    async fn writer(store: &Store) -> LogStore {
        store.for_log_writer().await.unwrap_or_else(|e| panic!("{e}"))
    }

    const T0: i64 = 1_700_000_000_000;

    /// Rows with every optional field both set and unset, text that JSON must
    /// escape, and two minutes of per-minute counts.
    fn batch(from: usize, to: usize) -> LogBatch {
        let mut batch = LogBatch::default();
        for i in from..to {
            let at = UnixMillis(T0 + i as i64 * 1_000);
            let odd = i % 2 == 1;
            let attempt = AttemptLogRow {
                at,
                request_id: format!("req-{i:04}").into(),
                api_key_id: odd.then(|| "key-\"a\"".into()),
                route: "/v1/messages",
                provider: "anthropic".into(),
                connection_id: format!("conn-{}", i % 3).into(),
                model: "claude-ß-\\-☃".into(),
                status: (!odd).then_some(200),
                latency_ms: i as u32,
                bytes: u64::MAX - i as u64,
                error_kind: odd.then(|| "timeout".to_owned()),
                tokens: (!odd).then_some(TokenUsageView {
                    input: 1,
                    output: 2,
                    cache_read: 3,
                    cache_write: i as u32,
                }),
            };
            batch.push_request(RequestLogRow {
                request_id: attempt.request_id.clone(),
                at,
                api_key_id: attempt.api_key_id.clone(),
                route: attempt.route,
                model: attempt.model.to_string(),
                status: if odd { 504 } else { 200 },
                outcome: if odd { RequestOutcome::Failed } else { RequestOutcome::Served },
                error_code: odd.then(|| "upstream_timeout".to_owned()),
                connection_id: (!odd).then(|| attempt.connection_id.clone()),
                attempts: 1,
                failed_attempts: u32::from(odd),
                latency_ms: i as u32,
                route_trace: RouteTraceView {
                    resolved_as: format!("alias 'x{i}' → \"y\"").into(),
                    strategy: "priority".into(),
                    candidates: Vec::new(),
                    notes: vec!["line\nbreak".to_owned()],
                },
            });
            batch.push_attempt(attempt);
        }
        batch
    }

    /// Everything the log's readers can see.
    async fn everything(store: &Store) -> impl PartialEq + std::fmt::Debug {
        let attempts = store.list_attempts(1_000, None).await.unwrap_or_else(|e| panic!("{e}"));
        let all = RequestsQuery { limit: Some(1_000), ..RequestsQuery::default() };
        let requests = store.list_requests(&all).await.unwrap_or_else(|e| panic!("{e}"));
        let mut details = Vec::new();
        for r in &requests {
            details.push(store.get_request(&r.request_id).await.unwrap_or_else(|e| panic!("{e}")));
        }
        let counts = store.summary_counts(UnixMillis(T0 + 200_000)).await.unwrap_or_else(|e| panic!("{e}"));
        (attempts, requests, details, counts)
    }

    #[tokio::test]
    async fn batches_of_any_size_store_the_same_rows() {
        let small_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let large_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let small = Store::open(small_dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let large = Store::open(large_dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        // Many batches of assorted sizes on one store, one batch of all on the other.
        let sizes = [10, 17, 1, 16, 32, 62];
        let rows: usize = sizes.iter().sum();
        let mut from = 0;
        let small_writer = writer(&small).await;
        for size in sizes {
            small_writer.write_log(batch(from, from + size)).await.unwrap_or_else(|e| panic!("{e}"));
            from += size;
        }
        writer(&large).await.write_log(batch(0, rows)).await.unwrap_or_else(|e| panic!("{e}"));
        let seen = everything(&small).await;
        assert_eq!(seen, everything(&large).await);

        // And what they store is what was written.
        let attempts = small.list_attempts(1_000, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(attempts.len(), rows);
        let (odd, even) = (&attempts[0], &attempts[1]);
        assert_eq!(odd.request_id, format!("req-{:04}", rows - 1));
        assert_eq!(odd.api_key_id.as_deref(), Some("key-\"a\""));
        assert_eq!((odd.status, odd.error_kind.as_deref(), odd.tokens), (None, Some("timeout"), None));
        assert_eq!(even.model, "claude-ß-\\-☃");
        assert_eq!(even.status, Some(200));
        assert_eq!(even.bytes, i64::MAX as f64, "bytes past i64 are clamped");
        assert_eq!(even.tokens.map(|t| (t.input, t.cache_write)), Some((1, rows as u32 - 2)));
        let (entry, trace) =
            small.get_request("req-0003").await.ok().flatten().unwrap_or_else(|| panic!("no req-0003"));
        assert_eq!((entry.status, entry.outcome, entry.connection), (504, RequestOutcome::Failed, None));
        assert_eq!(&*trace.resolved_as, "alias 'x3' → \"y\"");
        assert_eq!(trace.notes, ["line\nbreak"]);
        let counts = small.summary_counts(UnixMillis(T0 + 200_000)).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counts.attempts_last_hour, (rows as u32, rows as u32 / 2));
    }

    /// `PRAGMA name` on the writer's connection, and the name of the thread it ran on.
    async fn writer_pragma(log: &LogStore, name: &'static str) -> (String, Option<String>) {
        let LogPool::Sqlite(thread) = &log.pool else {
            panic!("a SQLite file's writer is on its own thread")
        };
        let read = move |conn: &mut rusqlite::Connection| {
            let value: rusqlite::types::Value =
                conn.query_row(&format!("PRAGMA {name}"), [], |row| row.get(0))?;
            let value = match value {
                rusqlite::types::Value::Integer(n) => n.to_string(),
                rusqlite::types::Value::Text(text) => text,
                other => format!("{other:?}"),
            };
            Ok((value, std::thread::current().name().map(str::to_owned)))
        };
        thread.run(read).await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// The log writer's store is one connection of its own, on a thread of its
    /// own that runs every job; what it writes, the shared pool reads.
    #[tokio::test]
    async fn the_log_writer_has_a_connection_of_its_own() {
        let (_dir, store) = fresh_store().await;
        let log = writer(&store).await;
        assert_eq!(store.pool.options().get_max_connections(), 3, "four connections in all");
        // Log rows hold no secret: the writer's retention does not zero whole pages
        // it frees (FAST, 2); the shared pool, which deletes secrets, does (ON, 1).
        let (writer_mode, thread) = writer_pragma(&log, "secure_delete").await;
        let shared_mode: i64 = sqlx::query_scalar("PRAGMA secure_delete")
            .fetch_one(&store.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((writer_mode.as_str(), shared_mode), ("2", 1));
        assert_eq!(thread.as_deref(), Some("switchyard-log-db"));
        assert_ne!(thread, std::thread::current().name().map(str::to_owned));
        // And the shared connections' other settings.
        assert_eq!(writer_pragma(&log, "journal_mode").await.0, "wal");
        assert_eq!(writer_pragma(&log, "synchronous").await.0, "1", "NORMAL");
        assert_eq!(writer_pragma(&log, "busy_timeout").await.0, "5000");
        assert_eq!(writer_pragma(&log, "foreign_keys").await.0, "1");
        for from in [0, 10, 100] {
            log.write_log(batch(from, from + 10 + from)).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let attempts = store.list_attempts(1_000, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(attempts.len(), 10 + 20 + 110);
        log.close().await;
        // Closed: a late batch is an error, not a wait.
        assert!(log.write_log(batch(200, 201)).await.is_err());
        log.close().await;
    }

    /// Closing the writer returns once its connection has closed: as the last
    /// connection to the file, its close checkpoints the write-ahead log and
    /// removes it, so a process that exits right after finds everything in the
    /// database file.
    #[tokio::test]
    async fn closing_the_writer_waits_for_its_connection_to_close() {
        let (dir, store) = fresh_store().await;
        let log = writer(&store).await;
        log.write_log(batch(0, 50)).await.unwrap_or_else(|e| panic!("{e}"));
        store.close().await;
        let wal = dir.path().join(format!("{}-wal", super::super::DATABASE_FILE));
        assert!(wal.exists(), "the writer's connection is still open");
        log.close().await;
        assert!(!wal.exists(), "the last close checkpointed and removed the WAL");
        let reopened = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let attempts = reopened.list_attempts(1_000, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(attempts.len(), 50);
    }

    /// SQLite is built without its memory statistics (`.cargo/config.toml`): the
    /// log writer's binds allocate per value, and with statistics on each
    /// allocation and free takes a global mutex.
    #[tokio::test]
    async fn sqlite_is_built_without_memory_statistics() {
        let (_dir, store) = fresh_store().await;
        let options: Vec<String> = sqlx::query_scalar("PRAGMA compile_options")
            .fetch_all(&store.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
    }

    /// A batch is one transaction: when a row of it fails, nothing of the batch
    /// stays and the store goes on writing.
    #[tokio::test]
    async fn a_batch_failing_halfway_leaves_nothing_behind() {
        let (_dir, store) = fresh_store().await;
        let log = writer(&store).await;
        log.write_log(batch(0, 10)).await.unwrap_or_else(|e| panic!("{e}"));
        let before = everything(&store).await;
        // The attempts statement goes in, then the client requests' is refused.
        let refuse = "CREATE TRIGGER refuse BEFORE INSERT ON client_requests \
                      BEGIN SELECT RAISE(ABORT, 'refused by the test'); END";
        sqlx::query(refuse).execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        let failed = log.write_log(batch(10, 20)).await;
        assert!(failed.is_err_and(|e| e.to_string().contains("refused by the test")));
        assert_eq!(everything(&store).await, before, "the failed batch's attempts were undone");
        sqlx::query("DROP TRIGGER refuse").execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        for from in [10, 20] {
            log.write_log(batch(from, from + 10)).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let attempts = store.list_attempts(1_000, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(attempts.len(), 30);
    }

    /// `(oldest id, rows)` of `table`.
    async fn ids(store: &Store, table: &str) -> (i64, i64) {
        let sql = format!("SELECT MIN(id), COUNT(*) FROM {table}");
        sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .fetch_one(&store.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Retention keeps the newest `keep` rows of each table, whatever the number of
    /// chunks it takes and however the ids are spread: a stretch of ids with no
    /// rows (longer than a chunk) does not end it early.
    #[tokio::test]
    async fn retention_keeps_the_newest_rows_across_chunks_and_gaps() {
        let (_dir, store) = fresh_store().await;
        let log = writer(&store).await;
        let rows = 3 * PRUNE_CHUNK as usize + 500;
        log.write_log(batch(0, rows)).await.unwrap_or_else(|e| panic!("{e}"));
        // A gap of more than two chunks in the attempts' ids: one chunk finds no
        // rows at all, and retention skips to the next row.
        let gap = format!("DELETE FROM request_log WHERE id > 100 AND id <= {}", 100 + 2 * PRUNE_CHUNK + 10);
        sqlx::query(sqlx::AssertSqlSafe(gap)).execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        let attempts_before = ids(&store, "request_log").await.1;

        let deleted = log.prune_log(1_000).await.unwrap_or_else(|e| panic!("{e}"));
        let first_kept = rows as i64 - 1_000 + 1;
        assert_eq!(ids(&store, "request_log").await, (first_kept, 1_000));
        assert_eq!(ids(&store, "client_requests").await, (first_kept, 1_000));
        assert_eq!(deleted, (attempts_before - 1_000 + rows as i64 - 1_000) as u64);
        // The newest rows are the ones kept: the request listed first is the last written.
        let newest = store.list_attempts(1, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(newest[0].request_id, format!("req-{:04}", rows - 1));

        // Nothing more to delete; an empty table is no error.
        assert_eq!(log.prune_log(1_000).await.unwrap_or_else(|e| panic!("{e}")), 0);
        assert_eq!(log.prune_log(0).await.unwrap_or_else(|e| panic!("{e}")), 2_000);
        assert_eq!(log.prune_log(0).await.unwrap_or_else(|e| panic!("{e}")), 0);
        log.close().await;
    }

    /// A batch failing in the middle of its rows, small or large, leaves nothing
    /// behind: the writer undoes the transaction.
    #[tokio::test]
    async fn a_batch_failing_in_the_middle_leaves_nothing_behind() {
        let (_dir, store) = fresh_store().await;
        let log = writer(&store).await;
        log.write_log(batch(0, 10)).await.unwrap_or_else(|e| panic!("{e}"));
        let before = everything(&store).await;
        let refuse = "CREATE TRIGGER refuse BEFORE INSERT ON request_log WHEN NEW.request_id = 'req-0013' \
                      BEGIN SELECT RAISE(FAIL, 'refused by the test'); END";
        sqlx::query(refuse).execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        for to in [20, 138] {
            let failed = log.write_log(batch(10, to)).await;
            assert!(failed.is_err_and(|e| e.to_string().contains("refused by the test")), "{to}");
            assert_eq!(everything(&store).await, before, "rows 10..{to} were undone");
        }
    }
}
