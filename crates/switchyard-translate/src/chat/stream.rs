//! Chat Completions streams.
//!
//! Reading: a Chat stream has no block structure, so the decoder makes one. Text,
//! reasoning and each tool call are blocks; a tool call is told apart by its
//! `index` and, for upstreams that number every call 0, by a new `id`; a
//! continuation chunk (no id, no name) extends the call it indexes. The
//! `finish_reason` chunk may come before the usage chunk, so the answer finishes at
//! `[DONE]` (or at the end of the body after a `finish_reason`); a body that ends
//! without either was cut short.

use bytes::BytesMut;
use serde_json::{Value, json};

use super::response::completion_id;
use super::{stop_from, stop_to, usage_from, usage_to};
use crate::ir::{BlockKind, Delta, Event, Reasoning, StopReason, Usage};
use crate::stream::{Decoder, Encoder, StreamContext};
use crate::{derived_id, json, sse};

#[derive(Debug, PartialEq)]
enum Open {
    Text,
    Thinking,
    /// A tool call: its upstream index and id.
    Tool(u64, String),
}

/// A tool call whose name has not arrived yet (its arguments wait with it).
struct PendingTool {
    index: u64,
    id: String,
    args: String,
}

/// Reads a Chat Completions stream.
#[derive(Default)]
pub struct Decode {
    started: bool,
    open: Option<Open>,
    pending: Option<PendingTool>,
    tools: usize,
    stop: Option<StopReason>,
    usage: Usage,
    finished: bool,
}

impl Decode {
    fn close(&mut self, out: &mut Vec<Event>) {
        if self.open.take().is_some() {
            out.push(Event::BlockStop { origin: None });
        }
    }

    fn open(&mut self, want: Open, kind: BlockKind, out: &mut Vec<Event>) {
        if self.open.as_ref() != Some(&want) {
            self.close(out);
            out.push(Event::BlockStart(kind));
            self.open = Some(want);
        }
    }

    fn tool_delta(&mut self, call: &Value, out: &mut Vec<Event>) {
        let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
        let id = json::str(call, "id").filter(|s| !s.is_empty());
        let f = call.get("function").unwrap_or(&Value::Null);
        let name = json::str(f, "name").filter(|s| !s.is_empty());
        let args = json::arguments_text(f.get("arguments"));
        let continues =
            match &self.open {
                Some(Open::Tool(i, open_id)) => *i == index && id.is_none_or(|id| id == open_id),
                _ => false,
            } || self.pending.as_ref().is_some_and(|p| p.index == index && id.is_none_or(|id| id == p.id));
        if !continues {
            self.close(out);
            self.pending = Some(PendingTool {
                index,
                id: id.map_or_else(|| derived_id("call_", "chat", self.tools), str::to_owned),
                args: String::new(),
            });
            self.tools += 1;
        }
        if let Some(p) = self.pending.as_mut() {
            p.args.push_str(&args);
            let Some(name) = name else { return };
            let p = self.pending.take().unwrap_or_else(|| PendingTool {
                index,
                id: String::new(),
                args: String::new(),
            });
            out.push(Event::BlockStart(BlockKind::ToolCall { id: p.id.clone(), name: name.to_owned() }));
            if !p.args.is_empty() {
                out.push(Event::Delta(Delta::Arguments(p.args)));
            }
            self.open = Some(Open::Tool(index, p.id));
        } else if !args.is_empty() {
            out.push(Event::Delta(Delta::Arguments(args)));
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.close(out);
        let stop = self.stop.clone().unwrap_or(if self.tools > 0 {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        out.push(Event::Finish { stop, usage: self.usage });
    }
}

impl Decoder for Decode {
    fn event(&mut self, _name: &str, data: &str, out: &mut Vec<Event>) {
        if data.trim() == "[DONE]" {
            if !self.started {
                self.started = true;
                out.push(Event::Start { id: "chatcmpl".into(), usage: Usage::default() });
            }
            self.finish(out);
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else { return };
        if let Some(e) = v.get("error") {
            out.push(Event::Error {
                kind: json::str(e, "type")
                    .or_else(|| json::str(e, "code"))
                    .unwrap_or("server_error")
                    .to_owned(),
                message: json::str(e, "message").unwrap_or("the upstream reported an error").to_owned(),
            });
            return;
        }
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                id: json::str(&v, "id").unwrap_or("chatcmpl").to_owned(),
                usage: Usage::default(),
            });
        }
        // Only the first choice is carried (n > 1 is not translated).
        let first = json::arr(&v, "choices")
            .iter()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
        if let Some(choice) = first {
            let d = choice.get("delta").unwrap_or(&Value::Null);
            let reasoning = json::str(d, "reasoning_content").or_else(|| json::str(d, "reasoning"));
            if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
                self.open(Open::Thinking, BlockKind::Thinking { origin: Reasoning::Plain }, out);
                out.push(Event::Delta(Delta::Thinking(r.to_owned())));
            }
            let text = json::str(d, "content").or_else(|| json::str(d, "refusal"));
            if let Some(t) = text.filter(|t| !t.is_empty()) {
                self.open(Open::Text, BlockKind::Text, out);
                out.push(Event::Delta(Delta::Text(t.to_owned())));
            }
            for call in json::arr(d, "tool_calls") {
                self.tool_delta(call, out);
            }
            if let Some(reason) = json::str(choice, "finish_reason") {
                self.close(out);
                self.pending = None;
                let mut stop = stop_from(Some(reason));
                if json::str(d, "refusal").is_some() {
                    stop = StopReason::Refusal;
                }
                self.stop = Some(stop);
            }
        }
        if v.get("usage").is_some_and(Value::is_object) {
            self.usage = usage_from(v.get("usage"));
        }
    }

