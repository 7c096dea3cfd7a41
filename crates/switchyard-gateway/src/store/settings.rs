//! The `settings` table: typed JSON documents keyed by name.

use sqlx::Row;
use switchyard_types::UnixMillis;

use super::{Store, StoreResult, parse_json, to_json};

impl Store {
    /// Reads a settings document, `None` when never written.
    pub async fn get_setting<T: serde::de::DeserializeOwned>(&self, key: &str) -> StoreResult<Option<T>> {
        let row = sqlx::query("SELECT value_json FROM settings WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            None => Ok(None),
            Some(row) => {
                let text: String = row.try_get("value_json")?;
                parse_json("settings", "value_json", &text).map(Some)
            }
        }
    }

    /// Writes a settings document, leaving the row untouched when equal.
    pub async fn put_setting<T: serde::Serialize>(
        &self,
        key: &str,
        value: &T,
        now: UnixMillis,
    ) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO settings (key, value_json, updated_at) VALUES (?,?,?) \
             ON CONFLICT(key) DO UPDATE SET value_json=excluded.value_json, \
             updated_at=excluded.updated_at WHERE settings.value_json != excluded.value_json",
        )
        .bind(key)
        .bind(to_json(value))
        .bind(now.0)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
