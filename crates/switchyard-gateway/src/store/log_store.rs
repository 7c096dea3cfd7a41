//! The request log writer's handle on the database ([`Store::for_log_writer`]):
//! one connection of its own, and everything the writer does with it (a batch's
//! rows in one transaction, retention, giving space back).
//!
//! On a SQLite file the connection is SQLite's own sqlx driver, not `Any`. Every
//! value bound through `Any` is converted again before SQLite sees it: each text
//! copied through `Display` into a new `Arc<String>`, after `Any`'s own copy
//! (callgrind at 100 req/s: that conversion and its allocations were half of the
//! writer task's instructions). Here a row's strings move into the statement's
//! arguments. Postgres stays on `Any`, like every other statement of team mode.
//!
//! The SQL is the same for both drivers where it can be (the row binders are
//! generic, see `multi_insert::LogValues`); SQLite's texts differ as described in
//! `multi_insert`.

use sqlx::sqlite::SqlitePool;
use sqlx::{Any, AnyPool, Executor, Sqlite};

use super::client_requests::{REQUEST_INSERT, bind_request};
use super::multi_insert::{InsertQuery, LogValues, MultiInsert, PADDED_ROWS, bind_padding, chunk_sizes};
use super::request_log::{ATTEMPT_INSERT, bind_attempt};
use super::request_stats::{STATS_JSON, stats_rows};
use super::{
    CONNECTION_PRAGMAS, LOG_WRITER_SECURE_DELETE, Location, LogBatch, PoolUse, RECLAIM_MIN_PAGES, Store,
    StoreError, StoreResult, connect, pool_options,
};

/// Rows of one table up to which a batch on SQLite takes the small-batch path
/// ([`LogStore::write_log`]).
pub const SMALL_BATCH: usize = 64;

/// Rows one retention transaction deletes at most.
pub const PRUNE_CHUNK: i64 = 2_000;

/// The log writer's connection.
pub struct LogStore {
    pool: LogPool,
}

enum LogPool {
    /// A SQLite file, through SQLite's own driver.
    Sqlite(SqlitePool),
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
    /// A connection of the request log writer's own, kept open.
    ///
    /// sqlx prepares each statement text once per connection and keeps it; on the
    /// shared pool, which hands its connections out in turn, each of them had to
    /// prepare each of the writer's multi-row texts (a few hundred thousand
    /// instructions for one of 64 rows), and at a batch a second a connection met a
    /// text it had not prepared yet for a long while (a quarter of SQLite's
    /// instructions at 100 req/s, docs/benchmarks.md). On one connection each text
    /// is prepared once, and the writer always works with the same worker thread.
    pub async fn for_log_writer(&self) -> StoreResult<LogStore> {
        let pool = match &*self.location {
            Location::File(url) => LogPool::Sqlite(connect_sqlite_log(url).await?),
            Location::Server(_) => LogPool::Postgres(connect(&self.location, 1, PoolUse::LogWriter).await?),
        };
        Ok(LogStore { pool })
    }
}

/// The log writer's SQLite connection: the shared pool's settings, and
/// `secure_delete = FAST` ([`LOG_WRITER_SECURE_DELETE`]).
async fn connect_sqlite_log(url: &str) -> StoreResult<SqlitePool> {
    let pool = pool_options::<Sqlite>(1, PoolUse::LogWriter)
        // A local file does not drop silently: no ping before each acquire.
        .test_before_acquire(false)
        .after_connect(|conn, _meta| {
            Box::pin(async move {
                conn.execute(CONNECTION_PRAGMAS).await?;
                conn.execute(LOG_WRITER_SECURE_DELETE).await?;
                Ok(())
            })
        })
        .connect(&format!("{url}?mode=rwc"))
        .await?;
    Ok(pool)
}

