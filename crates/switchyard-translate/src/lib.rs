//! Format translation between the three wire formats agents speak: Anthropic
//! Messages, OpenAI Chat Completions and OpenAI Responses. Pure: bytes and JSON in,
//! bytes and JSON out, no I/O, no clock.
//!
//! Every format is read into the canonical model ([`ir`]) and written from it, so
//! the six directions are three readers and three writers per shape:
//! - requests: [`translate_request`] (client body → upstream body);
//! - complete answers: [`translate_response`] (upstream JSON → client JSON);
//! - streams: [`StreamTranslator`], frame by frame (never a whole stream buffered:
//!   it keeps only what a closing event must repeat, such as a Responses item's text);
//! - errors: [`translate_error`].
//!
//! A same-format hop never comes here: the gateway relays it byte for byte.
//!
//! What a target cannot express is dropped on purpose, never sent to fail upstream;
//! [`DROPPED`] lists it (and the README repeats it).

pub mod anthropic;
pub mod chat;
pub mod error;
pub mod ir;
mod openai;
pub mod responses;
mod sse;
mod stream;
pub mod thinking;

pub use error::translate_error;
pub use stream::{StreamContext, StreamTranslator, response_from_stream, stream_from_response};

use serde_json::Value;

/// A wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Anthropic Messages (`/v1/messages`).
    Messages,
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    Chat,
    /// OpenAI Responses (`/v1/responses`).
    Responses,
}

impl Format {
    /// All three.
    pub const ALL: [Format; 3] = [Format::Messages, Format::Chat, Format::Responses];

    /// A short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Messages => "messages",
            Format::Chat => "chat",
            Format::Responses => "responses",
        }
    }
}

/// What a request translation needs besides the body.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// The upstream's model id.
    pub model: String,
    /// `prompt_cache_key` to set (Chat and Responses targets that support it).
    pub prompt_cache_key: Option<String>,
    /// `max_tokens` for an Anthropic target when the client named none (Anthropic
    /// requires it).
    pub default_max_tokens: u64,
    /// Ask a Chat upstream for usage in the stream (`stream_options.include_usage`).
    pub chat_stream_usage: bool,
    /// The upstream is OpenAI itself (modern field names, reasoning effort).
    pub openai_native: bool,
    /// The upstream is a Claude subscription account (OAuth): its system prompt must
    /// open with Claude Code's identity line.
    pub anthropic_oauth: bool,
}

/// Why a body could not be translated (the client's mistake: a 400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslateError(pub String);

impl std::fmt::Display for TranslateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TranslateError {}

/// Fields and content a target format cannot express, dropped on purpose.
pub const DROPPED: &[(&str, &str)] = &[
    (
        "Messages → Chat/Responses",
        "top_k, context_management, container, mcp_servers, service_tier, cache_control markers (the text is kept), citations, document blocks (their text is kept when plain text), server tools (web search, code execution) and their result blocks",
    ),
    (
        "Messages → Chat/Responses",
        "Claude Code's per-request billing header block at the start of the system prompt (it changes every request and defeats the target's prompt cache)",
    ),
    (
        "Chat → Messages/Responses",
        "n > 1, logprobs, logit_bias, seed, presence/frequency penalties, response_format, audio and modalities",
    ),
    (
        "Responses → Messages/Chat",
        "built-in tools (web search, file search, computer use, local shell, custom/freeform tools), previous_response_id, store, truncation, text.format",
    ),
    ("any → Responses", "stop sequences (Responses has none)"),
    ("any → Messages", "temperature and top_p while thinking is on (Anthropic rejects them with thinking)"),
    (
        "reasoning across providers",
        "thinking is replayed only to the provider family that produced it: Anthropic signatures to Anthropic, Responses encrypted reasoning to Responses; otherwise the prior turn's reasoning is dropped from the history",
    ),
];

/// Translates a client request body of format `from` into format `to`.
pub fn translate_request(
    from: Format,
    to: Format,
    body: &Value,
    opts: &RequestOptions,
) -> Result<Value, TranslateError> {
    let ir = match from {
        Format::Messages => anthropic::request::parse(body)?,
        Format::Chat => chat::request::parse(body)?,
        Format::Responses => responses::request::parse(body)?,
    };
    Ok(match to {
        Format::Messages => anthropic::request::emit(&ir, opts),
        Format::Chat => chat::request::emit(&ir, opts),
        Format::Responses => responses::request::emit(&ir, opts),
    })
}

