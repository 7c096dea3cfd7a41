//! The `request_log` table: one row per upstream attempt, bounded retention. Its
//! rows are written by the log writer's store (`log_store`).

use std::sync::Arc;

use sqlx::Row;
use switchyard_types::UnixMillis;
use switchyard_types::api::{RequestLogEntryView, TokenUsageView};

use super::multi_insert::{LogValues, MultiInsert};
use super::request_stats::StatsDelta;
use super::{RequestLogRow, Store, StoreResult};

/// One attempt, as written by the log writer.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptLogRow {
    /// Attempt start.
    pub at: UnixMillis,
    /// Client request id.
    pub request_id: Arc<str>,
    /// Client key id.
    pub api_key_id: Option<Arc<str>>,
    /// Client route.
    pub route: &'static str,
    /// Provider (the routing snapshot's, shared).
    pub provider: Arc<str>,
    /// Connection (the routing snapshot's, shared).
    pub connection_id: Arc<str>,
    /// Upstream model (the routing plan's, shared).
    pub model: Arc<str>,
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
pub(super) static ATTEMPT_INSERT: MultiInsert = MultiInsert::new(
    "INSERT INTO request_log (at, request_id, api_key_id, route, provider, connection_id, model, status, \
     latency_ms, bytes, error_kind, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens) VALUES ",
    15,
    "",
);

/// Binds `r` as one row of [`ATTEMPT_INSERT`].
pub(super) fn bind_attempt<Q: LogValues>(query: Q, r: AttemptLogRow) -> Q {
    let tokens = r.tokens;
    query
        .int(r.at.0)
        .shared(r.request_id)
        .opt_shared(r.api_key_id)
        .word(r.route)
        .shared(r.provider)
        .shared(r.connection_id)
        .shared(r.model)
        .opt_int(r.status.map(i64::from))
        .int(i64::from(r.latency_ms))
        .int(i64::try_from(r.bytes).unwrap_or(i64::MAX))
        .opt_text(r.error_kind)
        .opt_int(tokens.map(|t| i64::from(t.input)))
        .opt_int(tokens.map(|t| i64::from(t.output)))
        .opt_int(tokens.map(|t| i64::from(t.cache_read)))
        .opt_int(tokens.map(|t| i64::from(t.cache_write)))
}

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
