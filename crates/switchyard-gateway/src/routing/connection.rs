//! A routable connection: its upstream address and pre-built auth header.

use std::sync::Arc;

use http::HeaderValue;
use http::Uri;
use http::uri::PathAndQuery;
use secrecy::SecretString;
use serde_json::Value;
use switchyard_resilience::flow::{ConnectionFlow, FlowControl, FlowLimits};
use switchyard_types::{ApiFormat, AuthKind, UnixMillis};

use crate::store::ConnectionRecord;

/// Default base URL of the Anthropic API.
pub const ANTHROPIC_DEFAULT_BASE: &str = "https://api.anthropic.com";
/// Default base URL of the OpenAI API (already including `/v1`, as the SDKs do).
pub const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// The upstream path family a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamEndpoint {
    /// Anthropic `/v1/messages`.
    Messages,
    /// Anthropic `/v1/messages/count_tokens`.
    CountTokens,
    /// OpenAI `/chat/completions`.
    ChatCompletions,
    /// OpenAI `/responses`.
    Responses,
}

impl UpstreamEndpoint {
    /// The path appended to a base URL, following each SDK's convention: Anthropic
    /// bases are host roots, OpenAI bases usually end in `/v1`.
    pub fn path(self) -> &'static str {
        match self {
            UpstreamEndpoint::Messages => "/v1/messages",
            UpstreamEndpoint::CountTokens => "/v1/messages/count_tokens",
            UpstreamEndpoint::ChatCompletions => "/chat/completions",
            UpstreamEndpoint::Responses => "/responses",
        }
    }
}

/// How the upstream request authenticates, with the header value built once.
#[derive(Clone)]
pub enum UpstreamAuth {
    /// `x-api-key: <key>` (Anthropic API keys).
    XApiKey(HeaderValue),
    /// `Authorization: Bearer <token>` (OpenAI keys).
    Bearer(HeaderValue),
    /// `Authorization: Bearer <token>` plus the OAuth beta flag (Claude accounts).
    OauthBearer(HeaderValue),
    /// No credentials.
    None,
}

/// A connection as the request path sees it.
#[derive(Clone)]
pub struct Connection {
    /// Stable id.
    pub id: Arc<str>,
    /// The id as the `x-switchyard-connection` header of the answers it serves,
    /// made once (a clone shares its bytes); `None` if the id cannot be a header value.
    pub id_header: Option<HeaderValue>,
    /// Provider id.
    pub provider: Arc<str>,
    /// Display name.
    pub name: String,
    /// Upstream wire format.
    pub api_format: ApiFormat,
    /// Lower first.
    pub priority: i32,
    /// Routable.
    pub enabled: bool,
    /// Model catalogue.
    pub models: Vec<String>,
    /// Base URL without a trailing slash.
    pub base_url: String,
    /// Pre-built credentials.
    pub auth: UpstreamAuth,
    /// `Basic` credentials from a base URL written `scheme://user:pass@host`: sent
    /// when the connection's own auth sets no `authorization` (as reqwest did); the
    /// URLs the hop sends carry no credentials.
    pub url_basic_auth: Option<HeaderValue>,
    /// Upstream URLs per endpoint, parsed once (`UpstreamEndpoint` order).
    urls: [Option<Uri>; 4],
    /// OAuth refresh material (OAuth connections with a refresh token).
    pub oauth: Option<OauthRefresh>,
    /// Provider-specific options.
    pub provider_specific: Value,
    /// Flow control: gates and live counts (kept across reloads by [`FlowControl`]).
    pub flow: Arc<ConnectionFlow>,
    /// How the connection authenticates (API-key connections are protected under
    /// `requestQueue.autoEnableApiKeyProviders`).
    pub auth_kind: AuthKind,
    /// Rate-limit protection forced on by the connection.
    pub protection_forced: bool,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("provider", &self.provider)
            .field("base_url", &without_credentials(&self.base_url))
            .finish_non_exhaustive()
    }
}

