//! The TOML config file: seeds connections, client keys, combos, aliases and gateway
//! settings at start. Import is idempotent (each item is upserted by its id or name
//! and untouched when equal) and all-or-nothing: every item is validated before the
//! first write, so a bad file changes nothing and names every problem.
//!
//! Keys are snake_case, except tables that mirror JSON API documents
//! (`provider_specific`, `[resilience]`), which keep the API's camelCase keys.
//!
//! `[resilience]` is a partial resilience settings document, applied at every start as
//! `PATCH /api/resilience` would apply it (over the stored document, so fields the
//! file does not name keep their stored values), with the same validator and
//! messages; it is written only when it changes the stored document.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use switchyard_types::api::{
    AliasView, ApiKeyCreateRequest, ComboStrategy, ComboTarget, ComboView, ConnectionCreateRequest,
    GatewaySettings, RateLimitOverrides, ValidationIssue,
};
use switchyard_types::settings::{ResilienceSettingsPatch, parse_patch_lenient};
use switchyard_types::{ApiFormat, AuthKind, UnixMillis};

use crate::management::ManagementService;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `[gateway]`.
    #[serde(default)]
    pub gateway: GatewaySection,
    /// `[[api_keys]]`.
    #[serde(default)]
    pub api_keys: Vec<ConfigApiKey>,
    /// `[[connections]]`.
    #[serde(default)]
    pub connections: Vec<ConfigConnection>,
    /// `[[combos]]`.
    #[serde(default)]
    pub combos: Vec<ConfigCombo>,
    /// `[[aliases]]`.
    #[serde(default)]
    pub aliases: Vec<ConfigAlias>,
    /// `[resilience]`: a partial resilience settings document (camelCase keys and
    /// nested tables exactly like the `PATCH /api/resilience` body).
    #[serde(default)]
    pub resilience: Option<Value>,
}

/// `[gateway]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewaySection {
    /// Listen address (the `--listen` flag wins).
    pub listen: Option<String>,
    /// Accept keyless requests from loopback peers.
    pub allow_unauthenticated_loopback: Option<bool>,
}

/// `[[api_keys]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigApiKey {
    /// Unique name.
    pub name: String,
    /// The key, stored hashed.
    pub key: String,
    /// Scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Allowed connection ids; empty = all.
    #[serde(default)]
    pub allowed_connections: Vec<String>,
}

/// `[[connections]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigConnection {
    /// Stable id (required here so re-imports update the same row).
    pub id: String,
    /// Provider id.
    pub provider: String,
    /// Wire format, when the provider does not imply it.
    pub api_format: Option<ApiFormat>,
    /// Display name.
    pub name: Option<String>,
    /// `api_key` (default), `oauth` or `none`.
    #[serde(default = "default_auth")]
    pub auth: AuthKind,
    /// API key.
    pub api_key: Option<String>,
    /// OAuth access token.
    pub access_token: Option<String>,
    /// OAuth refresh token.
    pub refresh_token: Option<String>,
    /// OAuth expiry, Unix ms.
    pub expires_at: Option<i64>,
    /// Base URL override.
    pub base_url: Option<String>,
    /// Lower first.
    pub priority: Option<i32>,
    /// Default true.
    pub enabled: Option<bool>,
    /// Concurrency cap.
    pub max_concurrent: Option<u32>,
    /// `[connections.rate_limit_overrides]`: per-model caps and queue budgets.
    pub rate_limit_overrides: Option<ConfigRateLimits>,
    /// `true` forces rate-limit protection on (SPEC §4.6).
    pub rate_limit_protection: Option<bool>,
    /// Model catalogue.
    pub models: Option<Vec<String>>,
    /// Provider-specific options (camelCase keys).
    pub provider_specific: Option<Value>,
}

