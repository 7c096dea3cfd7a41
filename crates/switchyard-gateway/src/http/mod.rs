//! The HTTP edge: the client inference router (`/v1`), the management router
//! (`/api`), the settings UI's static files (`/ui/`), and the guards in front of them.

mod events;
mod guard;
mod inference;
mod json;
mod management;
mod models;
mod ui;

use axum::Router;
use axum::middleware;
use axum::routing::get;

use crate::state::AppState;

/// The whole application router.
pub fn router(state: AppState) -> Router {
    let inference = Router::new()
        .route("/v1/messages", inference::post_handler(&inference::MESSAGES))
        .route("/v1/messages/count_tokens", inference::post_handler(&inference::COUNT_TOKENS))
        .route("/v1/chat/completions", inference::post_handler(&inference::CHAT_COMPLETIONS))
        .route(
            "/v1/responses",
            inference::post_handler(&inference::RESPONSES).get(inference::responses_websocket),
        )
        .route("/v1/models", get(models::list_models))
        .route("/api/hello", get(inference::hello));
    let management = management::router()
        .route_layer(middleware::from_fn_with_state(state.clone(), guard::require_management_token));
    Router::new()
        .merge(inference)
        .merge(management)
        .merge(ui::router(state.ui_dir.as_deref()))
        .fallback(guard::not_found)
        .layer(middleware::from_fn_with_state(state.clone(), guard::host_guard))
        .with_state(state)
}
