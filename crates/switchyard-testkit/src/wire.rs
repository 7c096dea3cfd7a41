//! Realistic provider bodies: what Anthropic Messages, OpenAI Chat Completions and
//! OpenAI Responses upstreams answer, as JSON and as SSE frames. Real agents (Claude
//! Code, Codex) parse these, so the shapes follow the public API references.

use serde_json::{Value, json};

fn frame(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// A complete Anthropic Messages response.
pub fn anthropic_message(model: &str, text: &str) -> Value {
    json!({
        "id": "msg_fake_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    })
}

/// The SSE frames of an Anthropic Messages stream answering `text`.
pub fn anthropic_sse(model: &str, text: &str) -> Vec<String> {
    let mut start = anthropic_message(model, "");
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    vec![
        frame(Some("message_start"), &json!({"type": "message_start", "message": start})),
        frame(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        frame(Some("ping"), &json!({"type": "ping"})),
        frame(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        frame(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0})),
        frame(
            Some("message_delta"),
            &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        frame(Some("message_stop"), &json!({"type": "message_stop"})),
    ]
}

/// A complete Chat Completions response.
pub fn chat_completion(model: &str, text: &str) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    })
}

/// The SSE frames of a Chat Completions stream answering `text`.
pub fn chat_sse(model: &str, text: &str) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        })
    };
    vec![
        frame(None, &chunk(json!({"role": "assistant", "content": ""}), Value::Null)),
        frame(None, &chunk(json!({"content": text}), Value::Null)),
        frame(None, &chunk(json!({}), json!("stop"))),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn response_object(model: &str, status: &str, output: Value) -> Value {
    json!({
        "id": "resp_fake_01",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": model,
        "output": output,
        "usage": {
            "input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 17
        }
    })
}

fn output_message(text: &str) -> Value {
    json!({
        "type": "message", "id": "msg_fake_01", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
    })
}

/// A complete Responses API response.
pub fn responses_json(model: &str, text: &str) -> Value {
    response_object(model, "completed", json!([output_message(text)]))
}

/// The SSE frames of a Responses API stream answering `text`.
pub fn responses_sse(model: &str, text: &str) -> Vec<String> {
    let mut in_progress = output_message("");
    in_progress["status"] = json!("in_progress");
    in_progress["content"] = json!([]);
    let events = [
        json!({"type": "response.created", "sequence_number": 0, "response": response_object(model, "in_progress", json!([]))}),
        json!({"type": "response.in_progress", "sequence_number": 1, "response": response_object(model, "in_progress", json!([]))}),
        json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": in_progress}),
        json!({"type": "response.content_part.added", "sequence_number": 3, "item_id": "msg_fake_01", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        json!({"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_fake_01", "output_index": 0, "content_index": 0, "delta": text}),
        json!({"type": "response.output_text.done", "sequence_number": 5, "item_id": "msg_fake_01", "output_index": 0, "content_index": 0, "text": text}),
        json!({"type": "response.content_part.done", "sequence_number": 6, "item_id": "msg_fake_01", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": text, "annotations": []}}),
        json!({"type": "response.output_item.done", "sequence_number": 7, "output_index": 0, "item": output_message(text)}),
        json!({"type": "response.completed", "sequence_number": 8, "response": responses_json(model, text)}),
    ];
    events.iter().map(|e| frame(e["type"].as_str(), e)).collect()
}

/// An Anthropic `count_tokens` answer.
pub fn count_tokens(n: u32) -> Value {
    json!({"input_tokens": n})
}

/// An Anthropic-format error body.
pub fn anthropic_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// An OpenAI-format error body.
pub fn openai_error(kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}
