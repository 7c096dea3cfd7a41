//! The `combos` and `aliases` tables.

use sqlx::Row;
use switchyard_types::UnixMillis;
use switchyard_types::api::{ComboStrategy, ComboTarget};

use super::{Store, StoreResult, parse_json, stale_unless, to_json};

/// A stored combo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComboRecord {
    /// Unique name.
    pub name: String,
    /// Strategy.
    pub strategy: ComboStrategy,
    /// Ordered targets.
    pub targets: Vec<ComboTarget>,
    /// Creation time.
    pub created_at: UnixMillis,
    /// Last change.
    pub updated_at: UnixMillis,
    /// Incremented by every write (assigned by the store).
    pub version: i64,
}

/// A stored alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasRecord {
    /// The name clients send.
    pub alias: String,
    /// What it routes to.
    pub target: String,
    /// Incremented by every write (assigned by the store).
    pub version: i64,
}

impl Store {
    /// All combos, by name.
    pub async fn list_combos(&self) -> StoreResult<Vec<ComboRecord>> {
        let rows = sqlx::query(
            "SELECT name, strategy, targets_json, created_at, updated_at, version FROM combos ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let targets: String = row.try_get("targets_json")?;
                let strategy: String = row.try_get("strategy")?;
                Ok(ComboRecord {
                    name: row.try_get("name")?,
                    strategy: parse_json("combos", "strategy", &format!("\"{strategy}\""))?,
                    targets: parse_json("combos", "targets_json", &targets)?,
                    created_at: UnixMillis(row.try_get("created_at")?),
                    updated_at: UnixMillis(row.try_get("updated_at")?),
                    version: row.try_get("version")?,
                })
            })
            .collect()
    }

    /// Inserts or replaces a combo (keeping its creation time), incrementing its
    /// version; with `expected`, only an existing combo at that version (see
    /// [`Store::put_connection`]).
    pub async fn put_combo(&self, c: &ComboRecord, expected: Option<i64>) -> StoreResult<()> {
        let strategy = to_json(&c.strategy);
        let done = sqlx::query(
            "INSERT INTO combos (name, strategy, targets_json, created_at, updated_at) \
             SELECT $1,$2,$3,$4,$5 WHERE $6 IS NULL OR EXISTS (SELECT 1 FROM combos WHERE name = $1) \
             ON CONFLICT(name) DO UPDATE SET strategy=excluded.strategy, \
             targets_json=excluded.targets_json, updated_at=excluded.updated_at, \
             version=combos.version + 1 WHERE $6 IS NULL OR combos.version = $6",
        )
        .bind(&c.name)
        .bind(strategy.trim_matches('"'))
        .bind(to_json(&c.targets))
        .bind(c.created_at.0)
        .bind(c.updated_at.0)
        .bind(expected)
        .execute(&self.pool)
        .await?;
        stale_unless(done.rows_affected(), || format!("combo '{}'", c.name), expected)
    }

    /// Deletes a combo; returns whether it existed.
    pub async fn delete_combo(&self, name: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM combos WHERE name = $1").bind(name).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    /// All aliases, by name.
    pub async fn list_aliases(&self) -> StoreResult<Vec<AliasRecord>> {
        let rows = sqlx::query("SELECT alias, target, version FROM aliases ORDER BY alias")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(AliasRecord {
                    alias: row.try_get("alias")?,
                    target: row.try_get("target")?,
                    version: row.try_get("version")?,
                })
            })
            .collect()
    }

    /// Inserts or replaces an alias, incrementing its version; with `expected`, only
    /// an existing alias at that version (see [`Store::put_connection`]).
    pub async fn put_alias(
        &self,
        a: &AliasRecord,
        now: UnixMillis,
        expected: Option<i64>,
    ) -> StoreResult<()> {
        let done = sqlx::query(
            "INSERT INTO aliases (alias, target, created_at) \
             SELECT $1,$2,$3 WHERE $4 IS NULL OR EXISTS (SELECT 1 FROM aliases WHERE alias = $1) \
             ON CONFLICT(alias) DO UPDATE SET target=excluded.target, version=aliases.version + 1 \
             WHERE $4 IS NULL OR aliases.version = $4",
        )
        .bind(&a.alias)
        .bind(&a.target)
        .bind(now.0)
        .bind(expected)
        .execute(&self.pool)
        .await?;
        stale_unless(done.rows_affected(), || format!("alias '{}'", a.alias), expected)
    }

    /// Deletes an alias; returns whether it existed.
    pub async fn delete_alias(&self, alias: &str) -> StoreResult<bool> {
        let done =
            sqlx::query("DELETE FROM aliases WHERE alias = $1").bind(alias).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }
}
