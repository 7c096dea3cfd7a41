//! The `client_requests` table: one row per client request with its final outcome
//! and route (the agent's view); the attempts stay in `request_log`.

use std::sync::Arc;

use sqlx::Row;
use sqlx::any::AnyRow;
use switchyard_types::UnixMillis;
use switchyard_types::requests::{RequestEntryView, RequestOutcome, RequestsQuery, RouteTraceView};

use super::multi_insert::{LogValues, MultiInsert};
use super::{Store, StoreError, StoreResult};

/// The client requests' insert.
pub(super) static REQUEST_INSERT: MultiInsert = MultiInsert::new(
    "INSERT INTO client_requests (request_id, at, api_key_id, route, model, status, outcome, error_code, \
     connection_id, attempts, failed_attempts, latency_ms, route_json) VALUES ",
    13,
    " ON CONFLICT (request_id) DO NOTHING",
);

/// One client request, as written by the log writer.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLogRow {
    /// Request id (shared with its attempts).
    pub request_id: Arc<str>,
    /// Arrival.
    pub at: UnixMillis,
    /// Client key id.
    pub api_key_id: Option<Arc<str>>,
    /// Client route.
    pub route: &'static str,
    /// The model the client named.
    pub model: String,
    /// The status the client received.
    pub status: u16,
    /// How it ended.
    pub outcome: RequestOutcome,
    /// The gateway's error code, when it answered the error itself.
    pub error_code: Option<String>,
    /// The connection that served it, or was tried last.
    pub connection_id: Option<Arc<str>>,
    /// Upstream attempts.
    pub attempts: u32,
    /// Of those, failed.
    pub failed_attempts: u32,
    /// Until the answer's headers, ms.
    pub latency_ms: u32,
    /// Why it went where it went.
    pub route_trace: RouteTraceView,
}

/// Binds `r` as one row of [`REQUEST_INSERT`] (the route trace as JSON text).
pub(super) fn bind_request<Q: LogValues>(query: Q, r: RequestLogRow) -> Q {
    let trace = serde_json::to_string(&r.route_trace).unwrap_or_else(|_| "{}".to_owned());
    query
        .shared(r.request_id)
        .int(r.at.0)
        .opt_shared(r.api_key_id)
        .word(r.route)
        .text(r.model)
        .int(i64::from(r.status))
        .word(outcome_name(r.outcome))
        .opt_text(r.error_code)
        .opt_shared(r.connection_id)
        .int(i64::from(r.attempts))
        .int(i64::from(r.failed_attempts))
        .int(i64::from(r.latency_ms))
        .text(trace)
}

fn outcome_name(o: RequestOutcome) -> &'static str {
    match o {
        RequestOutcome::Served => "served",
        RequestOutcome::ServedAfterFailover => "served-after-failover",
        RequestOutcome::UpstreamRejected => "upstream-rejected",
        RequestOutcome::RefusedByGateway => "refused-by-gateway",
        RequestOutcome::Failed => "failed",
        RequestOutcome::Cancelled => "cancelled",
    }
}

fn outcome_of(s: &str) -> RequestOutcome {
    match s {
        "served" => RequestOutcome::Served,
        "served-after-failover" => RequestOutcome::ServedAfterFailover,
        "upstream-rejected" => RequestOutcome::UpstreamRejected,
        "refused-by-gateway" => RequestOutcome::RefusedByGateway,
        "cancelled" => RequestOutcome::Cancelled,
        _ => RequestOutcome::Failed,
    }
}

const COLUMNS: &str = "request_id, at, api_key_id, route, model, status, outcome, error_code, connection_id, \
                       attempts, latency_ms";

fn entry(r: &AnyRow) -> RequestEntryView {
    let int = |name: &str| u32::try_from(r.get::<i64, _>(name)).unwrap_or(0);
    RequestEntryView {
        request_id: r.get("request_id"),
        at: UnixMillis(r.get("at")),
        api_key_id: r.get("api_key_id"),
        route: r.get("route"),
        model: r.get("model"),
        status: u16::try_from(r.get::<i64, _>("status")).unwrap_or(0),
        outcome: outcome_of(r.get::<&str, _>("outcome")),
        error_code: r.get("error_code"),
        connection: r.get("connection_id"),
        attempts: int("attempts"),
        latency_ms: int("latency_ms"),
    }
}

impl Store {
    /// Requests matching `q`, newest first.
    pub async fn list_requests(&self, q: &RequestsQuery) -> StoreResult<Vec<RequestEntryView>> {
        /// A bound value of the filter.
        enum Value {
            Text(String),
            Int(i64),
        }
        // Every value is bound; only fixed fragments are spliced into the text.
        // Placeholders are numbered in the order their values are bound.
        let mut values: Vec<Value> = Vec::new();
        let mut bind = |v: Value| {
            values.push(v);
            format!("${}", values.len())
        };
        let mut sql = format!("SELECT {COLUMNS} FROM client_requests WHERE 1=1");
        if let Some(before) = &q.before {
            let p = bind(Value::Text(before.clone()));
            sql.push_str(&format!(" AND id < (SELECT id FROM client_requests WHERE request_id = {p})"));
        }
        match q.status.as_deref() {
            None => {}
            Some("ok") => sql.push_str(" AND status BETWEEN 200 AND 299"),
            Some("error") => sql.push_str(" AND status NOT BETWEEN 200 AND 299"),
            Some(code) => {
                let p = bind(Value::Int(code.parse::<i64>().unwrap_or(-1)));
                sql.push_str(&format!(" AND status = {p}"));
            }
        }
        for (column, value) in [("connection_id", &q.connection), ("model", &q.model), ("api_key_id", &q.key)]
        {
            if let Some(v) = value {
                let p = bind(Value::Text(v.clone()));
                sql.push_str(&format!(" AND {column} = {p}"));
            }
        }
        if let Some(since) = q.since {
            let p = bind(Value::Int(since.0));
            sql.push_str(&format!(" AND at >= {p}"));
        }
        if let Some(until) = q.until {
            let p = bind(Value::Int(until.0));
            sql.push_str(&format!(" AND at < {p}"));
        }
        let p = bind(Value::Int(i64::from(q.limit.unwrap_or(100).clamp(1, 1000))));
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {p}"));
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for v in values {
            query = match v {
                Value::Text(t) => query.bind(t),
                Value::Int(i) => query.bind(i),
            };
        }
        let rows = query.fetch_all(&self.pool).await?;
        Ok(rows.iter().map(entry).collect())
    }

    /// One request and its route.
    pub async fn get_request(
        &self,
        request_id: &str,
    ) -> StoreResult<Option<(RequestEntryView, RouteTraceView)>> {
        let sql = format!("SELECT {COLUMNS}, route_json FROM client_requests WHERE request_id = $1");
        let Some(row) =
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(request_id).fetch_optional(&self.pool).await?
        else {
            return Ok(None);
        };
        let trace: RouteTraceView =
            serde_json::from_str(row.get::<&str, _>("route_json")).map_err(|source| StoreError::Corrupt {
                table: "client_requests",
                column: "route_json",
                source,
            })?;
        Ok(Some((entry(&row), trace)))
    }
}
