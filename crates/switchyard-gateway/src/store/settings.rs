//! The `settings` table: typed JSON documents keyed by name, each with a version
//! that every change increments.

use sqlx::Row;
use switchyard_types::UnixMillis;

use super::{Store, StoreError, StoreResult, parse_json, to_json};

impl Store {
    /// Reads a settings document, `None` when never written.
    pub async fn get_setting<T: serde::de::DeserializeOwned>(&self, key: &str) -> StoreResult<Option<T>> {
        Ok(self.get_setting_versioned(key).await?.map(|(value, _)| value))
    }

    /// Reads a settings document and its version (`None` when never written; a
    /// document never written is at version 0).
    pub async fn get_setting_versioned<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> StoreResult<Option<(T, i64)>> {
        let row = sqlx::query("SELECT value_json, version FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            None => Ok(None),
            Some(row) => {
                let text: String = row.try_get("value_json")?;
                let version: i64 = row.try_get("version")?;
                parse_json("settings", "value_json", &text).map(|v| Some((v, version)))
            }
        }
    }

    /// Writes a settings document, leaving the row (and its version) untouched when
    /// equal. With `expected`, the stored document must be at that version (0: not
    /// yet written), else [`StoreError::Stale`]: a compare-and-swap in one
    /// statement, so it holds across processes too.
    pub async fn put_setting<T: serde::Serialize>(
        &self,
        key: &str,
        value: &T,
        now: UnixMillis,
        expected: Option<i64>,
    ) -> StoreResult<()> {
        let json = to_json(value);
        let done = sqlx::query(
            "INSERT INTO settings (key, value_json, updated_at) \
             SELECT $1,$2,$3 WHERE $4 IS NULL OR $4 = 0 OR EXISTS (SELECT 1 FROM settings WHERE key = $1) \
             ON CONFLICT(key) DO UPDATE SET value_json=excluded.value_json, \
             updated_at=excluded.updated_at, version=settings.version + 1 \
             WHERE settings.value_json != excluded.value_json AND ($4 IS NULL OR settings.version = $4)",
        )
        .bind(key)
        .bind(&json)
        .bind(now.0)
        .bind(expected)
        .execute(&self.pool)
        .await?;
        let Some(expected) = expected else { return Ok(()) };
        if done.rows_affected() > 0 {
            return Ok(());
        }
        // Nothing written: either the document was already equal (fine, at the
        // expected version) or another writer moved it on.
        let current = sqlx::query("SELECT value_json, version FROM settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        let (stored, version): (String, i64) = match current {
            Some(row) => (row.try_get("value_json")?, row.try_get("version")?),
            None => (String::new(), 0),
        };
        if version == expected && stored == json {
            return Ok(());
        }
        Err(StoreError::Stale { what: format!("settings document '{key}'"), expected })
    }
}
