//! The `api_keys` table: client keys, stored as SHA-256 hashes only.

use sqlx::Row;
use switchyard_types::UnixMillis;

use super::{Store, StoreResult, parse_json, to_json};

/// A stored client key (hash only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// Stable id.
    pub id: String,
    /// Unique display name.
    pub name: String,
    /// Hex SHA-256 of the key.
    pub key_hash: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Allowed connection ids; empty = all.
    pub allowed_connections: Vec<String>,
    /// Creation time.
    pub created_at: UnixMillis,
}

fn from_row(row: &sqlx::any::AnyRow) -> StoreResult<ApiKeyRecord> {
    let scopes: String = row.try_get("scopes_json")?;
    let allowed: String = row.try_get("allowed_connections_json")?;
    Ok(ApiKeyRecord {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        key_hash: row.try_get("key_hash")?,
        scopes: parse_json("api_keys", "scopes_json", &scopes)?,
        allowed_connections: parse_json("api_keys", "allowed_connections_json", &allowed)?,
        created_at: UnixMillis(row.try_get("created_at")?),
    })
}

impl Store {
    /// All client keys, by name.
    pub async fn list_api_keys(&self) -> StoreResult<Vec<ApiKeyRecord>> {
        let rows = sqlx::query(
            "SELECT id, name, key_hash, scopes_json, allowed_connections_json, created_at \
             FROM api_keys ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// Inserts a key, or replaces the key with the same name (keeping its id and
    /// creation time).
    pub async fn put_api_key(&self, k: &ApiKeyRecord) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, name, key_hash, scopes_json, allowed_connections_json, \
             created_at) VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT(name) DO UPDATE SET \
             key_hash=excluded.key_hash, scopes_json=excluded.scopes_json, \
             allowed_connections_json=excluded.allowed_connections_json",
        )
        .bind(&k.id)
        .bind(&k.name)
        .bind(&k.key_hash)
        .bind(to_json(&k.scopes))
        .bind(to_json(&k.allowed_connections))
        .bind(k.created_at.0)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Deletes a key by id; returns whether it existed.
    pub async fn delete_api_key(&self, id: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM api_keys WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }
}
