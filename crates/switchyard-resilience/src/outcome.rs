//! What the gateway tells the engine: which target an attempt went to, how the
//! connection authenticates, and how the attempt ended. Plain borrowed data, so the
//! request path reports an outcome without copying bodies or headers.

use std::sync::Arc;

use switchyard_types::AuthKind;

/// The category of a connection: picks the breaker profile and cooldown base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthCategory {
    /// Subscription accounts (OAuth).
    Oauth,
    /// API keys.
    ApiKey,
    /// Local or LAN model servers without credentials.
    Local,
}

impl AuthCategory {
    /// The category a connection's auth kind implies.
    pub fn from_auth_kind(kind: AuthKind) -> AuthCategory {
        match kind {
            AuthKind::Oauth => AuthCategory::Oauth,
            AuthKind::ApiKey => AuthCategory::ApiKey,
            AuthKind::None => AuthCategory::Local,
        }
    }
}

/// What the engine needs to know about a connection, registered with
/// [`crate::Engine::sync_connections`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionConfig {
    /// Connection id (unique across providers).
    pub id: String,
    /// Provider id (the breaker's scope).
    pub provider: String,
    /// Profile category.
    pub category: AuthCategory,
    /// Skip transient connection cooldowns (terminal states and lockouts still apply).
    pub disable_cooling: bool,
    /// This connection's own quota families (`(model prefix, family)`), replacing the
    /// provider's built-in ones; `None` keeps the provider's.
    pub quota_families: Option<Vec<(String, String)>>,
}

impl ConnectionConfig {
    /// The quota family of `model` on this connection: its own list when it has one,
    /// else the provider's families; a model without a rule is its own family.
    pub fn family_of<'a>(
        &'a self,
        provider_families: &'a crate::engine::QuotaFamilies,
        model: &'a str,
    ) -> &'a str {
        match &self.quota_families {
            Some(own) => own
                .iter()
                .find(|(prefix, _)| model.starts_with(prefix.as_str()))
                .map_or(model, |(_, family)| family.as_str()),
            None => provider_families.family_of(&self.provider, model),
        }
    }
}

/// A routing target as the gateway holds it. Implemented by [`Target`]; the gateway
/// may implement it for its own candidate type to avoid copying.
pub trait Candidate {
    /// Provider id.
    fn provider(&self) -> &str;
    /// Connection id.
    fn connection(&self) -> &str;
    /// Upstream model id.
    fn model(&self) -> &str;
}

/// A borrowed target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target<'a> {
    /// Provider id.
    pub provider: &'a str,
    /// Connection id.
    pub connection: &'a str,
    /// Upstream model id.
    pub model: &'a str,
}

/// A target by shared ids, as an [`crate::engine::Attempt`] keeps them: a caller
/// that holds its ids in `Arc`s hands over clones, where a [`Target`] is copied
/// into three new strings (on every request, at dispatch).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedTarget {
    /// Provider id.
    pub provider: Arc<str>,
    /// Connection id.
    pub connection: Arc<str>,
    /// Upstream model id.
    pub model: Arc<str>,
}

impl From<Target<'_>> for SharedTarget {
    fn from(t: Target<'_>) -> SharedTarget {
        SharedTarget {
            provider: Arc::from(t.provider),
            connection: Arc::from(t.connection),
            model: Arc::from(t.model),
        }
    }
}

impl<C: Candidate + ?Sized> Candidate for &C {
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn connection(&self) -> &str {
        (**self).connection()
    }
    fn model(&self) -> &str {
        (**self).model()
    }
}

impl Candidate for Target<'_> {
    fn provider(&self) -> &str {
        self.provider
    }
    fn connection(&self) -> &str {
        self.connection
    }
    fn model(&self) -> &str {
        self.model
    }
}

/// Read access to response headers by lower-case name.
pub trait HeaderSource {
    /// The first value of `name`, if present and valid UTF-8.
    fn header(&self, name: &str) -> Option<&str>;

    /// Whether some header's (lower-case) name contains `fragment`: `false` lets a
    /// reader skip a family of look-ups (most answers carry no rate-limit header,
    /// and each look-up by `&str` parses its name anew). `true` when unsure.
    fn mentions(&self, _fragment: &str) -> bool {
        true
    }
}

impl HeaderSource for http::HeaderMap {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|v| v.to_str().ok())
    }

    fn mentions(&self, fragment: &str) -> bool {
        self.keys().any(|name| name.as_str().contains(fragment))
    }
}

impl HeaderSource for &[(&str, &str)] {
    fn header(&self, name: &str) -> Option<&str> {
        self.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
    }
}

/// No headers at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHeaders;

impl HeaderSource for NoHeaders {
    fn header(&self, _name: &str) -> Option<&str> {
        None
    }
}

/// A failure below HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// The upstream could not be reached (refused, DNS, TLS).
    Connect,
    /// No response (or no first body byte) within the start timeout.
    Timeout,
    /// The response broke before its first body byte reached the client.
    BrokenBeforeFirstByte,
    /// The stream broke after bytes had reached the client (no failover is possible
    /// then; the client gets an error event), so only the record is left to keep.
    BrokenMidStream,
    /// The OAuth token endpoint could not be reached to refresh an expired token:
    /// the connection cannot be used now, but its credentials were not rejected and
    /// the provider's API did not fail.
    TokenEndpoint,
}

/// How a failed attempt ended.
#[derive(Clone, Copy)]
pub enum AttemptOutcome<'a> {
    /// The upstream answered with a failure status.
    Http {
        /// Upstream status.
        status: u16,
        /// Response headers.
        headers: &'a dyn HeaderSource,
        /// The error body (or its first part); may be empty.
        body: &'a str,
    },
    /// A transport failure.
    Transport(TransportFailure),
    /// The stream produced no model output within the stall budget.
    StreamStall,
    /// A gateway-side failure (queue timeout, semaphore, client gone): never held
    /// against the upstream.
    Local,
}

impl std::fmt::Debug for AttemptOutcome<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptOutcome::Http { status, body, .. } => {
                f.debug_struct("Http").field("status", status).field("body_len", &body.len()).finish()
            }
            AttemptOutcome::Transport(t) => f.debug_tuple("Transport").field(t).finish(),
            AttemptOutcome::StreamStall => f.write_str("StreamStall"),
            AttemptOutcome::Local => f.write_str("Local"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_sources_are_case_insensitive() {
        let pairs: &[(&str, &str)] = &[("Retry-After", "7")];
        assert_eq!((&pairs).header("retry-after"), Some("7"));
        let mut map = http::HeaderMap::new();
        map.insert("retry-after", http::HeaderValue::from_static("7"));
        assert_eq!(map.header("retry-after"), Some("7"));
        assert_eq!(NoHeaders.header("retry-after"), None);
    }

    #[test]
    fn categories_follow_auth_kind() {
        assert_eq!(AuthCategory::from_auth_kind(AuthKind::Oauth), AuthCategory::Oauth);
        assert_eq!(AuthCategory::from_auth_kind(AuthKind::ApiKey), AuthCategory::ApiKey);
        assert_eq!(AuthCategory::from_auth_kind(AuthKind::None), AuthCategory::Local);
    }
}
