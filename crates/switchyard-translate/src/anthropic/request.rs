//! Anthropic Messages requests.

use serde_json::{Map, Value, json};

use super::tool_id;
use crate::ir::{Effort, Image, Message, Part, Reasoning, Request, Role, Tool, ToolChoice};
use crate::{RequestOptions, TranslateError, json, thinking};

/// Claude Code puts a per-request billing line at the start of its system prompt;
/// it changes every request, so a non-Anthropic target could never cache the prompt.
const BILLING_HEADER: &str = "x-anthropic-billing-header:";

/// Reads a Messages request (only ever for a non-Anthropic target).
pub fn parse(body: &Value) -> Result<Request, TranslateError> {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return Err(TranslateError("'messages' must be an array".into()));
    };
    let mut req = Request::default();
    match body.get("system") {
        Some(Value::String(s)) => push_system(&mut req, s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if let Some(t) = json::str(b, "text") {
                    push_system(&mut req, t);
                }
            }
        }
        _ => {}
    }
    for m in messages {
        let role = match json::str(m, "role") {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("system") => {
                push_system(&mut req, &json::text_of(m.get("content").unwrap_or(&Value::Null)));
                continue;
            }
            other => return Err(TranslateError(format!("unknown message role {other:?}"))),
        };
        let parts = match m.get("content") {
            Some(Value::String(s)) => vec![Part::Text(s.clone())],
            Some(Value::Array(blocks)) => blocks.iter().filter_map(block).collect(),
            _ => Vec::new(),
        };
        req.messages.push(Message { role, parts });
    }
    for t in json::arr(body, "tools") {
        // Server tools (web search, code execution, …) carry a versioned `type`.
        let custom = matches!(json::str(t, "type"), None | Some("custom"));
        if let (true, Some(name)) = (custom, json::str(t, "name")) {
            req.tools.push(Tool {
                name: name.to_owned(),
                description: json::str(t, "description").map(str::to_owned),
                schema: t.get("input_schema").cloned().unwrap_or_else(|| json!({"type": "object"})),
            });
        }
    }
    if let Some(tc) = body.get("tool_choice") {
        req.tool_choice = match json::str(tc, "type") {
            Some("any") => Some(ToolChoice::Required),
            Some("none") => Some(ToolChoice::None),
            Some("tool") => json::str(tc, "name").map(|n| ToolChoice::Named(n.to_owned())),
            _ => Some(ToolChoice::Auto),
        };
        if tc.get("disable_parallel_tool_use").and_then(Value::as_bool) == Some(true) {
            req.parallel_tool_calls = Some(false);
        }
    }
    req.max_tokens = body.get("max_tokens").and_then(Value::as_u64);
    req.temperature = json::f64(body, "temperature");
    req.top_p = json::f64(body, "top_p");
    req.stop =
        json::arr(body, "stop_sequences").iter().filter_map(Value::as_str).map(str::to_owned).collect();
    req.stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    req.reasoning = match body.get("thinking").and_then(|t| json::str(t, "type")) {
        Some("enabled") => Some(Effort::from_budget(json::u64(&body["thinking"], "budget_tokens"))),
        Some("adaptive") => Some(
            body.get("output_config")
                .and_then(|o| json::str(o, "effort"))
                .and_then(Effort::parse)
                .unwrap_or(Effort::Medium),
        ),
        _ => None,
    };
    Ok(req)
}

fn push_system(req: &mut Request, text: &str) {
    if text.starts_with(BILLING_HEADER) || text.is_empty() {
        return;
    }
    req.system.push(text.to_owned());
}

fn image(source: &Value) -> Option<Image> {
    match json::str(source, "type") {
        Some("base64") => Some(Image::Base64 {
            media_type: json::str(source, "media_type").unwrap_or("image/png").to_owned(),
            data: json::str(source, "data")?.to_owned(),
        }),
        Some("url") => Some(Image::Url(json::str(source, "url")?.to_owned())),
        _ => None,
    }
}

