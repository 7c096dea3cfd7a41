//! Anthropic Messages streams.

use bytes::BytesMut;
use serde_json::{Value, json};

use super::response::message_id;
use super::{stop_from, stop_to, usage_from, usage_to};
use crate::ir::{BlockKind, Delta, Event, Reasoning, StopReason, Usage};
use crate::stream::{Decoder, Encoder, StreamContext};
use crate::{json, sse, thinking};

/// Reads a Messages stream.
#[derive(Default)]
pub struct Decode {
    started: bool,
    /// The open block is one the canonical model carries (server-tool blocks are
    /// skipped with their deltas).
    open: Option<OpenBlock>,
    stop: Option<StopReason>,
    usage: Usage,
    finished: bool,
}

enum OpenBlock {
    Kept { signature: Option<String> },
    Skipped,
}

impl Decoder for Decode {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<Event>) {
        let Ok(v) = serde_json::from_str::<Value>(data) else { return };
        let kind = json::str(&v, "type").unwrap_or(name);
        match kind {
            // Some upstreams repeat message_start; the client sees one.
            "message_start" if !self.started => {
                self.started = true;
                self.usage = usage_from(v.get("message").and_then(|m| m.get("usage")));
                let id = v.get("message").and_then(|m| json::str(m, "id")).unwrap_or("msg").to_owned();
                out.push(Event::Start { id, usage: self.usage });
            }
            "content_block_start" => {
                self.ensure_started(out);
                let b = v.get("content_block").unwrap_or(&Value::Null);
                let kept = match json::str(b, "type") {
                    Some("text") => {
                        out.push(Event::BlockStart(BlockKind::Text));
                        if let Some(t) = json::str(b, "text").filter(|t| !t.is_empty()) {
                            out.push(Event::Delta(Delta::Text(t.to_owned())));
                        }
                        Some(None)
                    }
                    Some("thinking") => {
                        out.push(Event::BlockStart(BlockKind::Thinking {
                            origin: Reasoning::Anthropic { signature: String::new() },
                        }));
                        Some(json::str(b, "signature").filter(|s| !s.is_empty()).map(str::to_owned))
                    }
                    Some("redacted_thinking") => {
                        let data = json::str(b, "data").unwrap_or_default().to_owned();
                        out.push(Event::BlockStart(BlockKind::Thinking {
                            origin: Reasoning::AnthropicRedacted { data },
                        }));
                        Some(None)
                    }
                    Some("tool_use") => {
                        out.push(Event::BlockStart(BlockKind::ToolCall {
                            id: json::str(b, "id").unwrap_or_default().to_owned(),
                            name: json::str(b, "name").unwrap_or_default().to_owned(),
                        }));
                        // An input given whole at the start (no deltas follow).
                        if let Some(input) =
                            b.get("input").filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        {
                            out.push(Event::Delta(Delta::Arguments(input.to_string())));
                        }
                        Some(None)
                    }
                    _ => None,
                };
                self.open = Some(match kept {
                    Some(signature) => OpenBlock::Kept { signature },
                    None => OpenBlock::Skipped,
                });
            }
            "content_block_delta" => {
                let Some(OpenBlock::Kept { signature }) = self.open.as_mut() else { return };
                let d = v.get("delta").unwrap_or(&Value::Null);
                let text = |k: &str| json::str(d, k).unwrap_or_default().to_owned();
                match json::str(d, "type") {
                    Some("text_delta") => out.push(Event::Delta(Delta::Text(text("text")))),
                    Some("thinking_delta") => out.push(Event::Delta(Delta::Thinking(text("thinking")))),
                    Some("input_json_delta") => {
                        out.push(Event::Delta(Delta::Arguments(text("partial_json"))))
                    }
                    Some("signature_delta") => *signature = Some(text("signature")),
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(OpenBlock::Kept { signature }) = self.open.take() {
                    let origin = signature.map(|s| match thinking::decode(&s) {
                        Some((origin, _)) => origin,
                        None => Reasoning::Anthropic { signature: s },
                    });
                    out.push(Event::BlockStop { origin });
                }
            }
            "message_delta" => {
                let d = v.get("delta").unwrap_or(&Value::Null);
                if let Some(reason) = json::str(d, "stop_reason") {
                    self.stop = Some(stop_from(Some(reason), json::str(d, "stop_sequence")));
                }
                self.usage.merge(&usage_from(v.get("usage")));
            }
            "message_stop" => self.finish(out),
            "error" => {
                let e = v.get("error").unwrap_or(&Value::Null);
                out.push(Event::Error {
                    kind: json::str(e, "type").unwrap_or("api_error").to_owned(),
                    message: json::str(e, "message").unwrap_or("the upstream reported an error").to_owned(),
                });
            }
            _ => {}
        }
    }

    fn end(&mut self, _out: &mut Vec<Event>) -> bool {
        self.finished
    }
}

