//! `switchyard import-claude`: adds (or updates) a Claude subscription connection from
//! Claude Code's own credentials file (`~/.claude/.credentials.json`, key
//! `claudeAiOauth`). Runs against the data directory without a server; a running
//! gateway picks the change up at its next start. Tokens are never printed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use arc_swap::ArcSwap;
use serde::Deserialize;
use switchyard_types::api::ConnectionCreateRequest;
use switchyard_types::settings::ProcessEnv;
use switchyard_types::{AuthKind, UnixMillis};
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SystemClock};
use crate::management::{ConnectionUpsert, ManagementService};
use crate::resilience::Resilience;
use crate::routing::RoutingTable;
use crate::store::Store;

/// The part of Claude Code's credentials file this reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CredentialsFile {
    claude_ai_oauth: ClaudeOauth,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeOauth {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_at: Option<i64>,
    #[serde(default)]
    subscription_type: Option<String>,
}

/// Where Claude Code keeps its credentials.
pub fn default_credentials_path() -> PathBuf {
    dirs::home_dir().unwrap_or_else(|| PathBuf::from(".")).join(".claude").join(".credentials.json")
}

/// What the import did, for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOutcome {
    /// The connection id.
    pub id: String,
    /// Created, updated or unchanged.
    pub change: ConnectionUpsert,
    /// The token's expiry.
    pub expires_at: Option<UnixMillis>,
    /// `pro`, `max`, ... when the file says.
    pub subscription: Option<String>,
}

/// Imports `file` into the store in `data_dir` as connection `id`.
pub async fn import_claude_credentials(
    data_dir: &Path,
    file: &Path,
    id: &str,
    priority: Option<i32>,
) -> anyhow::Result<ImportOutcome> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let creds: CredentialsFile = serde_json::from_str(&text)
        .with_context(|| format!("{} has no readable `claudeAiOauth` block", file.display()))?;
    let oauth = creds.claude_ai_oauth;
    std::fs::create_dir_all(data_dir).with_context(|| format!("cannot create {}", data_dir.display()))?;
    let store = Store::open(data_dir).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let shutdown = CancellationToken::new();
    let control = crate::control::Control::new(clock.clone());
    let (resilience, persister) = Resilience::start(
        store.clone(),
        clock.clone(),
        Arc::new(ProcessEnv),
        control.clone(),
        shutdown.clone(),
    )
    .await
    .map_err(|e| anyhow::anyhow!(e.message))?;
    let routing = Arc::new(ArcSwap::from_pointee(RoutingTable::default()));
    let wall = Arc::new(switchyard_resilience::claude_wall::ClaudeWall::new());
    let service = ManagementService::new(
        store.clone(),
        routing,
        clock,
        reqwest::Client::new(),
        String::new(),
        resilience,
        wall,
        control,
    );
    service.reload().await.map_err(|e| anyhow::anyhow!(e.message))?;
    let existing = service.get_connection(id).await.ok();
    let request = ConnectionCreateRequest {
        id: Some(id.to_owned()),
        provider: "anthropic".to_owned(),
        api_format: None,
        name: Some(
            existing.as_ref().map_or_else(|| "Claude (Claude Code login)".to_owned(), |c| c.name.clone()),
        ),
        auth_kind: AuthKind::Oauth,
        api_key: None,
        access_token: Some(oauth.access_token),
        refresh_token: oauth.refresh_token,
        expires_at: oauth.expires_at.map(UnixMillis),
        base_url: existing.as_ref().and_then(|c| c.base_url.clone()),
        priority: priority.or(existing.as_ref().map(|c| c.priority)),
        enabled: existing.as_ref().map(|c| c.enabled),
        max_concurrent: existing.as_ref().and_then(|c| c.max_concurrent),
        rate_limit_overrides: existing.as_ref().map(|c| c.rate_limit_overrides.clone()),
        rate_limit_protection: existing.as_ref().and_then(|c| c.rate_limit_protection),
        models: existing.as_ref().map(|c| c.models.clone()),
        provider_specific: existing.as_ref().map(|c| c.provider_specific.clone()),
    };
    let change = service.upsert_connection(request).await.map_err(|e| {
        let issues: Vec<String> = e.issues.iter().map(|i| format!("{}: {}", i.path, i.message)).collect();
        anyhow::anyhow!("{} {}", e.message, issues.join("; "))
    })?;
    if change == ConnectionUpsert::Updated {
        // New credentials lift any terminal state the old ones had earned.
        service.resilience().engine.reset_connection(id);
    }
    shutdown.cancel();
    let _ = persister.await;
    store.close().await;
    Ok(ImportOutcome {
        id: id.to_owned(),
        change,
        expires_at: oauth.expires_at.map(UnixMillis),
        subscription: oauth.subscription_type,
    })
}
