//! The edge layer in front of every route ([`guards`]: Host, then Origin), and one
//! error envelope for every route: the 405 answer of every route, and a last-resort
//! wrapper that gives the gateway's envelope to any error response that framework
//! code (axum's extractor rejections, tower-http's static files) made without one.
//!
//! The layer does not touch `/v1/...` responses: there an error without
//! `x-switchyard-error` is an upstream's answer, relayed as it was sent. Every
//! `/v1` error of the gateway's own is rendered by its handler.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{Method, StatusCode, Uri, header};
use switchyard_types::ErrorCode;

use super::{host, origin};
use crate::errors::{ERROR_HEADER, ErrorFormat, GatewayError};
use crate::state::AppState;

/// Longest framework error text carried over into the message.
const MESSAGE_LIMIT: usize = 4 * 1024;

/// The answer of a route that exists but not for this method (axum adds `Allow`).
pub async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let path = uri.path();
    GatewayError::new(ErrorCode::MethodNotAllowed, format!("{method} is not allowed on {path}"))
        .render(ErrorFormat::for_path(path))
}

/// The gateway's code for a status framework code answered with, if it has one.
fn code_for(status: StatusCode) -> Option<ErrorCode> {
    Some(match status.as_u16() {
        400 => ErrorCode::InvalidRequest,
        404 => ErrorCode::NotFound,
        405 => ErrorCode::MethodNotAllowed,
        408 => ErrorCode::RequestTimeout,
        413 => ErrorCode::BodyTooLarge,
        415 => ErrorCode::UnsupportedMediaType,
        500 => ErrorCode::InternalError,
        _ => return None,
    })
}

/// The one layer in front of every route: the Host guard (DNS rebinding), then the
/// Origin guard (foreign web pages), then the routes, whose framework-made errors get
/// the management envelope. One layer, not three: each `from_fn` layer costs a boxed
/// future and a service clone per request.
pub async fn guards(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(refused) = refusal(&state, &request) {
        return refused;
    }
    if ErrorFormat::for_path(request.uri().path()) != ErrorFormat::Management {
        return next.run(request).await;
    }
    envelope_errors(request, next).await
}

/// The Host guard's answer, else the Origin guard's, for a request they refuse.
pub fn refusal(state: &AppState, request: &Request) -> Option<Response> {
    host::check(state, request).or_else(|| origin::check(state, request))
}

/// Renders framework-made error responses of a management route in the management
/// envelope, keeping their text as the message and their `Allow` header.
async fn envelope_errors(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    let wrap = !response.headers().contains_key(ERROR_HEADER)
        && (response.status().is_client_error() || response.status().is_server_error());
    let Some(code) = code_for(response.status()).filter(|_| wrap) else { return response };
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MESSAGE_LIMIT).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_owned();
    let message = match (text.is_empty(), code) {
        (true, ErrorCode::MethodNotAllowed) => format!("{method} is not allowed on {path}"),
        (true, _) => format!("{method} {path}: {}", parts.status.canonical_reason().unwrap_or("error")),
        (false, _) => text,
    };
    let mut rendered = GatewayError::new(code, message).render(ErrorFormat::Management);
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        rendered.headers_mut().insert(header::ALLOW, allow.clone());
    }
    rendered
}