/// Default OAuth token endpoint of Claude accounts.
pub const CLAUDE_TOKEN_URL: &str = "https://console.anthropic.com/v1/oauth/token";
/// Claude Code's public OAuth client id (its tokens are refreshed with it).
pub const CLAUDE_OAUTH_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";

/// What refreshing an OAuth connection's access token needs.
#[derive(Clone)]
pub struct OauthRefresh {
    /// The refresh token (never logged: `Debug` is not derived).
    pub refresh_token: SecretString,
    /// When the access token expires, if known.
    pub expires_at: Option<UnixMillis>,
    /// Token endpoint (`provider_specific.oauthTokenUrl`, else Claude's).
    pub token_url: String,
    /// OAuth client id (`provider_specific.oauthClientId`, else Claude Code's).
    pub client_id: String,
}

impl OauthRefresh {
    fn from_record(record: &ConnectionRecord, token: String) -> OauthRefresh {
        let option = |key: &str| record.provider_specific.get(key).and_then(Value::as_str).map(str::to_owned);
        OauthRefresh {
            refresh_token: SecretString::from(token),
            expires_at: record.token_expires_at,
            token_url: option("oauthTokenUrl").unwrap_or_else(|| CLAUDE_TOKEN_URL.to_owned()),
            client_id: option("oauthClientId").unwrap_or_else(|| CLAUDE_OAUTH_CLIENT_ID.to_owned()),
        }
    }
}

/// The base URL a connection uses when it has no override, if the provider has one.
pub fn default_base_url(provider: &str) -> Option<&'static str> {
    match provider {
        "anthropic" => Some(ANTHROPIC_DEFAULT_BASE),
        "openai" => Some(OPENAI_DEFAULT_BASE),
        _ => None,
    }
}

/// The base URL a record resolves to (override, else provider default, else empty).
pub fn effective_base_url(record: &ConnectionRecord) -> String {
    let base = record.base_url.as_deref().or_else(|| default_base_url(&record.provider)).unwrap_or_default();
    base.trim_end_matches('/').to_owned()
}

fn sensitive(value: String) -> Option<HeaderValue> {
    let mut v = HeaderValue::try_from(value).ok()?;
    v.set_sensitive(true);
    Some(v)
}

/// Whether rate-limit protection is on for `conn` under `settings` (SPEC §4.6): forced
/// by the connection, or an API-key connection while `autoEnableApiKeyProviders` is
/// on (the env `RATE_LIMIT_AUTO_ENABLE` wins; already layered into `settings`).
pub fn is_protected(conn: &Connection, settings: &switchyard_types::ResilienceSettings) -> bool {
    conn.protection_forced
        || (settings.request_queue.auto_enable_api_key_providers && conn.auth_kind == AuthKind::ApiKey)
}

/// The longest retry hint that paces a protected connection's queue (its queue-wait
/// budget); `None` when the connection is not protected.
pub fn pace_budget_ms(conn: &Connection, settings: &switchyard_types::ResilienceSettings) -> Option<u32> {
    is_protected(conn, settings).then(|| conn.flow.max_wait_ms(settings.request_queue.max_wait_ms))
}

/// The flow-control limits a stored record asks for: the connection cap is the
/// stricter of `max_concurrent` and `rateLimitOverrides.maxConcurrent`.
pub fn flow_limits(record: &ConnectionRecord) -> FlowLimits {
    let o = &record.rate_limit_overrides;
    let cap = match (record.max_concurrent, o.max_concurrent) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    FlowLimits {
        cap,
        model_caps: o.model_concurrency.clone(),
        max_wait_ms: o.max_wait_ms,
        execution_max_wait_ms: o.execution_max_wait_ms,
    }
}