/// Whether a client body of format `from` can be read for translation.
pub fn check_request(from: Format, body: &Value) -> Result<(), TranslateError> {
    match from {
        Format::Messages => anthropic::request::parse(body),
        Format::Chat => chat::request::parse(body),
        Format::Responses => responses::request::parse(body),
    }
    .map(drop)
}

/// Translates a complete upstream answer of format `from` into the client's format
/// `to`; `model` is what the client asked for (echoed back), `created` the time in
/// Unix seconds.
pub fn translate_response(
    from: Format,
    to: Format,
    body: &[u8],
    model: &str,
    created: u64,
) -> Result<Vec<u8>, TranslateError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| TranslateError(format!("the upstream answer is not JSON: {e}")))?;
    let ir = match from {
        Format::Messages => anthropic::response::parse(&value),
        Format::Chat => chat::response::parse(&value),
        Format::Responses => responses::response::parse(&value),
    }?;
    let out = match to {
        Format::Messages => anthropic::response::emit(&ir, model),
        Format::Chat => chat::response::emit_at(&ir, model, created),
        Format::Responses => responses::response::emit_at(&ir, model, created),
    };
    Ok(out.to_string().into_bytes())
}

/// Helpers for reading JSON loosely (a missing or mistyped optional field is absent).
pub(crate) mod json {
    use serde_json::Value;

    pub fn str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
        v.get(key).and_then(Value::as_str)
    }

    pub fn u64(v: &Value, key: &str) -> u64 {
        v.get(key).and_then(Value::as_u64).unwrap_or(0)
    }

    pub fn f64(v: &Value, key: &str) -> Option<f64> {
        v.get(key).and_then(Value::as_f64)
    }

    pub fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
        v.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }

    /// A tool-call argument value as JSON text (some upstreams send an object).
    pub fn arguments_text(v: Option<&Value>) -> String {
        match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }

    /// JSON text as an object for formats that carry arguments as objects (empty or
    /// broken text becomes `{}`, a non-object value is wrapped).
    pub fn arguments_object(text: &str) -> Value {
        if text.trim().is_empty() {
            return Value::Object(Default::default());
        }
        match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(other) => serde_json::json!({ "value": other }),
            Err(_) => serde_json::json!({ "_raw_arguments": text }),
        }
    }

    /// Joins the text of string-or-parts content.
    pub fn text_of(content: &Value) -> String {
        match content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        }
    }
}

/// A fresh-looking id with a prefix, derived from `seed` (deterministic: no clock,
/// no randomness in a pure crate).
pub(crate) fn derived_id(prefix: &str, seed: &str, n: usize) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in seed.bytes().chain(n.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{prefix}{h:016x}")
}

/// An estimate of a Messages request's input tokens, for `count_tokens` when no
/// Anthropic upstream can count them: the characters of every string in `system`,
/// `messages` and `tools` (never an image's base64 data, roles, types or ids) divided by 4, rounded up,
/// plus 1,600 tokens per image (Anthropic's figure for a ~1.15 megapixel image).
pub fn estimate_input_tokens(body: &Value) -> u64 {
    fn walk(v: &Value, chars: &mut u64, images: &mut u64) {
        match v {
            Value::String(s) => *chars += s.chars().count() as u64,
            Value::Array(a) => a.iter().for_each(|x| walk(x, chars, images)),
            Value::Object(o) => {
                if o.get("type").and_then(Value::as_str) == Some("image") {
                    *images += 1;
                    return;
                }
                for (k, x) in o {
                    // Structure, ids, proofs and base64 payloads are not text.
                    if !matches!(
                        k.as_str(),
                        "type"
                            | "role"
                            | "cache_control"
                            | "id"
                            | "tool_use_id"
                            | "signature"
                            | "data"
                            | "media_type"
                    ) {
                        walk(x, chars, images);
                    }
                }
            }
            _ => {}
        }
    }
    let (mut chars, mut images) = (0, 0);
    for key in ["system", "messages", "tools"] {
        if let Some(v) = body.get(key) {
            walk(v, &mut chars, &mut images);
        }
    }
    chars.div_ceil(4) + images * 1_600
}

#[cfg(test)]
mod roundtrip_tests;

#[cfg(test)]
mod request_tests {
    use serde_json::json;

    use super::*;
    use crate::ir::Reasoning;

    fn opts() -> RequestOptions {
        RequestOptions { model: "up".into(), default_max_tokens: 8192, ..RequestOptions::default() }
    }

