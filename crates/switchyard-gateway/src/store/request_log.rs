//! The `request_log` table: one row per upstream attempt, bounded retention.

use sqlx::{Any, Row, Transaction};
use switchyard_types::UnixMillis;
use switchyard_types::api::{RequestLogEntryView, TokenUsageView};

use super::client_requests::{REQUEST_INSERT, bind_request};
use super::multi_insert::{InsertQuery, MultiInsert, PADDED_ROWS, bind_padding, chunks};
use super::request_stats::{STATS_JSON, StatsDelta, stats_rows};
use super::{Backend, RequestLogRow, Store, StoreError, StoreResult};

/// One attempt, as written by the log writer.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptLogRow {
    /// Attempt start.
    pub at: UnixMillis,
    /// Client request id.
    pub request_id: String,
    /// Client key id.
    pub api_key_id: Option<String>,
    /// Client route.
    pub route: &'static str,
    /// Provider.
    pub provider: String,
    /// Connection.
    pub connection_id: String,
    /// Upstream model.
    pub model: String,
    /// Upstream status.
    pub status: Option<u16>,
    /// Duration in ms.
    pub latency_ms: u32,
    /// Bytes relayed.
    pub bytes: u64,
    /// Failure kind.
    pub error_kind: Option<String>,
    /// Tokens the upstream reported.
    pub tokens: Option<TokenUsageView>,
}

/// A static `SELECT` of every view column, followed by `$tail`.
macro_rules! select_rows {
    ($tail:literal) => {
        concat!(
            "SELECT id, at, request_id, api_key_id, route, provider, connection_id, model, ",
            "status, latency_ms, bytes, error_kind, input_tokens, output_tokens, cache_read_tokens, ",
            "cache_write_tokens FROM request_log ",
            $tail
        )
    };
}

/// The attempt rows' insert.
static ATTEMPT_INSERT: MultiInsert = MultiInsert::new(
    "INSERT INTO request_log (at, request_id, api_key_id, route, provider, connection_id, model, status, \
     latency_ms, bytes, error_kind, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens) VALUES ",
    15,
    "",
);

/// Binds `r` as one row of [`ATTEMPT_INSERT`].
fn bind_attempt<'q>(query: InsertQuery<'q>, r: &AttemptLogRow) -> InsertQuery<'q> {
    query
        .bind(r.at.0)
        .bind(r.request_id.as_str())
        .bind(r.api_key_id.as_deref())
        .bind(r.route)
        .bind(r.provider.as_str())
        .bind(r.connection_id.as_str())
        .bind(r.model.as_str())
        .bind(r.status.map(i64::from))
        .bind(i64::from(r.latency_ms))
        .bind(i64::try_from(r.bytes).unwrap_or(i64::MAX))
        .bind(r.error_kind.as_deref())
        .bind(r.tokens.map(|t| i64::from(t.input)))
        .bind(r.tokens.map(|t| i64::from(t.output)))
        .bind(r.tokens.map(|t| i64::from(t.cache_read)))
        .bind(r.tokens.map(|t| i64::from(t.cache_write)))
}

/// Rows of one table up to which a batch on SQLite takes the small-batch path
/// ([`Store::write_small_batch`]).
pub const SMALL_BATCH: usize = 64;

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

/// Rows one retention transaction deletes at most.
pub const PRUNE_CHUNK: i64 = 2_000;

/// One flush of the log writer: attempts, client requests and what they add to
/// the per-minute counts, written in one transaction.
#[derive(Debug, Default)]
pub struct LogBatch {
    /// Upstream attempts.
    pub attempts: Vec<AttemptLogRow>,
    /// Client requests.
    pub requests: Vec<RequestLogRow>,
    /// Their per-minute counts.
    pub stats: StatsDelta,
}

impl LogBatch {
    /// Adds an attempt.
    pub fn push_attempt(&mut self, row: AttemptLogRow) {
        self.stats.attempt(&row);
        self.attempts.push(row);
    }

    /// Adds a client request.
    pub fn push_request(&mut self, row: RequestLogRow) {
        self.stats.request(&row);
        self.requests.push(row);
    }

    /// Rows in the batch.
    pub fn len(&self) -> usize {
        self.attempts.len() + self.requests.len()
    }

