//! The management REST API (`/api/...`): thin adapters over `ManagementService`.
//! Every error is rendered as the management error document.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use switchyard_types::api::{
    AliasView, ApiKeyCreateRequest, ComboView, ConnectionCreateRequest, ConnectionPatch, LogsQuery, Versioned,
};

use switchyard_types::resilience::{BreakerResetRequest, CooldownsClearRequest, LockoutClearRequest};
use switchyard_types::settings::ModelLockoutPatch;
use switchyard_types::status::RoutingPauseRequest;

use super::json::{ApiBody, ApiJson, parse};
use crate::errors::{ErrorFormat, GatewayError};
use crate::state::AppState;

/// A management error, rendered as the management error document.
struct Fail(GatewayError);

impl IntoResponse for Fail {
    fn into_response(self) -> Response {
        self.0.render(ErrorFormat::Management)
    }
}

impl From<GatewayError> for Fail {
    fn from(e: GatewayError) -> Self {
        Fail(e)
    }
}

type ApiResult = Result<Response, Fail>;

fn ok<T: serde::Serialize>(value: T) -> ApiResult {
    Ok(axum::Json(value).into_response())
}

fn created<T: serde::Serialize>(value: T) -> ApiResult {
    Ok((StatusCode::CREATED, axum::Json(value)).into_response())
}

fn no_content() -> ApiResult {
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A document with its version as the `ETag` (strong: `"N"`).
fn tagged<T: serde::Serialize>(value: T, version: u64) -> ApiResult {
    let mut response = axum::Json(value).into_response();
    if let Ok(v) = HeaderValue::try_from(format!("\"{version}\"")) {
        response.headers_mut().insert(header::ETAG, v);
    }
    Ok(response)
}

/// A versioned document, tagged.
fn versioned<T: serde::Serialize>(doc: Versioned<T>) -> ApiResult {
    let version = doc.version;
    tagged(doc, version)
}

/// The version a write was made to, from `If-Match` (`"N"`, `W/"N"` or `N`);
/// absent or `*` means "whatever is stored now" (the write is still serialized, so
/// no other change is lost). Anything else is a 400 naming the header.
fn if_match(headers: &HeaderMap) -> Result<Option<u64>, Fail> {
    let Some(value) = headers.get(header::IF_MATCH) else { return Ok(None) };
    let text = value.to_str().unwrap_or_default().trim();
    if text == "*" {
        return Ok(None);
    }
    let tag = text.strip_prefix("W/").unwrap_or(text).trim_matches('"');
    tag.parse::<u64>().map(Some).map_err(|_| {
        Fail(GatewayError::validation(vec![switchyard_types::api::ValidationIssue {
            path: "If-Match".to_owned(),
            message: format!(
                "must be the document's ETag (a version number in quotes, e.g. \"3\"), got '{text}'"
            ),
        }]))
    })
}

/// The `/api` routes (the token guard is layered on by the caller).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/providers", get(list_providers).post(create_provider))
        .route("/api/providers/{id}", get(get_provider).patch(update_provider).delete(delete_provider))
        .route("/api/providers/{id}/test", post(test_provider))
        .route("/api/providers/import-claude-login", post(import_claude_login))
        .route("/api/keys", get(list_keys).post(create_key))
        .route("/api/keys/{id}", axum::routing::delete(delete_key))
        .route("/api/combos", get(list_combos).post(put_combo))
        .route("/api/combos/{name}", axum::routing::delete(delete_combo))
        .route("/api/aliases", get(list_aliases).post(put_alias))
        .route("/api/aliases/{from}", axum::routing::delete(delete_alias))
        .route("/api/monitoring/health", get(health))
        .route("/api/monitoring/summary", get(monitoring_summary))
        .route("/api/gateway", get(gateway_status))
        .route("/api/gateway/pause", post(gateway_set_paused))
        .route("/api/events", get(super::events::stream))
        .route("/api/resilience", get(resilience_get).patch(resilience_patch))
        .route("/api/resilience/reset", post(resilience_reset))
        .route("/api/resilience/defaults", get(resilience_defaults))
        .route("/api/resilience/ranges", get(resilience_ranges))
        .route("/api/resilience/breakers", get(breakers_list))
        .route("/api/resilience/cooldowns", get(cooldowns_list).post(cooldowns_clear))
        .route("/api/resilience/model-cooldowns", get(lockouts_list).delete(lockouts_clear))
        .route("/api/resilience/model-lockout", get(model_lockout_get).patch(model_lockout_patch))
        .route("/api/logs", get(logs))
        .route("/api/requests", get(requests_list))
        .route("/api/requests/{id}", get(request_detail))
        .route("/api/presets", get(presets_list))
        .route("/api/setup", get(setup_list))
        .route("/api/setup/{agent}", post(setup_apply).delete(setup_undo))
        .route("/api/rate-limits", get(rate_limits).post(rate_limits_set))
        .route("/api/sessions", get(sessions_list).delete(sessions_clear))
        .route("/api/leases", get(leases_list))
        .route("/api/leases/{id}", axum::routing::delete(lease_release))
}