    #[test]
    fn claude_codes_billing_header_is_removed_for_other_formats() {
        let body = json!({"model": "m", "max_tokens": 10, "system": [
            {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332; cch=ab12;"},
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hi"}]});
        for to in [Format::Chat, Format::Responses] {
            let out = translate_request(Format::Messages, to, &body, &opts()).unwrap_or_default().to_string();
            assert!(!out.contains("billing") && out.contains("You are Claude Code."), "{out}");
        }
    }

    #[test]
    fn reasoning_is_replayed_only_to_the_family_that_produced_it() {
        let responses_marker = thinking::encode(
            &Reasoning::Responses { id: Some("rs_1".into()), encrypted: Some("gAAAA".into()) },
            "",
        );
        let anthropic_marker =
            thinking::encode(&Reasoning::Anthropic { signature: "EqSig".into() }, "I think");
        // A Claude Code history: native Anthropic thinking, and reasoning an OpenAI
        // upstream produced on an earlier (translated) turn.
        let body = json!({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "native", "signature": "EqNative"}, {"type": "text", "text": "a1"}]},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "from openai", "signature": responses_marker}, {"type": "text", "text": "a2"}]},
            {"role": "user", "content": "q3"}]});
        let chat =
            translate_request(Format::Messages, Format::Chat, &body, &opts()).unwrap_or_default().to_string();
        assert!(!chat.contains("native") && !chat.contains("from openai") && !chat.contains("Eq"), "{chat}");
        let resp = translate_request(Format::Messages, Format::Responses, &body, &opts()).unwrap_or_default();
        let items: Vec<&Value> = resp["input"]
            .as_array()
            .map(|i| i.iter().filter(|x| x["type"] == "reasoning").collect())
            .unwrap_or_default();
        assert_eq!(items.len(), 1, "{resp}");
        assert_eq!(items[0]["encrypted_content"], "gAAAA");
        assert_eq!(items[0]["id"], "rs_1");
        // Codex history carrying Anthropic thinking (as the marker Switchyard gave it).
        let codex = json!({"model": "m", "input": [
            {"role": "user", "content": "q1"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "I think"}], "encrypted_content": anthropic_marker},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-openai-own"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a1"}]},
            {"role": "user", "content": "q2"}]});
        let msgs =
            translate_request(Format::Responses, Format::Messages, &codex, &opts()).unwrap_or_default();
        let blocks = &msgs["messages"][1]["content"];
        assert_eq!(
            blocks[0],
            json!({"type": "thinking", "thinking": "I think", "signature": "EqSig"}),
            "{msgs}"
        );
        assert_eq!(blocks.as_array().map(Vec::len), Some(2), "OpenAI's own reasoning is dropped: {msgs}");
    }

    #[test]
    fn prompt_cache_key_and_modern_fields_only_where_supported() {
        let body = json!({"model": "m", "max_tokens": 10, "thinking": {"type": "enabled", "budget_tokens": 9000},
                          "messages": [{"role": "user", "content": "hi"}]});
        let compatible =
            translate_request(Format::Messages, Format::Chat, &body, &opts()).unwrap_or_default();
        assert!(compatible.get("prompt_cache_key").is_none() && compatible.get("reasoning_effort").is_none());
        assert_eq!(compatible["max_tokens"], 10);
        let native =
            RequestOptions { openai_native: true, prompt_cache_key: Some("switchyard-abc".into()), ..opts() };
        let openai = translate_request(Format::Messages, Format::Chat, &body, &native).unwrap_or_default();
        assert_eq!(openai["prompt_cache_key"], "switchyard-abc");
        assert_eq!(openai["max_completion_tokens"], 10);
        assert_eq!(openai["reasoning_effort"], "medium");
    }
}

#[cfg(test)]
mod review_tests {
    use serde_json::json;

    use super::*;

    fn opts() -> RequestOptions {
        RequestOptions { model: "up".into(), default_max_tokens: 8192, ..RequestOptions::default() }
    }

