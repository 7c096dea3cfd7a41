//! Adding a Claude subscription account from Claude Code's own login on this
//! machine (`~/.claude/.credentials.json`, key `claudeAiOauth`): the one code path
//! behind `switchyard import-claude` and `POST /api/providers/import-claude-login`
//! (the UI's "Import Claude Code login" button). Tokens are read, stored and never
//! returned or printed. (On macOS Claude Code keeps its login in the Keychain, not
//! in this file; there the file must be exported first.)

use std::path::{Path, PathBuf};

use serde::Deserialize;
use switchyard_types::api::{ConnectionCreateRequest, ValidationIssue};
use switchyard_types::{AuthKind, ErrorCode, UnixMillis};

use super::{ConnectionUpsert, ManagementService, MgmtResult};
use crate::errors::GatewayError;

/// The connection id an import uses when none is given.
pub const DEFAULT_ID: &str = "claude-login";

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

/// Where Claude Code keeps its credentials for the current user.
pub fn default_credentials_path() -> PathBuf {
    dirs::home_dir().unwrap_or_else(|| PathBuf::from(".")).join(".claude").join(".credentials.json")
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeLoginImport {
    /// The connection id.
    pub id: String,
    /// Created, updated or unchanged.
    pub change: ConnectionUpsert,
    /// The token's expiry.
    pub expires_at: Option<UnixMillis>,
    /// `pro`, `max`, ... when the file says.
    pub subscription: Option<String>,
}

fn unreadable(message: String) -> GatewayError {
    GatewayError::validation(vec![ValidationIssue { path: "/path".to_owned(), message }])
}

fn read(file: &Path) -> MgmtResult<ClaudeOauth> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        unreadable(format!(
            "cannot read Claude Code's login at {}: {e} (log in with `claude` on this machine first)",
            file.display()
        ))
    })?;
    let creds: CredentialsFile = serde_json::from_str(&text).map_err(|_| {
        unreadable(format!(
            "{} has no readable `claudeAiOauth` login (is it Claude Code's credentials file?)",
            file.display()
        ))
    })?;
    if creds.claude_ai_oauth.access_token.trim().is_empty() {
        return Err(unreadable(format!("{} holds an empty access token", file.display())));
    }
    Ok(creds.claude_ai_oauth)
}

impl ManagementService {
    /// `POST /api/providers/import-claude-login`: the import as the API answers it.
    pub async fn import_claude_login_request(
        &self,
        req: switchyard_types::api::ClaudeLoginImportRequest,
    ) -> MgmtResult<switchyard_types::api::ClaudeLoginImportResult> {
        let file = req.path.map(PathBuf::from).unwrap_or_else(default_credentials_path);
        let id = req.id.unwrap_or_else(|| DEFAULT_ID.to_owned());
        let done = self.import_claude_login(&file, &id, None).await?;
        let change = match done.change {
            ConnectionUpsert::Created => "created",
            ConnectionUpsert::Updated => "updated",
            ConnectionUpsert::Unchanged => "unchanged",
        };
        Ok(switchyard_types::api::ClaudeLoginImportResult {
            change: change.to_owned(),
            subscription: done.subscription,
            connection: self.get_connection(&id).await?,
        })
    }

    /// Creates or refreshes connection `id` from the login in `file`, keeping
    /// everything else an existing connection had (name, priority, options).
    pub async fn import_claude_login(
        &self,
        file: &Path,
        id: &str,
        priority: Option<i32>,
    ) -> MgmtResult<ClaudeLoginImport> {
        let oauth = read(file)?;
        let existing = self.get_connection(id).await.ok();
        if existing.as_ref().is_some_and(|c| c.provider != "anthropic" || c.auth_kind != AuthKind::Oauth) {
            return Err(GatewayError::new(
                ErrorCode::Conflict,
                format!("connection '{id}' exists and is not a Claude account; import under another id"),
            ));
        }
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
        let change = self.upsert_connection(request).await?;
        if change == ConnectionUpsert::Updated {
            // New credentials lift any terminal state the old ones had earned.
            self.resilience.engine.reset_connection(id);
            if let Some(team) = self.control.team() {
                team.connection_reset(id, "anthropic", self.clock.now_wall());
            }
            self.resilience.tests.forget(id);
        }
        Ok(ClaudeLoginImport {
            id: id.to_owned(),
            change,
            expires_at: oauth.expires_at.map(UnixMillis),
            subscription: oauth.subscription_type,
        })
    }
}
