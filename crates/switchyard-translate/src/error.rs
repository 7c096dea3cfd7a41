//! Upstream error bodies in the client's envelope. The status is kept; the message
//! and kind are carried over; a body that is not a known envelope becomes the
//! message, trimmed.

use serde_json::{Value, json};

use crate::anthropic::stream::anthropic_error_type;
use crate::{Format, json};

/// The upstream's error `(kind, message)` from its body.
pub fn read_error(body: &[u8]) -> (Option<String>, String) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let cut: String = text.chars().take(2_000).collect();
        return (None, if cut.is_empty() { "the upstream answered with an error".to_owned() } else { cut });
    };
    let e = v.get("error").unwrap_or(&v);
    let kind = json::str(e, "type").or_else(|| json::str(e, "code")).map(str::to_owned);
    let message = json::str(e, "message")
        .map(str::to_owned)
        .or_else(|| e.as_str().map(str::to_owned))
        .unwrap_or_else(|| v.to_string());
    (kind, message)
}

fn kind_for_status(status: u16) -> &'static str {
    match status {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// An upstream error answer (`status`, `body`) rendered in the client's format.
pub fn translate_error(client: Format, status: u16, body: &[u8]) -> Vec<u8> {
    let (kind, message) = read_error(body);
    let out = match client {
        Format::Messages => {
            let kind = kind.as_deref().map_or(kind_for_status(status), anthropic_error_type);
            let kind = if kind == "api_error" { kind_for_status(status) } else { kind };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Format::Chat | Format::Responses => {
            let kind = kind.unwrap_or_else(|| kind_for_status(status).to_owned());
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
    };
    out.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_cross_with_status_meaning_kept() {
        let anthropic =
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}"#;
        let chat: Value =
            serde_json::from_slice(&translate_error(Format::Chat, 400, anthropic)).unwrap_or_default();
        assert_eq!(chat["error"]["message"], "max_tokens: too big");
        assert_eq!(chat["error"]["type"], "invalid_request_error");
        let openai =
            br#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        let msgs: Value =
            serde_json::from_slice(&translate_error(Format::Messages, 429, openai)).unwrap_or_default();
        assert_eq!(msgs["type"], "error");
        assert_eq!(msgs["error"]["type"], "rate_limit_error");
        assert_eq!(msgs["error"]["message"], "Rate limit reached");
        let plain: Value = serde_json::from_slice(&translate_error(Format::Messages, 502, b"Bad Gateway"))
            .unwrap_or_default();
        assert_eq!(plain["error"]["message"], "Bad Gateway");
        assert_eq!(plain["error"]["type"], "api_error");
    }
}
