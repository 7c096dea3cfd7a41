//! Streams, frame by frame: the upstream's events are decoded into canonical
//! [`Event`]s and encoded in the client's format as they arrive. A decoder keeps
//! only which block is open and what a later event needs (a tool call's id, the
//! stop reason until the usage arrives); an encoder keeps what its format repeats
//! in closing events (a Responses item's full text, the final output list).

use bytes::{Bytes, BytesMut};
use sse_parse::SseParser;

use crate::ir::Event;
use crate::{Format, anthropic, chat, responses};

/// Reads one upstream format's SSE events.
pub(crate) trait Decoder: Send {
    /// One SSE event (`name` is `"message"` when the frame named none).
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<Event>);
    /// The upstream ended; whether the answer was complete (otherwise the stream
    /// was cut short and the client must not see it as finished).
    fn end(&mut self, out: &mut Vec<Event>) -> bool;
}

/// Writes canonical events as one client format's SSE frames.
pub(crate) trait Encoder: Send {
    /// One event.
    fn encode(&mut self, event: &Event, out: &mut BytesMut);
}

/// What the client-side of a stream needs to know.
#[derive(Debug, Clone, Default)]
pub struct StreamContext {
    /// The model the client asked for (echoed).
    pub model: String,
    /// Unix seconds, for `created` fields.
    pub created: u64,
    /// A Chat client asked for `stream_options.include_usage`.
    pub chat_include_usage: bool,
}

/// Translates an upstream SSE stream into the client's format.
pub struct StreamTranslator {
    parser: SseParser,
    decoder: Box<dyn Decoder>,
    encoder: Box<dyn Encoder>,
    events: Vec<Event>,
    errored: bool,
}

impl StreamTranslator {
    /// A translator from the upstream's format to the client's.
    pub fn new(upstream: Format, client: Format, cx: StreamContext) -> StreamTranslator {
        let decoder: Box<dyn Decoder> = match upstream {
            Format::Messages => Box::new(anthropic::stream::Decode::default()),
            Format::Chat => Box::new(chat::stream::Decode::default()),
            Format::Responses => Box::new(responses::stream::Decode::default()),
        };
        let encoder: Box<dyn Encoder> = match client {
            Format::Messages => Box::new(anthropic::stream::Encode::new(cx)),
            Format::Chat => Box::new(chat::stream::Encode::new(cx)),
            Format::Responses => Box::new(responses::stream::Encode::new(cx)),
        };
        StreamTranslator {
            parser: SseParser::new().max_buffer(1024 * 1024),
            decoder,
            encoder,
            events: Vec::new(),
            errored: false,
        }
    }

    /// Translates complete upstream frames (the relay releases only whole frames).
    pub fn push(&mut self, frames: &[u8]) -> Bytes {
        self.parser.feed(frames);
        let mut out = BytesMut::new();
        while let Some(ev) = self.parser.next_event() {
            self.decoder.event(&ev.event, &ev.data, &mut self.events);
            self.flush(&mut out);
        }
        out.freeze()
    }

    /// The upstream ended cleanly: the closing frames, or `None` when the answer
    /// was cut short (the relay then ends the stream with an error event).
    pub fn finish(&mut self) -> Option<Bytes> {
        let complete = self.decoder.end(&mut self.events);
        let mut out = BytesMut::new();
        self.flush(&mut out);
        (complete || self.errored).then(|| out.freeze())
    }

    fn flush(&mut self, out: &mut BytesMut) {
        for ev in self.events.drain(..) {
            self.errored |= matches!(ev, Event::Error { .. });
            self.encoder.encode(&ev, out);
        }
    }
}

