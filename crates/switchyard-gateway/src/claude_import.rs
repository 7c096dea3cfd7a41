//! `switchyard import-claude`: adds (or updates) a Claude subscription connection from
//! Claude Code's own credentials file (`~/.claude/.credentials.json`, key
//! `claudeAiOauth`). Runs against the data directory without a server; a running
//! gateway picks the change up at its next start (the UI's import button changes a
//! running gateway at once: `management::claude_login`). Tokens are never printed.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use arc_swap::ArcSwap;
use switchyard_types::settings::ProcessEnv;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SystemClock};
use crate::management::ManagementService;
use crate::resilience::Resilience;
use crate::routing::RoutingTable;
use crate::store::Store;

pub use crate::management::claude_login::{ClaudeLoginImport as ImportOutcome, default_credentials_path};

/// Imports `file` into the store in `data_dir` as connection `id`.
pub async fn import_claude_credentials(
    data_dir: &Path,
    file: &Path,
    id: &str,
    priority: Option<i32>,
) -> anyhow::Result<ImportOutcome> {
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
        None,
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
    let outcome = service.import_claude_login(file, id, priority).await.map_err(|e| {
        let issues: Vec<String> = e.issues.iter().map(|i| i.message.clone()).collect();
        anyhow::anyhow!("{} {}", e.message, issues.join("; "))
    })?;
    shutdown.cancel();
    let _ = persister.await;
    store.close().await;
    Ok(outcome)
}
