//! Connection (provider) operations: list, get, create, patch, delete, test, and the
//! idempotent upsert used by config import.

use std::time::Duration;

use serde_json::{Map, Value};
use switchyard_types::api::{ConnectionCreateRequest, ConnectionPatch, ConnectionTestResult, ConnectionView};
use switchyard_types::{ApiFormat, AuthKind, ErrorCode};

use super::validate::{self, Issues};
use super::{ManagementService, MgmtResult, check_version};
use crate::errors::GatewayError;
use crate::routability::{ConnectionFacts, Inputs, derive};
use crate::routing::Connection;
use crate::routing::connection::{effective_base_url, restore_credentials, without_credentials};
use crate::store::ConnectionRecord;
use switchyard_types::routability::LastTestView;

/// What an upsert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionUpsert {
    /// A new row.
    Created,
    /// An existing row changed.
    Updated,
    /// The row already held exactly this.
    Unchanged,
}

/// The API view of a record (no secrets: a base URL's `user:pass@` shows as `***@`).
pub fn view(r: &ConnectionRecord) -> ConnectionView {
    ConnectionView {
        id: r.id.clone(),
        provider: r.provider.clone(),
        api_format: r.api_format,
        name: r.name.clone(),
        auth_kind: r.auth_kind,
        has_secret: match r.auth_kind {
            AuthKind::ApiKey => r.api_key.is_some(),
            AuthKind::Oauth => r.access_token.is_some(),
            AuthKind::None => false,
        },
        has_refresh_token: r.refresh_token.is_some(),
        token_expires_at: r.token_expires_at,
        base_url: r.base_url.as_deref().map(|url| without_credentials(url).into_owned()),
        effective_base_url: without_credentials(&effective_base_url(r)).into_owned(),
        priority: r.priority,
        enabled: r.enabled,
        max_concurrent: r.max_concurrent,
        rate_limit_overrides: r.rate_limit_overrides.clone(),
        rate_limit_protection: r.rate_limit_protection,
        models: r.models.clone(),
        provider_specific: r.provider_specific.clone(),
        created_at: r.created_at,
        updated_at: r.updated_at,
        claude_wall: None,
        status: switchyard_types::routability::RoutabilityView {
            state: switchyard_types::routability::RoutabilityState::Routable,
            routable: true,
            label: String::new(),
            detail: String::new(),
            until: None,
            locked_models: Vec::new(),
        },
        last_test: None,
        usage: None,
        version: u64::try_from(r.version).unwrap_or(0),
    }
}