    /// Whether the batch holds no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Store {
    /// Writes a batch in one transaction: its attempts, its client requests and
    /// their per-minute counts land together or not at all. A small batch on
    /// SQLite goes as one script in one execute ([`Store::write_small_batch`]);
    /// others in multi-row statements of fixed sizes (see `multi_insert`).
    pub async fn write_log(&self, batch: &LogBatch) -> StoreResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let sqlite = self.backend == Backend::Sqlite;
        if sqlite && batch.attempts.len().max(batch.requests.len()) <= SMALL_BATCH {
            return self.write_small_batch(batch).await;
        }
        let mut tx = self.pool.begin().await?;
        Store::insert_attempts(&mut tx, &batch.attempts, sqlite).await?;
        Store::insert_requests(&mut tx, &batch.requests, sqlite).await?;
        Store::add_stats(&mut tx, &batch.stats).await?;
        tx.commit().await?;
        Ok(())
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
    async fn write_small_batch(&self, batch: &LogBatch) -> StoreResult<()> {
        let attempt_statements = batch.attempts.len().div_ceil(PADDED_ROWS);
        let request_statements = batch.requests.len().div_ceil(PADDED_ROWS);
        let text = small_batch_script(attempt_statements, request_statements);
        let unwritable = |source| StoreError::Corrupt { table: "request_stats", column: "batch", source };
        let mut query = sqlx::query(sqlx::AssertSqlSafe(text));
        for rows in batch.attempts.chunks(PADDED_ROWS) {
            query = rows.iter().fold(query, bind_attempt);
            query = bind_padding(query, PADDED_ROWS - rows.len(), ATTEMPT_INSERT.columns());
        }
        for rows in batch.requests.chunks(PADDED_ROWS) {
            query = rows.iter().fold(query, bind_request);
            query = bind_padding(query, PADDED_ROWS - rows.len(), REQUEST_INSERT.columns());
        }
        let query = query.bind(stats_rows(&batch.stats).map_err(unwritable)?);
        let mut connection = self.pool.acquire().await?;
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

    /// Appends attempts in multi-row statements (`sqlite`: SQLite's texts, see
    /// `multi_insert`).
    async fn insert_attempts(
        tx: &mut Transaction<'static, Any>,
        attempts: &[AttemptLogRow],
        sqlite: bool,
    ) -> StoreResult<()> {
        for rows in chunks(attempts) {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(ATTEMPT_INSERT.text(rows.len(), sqlite)));
            for r in rows {
                query = bind_attempt(query, r);
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
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
                let done = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                    .bind(i64::from(keep))
                    .bind(PRUNE_CHUNK)
                    .execute(&self.pool)
                    .await?;
                deleted += done.rows_affected();
                if done.rows_affected() < PRUNE_CHUNK as u64 {
                    break;
                }
                tokio::task::yield_now().await;
            }
        }
        Ok(deleted)
    }

    /// Newest rows first, at most `limit`, optionally only ids below `before_id`.
    pub async fn list_attempts(
        &self,
        limit: u32,
        before_id: Option<i64>,
    ) -> StoreResult<Vec<RequestLogEntryView>> {
        let rows = sqlx::query(select_rows!("WHERE id < $1 ORDER BY id DESC LIMIT $2"))
            .bind(before_id.unwrap_or(i64::MAX))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| row_view(r).map_err(Into::into)).collect()
    }

    /// The attempts of one client request, in order.
    pub async fn list_attempts_of(&self, request_id: &str) -> StoreResult<Vec<RequestLogEntryView>> {
        let rows = sqlx::query(select_rows!("WHERE request_id = $1 ORDER BY id"))
            .bind(request_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| row_view(r).map_err(Into::into)).collect()
    }

    /// The newest failed attempts, at most `limit`.
    pub async fn list_failed_attempts(&self, limit: u32) -> StoreResult<Vec<RequestLogEntryView>> {
        let rows = sqlx::query(select_rows!("WHERE error_kind IS NOT NULL ORDER BY id DESC LIMIT $1"))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(|r| row_view(r).map_err(Into::into)).collect()
    }
}

fn row_view(row: &sqlx::any::AnyRow) -> Result<RequestLogEntryView, sqlx::Error> {
    let status: Option<i64> = row.try_get("status")?;
    let latency: i64 = row.try_get("latency_ms")?;
    let id: i64 = row.try_get("id")?;
    let bytes: i64 = row.try_get("bytes")?;
    Ok(RequestLogEntryView {
        id: id as f64,
        at: UnixMillis(row.try_get("at")?),
        request_id: row.try_get("request_id")?,
        api_key_id: row.try_get("api_key_id")?,
        route: row.try_get("route")?,
        provider: row.try_get("provider")?,
        connection_id: row.try_get("connection_id")?,
        model: row.try_get("model")?,
        status: status.and_then(|s| u16::try_from(s).ok()),
        latency_ms: u32::try_from(latency).unwrap_or(u32::MAX),
        bytes: bytes as f64,
        error_kind: row.try_get("error_kind")?,
        tokens: tokens_of(row)?,
    })
}

