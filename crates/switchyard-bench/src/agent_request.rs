//! A chat request the size and shape of a coding agent's: ~50 KB of a long system
//! prompt, a dozen tool schemas and a history of tool calls and results full of
//! escaped newlines and quotes (CLIENTS.md: Claude Code's first request is ~50 KB,
//! Codex's ~38 KB). The benchmark's 1 KB chat request is one plain string, which
//! hides every cost that grows with the body; this one shows them. The same shape as
//! `scripts/lib/agent_body.py`, which the measurement scripts send.

use bytes::Bytes;
use serde_json::{Value, json};

/// The request body for `model`.
pub fn agent_body(model: &str) -> Bytes {
    let prose =
        "You are an interactive coding agent. Prefer small, verified edits; run the tests. ".repeat(300);
    let tools: Vec<Value> = (0..12)
        .map(|i| {
            json!({"type": "function", "function": {
                "name": format!("tool_{i}"),
                "description": "Reads or edits files. ".repeat(20),
                "parameters": {"type": "object", "required": ["path"], "properties": {
                    "path": {"type": "string", "description": "Absolute path."},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer"},
                    "edits": {"type": "array", "items": {"type": "object", "properties": {
                        "old": {"type": "string"}, "new": {"type": "string"}}}}}}}})
        })
        .collect();
    let mut messages = vec![
        json!({"role": "system", "content": prose}),
        json!({"role": "user", "content": "Fix the failing test."}),
    ];
    for i in 0..8 {
        let arguments = json!({"path": format!("/src/mod{i}.rs")}).to_string();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{i}"), "type": "function", "function": {"name": "tool_1", "arguments": arguments}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"),
            "content": "fn main() {\n    println!(\"hi\");\n}\n".repeat(40)}));
    }
    Bytes::from(json!({"model": model, "max_tokens": 64, "tools": tools, "messages": messages}).to_string())
}

#[cfg(test)]
mod tests {
    use super::agent_body;

    #[test]
    fn is_an_agent_sized_chat_request_full_of_escapes() {
        let body = agent_body("m");
        assert!((40_000..60_000).contains(&body.len()), "{} bytes", body.len());
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert_eq!(value["model"], "m");
        assert_eq!(value["tools"].as_array().map(Vec::len), Some(12));
        let escapes = body.iter().filter(|&&b| b == b'\\').count();
        assert!(escapes > 1_000, "{escapes} escapes");
    }
}