/// Whether the usage wall applies to this connection (Claude OAuth).
pub fn is_claude_oauth(r: &ConnectionRecord) -> bool {
    r.auth_kind == AuthKind::Oauth && r.api_format == ApiFormat::Anthropic
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// A new base URL with the masked `***@` the API showed replaced by the credentials
/// `existing` stores (see [`restore_credentials`]).
fn kept_credentials(
    issues: &mut Issues,
    url: Option<String>,
    existing: Option<&ConnectionRecord>,
) -> Option<String> {
    let url = url?;
    let stored = existing.and_then(|e| e.base_url.as_deref());
    match restore_credentials(url.clone(), stored) {
        Ok(url) => Some(url),
        Err(problem) => {
            // Refused as a whole: nothing with the mask in it is written.
            issues.add("/baseUrl", problem);
            Some(url)
        }
    }
}

/// Validates a record as a whole; the same rules serve create, patch and import.
fn check_record(r: &ConnectionRecord, issues: &mut Issues) {
    validate::check_connection_id(issues, "/id", &r.id);
    validate::check_provider(issues, &r.provider);
    validate::check_name(issues, "/name", &r.name);
    validate::check_credentials(issues, r.auth_kind, r.api_key.as_deref(), r.access_token.as_deref());
    validate::check_base_url(issues, &r.provider, r.base_url.as_deref());
    validate::check_max_concurrent(issues, r.max_concurrent);
    validate::check_rate_limit_overrides(issues, &r.rate_limit_overrides);
    validate::check_models(issues, &r.models);
    validate::check_provider_specific(issues, &r.provider_specific);
}

impl ManagementService {
    /// All connections in routing order.
    pub async fn list_connections(&self) -> MgmtResult<Vec<ConnectionView>> {
        let inputs = self.routability_inputs();
        Ok(self.store.list_connections().await?.iter().map(|r| self.full_view(r, &inputs)).collect())
    }

    /// One snapshot of what decides connections' statuses.
    pub(super) fn routability_inputs(&self) -> Inputs {
        Inputs::gather(&self.resilience, &self.claude_wall, self.control.is_paused(), self.clock.now_wall())
    }

    /// The view with live state filled in: its derived status, its last Test, its
    /// usage windows and (Claude accounts) the usage wall.
    fn full_view(&self, r: &ConnectionRecord, inputs: &Inputs) -> ConnectionView {
        let mut v = view(r);
        if is_claude_oauth(r) {
            v.claude_wall = Some(self.claude_wall.view(&r.id, inputs.now));
        }
        v.status = derive(ConnectionFacts { id: &r.id, provider: &r.provider, enabled: r.enabled }, inputs);
        v.last_test = self.resilience.tests.latest(&r.id);
        v.usage = self.resilience.usage.latest(&r.id);
        v
    }

    /// One connection.
    pub async fn get_connection(&self, id: &str) -> MgmtResult<ConnectionView> {
        let inputs = self.routability_inputs();
        self.store.get_connection(id).await?.map(|r| self.full_view(&r, &inputs)).ok_or_else(|| missing(id))
    }

    /// Builds and validates a record from a create request, keeping `created_at`
    /// of an existing row.
    pub(super) fn record_from_request(
        &self,
        req: ConnectionCreateRequest,
        existing: Option<&ConnectionRecord>,
    ) -> MgmtResult<ConnectionRecord> {
        let mut issues = Issues::default();
        let id = req.id.unwrap_or_else(|| {
            format!("{}-{}", req.provider, &uuid::Uuid::new_v4().simple().to_string()[..8])
        });
        let api_format = validate::resolve_format(&mut issues, &req.provider, req.api_format);
        let now = self.clock.now_wall();
        let record = ConnectionRecord {
            name: req.name.unwrap_or_else(|| id.clone()),
            id,
            provider: req.provider,
            api_format,
            auth_kind: req.auth_kind,
            api_key: non_empty(req.api_key),
            access_token: non_empty(req.access_token),
            refresh_token: non_empty(req.refresh_token),
            token_expires_at: req.expires_at,
            base_url: kept_credentials(&mut issues, non_empty(req.base_url), existing),
            priority: req.priority.unwrap_or(0),
            enabled: req.enabled.unwrap_or(true),
            max_concurrent: req.max_concurrent,
            rate_limit_overrides: req.rate_limit_overrides.unwrap_or_default(),
            rate_limit_protection: req.rate_limit_protection.filter(|on| *on),
            models: req.models.unwrap_or_default(),
            provider_specific: req.provider_specific.unwrap_or_else(|| Value::Object(Map::new())),
            created_at: existing.map_or(now, |e| e.created_at),
            updated_at: now,
            // A new row starts at 1; a replaced one is one past the stored version.
            version: existing.map_or(1, |e| e.version + 1),
        };
        check_record(&record, &mut issues);
        if issues.is_empty() { Ok(record) } else { Err(GatewayError::validation(issues.0)) }
    }

    /// Creates a connection; 409 when the id exists.
    pub async fn create_connection(&self, req: ConnectionCreateRequest) -> MgmtResult<ConnectionView> {
        let _writing = self.writing().await;
        if let Some(id) = &req.id
            && self.store.get_connection(id).await?.is_some()
        {
            return Err(GatewayError::new(ErrorCode::Conflict, format!("connection '{id}' already exists")));
        }
        let record = self.record_from_request(req, None)?;
        self.store.put_connection(&record, None).await?;
        self.reload().await?;
        let inputs = self.routability_inputs();
        Ok(self.full_view(&record, &inputs))
    }

    /// Creates or replaces a connection by id, writing nothing when the stored row
    /// already matches (so importing the same config twice changes nothing).
    pub async fn upsert_connection(&self, req: ConnectionCreateRequest) -> MgmtResult<ConnectionUpsert> {
        let _writing = self.writing().await;
        let existing = match &req.id {
            Some(id) => self.store.get_connection(id).await?,
            None => None,
        };
        let mut record = self.record_from_request(req, existing.as_ref())?;
        let outcome = match &existing {
            None => ConnectionUpsert::Created,
            Some(old) => {
                let mut candidate = record.clone();
                candidate.updated_at = old.updated_at;
                candidate.version = old.version;
                if &candidate == old {
                    return Ok(ConnectionUpsert::Unchanged);
                }
                ConnectionUpsert::Updated
            }
        };
        record.created_at = existing.as_ref().map_or(record.created_at, |e| e.created_at);
        self.store.put_connection(&record, existing.as_ref().map(|e| e.version)).await?;
        if outcome == ConnectionUpsert::Updated {
            self.store.scrub().await?;
        }
        self.reload().await?;
        Ok(outcome)
    }

    /// Applies a partial change (`412` when `expected` is not the stored version).
    pub async fn update_connection(
        &self,
        id: &str,
        patch: ConnectionPatch,
        expected: Option<u64>,
    ) -> MgmtResult<ConnectionView> {
        let _writing = self.writing().await;
        let mut r = self.store.get_connection(id).await?.ok_or_else(|| missing(id))?;
        check_version(&format!("connection '{id}'"), expected, r.version)?;
        let before = (r.auth_kind, r.api_key.clone(), r.access_token.clone());
        let mut issues = Issues::default();
        if let Some(v) = patch.name {
            r.name = v;
        }
        if let Some(f) = patch.api_format {
            r.api_format = validate::resolve_format(&mut issues, &r.provider, Some(f));
        }
        if let Some(v) = patch.auth_kind {
            r.auth_kind = v;
        }
        if let Some(v) = patch.api_key {
            r.api_key = non_empty(Some(v));
        }
        if let Some(v) = patch.access_token {
            r.access_token = non_empty(Some(v));
        }
        if let Some(v) = patch.refresh_token {
            r.refresh_token = non_empty(v);
        }
        if let Some(v) = patch.expires_at {
            r.token_expires_at = v;
        }
        if let Some(v) = patch.base_url {
            r.base_url = kept_credentials(&mut issues, non_empty(v), Some(&r));
        }
        if let Some(v) = patch.priority {
            r.priority = v;
        }
        if let Some(v) = patch.enabled {
            r.enabled = v;
        }
        if let Some(v) = patch.max_concurrent {
            r.max_concurrent = v;
        }
        if let Some(v) = patch.rate_limit_overrides {
            r.rate_limit_overrides = v;
        }
        if let Some(v) = patch.rate_limit_protection {
            r.rate_limit_protection = v.filter(|on| *on);
        }
        if let Some(v) = patch.models {
            r.models = v;
        }
        if let Some(v) = patch.provider_specific {
            merge_provider_specific(&mut r.provider_specific, v, &mut issues);
        }
        check_record(&r, &mut issues);
        if !issues.is_empty() {
            return Err(GatewayError::validation(issues.0));
        }
        r.updated_at = self.clock.now_wall();
        self.store.put_connection(&r, Some(r.version)).await?;
        r.version += 1;
        // An edited connection is not the one its last Test judged.
        self.resilience.tests.forget(&r.id);
        self.reload().await?;
        if before != (r.auth_kind, r.api_key.clone(), r.access_token.clone()) {
            // The old secret must not stay readable in the log's old pages.
            self.store.scrub().await?;
            // New credentials lift every cooldown and terminal state of the connection.
            self.resilience.engine.reset_connection(&r.id);
            if let Some(team) = self.control.team() {
                team.connection_reset(&r.id, &r.provider, self.clock.now_wall());
            }
        }
        let inputs = self.routability_inputs();
        Ok(self.full_view(&r, &inputs))
    }

    /// Deletes a connection (`412` when `expected` is not the stored version).
    pub async fn delete_connection(&self, id: &str, expected: Option<u64>) -> MgmtResult<()> {
        let _writing = self.writing().await;
        if expected.is_some() {
            let current = self.store.get_connection(id).await?.ok_or_else(|| missing(id))?;
            check_version(&format!("connection '{id}'"), expected, current.version)?;
        }
        if !self.store.delete_connection(id).await? {
            return Err(missing(id));
        }
        self.store.scrub().await?;
        // Its sessions are placed afresh on their next request.
        self.resilience.affinity.clear(Some(id));
        self.resilience.tests.forget(id);
        self.store.delete_session_pins(Some(id)).await?;
        self.reload().await
    }

    /// Checks a connection's credentials with one cheap upstream call (the model
    /// list), never spending tokens.
    pub async fn test_connection(&self, id: &str) -> MgmtResult<ConnectionTestResult> {
        let record = self.store.get_connection(id).await?.ok_or_else(|| missing(id))?;
        // A test call is the user's own check, outside the connection's gates.
        let conn = Connection::from_record(&record, &switchyard_resilience::flow::FlowControl::default());
        let url = if conn.api_format.is_openai_family() {
            format!("{}/models", conn.base_url)
        } else {
            format!("{}/v1/models", conn.base_url)
        };
        let headers = crate::proxy::upstream_headers(&http::HeaderMap::new(), &conn);
        let started = tokio::time::Instant::now();
        let sent = self.http.get(url).headers(headers).timeout(Duration::from_secs(15)).send().await;
        let latency_ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
        let result = match sent {
            Ok(resp) => {
                let status = resp.status();
                // Some compatible endpoints have no model list: a 404/405 there says
                // the host answered and did not refuse the key, which is what a Test asks.
                let no_list = matches!(status.as_u16(), 404 | 405);
                let ok = status.is_success() || no_list;
                if ok {
                    self.resilience.engine.record_connection_test_ok(&conn.provider);
                }
                let message = if status.is_success() {
                    "the upstream accepted the credentials".to_owned()
                } else if no_list {
                    format!(
                        "the upstream answered and did not refuse the credentials (HTTP {}: it has no model \
                         list to check them against)",
                        status.as_u16()
                    )
                } else if matches!(status.as_u16(), 401 | 403) {
                    format!("the upstream refused the credentials (HTTP {})", status.as_u16())
                } else {
                    format!("the upstream answered HTTP {}", status.as_u16())
                };
                ConnectionTestResult { ok, status: Some(status.as_u16()), latency_ms, message }
            }
            Err(e) => ConnectionTestResult {
                ok: false,
                status: None,
                latency_ms,
                message: if e.is_connect() {
                    "could not connect to the upstream".to_owned()
                } else if e.is_timeout() {
                    "the upstream did not answer within 15 s".to_owned()
                } else {
                    "the request to the upstream failed".to_owned()
                },
            },
        };
        let at = self.clock.now_wall();
        let message = result.message.clone();
        self.resilience.tests.record(id, LastTestView { at, ok: result.ok, message });
        self.control.notify(switchyard_types::status::ChangeTopic::Connections);
        Ok(result)
    }
}

impl ManagementService {
    /// Stores refreshed OAuth tokens (the refresh token only when the endpoint
    /// rotated it) and republishes the routing snapshot.
    pub async fn store_oauth_tokens(
        &self,
        id: &str,
        access_token: String,
        refresh_token: Option<String>,
        expires_at: Option<switchyard_types::UnixMillis>,
    ) -> MgmtResult<()> {
        let _writing = self.writing().await;
        let now = self.clock.now_wall();
        if !self.store.put_oauth_tokens(id, &access_token, refresh_token.as_deref(), expires_at, now).await? {
            return Err(missing(id));
        }
        self.store.scrub().await?;
        self.reload().await
    }
}

/// Merges a patch object into provider-specific options; `null` removes a key.
fn merge_provider_specific(target: &mut Value, patch: Value, issues: &mut Issues) {
    let Value::Object(patch) = patch else {
        issues.add("/providerSpecific", "must be a JSON object");
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(map) = target {
        for (k, v) in patch {
            if v.is_null() {
                map.remove(&k);
            } else {
                map.insert(k, v);
            }
        }
    }
}

fn missing(id: &str) -> GatewayError {
    GatewayError::new(ErrorCode::NotFound, format!("connection '{id}' does not exist"))
}