impl Connection {
    /// Builds the routable form of a stored record, configuring its flow state in
    /// `flows`.
    pub fn from_record(record: &ConnectionRecord, flows: &FlowControl) -> Connection {
        let auth = match (record.auth_kind, record.api_format) {
            (AuthKind::ApiKey, ApiFormat::Anthropic) => {
                record.api_key.clone().and_then(sensitive).map_or(UpstreamAuth::None, UpstreamAuth::XApiKey)
            }
            (AuthKind::ApiKey, _) => record
                .api_key
                .as_ref()
                .and_then(|k| sensitive(format!("Bearer {k}")))
                .map_or(UpstreamAuth::None, UpstreamAuth::Bearer),
            (AuthKind::Oauth, _) => record
                .access_token
                .as_ref()
                .and_then(|t| sensitive(format!("Bearer {t}")))
                .map_or(UpstreamAuth::None, UpstreamAuth::OauthBearer),
            (AuthKind::None, _) => UpstreamAuth::None,
        };
        let base_url = effective_base_url(record);
        let parse = |e: UpstreamEndpoint| upstream_uri(&format!("{base_url}{}", e.path()));
        let url_basic_auth = basic_auth_in(&base_url);
        let urls = [
            parse(UpstreamEndpoint::Messages),
            parse(UpstreamEndpoint::CountTokens),
            parse(UpstreamEndpoint::ChatCompletions),
            parse(UpstreamEndpoint::Responses),
        ];
        let oauth = (record.auth_kind == AuthKind::Oauth)
            .then(|| record.refresh_token.clone())
            .flatten()
            .map(|token| OauthRefresh::from_record(record, token));
        Connection {
            oauth,
            id: Arc::from(record.id.as_str()),
            id_header: HeaderValue::from_str(&record.id).ok(),
            provider: Arc::from(record.provider.as_str()),
            name: record.name.clone(),
            api_format: record.api_format,
            priority: record.priority,
            enabled: record.enabled,
            models: record.models.clone(),
            base_url,
            auth,
            url_basic_auth,
            urls,
            provider_specific: record.provider_specific.clone(),
            flow: flows.configure(&record.id, &record.provider, &flow_limits(record)),
            auth_kind: record.auth_kind,
            protection_forced: record.rate_limit_protection == Some(true),
        }
    }

    /// The full upstream URL for `endpoint`, keeping the client's query string. The
    /// base is parsed once per connection, not per request.
    pub fn url(&self, endpoint: UpstreamEndpoint, query: Option<&str>) -> Option<Uri> {
        let index = match endpoint {
            UpstreamEndpoint::Messages => 0,
            UpstreamEndpoint::CountTokens => 1,
            UpstreamEndpoint::ChatCompletions => 2,
            UpstreamEndpoint::Responses => 3,
        };
        let url = self.urls[index].as_ref()?;
        match query.filter(|q| !q.is_empty()) {
            None => Some(url.clone()),
            Some(q) => {
                let mut parts = url.clone().into_parts();
                let path = parts.path_and_query.as_ref().map_or("/", PathAndQuery::path);
                parts.path_and_query = Some(PathAndQuery::try_from(format!("{path}?{q}")).ok()?);
                Uri::from_parts(parts).ok()
            }
        }
    }
}

/// An upstream URL as the proxy hop sends it: parsed (and normalized: host case,
/// percent-encoding, dot segments) as a WHATWG URL first, as the settings validate
/// it, then as an absolute `http`/`https` URI.
fn upstream_uri(text: &str) -> Option<Uri> {
    let mut url = reqwest::Url::parse(text).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    // Credentials never travel in the URL (HTTP/2 would put them in `:authority`);
    // they go as a header ([`basic_auth_in`]).
    url.set_username("").ok()?;
    url.set_password(None).ok()?;
    Uri::try_from(url.as_str()).ok()
}

/// `url` with any `user:pass@` replaced by `***@`: base URLs may carry credentials,
/// which never reach a log line or an error message.
pub fn without_credentials(url: &str) -> std::borrow::Cow<'_, str> {
    let Some((scheme, rest)) = url.split_once("://") else { return url.into() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest.get(..authority_end).and_then(|authority| authority.rfind('@')) {
        Some(at) => {
            format!("{scheme}://{MASKED_CREDENTIALS}@{}", rest.get(at + 1..).unwrap_or_default()).into()
        }
        None => url.into(),
    }
}

