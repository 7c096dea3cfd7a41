//! The HTTP edge: the client inference router (`/v1`), the management router
//! (`/api`), the settings UI's static files (`/ui/`), and the guards in front of
//! them (Host, Origin, tokens), with one error envelope for every route.

mod app;
mod body;
mod edge;
mod events;
mod guard;
mod host;
mod inference;
mod json;
mod leases;
mod management;
mod models;
mod origin;
mod ui;

pub use app::App;
use axum::Router;
use axum::middleware;
use axum::routing::get;

use crate::state::AppState;

/// The whole application router (a connection serves it through [`App`]).
pub fn router(state: AppState) -> Router {
    // The four client endpoints (the connection also dispatches their POSTs itself,
    // `App`); `GET /v1/responses` answers Codex's WebSocket attempt.
    let mut inference = Router::new();
    for ep in inference::ENDPOINTS {
        let route = inference::post_handler(ep);
        let route = if ep.route == inference::RESPONSES.route {
            route.get(inference::responses_websocket)
        } else {
            route
        };
        inference = inference.route(ep.route, route);
    }
    let inference = inference
        .route("/v1/models", get(models::list_models))
        .route("/api/hello", get(inference::hello))
        // Called by agents with their client key, not the management token (SPEC §7).
        .route("/api/v1/session-leases", axum::routing::post(leases::session_leases));
    let management = management::router()
        .route_layer(middleware::from_fn_with_state(state.clone(), guard::require_management_token));
    // One layer in front of every route: Host, then Origin, then the routes, whose
    // framework-made errors it wraps in the envelope.
    Router::new()
        .merge(inference)
        .merge(management)
        .merge(ui::router(state.ui_dir.as_deref()))
        .fallback(guard::not_found)
        .method_not_allowed_fallback(edge::method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), edge::guards))
        .with_state(state)
}