fn block(b: &Value) -> Option<Part> {
    match json::str(b, "type")? {
        "text" => Some(Part::Text(json::str(b, "text")?.to_owned())),
        "image" => image(b.get("source")?).map(Part::Image),
        "document" => {
            let source = b.get("source")?;
            let text = json::str(source, "data").filter(|_| json::str(source, "type") == Some("text"))?;
            Some(Part::Text(text.to_owned()))
        }
        "tool_use" => Some(Part::ToolCall {
            id: json::str(b, "id")?.to_owned(),
            name: json::str(b, "name")?.to_owned(),
            arguments: b.get("input").map_or_else(|| "{}".to_owned(), Value::to_string),
        }),
        "tool_result" => Some(Part::ToolResult {
            call_id: json::str(b, "tool_use_id")?.to_owned(),
            content: match b.get("content") {
                Some(Value::String(s)) => vec![Part::Text(s.clone())],
                Some(Value::Array(inner)) => inner.iter().filter_map(block).collect(),
                _ => Vec::new(),
            },
            is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
        }),
        "thinking" => {
            let text = json::str(b, "thinking").unwrap_or_default().to_owned();
            let signature = json::str(b, "signature").unwrap_or_default();
            let origin = match thinking::decode(signature) {
                Some((origin, _)) => origin,
                None => Reasoning::Anthropic { signature: signature.to_owned() },
            };
            Some(Part::Thinking { text, origin })
        }
        "redacted_thinking" => Some(Part::Thinking {
            text: String::new(),
            origin: Reasoning::AnthropicRedacted { data: json::str(b, "data")?.to_owned() },
        }),
        _ => None,
    }
}

fn image_block(img: &Image) -> Value {
    match img {
        Image::Base64 { media_type, data } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
        }
        Image::Url(url) => json!({"type": "image", "source": {"type": "url", "url": url}}),
    }
}