async fn list_providers(State(s): State<AppState>) -> ApiResult {
    ok(s.management.list_connections().await?)
}

async fn create_provider(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<ConnectionCreateRequest>,
) -> ApiResult {
    created(s.management.create_connection(req).await?)
}

async fn get_provider(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    let view = s.management.get_connection(&id).await?;
    let version = view.version;
    tagged(view, version)
}

async fn update_provider(
    State(s): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(patch): ApiJson<ConnectionPatch>,
) -> ApiResult {
    let view = s.management.update_connection(&id, patch, if_match(&headers)?).await?;
    let version = view.version;
    tagged(view, version)
}

async fn delete_provider(State(s): State<AppState>, Path(id): Path<String>, headers: HeaderMap) -> ApiResult {
    s.management.delete_connection(&id, if_match(&headers)?).await?;
    no_content()
}

async fn test_provider(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    ok(s.management.test_connection(&id).await?)
}

async fn list_keys(State(s): State<AppState>) -> ApiResult {
    ok(s.management.list_api_keys().await?)
}

async fn create_key(State(s): State<AppState>, ApiJson(req): ApiJson<ApiKeyCreateRequest>) -> ApiResult {
    created(s.management.create_api_key(req).await?)
}

async fn delete_key(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    s.management.delete_api_key(&id).await?;
    no_content()
}

async fn list_combos(State(s): State<AppState>) -> ApiResult {
    ok(s.management.list_combos().await?)
}

async fn put_combo(
    State(s): State<AppState>,
    headers: HeaderMap,
    ApiJson(combo): ApiJson<ComboView>,
) -> ApiResult {
    versioned(s.management.put_combo(combo, if_match(&headers)?).await?.doc)
}

async fn delete_combo(State(s): State<AppState>, Path(name): Path<String>, headers: HeaderMap) -> ApiResult {
    s.management.delete_combo(&name, if_match(&headers)?).await?;
    no_content()
}

async fn list_aliases(State(s): State<AppState>) -> ApiResult {
    ok(s.management.list_aliases().await?)
}

async fn put_alias(
    State(s): State<AppState>,
    headers: HeaderMap,
    ApiJson(alias): ApiJson<AliasView>,
) -> ApiResult {
    versioned(s.management.put_alias(alias, if_match(&headers)?).await?.doc)
}

async fn delete_alias(State(s): State<AppState>, Path(from): Path<String>, headers: HeaderMap) -> ApiResult {
    s.management.delete_alias(&from, if_match(&headers)?).await?;
    no_content()
}

async fn health(State(s): State<AppState>) -> ApiResult {
    ok(s.management.health().await?)
}

async fn monitoring_summary(State(s): State<AppState>) -> ApiResult {
    ok(s.management.monitoring_summary().await?)
}

async fn gateway_status(State(s): State<AppState>) -> ApiResult {
    ok(s.management.gateway_status())
}

async fn gateway_set_paused(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<RoutingPauseRequest>,
) -> ApiResult {
    ok(s.management.set_paused(req))
}

async fn import_claude_login(State(s): State<AppState>, ApiBody(body): ApiBody) -> ApiResult {
    let req: switchyard_types::api::ClaudeLoginImportRequest =
        if body.iter().all(u8::is_ascii_whitespace) { Default::default() } else { parse(&body)? };
    ok(s.management.import_claude_login_request(req).await?)
}