    fn end(&mut self, out: &mut Vec<Event>) -> bool {
        if !self.finished && self.stop.is_some() {
            self.finish(out);
        }
        self.finished
    }
}

/// Writes a Chat Completions stream.
pub struct Encode {
    cx: StreamContext,
    id: String,
    started: bool,
    open_tool: Option<u64>,
    tools: u64,
    done: bool,
}

impl Encode {
    /// For a client that asked for `cx.model`.
    pub fn new(cx: StreamContext) -> Encode {
        Encode { cx, id: String::new(), started: false, open_tool: None, tools: 0, done: false }
    }

    fn chunk(&self, delta: Value, finish: Value, out: &mut BytesMut) {
        sse::data(
            out,
            &json!({"id": self.id, "object": "chat.completion.chunk", "created": self.cx.created, "model": self.cx.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}]}),
        );
    }
}

impl Encoder for Encode {
    fn encode(&mut self, event: &Event, out: &mut BytesMut) {
        if self.done {
            return;
        }
        if !self.started && !matches!(event, Event::Error { .. }) {
            self.started = true;
            let id = if let Event::Start { id, .. } = event { id.as_str() } else { "chatcmpl" };
            self.id = completion_id(id);
            self.chunk(json!({"role": "assistant", "content": ""}), Value::Null, out);
        }
        match event {
            Event::Start { .. } | Event::BlockStop { .. } => {}
            Event::BlockStart(BlockKind::ToolCall { id, name }) => {
                let index = self.tools;
                self.tools += 1;
                self.open_tool = Some(index);
                self.chunk(
                    json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                    Value::Null,
                    out,
                );
            }
            Event::BlockStart(_) => self.open_tool = None,
            Event::Delta(Delta::Text(t)) => self.chunk(json!({"content": t}), Value::Null, out),
            Event::Delta(Delta::Thinking(t)) => self.chunk(json!({"reasoning_content": t}), Value::Null, out),
            Event::Delta(Delta::Arguments(a)) => {
                if let Some(index) = self.open_tool {
                    self.chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": a}}]}),
                        Value::Null,
                        out,
                    );
                }
            }
            Event::Finish { stop, usage } => {
                self.chunk(json!({}), json!(stop_to(stop)), out);
                if self.cx.chat_include_usage {
                    sse::data(
                        out,
                        &json!({"id": self.id, "object": "chat.completion.chunk", "created": self.cx.created,
                                "model": self.cx.model, "choices": [], "usage": usage_to(usage)}),
                    );
                }
                sse::done(out);
                self.done = true;
            }
            Event::Error { kind, message } => {
                sse::data(out, &json!({"error": {"message": message, "type": kind, "code": kind}}));
                self.done = true;
            }
        }
    }
}
