//! One model turn — reasoning, text, tool calls, a stop and usage — rendered as each
//! provider really answers it, as JSON and as SSE, following the public API
//! references (and the recordings in `../shared/fixtures/upstream-recordings/`):
//! Anthropic numbers blocks and streams tool input as `input_json_delta`; Chat
//! Completions sends tool calls by `index` with the id and name only in the first
//! chunk, `finish_reason` before a separate usage chunk and then `[DONE]`; Responses
//! announces, grows and closes output items with sequence numbers.
//!
//! Written by hand for the translation tests, independently of the gateway's
//! translator, so a test compares two readings of the APIs, not one with itself.

use serde_json::{Value, json};

/// Why the turn stopped, in Anthropic's words (mapped per format below).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// `end_turn` / `stop` / `completed`.
    EndTurn,
    /// `max_tokens` / `length` / `incomplete: max_output_tokens`.
    MaxTokens,
    /// `tool_use` / `tool_calls` / `completed` with function calls.
    ToolUse,
    /// `stop_sequence` (Anthropic names the sequence) / `stop` / `completed`.
    StopSequence(String),
    /// `refusal` / `content_filter` / `incomplete: content_filter`.
    Refusal,
    /// `pause_turn` (Anthropic only: a long server-side turn paused) / `stop` /
    /// `completed`.
    PauseTurn,
}

/// A tool call, its arguments split into the chunks the upstream streams.
#[derive(Debug, Clone)]
pub struct Call {
    /// Call id (Anthropic `toolu_…`, OpenAI `call_…`).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Argument JSON text, in chunks.
    pub chunks: Vec<String>,
}

impl Call {
    /// The whole argument text.
    pub fn arguments(&self) -> String {
        self.chunks.concat()
    }
}

/// Token counts, in the canonical sense (`input` excludes cached tokens).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokens {
    /// Uncached input.
    pub input: u64,
    /// Output.
    pub output: u64,
    /// Read from the prompt cache.
    pub cache_read: u64,
}

/// One model turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Reasoning text, with the provider's proof (Anthropic signature, Responses
    /// encrypted content; Chat has none).
    pub thinking: Option<(String, String)>,
    /// Text, in chunks.
    pub text: Vec<String>,
    /// Tool calls, in order.
    pub calls: Vec<Call>,
    /// Why it stopped.
    pub stop: Stop,
    /// Usage.
    pub usage: Tokens,
}

impl Turn {
    /// The whole text.
    pub fn full_text(&self) -> String {
        self.text.concat()
    }
}

fn named(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

fn data(data: &Value) -> String {
    format!("data: {data}\n\n")
}

// --- Anthropic Messages ---------------------------------------------------------------

fn anthropic_stop(stop: &Stop) -> (&'static str, Value) {
    match stop {
        Stop::EndTurn => ("end_turn", Value::Null),
        Stop::MaxTokens => ("max_tokens", Value::Null),
        Stop::ToolUse => ("tool_use", Value::Null),
        Stop::StopSequence(s) => ("stop_sequence", json!(s)),
        Stop::Refusal => ("refusal", Value::Null),
        Stop::PauseTurn => ("pause_turn", Value::Null),
    }
}

fn anthropic_usage(u: &Tokens) -> Value {
    json!({"input_tokens": u.input, "output_tokens": u.output, "cache_read_input_tokens": u.cache_read,
           "cache_creation_input_tokens": 0})
}

/// The Messages JSON answer.
pub fn anthropic_json(t: &Turn, model: &str) -> Value {
    let mut content = Vec::new();
    if let Some((text, sig)) = &t.thinking {
        content.push(json!({"type": "thinking", "thinking": text, "signature": sig}));
    }
    if !t.text.is_empty() {
        content.push(json!({"type": "text", "text": t.full_text()}));
    }
    for c in &t.calls {
        let input: Value = serde_json::from_str(&c.arguments()).unwrap_or(json!({}));
        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    let (reason, seq) = anthropic_stop(&t.stop);
    json!({"id": "msg_01scenario", "type": "message", "role": "assistant", "model": model, "content": content,
           "stop_reason": reason, "stop_sequence": seq, "usage": anthropic_usage(&t.usage)})
}

/// The Messages SSE frames.
pub fn anthropic_sse(t: &Turn, model: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start_usage = anthropic_usage(&t.usage);
    start_usage["output_tokens"] = json!(1);
    out.push(named(
        "message_start",
        &json!({"type": "message_start", "message": {"id": "msg_01scenario", "type": "message", "role": "assistant",
                "model": model, "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage}}),
    ));
    let mut index = 0;
    let delta = |index: usize, d: Value| {
        named("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": d}))
    };
    let stop =
        |index: usize| named("content_block_stop", &json!({"type": "content_block_stop", "index": index}));
    if let Some((text, sig)) = &t.thinking {
        out.push(named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ));
        out.push(delta(index, json!({"type": "thinking_delta", "thinking": text})));
        out.push(delta(index, json!({"type": "signature_delta", "signature": sig})));
        out.push(stop(index));
        index += 1;
    }
    if !t.text.is_empty() {
        out.push(named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}),
        ));
        out.push(named("ping", &json!({"type": "ping"})));
        for chunk in &t.text {
            out.push(delta(index, json!({"type": "text_delta", "text": chunk})));
        }
        out.push(stop(index));
        index += 1;
    }
    for c in &t.calls {
        out.push(named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}}),
        ));
        out.push(delta(index, json!({"type": "input_json_delta", "partial_json": ""})));
        for chunk in &c.chunks {
            out.push(delta(index, json!({"type": "input_json_delta", "partial_json": chunk})));
        }
        out.push(stop(index));
        index += 1;
    }
    let (reason, seq) = anthropic_stop(&t.stop);
    out.push(named(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": seq},
        "usage": {"output_tokens": t.usage.output}}),
    ));
    out.push(named("message_stop", &json!({"type": "message_stop"})));
    out
}