fn tokens_of(row: &sqlx::any::AnyRow) -> Result<Option<TokenUsageView>, sqlx::Error> {
    let get = |name: &str| -> Result<Option<u32>, sqlx::Error> {
        let n: Option<i64> = row.try_get(name)?;
        Ok(n.map(|n| u32::try_from(n).unwrap_or(u32::MAX)))
    };
    let (Some(input), Some(output)) = (get("input_tokens")?, get("output_tokens")?) else { return Ok(None) };
    Ok(Some(TokenUsageView {
        input,
        output,
        cache_read: get("cache_read_tokens")?.unwrap_or(0),
        cache_write: get("cache_write_tokens")?.unwrap_or(0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_types::requests::{RequestOutcome, RequestsQuery, RouteTraceView};

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
                request_id: format!("req-{i:04}"),
                api_key_id: odd.then(|| "key-\"a\"".to_owned()),
                route: "/v1/messages",
                provider: "anthropic".to_owned(),
                connection_id: format!("conn-{}", i % 3),
                model: "claude-ß-\\-☃".to_owned(),
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
                model: attempt.model.clone(),
                status: if odd { 504 } else { 200 },
                outcome: if odd { RequestOutcome::Failed } else { RequestOutcome::Served },
                error_code: odd.then(|| "upstream_timeout".to_owned()),
                connection_id: (!odd).then(|| attempt.connection_id.clone()),
                attempts: 1,
                failed_attempts: u32::from(odd),
                latency_ms: i as u32,
                route_trace: RouteTraceView {
                    resolved_as: format!("alias 'x{i}' → \"y\""),
                    strategy: "priority".to_owned(),
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
        for size in sizes {
            small.write_log(&batch(from, from + size)).await.unwrap_or_else(|e| panic!("{e}"));
            from += size;
        }
        large.write_log(&batch(0, rows)).await.unwrap_or_else(|e| panic!("{e}"));
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
        assert_eq!(trace.resolved_as, "alias 'x3' → \"y\"");
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
        let writer = store.for_log_writer().await.unwrap_or_else(|e| panic!("{e}"));
        let options = writer.pool.options();
        assert_eq!((options.get_min_connections(), options.get_max_connections()), (1, 1));
        assert_eq!((options.get_idle_timeout(), options.get_max_lifetime()), (None, None));
        assert_eq!(store.pool.options().get_max_connections(), 3, "four connections in all");
        // Log rows hold no secret: the writer's retention does not zero whole pages
        // it frees (FAST, 2); the shared pool, which deletes secrets, does (ON, 1).
        async fn secure_delete(pool: &sqlx::AnyPool) -> i64 {
            sqlx::query_scalar("PRAGMA secure_delete").fetch_one(pool).await.unwrap_or_else(|e| panic!("{e}"))
        }
        assert_eq!((secure_delete(&writer.pool).await, secure_delete(&store.pool).await), (2, 1));
        for from in [0, 10, 100] {
            writer.write_log(&batch(from, from + 10 + from)).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let attempts = store.list_attempts(1_000, None).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(attempts.len(), 10 + 20 + 110);
        writer.close().await;
    }

    /// The small batch's transaction is part of its one execute: when a statement
    /// in it fails, nothing of the batch stays and the store goes on writing.
    #[tokio::test]
    async fn a_small_batch_failing_halfway_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
        store.write_log(&batch(0, 10)).await.unwrap_or_else(|e| panic!("{e}"));
        let before = everything(&store).await;
        // The attempts statement goes in, then the client requests' is refused.
        let refuse = "CREATE TRIGGER refuse BEFORE INSERT ON client_requests \
                      BEGIN SELECT RAISE(ABORT, 'refused by the test'); END";
        sqlx::query(refuse).execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        let failed = store.write_log(&batch(10, 20)).await;
        assert!(failed.is_err_and(|e| e.to_string().contains("refused by the test")));
        assert_eq!(everything(&store).await, before, "the failed batch's attempts were undone");
        sqlx::query("DROP TRIGGER refuse").execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        for from in [10, 20] {
            store.write_log(&batch(from, from + 10)).await.unwrap_or_else(|e| panic!("{e}"));
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
        let mut query = bind_attempt(query, &two.attempts[0]).bind(None::<i64>);
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

        store.write_log(&batch(0, 10)).await.unwrap_or_else(|e| panic!("{e}"));
        let before = everything(&store).await;
        let refuse = "CREATE TRIGGER refuse BEFORE INSERT ON request_log WHEN NEW.request_id = 'req-0013' \
                      BEGIN SELECT RAISE(FAIL, 'refused by the test'); END";
        sqlx::query(refuse).execute(&store.pool).await.unwrap_or_else(|e| panic!("{e}"));
        for to in [20, 10 + 2 * SMALL_BATCH] {
            let failed = store.write_log(&batch(10, to)).await;
            assert!(failed.is_err_and(|e| e.to_string().contains("refused by the test")), "{to}");
            assert_eq!(everything(&store).await, before, "rows 10..{to} were undone");
        }
    }
}
