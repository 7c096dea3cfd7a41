//! Responses streams.
//!
//! Reading: output items are blocks (a message's text, a reasoning item, a function
//! call); the answer finishes at `response.completed` / `response.incomplete`, and
//! `response.failed` or an `error` event is an error.
//!
//! Writing: every item is announced (`output_item.added`, its part), grown
//! (`*.delta`), closed (`*.done`, `output_item.done` with the whole item), and the
//! final `response.completed` repeats every item, so the encoder keeps each item's
//! text until then. Every event carries its `sequence_number`.

use bytes::BytesMut;
use serde_json::{Value, json};

use super::response::{response_id, response_object};
use super::{reasoning_item, reasoning_origin, status_to, stop_from, usage_from, usage_to};
use crate::ir::{BlockKind, Delta, Event, Reasoning, Usage};
use crate::stream::{Decoder, Encoder, StreamContext};
use crate::{derived_id, json, sse};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    Tool,
}

/// Reads a Responses stream.
#[derive(Default)]
pub struct Decode {
    started: bool,
    open: Option<Open>,
    /// Arguments were streamed for the open tool call (else `done` carries them).
    streamed_args: bool,
    /// Reasoning summary parts seen in the open reasoning item.
    summary_parts: usize,
    called_tools: bool,
    finished: bool,
}

impl Decode {
    fn close(&mut self, origin: Option<Reasoning>, out: &mut Vec<Event>) {
        if self.open.take().is_some() {
            out.push(Event::BlockStop { origin });
        }
    }

    fn open(&mut self, want: Open, kind: BlockKind, out: &mut Vec<Event>) {
        if self.open != Some(want) {
            self.close(None, out);
            out.push(Event::BlockStart(kind));
            self.open = Some(want);
            self.streamed_args = false;
            self.summary_parts = 0;
        }
    }

    fn start(&mut self, v: &Value, out: &mut Vec<Event>) {
        if !self.started {
            self.started = true;
            let id = v.get("response").and_then(|r| json::str(r, "id")).unwrap_or("resp").to_owned();
            out.push(Event::Start { id, usage: Usage::default() });
        }
    }
}

