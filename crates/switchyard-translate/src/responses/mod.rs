//! OpenAI Responses: requests, complete answers and streams, read into and written
//! from the canonical model.

pub mod request;
pub mod response;
pub mod stream;

use serde_json::{Value, json};

use crate::ir::{Reasoning, StopReason, Usage};
use crate::{json, thinking};

/// Responses `usage`: `input_tokens` includes cached tokens, the canonical input
/// does not.
pub(crate) fn usage_from(u: Option<&Value>) -> Usage {
    let Some(u) = u.filter(|u| u.is_object()) else { return Usage::default() };
    let details = |k: &str, f: &str| u.get(k).map_or(0, |d| json::u64(d, f));
    let cached = details("input_tokens_details", "cached_tokens");
    Usage {
        input: json::u64(u, "input_tokens").saturating_sub(cached),
        output: json::u64(u, "output_tokens"),
        cache_read: cached,
        cache_write: 0,
        reasoning: details("output_tokens_details", "reasoning_tokens"),
    }
}

/// Canonical usage as Responses `usage`.
pub(crate) fn usage_to(u: &Usage) -> Value {
    json!({
        "input_tokens": u.total_input(),
        "input_tokens_details": {"cached_tokens": u.cache_read},
        "output_tokens": u.output,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.total_input() + u.output,
    })
}

/// The stop of a finished response: its status, why it is incomplete, and whether
/// it called tools.
pub(crate) fn stop_from(response: &Value, called_tools: bool) -> StopReason {
    let reason = response.get("incomplete_details").and_then(|d| json::str(d, "reason"));
    match (json::str(response, "status"), reason) {
        (Some("incomplete"), Some("content_filter")) => StopReason::ContentFilter,
        (Some("incomplete"), _) => StopReason::MaxTokens,
        _ if called_tools => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

/// `(status, incomplete_details)` for a canonical stop.
pub(crate) fn status_to(stop: &StopReason) -> (&'static str, Value) {
    match stop {
        StopReason::MaxTokens => ("incomplete", json!({"reason": "max_output_tokens"})),
        StopReason::ContentFilter | StopReason::Refusal => {
            ("incomplete", json!({"reason": "content_filter"}))
        }
        _ => ("completed", Value::Null),
    }
}

/// A reasoning item's origin, from its `encrypted_content` (which may carry
/// another family's proof, see [`thinking`]).
pub(crate) fn reasoning_origin(item: &Value) -> (Reasoning, Option<String>) {
    let encrypted = json::str(item, "encrypted_content");
    if let Some(decoded) = encrypted.and_then(thinking::decode) {
        return decoded;
    }
    (
        Reasoning::Responses {
            id: json::str(item, "id").map(str::to_owned),
            encrypted: encrypted.map(str::to_owned),
        },
        None,
    )
}

/// A reasoning item's readable text (summary, else full reasoning text).
pub(crate) fn reasoning_text(item: &Value) -> String {
    let summary: Vec<&str> = json::arr(item, "summary").iter().filter_map(|s| json::str(s, "text")).collect();
    if !summary.is_empty() {
        return summary.join("\n\n");
    }
    json::arr(item, "content").iter().filter_map(|s| json::str(s, "text")).collect::<Vec<_>>().join("")
}

/// A reasoning item for a Responses client (foreign proofs carried as markers).
pub(crate) fn reasoning_item(id: &str, text: &str, origin: &Reasoning) -> Value {
    let summary = if text.is_empty() { json!([]) } else { json!([{"type": "summary_text", "text": text}]) };
    // Without its encrypted content an OpenAI item cannot be replayed (`store` is
    // off); anything else carries its origin as a marker.
    let encrypted = match origin {
        Reasoning::Responses { encrypted: Some(e), .. } => json!(e),
        Reasoning::Responses { encrypted: None, .. } => Value::Null,
        other => json!(thinking::encode(other, text)),
    };
    let mut item = json!({"id": id, "type": "reasoning", "summary": summary});
    if !encrypted.is_null() {
        item["encrypted_content"] = encrypted;
    }
    item
}
