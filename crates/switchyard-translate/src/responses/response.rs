//! Responses complete answers.

use serde_json::{Value, json};

use super::{reasoning_item, reasoning_origin, reasoning_text, status_to, stop_from, usage_from, usage_to};
use crate::ir::{Part, Response, StopReason};
use crate::{TranslateError, derived_id, json};

/// Reads a Responses answer.
pub fn parse(v: &Value) -> Result<Response, TranslateError> {
    let Some(output) = v.get("output").and_then(Value::as_array) else {
        return Err(TranslateError("the Responses answer has no 'output' array".into()));
    };
    let mut content = Vec::new();
    let mut refused = false;
    for item in output {
        match json::str(item, "type") {
            Some("message") => {
                for c in json::arr(item, "content") {
                    match json::str(c, "type") {
                        Some("output_text") => {
                            content.push(Part::Text(json::str(c, "text").unwrap_or_default().to_owned()))
                        }
                        Some("refusal") => {
                            refused = true;
                            content.push(Part::Text(json::str(c, "refusal").unwrap_or_default().to_owned()));
                        }
                        _ => {}
                    }
                }
            }
            Some("function_call") => content.push(Part::ToolCall {
                id: json::str(item, "call_id").unwrap_or_default().to_owned(),
                name: json::str(item, "name").unwrap_or_default().to_owned(),
                arguments: json::arguments_text(item.get("arguments")),
            }),
            Some("reasoning") => {
                let (origin, carried) = reasoning_origin(item);
                content
                    .push(Part::Thinking { text: carried.unwrap_or_else(|| reasoning_text(item)), origin });
            }
            _ => {}
        }
    }
    let called = content.iter().any(|p| matches!(p, Part::ToolCall { .. }));
    let mut stop = stop_from(v, called);
    if refused {
        stop = StopReason::Refusal;
    }
    Ok(Response {
        id: json::str(v, "id").unwrap_or("resp").to_owned(),
        content,
        stop,
        usage: usage_from(v.get("usage")),
    })
}

/// Response ids as Responses clients expect them.
pub(crate) fn response_id(upstream: &str) -> String {
    if upstream.starts_with("resp_") { upstream.to_owned() } else { derived_id("resp_", upstream, 0) }
}

/// The output items of a canonical answer.
pub(crate) fn output_items(r: &Response) -> Vec<Value> {
    let mut items = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, items: &mut Vec<Value>| {
        if !text.is_empty() {
            let id = derived_id("msg_", &r.id, items.len());
            items.push(json!({"id": id, "type": "message", "status": "completed", "role": "assistant",
                              "content": [{"type": "output_text", "text": std::mem::take(text), "annotations": []}]}));
        }
    };
    for p in &r.content {
        match p {
            Part::Text(t) => text.push_str(t),
            Part::ToolCall { id, name, arguments } => {
                flush(&mut text, &mut items);
                let item_id = derived_id("fc_", &r.id, items.len());
                items.push(json!({"id": item_id, "type": "function_call", "status": "completed", "call_id": id,
                                  "name": name, "arguments": if arguments.is_empty() { "{}" } else { arguments }}));
            }
            Part::Thinking { text: t, origin } => {
                flush(&mut text, &mut items);
                items.push(reasoning_item(&derived_id("rs_", &r.id, items.len()), t, origin));
            }
            Part::Image(_) | Part::ToolResult { .. } => {}
        }
    }
    flush(&mut text, &mut items);
    items
}

/// Writes a Responses answer.
pub fn emit(r: &Response, model: &str) -> Value {
    emit_at(r, model, 0)
}

/// [`emit`] with a `created_at` time.
pub fn emit_at(r: &Response, model: &str, created: u64) -> Value {
    let (status, incomplete) = status_to(&r.stop);
    response_object(
        &response_id(&r.id),
        model,
        created,
        status,
        incomplete,
        output_items(r),
        Some(usage_to(&r.usage)),
    )
}

/// The `response` object (also the payload of stream lifecycle events).
pub(crate) fn response_object(
    id: &str,
    model: &str,
    created: u64,
    status: &str,
    incomplete: Value,
    output: Vec<Value>,
    usage: Option<Value>,
) -> Value {
    json!({
        "id": id, "object": "response", "created_at": created, "status": status, "error": null,
        "incomplete_details": incomplete, "model": model, "output": output,
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [], "usage": usage,
    })
}
