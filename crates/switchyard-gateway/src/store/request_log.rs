//! The `request_log` table: one row per upstream attempt, bounded retention.

use sqlx::Row;
use switchyard_types::UnixMillis;
use switchyard_types::api::{RequestLogEntryView, TokenUsageView};

use std::sync::OnceLock;

use super::client_requests::{REQUEST_INSERT, request_rows};
use super::json_insert::{JsonInsert, JsonRows, Kind};
use super::request_stats::{STATS_INSERT, StatsDelta, stats_rows};
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

/// The attempt rows' insert; each row's array is [`attempt_rows`]'s tuple.
static ATTEMPT_INSERT: JsonInsert = JsonInsert::new(
    "request_log",
    &[
        ("at", Kind::Int),
        ("request_id", Kind::Text),
        ("api_key_id", Kind::Text),
        ("route", Kind::Text),
        ("provider", Kind::Text),
        ("connection_id", Kind::Text),
        ("model", Kind::Text),
        ("status", Kind::Int),
        ("latency_ms", Kind::Int),
        ("bytes", Kind::Int),
        ("error_kind", Kind::Text),
        ("input_tokens", Kind::Int),
        ("output_tokens", Kind::Int),
        ("cache_read_tokens", Kind::Int),
        ("cache_write_tokens", Kind::Int),
    ],
    "",
);

/// The attempts as [`ATTEMPT_INSERT`]'s JSON rows.
async fn attempt_rows(rows: &[AttemptLogRow]) -> Result<String, serde_json::Error> {
    let mut json = JsonRows::new();
    for r in rows {
        let tokens = |f: fn(&TokenUsageView) -> u32| r.tokens.as_ref().map(f);
        json.push((
            r.at.0,
            &r.request_id,
            &r.api_key_id,
            r.route,
            &r.provider,
            &r.connection_id,
            &r.model,
            r.status,
            r.latency_ms,
            i64::try_from(r.bytes).unwrap_or(i64::MAX),
            &r.error_kind,
            tokens(|t| t.input),
            tokens(|t| t.output),
            tokens(|t| t.cache_read),
            tokens(|t| t.cache_write),
        ))
        .await?;
    }
    Ok(json.finish())
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
    /// their per-minute counts land together or not at all. Each table's rows go as
    /// one JSON array in one statement (see `json_insert`); on SQLite the three
    /// statements go in one execute, so a batch is three round trips to the
    /// connection's thread whatever its size.
    pub async fn write_log(&self, batch: &LogBatch) -> StoreResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let unwritable = |source| StoreError::Corrupt { table: "request_log", column: "batch", source };
        let rows = [
            attempt_rows(&batch.attempts).await.map_err(unwritable)?,
            request_rows(&batch.requests).await.map_err(unwritable)?,
            stats_rows(&batch.stats).await.map_err(unwritable)?,
        ];
        let inserts = [&ATTEMPT_INSERT, &REQUEST_INSERT, &STATS_INSERT];
        let mut tx = self.pool.begin().await?;
        match self.backend {
            Backend::Sqlite => {
                static ALL: OnceLock<String> = OnceLock::new();
                let text = ALL.get_or_init(|| {
                    let statements: Vec<String> = inserts
                        .iter()
                        .enumerate()
                        .map(|(i, insert)| insert.text(Backend::Sqlite, i + 1))
                        .collect();
                    statements.join(";\n")
                });
                let [attempts, requests, stats] = rows;
                sqlx::query(sqlx::AssertSqlSafe(text.as_str()))
                    .bind(attempts)
                    .bind(requests)
                    .bind(stats)
                    .execute(&mut *tx)
                    .await?;
            }
            // Postgres takes one statement per execute (its extended protocol).
            Backend::Postgres => {
                for (insert, rows) in inserts.into_iter().zip(rows) {
                    sqlx::query(sqlx::AssertSqlSafe(insert.text(Backend::Postgres, 1)))
                        .bind(rows)
                        .execute(&mut *tx)
                        .await?;
                }
            }
        }
        tx.commit().await?;
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