/// A complete upstream answer (JSON of format `upstream`) as a stream in the client's
/// format, for a streaming client whose upstream answered whole (some servers ignore
/// `stream: true`).
pub fn stream_from_response(
    upstream: Format,
    client: Format,
    body: &[u8],
    cx: StreamContext,
) -> Result<Bytes, crate::TranslateError> {
    use crate::ir::{BlockKind, Delta, Part};
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| crate::TranslateError(format!("the upstream answer is not JSON: {e}")))?;
    let r = match upstream {
        Format::Messages => anthropic::response::parse(&value),
        Format::Chat => chat::response::parse(&value),
        Format::Responses => responses::response::parse(&value),
    }?;
    let mut events =
        vec![Event::Start { id: r.id.clone(), usage: crate::ir::Usage { output: 0, ..r.usage } }];
    for p in &r.content {
        match p {
            Part::Text(t) => {
                events.push(Event::BlockStart(BlockKind::Text));
                events.push(Event::Delta(Delta::Text(t.clone())));
            }
            Part::ToolCall { id, name, arguments } => {
                events.push(Event::BlockStart(BlockKind::ToolCall { id: id.clone(), name: name.clone() }));
                events.push(Event::Delta(Delta::Arguments(arguments.clone())));
            }
            Part::Thinking { text, origin } => {
                events.push(Event::BlockStart(BlockKind::Thinking { origin: origin.clone() }));
                if !text.is_empty() {
                    events.push(Event::Delta(Delta::Thinking(text.clone())));
                }
            }
            Part::Image(_) | Part::ToolResult { .. } => continue,
        }
        let origin = match p {
            Part::Thinking { origin, .. } => Some(origin.clone()),
            _ => None,
        };
        events.push(Event::BlockStop { origin });
    }
    events.push(Event::Finish { stop: r.stop, usage: r.usage });
    let mut encoder: Box<dyn Encoder> = match client {
        Format::Messages => Box::new(anthropic::stream::Encode::new(cx)),
        Format::Chat => Box::new(chat::stream::Encode::new(cx)),
        Format::Responses => Box::new(responses::stream::Encode::new(cx)),
    };
    let mut out = BytesMut::new();
    for e in &events {
        encoder.encode(e, &mut out);
    }
    Ok(out.freeze())
}

/// A whole upstream stream (SSE of format `upstream`) as one complete answer in the
/// client's format, for a non-streaming client whose upstream streamed anyway (some
/// servers ignore `stream: false`). An error event or a cut-short stream is an error.
pub fn response_from_stream(
    upstream: Format,
    client: Format,
    body: &[u8],
    model: &str,
    created: u64,
) -> Result<Vec<u8>, crate::TranslateError> {
    use crate::ir::{BlockKind, Delta, Part, Reasoning, Response, StopReason, Usage};
    let mut parser = SseParser::new().max_buffer(usize::MAX);
    parser.feed(body);
    parser.feed(b"\n\n");
    let mut decoder: Box<dyn Decoder> = match upstream {
        Format::Messages => Box::new(anthropic::stream::Decode::default()),
        Format::Chat => Box::new(chat::stream::Decode::default()),
        Format::Responses => Box::new(responses::stream::Decode::default()),
    };
    let mut events = Vec::new();
    while let Some(ev) = parser.next_event() {
        decoder.event(&ev.event, &ev.data, &mut events);
    }
    if !decoder.end(&mut events) {
        return Err(crate::TranslateError("the upstream stream ended before the answer was complete".into()));
    }
    let mut r = Response {
        id: String::new(),
        content: Vec::new(),
        stop: StopReason::EndTurn,
        usage: Usage::default(),
    };
    for e in events {
        match e {
            Event::Start { id, usage } => {
                r.id = id;
                r.usage = usage;
            }
            Event::BlockStart(BlockKind::Text) => r.content.push(Part::Text(String::new())),
            Event::BlockStart(BlockKind::Thinking { origin }) => {
                r.content.push(Part::Thinking { text: String::new(), origin });
            }
            Event::BlockStart(BlockKind::ToolCall { id, name }) => {
                r.content.push(Part::ToolCall { id, name, arguments: String::new() });
            }
            Event::Delta(d) => match (d, r.content.last_mut()) {
                (Delta::Text(t), Some(Part::Text(s)))
                | (Delta::Thinking(t), Some(Part::Thinking { text: s, .. }))
                | (Delta::Arguments(t), Some(Part::ToolCall { arguments: s, .. })) => s.push_str(&t),
                _ => {}
            },
            Event::BlockStop { origin: Some(o) } => {
                if let Some(Part::Thinking { origin, .. }) = r.content.last_mut() {
                    *origin = o;
                }
            }
            Event::BlockStop { origin: None } => {}
            Event::Finish { stop, usage } => {
                r.stop = stop;
                r.usage.merge(&usage);
            }
            Event::Error { message, .. } => return Err(crate::TranslateError(message)),
        }
    }
    // A thinking block whose proof never came cannot be replayed; keep it readable.
    for p in &mut r.content {
        if let Part::Thinking { origin, .. } = p
            && matches!(origin, Reasoning::Anthropic { signature } if signature.is_empty())
        {
            *origin = Reasoning::Plain;
        }
    }
    let out = match client {
        Format::Messages => anthropic::response::emit(&r, model),
        Format::Chat => chat::response::emit_at(&r, model, created),
        Format::Responses => responses::response::emit_at(&r, model, created),
    };
    Ok(out.to_string().into_bytes())
}
