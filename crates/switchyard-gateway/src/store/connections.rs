//! The `connections` table: one row per provider account or key, secrets included.

use serde_json::Value;
use sqlx::Row;
use switchyard_types::api::RateLimitOverrides;
use switchyard_types::{ApiFormat, AuthKind, UnixMillis};

use super::{Store, StoreResult, parse_json, stale_unless, to_json};

/// A full connection row, credentials included. Never leaves the gateway: the API
/// converts it into a `ConnectionView`.
#[derive(Clone, PartialEq)]
pub struct ConnectionRecord {
    /// Stable id.
    pub id: String,
    /// Provider id.
    pub provider: String,
    /// Upstream wire format.
    pub api_format: ApiFormat,
    /// Display name.
    pub name: String,
    /// Authentication kind.
    pub auth_kind: AuthKind,
    /// API key (api_key auth).
    pub api_key: Option<String>,
    /// OAuth access token.
    pub access_token: Option<String>,
    /// OAuth refresh token.
    pub refresh_token: Option<String>,
    /// OAuth token expiry.
    pub token_expires_at: Option<UnixMillis>,
    /// Base URL override.
    pub base_url: Option<String>,
    /// Lower first.
    pub priority: i32,
    /// Routable at all.
    pub enabled: bool,
    /// Concurrency cap.
    pub max_concurrent: Option<u32>,
    /// Per-model caps and per-connection queue budgets.
    pub rate_limit_overrides: RateLimitOverrides,
    /// Rate-limit protection forced on (`Some(true)`); `None` follows the settings.
    pub rate_limit_protection: Option<bool>,
    /// Model catalogue.
    pub models: Vec<String>,
    /// Provider-specific options (a JSON object).
    pub provider_specific: Value,
    /// Creation time.
    pub created_at: UnixMillis,
    /// Last change.
    pub updated_at: UnixMillis,
    /// Incremented by every write (read-only here: the store assigns it).
    pub version: i64,
}