/// What the API shows in place of a base URL's `user:pass@` (see [`without_credentials`]).
pub const MASKED_CREDENTIALS: &str = "***";

/// The raw `user:pass` of `url`'s authority, when it has one.
fn credentials_of(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.get(..rest.find(['/', '?', '#']).unwrap_or(rest.len()))?;
    authority.rfind('@').and_then(|at| authority.get(..at))
}

/// A base URL coming back from a client that only ever saw it masked: `***@` stands
/// for the credentials already stored, so a form that round-trips the URL (or
/// changes only its host or path) keeps them. `Err` when the URL carries the mask
/// but nothing is stored to put back.
pub fn restore_credentials(incoming: String, stored: Option<&str>) -> Result<String, String> {
    if credentials_of(&incoming) != Some(MASKED_CREDENTIALS) {
        return Ok(incoming);
    }
    let Some(kept) = stored.and_then(credentials_of) else {
        return Err(format!(
            "holds the masked credentials '{MASKED_CREDENTIALS}@' but this connection has none stored; type them in full"
        ));
    };
    let (scheme, rest) = incoming.split_once("://").unwrap_or_default();
    let after = rest.split_once('@').map_or(rest, |(_, after)| after);
    Ok(format!("{scheme}://{kept}@{after}"))
}

/// The `Basic` header for the `user:pass@` of `base_url`, percent-decoded.
fn basic_auth_in(base_url: &str) -> Option<HeaderValue> {
    use base64::Engine as _;
    let url = reqwest::Url::parse(base_url).ok()?;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8().ok().map(|d| d.into_owned());
    let user = decode(url.username())?;
    let password = url.password().map_or(Some(String::new()), decode)?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    sensitive(format!("Basic {encoded}"))
}

#[cfg(test)]
mod credential_tests {
    use super::*;

    #[test]
    fn credentials_in_a_base_url_are_masked_and_sent_as_basic_auth() {
        let url = "https://user:p%40ss@example.test:8443/v1?x=1";
        assert_eq!(without_credentials(url), "https://***@example.test:8443/v1?x=1");
        assert_eq!(without_credentials("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
        // An '@' after the authority is not a credential.
        assert_eq!(without_credentials("http://h/v1/a@b"), "http://h/v1/a@b");
        let basic = basic_auth_in(url).and_then(|v| v.to_str().ok().map(str::to_owned));
        assert_eq!(basic.as_deref(), Some("Basic dXNlcjpwQHNz"));
        let uri = upstream_uri(url).map(|u| u.to_string());
        assert_eq!(uri.as_deref(), Some("https://example.test:8443/v1?x=1"));
    }

    #[test]
    fn masked_credentials_coming_back_are_the_stored_ones() {
        let stored = Some("https://user:p%40ss@old.test/v1");
        // Round-tripped as shown, or with a new host or path: the stored pair stays.
        let shown = without_credentials("https://user:p%40ss@old.test/v1").into_owned();
        assert_eq!(restore_credentials(shown, stored).as_deref(), Ok("https://user:p%40ss@old.test/v1"));
        let moved = "https://***@new.test:9/v2".to_owned();
        assert_eq!(restore_credentials(moved, stored).as_deref(), Ok("https://user:p%40ss@new.test:9/v2"));
        // New credentials, or none, replace them.
        let typed = "https://other:pw@new.test/v1".to_owned();
        assert_eq!(restore_credentials(typed, stored).as_deref(), Ok("https://other:pw@new.test/v1"));
        let bare = "https://new.test/v1".to_owned();
        assert_eq!(restore_credentials(bare, stored).as_deref(), Ok("https://new.test/v1"));
        // The mask with nothing stored behind it is refused, never sent as a user name.
        let orphan = restore_credentials("https://***@new.test/v1".to_owned(), Some("https://old.test/v1"));
        assert!(orphan.is_err_and(|e| e.contains("masked credentials")));
        assert!(restore_credentials("https://***@new.test/v1".to_owned(), None).is_err());
    }
}
