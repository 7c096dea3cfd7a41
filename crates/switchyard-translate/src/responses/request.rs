//! Responses requests.

use serde_json::{Map, Value, json};

use super::{reasoning_origin, reasoning_text};
use crate::ir::{Effort, Image, Message, Part, Reasoning, Request, Role};
use crate::openai::{function_tool, tool_choice, tool_choice_value};
use crate::{RequestOptions, TranslateError, json};

fn content_parts(content: Option<&Value>) -> Vec<Part> {
    match content {
        Some(Value::String(s)) => vec![Part::Text(s.clone())],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match json::str(p, "type")? {
                "input_text" | "output_text" | "text" => Some(Part::Text(json::str(p, "text")?.to_owned())),
                "refusal" => Some(Part::Text(json::str(p, "refusal")?.to_owned())),
                "input_image" => {
                    let url = match p.get("image_url")? {
                        Value::String(s) => s.as_str(),
                        obj => json::str(obj, "url")?,
                    };
                    Some(Part::Image(Image::from_url(url)))
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Appends `part` to the conversation as `role`, joining the last turn of that role.
fn push(req: &mut Request, role: Role, part: Part) {
    match req.messages.last_mut() {
        Some(last) if last.role == role => last.parts.push(part),
        _ => req.messages.push(Message { role, parts: vec![part] }),
    }
}

/// Reads a Responses request.
pub fn parse(body: &Value) -> Result<Request, TranslateError> {
    let mut req = Request::default();
    if let Some(i) = json::str(body, "instructions").filter(|i| !i.is_empty()) {
        req.system.push(i.to_owned());
    }
    match body.get("input") {
        Some(Value::String(s)) => push(&mut req, Role::User, Part::Text(s.clone())),
        Some(Value::Array(items)) => {
            for item in items {
                read_item(&mut req, item)?;
            }
        }
        None => {}
        Some(_) => return Err(TranslateError("'input' must be a string or an array".into())),
    }
    req.tools = json::arr(body, "tools")
        .iter()
        .filter(|t| json::str(t, "type") == Some("function"))
        .filter_map(function_tool)
        .collect();
    req.tool_choice = tool_choice(body.get("tool_choice"), |obj| json::str(obj, "name"));
    req.parallel_tool_calls = body.get("parallel_tool_calls").and_then(Value::as_bool);
    req.max_tokens = body.get("max_output_tokens").and_then(Value::as_u64);
    req.temperature = json::f64(body, "temperature");
    req.top_p = json::f64(body, "top_p");
    req.stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    req.reasoning = body.get("reasoning").and_then(|r| json::str(r, "effort")).and_then(Effort::parse);
    req.prompt_cache_key = json::str(body, "prompt_cache_key").map(str::to_owned);
    Ok(req)
}

fn read_item(req: &mut Request, item: &Value) -> Result<(), TranslateError> {
    let kind = json::str(item, "type").unwrap_or("message");
    match kind {
        "message" => match json::str(item, "role") {
            Some("system" | "developer") => {
                let text: String = content_parts(item.get("content"))
                    .into_iter()
                    .filter_map(|p| if let Part::Text(t) = p { Some(t) } else { None })
                    .collect();
                if !text.is_empty() {
                    req.system.push(text);
                }
            }
            Some("user") => {
                for p in content_parts(item.get("content")) {
                    push(req, Role::User, p);
                }
            }
            Some("assistant") => {
                for p in content_parts(item.get("content")) {
                    push(req, Role::Assistant, p);
                }
            }
            other => return Err(TranslateError(format!("unknown input message role {other:?}"))),
        },
        "function_call" => push(
            req,
            Role::Assistant,
            Part::ToolCall {
                id: json::str(item, "call_id").unwrap_or_default().to_owned(),
                name: json::str(item, "name").unwrap_or_default().to_owned(),
                arguments: json::arguments_text(item.get("arguments")),
            },
        ),
        "function_call_output" => {
            let content = match item.get("output") {
                Some(Value::String(s)) => vec![Part::Text(s.clone())],
                other => content_parts(other),
            };
            let call_id = json::str(item, "call_id").unwrap_or_default().to_owned();
            push(req, Role::User, Part::ToolResult { call_id, content, is_error: false });
        }
        "reasoning" => {
            let (origin, carried_text) = reasoning_origin(item);
            let text = carried_text.unwrap_or_else(|| reasoning_text(item));
            push(req, Role::Assistant, Part::Thinking { text, origin });
        }
        // Built-in tool calls and their outputs have no counterpart elsewhere.
        _ => {}
    }
    Ok(())
}

/// Writes a Responses request. `store: false` always (the gateway keeps no state
/// upstream); reasoning asks for its encrypted content so it can be replayed.
pub fn emit(req: &Request, opts: &RequestOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    if !req.system.is_empty() {
        body.insert("instructions".into(), json!(req.system.join("\n\n")));
    }
    let mut input = Vec::new();
    for m in &req.messages {
        let mut content: Vec<Value> = Vec::new();
        let flush = |content: &mut Vec<Value>, input: &mut Vec<Value>| {
            if !content.is_empty() {
                let role = if m.role == Role::User { "user" } else { "assistant" };
                input.push(json!({"type": "message", "role": role, "content": std::mem::take(content)}));
            }
        };
        for p in &m.parts {
            match p {
                Part::Text(t) => content.push(match m.role {
                    Role::User => json!({"type": "input_text", "text": t}),
                    Role::Assistant => json!({"type": "output_text", "text": t, "annotations": []}),
                }),
                Part::Image(img) => {
                    content.push(json!({"type": "input_image", "image_url": img.to_url(), "detail": "auto"}))
                }
                Part::ToolCall { id, name, arguments } => {
                    flush(&mut content, &mut input);
                    input.push(json!({"type": "function_call", "call_id": id, "name": name,
                                      "arguments": if arguments.is_empty() { "{}" } else { arguments }}));
                }
                Part::ToolResult { call_id, content: result, .. } => {
                    flush(&mut content, &mut input);
                    let text: String = result
                        .iter()
                        .filter_map(|c| if let Part::Text(t) = c { Some(t.as_str()) } else { None })
                        .collect();
                    input.push(json!({"type": "function_call_output", "call_id": call_id, "output": text}));
                }
                Part::Thinking { text, origin: Reasoning::Responses { id, encrypted: Some(encrypted) } } => {
                    flush(&mut content, &mut input);
                    let summary = if text.is_empty() {
                        json!([])
                    } else {
                        json!([{"type": "summary_text", "text": text}])
                    };
                    let mut item =
                        json!({"type": "reasoning", "summary": summary, "encrypted_content": encrypted});
                    if let Some(id) = id {
                        item["id"] = json!(id);
                    }
                    input.push(item);
                }
                // Another family's reasoning cannot be verified by a Responses upstream,
                // and an OpenAI item without its encrypted content cannot be replayed
                // with `store` off.
                Part::Thinking { .. } => {}
            }
        }
        flush(&mut content, &mut input);
    }
    body.insert("input".into(), Value::Array(input));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut v =
                    json!({"type": "function", "name": t.name, "parameters": t.schema, "strict": false});
                if let Some(d) = &t.description {
                    v["description"] = json!(d);
                }
                v
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(tc) = &req.tool_choice {
            let v = tool_choice_value(tc, |n| json!({"type": "function", "name": n}));
            body.insert("tool_choice".into(), v);
        }
        if let Some(p) = req.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(p));
        }
    }
    if let Some(n) = req.max_tokens {
        body.insert("max_output_tokens".into(), json!(n.max(16)));
    }
    if let Some(e) = req.reasoning {
        body.insert("reasoning".into(), json!({"effort": e.as_str(), "summary": "auto"}));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    } else {
        if let Some(t) = req.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(p) = req.top_p {
            body.insert("top_p".into(), json!(p));
        }
    }
    body.insert("store".into(), Value::Bool(false));
    if let Some(key) = opts.prompt_cache_key.as_ref().or(req.prompt_cache_key.as_ref()) {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if req.stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Value::Object(body)
}