impl std::fmt::Debug for ConnectionRecord {
    // Hand-written so credentials can never reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionRecord")
            .field("id", &self.id)
            .field("provider", &self.provider)
            .field("api_format", &self.api_format)
            .field("auth_kind", &self.auth_kind)
            .field("base_url", &self.base_url)
            .field("priority", &self.priority)
            .field("enabled", &self.enabled)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

fn format_from_str(s: &str) -> ApiFormat {
    ApiFormat::parse(s).unwrap_or(ApiFormat::Openai)
}

fn auth_from_str(s: &str) -> AuthKind {
    match s {
        "oauth" => AuthKind::Oauth,
        "none" => AuthKind::None,
        _ => AuthKind::ApiKey,
    }
}

const COLUMNS: &str = "id, provider, api_format, name, auth_kind, api_key, access_token, \
     refresh_token, token_expires_at, base_url, priority, enabled, max_concurrent, \
     models_json, provider_specific_json, created_at, updated_at, rate_limit_overrides_json, \
     rate_limit_protection";

fn from_row(row: &sqlx::any::AnyRow) -> StoreResult<ConnectionRecord> {
    let models: String = row.try_get("models_json")?;
    let specific: String = row.try_get("provider_specific_json")?;
    let max_concurrent: Option<i64> = row.try_get("max_concurrent")?;
    let overrides: String = row.try_get("rate_limit_overrides_json")?;
    Ok(ConnectionRecord {
        id: row.try_get("id")?,
        provider: row.try_get("provider")?,
        api_format: format_from_str(row.try_get::<&str, _>("api_format")?),
        name: row.try_get("name")?,
        auth_kind: auth_from_str(row.try_get::<&str, _>("auth_kind")?),
        api_key: row.try_get("api_key")?,
        access_token: row.try_get("access_token")?,
        refresh_token: row.try_get("refresh_token")?,
        token_expires_at: row.try_get::<Option<i64>, _>("token_expires_at")?.map(UnixMillis),
        base_url: row.try_get("base_url")?,
        priority: i32::try_from(row.try_get::<i64, _>("priority")?).unwrap_or(0),
        enabled: row.try_get::<i64, _>("enabled")? != 0,
        max_concurrent: max_concurrent.and_then(|v| u32::try_from(v).ok()),
        rate_limit_overrides: parse_json("connections", "rate_limit_overrides_json", &overrides)?,
        rate_limit_protection: row
            .try_get::<Option<i64>, _>("rate_limit_protection")?
            .filter(|on| *on != 0)
            .map(|_| true),
        models: parse_json("connections", "models_json", &models)?,
        provider_specific: parse_json("connections", "provider_specific_json", &specific)?,
        created_at: UnixMillis(row.try_get("created_at")?),
        updated_at: UnixMillis(row.try_get("updated_at")?),
        version: row.try_get("version")?,
    })
}

impl Store {
    /// All connections, in routing order (priority, then id).
    pub async fn list_connections(&self) -> StoreResult<Vec<ConnectionRecord>> {
        let sql = format!("SELECT {COLUMNS}, version FROM connections ORDER BY priority, id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&self.pool).await?;
        rows.iter().map(from_row).collect()
    }

    /// One connection by id.
    pub async fn get_connection(&self, id: &str) -> StoreResult<Option<ConnectionRecord>> {
        let sql = format!("SELECT {COLUMNS}, version FROM connections WHERE id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(from_row).transpose()
    }

    /// Inserts or replaces a connection row as a whole, incrementing its version.
    /// With `expected`, only an existing row at that version is replaced (a
    /// compare-and-swap in one statement, so it holds across processes too); a row
    /// at another version, or gone, is [`StoreError::Stale`].
    pub async fn put_connection(&self, c: &ConnectionRecord, expected: Option<i64>) -> StoreResult<()> {
        let sql = format!(
            "INSERT INTO connections ({COLUMNS}) \
             SELECT $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$19,$20 \
             WHERE $18 IS NULL OR EXISTS (SELECT 1 FROM connections WHERE id = $1) \
             ON CONFLICT(id) DO UPDATE SET provider=excluded.provider, \
             api_format=excluded.api_format, name=excluded.name, auth_kind=excluded.auth_kind, \
             api_key=excluded.api_key, access_token=excluded.access_token, \
             refresh_token=excluded.refresh_token, token_expires_at=excluded.token_expires_at, \
             base_url=excluded.base_url, priority=excluded.priority, enabled=excluded.enabled, \
             max_concurrent=excluded.max_concurrent, models_json=excluded.models_json, \
             provider_specific_json=excluded.provider_specific_json, \
             rate_limit_overrides_json=excluded.rate_limit_overrides_json, \
             rate_limit_protection=excluded.rate_limit_protection, \
             updated_at=excluded.updated_at, version=connections.version + 1 \
             WHERE $18 IS NULL OR connections.version = $18"
        );
        let done = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&c.id)
            .bind(&c.provider)
            .bind(c.api_format.as_str())
            .bind(&c.name)
            .bind(c.auth_kind.as_str())
            .bind(&c.api_key)
            .bind(&c.access_token)
            .bind(&c.refresh_token)
            .bind(c.token_expires_at.map(|t| t.0))
            .bind(&c.base_url)
            .bind(i64::from(c.priority))
            .bind(i64::from(c.enabled))
            .bind(c.max_concurrent.map(i64::from))
            .bind(to_json(&c.models))
            .bind(to_json(&c.provider_specific))
            .bind(c.created_at.0)
            .bind(c.updated_at.0)
            .bind(expected)
            .bind(to_json(&c.rate_limit_overrides))
            .bind(c.rate_limit_protection.filter(|on| *on).map(|_| 1_i64))
            .execute(&self.pool)
            .await?;
        stale_unless(done.rows_affected(), || format!("connection '{}'", c.id), expected)
    }

    /// Stores refreshed OAuth tokens without touching the rest of the row or its
    /// version: a token refresh is the gateway's own upkeep, not an edit, so it must
    /// not turn a user's pending edit of the connection into a `412`.
    pub async fn put_oauth_tokens(
        &self,
        id: &str,
        access_token: &str,
        refresh_token: Option<&str>,
        expires_at: Option<UnixMillis>,
        now: UnixMillis,
    ) -> StoreResult<bool> {
        let done = sqlx::query(
            "UPDATE connections SET access_token = $1, refresh_token = COALESCE($2, refresh_token), \
             token_expires_at = COALESCE($3, token_expires_at), updated_at = $4 WHERE id = $5",
        )
        .bind(access_token)
        .bind(refresh_token)
        .bind(expires_at.map(|t| t.0))
        .bind(now.0)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Deletes a connection; returns whether it existed.
    pub async fn delete_connection(&self, id: &str) -> StoreResult<bool> {
        let done = sqlx::query("DELETE FROM connections WHERE id = $1").bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }
}