/// `[connections.rate_limit_overrides]`, snake_case like the rest of the file:
/// `max_concurrent`, `model_concurrency = { "glm-5" = 1 }`, `max_wait_ms`,
/// `execution_max_wait_ms`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigRateLimits {
    /// A second connection cap (the stricter applies).
    pub max_concurrent: Option<u32>,
    /// Caps per upstream model id.
    #[serde(default)]
    pub model_concurrency: std::collections::BTreeMap<String, u32>,
    /// Queue-wait budget override, ms.
    pub max_wait_ms: Option<u32>,
    /// Execution bound override, ms.
    pub execution_max_wait_ms: Option<u32>,
}

impl ConfigRateLimits {
    fn to_overrides(&self) -> RateLimitOverrides {
        RateLimitOverrides {
            max_concurrent: self.max_concurrent,
            model_concurrency: self.model_concurrency.clone(),
            max_wait_ms: self.max_wait_ms,
            execution_max_wait_ms: self.execution_max_wait_ms,
        }
    }
}

fn default_auth() -> AuthKind {
    AuthKind::ApiKey
}

/// A combo target: `"provider/model"` or `{ model = "...", connection = "..." }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ConfigTarget {
    /// Just the model.
    Model(String),
    /// Model pinned to a connection.
    Pinned(ComboTarget),
}

/// `[[combos]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigCombo {
    /// Name clients send.
    pub name: String,
    /// Strategy (default `priority`).
    #[serde(default = "default_strategy")]
    pub strategy: ComboStrategy,
    /// Ordered targets.
    pub targets: Vec<ConfigTarget>,
}

fn default_strategy() -> ComboStrategy {
    ComboStrategy::Priority
}

/// `[[aliases]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigAlias {
    /// Name clients send.
    pub from: String,
    /// Where it routes.
    pub to: String,
}

/// A config file that could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Reading the file failed.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// Path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The TOML is malformed or has unknown keys.
    #[error("config file {path} is invalid: {message}")]
    Parse {
        /// Path.
        path: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// Items failed validation; nothing was written.
    #[error("config file {path} was not imported (nothing changed):\n  {}", .problems.join("\n  "))]
    Invalid {
        /// Path.
        path: String,
        /// One line per problem, naming the item and field.
        problems: Vec<String>,
    },
}

