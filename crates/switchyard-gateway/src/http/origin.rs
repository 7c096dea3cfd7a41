//! The browser-origin guard: web pages must not spend the user's credit.
//!
//! Browsers send a `text/plain` or form POST to any address without a preflight,
//! so a page on `https://evil.example` could reach `http://127.0.0.1:7821/v1/...`
//! (and with `allow_unauthenticated_loopback` it needs no key). Such requests carry
//! `Origin` (every cross-origin request except a plain GET does) and, in current
//! browsers, `Sec-Fetch-Site: cross-site`. So on every route:
//!
//! - an `Origin` that is present and not loopback (`http(s)://localhost`,
//!   `*.localhost`, `127.0.0.0/8`, `[::1]`, any port) or a configured extra host is
//!   refused, and so is `Origin: null` (sandboxed frames, `file:` pages) and a
//!   repeated `Origin`;
//! - `Sec-Fetch-Site: cross-site` is refused, except a GET/HEAD top-level
//!   navigation to the settings UI (`/`, `/ui/...`: a link to the UI from another
//!   site opens it; it holds no data and asks for the token).
//!
//! The settings UI served under `/ui/` calls `/api` from the gateway's own loopback
//! origin, so it passes. Non-browser clients send neither header and are
//! unaffected. Fail-closed: an unreadable header counts as foreign.

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, Method, Uri, header};
use switchyard_types::ErrorCode;

use super::host::{host_name, is_allowed_host};
use crate::errors::{ErrorFormat, GatewayError};
use crate::state::GatewayState;

/// Why a browser request is refused, if it is.
fn refusal(method: &Method, path: &str, headers: &HeaderMap, extra_hosts: &[String]) -> Option<String> {
    let mut origins = headers.get_all(header::ORIGIN).iter();
    if let Some(origin) = origins.next() {
        if origins.next().is_some() {
            return Some("the request has more than one Origin header".to_owned());
        }
        let text = origin.to_str().unwrap_or("(unreadable)");
        if !is_loopback_origin(text, extra_hosts) {
            return Some(format!(
                "cross-site request refused: Origin '{text}' is not a loopback page; \
                 browsers may only call the gateway from its own settings UI"
            ));
        }
    }
    let cross_site = headers
        .get_all(&crate::header_names::SEC_FETCH_SITE)
        .iter()
        .any(|v| v.to_str().map_or(true, |v| v.trim().eq_ignore_ascii_case("cross-site")));
    if cross_site && !is_ui_navigation(method, path, headers) {
        return Some(
            "cross-site request refused (Sec-Fetch-Site: cross-site): browsers may only call the \
             gateway from its own settings UI"
                .to_owned(),
        );
    }
    None
}

/// `scheme://host[:port]` with an http(s) scheme and an allowed host.
fn is_loopback_origin(origin: &str, extra_hosts: &[String]) -> bool {
    let Ok(uri) = origin.parse::<Uri>() else { return false };
    let scheme_ok =
        uri.scheme_str().is_some_and(|s| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https"));
    scheme_ok && uri.host().is_some_and(|h| is_allowed_host(host_name(h), extra_hosts))
}

/// A top-level GET/HEAD navigation to the settings UI.
fn is_ui_navigation(method: &Method, path: &str, headers: &HeaderMap) -> bool {
    let navigate = headers
        .get(&crate::header_names::SEC_FETCH_MODE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"navigate"));
    let ui = path == "/" || path == "/ui" || path.starts_with("/ui/");
    navigate && ui && (method == Method::GET || method == Method::HEAD)
}

/// The Origin check of [`super::edge::guards`]: the 403 (in the route's format) of a
/// cross-site browser request.
pub fn check(state: &GatewayState, request: &Request) -> Option<Response> {
    let path = request.uri().path();
    let message = refusal(request.method(), path, request.headers(), &state.extra_hosts)?;
    Some(GatewayError::new(ErrorCode::ForbiddenOrigin, message).render(ErrorFormat::for_path(path)))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn refused(method: Method, path: &str, headers: &[(&'static str, &str)]) -> bool {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(*name, HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}")));
        }
        refusal(&method, path, &map, &["mybox.lan".to_owned()]).is_some()
    }

    #[test]
    fn loopback_origins_pass() {
        for origin in [
            "http://127.0.0.1:7821",
            "http://localhost:5173",
            "https://localhost",
            "http://[::1]:7821",
            "http://127.9.9.9",
            "http://tauri.localhost",
            "http://mybox.lan:7821",
        ] {
            assert!(!refused(Method::POST, "/v1/messages", &[("origin", origin)]), "{origin}");
        }
        assert!(!refused(Method::POST, "/api/resilience", &[("sec-fetch-site", "same-origin")]));
        assert!(!refused(Method::POST, "/api/resilience", &[("sec-fetch-site", "same-site")]));
        assert!(!refused(Method::GET, "/v1/models", &[]));
    }

    #[test]
    fn foreign_null_and_odd_origins_are_refused() {
        for origin in [
            "https://evil.example",
            "http://localhost.evil.example",
            "null",
            "file://",
            "tauri://localhost",
            "http://10.0.0.1:7821",
            "not an origin",
        ] {
            assert!(refused(Method::POST, "/v1/messages", &[("origin", origin)]), "{origin}");
        }
        assert!(refused(
            Method::POST,
            "/v1/messages",
            &[("origin", "http://localhost"), ("origin", "http://localhost")]
        ));
    }

    #[test]
    fn cross_site_fetches_are_refused_but_ui_navigations_open() {
        let cross = ("sec-fetch-site", "cross-site");
        assert!(refused(Method::POST, "/v1/chat/completions", &[cross]));
        assert!(refused(Method::GET, "/v1/models", &[cross, ("sec-fetch-mode", "no-cors")]));
        assert!(refused(Method::GET, "/api/providers", &[cross, ("sec-fetch-mode", "navigate")]));
        assert!(refused(Method::POST, "/ui/", &[cross, ("sec-fetch-mode", "navigate")]));
        assert!(!refused(Method::GET, "/ui/", &[cross, ("sec-fetch-mode", "navigate")]));
        assert!(!refused(Method::GET, "/", &[cross, ("sec-fetch-mode", "navigate")]));
    }
}