fn emit_part(part: &Part) -> Option<Value> {
    match part {
        Part::Text(t) if t.is_empty() => None,
        Part::Text(t) => Some(json!({"type": "text", "text": t})),
        Part::Image(img) => Some(image_block(img)),
        Part::ToolCall { id, name, arguments } => Some(json!({
            "type": "tool_use", "id": tool_id(id), "name": name, "input": json::arguments_object(arguments),
        })),
        Part::ToolResult { call_id, content, is_error } => {
            let inner: Vec<Value> = content.iter().filter_map(emit_part).collect();
            let mut v = json!({"type": "tool_result", "tool_use_id": tool_id(call_id), "content": inner});
            if *is_error {
                v["is_error"] = Value::Bool(true);
            }
            Some(v)
        }
        Part::Thinking { text, origin: Reasoning::Anthropic { signature } } if !signature.is_empty() => {
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        Part::Thinking { origin: Reasoning::AnthropicRedacted { data }, .. } => {
            Some(json!({"type": "redacted_thinking", "data": data}))
        }
        // Reasoning from another provider family cannot be verified by Anthropic.
        Part::Thinking { .. } => None,
    }
}

/// Claude subscription (OAuth) tokens are only accepted for Claude Code, whose
/// requests open their system prompt with this line.
pub const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// A tool block written as text, for a request that defines no tools (Anthropic
/// refuses `tool_use`/`tool_result` blocks then; a Responses client's built-in tools
/// are not carried).
fn tool_block_as_text(block: &Value) -> Value {
    let text = match json::str(block, "type") {
        Some("tool_use") => format!(
            "[called tool {} with {}]",
            json::str(block, "name").unwrap_or_default(),
            block.get("input").map(Value::to_string).unwrap_or_default()
        ),
        _ => format!("[tool result: {}]", json::text_of(block.get("content").unwrap_or(&Value::Null))),
    };
    json!({"type": "text", "text": text})
}

/// Whether Anthropic accepts thinking for these messages: when the conversation
/// continues a tool loop, the last assistant turn must open with a thinking block
/// (one the history could carry, i.e. Anthropic's own).
fn thinking_allowed(messages: &[Value]) -> bool {
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "assistant") else { return true };
    let blocks = last["content"].as_array().map_or(&[][..], Vec::as_slice);
    let uses_tools = blocks.iter().any(|b| b["type"] == "tool_use");
    !uses_tools || blocks.first().is_some_and(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
}

/// Writes a Messages request.
pub fn emit(req: &Request, opts: &RequestOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(opts.model));
    let mut system: Vec<&str> = req.system.iter().map(String::as_str).collect();
    if opts.anthropic_oauth && system.first().is_none_or(|s| !s.starts_with(CLAUDE_CODE_IDENTITY)) {
        system.insert(0, CLAUDE_CODE_IDENTITY);
    }
    if !system.is_empty() {
        let blocks: Vec<Value> = system.iter().map(|s| json!({"type": "text", "text": s})).collect();
        body.insert("system".into(), Value::Array(blocks));
    }
    let mut messages: Vec<Value> = Vec::new();
    let mut last_role: Option<Role> = None;
    for m in &req.messages {
        let mut blocks: Vec<Value> = m.parts.iter().filter_map(emit_part).collect();
        if req.tools.is_empty() {
            for b in &mut blocks {
                if b["type"] == "tool_use" || b["type"] == "tool_result" {
                    *b = tool_block_as_text(b);
                }
            }
        }
        if blocks.is_empty() {
            continue;
        }
        // Tool results lead their user turn (Anthropic requires it).
        blocks.sort_by_key(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        if last_role == Some(m.role)
            && let Some(prev) = messages.last_mut().and_then(|p| p["content"].as_array_mut())
        {
            prev.extend(blocks);
            if m.role == Role::User {
                prev.sort_by_key(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
            }
            continue;
        }
        messages.push(json!({"role": role, "content": blocks}));
        last_role = Some(m.role);
    }
    // Thinking only where Anthropic accepts it: not with a forced tool choice, and
    // not in a tool loop whose last assistant turn carries no thinking of its own.
    let forced =
        matches!(req.tool_choice, Some(ToolChoice::Required | ToolChoice::Named(_))) && !req.tools.is_empty();
    let reasoning = req.reasoning.filter(|_| !forced && thinking_allowed(&messages));
    // With no limit named, the thinking budget comes on top of the default.
    let max_tokens = match (req.max_tokens, reasoning) {
        (Some(n), _) => n,
        (None, Some(e)) => opts.default_max_tokens.max(1) + e.budget_tokens(),
        (None, None) => opts.default_max_tokens.max(1),
    };
    let thinking_budget = reasoning.and_then(|e| {
        let budget = e.budget_tokens().min(max_tokens.saturating_sub(1024));
        (budget >= 1024).then_some(budget)
    });
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut v = json!({"name": t.name, "input_schema": schema(&t.schema)});
                if let Some(d) = &t.description {
                    v["description"] = json!(d);
                }
                v
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let mut choice = match &req.tool_choice {
            Some(ToolChoice::Required) => json!({"type": "any"}),
            Some(ToolChoice::None) => json!({"type": "none"}),
            Some(ToolChoice::Named(n)) => json!({"type": "tool", "name": n}),
            Some(ToolChoice::Auto) | None => json!({"type": "auto"}),
        };
        if req.parallel_tool_calls == Some(false) && choice["type"] != "none" {
            choice["disable_parallel_tool_use"] = Value::Bool(true);
        }
        if req.tool_choice.is_some() || req.parallel_tool_calls == Some(false) {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(budget) = thinking_budget {
        body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
    } else {
        if let Some(t) = req.temperature {
            body.insert("temperature".into(), json!(t.clamp(0.0, 1.0)));
        }
        if let Some(p) = req.top_p {
            body.insert("top_p".into(), json!(p));
        }
    }
    if !req.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(req.stop));
    }
    if req.stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Value::Object(body)
}

/// Anthropic requires an object schema.
fn schema(s: &Value) -> Value {
    match s {
        Value::Object(map) if map.get("type").and_then(Value::as_str) == Some("object") => s.clone(),
        Value::Object(map) if !map.contains_key("type") => {
            let mut m = map.clone();
            m.insert("type".into(), json!("object"));
            Value::Object(m)
        }
        _ => json!({"type": "object", "properties": {}}),
    }
}
