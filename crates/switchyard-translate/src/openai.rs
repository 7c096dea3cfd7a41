//! What Chat Completions and Responses share: function tool definitions and the
//! `tool_choice` words (they differ only in where a function's name sits).

use serde_json::{Value, json};

use crate::ir::{Tool, ToolChoice};
use crate::json;

/// A function definition (`name`, `description`, `parameters`) as a tool.
pub(crate) fn function_tool(def: &Value) -> Option<Tool> {
    Some(Tool {
        name: json::str(def, "name")?.to_owned(),
        description: json::str(def, "description").map(str::to_owned),
        schema: def.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
    })
}

/// `tool_choice`: a word, or an object whose function name `named` finds.
pub(crate) fn tool_choice(v: Option<&Value>, named: impl Fn(&Value) -> Option<&str>) -> Option<ToolChoice> {
    match v {
        Some(Value::String(s)) => Some(match s.as_str() {
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            _ => ToolChoice::Auto,
        }),
        Some(obj @ Value::Object(_)) => named(obj).map(|n| ToolChoice::Named(n.to_owned())),
        _ => None,
    }
}

/// A tool choice as written, a named one by `named`.
pub(crate) fn tool_choice_value(tc: &ToolChoice, named: impl Fn(&str) -> Value) -> Value {
    match tc {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Named(n) => named(n),
    }
}
