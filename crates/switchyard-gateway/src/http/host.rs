//! The Host guard: the DNS-rebinding defence. A web page that rebinds its own
//! domain to 127.0.0.1 still sends its own name in `Host`, so only loopback names,
//! the non-loopback listen IP and the configured extra hosts are served.
//!
//! Fail-closed: a Host that cannot be read (not visible ASCII), is missing from an
//! HTTP/1.1 request, or is repeated gets `400 invalid_host`; a foreign one
//! `403 forbidden_host`. An absolute-form request target (`GET http://x/ HTTP/1.1`)
//! must name an allowed host too. HTTP/1.0 predates Host, so a 1.0 request without
//! one is served (browsers always send it, so rebinding is still caught). The
//! gateway serves HTTP/1.1 only, so there is no HTTP/2 `:authority` to check.

use axum::extract::Request;
use axum::response::Response;
use http::{HeaderMap, Uri, Version, header};
use switchyard_types::ErrorCode;

use crate::errors::{ErrorFormat, GatewayError};
use crate::state::GatewayState;

/// The host part of a Host header value (`[::1]:7821` → `::1`), as sent: names
/// compare without regard to case ([`is_allowed_host`]), so nothing is copied.
pub fn host_name(value: &str) -> &str {
    let value = value.trim();
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    value
        .rsplit_once(':')
        .map_or(value, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { value })
}

/// Whether `host` (any case) is a loopback name or address.
pub fn is_loopback_host(host: &str) -> bool {
    const SUBDOMAIN: &str = ".localhost";
    let subdomain = host.len() > SUBDOMAIN.len()
        && host.get(host.len() - SUBDOMAIN.len()..).is_some_and(|end| end.eq_ignore_ascii_case(SUBDOMAIN));
    host == "127.0.0.1"
        || host.eq_ignore_ascii_case("localhost")
        || subdomain
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `host` (without port, any case) may address this gateway; `extra_hosts`
/// are lower-cased.
pub fn is_allowed_host(host: &str, extra_hosts: &[String]) -> bool {
    is_loopback_host(host) || extra_hosts.iter().any(|x| x.eq_ignore_ascii_case(host))
}

/// The hosts a request addresses (its Host header's, then an absolute-form
/// target's), or why they cannot be trusted. Borrowed from the request: this runs
/// on every request.
fn requested_hosts<'r>(
    version: Version,
    headers: &'r HeaderMap,
    uri: &'r Uri,
) -> Result<[Option<&'r str>; 2], GatewayError> {
    let invalid = |message: &str| GatewayError::new(ErrorCode::InvalidHost, message);
    let mut values = headers.get_all(header::HOST).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(invalid("the request has more than one Host header; send exactly one"));
    }
    let from_header = match first {
        // Visible ASCII only, so the value is text.
        Some(value) => match value.to_str() {
            Ok(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic()) => {
                Some(host_name(text))
            }
            _ => {
                return Err(invalid(
                    "the Host header is empty or not visible ASCII; send e.g. 'Host: 127.0.0.1:7821'",
                ));
            }
        },
        None if version >= Version::HTTP_11 => {
            return Err(invalid("the request has no Host header, which HTTP/1.1 requires"));
        }
        None => None,
    };
    Ok([from_header, uri.host().map(host_name)])
}

/// The Host check of [`super::edge::guards`]: the refusal of a request whose Host is
/// unreadable, missing, repeated, or foreign.
pub fn check(state: &GatewayState, request: &Request) -> Option<Response> {
    let format = || ErrorFormat::for_path(request.uri().path());
    let hosts = match requested_hosts(request.version(), request.headers(), request.uri()) {
        Ok(hosts) => hosts,
        Err(e) => return Some(e.render(format())),
    };
    let foreign = hosts.into_iter().flatten().find(|h| !is_allowed_host(h, &state.extra_hosts))?;
    Some(
        GatewayError::new(
            ErrorCode::ForbiddenHost,
            format!("host '{foreign}' is not allowed; connect through 127.0.0.1 or localhost"),
        )
        .render(format()),
    )
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    #[test]
    fn host_names_strip_ports_and_brackets() {
        assert_eq!(host_name("127.0.0.1:7821"), "127.0.0.1");
        assert_eq!(host_name("[::1]:7821"), "::1");
        assert_eq!(host_name("LocalHost"), "LocalHost");
        assert_eq!(host_name("evil.example:80"), "evil.example");
    }

    #[test]
    fn loopback_hosts() {
        for h in ["localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "::1", "app.localhost", "App.LOCALHOST"]
        {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["evil.example", "localhost.evil.example", ".localhost", "xlocalhost", "10.0.0.1", "0.0.0.0"]
        {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn extra_hosts_match_in_any_case() {
        let extra = ["mybox.lan".to_owned(), "fe80::1".to_owned()];
        for h in ["mybox.lan", "MyBox.LAN", "FE80::1", host_name("[fe80::1]:7821")] {
            assert!(is_allowed_host(h, &extra), "{h}");
        }
        for h in ["mybox.lan.evil.example", "otherbox.lan", "fe80::2"] {
            assert!(!is_allowed_host(h, &extra), "{h}");
        }
    }

    fn hosts(version: Version, values: &[&[u8]], uri: &str) -> Result<Vec<String>, ErrorCode> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::HOST, HeaderValue::from_bytes(v).unwrap_or_else(|e| panic!("{e}")));
        }
        let uri: Uri = uri.parse().unwrap_or_else(|e| panic!("{e}"));
        requested_hosts(version, &headers, &uri)
            .map(|hosts| hosts.into_iter().flatten().map(str::to_owned).collect())
            .map_err(|e| e.code)
    }

    #[test]
    fn the_host_check_fails_closed() {
        assert_eq!(hosts(Version::HTTP_11, &[b"127.0.0.1:7821"], "/v1/models"), Ok(vec!["127.0.0.1".into()]));
        assert_eq!(hosts(Version::HTTP_11, &[], "/v1/models"), Err(ErrorCode::InvalidHost));
        assert_eq!(hosts(Version::HTTP_10, &[], "/v1/models"), Ok(vec![]));
        assert_eq!(hosts(Version::HTTP_11, &[b"localhost", b"localhost"], "/"), Err(ErrorCode::InvalidHost));
        assert_eq!(hosts(Version::HTTP_11, &[b"local\xffhost"], "/"), Err(ErrorCode::InvalidHost));
        assert_eq!(hosts(Version::HTTP_11, &[b""], "/"), Err(ErrorCode::InvalidHost));
        assert_eq!(
            hosts(Version::HTTP_11, &[b"localhost"], "http://evil.example/v1/models"),
            Ok(vec!["localhost".into(), "evil.example".into()])
        );
    }
}