impl LogStore {
    /// Writes a batch in one transaction: its attempts, its client requests and
    /// their per-minute counts land together or not at all. A small batch on
    /// SQLite goes as one script in one execute (see `write_small_batch`); others
    /// in multi-row statements of fixed sizes (see `multi_insert`).
    pub async fn write_log(&self, batch: LogBatch) -> StoreResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        match &self.pool {
            LogPool::Sqlite(pool) if batch.attempts.len().max(batch.requests.len()) <= SMALL_BATCH => {
                write_small_batch(pool, batch).await
            }
            LogPool::Sqlite(pool) => {
                let stats = stats_rows(&batch.stats).map_err(unwritable)?;
                let mut tx = pool.begin().await?;
                for query in inserts::<Sqlite, _>(&ATTEMPT_INSERT, batch.attempts, true, bind_attempt) {
                    query.execute(&mut *tx).await?;
                }
                for query in inserts::<Sqlite, _>(&REQUEST_INSERT, batch.requests, true, bind_request) {
                    query.execute(&mut *tx).await?;
                }
                sqlx::query(sqlx::AssertSqlSafe(STATS_JSON.text())).bind(stats).execute(&mut *tx).await?;
                tx.commit().await?;
                Ok(())
            }
            LogPool::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                for query in inserts::<Any, _>(&ATTEMPT_INSERT, batch.attempts, false, bind_attempt) {
                    query.execute(&mut *tx).await?;
                }
                for query in inserts::<Any, _>(&REQUEST_INSERT, batch.requests, false, bind_request) {
                    query.execute(&mut *tx).await?;
                }
                Store::add_stats(&mut tx, &batch.stats).await?;
                tx.commit().await?;
                Ok(())
            }
        }
    }

    /// Retention: deletes all but the newest `keep` attempts and `keep` client
    /// requests, oldest first, [`PRUNE_CHUNK`] rows per transaction. Small
    /// transactions keep the write-ahead log small (one statement deleting a
    /// million rows grew it by 143 MB) and let the log writer and management writes
    /// in between. Returns the rows deleted.
    pub async fn prune_log(&self, keep: u32) -> StoreResult<u64> {
        let mut deleted = 0;
        for table in ["request_log", "client_requests"] {
            let sql = format!(
                "DELETE FROM {table} WHERE id IN (SELECT id FROM {table} \
                 WHERE id <= (SELECT MAX(id) FROM {table}) - $1 ORDER BY id LIMIT $2)"
            );
            loop {
                let rows = self.execute(&sql, &[i64::from(keep), PRUNE_CHUNK]).await?;
                deleted += rows;
                if rows < PRUNE_CHUNK as u64 {
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        Ok(deleted)
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
        let LogPool::Sqlite(pool) = &self.pool else { return Ok(false) };
        let free: i64 = sqlx::query_scalar("PRAGMA freelist_count").fetch_one(pool).await?;
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(pool).await?;
        if free < RECLAIM_MIN_PAGES || free * 4 < pages {
            return Ok(false);
        }
        sqlx::query("PRAGMA incremental_vacuum").execute(pool).await?;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await?;
        Ok(true)
    }

    /// Closes the connection (on SQLite, checkpointing the WAL).
    pub async fn close(&self) {
        match &self.pool {
            LogPool::Sqlite(pool) => pool.close().await,
            LogPool::Postgres(pool) => pool.close().await,
        }
    }

    /// Runs `sql` with integer parameters `values`; returns the rows it changed.
    async fn execute(&self, sql: &str, values: &[i64]) -> StoreResult<u64> {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        let rows = match &self.pool {
            LogPool::Sqlite(pool) => {
                let query = values.iter().fold(sqlx::query(sql), |q, v| q.bind(*v));
                query.execute(pool).await?.rows_affected()
            }
            LogPool::Postgres(pool) => {
                let query = values.iter().fold(sqlx::query(sql), |q, v| q.bind(*v));
                query.execute(pool).await?.rows_affected()
            }
        };
        Ok(rows)
    }
}

/// A batch's per-minute counts that do not serialise (they always do).
fn unwritable(source: serde_json::Error) -> StoreError {
    StoreError::Corrupt { table: "request_stats", column: "batch", source }
}

/// `rows` as the multi-row statements of `insert` (chunks of [`CHUNKS`]'s sizes,
/// largest first), each bound when it is reached.
///
/// [`CHUNKS`]: super::multi_insert::CHUNKS
fn inserts<'q, DB: sqlx::Database, R>(
    insert: &'static MultiInsert,
    rows: Vec<R>,
    sqlite: bool,
    bind: fn(InsertQuery<'q, DB>, R) -> InsertQuery<'q, DB>,
) -> impl Iterator<Item = InsertQuery<'q, DB>> {
    let sizes = chunk_sizes(rows.len());
    let mut rows = rows.into_iter();
    sizes.map(move |size| {
        let query = sqlx::query(sqlx::AssertSqlSafe(insert.text(size, sqlite)));
        rows.by_ref().take(size).fold(query, bind)
    })
}

/// A small batch on SQLite: the transaction and the three tables' rows in one
/// script, one execute, so the flush is one round trip to the connection's
/// thread (sqlx runs each statement there: a thread wake-up each way, and at
/// agent rates the separate statements of the large path were half of the
/// gateway's context switches).
///
/// The attempts and requests go as bound values in padded statements of
/// [`PADDED_ROWS`] rows, as many as the rows need, so a script's text depends
/// only on those counts and sqlx prepares each of the few texts once. (They
/// went as one JSON array per table before, unpacked by SQLite: three times
/// SQLite's instructions per row of bound values, measured with callgrind.) The
/// per-minute counts, a row or two, stay JSON (`json_insert`).
async fn write_small_batch(pool: &SqlitePool, batch: LogBatch) -> StoreResult<()> {
    let stats = stats_rows(&batch.stats).map_err(unwritable)?;
    let text = small_batch_script(
        batch.attempts.len().div_ceil(PADDED_ROWS),
        batch.requests.len().div_ceil(PADDED_ROWS),
    );
    let query = sqlx::query(sqlx::AssertSqlSafe(text));
    let query = padded(query, batch.attempts, ATTEMPT_INSERT.columns(), bind_attempt);
    let query = padded(query, batch.requests, REQUEST_INSERT.columns(), bind_request);
    let query = query.bind(stats);
    let mut connection = pool.acquire().await?;
    if let Err(e) = query.execute(&mut *connection).await {
        // A statement after BEGIN failed: undo what the batch wrote before the
        // connection goes back to the pool. Where even that fails (or there
        // was nothing to undo and SQLite says so), the connection is closed
        // rather than reused in an unknown state.
        if sqlx::query("ROLLBACK").execute(&mut *connection).await.is_err() {
            connection.close_on_drop();
        }
        return Err(e.into());
    }
    Ok(())
}

/// Binds `rows` into padded statements of [`PADDED_ROWS`] rows each, the last
/// one's missing rows as NULLs.
fn padded<Q: LogValues, R>(mut query: Q, rows: Vec<R>, columns: usize, bind: fn(Q, R) -> Q) -> Q {
    let statements = rows.len().div_ceil(PADDED_ROWS);
    let mut rows = rows.into_iter();
    for _ in 0..statements {
        let mut bound = 0;
        for row in rows.by_ref().take(PADDED_ROWS) {
            query = bind(query, row);
            bound += 1;
        }
        query = bind_padding(query, PADDED_ROWS - bound, columns);
    }
    query
}

/// The small-batch script for that many padded statements of attempts and of
/// requests: `BEGIN`, the inserts, the per-minute counts' upsert, `COMMIT`.
fn small_batch_script(attempt_statements: usize, request_statements: usize) -> String {
    let mut text = String::from("BEGIN IMMEDIATE;\n");
    for _ in 0..attempt_statements {
        text.push_str(ATTEMPT_INSERT.padded());
        text.push_str(";\n");
    }
    for _ in 0..request_statements {
        text.push_str(REQUEST_INSERT.padded());
        text.push_str(";\n");
    }
    text.push_str(&STATS_JSON.text());
    text.push_str(";\nCOMMIT");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{AttemptLogRow, RequestLogRow};
    use switchyard_types::UnixMillis;
    use switchyard_types::api::TokenUsageView;
    use switchyard_types::requests::{RequestOutcome, RequestsQuery, RouteTraceView};

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
    async fn small_and_large_batches_store_the_same_rows() {
        let small_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let large_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let small = Store::open(small_dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let large = Store::open(large_dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let rows = 2 * SMALL_BATCH + 10;
        // Batches of up to SMALL_BATCH rows take the one-script path, in one padded
        // statement or several, full or not; one batch of all takes the multi-row one.
        let sizes = [10, 17, 1, PADDED_ROWS, 2 * PADDED_ROWS, SMALL_BATCH - 2];
        assert_eq!(sizes.iter().sum::<usize>(), rows);
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

    /// The log writer's store is one connection of its own, kept open with the
    /// statements prepared on it; what it writes, the shared pool reads.
    #[tokio::test]
    async fn the_log_writer_has_a_connection_of_its_own() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let log = writer(&store).await;
        let LogPool::Sqlite(pool) = &log.pool else { panic!("a SQLite file's writer is on SQLite's driver") };
        let options = pool.options();
        assert_eq!((options.get_min_connections(), options.get_max_connections()), (1, 1));
        assert_eq!((options.get_idle_timeout(), options.get_max_lifetime()), (None, None));
        assert_eq!(store.pool.options().get_max_connections(), 3, "four connections in all");
        // Log rows hold no secret: the writer's retention does not zero whole pages
        // it frees (FAST, 2); the shared pool, which deletes secrets, does (ON, 1).
        let pragma = "PRAGMA secure_delete";
        let writer_mode: i64 =
            sqlx::query_scalar(pragma).fetch_one(pool).await.unwrap_or_else(|e| panic!("{e}"));
        let shared_mode: i64 =
            sqlx::query_scalar(pragma).fetch_one(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((writer_mode, shared_mode), (2, 1));
        // And the shared connections' other settings.
        let journal: String =
            sqlx::query_scalar("PRAGMA journal_mode").fetch_one(pool).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(journal, "wal");
        for from in [0, 10, 100] {
            log.write_log(batch(from, from + 10 + from)).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let attempts = store.list_attempts(1_000, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(attempts.len(), 10 + 20 + 110);
        log.close().await;
    }

    /// SQLite is built without its memory statistics (`.cargo/config.toml`): the
    /// log writer's binds allocate per value, and with statistics on each
    /// allocation and free takes a global mutex.
    #[tokio::test]
    async fn sqlite_is_built_without_memory_statistics() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        let options: Vec<String> = sqlx::query_scalar("PRAGMA compile_options")
            .fetch_all(&store.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
    }

    /// The small batch's transaction is part of its one execute: when a statement
    /// in it fails, nothing of the batch stays and the store goes on writing.
    #[tokio::test]
    async fn a_small_batch_failing_halfway_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
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

    /// SQLite's log inserts are `OR FAIL` (no statement journal, see
    /// `multi_insert`): a row failing stops its statement and keeps the rows
    /// before it. A batch failing in the middle of a statement, on the small path
    /// and on the large, still leaves nothing behind: the writer undoes the
    /// transaction.
    #[tokio::test]
    async fn a_batch_failing_inside_a_statement_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));

        // The statement itself: the second row's NULL `at` fails, the first stays.
        let mut tx = store.pool.begin().await.unwrap_or_else(|e| panic!("{e}"));
        let two = batch(0, 2);
        let query = sqlx::query(sqlx::AssertSqlSafe(ATTEMPT_INSERT.text(2, true)));
        let mut query = bind_attempt(query, two.attempts[0].clone()).bind(None::<i64>);
        for _ in 1..ATTEMPT_INSERT.columns() {
            query = query.bind("x");
        }
        let failed = query.execute(&mut *tx).await;
        assert!(failed.is_err_and(|e| e.to_string().contains("NOT NULL")));
        let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM request_log")
            .fetch_one(&mut *tx)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kept, 1, "FAIL keeps the statement's earlier rows");
        tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));

        let log = writer(&store).await;
        log.write_log(batch(0, 10)).await.unwrap_or_else(|e| panic!("{e}"));
        let before = everything(&store).await;
        let refuse = "CREATE TRIGGER refuse BEFORE INSERT ON request_log WHEN NEW.request_id = 'req-0013' \
                      BEGIN SELECT RAISE(FAIL, 'refused by the test'); END";
        sqlx::query(refuse).execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        for to in [20, 10 + 2 * SMALL_BATCH] {
            let failed = log.write_log(batch(10, to)).await;
            assert!(failed.is_err_and(|e| e.to_string().contains("refused by the test")), "{to}");
            assert_eq!(everything(&store).await, before, "rows 10..{to} were undone");
        }
    }
}
