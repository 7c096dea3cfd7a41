//! Upstream request headers, built from scratch for every attempt.
//!
//! Only an allowlist of client headers is copied (protocol version and beta flags,
//! user agent, `accept`); client auth, session-affinity and lease headers, cookies,
//! `accept-encoding` and hop-by-hop headers never reach an upstream. Not asking for
//! compression keeps the relayed bytes plain, so an error event can always be
//! appended to an interrupted stream.

use http::{HeaderMap, HeaderName, HeaderValue, header};
use switchyard_types::ApiFormat;

use crate::header_names::{ANTHROPIC_BETA, ANTHROPIC_VERSION, OPENAI_BETA, X_APP};
use crate::routing::Connection;
use crate::routing::connection::UpstreamAuth;

/// The Anthropic API version sent when the client sent none.
pub const DEFAULT_ANTHROPIC_VERSION: &str = "2023-06-01";
/// The beta flag Anthropic requires on requests authenticated with an OAuth token.
pub const OAUTH_BETA_FLAG: &str = "oauth-2025-04-20";
/// The beta flag of the 1M-token context window (asked for with a `[1m]` model id).
pub const LONG_CONTEXT_BETA_FLAG: &str = "context-1m-2025-08-07";

/// Client headers copied verbatim to every upstream.
const PASS_THROUGH: [HeaderName; 2] = [header::ACCEPT, header::USER_AGENT];
/// Client headers copied only to Anthropic-format upstreams.
const PASS_THROUGH_ANTHROPIC: [HeaderName; 3] = [ANTHROPIC_VERSION, ANTHROPIC_BETA, X_APP];
/// Client headers copied only to OpenAI-format upstreams.
const PASS_THROUGH_OPENAI: [HeaderName; 1] = [OPENAI_BETA];

/// Builds the upstream headers for one attempt.
pub fn upstream_headers(client: &HeaderMap, connection: &Connection) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(8);
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for name in PASS_THROUGH {
        if let Some(v) = client.get(&name) {
            out.insert(name, v.clone());
        }
    }
    match connection.api_format {
        ApiFormat::Anthropic => {
            for name in PASS_THROUGH_ANTHROPIC {
                if let Some(v) = client.get(&name) {
                    out.insert(name, v.clone());
                }
            }
            if !out.contains_key(&ANTHROPIC_VERSION) {
                out.insert(ANTHROPIC_VERSION, HeaderValue::from_static(DEFAULT_ANTHROPIC_VERSION));
            }
        }
        ApiFormat::Openai | ApiFormat::OpenaiChat | ApiFormat::OpenaiResponses => {
            for name in PASS_THROUGH_OPENAI {
                if let Some(v) = client.get(&name) {
                    out.insert(name, v.clone());
                }
            }
        }
    }
    match &connection.auth {
        UpstreamAuth::XApiKey(v) => {
            out.insert(HeaderName::from_static("x-api-key"), v.clone());
        }
        UpstreamAuth::Bearer(v) => {
            out.insert(header::AUTHORIZATION, v.clone());
        }
        UpstreamAuth::OauthBearer(v) => {
            out.insert(header::AUTHORIZATION, v.clone());
            add_beta_flag(&mut out, OAUTH_BETA_FLAG);
        }
        UpstreamAuth::None => {}
    }
    if let Some(basic) = &connection.url_basic_auth {
        out.entry(header::AUTHORIZATION).or_insert_with(|| basic.clone());
    }
    out
}

/// Appends `flag` to the comma-separated `anthropic-beta` list unless present.
pub(crate) fn add_beta_flag(headers: &mut HeaderMap, flag: &str) {
    let existing = headers.get(&ANTHROPIC_BETA).and_then(|v| v.to_str().ok()).unwrap_or("");
    if existing.split(',').any(|f| f.trim() == flag) {
        return;
    }
    let merged = if existing.trim().is_empty() { flag.to_owned() } else { format!("{existing},{flag}") };
    if let Ok(v) = HeaderValue::try_from(merged) {
        headers.insert(ANTHROPIC_BETA, v);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchyard_types::{AuthKind, UnixMillis};

    use super::*;
    use crate::store::ConnectionRecord;

    fn connection(format: ApiFormat, auth: AuthKind) -> Connection {
        Connection::from_record(
            &ConnectionRecord {
                id: "c".into(),
                provider: "anthropic".into(),
                api_format: format,
                name: "c".into(),
                auth_kind: auth,
                api_key: Some("upstream-key".into()),
                access_token: Some("oauth-token".into()),
                refresh_token: None,
                token_expires_at: None,
                base_url: None,
                priority: 0,
                enabled: true,
                max_concurrent: None,
                rate_limit_overrides: Default::default(),
                rate_limit_protection: None,
                models: vec![],
                provider_specific: json!({}),
                created_at: UnixMillis(0),
                updated_at: UnixMillis(0),
                version: 1,
            },
            &Default::default(),
        )
    }

    fn client() -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("authorization", "Bearer client-key"),
            ("x-api-key", "client-key"),
            ("anthropic-version", "2099-01-01"),
            ("anthropic-beta", "a-1,b-2"),
            ("x-claude-code-session-id", "s"),
            ("x-switchyard-lease-owner", "vlo_x"),
            ("cookie", "c=1"),
            ("accept-encoding", "gzip"),
            ("user-agent", "claude-cli/2"),
        ] {
            h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn anthropic_api_key_gets_x_api_key_and_client_version() {
        let h = upstream_headers(&client(), &connection(ApiFormat::Anthropic, AuthKind::ApiKey));
        assert_eq!(h.get("x-api-key").map(|v| v.as_bytes()), Some(&b"upstream-key"[..]));
        assert_eq!(h.get("anthropic-version").map(|v| v.as_bytes()), Some(&b"2099-01-01"[..]));
        assert_eq!(h.get("anthropic-beta").map(|v| v.as_bytes()), Some(&b"a-1,b-2"[..]));
        assert!(h.get("authorization").is_none());
        for banned in ["x-claude-code-session-id", "x-switchyard-lease-owner", "cookie", "accept-encoding"] {
            assert!(h.get(banned).is_none(), "{banned} leaked");
        }
    }

    #[test]
    fn oauth_gets_bearer_and_beta_flag_once() {
        let h = upstream_headers(&client(), &connection(ApiFormat::Anthropic, AuthKind::Oauth));
        assert_eq!(h.get("authorization").map(|v| v.as_bytes()), Some(&b"Bearer oauth-token"[..]));
        assert_eq!(h.get("anthropic-beta").map(|v| v.as_bytes()), Some(&b"a-1,b-2,oauth-2025-04-20"[..]));
        assert!(h.get("x-api-key").is_none());
        assert!(h.get("authorization").is_some_and(|v| v.is_sensitive()));
    }

    #[test]
    fn openai_gets_bearer_and_no_anthropic_headers() {
        let h = upstream_headers(&client(), &connection(ApiFormat::Openai, AuthKind::ApiKey));
        assert_eq!(h.get("authorization").map(|v| v.as_bytes()), Some(&b"Bearer upstream-key"[..]));
        assert!(h.get("anthropic-version").is_none());
        assert!(h.get("x-api-key").is_none());
    }

    #[test]
    fn default_version_when_client_sent_none() {
        let h = upstream_headers(&HeaderMap::new(), &connection(ApiFormat::Anthropic, AuthKind::ApiKey));
        assert_eq!(
            h.get("anthropic-version").map(|v| v.as_bytes()),
            Some(DEFAULT_ANTHROPIC_VERSION.as_bytes())
        );
    }
}
