//! Chat Completions requests.

use serde_json::{Map, Value, json};

use crate::ir::{Effort, Image, Message, Part, Reasoning, Request, Role};
use crate::openai::{function_tool, tool_choice, tool_choice_value};
use crate::{RequestOptions, TranslateError, json};

fn user_parts(content: Option<&Value>) -> Vec<Part> {
    match content {
        Some(Value::String(s)) => vec![Part::Text(s.clone())],
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match json::str(p, "type")? {
                "text" | "input_text" => Some(Part::Text(json::str(p, "text")?.to_owned())),
                "image_url" => {
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

fn push(req: &mut Request, role: Role, parts: Vec<Part>) {
    if let Some(last) = req.messages.last_mut().filter(|m| m.role == role && role == Role::User) {
        last.parts.extend(parts);
    } else {
        req.messages.push(Message { role, parts });
    }
}

/// Reads a Chat Completions request.
pub fn parse(body: &Value) -> Result<Request, TranslateError> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err(TranslateError("'messages' must be an array".into()));
    };
    let mut req = Request::default();
    for m in messages {
        match json::str(m, "role") {
            Some("system" | "developer") => {
                let text = json::text_of(m.get("content").unwrap_or(&Value::Null));
                if !text.is_empty() {
                    req.system.push(text);
                }
            }
            Some("user") => push(&mut req, Role::User, user_parts(m.get("content"))),
            Some("assistant") => {
                let mut parts = Vec::new();
                let reasoning = json::str(m, "reasoning_content").or_else(|| json::str(m, "reasoning"));
                if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
                    parts.push(Part::Thinking { text: r.to_owned(), origin: Reasoning::Plain });
                }
                let text = json::text_of(m.get("content").unwrap_or(&Value::Null));
                if !text.is_empty() {
                    parts.push(Part::Text(text));
                }
                for call in json::arr(m, "tool_calls") {
                    let f = call.get("function").unwrap_or(&Value::Null);
                    parts.push(Part::ToolCall {
                        id: json::str(call, "id").unwrap_or_default().to_owned(),
                        name: json::str(f, "name").unwrap_or_default().to_owned(),
                        arguments: json::arguments_text(f.get("arguments")),
                    });
                }
                req.messages.push(Message { role: Role::Assistant, parts });
            }
            Some("tool") => {
                let result = Part::ToolResult {
                    call_id: json::str(m, "tool_call_id").unwrap_or_default().to_owned(),
                    content: user_parts(m.get("content")),
                    is_error: false,
                };
                push(&mut req, Role::User, vec![result]);
            }
            Some("function") => {}
            other => return Err(TranslateError(format!("unknown message role {other:?}"))),
        }
    }
    req.tools =
        json::arr(body, "tools").iter().filter_map(|t| t.get("function").and_then(function_tool)).collect();
    req.tool_choice =
        tool_choice(body.get("tool_choice"), |obj| obj.get("function").and_then(|f| json::str(f, "name")));
    req.parallel_tool_calls = body.get("parallel_tool_calls").and_then(Value::as_bool);
    req.max_tokens = body
        .get("max_completion_tokens")
        .and_then(Value::as_u64)
        .or_else(|| body.get("max_tokens").and_then(Value::as_u64));
    req.temperature = json::f64(body, "temperature");
    req.top_p = json::f64(body, "top_p");
    req.stop = match body.get("stop") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    req.stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    req.reasoning = json::str(body, "reasoning_effort").and_then(Effort::parse);
    req.prompt_cache_key = json::str(body, "prompt_cache_key").map(str::to_owned);
    Ok(req)
}

fn content_value(parts: &[&Part]) -> Value {
    if let [Part::Text(t)] = parts {
        return json!(t);
    }
    let out: Vec<Value> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(json!({"type": "text", "text": t})),
            Part::Image(img) => Some(json!({"type": "image_url", "image_url": {"url": img.to_url()}})),
            _ => None,
        })
        .collect();
    Value::Array(out)
}

/// Writes a Chat Completions request. For OpenAI itself (`opts.openai_native`) it
/// uses `max_completion_tokens` (OpenAI's reasoning models refuse `max_tokens`) and
/// `reasoning_effort`; OpenAI-compatible servers get `max_tokens` and no reasoning
/// field they might refuse.
pub fn emit(req: &Request, opts: &RequestOptions) -> Value {
    let modern = opts.openai_native;
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system.join("\n\n")}));
    }
    for m in &req.messages {
        match m.role {
            Role::User => {
                let mut pending: Vec<&Part> = Vec::new();
                for p in &m.parts {
                    if let Part::ToolResult { call_id, content, is_error } = p {
                        if !pending.is_empty() {
                            messages.push(json!({"role": "user", "content": content_value(&pending)}));
                            pending.clear();
                        }
                        let mut text = json::text_of(&Value::Array(
                            content
                                .iter()
                                .filter_map(|c| match c {
                                    Part::Text(t) => Some(json!({"text": t})),
                                    _ => None,
                                })
                                .collect(),
                        ));
                        if *is_error && !text.starts_with("Error") {
                            text = format!("Error: {text}");
                        }
                        messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
                    } else if matches!(p, Part::Text(_) | Part::Image(_)) {
                        pending.push(p);
                    }
                }
                if !pending.is_empty() {
                    messages.push(json!({"role": "user", "content": content_value(&pending)}));
                }
            }
            Role::Assistant => {
                let text: String = m
                    .parts
                    .iter()
                    .filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None })
                    .collect();
                let calls: Vec<Value> = m
                    .parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall { id, name, arguments } => Some(json!({
                            "id": id, "type": "function",
                            "function": {"name": name, "arguments": if arguments.is_empty() { "{}" } else { arguments }},
                        })),
                        _ => None,
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
        }
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut f = json!({"name": t.name, "parameters": t.schema});
                if let Some(d) = &t.description {
                    f["description"] = json!(d);
                }
                json!({"type": "function", "function": f})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(tc) = &req.tool_choice {
            let v = tool_choice_value(tc, |n| json!({"type": "function", "function": {"name": n}}));
            body.insert("tool_choice".into(), v);
        }
        if let Some(p) = req.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(p));
        }
    }
    if let Some(n) = req.max_tokens {
        body.insert((if modern { "max_completion_tokens" } else { "max_tokens" }).into(), json!(n));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if !req.stop.is_empty() {
        body.insert("stop".into(), json!(req.stop));
    }
    if modern && let Some(e) = req.reasoning {
        body.insert("reasoning_effort".into(), json!(e.as_str()));
    }
    if let Some(key) = &opts.prompt_cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if req.stream {
        body.insert("stream".into(), Value::Bool(true));
        if opts.chat_stream_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    Value::Object(body)
}
