//! Chat Completions complete answers.

use serde_json::{Value, json};

use super::{stop_from, stop_to, usage_from, usage_to};
use crate::ir::{Part, Reasoning, Response, StopReason};
use crate::{TranslateError, derived_id, json};

/// Reads a Chat Completions answer (its first choice).
pub fn parse(v: &Value) -> Result<Response, TranslateError> {
    let first =
        json::arr(v, "choices").iter().find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
    let Some(choice) = first else {
        return Err(TranslateError("the Chat Completions answer has no choices".into()));
    };
    let msg = choice.get("message").unwrap_or(&Value::Null);
    let mut content = Vec::new();
    if let Some(r) =
        json::str(msg, "reasoning_content").or_else(|| json::str(msg, "reasoning")).filter(|r| !r.is_empty())
    {
        content.push(Part::Thinking { text: r.to_owned(), origin: Reasoning::Plain });
    }
    let text = json::text_of(msg.get("content").unwrap_or(&Value::Null));
    let refusal = json::str(msg, "refusal").filter(|r| !r.is_empty());
    if !text.is_empty() {
        content.push(Part::Text(text));
    }
    if let Some(r) = refusal {
        content.push(Part::Text(r.to_owned()));
    }
    let id = json::str(v, "id").unwrap_or("chatcmpl").to_owned();
    for (i, call) in json::arr(msg, "tool_calls").iter().enumerate() {
        let f = call.get("function").unwrap_or(&Value::Null);
        content.push(Part::ToolCall {
            id: json::str(call, "id")
                .filter(|s| !s.is_empty())
                .map_or_else(|| derived_id("call_", &id, i), str::to_owned),
            name: json::str(f, "name").unwrap_or_default().to_owned(),
            arguments: json::arguments_text(f.get("arguments")),
        });
    }
    let mut stop = stop_from(json::str(choice, "finish_reason"));
    if refusal.is_some() {
        stop = StopReason::Refusal;
    }
    // Some servers say "stop" after calling tools; the client must still run them.
    if stop == StopReason::EndTurn && content.iter().any(|p| matches!(p, Part::ToolCall { .. })) {
        stop = StopReason::ToolUse;
    }
    Ok(Response { id, content, stop, usage: usage_from(v.get("usage")) })
}

/// Completion ids as Chat clients expect them.
pub(crate) fn completion_id(upstream: &str) -> String {
    if upstream.starts_with("chatcmpl") { upstream.to_owned() } else { derived_id("chatcmpl-", upstream, 0) }
}

/// Writes a Chat Completions answer.
pub fn emit(r: &Response, model: &str) -> Value {
    emit_at(r, model, 0)
}

/// [`emit`] with a `created` time.
pub fn emit_at(r: &Response, model: &str, created: u64) -> Value {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for p in &r.content {
        match p {
            Part::Text(t) => text.push_str(t),
            Part::Thinking { text: t, .. } => reasoning.push_str(t),
            Part::ToolCall { id, name, arguments } => calls.push(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": if arguments.is_empty() { "{}" } else { arguments }},
            })),
            Part::Image(_) | Part::ToolResult { .. } => {}
        }
    }
    let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": completion_id(&r.id),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": stop_to(&r.stop), "logprobs": null}],
        "usage": usage_to(&r.usage),
    })
}
