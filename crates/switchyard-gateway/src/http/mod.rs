//! The HTTP edge: the client inference router (`/v1`), the management router
//! (`/api`), and the guards in front of both.

mod guard;
mod inference;
mod json;
mod management;
mod models;

use axum::Router;
use axum::middleware;
use axum::routing::{get, post};

use crate::state::AppState;

/// The whole application router.
pub fn router(state: AppState) -> Router {
    let inference = Router::new()
        .route("/v1/messages", post(inference::messages))
        .route("/v1/messages/count_tokens", post(inference::count_tokens))
        .route("/v1/chat/completions", post(inference::chat_completions))
        .route("/v1/responses", post(inference::responses).get(inference::responses_websocket))
        .route("/v1/models", get(models::list_models))
        .route("/api/hello", get(inference::hello));
    let management = management::router()
        .route_layer(middleware::from_fn_with_state(state.clone(), guard::require_management_token));
    Router::new()
        .merge(inference)
        .merge(management)
        .fallback(guard::not_found)
        .layer(middleware::from_fn_with_state(state.clone(), guard::host_guard))
        .with_state(state)
}
