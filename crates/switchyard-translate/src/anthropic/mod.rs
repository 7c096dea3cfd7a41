//! Anthropic Messages: requests, complete answers and streams, read into and
//! written from the canonical model.

pub mod request;
pub mod response;
pub mod stream;

use serde_json::{Value, json};

use crate::ir::{StopReason, Usage};
use crate::json;

/// `stop_reason` (with `stop_sequence`) as a canonical stop.
pub(crate) fn stop_from(reason: Option<&str>, sequence: Option<&str>) -> StopReason {
    match reason {
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("tool_use") => StopReason::ToolUse,
        Some("stop_sequence") => StopReason::StopSequence(sequence.map(str::to_owned)),
        Some("refusal") => StopReason::Refusal,
        Some("pause_turn") => StopReason::PauseTurn,
        _ => StopReason::EndTurn,
    }
}

/// A canonical stop as `(stop_reason, stop_sequence)`.
pub(crate) fn stop_to(stop: &StopReason) -> (&'static str, Value) {
    match stop {
        StopReason::EndTurn => ("end_turn", Value::Null),
        StopReason::MaxTokens => ("max_tokens", Value::Null),
        StopReason::ToolUse => ("tool_use", Value::Null),
        StopReason::StopSequence(s) => ("stop_sequence", s.clone().map_or(Value::Null, Value::String)),
        StopReason::Refusal | StopReason::ContentFilter => ("refusal", Value::Null),
        StopReason::PauseTurn => ("pause_turn", Value::Null),
    }
}

/// Anthropic `usage` (input excludes the cache, as in the canonical model).
pub(crate) fn usage_from(u: Option<&Value>) -> Usage {
    let Some(u) = u else { return Usage::default() };
    Usage {
        input: json::u64(u, "input_tokens"),
        output: json::u64(u, "output_tokens"),
        cache_read: json::u64(u, "cache_read_input_tokens"),
        cache_write: json::u64(u, "cache_creation_input_tokens"),
        reasoning: 0,
    }
}

/// Canonical usage as Anthropic `usage`.
pub(crate) fn usage_to(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input,
        "output_tokens": u.output,
        "cache_read_input_tokens": u.cache_read,
        "cache_creation_input_tokens": u.cache_write,
    })
}

/// Anthropic requires tool-use ids of `[A-Za-z0-9_-]+`; other formats' ids are
/// mapped onto that alphabet (the same way for a call and its result).
pub(crate) fn tool_id(id: &str) -> String {
    let mapped: String =
        id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if mapped.is_empty() { "toolu_unnamed".to_owned() } else { mapped }
}
