//! OAuth access-token refresh for Claude subscription connections.
//!
//! A token is refreshed shortly before it expires and once after an upstream 401.
//! Refreshes are single-flight per connection: concurrent requests wait on one
//! per-connection lock and then find the fresh token in the routing snapshot, so many
//! requests cause one call to the token endpoint. A refresh the token endpoint
//! rejects is an auth failure of the connection (the engine's cooldown spaces the
//! retries and, after `EXPIRED_RETRY_MAX`, marks it `expired`, SPEC 4.2); a token
//! endpoint that cannot be reached says nothing about the credentials: a token that
//! is still valid keeps being used, an expired one cools the connection without
//! counting toward `expired`. Fail-closed: an expired token is never sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use secrecy::ExposeSecret;
use serde::Deserialize;
use switchyard_types::UnixMillis;

use crate::clock::Clock;
use crate::management::ManagementService;
use crate::routing::{Connection, SharedRouting};

/// Refresh when the token expires within this window.
pub const REFRESH_SKEW_MS: i64 = 5 * 60 * 1000;
/// Time allowed for one call to the token endpoint.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a refresh failed (messages never contain a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshError {
    /// The token endpoint answered and refused (or there is nothing to refresh with).
    Rejected(String),
    /// The token endpoint could not be reached or answered garbage.
    Unreachable(String),
    /// The gateway could not keep the new token.
    Local(String),
}

impl RefreshError {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            RefreshError::Rejected(m) | RefreshError::Unreachable(m) | RefreshError::Local(m) => m,
        }
    }
}

/// The token endpoint's answer.
#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
}

/// Refreshes OAuth tokens, one flight per connection.
pub struct TokenRefresher {
    http: reqwest::Client,
    clock: Arc<dyn Clock>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Whether `conn`'s token has expired (it must not be sent).
pub fn expired(conn: &Connection, now: UnixMillis) -> bool {
    conn.oauth.as_ref().and_then(|o| o.expires_at).is_some_and(|at| at <= now)
}

/// Whether `conn` holds a refreshable token that expires within the skew window.
pub fn needs_refresh(conn: &Connection, now: UnixMillis) -> bool {
    conn.oauth.as_ref().and_then(|o| o.expires_at).is_some_and(|at| at.0 - now.0 <= REFRESH_SKEW_MS)
}

impl TokenRefresher {
    /// A refresher using `http` for the token endpoint.
    pub fn new(http: reqwest::Client, clock: Arc<dyn Clock>) -> TokenRefresher {
        TokenRefresher { http, clock, locks: Mutex::new(HashMap::new()) }
    }

    fn lock_for(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.entry(id.to_owned()).or_default().clone()
    }

    /// Refreshes `stale`'s token unless another request already did, returning the
    /// connection as it now is in the routing snapshot.
    /// Another replica refreshed the token while this one waited for the lock:
    /// the stored expiry moved on and is not due. Reloads it and returns it.
    async fn refreshed_elsewhere(
        &self,
        stale: &Connection,
        stale_expiry: Option<UnixMillis>,
        routing: &SharedRouting,
        management: &ManagementService,
    ) -> Option<Arc<Connection>> {
        let row = management.store().get_connection(&stale.id).await.ok()??;
        let now = self.clock.now_wall();
        let stored = row.token_expires_at?;
        if Some(stored) == stale_expiry || stored.0 - now.0 <= REFRESH_SKEW_MS {
            return None;
        }
        management.reload_from_peer().await.ok()?;
        tracing::info!(event = "oauth.refreshed_by_another_replica", connection = %stale.id);
        routing.load().by_id.get(&*stale.id).cloned()
    }

    pub async fn refresh(
        &self,
        stale: &Arc<Connection>,
        routing: &SharedRouting,
        management: &ManagementService,
    ) -> Result<Arc<Connection>, RefreshError> {
        let lock = self.lock_for(&stale.id);
        let _flight = lock.lock().await;
        let current = routing.load().by_id.get(&*stale.id).cloned();
        if let Some(current) = current
            && !Arc::ptr_eq(&current, stale)
            && !needs_refresh(&current, self.clock.now_wall())
        {
            return Ok(current);
        }
        let Some(oauth) = stale.oauth.as_ref() else {
            return Err(RefreshError::Rejected("the connection has no refresh token".into()));
        };
        // Team mode: one refresh per connection across every replica. Providers
        // that rotate refresh tokens refuse the second use of one, and that refusal
        // would mark the account expired on every replica.
        let replica_lock = match management.store().replica_lock(&format!("oauth-refresh:{}", stale.id)).await
        {
            Ok(lock) => lock,
            Err(e) => {
                tracing::warn!(event = "oauth.refresh_unlocked", connection = %stale.id, error = %e);
                None
            }
        };
        if replica_lock.is_some()
            && let Some(fresh) = self.refreshed_elsewhere(stale, oauth.expires_at, routing, management).await
        {
            return Ok(fresh);
        }
        let body = serde_json::json!({
            "grant_type": "refresh_token",
            "refresh_token": oauth.refresh_token.expose_secret(),
            "client_id": oauth.client_id,
        });
        let sent = self
            .http
            .post(&oauth.token_url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .timeout(TOKEN_TIMEOUT)
            .send()
            .await
            .map_err(|e| {
                RefreshError::Unreachable(format!("token endpoint unreachable: {}", e.without_url()))
            })?;
        let status = sent.status();
        let bytes =
            sent.bytes().await.map_err(|_| RefreshError::Unreachable("token response unreadable".into()))?;
        if status.is_server_error() || status.as_u16() == 429 {
            return Err(RefreshError::Unreachable(format!(
                "token endpoint answered HTTP {}",
                status.as_u16()
            )));
        }
        if !status.is_success() {
            return Err(RefreshError::Rejected(format!("token endpoint answered HTTP {}", status.as_u16())));
        }
        let token: TokenResponse = serde_json::from_slice(&bytes)
            .map_err(|_| RefreshError::Unreachable("token response is not the expected JSON".into()))?;
        let now = self.clock.now_wall();
        let expires_at = token.expires_in.map(|s| now.plus_millis(s.saturating_mul(1000)));
        management
            .store_oauth_tokens(&stale.id, token.access_token, token.refresh_token, expires_at)
            .await
            .map_err(|e| RefreshError::Local(format!("could not store the new token: {}", e.message)))?;
        tracing::info!(event = "oauth.refreshed", connection = %stale.id);
        routing
            .load()
            .by_id
            .get(&*stale.id)
            .cloned()
            .ok_or_else(|| RefreshError::Local("the connection was deleted during the refresh".into()))
    }
}
