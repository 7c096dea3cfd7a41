//! Chat Completions streams.
//!
//! Reading: a Chat stream has no block structure, so the decoder makes one. Text and
//! reasoning are blocks; each tool call is a block, told apart by its `index` and,
//! for upstreams that number every call 0, by a new `id`; a continuation chunk (no
//! id, no name) extends the call it indexes. The first tool call streams as it
//! arrives; calls that start after it are held whole and written when it is done (at
//! `finish_reason`), because a provider may interleave the argument fragments of
//! parallel calls and the client formats cannot reopen a closed block. The
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
}

/// A tool call being read.
struct Call {
    index: u64,
    id: String,
    name: Option<String>,
    /// Arguments not yet written.
    args: String,
    /// Its block has started (the streaming call only).
    started: bool,
}

impl Call {
    fn is(&self, index: u64, id: Option<&str>) -> bool {
        self.index == index && id.is_none_or(|id| id == self.id)
    }
}

/// Reads a Chat Completions stream.
#[derive(Default)]
pub struct Decode {
    started: bool,
    id: String,
    open: Option<Open>,
    /// The call that streams.
    streaming: Option<Call>,
    /// Calls that started after it, held whole.
    held: Vec<Call>,
    /// Indexes of calls already written and closed (a late fragment is dropped).
    written: Vec<u64>,
    calls: usize,
    stop: Option<StopReason>,
    usage: Usage,
    finished: bool,
}

impl Decode {
    fn close_text(&mut self, out: &mut Vec<Event>) {
        if self.open.take().is_some() {
            out.push(Event::BlockStop { origin: None });
        }
    }

    fn open(&mut self, want: Open, kind: BlockKind, out: &mut Vec<Event>) {
        if self.open.as_ref() != Some(&want) {
            self.flush_calls(out);
            self.close_text(out);
            out.push(Event::BlockStart(kind));
            self.open = Some(want);
        }
    }

    /// Writes every tool call read so far and closes them.
    fn flush_calls(&mut self, out: &mut Vec<Event>) {
        let calls = self.streaming.take().into_iter().chain(std::mem::take(&mut self.held));
        for mut call in calls {
            self.written.push(call.index);
            if !call.started {
                let name = call.name.take().unwrap_or_default();
                out.push(Event::BlockStart(BlockKind::ToolCall { id: call.id, name }));
            }
            if !call.args.is_empty() {
                out.push(Event::Delta(Delta::Arguments(call.args)));
            }
            out.push(Event::BlockStop { origin: None });
        }
    }

    fn tool_delta(&mut self, delta: &Value, out: &mut Vec<Event>) {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        let id = json::str(delta, "id").filter(|s| !s.is_empty());
        let f = delta.get("function").unwrap_or(&Value::Null);
        let name = json::str(f, "name").filter(|s| !s.is_empty());
        let args = json::arguments_text(f.get("arguments"));
        let known = self.streaming.as_ref().is_some_and(|c| c.is(index, id))
            || self.held.iter().any(|c| c.is(index, id));
        if !known && id.is_none() && name.is_none() && self.written.contains(&index) {
            // A fragment of a call already written: it cannot be reopened.
            return;
        }
        if !known {
            let call = Call {
                index,
                id: id.map_or_else(|| derived_id("call_", &self.id, self.calls), str::to_owned),
                name: None,
                args: String::new(),
                started: false,
            };
            self.calls += 1;
            if self.streaming.is_none() && self.held.is_empty() {
                self.close_text(out);
                self.streaming = Some(call);
            } else {
                self.held.push(call);
            }
        }
        let call = match self.streaming.as_mut().filter(|c| c.is(index, id)) {
            Some(c) => c,
            None => match self.held.iter_mut().find(|c| c.is(index, id)) {
                Some(c) => c,
                None => return,
            },
        };
        if call.name.is_none() && !call.started {
            call.name = name.map(str::to_owned);
        }
        call.args.push_str(&args);
        // The streaming call starts once its name is known, then streams.
        let is_streaming = self.streaming.as_ref().is_some_and(|c| c.is(index, id));
        if let (true, Some(call)) = (is_streaming, self.streaming.as_mut()) {
            if !call.started && call.name.is_some() {
                call.started = true;
                let name = call.name.clone().unwrap_or_default();
                out.push(Event::BlockStart(BlockKind::ToolCall { id: call.id.clone(), name }));
            }
            if call.started && !call.args.is_empty() {
                out.push(Event::Delta(Delta::Arguments(std::mem::take(&mut call.args))));
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.flush_calls(out);
        self.close_text(out);
        let mut stop = self.stop.clone().unwrap_or(StopReason::EndTurn);
        // Some servers say "stop" after calling tools; the client must still run them.
        if self.calls > 0 && stop == StopReason::EndTurn {
            stop = StopReason::ToolUse;
        }
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
            self.id = json::str(&v, "id").unwrap_or("chatcmpl").to_owned();
            out.push(Event::Start { id: self.id.clone(), usage: Usage::default() });
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
                self.flush_calls(out);
                self.close_text(out);
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
