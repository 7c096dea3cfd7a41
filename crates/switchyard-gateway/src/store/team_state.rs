//! `team_state`: the in-memory resilience state team mode also stores, so a
//! replica that starts or reconnects can load it — a connection's model lockouts
//! and its Claude usage-wall state. Written by the announcer; a row only yields to
//! a change at least as recent as its own.

use sqlx::Row;
use switchyard_types::UnixMillis;

use super::{Store, StoreResult};

/// One stored state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamStateRow {
    /// `lockouts` or `wall`.
    pub kind: String,
    /// The connection id.
    pub key: String,
    /// The engine's JSON.
    pub state_json: String,
    /// When the change happened.
    pub updated_at: UnixMillis,
}

impl Store {
    /// Upserts `rows` in one transaction, each unless a later change is stored.
    pub async fn write_team_state(&self, rows: &[TeamStateRow]) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        for r in rows {
            sqlx::query(
                "INSERT INTO team_state (kind, key, state_json, updated_at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (kind, key) DO UPDATE SET state_json = excluded.state_json, \
                 updated_at = excluded.updated_at WHERE team_state.updated_at <= excluded.updated_at",
            )
            .bind(&r.kind)
            .bind(&r.key)
            .bind(&r.state_json)
            .bind(r.updated_at.0)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Every stored state.
    pub async fn load_team_state(&self) -> StoreResult<Vec<TeamStateRow>> {
        let rows = sqlx::query("SELECT kind, key, state_json, updated_at FROM team_state ORDER BY kind, key")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(TeamStateRow {
                    kind: r.try_get("kind")?,
                    key: r.try_get("key")?,
                    state_json: r.try_get("state_json")?,
                    updated_at: UnixMillis(r.try_get("updated_at")?),
                })
            })
            .collect()
    }
}
