//! The `request_log` table: one row per upstream attempt, bounded retention.

use sqlx::Row;
use switchyard_types::UnixMillis;
use switchyard_types::api::{RequestLogEntryView, TokenUsageView};

use super::{Store, StoreResult};

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

/// Attempt counts over two windows ending now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptCounts {
    /// Attempts in the short window.
    pub recent: u32,
    /// Of those, failed.
    pub recent_failed: u32,
    /// Attempts in the long window.
    pub since: u32,
    /// Of those, failed.
    pub since_failed: u32,
}

impl Store {
    /// Appends a batch of rows in one transaction. One single-row statement, prepared
    /// once and cached by sqlx, serves every row: a multi-row `VALUES` list would have
    /// a different text (and a separately cached statement) for every batch size.
    pub async fn insert_attempts(&self, rows: &[AttemptLogRow]) -> StoreResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.pool.begin().await?;
        for r in rows {
            sqlx::query(
                "INSERT INTO request_log (at, request_id, api_key_id, route, provider, \
                 connection_id, model, status, latency_ms, bytes, error_kind, input_tokens, \
                 output_tokens, cache_read_tokens, cache_write_tokens) \
                 VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)",
            )
            .bind(r.at.0)
            .bind(&r.request_id)
            .bind(&r.api_key_id)
            .bind(r.route)
            .bind(&r.provider)
            .bind(&r.connection_id)
            .bind(&r.model)
            .bind(r.status.map(i64::from))
            .bind(i64::from(r.latency_ms))
            .bind(i64::try_from(r.bytes).unwrap_or(i64::MAX))
            .bind(&r.error_kind)
            .bind(r.tokens.map(|t| i64::from(t.input)))
            .bind(r.tokens.map(|t| i64::from(t.output)))
            .bind(r.tokens.map(|t| i64::from(t.cache_read)))
            .bind(r.tokens.map(|t| i64::from(t.cache_write)))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Deletes all but the newest `keep` rows.
    pub async fn prune_attempts(&self, keep: u32) -> StoreResult<u64> {
        let done = sqlx::query("DELETE FROM request_log WHERE id <= (SELECT MAX(id) FROM request_log) - $1")
            .bind(i64::from(keep))
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
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

    /// Attempts (and failed attempts) started at or after `recent`, and at or after
    /// `since` (`since <= recent`), in one scan of the bounded table (no index on
    /// `at`, to keep inserts cheap): milliseconds.
    pub async fn count_attempts(&self, recent: UnixMillis, since: UnixMillis) -> StoreResult<AttemptCounts> {
        let row = sqlx::query(
            "SELECT CAST(COALESCE(SUM(CASE WHEN at >= $1 THEN 1 ELSE 0 END), 0) AS BIGINT) AS recent, \
                    CAST(COALESCE(SUM(CASE WHEN at >= $2 AND error_kind IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT) \
                      AS recent_failed, \
                    CAST(COUNT(*) AS BIGINT) AS total, CAST(COUNT(error_kind) AS BIGINT) AS failed \
             FROM request_log WHERE at >= $3",
        )
        .bind(recent.0)
        .bind(recent.0)
        .bind(since.0)
        .fetch_one(&self.pool)
        .await?;
        let get = |name: &str| -> StoreResult<u32> {
            let n: i64 = row.try_get(name)?;
            Ok(u32::try_from(n).unwrap_or(u32::MAX))
        };
        Ok(AttemptCounts {
            recent: get("recent")?,
            recent_failed: get("recent_failed")?,
            since: get("total")?,
            since_failed: get("failed")?,
        })
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