impl Decoder for Decode {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<Event>) {
        let Ok(v) = serde_json::from_str::<Value>(data) else { return };
        let kind = json::str(&v, "type").unwrap_or(name);
        if self.finished {
            return;
        }
        if kind != "error" {
            self.start(&v, out);
        }
        let item = v.get("item").unwrap_or(&Value::Null);
        let text = |k: &str| json::str(&v, k).unwrap_or_default().to_owned();
        match kind {
            "response.output_item.added" => match json::str(item, "type") {
                Some("function_call") => {
                    self.close(None, out);
                    self.called_tools = true;
                    let id = json::str(item, "call_id").or_else(|| json::str(item, "id")).unwrap_or_default();
                    out.push(Event::BlockStart(BlockKind::ToolCall {
                        id: id.to_owned(),
                        name: json::str(item, "name").unwrap_or_default().to_owned(),
                    }));
                    self.open = Some(Open::Tool);
                    self.streamed_args = false;
                    if let Some(a) = json::str(item, "arguments").filter(|a| !a.is_empty()) {
                        self.streamed_args = true;
                        out.push(Event::Delta(Delta::Arguments(a.to_owned())));
                    }
                }
                Some("reasoning") => {
                    let (origin, _) = reasoning_origin(item);
                    self.open(Open::Thinking, BlockKind::Thinking { origin }, out);
                }
                _ => {}
            },
            "response.output_text.delta" | "response.refusal.delta" => {
                self.open(Open::Text, BlockKind::Text, out);
                out.push(Event::Delta(Delta::Text(text("delta"))));
            }
            "response.reasoning_summary_part.added" if self.open == Some(Open::Thinking) => {
                if self.summary_parts > 0 {
                    out.push(Event::Delta(Delta::Thinking("\n\n".into())));
                }
                self.summary_parts += 1;
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let (origin, _) = reasoning_origin(&json!({"id": v.get("item_id")}));
                self.open(Open::Thinking, BlockKind::Thinking { origin }, out);
                out.push(Event::Delta(Delta::Thinking(text("delta"))));
            }
            "response.function_call_arguments.delta" if self.open == Some(Open::Tool) => {
                self.streamed_args = true;
                out.push(Event::Delta(Delta::Arguments(text("delta"))));
            }
            "response.output_item.done" => match json::str(item, "type") {
                Some("function_call") if self.open == Some(Open::Tool) => {
                    if !self.streamed_args {
                        let args = json::arguments_text(item.get("arguments"));
                        if !args.is_empty() {
                            out.push(Event::Delta(Delta::Arguments(args)));
                        }
                    }
                    self.close(None, out);
                }
                Some("reasoning") => {
                    let (origin, _) = reasoning_origin(item);
                    if self.open != Some(Open::Thinking) {
                        self.open(Open::Thinking, BlockKind::Thinking { origin: origin.clone() }, out);
                    }
                    self.close(Some(origin), out);
                }
                Some("message") => {
                    if self.open != Some(Open::Text) {
                        // An upstream that sends the text only with the finished item.
                        let whole: String = json::arr(item, "content")
                            .iter()
                            .filter_map(|c| json::str(c, "text").or_else(|| json::str(c, "refusal")))
                            .collect();
                        if whole.is_empty() {
                            return;
                        }
                        self.open(Open::Text, BlockKind::Text, out);
                        out.push(Event::Delta(Delta::Text(whole)));
                    }
                    self.close(None, out);
                }
                _ => {}
            },
            "response.completed" | "response.incomplete" => {
                self.close(None, out);
                self.finished = true;
                let r = v.get("response").unwrap_or(&Value::Null);
                out.push(Event::Finish {
                    stop: stop_from(r, self.called_tools),
                    usage: usage_from(r.get("usage")),
                });
            }
            "response.failed" => {
                let e = v.get("response").and_then(|r| r.get("error")).unwrap_or(&Value::Null);
                self.finished = true;
                out.push(Event::Error {
                    kind: json::str(e, "code").unwrap_or("server_error").to_owned(),
                    message: json::str(e, "message").unwrap_or("the upstream response failed").to_owned(),
                });
            }
            "error" => {
                let e = v.get("error").unwrap_or(&v);
                self.finished = true;
                out.push(Event::Error {
                    kind: json::str(e, "code")
                        .or_else(|| json::str(e, "type"))
                        .unwrap_or("server_error")
                        .to_owned(),
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

/// The item being written.
enum Item {
    Text { id: String, text: String },
    Thinking { id: String, text: String, origin: Reasoning },
    Tool { id: String, call_id: String, name: String, args: String },
}

/// Writes a Responses stream.
pub struct Encode {
    cx: StreamContext,
    id: String,
    seq: u64,
    started: bool,
    open: Option<Item>,
    /// Finished items, for `response.completed`.
    output: Vec<Value>,
    done: bool,
}

impl Encode {
    /// For a client that asked for `cx.model`.
    pub fn new(cx: StreamContext) -> Encode {
        Encode { cx, id: String::new(), seq: 0, started: false, open: None, output: Vec::new(), done: false }
    }

    fn emit(&mut self, name: &str, mut payload: Value, out: &mut BytesMut) {
        payload["type"] = json!(name);
        payload["sequence_number"] = json!(self.seq);
        self.seq += 1;
        sse::named(out, name, &payload);
    }

    fn response(&self, status: &str, incomplete: Value, usage: Option<Value>) -> Value {
        response_object(
            &self.id,
            &self.cx.model,
            self.cx.created,
            status,
            incomplete,
            self.output.clone(),
            usage,
        )
    }

    fn index(&self) -> usize {
        self.output.len()
    }

    fn close(&mut self, final_origin: Option<&Reasoning>, out: &mut BytesMut) {
        let Some(item) = self.open.take() else { return };
        let index = self.index();
        let done = match item {
            Item::Text { id, text } => {
                let part = json!({"type": "output_text", "text": text, "annotations": []});
                self.emit(
                    "response.output_text.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                    out,
                );
                self.emit(
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "part": part}),
                    out,
                );
                json!({"id": id, "type": "message", "status": "completed", "role": "assistant", "content": [part]})
            }
            Item::Thinking { id, text, origin } => {
                if !text.is_empty() {
                    let part = json!({"type": "summary_text", "text": text});
                    self.emit(
                        "response.reasoning_summary_text.done",
                        json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text}),
                        out,
                    );
                    self.emit(
                        "response.reasoning_summary_part.done",
                        json!({"item_id": id, "output_index": index, "summary_index": 0, "part": part}),
                        out,
                    );
                }
                reasoning_item(&id, &text, final_origin.unwrap_or(&origin))
            }
            Item::Tool { id, call_id, name, args } => {
                let args = if args.is_empty() { "{}".to_owned() } else { args };
                self.emit(
                    "response.function_call_arguments.done",
                    json!({"item_id": id, "output_index": index, "arguments": args}),
                    out,
                );
                json!({"id": id, "type": "function_call", "status": "completed", "call_id": call_id, "name": name, "arguments": args})
            }
        };
        self.emit("response.output_item.done", json!({"output_index": index, "item": done}), out);
        self.output.push(done);
    }
}

impl Encoder for Encode {
    fn encode(&mut self, event: &Event, out: &mut BytesMut) {
        if self.done {
            return;
        }
        if !self.started && !matches!(event, Event::Error { .. }) {
            self.started = true;
            let id = if let Event::Start { id, .. } = event { id.as_str() } else { "resp" };
            self.id = response_id(id);
            let r = self.response("in_progress", Value::Null, None);
            self.emit("response.created", json!({"response": r}), out);
            self.emit("response.in_progress", json!({"response": r}), out);
        }
        let index = self.index();
        match event {
            Event::Start { .. } => {}
            Event::BlockStart(kind) => {
                self.close(None, out);
                let index = self.index();
                let seed = format!("{}{}", self.id, index);
                match kind {
                    BlockKind::Text => {
                        let id = derived_id("msg_", &seed, index);
                        self.emit(
                            "response.output_item.added",
                            json!({"output_index": index, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
                            out,
                        );
                        self.emit(
                            "response.content_part.added",
                            json!({"item_id": id, "output_index": index, "content_index": 0,
                                   "part": {"type": "output_text", "text": "", "annotations": []}}),
                            out,
                        );
                        self.open = Some(Item::Text { id, text: String::new() });
                    }
                    BlockKind::Thinking { origin } => {
                        let id = derived_id("rs_", &seed, index);
                        self.emit(
                            "response.output_item.added",
                            json!({"output_index": index, "item": {"id": id, "type": "reasoning", "summary": []}}),
                            out,
                        );
                        self.open = Some(Item::Thinking { id, text: String::new(), origin: origin.clone() });
                    }
                    BlockKind::ToolCall { id: call_id, name } => {
                        let id = derived_id("fc_", &seed, index);
                        self.emit(
                            "response.output_item.added",
                            json!({"output_index": index, "item": {"id": id, "type": "function_call", "status": "in_progress",
                                   "call_id": call_id, "name": name, "arguments": ""}}),
                            out,
                        );
                        self.open = Some(Item::Tool {
                            id,
                            call_id: call_id.clone(),
                            name: name.clone(),
                            args: String::new(),
                        });
                    }
                }
            }
            Event::Delta(d) => match (d, self.open.as_mut()) {
                (Delta::Text(t), Some(Item::Text { id, text })) => {
                    text.push_str(t);
                    let payload = json!({"item_id": id, "output_index": index, "content_index": 0, "delta": t, "logprobs": []});
                    self.emit("response.output_text.delta", payload, out);
                }
                (Delta::Thinking(t), Some(Item::Thinking { id, text, .. })) => {
                    let first = text.is_empty();
                    text.push_str(t);
                    let id = id.clone();
                    if first {
                        self.emit(
                            "response.reasoning_summary_part.added",
                            json!({"item_id": id, "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
                            out,
                        );
                    }
                    self.emit(
                        "response.reasoning_summary_text.delta",
                        json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": t}),
                        out,
                    );
                }
                (Delta::Arguments(a), Some(Item::Tool { id, args, .. })) => {
                    args.push_str(a);
                    let payload = json!({"item_id": id, "output_index": index, "delta": a});
                    self.emit("response.function_call_arguments.delta", payload, out);
                }
                _ => {}
            },
            Event::BlockStop { origin } => self.close(origin.as_ref(), out),
            Event::Finish { stop, usage } => {
                self.close(None, out);
                let (status, incomplete) = status_to(stop);
                let r = self.response(status, incomplete, Some(usage_to(usage)));
                let name = if status == "completed" { "response.completed" } else { "response.incomplete" };
                self.emit(name, json!({"response": r}), out);
                self.done = true;
            }
            Event::Error { kind, message } => {
                // As OpenAI does: the error, then the response failed with it.
                self.emit("error", json!({"code": kind, "message": message, "param": null}), out);
                let mut r = self.response("failed", Value::Null, None);
                r["error"] = json!({"code": kind, "message": message});
                self.emit("response.failed", json!({"response": r}), out);
                self.done = true;
            }
        }
    }
}
