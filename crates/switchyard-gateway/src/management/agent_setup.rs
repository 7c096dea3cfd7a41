//! One-click agent setup through the management API (`GET /api/setup`,
//! `POST`/`DELETE /api/setup/{agent}`), the same as `switchyard setup`: make a
//! client key for the agent, write it and this gateway's URL into the agent's own
//! config file ([`crate::setup`]), and undo both exactly.

use std::net::SocketAddr;

use switchyard_types::ErrorCode;
use switchyard_types::api::{AgentSetupResult, AgentSetupView, AgentUndoResult, ApiKeyCreateRequest};

use super::{ManagementService, MgmtResult};
use crate::errors::GatewayError;
use crate::setup::{self, Agent, SetupError};

fn agent(id: &str) -> MgmtResult<Agent> {
    Agent::parse(id).ok_or_else(|| {
        GatewayError::new(
            ErrorCode::NotFound,
            format!("no setup for '{id}'; known agents: claude-code, codex"),
        )
    })
}

fn refused(e: SetupError) -> GatewayError {
    match e {
        SetupError::NothingToUndo { .. } => GatewayError::new(ErrorCode::NotFound, e.to_string()),
        SetupError::Unparsable { .. } | SetupError::ChangedSinceSetup { .. } => {
            GatewayError::new(ErrorCode::Conflict, e.to_string())
        }
        SetupError::Io { .. } => GatewayError::internal(e),
    }
}

impl ManagementService {
    /// The URL agents on this machine reach the gateway at.
    fn local_base_url(&self) -> String {
        match self.listen.parse::<SocketAddr>() {
            Ok(addr) if addr.ip().is_unspecified() => format!("http://127.0.0.1:{}", addr.port()),
            Ok(addr) => format!("http://{addr}"),
            Err(_) => format!("http://{}", self.listen),
        }
    }

    /// `GET /api/setup`: each agent's file and whether Switchyard set it up.
    pub fn agent_setups(&self) -> Vec<AgentSetupView> {
        let env = self.resilience.env();
        [Agent::ClaudeCode, Agent::Codex]
            .into_iter()
            .map(|a| {
                let path = a.config_path(env);
                AgentSetupView {
                    agent: a.id().to_owned(),
                    configured: setup::backup_path(&path).exists(),
                    path: path.display().to_string(),
                }
            })
            .collect()
    }

    /// `POST /api/setup/{agent}`: points the agent at this gateway.
    pub async fn setup_agent(&self, id: &str) -> MgmtResult<AgentSetupResult> {
        let agent = agent(id)?;
        let env = self.resilience.env();
        // Refuse before making a key for a file that cannot be edited.
        setup::check(agent, env).map_err(refused)?;
        let previous = setup::previous_key(agent, env).map_err(refused)?;
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{} setup {}", agent.id(), &suffix[..8]);
        let created = self
            .create_api_key(ApiKeyCreateRequest {
                name: name.clone(),
                key: None,
                scopes: Vec::new(),
                allowed_connections: Vec::new(),
            })
            .await?;
        let Some(secret) = created.secret else {
            return Err(GatewayError::internal("a generated key came back without its secret"));
        };
        let base_url = self.local_base_url();
        let applied = match setup::apply(agent, env, &base_url, &secret, &created.key.id) {
            Ok(applied) => applied,
            Err(e) => {
                // Nothing was written: the key is not needed.
                let _ = self.delete_api_key(&created.key.id).await;
                return Err(refused(e));
            }
        };
        if let Some(old) = previous.filter(|old| *old != created.key.id) {
            // A re-run: the file now holds the new key.
            let _ = self.delete_api_key(&old).await;
        }
        tracing::info!(event = "setup.applied", agent = agent.id(), path = %applied.path.display());
        Ok(AgentSetupResult {
            agent: agent.id().to_owned(),
            path: applied.path.display().to_string(),
            backup_path: applied.backup.display().to_string(),
            base_url,
            key_name: name,
        })
    }

    /// `DELETE /api/setup/{agent}`: puts the agent's file back as it was and
    /// deletes the key made for it. A file edited since setup is refused (409)
    /// unless `force`.
    pub async fn undo_agent_setup(&self, id: &str, force: bool) -> MgmtResult<AgentUndoResult> {
        let agent = agent(id)?;
        let undone = setup::undo(agent, self.resilience.env(), force).map_err(refused)?;
        if let Some(key) = &undone.key_id {
            let _ = self.delete_api_key(key).await;
        }
        tracing::info!(event = "setup.undone", agent = agent.id(), path = %undone.path.display());
        Ok(AgentUndoResult {
            agent: agent.id().to_owned(),
            path: undone.path.display().to_string(),
            restored: undone.restored,
        })
    }
}
