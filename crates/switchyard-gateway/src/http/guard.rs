//! Request guards: the Host check (DNS-rebinding defence), client-key
//! authentication, and the management token. All fail closed.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderMap, header};
use secrecy::ExposeSecret;
use switchyard_types::ErrorCode;

use crate::errors::{ErrorFormat, GatewayError};
use crate::routing::{ClientKey, RoutingTable};
use crate::secrets::{hash_key, secrets_equal};
use crate::state::AppState;

/// The host part of a Host header value (`[::1]:7821` → `::1`), lower-cased.
fn host_name(value: &str) -> String {
    let value = value.trim();
    let host = if let Some(rest) = value.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        value
            .rsplit_once(':')
            .map_or(value, |(h, port)| if port.chars().all(|c| c.is_ascii_digit()) { h } else { value })
    };
    host.to_ascii_lowercase()
}

/// Whether `host` is a loopback name or address.
fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Rejects requests whose Host is neither loopback nor an explicitly allowed name:
/// a web page that rebinds its own domain to 127.0.0.1 still sends its own name.
pub async fn host_guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(host_name)
        .or_else(|| request.uri().host().map(host_name));
    let allowed = match host.as_deref() {
        None => true,
        Some(h) => is_loopback_host(h) || state.extra_hosts.iter().any(|x| x == h),
    };
    if allowed {
        return next.run(request).await;
    }
    let path = request.uri().path().to_owned();
    GatewayError::new(
        ErrorCode::ForbiddenHost,
        format!("host '{}' is not allowed; connect through 127.0.0.1 or localhost", host.unwrap_or_default()),
    )
    .render(ErrorFormat::for_path(&path))
}

/// The client key presented in `Authorization: Bearer` or `x-api-key`.
fn presented_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        if v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer ") {
            return Some(v[7..].trim());
        }
    }
    headers.get("x-api-key").and_then(|v| v.to_str().ok()).map(str::trim)
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
        .is_some_and(|t| secrets_equal(t.trim(), state.management_token.expose_secret()));
    if ok {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_strip_ports_and_brackets() {
        assert_eq!(host_name("127.0.0.1:7821"), "127.0.0.1");
        assert_eq!(host_name("[::1]:7821"), "::1");
        assert_eq!(host_name("LocalHost"), "localhost");
        assert_eq!(host_name("evil.example:80"), "evil.example");
    }

    #[test]
    fn loopback_hosts() {
        for h in ["localhost", "127.0.0.1", "127.1.2.3", "::1", "app.localhost"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["evil.example", "localhost.evil.example", "10.0.0.1", "0.0.0.0"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
