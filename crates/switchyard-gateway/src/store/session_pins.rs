//! `session_pins`: the session-affinity table's stored copy (SPEC §4.4), written
//! in batches by the affinity writer and read once at start.

use sqlx::Row;
use switchyard_types::UnixMillis;

use super::{Store, StoreResult};

/// One stored pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRow {
    /// The session hash.
    pub session_key: String,
    /// Provider id.
    pub provider: String,
    /// Connection id.
    pub connection_id: String,
    /// When it was pinned there.
    pub pinned_at: UnixMillis,
    /// The session's last request.
    pub last_seen_at: UnixMillis,
}

impl Store {
    /// Upserts `pins`, deletes `gone` (session, provider) rows and rows last seen
    /// before `expired_before`, in one transaction.
    pub async fn write_session_pins(
        &self,
        pins: &[PinRow],
        gone: &[(String, String)],
        expired_before: Option<UnixMillis>,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        for p in pins {
            sqlx::query(
                "INSERT INTO session_pins (session_key, provider, connection_id, pinned_at, last_seen_at) \
                 VALUES ($1,$2,$3,$4,$5) ON CONFLICT(session_key, provider) DO UPDATE SET \
                 connection_id=excluded.connection_id, pinned_at=excluded.pinned_at, \
                 last_seen_at=excluded.last_seen_at",
            )
            .bind(&p.session_key)
            .bind(&p.provider)
            .bind(&p.connection_id)
            .bind(p.pinned_at.0)
            .bind(p.last_seen_at.0)
            .execute(&mut *tx)
            .await?;
        }
        for (session, provider) in gone {
            sqlx::query("DELETE FROM session_pins WHERE session_key = $1 AND provider = $2")
                .bind(session)
                .bind(provider)
                .execute(&mut *tx)
                .await?;
        }
        if let Some(before) = expired_before {
            sqlx::query("DELETE FROM session_pins WHERE last_seen_at <= $1")
                .bind(before.0)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Deletes the stored pins on `connection`, or all; also those of sessions no
    /// longer in memory. Returns how many rows went.
    pub async fn delete_session_pins(&self, connection: Option<&str>) -> StoreResult<u64> {
        let done = match connection {
            Some(id) => {
                sqlx::query("DELETE FROM session_pins WHERE connection_id = $1")
                    .bind(id)
                    .execute(&self.pool)
                    .await?
            }
            None => sqlx::query("DELETE FROM session_pins").execute(&self.pool).await?,
        };
        Ok(done.rows_affected())
    }

    /// The `limit` most recently seen pins.
    pub async fn session_pins(&self, limit: usize) -> StoreResult<Vec<PinRow>> {
        let rows = sqlx::query(
            "SELECT session_key, provider, connection_id, pinned_at, last_seen_at FROM session_pins \
             ORDER BY last_seen_at DESC LIMIT $1",
        )
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .iter()
            .map(|r| PinRow {
                session_key: r.get("session_key"),
                provider: r.get("provider"),
                connection_id: r.get("connection_id"),
                pinned_at: UnixMillis(r.get("pinned_at")),
                last_seen_at: UnixMillis(r.get("last_seen_at")),
            })
            .collect())
    }
}
