//! The `request_stats` table: per-minute counts of client requests and upstream
//! attempts, kept by the log writer so the Overview's summary reads at most a day
//! of minute rows instead of scanning the log (issue 16).

use std::collections::BTreeMap;

use sqlx::{Any, Row, Transaction};
use switchyard_types::UnixMillis;
use switchyard_types::requests::{RequestCountsView, RequestOutcome};

use super::json_insert::{JsonInsert, json_rows};
use super::{AttemptLogRow, RequestLogRow, Store, StoreResult};

/// Milliseconds per stats bucket.
pub const MINUTE_MS: i64 = 60_000;

/// What one minute adds to the counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MinuteCounts {
    /// Client requests that arrived in the minute.
    pub requests: i64,
    /// Of those, served on the first attempt.
    pub served: i64,
    /// Served after failover.
    pub served_after_failover: i64,
    /// Answered with an error.
    pub request_errors: i64,
    /// Upstream attempts those requests made.
    pub request_attempts: i64,
    /// Of those, failed.
    pub request_failed_attempts: i64,
    /// Attempt rows started in the minute.
    pub attempts: i64,
    /// Of those, failed.
    pub failed_attempts: i64,
}

/// Per-minute additions of one batch of log rows, keyed by the minute's start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsDelta(pub BTreeMap<i64, MinuteCounts>);

fn minute_of(at: UnixMillis) -> i64 {
    at.0.div_euclid(MINUTE_MS) * MINUTE_MS
}

impl StatsDelta {
    /// Counts an attempt row.
    pub fn attempt(&mut self, row: &AttemptLogRow) {
        let m = self.0.entry(minute_of(row.at)).or_default();
        m.attempts += 1;
        m.failed_attempts += i64::from(row.error_kind.is_some());
    }

    /// Counts a client-request row.
    pub fn request(&mut self, row: &RequestLogRow) {
        let m = self.0.entry(minute_of(row.at)).or_default();
        m.requests += 1;
        match row.outcome {
            RequestOutcome::Served => m.served += 1,
            RequestOutcome::ServedAfterFailover => m.served_after_failover += 1,
            _ => m.request_errors += 1,
        }
        m.request_attempts += i64::from(row.attempts);
        m.request_failed_attempts += i64::from(row.failed_attempts);
    }
}

/// Request and attempt counts over the last hour and the last day.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryCounts {
    /// Client requests in the last hour.
    pub clients_last_hour: RequestCountsView,
    /// Client requests in the last day.
    pub clients_last_day: RequestCountsView,
    /// Attempts (all, failed) in the last hour.
    pub attempts_last_hour: (u32, u32),
    /// Attempts (all, failed) in the last day.
    pub attempts_last_day: (u32, u32),
}

/// The per-minute rows' conflict clause: every replica of a team, and every batch,
/// adds to the minute's row.
macro_rules! stats_upsert {
    () => {
        " ON CONFLICT (minute) DO UPDATE SET \
     requests = request_stats.requests + excluded.requests, \
     served = request_stats.served + excluded.served, \
     served_after_failover = request_stats.served_after_failover + excluded.served_after_failover, \
     request_errors = request_stats.request_errors + excluded.request_errors, \
     request_attempts = request_stats.request_attempts + excluded.request_attempts, \
     request_failed_attempts = request_stats.request_failed_attempts + excluded.request_failed_attempts, \
     attempts = request_stats.attempts + excluded.attempts, \
     failed_attempts = request_stats.failed_attempts + excluded.failed_attempts"
    };
}

/// The per-minute additions' upsert from JSON (SQLite, see
/// `LogStore::write_log`; [`Store::add_stats`] on Postgres); each row's array is
/// [`stats_rows`]'s tuple.
pub(super) static STATS_JSON: JsonInsert = JsonInsert::new("request_stats", &STATS_ROW, stats_upsert!());

/// The additions as [`STATS_JSON`]'s rows.
pub(super) fn stats_rows(delta: &StatsDelta) -> Result<String, serde_json::Error> {
    json_rows(delta.0.iter().map(|(&minute, c)| {
        (
            minute,
            c.requests,
            c.served,
            c.served_after_failover,
            c.request_errors,
            c.request_attempts,
            c.request_failed_attempts,
            c.attempts,
            c.failed_attempts,
        )
    }))
}