impl ConfigFile {
    /// Reads and parses a config file.
    pub fn load(path: &Path) -> Result<ConfigFile, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Read { path: shown.clone(), source })?;
        toml::from_str(&text).map_err(|e| ConfigError::Parse { path: shown, message: e.to_string() })
    }

    fn connection_requests(&self) -> Vec<ConnectionCreateRequest> {
        self.connections
            .iter()
            .map(|c| ConnectionCreateRequest {
                id: Some(c.id.clone()),
                provider: c.provider.clone(),
                api_format: c.api_format,
                name: c.name.clone(),
                auth_kind: c.auth,
                api_key: c.api_key.clone(),
                access_token: c.access_token.clone(),
                refresh_token: c.refresh_token.clone(),
                expires_at: c.expires_at.map(UnixMillis),
                base_url: c.base_url.clone(),
                priority: c.priority,
                enabled: c.enabled,
                max_concurrent: c.max_concurrent,
                rate_limit_overrides: c.rate_limit_overrides.as_ref().map(ConfigRateLimits::to_overrides),
                rate_limit_protection: c.rate_limit_protection,
                models: c.models.clone(),
                provider_specific: c.provider_specific.clone(),
            })
            .collect()
    }

    fn key_requests(&self) -> Vec<ApiKeyCreateRequest> {
        self.api_keys
            .iter()
            .map(|k| ApiKeyCreateRequest {
                name: k.name.clone(),
                key: Some(k.key.clone()),
                scopes: k.scopes.clone(),
                allowed_connections: k.allowed_connections.clone(),
            })
            .collect()
    }

    fn combo_views(&self) -> Vec<ComboView> {
        self.combos
            .iter()
            .map(|c| ComboView {
                name: c.name.clone(),
                strategy: c.strategy,
                targets: c
                    .targets
                    .iter()
                    .map(|t| match t {
                        ConfigTarget::Model(m) => {
                            ComboTarget { model: m.clone(), connection: None, weight: None }
                        }
                        ConfigTarget::Pinned(p) => p.clone(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Imports the file: validates every item (against the store as it would be
    /// after the import), then upserts. Returns the number of items changed.
    pub async fn import(&self, path: &Path, service: &ManagementService) -> Result<usize, ConfigError> {
        let connections = self.connection_requests();
        let keys = self.key_requests();
        let combos = self.combo_views();
        let aliases: Vec<AliasView> =
            self.aliases.iter().map(|a| AliasView { from: a.from.clone(), to: a.to.clone() }).collect();
        let mut problems = service.dry_run_import(&connections, &keys, &combos, &aliases).await;
        let resilience = match &self.resilience {
            Some(table) => resilience_change(table, service, &mut problems).await,
            None => None,
        };
        if !problems.is_empty() {
            return Err(ConfigError::Invalid { path: path.display().to_string(), problems });
        }
        let fail = |what: String, e: crate::errors::GatewayError| ConfigError::Invalid {
            path: path.display().to_string(),
            problems: vec![format!("{what}: {}", e.message)],
        };
        // One transaction for the whole file: a crash or a failure half-way leaves
        // the store as it was, never part of the file.
        let batch_store =
            service.store().begin_batch().await.map_err(|e| fail("database".into(), e.into()))?;
        let batch = service.with_store(batch_store.clone());
        let items = Items { connections, keys, combos, aliases, resilience };
        match self.write_all(&batch, items, &fail).await {
            Ok(changed) => {
                drop(batch);
                batch_store.commit_batch().await.map_err(|e| fail("database".into(), e.into()))?;
                // Replaced keys must not linger in the write-ahead log.
                service.store().scrub().await.map_err(|e| fail("database".into(), e.into()))?;
                service.reload().await.map_err(|e| fail("routing".into(), e))?;
                Ok(changed)
            }
            Err(e) => {
                drop(batch);
                batch_store.rollback_batch().await;
                // The snapshot and settings in memory followed the batch; restore them.
                if let Err(reload) = service.reload().await {
                    tracing::warn!(event = "config.reload_after_rollback_failed", error = %reload.message);
                }
                if let Err(reload) = service.resilience().reload_from_store().await {
                    tracing::warn!(event = "config.reload_after_rollback_failed", error = %reload.message);
                }
                Err(e)
            }
        }
    }

    /// Writes every item through `service` (a batch); the number changed.
    async fn write_all(
        &self,
        service: &ManagementService,
        items: Items,
        fail: &dyn Fn(String, crate::errors::GatewayError) -> ConfigError,
    ) -> Result<usize, ConfigError> {
        let mut changed = 0;
        for (i, c) in items.connections.into_iter().enumerate() {
            let outcome =
                service.upsert_connection(c).await.map_err(|e| fail(format!("connections[{i}]"), e))?;
            changed += usize::from(outcome != crate::management::ConnectionUpsert::Unchanged);
        }
        // Keys and combos are checked against the connections just written.
        service.reload_now().await.map_err(|e| fail("routing".into(), e))?;
        for (i, k) in items.keys.into_iter().enumerate() {
            changed +=
                usize::from(service.upsert_api_key(k).await.map_err(|e| fail(format!("api_keys[{i}]"), e))?);
        }
        for (i, c) in items.combos.into_iter().enumerate() {
            let put = service.put_combo(c, None).await.map_err(|e| fail(format!("combos[{i}]"), e))?;
            changed += usize::from(put.changed);
        }
        // Aliases may name the combos just written.
        service.reload_now().await.map_err(|e| fail("routing".into(), e))?;
        for (i, a) in items.aliases.into_iter().enumerate() {
            let put = service.put_alias(a, None).await.map_err(|e| fail(format!("aliases[{i}]"), e))?;
            changed += usize::from(put.changed);
        }
        if let Some(allow) = self.gateway.allow_unauthenticated_loopback {
            let current = service.gateway_settings().await.map_err(|e| fail("gateway".into(), e))?;
            if current.allow_unauthenticated_loopback != allow {
                let settings = GatewaySettings { allow_unauthenticated_loopback: allow };
                service.put_gateway_settings(settings).await.map_err(|e| fail("gateway".into(), e))?;
                changed += 1;
            }
        }
        if let Some(patch) = items.resilience {
            service.resilience_patch(patch, None).await.map_err(|e| fail("resilience".into(), e))?;
            changed += 1;
        }
        Ok(changed)
    }
}

/// What an import writes, validated.
struct Items {
    connections: Vec<ConnectionCreateRequest>,
    keys: Vec<ApiKeyCreateRequest>,
    combos: Vec<ComboView>,
    aliases: Vec<AliasView>,
    resilience: Option<ResilienceSettingsPatch>,
}

/// Checks `[resilience]` the way `PATCH /api/resilience` checks its body (strict
/// parse, merge onto the stored document, validate), naming every bad field: each
/// problem is pushed as `resilience <JSON pointer>: <message>`. Returns the patch when
/// it is valid and would change the stored document.
async fn resilience_change(
    table: &Value,
    service: &ManagementService,
    problems: &mut Vec<String>,
) -> Option<ResilienceSettingsPatch> {
    // The lenient reader runs the strict parser and names every field it rejects,
    // not only the first; any such field still rejects the file.
    let (patch, unreadable) = parse_patch_lenient(table);
    let mut issues: Vec<ValidationIssue> = unreadable.into_iter().map(ValidationIssue::from).collect();
    let mut change = None;
    if let Some(patch) = patch {
        match service.resilience_patch_preview(&patch).await {
            Ok(next) => change = next.map(|_| patch),
            Err(e) if e.issues.is_empty() => {
                issues.push(ValidationIssue { path: String::new(), message: e.message })
            }
            Err(e) => issues.extend(e.issues),
        }
    }
    if issues.is_empty() {
        return change;
    }
    for issue in issues {
        let at = if issue.path.is_empty() { String::new() } else { format!(" {}", issue.path) };
        problems.push(format!("resilience{at}: {}", issue.message));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ConfigFile {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_resilience_table_reads_as_the_api_patch() {
        let file = parse(
            "[resilience]\nsessionAffinityTtlMs = 60000\n\n[resilience.modelLockout]\nenabled = true\n\
             errorCodes = [429, 503]\n\n[resilience.providerBreaker.oauth]\nfailureThreshold = 10\n\n\
             [resilience.requestQueue]\nglobalConcurrentRequests = 8\n\n[resilience.providerConcurrency]\nglm = 2\n",
        );
        let table = file.resilience.unwrap_or_default();
        let (patch, unreadable) = parse_patch_lenient(&table);
        assert!(unreadable.is_empty(), "{unreadable:?}");
        let patch = patch.unwrap_or_default();
        assert_eq!(patch.session_affinity_ttl_ms, Some(60_000));
        let lockout = patch.model_lockout.unwrap_or_default();
        assert_eq!((lockout.enabled, lockout.error_codes), (Some(true), Some(vec![429, 503])));
        let oauth = patch.provider_breaker.and_then(|b| b.oauth).unwrap_or_default();
        assert_eq!(oauth.failure_threshold, Some(10));
        assert_eq!(patch.request_queue.and_then(|q| q.global_concurrent_requests), Some(8));
        assert_eq!(patch.provider_concurrency, Some([("glm".to_owned(), 2)].into_iter().collect()));
    }

    #[test]
    fn every_unreadable_resilience_key_is_named() {
        let file = parse(
            "[resilience.modelLockout]\nbaseCooldown = 5000\nenabled = \"yes\"\n\n\
             [resilience.requestQueue]\nmaxWaitMs = -1\n",
        );
        let (_, unreadable) = parse_patch_lenient(&file.resilience.unwrap_or_default());
        let paths: Vec<&str> = unreadable.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["/modelLockout/baseCooldown", "/modelLockout/enabled", "/requestQueue/maxWaitMs"]);
    }

    #[test]
    fn a_file_without_the_table_has_none() {
        assert!(parse("[gateway]\nlisten = \"127.0.0.1:7821\"\n").resilience.is_none());
    }
}
