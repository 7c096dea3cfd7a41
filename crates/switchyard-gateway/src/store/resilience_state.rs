//! The persisted resilience state: `domain_circuit_breakers` (one row per provider)
//! and `connection_health` (one row per connection), each holding the engine's
//! serialised record. Written by the resilience persister on transitions, read once
//! at start.

use sqlx::Row;
use switchyard_types::UnixMillis;

use super::{Store, StoreResult};

/// One stored row: key, provider (connections only), record JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRow {
    /// Provider id (breakers) or connection id (connections).
    pub key: String,
    /// Provider id.
    pub provider: String,
    /// The engine's record, as JSON.
    pub record_json: String,
    /// When it was written.
    pub updated_at: UnixMillis,
}

/// A write of the persister.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateWrite {
    /// Upsert a provider breaker.
    Breaker {
        /// Provider id.
        provider: String,
        /// State name (`CLOSED`, `OPEN`, ...).
        state: String,
        /// Record JSON.
        record_json: String,
        /// When the transition happened (a stored row only yields to a later one).
        at: UnixMillis,
    },
    /// Upsert a connection's cooldown fields.
    Connection {
        /// Connection id.
        connection: String,
        /// Provider id.
        provider: String,
        /// Record JSON.
        record_json: String,
        /// When the transition happened.
        at: UnixMillis,
    },
}

impl Store {
    /// Applies writes in one transaction. A row is replaced only by a transition
    /// at least as recent as the one it holds: replicas flush in any order (and
    /// retry after an outage), and the stored state must stay the latest decided.
    pub async fn write_resilience_state(&self, writes: &[StateWrite]) -> StoreResult<()> {
        let mut tx = self.pool.begin().await?;
        for w in writes {
            match w {
                StateWrite::Breaker { provider, state, record_json, at } => {
                    sqlx::query(
                        "INSERT INTO domain_circuit_breakers (name, state, record_json, updated_at) \
                         VALUES ($1,$2,$3,$4) ON CONFLICT(name) DO UPDATE SET state=excluded.state, \
                         record_json=excluded.record_json, updated_at=excluded.updated_at \
                         WHERE domain_circuit_breakers.updated_at <= excluded.updated_at",
                    )
                    .bind(provider)
                    .bind(state)
                    .bind(record_json)
                    .bind(at.0)
                    .execute(&mut *tx)
                    .await?;
                }
                StateWrite::Connection { connection, provider, record_json, at } => {
                    sqlx::query(
                        "INSERT INTO connection_health (connection_id, provider, record_json, updated_at) \
                         VALUES ($1,$2,$3,$4) ON CONFLICT(connection_id) DO UPDATE SET \
                         provider=excluded.provider, record_json=excluded.record_json, \
                         updated_at=excluded.updated_at WHERE connection_health.updated_at <= excluded.updated_at",
                    )
                    .bind(connection)
                    .bind(provider)
                    .bind(record_json)
                    .bind(at.0)
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Every stored breaker row.
    pub async fn load_breakers(&self) -> StoreResult<Vec<StateRow>> {
        let rows =
            sqlx::query("SELECT name, record_json, updated_at FROM domain_circuit_breakers ORDER BY name")
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|r| {
                let name: String = r.try_get("name")?;
                Ok(StateRow {
                    provider: name.clone(),
                    key: name,
                    record_json: r.try_get("record_json")?,
                    updated_at: UnixMillis(r.try_get("updated_at")?),
                })
            })
            .collect()
    }

    /// Every stored connection-health row.
    pub async fn load_connection_health(&self) -> StoreResult<Vec<StateRow>> {
        let rows = sqlx::query(
            "SELECT connection_id, provider, record_json, updated_at FROM connection_health ORDER BY connection_id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(StateRow {
                    key: r.try_get("connection_id")?,
                    provider: r.try_get("provider")?,
                    record_json: r.try_get("record_json")?,
                    updated_at: UnixMillis(r.try_get("updated_at")?),
                })
            })
            .collect()
    }
}