async fn requests_list(
    State(s): State<AppState>,
    query: Result<Query<switchyard_types::requests::RequestsQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult {
    let query = query_of(query)?;
    ok(s.management.requests(query).await?)
}

async fn request_detail(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    ok(s.management.request_detail(&id).await?)
}

async fn setup_list(State(s): State<AppState>) -> ApiResult {
    ok(s.management.agent_setups())
}

async fn setup_apply(State(s): State<AppState>, Path(agent): Path<String>) -> ApiResult {
    ok(s.management.setup_agent(&agent).await?)
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UndoQuery {
    #[serde(default)]
    force: bool,
}

async fn setup_undo(
    State(s): State<AppState>,
    Path(agent): Path<String>,
    query: Result<Query<UndoQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult {
    let query = query_of(query)?;
    ok(s.management.undo_agent_setup(&agent, query.force).await?)
}

/// A query string as a document, or `400 validation_failed` saying what is wrong.
fn query_of<T>(query: Result<Query<T>, axum::extract::rejection::QueryRejection>) -> Result<T, GatewayError> {
    query.map(|Query(q)| q).map_err(|e| {
        GatewayError::validation(vec![switchyard_types::api::ValidationIssue {
            path: String::new(),
            message: e.body_text(),
        }])
    })
}

async fn presets_list(State(s): State<AppState>) -> ApiResult {
    ok(s.management.presets())
}

async fn logs(
    State(s): State<AppState>,
    query: Result<Query<LogsQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult {
    let query = query_of(query)?;
    ok(s.management.logs(query).await?)
}

async fn resilience_get(State(s): State<AppState>) -> ApiResult {
    versioned(s.management.resilience_get())
}

async fn resilience_patch(
    State(s): State<AppState>,
    headers: HeaderMap,
    ApiBody(body): ApiBody,
) -> ApiResult {
    let expected = if_match(&headers)?;
    let patch = crate::resilience::Resilience::parse_patch(&body)?;
    versioned(s.management.resilience_patch(patch, expected).await?)
}

async fn resilience_defaults(State(s): State<AppState>) -> ApiResult {
    ok(s.management.resilience_defaults())
}

async fn resilience_ranges(State(s): State<AppState>) -> ApiResult {
    ok(s.management.resilience_ranges())
}

async fn rate_limits(State(s): State<AppState>) -> ApiResult {
    ok(s.management.rate_limits())
}

async fn rate_limits_set(State(s): State<AppState>, ApiBody(body): ApiBody) -> ApiResult {
    let toggle: switchyard_types::api::RateLimitToggle = parse(&body)?;
    ok(s.management.set_rate_limit_protection(toggle).await?)
}

async fn sessions_list(State(s): State<AppState>) -> ApiResult {
    ok(s.management.session_pins())
}

async fn sessions_clear(State(s): State<AppState>, ApiBody(body): ApiBody) -> ApiResult {
    let clear: switchyard_types::api::SessionPinsClear =
        if body.iter().all(u8::is_ascii_whitespace) { Default::default() } else { parse(&body)? };
    ok(s.management.clear_session_pins(&clear).await?)
}

async fn leases_list(State(s): State<AppState>) -> ApiResult {
    ok(s.management.leases().await?)
}

async fn lease_release(State(s): State<AppState>, Path(id): Path<u32>) -> ApiResult {
    ok(s.management.release_lease(id).await?)
}

async fn breakers_list(State(s): State<AppState>) -> ApiResult {
    ok(s.management.breakers())
}

async fn resilience_reset(State(s): State<AppState>, ApiBody(body): ApiBody) -> ApiResult {
    let req: BreakerResetRequest =
        if body.iter().all(u8::is_ascii_whitespace) { BreakerResetRequest::default() } else { parse(&body)? };
    ok(s.management.reset_breakers(req)?)
}

/// `?provider=` filter of the cooldown list.
#[derive(serde::Deserialize)]
struct ProviderFilter {
    provider: Option<String>,
}

async fn cooldowns_list(State(s): State<AppState>, Query(f): Query<ProviderFilter>) -> ApiResult {
    ok(s.management.cooldowns(f.provider.as_deref()))
}

async fn cooldowns_clear(
    State(s): State<AppState>,
    ApiJson(req): ApiJson<CooldownsClearRequest>,
) -> ApiResult {
    ok(s.management.clear_cooldowns(req)?)
}

async fn lockouts_list(State(s): State<AppState>) -> ApiResult {
    ok(s.management.lockouts())
}

async fn lockouts_clear(State(s): State<AppState>, ApiJson(req): ApiJson<LockoutClearRequest>) -> ApiResult {
    ok(s.management.clear_lockout(req)?)
}

async fn model_lockout_get(State(s): State<AppState>) -> ApiResult {
    versioned(s.management.model_lockout_get())
}

async fn model_lockout_patch(
    State(s): State<AppState>,
    headers: HeaderMap,
    ApiJson(patch): ApiJson<ModelLockoutPatch>,
) -> ApiResult {
    versioned(s.management.model_lockout_patch(patch, if_match(&headers)?).await?)
}