// --- Chat Completions -----------------------------------------------------------------

fn chat_finish(stop: &Stop) -> &'static str {
    match stop {
        Stop::EndTurn | Stop::StopSequence(_) | Stop::PauseTurn => "stop",
        Stop::MaxTokens => "length",
        Stop::ToolUse => "tool_calls",
        Stop::Refusal => "content_filter",
    }
}

fn chat_usage(u: &Tokens) -> Value {
    json!({"prompt_tokens": u.input + u.cache_read, "completion_tokens": u.output,
           "total_tokens": u.input + u.cache_read + u.output,
           "prompt_tokens_details": {"cached_tokens": u.cache_read, "audio_tokens": 0},
           "completion_tokens_details": {"reasoning_tokens": 0}})
}

/// The Chat Completions JSON answer (reasoning as DeepSeek's `reasoning_content`).
pub fn chat_json(t: &Turn, model: &str) -> Value {
    let mut message = json!({"role": "assistant", "content": if t.text.is_empty() { Value::Null } else { json!(t.full_text()) }, "refusal": null});
    if let Some((text, _)) = &t.thinking {
        message["reasoning_content"] = json!(text);
    }
    if !t.calls.is_empty() {
        message["tool_calls"] = t
            .calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments()}}))
            .collect();
    }
    json!({"id": "chatcmpl-scenario", "object": "chat.completion", "created": 1_700_000_000, "model": model,
           "choices": [{"index": 0, "message": message, "finish_reason": chat_finish(&t.stop), "logprobs": null}],
           "usage": chat_usage(&t.usage)})
}

