//! The `combos` and `aliases` tables.

use sqlx::Row;
use switchyard_types::UnixMillis;
use switchyard_types::api::{ComboStrategy, ComboTarget};

use super::{Store, StoreResult, parse_json, to_json};

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
}

/// A stored alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasRecord {
    /// The name clients send.
    pub alias: String,
    /// What it routes to.
    pub target: String,
}

impl Store {
    /// All combos, by name.
    pub async fn list_combos(&self) -> StoreResult<Vec<ComboRecord>> {
        let rows = sqlx::query(
            "SELECT name, strategy, targets_json, created_at, updated_at FROM combos ORDER BY name",
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
                })
            })
            .collect()
    }

    /// Inserts or replaces a combo (keeping its creation time).
    pub async fn put_combo(&self, c: &ComboRecord) -> StoreResult<()> {
        let strategy = to_json(&c.strategy);
        sqlx::query(
            "INSERT INTO combos (name, strategy, targets_json, created_at, updated_at) \
             VALUES (?,?,?,?,?) ON CONFLICT(name) DO UPDATE SET strategy=excluded.strategy, \
             targets_json=excluded.targets_json, updated_at=excluded.updated_at",
        )
        .bind(&c.name)
        .bind(strategy.trim_matches('"'))
        .bind(to_json(&c.targets))
        .bind(c.created_at.0)
        .bind(c.updated_at.0)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Deletes a combo; returns whether it existed.
    pub async fn delete_combo(&self, name: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM combos WHERE name = ?").bind(name).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    /// All aliases, by name.
    pub async fn list_aliases(&self) -> StoreResult<Vec<AliasRecord>> {
        let rows =
            sqlx::query("SELECT alias, target FROM aliases ORDER BY alias").fetch_all(&self.pool).await?;
        rows.iter()
            .map(|row| Ok(AliasRecord { alias: row.try_get("alias")?, target: row.try_get("target")? }))
            .collect()
    }

    /// Inserts or replaces an alias.
    pub async fn put_alias(&self, a: &AliasRecord, now: UnixMillis) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO aliases (alias, target, created_at) VALUES (?,?,?) \
             ON CONFLICT(alias) DO UPDATE SET target=excluded.target",
        )
        .bind(&a.alias)
        .bind(&a.target)
        .bind(now.0)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Deletes an alias; returns whether it existed.
    pub async fn delete_alias(&self, alias: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM aliases WHERE alias = ?").bind(alias).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }
}