/// A minute row's columns: the minute, then its counts.
const STATS_ROW: [&str; 9] = [
    "minute",
    "requests",
    "served",
    "served_after_failover",
    "request_errors",
    "request_attempts",
    "request_failed_attempts",
    "attempts",
    "failed_attempts",
];

fn clamp(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

impl Store {
    /// Adds `delta` to its minute rows inside the log writer's transaction (every
    /// replica of a team adds to the same rows).
    pub(super) async fn add_stats(tx: &mut Transaction<'static, Any>, delta: &StatsDelta) -> StoreResult<()> {
        for (&minute, counts) in &delta.0 {
            sqlx::query(concat!(
                "INSERT INTO request_stats (minute, requests, served, served_after_failover, request_errors, \
                 request_attempts, request_failed_attempts, attempts, failed_attempts) \
                 VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
                stats_upsert!()
            ))
            .bind(minute)
            .bind(counts.requests)
            .bind(counts.served)
            .bind(counts.served_after_failover)
            .bind(counts.request_errors)
            .bind(counts.request_attempts)
            .bind(counts.request_failed_attempts)
            .bind(counts.attempts)
            .bind(counts.failed_attempts)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    /// The summary's counts at `now`: the minutes that began within the last hour
    /// and the last 24 hours, the current one included (so a window reaches back up
    /// to a minute further than exact, never shorter).
    pub async fn summary_counts(&self, now: UnixMillis) -> StoreResult<SummaryCounts> {
        const HOUR_MS: i64 = 3_600_000;
        let hour = minute_of(UnixMillis(now.0 - HOUR_MS));
        let day = minute_of(UnixMillis(now.0 - 24 * HOUR_MS));
        let sums: Vec<String> = STATS_ROW[1..]
            .iter()
            .map(|c| {
                format!(
                    "CAST(COALESCE(SUM(CASE WHEN minute >= $1 THEN {c} ELSE 0 END), 0) AS BIGINT) AS h_{c}, \
                     CAST(COALESCE(SUM({c}), 0) AS BIGINT) AS d_{c}"
                )
            })
            .collect();
        let sql = format!("SELECT {} FROM request_stats WHERE minute >= $2", sums.join(", "));
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(hour).bind(day).fetch_one(&self.pool).await?;
        let window = |prefix: &str| -> StoreResult<MinuteCounts> {
            let get = |c: &str| -> StoreResult<i64> {
                Ok(row.try_get::<i64, _>(format!("{prefix}_{c}").as_str())?)
            };
            Ok(MinuteCounts {
                requests: get("requests")?,
                served: get("served")?,
                served_after_failover: get("served_after_failover")?,
                request_errors: get("request_errors")?,
                request_attempts: get("request_attempts")?,
                request_failed_attempts: get("request_failed_attempts")?,
                attempts: get("attempts")?,
                failed_attempts: get("failed_attempts")?,
            })
        };
        let clients = |m: &MinuteCounts| RequestCountsView {
            requests: clamp(m.requests),
            served: clamp(m.served),
            served_after_failover: clamp(m.served_after_failover),
            errors: clamp(m.request_errors),
            attempts: clamp(m.request_attempts),
            failed_attempts: clamp(m.request_failed_attempts),
        };
        let (h, d) = (window("h")?, window("d")?);
        Ok(SummaryCounts {
            clients_last_hour: clients(&h),
            clients_last_day: clients(&d),
            attempts_last_hour: (clamp(h.attempts), clamp(h.failed_attempts)),
            attempts_last_day: (clamp(d.attempts), clamp(d.failed_attempts)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_fall_into_the_minute_they_began_in() {
        assert_eq!(minute_of(UnixMillis(119_999)), 60_000);
        assert_eq!(minute_of(UnixMillis(120_000)), 120_000);
        assert_eq!(minute_of(UnixMillis(-1)), -60_000);
    }
}
