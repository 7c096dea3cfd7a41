//! Reasoning across formats. Each provider family verifies only its own reasoning
//! proof: an Anthropic `signature`, a Responses `encrypted_content`. When reasoning is
//! shown to a client of another format, its proof travels inside the field that
//! client replays (a thinking block's `signature`, a reasoning item's
//! `encrypted_content`) as a marker `swy1.<base64url JSON>`, so that on the next turn
//! the history can be given back to the family that produced it, and dropped for
//! any other (a foreign or missing proof makes the upstream reject the request).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::ir::Reasoning;

const PREFIX: &str = "swy1.";

/// The marker carrying `origin` (and, for Anthropic thinking, its text, which
/// Anthropic needs back verbatim with the signature).
pub fn encode(origin: &Reasoning, text: &str) -> String {
    let doc = match origin {
        Reasoning::Anthropic { signature } => json!({ "k": "anthropic", "sig": signature, "text": text }),
        Reasoning::AnthropicRedacted { data } => json!({ "k": "anthropic-redacted", "data": data }),
        Reasoning::Responses { id, encrypted } => json!({ "k": "responses", "id": id, "enc": encrypted }),
        Reasoning::Plain => json!({ "k": "plain" }),
    };
    format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(doc.to_string()))
}

/// Reads a marker: the origin and, for Anthropic thinking, the original text.
/// `None` when `s` is not a marker (a provider's own proof).
pub fn decode(s: &str) -> Option<(Reasoning, Option<String>)> {
    let b = URL_SAFE_NO_PAD.decode(s.strip_prefix(PREFIX)?).ok()?;
    let doc: Value = serde_json::from_slice(&b).ok()?;
    let text = |k: &str| doc.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(match doc.get("k").and_then(Value::as_str)? {
        "anthropic" => (Reasoning::Anthropic { signature: text("sig")? }, text("text")),
        "anthropic-redacted" => (Reasoning::AnthropicRedacted { data: text("data")? }, None),
        "responses" => (Reasoning::Responses { id: text("id"), encrypted: text("enc") }, None),
        _ => (Reasoning::Plain, None),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_foreign_proofs_are_not_markers() {
        for origin in [
            Reasoning::Anthropic { signature: "EqQBCkYI".into() },
            Reasoning::AnthropicRedacted { data: "opaque".into() },
            Reasoning::Responses { id: Some("rs_1".into()), encrypted: Some("gAAAA".into()) },
            Reasoning::Plain,
        ] {
            let m = encode(&origin, "because");
            assert_eq!(decode(&m).map(|d| d.0), Some(origin));
        }
        assert_eq!(decode("EqQBCkYIBRgCIkA"), None);
        assert_eq!(decode("swy1.!!"), None);
    }
}
