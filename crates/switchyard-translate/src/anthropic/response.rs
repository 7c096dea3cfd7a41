//! Anthropic Messages complete answers.

use serde_json::{Value, json};

use super::{stop_from, stop_to, usage_from, usage_to};
use crate::ir::{Part, Reasoning, Response};
use crate::{TranslateError, derived_id, json, thinking};

/// Reads a Messages answer.
pub fn parse(v: &Value) -> Result<Response, TranslateError> {
    let Some(blocks) = v.get("content").and_then(Value::as_array) else {
        return Err(TranslateError("the Messages answer has no 'content' array".into()));
    };
    let content = blocks
        .iter()
        .filter_map(|b| match json::str(b, "type")? {
            "text" => Some(Part::Text(json::str(b, "text")?.to_owned())),
            "tool_use" => Some(Part::ToolCall {
                id: json::str(b, "id")?.to_owned(),
                name: json::str(b, "name")?.to_owned(),
                arguments: b.get("input").map_or_else(|| "{}".to_owned(), Value::to_string),
            }),
            "thinking" => Some(Part::Thinking {
                text: json::str(b, "thinking").unwrap_or_default().to_owned(),
                origin: Reasoning::Anthropic {
                    signature: json::str(b, "signature").unwrap_or_default().to_owned(),
                },
            }),
            "redacted_thinking" => Some(Part::Thinking {
                text: String::new(),
                origin: Reasoning::AnthropicRedacted { data: json::str(b, "data")?.to_owned() },
            }),
            _ => None,
        })
        .collect();
    Ok(Response {
        id: json::str(v, "id").unwrap_or("msg").to_owned(),
        content,
        stop: stop_from(json::str(v, "stop_reason"), json::str(v, "stop_sequence")),
        usage: usage_from(v.get("usage")),
    })
}

/// A thinking part as a Messages block (foreign reasoning carries its marker).
pub(crate) fn thinking_block(text: &str, origin: &Reasoning) -> Value {
    match origin {
        Reasoning::Anthropic { signature } => {
            json!({"type": "thinking", "thinking": text, "signature": signature})
        }
        Reasoning::AnthropicRedacted { data } => json!({"type": "redacted_thinking", "data": data}),
        other => json!({"type": "thinking", "thinking": text, "signature": thinking::encode(other, text)}),
    }
}

/// Message ids as Anthropic clients expect them.
pub(crate) fn message_id(upstream: &str) -> String {
    if upstream.starts_with("msg_") { upstream.to_owned() } else { derived_id("msg_", upstream, 0) }
}

/// Writes a Messages answer.
pub fn emit(r: &Response, model: &str) -> Value {
    let content: Vec<Value> = r
        .content
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(json!({"type": "text", "text": t})),
            Part::ToolCall { id, name, arguments } => Some(json!({
                "type": "tool_use", "id": super::tool_id(id), "name": name,
                "input": json::arguments_object(arguments),
            })),
            Part::Thinking { text, origin } => Some(thinking_block(text, origin)),
            Part::Image(_) | Part::ToolResult { .. } => None,
        })
        .collect();
    let (stop_reason, stop_sequence) = stop_to(&r.stop);
    json!({
        "id": message_id(&r.id),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": usage_to(&r.usage),
    })
}