/// The Chat Completions SSE frames (`stream_options.include_usage` on).
pub fn chat_sse(t: &Turn, model: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        data(&json!({"id": "chatcmpl-scenario", "object": "chat.completion.chunk", "created": 1_700_000_000,
                     "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}]}))
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    if let Some((text, _)) = &t.thinking {
        out.push(chunk(json!({"reasoning_content": text}), Value::Null));
    }
    for piece in &t.text {
        out.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (i, c) in t.calls.iter().enumerate() {
        let (first, rest) = c.chunks.split_first().map_or(("", &[][..]), |(f, r)| (f.as_str(), r));
        out.push(chunk(
            json!({"tool_calls": [{"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": first}}]}),
            Value::Null,
        ));
        for piece in rest {
            // Continuation chunks carry only the index (some providers send an empty id).
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "id": "", "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    out.push(chunk(json!({}), json!(chat_finish(&t.stop))));
    out.push(data(
        &json!({"id": "chatcmpl-scenario", "object": "chat.completion.chunk", "created": 1_700_000_000,
                          "model": model, "choices": [], "usage": chat_usage(&t.usage)}),
    ));
    out.push("data: [DONE]\n\n".to_owned());
    out
}

// --- Responses ------------------------------------------------------------------------

fn responses_usage(u: &Tokens) -> Value {
    json!({"input_tokens": u.input + u.cache_read, "input_tokens_details": {"cached_tokens": u.cache_read},
           "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": u.input + u.cache_read + u.output})
}

fn responses_items(t: &Turn) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some((text, enc)) = &t.thinking {
        items.push(json!({"id": "rs_scenario", "type": "reasoning", "summary": [{"type": "summary_text", "text": text}],
                          "encrypted_content": enc}));
    }
    if !t.text.is_empty() {
        let content = if t.stop == Stop::Refusal {
            json!([{"type": "refusal", "refusal": t.full_text()}])
        } else {
            json!([{"type": "output_text", "text": t.full_text(), "annotations": []}])
        };
        items.push(json!({"id": "msg_scenario", "type": "message", "status": "completed", "role": "assistant", "content": content}));
    }
    for (i, c) in t.calls.iter().enumerate() {
        items.push(json!({"id": format!("fc_scenario{i}"), "type": "function_call", "status": "completed",
                          "call_id": c.id, "name": c.name, "arguments": c.arguments()}));
    }
    items
}

fn responses_status(stop: &Stop) -> (&'static str, Value) {
    match stop {
        Stop::MaxTokens => ("incomplete", json!({"reason": "max_output_tokens"})),
        Stop::Refusal => ("incomplete", json!({"reason": "content_filter"})),
        _ => ("completed", Value::Null),
    }
}

fn responses_object(
    t: &Turn,
    model: &str,
    status: &str,
    incomplete: Value,
    output: Vec<Value>,
    usage: Value,
) -> Value {
    json!({"id": "resp_scenario", "object": "response", "created_at": 1_700_000_000, "status": status,
           "error": null, "incomplete_details": incomplete, "model": model, "output": output,
           "parallel_tool_calls": t.calls.len() > 1, "tool_choice": "auto", "tools": [], "usage": usage})
}

/// The Responses JSON answer.
pub fn responses_json(t: &Turn, model: &str) -> Value {
    let (status, incomplete) = responses_status(&t.stop);
    responses_object(t, model, status, incomplete, responses_items(t), responses_usage(&t.usage))
}

/// The Responses SSE frames.
pub fn responses_sse(t: &Turn, model: &str) -> Vec<String> {
    let mut seq = 0u64;
    let mut out = Vec::new();
    let mut ev = |out: &mut Vec<String>, kind: &str, mut payload: Value| {
        payload["type"] = json!(kind);
        payload["sequence_number"] = json!(seq);
        seq += 1;
        out.push(named(kind, &payload));
    };
    let shell = responses_object(t, model, "in_progress", Value::Null, vec![], Value::Null);
    ev(&mut out, "response.created", json!({"response": shell}));
    ev(&mut out, "response.in_progress", json!({"response": shell}));
    let items = responses_items(t);
    for (index, item) in items.iter().enumerate() {
        let id = item["id"].clone();
        match item["type"].as_str() {
            Some("reasoning") => {
                ev(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
                );
                let text = item["summary"][0]["text"].clone();
                ev(
                    &mut out,
                    "response.reasoning_summary_part.added",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
                );
                ev(
                    &mut out,
                    "response.reasoning_summary_text.delta",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": text}),
                );
                ev(
                    &mut out,
                    "response.reasoning_summary_text.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text}),
                );
                ev(
                    &mut out,
                    "response.reasoning_summary_part.done",
                    json!({"item_id": id, "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": text}}),
                );
            }
            Some("message") => {
                ev(
                    &mut out,
                    "response.output_item.added",
                    json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
                );
                let refusal = item["content"][0]["type"] == "refusal";
                let part = if refusal {
                    json!({"type": "refusal", "refusal": ""})
                } else {
                    json!({"type": "output_text", "text": "", "annotations": []})
                };
                ev(
                    &mut out,
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
                );
                let kind = if refusal { "response.refusal.delta" } else { "response.output_text.delta" };
                for piece in &t.text {
                    ev(
                        &mut out,
                        kind,
                        json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece, "logprobs": []}),
                    );
                }
                if refusal {
                    ev(
                        &mut out,
                        "response.refusal.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "refusal": t.full_text()}),
                    );
                } else {
                    ev(
                        &mut out,
                        "response.output_text.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "text": t.full_text(), "logprobs": []}),
                    );
                }
                ev(
                    &mut out,
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "part": item["content"][0]}),
                );
            }
            _ => {
                let call = &t.calls[index + t.calls.len() - items.len()];
                let mut added = item.clone();
                added["arguments"] = json!("");
                added["status"] = json!("in_progress");
                ev(&mut out, "response.output_item.added", json!({"output_index": index, "item": added}));
                for piece in &call.chunks {
                    ev(
                        &mut out,
                        "response.function_call_arguments.delta",
                        json!({"item_id": id, "output_index": index, "delta": piece}),
                    );
                }
                ev(
                    &mut out,
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": index, "arguments": call.arguments()}),
                );
            }
        }
        ev(&mut out, "response.output_item.done", json!({"output_index": index, "item": item}));
    }
    let (status, incomplete) = responses_status(&t.stop);
    let done = responses_object(t, model, status, incomplete, items, responses_usage(&t.usage));
    let kind = if status == "completed" { "response.completed" } else { "response.incomplete" };
    ev(&mut out, kind, json!({"response": done}));
    out
}
