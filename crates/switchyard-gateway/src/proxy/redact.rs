//! Upstream error text never carries a credential onward (issue 10, item 6): some
//! OpenAI-compatible servers echo the key they were sent ("invalid x-api-key:
//! sk-…"). Before an upstream's error text is relayed to the client, summarised in
//! the client's error, or handed to the engine (whose `lastError` the UI and API
//! show), the connection's own secrets are replaced, and so is anything shaped like
//! an API key or token of any provider (a proxy may echo a key we never sent).

use std::borrow::Cow;

use secrecy::ExposeSecret;

use crate::routing::Connection;
use crate::routing::connection::UpstreamAuth;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Prefixes of well-known API keys and tokens (`sk-ant-…`, `sk-proj-…`, Google's
/// `AIza…`, xAI, Groq, GitHub, Hugging Face, Slack-style bearer tokens).
const KEY_PREFIXES: [&str; 9] = ["sk-", "sk_", "AIza", "xai-", "gsk_", "ghp_", "github_pat_", "hf_", "xoxb-"];

/// A token after a prefix must be at least this long to count as a key (so words
/// like "sk-learn" in prose survive).
const MIN_KEY_TAIL: usize = 16;

/// The secrets of one connection, ready to scrub text with.
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// The connection's API key, access token and refresh token.
    pub fn for_connection(conn: &Connection) -> Redactor {
        let mut secrets = Vec::new();
        let header = match &conn.auth {
            UpstreamAuth::XApiKey(v) | UpstreamAuth::Bearer(v) | UpstreamAuth::OauthBearer(v) => {
                v.to_str().ok()
            }
            UpstreamAuth::None => None,
        };
        if let Some(h) = header {
            secrets.push(h.strip_prefix("Bearer ").unwrap_or(h).to_owned());
        }
        if let Some(oauth) = &conn.oauth {
            secrets.push(oauth.refresh_token.expose_secret().to_owned());
        }
        // Very short values would redact ordinary words; real credentials are long.
        secrets.retain(|s| s.len() >= 8);
        Redactor { secrets }
    }

    /// `text` with every secret and key-shaped token replaced by [`REDACTED`].
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        match redact_key_shapes(&out) {
            Some(scrubbed) => Cow::Owned(scrubbed),
            None => out,
        }
    }
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// Replaces key-shaped tokens; `None` when there are none.
fn redact_key_shapes(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < text.len() {
        let starts_token = text[..i].chars().next_back().is_none_or(|c| !is_key_char(c));
        let prefix = starts_token.then(|| KEY_PREFIXES.iter().find(|p| text[i..].starts_with(**p))).flatten();
        if let Some(prefix) = prefix {
            let tail = text[i + prefix.len()..]
                .find(|c: char| !is_key_char(c))
                .unwrap_or(text.len() - i - prefix.len());
            if tail >= MIN_KEY_TAIL {
                out.push_str(&text[copied..i]);
                out.push_str(REDACTED);
                i += prefix.len() + tail;
                copied = i;
                continue;
            }
        }
        i += text[i..].chars().next().map_or(1, char::len_utf8);
    }
    (copied > 0).then(|| {
        out.push_str(&text[copied..]);
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(secrets: &[&str]) -> Redactor {
        Redactor { secrets: secrets.iter().map(|s| (*s).to_owned()).collect() }
    }

    #[test]
    fn the_connections_own_secret_is_replaced_wherever_it_appears() {
        let r = redactor(&["local-secret-1234"]);
        assert_eq!(r.redact("bad key local-secret-1234!"), "bad key [REDACTED]!");
        assert_eq!(r.redact("nothing here"), "nothing here");
    }

    #[test]
    fn key_shaped_tokens_of_any_provider_are_replaced() {
        let r = redactor(&[]);
        assert_eq!(
            r.redact("invalid x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrSt, try again"),
            "invalid x-api-key: [REDACTED], try again"
        );
        assert_eq!(r.redact("{\"key\":\"AIzaSyA1234567890abcdefgh\"}"), "{\"key\":\"[REDACTED]\"}");
        assert_eq!(r.redact("use sk-learn for that"), "use sk-learn for that", "short tails are words");
        assert_eq!(
            r.redact("task-0123456789abcdefghij"),
            "task-0123456789abcdefghij",
            "only at a token start"
        );
        assert_eq!(r.redact("ключ sk-proj-0123456789abcdefXYZ ✓"), "ключ [REDACTED] ✓");
    }
}