impl Decode {
    fn ensure_started(&mut self, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            out.push(Event::Start { id: "msg".into(), usage: Usage::default() });
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        if let Some(OpenBlock::Kept { .. }) = self.open.take() {
            out.push(Event::BlockStop { origin: None });
        }
        self.finished = true;
        out.push(Event::Finish { stop: self.stop.clone().unwrap_or(StopReason::EndTurn), usage: self.usage });
    }
}

/// Writes a Messages stream.
pub struct Encode {
    cx: StreamContext,
    started: bool,
    index: usize,
    open: Option<EncBlock>,
    done: bool,
}

enum EncBlock {
    Text,
    Thinking { text: String, origin: Reasoning },
    Redacted,
    Tool,
}

impl Encode {
    /// For a client that asked for `cx.model`.
    pub fn new(cx: StreamContext) -> Encode {
        Encode { cx, started: false, index: 0, open: None, done: false }
    }

    fn start(&mut self, id: &str, usage: &Usage, out: &mut BytesMut) {
        self.started = true;
        let mut u = usage_to(usage);
        u["output_tokens"] = json!(usage.output.max(1));
        sse::named(
            out,
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": message_id(id), "type": "message", "role": "assistant", "model": self.cx.model,
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": u,
            }}),
        );
    }

    fn delta(&self, delta: Value, out: &mut BytesMut) {
        sse::named(
            out,
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": self.index, "delta": delta}),
        );
    }

    fn stop_block(&mut self, final_origin: Option<&Reasoning>, out: &mut BytesMut) {
        let Some(block) = self.open.take() else { return };
        if let EncBlock::Thinking { text, origin } = block {
            let origin = final_origin.unwrap_or(&origin);
            let signature = match origin {
                Reasoning::Anthropic { signature } if !signature.is_empty() => signature.clone(),
                other => thinking::encode(other, &text),
            };
            self.delta(json!({"type": "signature_delta", "signature": signature}), out);
        }
        sse::named(out, "content_block_stop", &json!({"type": "content_block_stop", "index": self.index}));
        self.index += 1;
    }
}

impl Encoder for Encode {
    fn encode(&mut self, event: &Event, out: &mut BytesMut) {
        if self.done {
            return;
        }
        if !self.started && !matches!(event, Event::Start { .. } | Event::Error { .. }) {
            self.start("msg", &Usage::default(), out);
        }
        match event {
            Event::Start { id, usage } => {
                if !self.started {
                    self.start(id, usage, out);
                }
            }
            Event::BlockStart(kind) => {
                self.stop_block(None, out);
                let (block, first) = match kind {
                    BlockKind::Text => (json!({"type": "text", "text": ""}), EncBlock::Text),
                    BlockKind::Thinking { origin: Reasoning::AnthropicRedacted { data } } => {
                        (json!({"type": "redacted_thinking", "data": data}), EncBlock::Redacted)
                    }
                    BlockKind::Thinking { origin } => (
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                        EncBlock::Thinking { text: String::new(), origin: origin.clone() },
                    ),
                    BlockKind::ToolCall { id, name } => (
                        json!({"type": "tool_use", "id": super::tool_id(id), "name": name, "input": {}}),
                        EncBlock::Tool,
                    ),
                };
                sse::named(
                    out,
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": self.index, "content_block": block}),
                );
                self.open = Some(first);
            }
            Event::Delta(d) => {
                let delta = match (d, self.open.as_mut()) {
                    (Delta::Text(t), Some(EncBlock::Text)) => json!({"type": "text_delta", "text": t}),
                    (Delta::Thinking(t), Some(EncBlock::Thinking { text, .. })) => {
                        text.push_str(t);
                        json!({"type": "thinking_delta", "thinking": t})
                    }
                    (Delta::Arguments(a), Some(EncBlock::Tool)) => {
                        json!({"type": "input_json_delta", "partial_json": a})
                    }
                    _ => return,
                };
                self.delta(delta, out);
            }
            Event::BlockStop { origin } => self.stop_block(origin.as_ref(), out),
            Event::Finish { stop, usage } => {
                self.stop_block(None, out);
                let (reason, sequence) = stop_to(stop);
                sse::named(
                    out,
                    "message_delta",
                    &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": sequence},
                            "usage": usage_to(usage)}),
                );
                sse::named(out, "message_stop", &json!({"type": "message_stop"}));
                self.done = true;
            }
            Event::Error { kind, message } => {
                sse::named(
                    out,
                    "error",
                    &json!({"type": "error", "error": {"type": anthropic_error_type(kind), "message": message}}),
                );
                self.done = true;
            }
        }
    }
}

/// Another format's error kind as an Anthropic error type.
pub(crate) fn anthropic_error_type(kind: &str) -> &str {
    match kind {
        "invalid_request_error"
        | "authentication_error"
        | "permission_error"
        | "not_found_error"
        | "rate_limit_error"
        | "api_error"
        | "overloaded_error"
        | "request_too_large" => kind,
        "rate_limit_exceeded" | "insufficient_quota" => "rate_limit_error",
        _ => "api_error",
    }
}
