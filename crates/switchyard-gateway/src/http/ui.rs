//! The settings UI for headless users and browser tests: the built `ui/dist`
//! served under `/ui/` (the same files the desktop app embeds). `/` redirects
//! there. The files are public (they hold no data); every call they make goes to
//! `/api` with the management token, which the page asks for or takes from the
//! URL fragment (`/ui/#token=...`, never sent to the server).
//!
//! Without a UI directory the `/ui/` path explains how to build one.

use std::path::Path;

use axum::Router;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use tower_http::services::{ServeDir, ServeFile};
use tower_http::set_header::SetResponseHeaderLayer;

use crate::state::AppState;

/// Only this origin's scripts, styles and API; no framing.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

/// `/`, `/ui` and `/ui/...`.
pub fn router(ui_dir: Option<&Path>) -> Router<AppState> {
    let router = Router::new().route("/", get(|| async { Redirect::temporary("/ui/") }));
    match ui_dir {
        Some(dir) => router
            .nest_service("/ui", ServeDir::new(dir).fallback(ServeFile::new(dir.join("index.html"))))
            .layer(SetResponseHeaderLayer::overriding(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            )),
        None => router
            .route("/ui", get(not_built))
            .route("/ui/", get(not_built))
            .route("/ui/{*rest}", get(not_built)),
    }
}

async fn not_built() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "The settings UI is not available: build it with `npm ci && npm run ui:build`, then start \
         `switchyard serve --ui-dir ui/dist` (scripts/start.sh does both).\n",
    )
        .into_response()
}
