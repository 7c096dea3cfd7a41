//! Which client session a request belongs to (SPEC §4.4): from the session headers
//! real agents send, else from the body where they put it, never from anything that
//! changes every turn. The key is a hash: session ids are not secrets, but nothing
//! the client sent is kept or shown as is.
//!
//! Headers, first match wins: `x-switchyard-session` (ours, explicit),
//! `x-claude-code-session-id` (Claude Code), `session-id` (Codex CLI),
//! `x-codex-session-id`, `x-session-id`. Body: Claude Code's `metadata.user_id`
//! (a JSON string with `session_id`, or the older `user_…_account_…_session_<uuid>`
//! form), `metadata.session_id`, and the Responses API's `prompt_cache_key` (Codex
//! sends one per conversation).

use std::borrow::Cow;

use http::HeaderMap;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Session headers, in the order they are consulted. The upstream header builder
/// never copies them (it copies an allowlist), and the request log has no headers.
pub const SESSION_HEADERS: [&str; 5] =
    ["x-switchyard-session", "x-claude-code-session-id", "session-id", "x-codex-session-id", "x-session-id"];

/// Longest session id considered (longer values are cut before hashing).
const MAX_ID_CHARS: usize = 4_096;

/// A session, as a hash of where its id came from and the id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey(String);

impl SessionKey {
    /// `source:id`, hashed (SHA-256, 32 hex characters kept).
    pub fn new(source: &str, id: &str) -> SessionKey {
        let id: String = id.chars().take(MAX_ID_CHARS).collect();
        let digest = Sha256::new().chain_update(source).chain_update(b":").chain_update(id.trim()).finalize();
        let mut hex = hex::encode(digest);
        hex.truncate(32);
        SessionKey(hex)
    }

    /// The session as seen from one client key: two keys that happen to send the
    /// same session id (or `prompt_cache_key`) never share, or move, a pin.
    pub fn scoped_to(self, client_key: Option<&str>) -> SessionKey {
        match client_key {
            Some(key) => SessionKey::new(key, &self.0),
            None => self,
        }
    }

    /// A stored key, as read back.
    pub fn from_stored(hash: String) -> SessionKey {
        SessionKey(hash)
    }

    /// The hash.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Deserialize)]
struct BodyFields<'a> {
    #[serde(borrow, default)]
    metadata: Option<Metadata<'a>>,
    #[serde(borrow, default)]
    prompt_cache_key: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Metadata<'a> {
    #[serde(borrow, default)]
    user_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    session_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ClaudeCodeUser<'a> {
    #[serde(borrow, default)]
    session_id: Option<Cow<'a, str>>,
}

/// The session of a request, if it names one.
pub fn session_of(headers: &HeaderMap, body: &[u8]) -> Option<SessionKey> {
    for name in SESSION_HEADERS {
        if let Some(v) = headers.get(name).and_then(|v| v.to_str().ok()).filter(|v| !v.trim().is_empty()) {
            return Some(SessionKey::new("header", v));
        }
    }
    let fields: BodyFields<'_> = serde_json::from_slice(body).ok()?;
    if let Some(meta) = fields.metadata {
        if let Some(id) = meta.user_id.as_deref().and_then(claude_code_session) {
            return Some(SessionKey::new("claude-code", id));
        }
        if let Some(id) = meta.session_id.as_deref().filter(|s| !s.trim().is_empty()) {
            return Some(SessionKey::new("metadata", id));
        }
    }
    let key = fields.prompt_cache_key?;
    (!key.trim().is_empty()).then(|| SessionKey::new("prompt-cache", &key))
}

/// The session part of Claude Code's `metadata.user_id`: a JSON string such as
/// `{"device_id":…,"account_uuid":…,"session_id":"<uuid>"}`, or the older
/// `user_<hash>_account_<uuid>_session_<uuid>`. The user and account parts are the
/// same for every session of a machine, so they alone never make a session.
fn claude_code_session(user_id: &str) -> Option<&str> {
    if user_id.trim_start().starts_with('{') {
        let parsed: ClaudeCodeUser<'_> = serde_json::from_str(user_id).ok()?;
        return match parsed.session_id? {
            // Borrowed only when unescaped; re-find it in the input to return a slice.
            Cow::Borrowed(s) if !s.is_empty() => Some(s),
            Cow::Borrowed(_) => None,
            Cow::Owned(s) => user_id.find(s.as_str()).map(|i| &user_id[i..i + s.len()]),
        };
    }
    let (_, session) = user_id.rsplit_once("_session_")?;
    (!session.is_empty()).then_some(session)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap_or_else(|e| panic!("{e}")));
        }
        h
    }

    #[test]
    fn every_agent_header_names_a_session_and_ours_wins() {
        for name in SESSION_HEADERS {
            let key = session_of(&headers(&[(name, "abc")]), b"{}");
            assert_eq!(key, Some(SessionKey::new("header", "abc")), "{name}");
        }
        let both = headers(&[("x-session-id", "other"), ("x-switchyard-session", "mine")]);
        assert_eq!(session_of(&both, b"{}"), Some(SessionKey::new("header", "mine")));
        assert_eq!(session_of(&headers(&[("x-session-id", "  ")]), b"{}"), None);
    }

    #[test]
    fn claude_code_body_sessions_in_both_forms() {
        let json_form = serde_json::json!({"model": "m", "metadata": {"user_id":
            "{\"device_id\":\"d1\",\"account_uuid\":\"a1\",\"session_id\":\"6f1c-uuid\"}"}});
        let key = session_of(&HeaderMap::new(), json_form.to_string().as_bytes());
        assert_eq!(key, Some(SessionKey::new("claude-code", "6f1c-uuid")));
        let old_form = br#"{"metadata":{"user_id":"user_abc123_account_a1_session_6f1c-uuid"}}"#;
        assert_eq!(
            session_of(&HeaderMap::new(), old_form),
            Some(SessionKey::new("claude-code", "6f1c-uuid"))
        );
        // The device and account alone are the same for every session: no key.
        let no_session = br#"{"metadata":{"user_id":"{\"device_id\":\"d1\",\"account_uuid\":\"a1\"}"}}"#;
        assert_eq!(session_of(&HeaderMap::new(), no_session), None);
    }

    #[test]
    fn responses_prompt_cache_key_and_metadata_session_id() {
        let codex = br#"{"model":"gpt-5","input":[],"prompt_cache_key":"conv-42"}"#;
        assert_eq!(session_of(&HeaderMap::new(), codex), Some(SessionKey::new("prompt-cache", "conv-42")));
        let meta = br#"{"metadata":{"session_id":"s-1"}}"#;
        assert_eq!(session_of(&HeaderMap::new(), meta), Some(SessionKey::new("metadata", "s-1")));
        assert_eq!(session_of(&HeaderMap::new(), br#"{"messages":[{"role":"user","content":"hi"}]}"#), None);
    }

    #[test]
    fn client_keys_scope_their_sessions() {
        let k = SessionKey::new("header", "abc");
        assert_ne!(k.clone().scoped_to(Some("key-1")), k.clone().scoped_to(Some("key-2")));
        assert_eq!(k.clone().scoped_to(Some("key-1")), k.clone().scoped_to(Some("key-1")));
        assert_eq!(k.clone().scoped_to(None), k);
    }

    #[test]
    fn keys_are_hashes_that_differ_by_source() {
        let k = SessionKey::new("header", "abc");
        assert_eq!(k.as_str().len(), 32);
        assert!(!k.as_str().contains("abc"));
        assert_ne!(k, SessionKey::new("prompt-cache", "abc"));
    }
}
