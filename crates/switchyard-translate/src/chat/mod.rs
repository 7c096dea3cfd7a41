//! OpenAI Chat Completions: requests, complete answers and streams, read into and
//! written from the canonical model.

pub mod request;
pub mod response;
pub mod stream;

use serde_json::{Value, json};

use crate::ir::{StopReason, Usage};
use crate::json;

/// `finish_reason` as a canonical stop.
pub(crate) fn stop_from(reason: Option<&str>) -> StopReason {
    match reason {
        Some("length") => StopReason::MaxTokens,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::ContentFilter,
        _ => StopReason::EndTurn,
    }
}

/// A canonical stop as `finish_reason`.
pub(crate) fn stop_to(stop: &StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn | StopReason::StopSequence(_) | StopReason::PauseTurn => "stop",
        StopReason::MaxTokens => "length",
        StopReason::ToolUse => "tool_calls",
        StopReason::Refusal | StopReason::ContentFilter => "content_filter",
    }
}

/// Chat `usage`: `prompt_tokens` includes cached tokens, the canonical input does not.
pub(crate) fn usage_from(u: Option<&Value>) -> Usage {
    let Some(u) = u.filter(|u| u.is_object()) else { return Usage::default() };
    let details = |k: &str, f: &str| u.get(k).map_or(0, |d| json::u64(d, f));
    let cached = details("prompt_tokens_details", "cached_tokens");
    Usage {
        input: json::u64(u, "prompt_tokens").saturating_sub(cached),
        output: json::u64(u, "completion_tokens"),
        cache_read: cached,
        cache_write: 0,
        reasoning: details("completion_tokens_details", "reasoning_tokens"),
    }
}

/// Canonical usage as Chat `usage`.
pub(crate) fn usage_to(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.total_input(),
        "completion_tokens": u.output,
        "total_tokens": u.total_input() + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cache_read},
        "completion_tokens_details": {"reasoning_tokens": u.reasoning},
    })
}
