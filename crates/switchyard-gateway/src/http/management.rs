//! The management REST API (`/api/...`): thin adapters over `ManagementService`.
//! Every error is rendered as the management error document.

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::StatusCode;
use switchyard_types::api::{
    AliasView, ApiKeyCreateRequest, ComboView, ConnectionCreateRequest, ConnectionPatch, LogsQuery,
};

use super::json::ApiJson;
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

/// The `/api` routes (the token guard is layered on by the caller).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/providers", get(list_providers).post(create_provider))
        .route("/api/providers/{id}", get(get_provider).patch(update_provider).delete(delete_provider))
        .route("/api/providers/{id}/test", post(test_provider))
        .route("/api/keys", get(list_keys).post(create_key))
        .route("/api/keys/{id}", axum::routing::delete(delete_key))
        .route("/api/combos", get(list_combos).post(put_combo))
        .route("/api/combos/{name}", axum::routing::delete(delete_combo))
        .route("/api/aliases", get(list_aliases).post(put_alias))
        .route("/api/aliases/{from}", axum::routing::delete(delete_alias))
        .route("/api/monitoring/health", get(health))
        .route("/api/logs", get(logs))
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
    ok(s.management.get_connection(&id).await?)
}

async fn update_provider(
    State(s): State<AppState>,
    Path(id): Path<String>,
    ApiJson(patch): ApiJson<ConnectionPatch>,
) -> ApiResult {
    ok(s.management.update_connection(&id, patch).await?)
}

async fn delete_provider(State(s): State<AppState>, Path(id): Path<String>) -> ApiResult {
    s.management.delete_connection(&id).await?;
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

async fn put_combo(State(s): State<AppState>, ApiJson(combo): ApiJson<ComboView>) -> ApiResult {
    s.management.put_combo(combo.clone()).await?;
    ok(combo)
}

async fn delete_combo(State(s): State<AppState>, Path(name): Path<String>) -> ApiResult {
    s.management.delete_combo(&name).await?;
    no_content()
}

async fn list_aliases(State(s): State<AppState>) -> ApiResult {
    ok(s.management.list_aliases().await?)
}

async fn put_alias(State(s): State<AppState>, ApiJson(alias): ApiJson<AliasView>) -> ApiResult {
    s.management.put_alias(alias.clone()).await?;
    ok(alias)
}

async fn delete_alias(State(s): State<AppState>, Path(from): Path<String>) -> ApiResult {
    s.management.delete_alias(&from).await?;
    no_content()
}

async fn health(State(s): State<AppState>) -> ApiResult {
    ok(s.management.health().await?)
}

async fn logs(
    State(s): State<AppState>,
    query: Result<Query<LogsQuery>, axum::extract::rejection::QueryRejection>,
) -> ApiResult {
    let Query(query) = query.map_err(|e| {
        GatewayError::validation(vec![switchyard_types::api::ValidationIssue {
            path: String::new(),
            message: e.body_text(),
        }])
    })?;
    ok(s.management.logs(query).await?)
}
