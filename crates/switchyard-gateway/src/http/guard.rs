//! Request guards: client-key authentication and the management token (the Host
//! and Origin checks live in `host` and `origin`). All fail closed.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, header};
use switchyard_types::ErrorCode;

use crate::errors::{ErrorFormat, GatewayError};
use crate::routing::{ClientKey, RoutingTable};
use crate::secrets::hash_key;
use crate::state::AppState;

/// The client key presented in `Authorization: Bearer` or `x-api-key`.
fn presented_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        if v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer ") {
            return Some(v[7..].trim());
        }
    }
    headers.get(&crate::header_names::X_API_KEY).and_then(|v| v.to_str().ok()).map(str::trim)
}

/// Authenticates an inference request against the routing snapshot. `Ok(None)`
/// means an allowed unauthenticated loopback request.
pub fn authenticate(
    table: &RoutingTable,
    headers: &HeaderMap,
    peer: Option<SocketAddr>,
) -> Result<Option<Arc<ClientKey>>, GatewayError> {
    match presented_key(headers).filter(|k| !k.is_empty()) {
        Some(key) => table.client_keys.get(&hash_key(key)).cloned().map(Some).ok_or_else(|| {
            GatewayError::new(
                ErrorCode::AuthenticationError,
                "invalid API key: this key is not known to the gateway",
            )
        }),
        None if table.gateway.allow_unauthenticated_loopback
            && peer.is_some_and(|p| p.ip().is_loopback()) =>
        {
            Ok(None)
        }
        None => Err(GatewayError::new(
            ErrorCode::AuthenticationError,
            "missing API key: send a gateway client key as 'Authorization: Bearer <key>' or 'x-api-key'",
        )),
    }
}

/// Requires `Authorization: Bearer <management token>` on `/api` routes.
pub async fn require_management_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let ok = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("Bearer ").or_else(|| v.trim().strip_prefix("bearer ")))
        .is_some_and(|t| state.management_token.matches(t.trim()));
    if ok {
        // What answers already written deferred (their rows, the engine's record
        // of them) is in place before the management API reads anything.
        crate::conn::after_write::settled().await;
        return next.run(request).await;
    }
    GatewayError::new(
        ErrorCode::ManagementUnauthorized,
        "the management API needs 'Authorization: Bearer <management token>' (printed at first start, stored in the data directory)",
    )
    .render(ErrorFormat::Management)
}

/// Unknown paths, in the format the path implies.
pub async fn not_found(request: Request) -> Response {
    let path = request.uri().path().to_owned();
    GatewayError::new(ErrorCode::NotFound, format!("no route for {} {path}", request.method()))
        .render(ErrorFormat::for_path(&path))
}