    #[test]
    fn interleaved_parallel_chat_calls_keep_their_own_arguments() {
        let chunk =
            |d: Value| format!("data: {}\n\n", json!({"id": "c9", "choices": [{"index": 0, "delta": d}]}));
        let frames = [
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "A", "function": {"name": "f", "arguments": ""}}]}),
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "B", "function": {"name": "g", "arguments": ""}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"x\":1}"}}]})),
            chunk(json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"y\":2}"}}]})),
            format!(
                "data: {}\n\n",
                json!({"id": "c9", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
            ),
            "data: [DONE]\n\n".to_owned(),
        ];
        let mut t = StreamTranslator::new(Format::Chat, Format::Messages, StreamContext::default());
        let mut out = Vec::new();
        for f in &frames {
            out.extend_from_slice(&t.push(f.as_bytes()));
        }
        out.extend_from_slice(&t.finish().unwrap_or_default());
        let text = String::from_utf8_lossy(&out);
        let mut calls: Vec<(String, String)> = Vec::new();
        for line in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
            let v: Value = serde_json::from_str(line).unwrap_or_default();
            if v["type"] == "content_block_start" && v["content_block"]["type"] == "tool_use" {
                calls.push((v["content_block"]["id"].as_str().unwrap_or_default().to_owned(), String::new()));
            }
            if v["delta"]["type"] == "input_json_delta"
                && let Some(last) = calls.last_mut()
            {
                last.1.push_str(v["delta"]["partial_json"].as_str().unwrap_or_default());
            }
        }
        assert_eq!(calls, [("A".into(), "{\"x\":1}".into()), ("B".into(), "{\"y\":2}".into())], "{text}");
    }

    #[test]
    fn anthropic_thinking_only_where_anthropic_accepts_it() {
        let loop_without_thinking = json!({"model": "m", "reasoning_effort": "high", "temperature": 0.2,
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "messages": [{"role": "user", "content": "go"},
                         {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "done"}]});
        let out = translate_request(Format::Chat, Format::Messages, &loop_without_thinking, &opts())
            .unwrap_or_default();
        assert!(out.get("thinking").is_none(), "{out}");
        assert_eq!(out["temperature"], 0.2);
        let forced = json!({"model": "m", "reasoning_effort": "high", "tool_choice": "required",
            "tools": [{"type": "function", "function": {"name": "f"}}], "messages": [{"role": "user", "content": "go"}]});
        let out = translate_request(Format::Chat, Format::Messages, &forced, &opts()).unwrap_or_default();
        assert!(out.get("thinking").is_none() && out["tool_choice"]["type"] == "any", "{out}");
        let free = json!({"model": "m", "reasoning_effort": "high", "messages": [{"role": "user", "content": "go"}]});
        let out = translate_request(Format::Chat, Format::Messages, &free, &opts()).unwrap_or_default();
        assert_eq!(out["thinking"]["budget_tokens"], 24_576, "{out}");
        assert_eq!(out["max_tokens"], 8192 + 24_576, "the budget comes on top of the default: {out}");
    }

    #[test]
    fn claude_accounts_get_claude_codes_identity_and_toolless_history_becomes_text() {
        let body = json!({"model": "m", "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}],
            "tools": [{"type": "web_search"}]});
        let out = translate_request(
            Format::Responses,
            Format::Messages,
            &body,
            &RequestOptions { anthropic_oauth: true, ..opts() },
        )
        .unwrap_or_default();
        assert_eq!(out["system"][0]["text"], anthropic::request::CLAUDE_CODE_IDENTITY);
        let text = out["messages"].to_string();
        assert!(!text.contains("tool_use") && !text.contains("tool_result"), "{out}");
        assert!(text.contains("[called tool shell") && text.contains("[tool result: a.txt]"), "{out}");
    }

    #[test]
    fn responses_targets_never_get_unreplayable_reasoning_and_tiny_limits_are_raised() {
        let body = json!({"model": "m", "max_tokens": 1, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t",
              "signature": thinking::encode(&ir::Reasoning::Responses { id: Some("rs_1".into()), encrypted: None }, "")}]},
            {"role": "user", "content": "q2"}]});
        let out = translate_request(Format::Messages, Format::Responses, &body, &opts()).unwrap_or_default();
        assert!(!out.to_string().contains("rs_1"), "{out}");
        assert_eq!(out["max_output_tokens"], 16);
    }
}

/// The usage an answer of format `format` reports in `v`: a complete answer, or one
/// streamed event (Anthropic `message_start` / `message_delta`, a Chat usage chunk,
/// Responses `response.completed`). `None` when `v` carries no usage.
pub fn usage_in(format: Format, v: &Value) -> Option<ir::Usage> {
    let usage = match format {
        Format::Messages => v.get("message").and_then(|m| m.get("usage")).or_else(|| v.get("usage")),
        Format::Chat => v.get("usage"),
        Format::Responses => v.get("response").and_then(|r| r.get("usage")).or_else(|| v.get("usage")),
    }
    .filter(|u| u.is_object())?;
    Some(match format {
        Format::Messages => anthropic::usage_from(Some(usage)),
        Format::Chat => chat::usage_from(Some(usage)),
        Format::Responses => responses::usage_from(Some(usage)),
    })
}
