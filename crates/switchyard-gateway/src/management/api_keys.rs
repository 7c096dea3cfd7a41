//! Client API key operations. Keys are stored as SHA-256 hashes; a generated key's
//! plaintext is returned once, at creation.

use switchyard_types::ErrorCode;
use switchyard_types::api::{ApiKeyCreateRequest, ApiKeyCreatedResult, ApiKeyView};

use super::validate::{self, Issues, KNOWN_SCOPES};
use super::{ManagementService, MgmtResult};
use crate::errors::GatewayError;
use crate::routing::RoutingTable;
use crate::secrets::{generate_secret, hash_key_hex};
use crate::store::ApiKeyRecord;

/// Prefix of generated client keys.
pub const CLIENT_KEY_PREFIX: &str = "sy-";

fn view(r: &ApiKeyRecord) -> ApiKeyView {
    ApiKeyView {
        id: r.id.clone(),
        name: r.name.clone(),
        scopes: r.scopes.clone(),
        allowed_connections: r.allowed_connections.clone(),
        created_at: r.created_at,
    }
}

impl ManagementService {
    /// All client keys (never the keys themselves).
    pub async fn list_api_keys(&self) -> MgmtResult<Vec<ApiKeyView>> {
        Ok(self.store.list_api_keys().await?.iter().map(view).collect())
    }

    async fn checked_key(&self, req: &ApiKeyCreateRequest) -> MgmtResult<()> {
        let issues = key_issues(req, &self.routing.load());
        if issues.is_empty() { Ok(()) } else { Err(GatewayError::validation(issues.0)) }
    }
}

/// Every problem with a key request, checked against `table`.
pub fn key_issues(req: &ApiKeyCreateRequest, table: &RoutingTable) -> Issues {
    let mut issues = Issues::default();
    if req.name.trim().is_empty() || req.name.chars().count() > 64 {
        issues.add("/name", "must be 1–64 characters");
    }
    if let Some(key) = &req.key
        && (key.len() < 16 || key.len() > 256 || key.chars().any(|c| c.is_control() || c == ' '))
    {
        issues.add("/key", "must be 16–256 characters without spaces");
    }
    for (i, scope) in req.scopes.iter().enumerate() {
        if !KNOWN_SCOPES.contains(&scope.as_str()) {
            issues
                .add(format!("/scopes/{i}"), format!("unknown scope; allowed: {}", KNOWN_SCOPES.join(", ")));
        }
    }
    for (i, id) in req.allowed_connections.iter().enumerate() {
        validate::check_connection_id(&mut issues, &format!("/allowedConnections/{i}"), id);
        if !table.by_id.contains_key(id) {
            issues.add(format!("/allowedConnections/{i}"), format!("connection '{id}' does not exist"));
        }
    }
    issues
}

impl ManagementService {
    /// Creates a key; 409 when the name is taken.
    pub async fn create_api_key(&self, req: ApiKeyCreateRequest) -> MgmtResult<ApiKeyCreatedResult> {
        let _writing = self.writing().await;
        self.checked_key(&req).await?;
        let existing = self.store.list_api_keys().await?;
        if existing.iter().any(|k| k.name == req.name) {
            return Err(GatewayError::new(
                ErrorCode::Conflict,
                format!("an API key named '{}' already exists", req.name),
            ));
        }
        let (plain, generated) = match req.key {
            Some(k) => (k, false),
            None => (generate_secret(CLIENT_KEY_PREFIX), true),
        };
        let hash = hash_key_hex(&plain);
        if existing.iter().any(|k| k.key_hash == hash) {
            return Err(GatewayError::new(
                ErrorCode::Conflict,
                "this key is already registered under another name",
            ));
        }
        let record = ApiKeyRecord {
            id: uuid::Uuid::new_v4().to_string(),
            name: req.name,
            key_hash: hash,
            scopes: req.scopes,
            allowed_connections: req.allowed_connections,
            created_at: self.clock.now_wall(),
        };
        self.store.put_api_key(&record).await?;
        self.reload().await?;
        Ok(ApiKeyCreatedResult { key: view(&record), secret: generated.then_some(plain) })
    }

    /// Creates or updates a key by name from the config file (key given in plain,
    /// stored hashed); writes nothing when it already matches. Returns whether
    /// anything changed.
    pub async fn upsert_api_key(&self, req: ApiKeyCreateRequest) -> MgmtResult<bool> {
        let _writing = self.writing().await;
        self.checked_key(&req).await?;
        let Some(plain) = req.key.clone() else {
            return Err(GatewayError::validation(vec![switchyard_types::api::ValidationIssue {
                path: "/key".into(),
                message: "required in the config file".into(),
            }]));
        };
        let hash = hash_key_hex(&plain);
        let existing = self.store.list_api_keys().await?;
        if let Some(other) = existing.iter().find(|k| k.key_hash == hash && k.name != req.name) {
            return Err(GatewayError::new(
                ErrorCode::Conflict,
                format!("api key '{}' reuses the key of '{}'", req.name, other.name),
            ));
        }
        let current = existing.iter().find(|k| k.name == req.name);
        let record = ApiKeyRecord {
            id: current.map_or_else(|| uuid::Uuid::new_v4().to_string(), |c| c.id.clone()),
            name: req.name,
            key_hash: hash,
            scopes: req.scopes,
            allowed_connections: req.allowed_connections,
            created_at: current.map_or_else(|| self.clock.now_wall(), |c| c.created_at),
        };
        if current == Some(&record) {
            return Ok(false);
        }
        self.store.put_api_key(&record).await?;
        self.reload().await?;
        Ok(true)
    }

    /// Deletes a key by id.
    pub async fn delete_api_key(&self, id: &str) -> MgmtResult<()> {
        let _writing = self.writing().await;
        if !self.store.delete_api_key(id).await? {
            return Err(GatewayError::new(ErrorCode::NotFound, format!("API key '{id}' does not exist")));
        }
        self.reload().await
    }
}
