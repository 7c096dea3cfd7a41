//! Properties: translating to another format and back keeps the text, the tool
//! calls (ids, names, arguments as JSON) and the usage; streams split anywhere
//! between frames translate the same.

use bytes::BytesMut;
use proptest::prelude::*;
use serde_json::Value;

use crate::ir::{BlockKind, Delta, Event, Part, Response, StopReason, Usage};
use crate::stream::{Decoder, Encoder, StreamContext};
use crate::{Format, StreamTranslator, anthropic, chat, responses, translate_response};

#[derive(Debug, Clone, PartialEq)]
struct Call {
    id: String,
    name: String,
    args: Value,
}

#[derive(Debug, Clone, PartialEq)]
struct Answer {
    text: String,
    calls: Vec<Call>,
    usage: Usage,
}

fn answer() -> impl Strategy<Value = Answer> {
    let text = "[a-zA-Z0-9 .,!?\"\\\\é漢🙂\n]{0,40}";
    let arg = prop_oneof![
        "[a-z \"\\\\{}]{0,12}".prop_map(Value::from),
        (0i64..100_000).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
    ];
    let args = proptest::collection::btree_map("[a-z_]{1,8}", arg, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    let call = ("[a-z]{1,5}_[A-Za-z0-9]{1,10}", "[a-z_]{1,12}", args).prop_map(|(id, name, args)| Call {
        id,
        name,
        args,
    });
    let usage = (0u64..100_000, 0u64..100_000, 0u64..5_000).prop_map(|(input, output, cache_read)| Usage {
        input,
        output,
        cache_read,
        ..Usage::default()
    });
    (text, proptest::collection::vec(call, 0..3), usage).prop_map(|(text, calls, usage)| Answer {
        text,
        calls,
        usage,
    })
}

fn to_ir(a: &Answer) -> Response {
    let mut content = Vec::new();
    if !a.text.is_empty() {
        content.push(Part::Text(a.text.clone()));
    }
    for c in &a.calls {
        content.push(Part::ToolCall {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.args.to_string(),
        });
    }
    let stop = if a.calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
    Response { id: "r1".into(), content, stop, usage: a.usage }
}

fn from_ir(r: &Response) -> Answer {
    let mut text = String::new();
    let mut calls = Vec::new();
    for p in &r.content {
        match p {
            Part::Text(t) => text.push_str(t),
            Part::ToolCall { id, name, arguments } => calls.push(Call {
                id: id.clone(),
                name: name.clone(),
                args: serde_json::from_str(arguments).unwrap_or(Value::Null),
            }),
            _ => {}
        }
    }
    Answer { text, calls, usage: Usage { cache_write: 0, reasoning: 0, ..r.usage } }
}

fn emit(f: Format, r: &Response) -> Vec<u8> {
    match f {
        Format::Messages => anthropic::response::emit(r, "m"),
        Format::Chat => chat::response::emit(r, "m"),
        Format::Responses => responses::response::emit(r, "m"),
    }
    .to_string()
    .into_bytes()
}

fn parse(f: Format, body: &[u8]) -> Response {
    let v: Value = serde_json::from_slice(body).unwrap_or_default();
    let parsed = match f {
        Format::Messages => anthropic::response::parse(&v),
        Format::Chat => chat::response::parse(&v),
        Format::Responses => responses::response::parse(&v),
    };
    parsed.unwrap_or_else(|e| panic!("{e}: {v}"))
}

fn encoder(f: Format) -> Box<dyn Encoder> {
    let cx = StreamContext { model: "m".into(), created: 1, chat_include_usage: true };
    match f {
        Format::Messages => Box::new(anthropic::stream::Encode::new(cx)),
        Format::Chat => Box::new(chat::stream::Encode::new(cx)),
        Format::Responses => Box::new(responses::stream::Encode::new(cx)),
    }
}

fn decoder(f: Format) -> Box<dyn Decoder> {
    match f {
        Format::Messages => Box::<anthropic::stream::Decode>::default(),
        Format::Chat => Box::<chat::stream::Decode>::default(),
        Format::Responses => Box::<responses::stream::Decode>::default(),
    }
}

/// The answer as a stream of format `f`, its text and arguments cut into `pieces`.
fn stream_of(f: Format, a: &Answer, pieces: usize) -> Vec<u8> {
    fn split(s: &str, n: usize) -> Vec<String> {
        let chars: Vec<char> = s.chars().collect();
        let size = chars.len().div_ceil(n.max(1)).max(1);
        chars.chunks(size).map(|c| c.iter().collect()).collect()
    }
    let mut events = vec![Event::Start { id: "r1".into(), usage: Usage { output: 0, ..a.usage } }];
    if !a.text.is_empty() {
        events.push(Event::BlockStart(BlockKind::Text));
        events.extend(split(&a.text, pieces).into_iter().map(|t| Event::Delta(Delta::Text(t))));
        events.push(Event::BlockStop { origin: None });
    }
    for c in &a.calls {
        events.push(Event::BlockStart(BlockKind::ToolCall { id: c.id.clone(), name: c.name.clone() }));
        events.extend(
            split(&c.args.to_string(), pieces).into_iter().map(|t| Event::Delta(Delta::Arguments(t))),
        );
        events.push(Event::BlockStop { origin: None });
    }
    let stop = if a.calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
    events.push(Event::Finish { stop, usage: a.usage });
    let mut enc = encoder(f);
    let mut out = BytesMut::new();
    for e in &events {
        enc.encode(e, &mut out);
    }
    out.to_vec()
}

/// What a client of format `f` would assemble from the stream.
fn fold(f: Format, bytes: &[u8]) -> Answer {
    let mut parser = sse_parse::SseParser::new();
    parser.feed(bytes);
    let mut dec = decoder(f);
    let mut events = Vec::new();
    while let Some(ev) = parser.next_event() {
        dec.event(&ev.event, &ev.data, &mut events);
    }
    assert!(dec.end(&mut events), "{f:?} stream incomplete: {}", String::from_utf8_lossy(bytes));
    let mut a = Answer { text: String::new(), calls: vec![], usage: Usage::default() };
    let mut args: Vec<String> = Vec::new();
    let mut in_tool = false;
    for e in events {
        match e {
            Event::BlockStart(BlockKind::ToolCall { id, name }) => {
                a.calls.push(Call { id, name, args: Value::Null });
                args.push(String::new());
                in_tool = true;
            }
            Event::BlockStart(_) => in_tool = false,
            Event::Delta(Delta::Text(t)) => a.text.push_str(&t),
            Event::Delta(Delta::Arguments(t)) if in_tool => {
                if let Some(last) = args.last_mut() {
                    last.push_str(&t);
                }
            }
            Event::Finish { usage, .. } => a.usage = Usage { cache_write: 0, reasoning: 0, ..usage },
            _ => {}
        }
    }
    for (c, text) in a.calls.iter_mut().zip(args) {
        c.args = serde_json::from_str(&text).unwrap_or(Value::Null);
    }
    a
}

/// Pushes `bytes` through `t` in chunks that each end at a frame boundary.
fn translate_stream(t: &mut StreamTranslator, bytes: &[u8], every: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let frames: Vec<&str> = text.split_inclusive("\n\n").collect();
    let mut out = Vec::new();
    for group in frames.chunks(every.max(1)) {
        out.extend_from_slice(&t.push(group.concat().as_bytes()));
    }
    out.extend_from_slice(&t.finish().unwrap_or_else(|| panic!("translated stream incomplete")));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn complete_answers_survive_a_round_trip(a in answer(), from in 0usize..3, to in 0usize..3) {
        let (from, to) = (Format::ALL[from], Format::ALL[to]);
        let original = emit(from, &to_ir(&a));
        prop_assert_eq!(from_ir(&parse(from, &original)), a.clone());
        let there = translate_response(from, to, &original, "m", 1).unwrap_or_else(|e| panic!("{e}"));
        prop_assert_eq!(from_ir(&parse(to, &there)), a.clone());
        let back = translate_response(to, from, &there, "m", 1).unwrap_or_else(|e| panic!("{e}"));
        prop_assert_eq!(from_ir(&parse(from, &back)), a);
    }

    #[test]
    fn streams_survive_a_round_trip_frame_by_frame(
        a in answer(), from in 0usize..3, to in 0usize..3, pieces in 1usize..6, every in 1usize..4,
    ) {
        let (from, to) = (Format::ALL[from], Format::ALL[to]);
        let cx = || StreamContext { model: "m".into(), created: 1, chat_include_usage: true };
        let original = stream_of(from, &a, pieces);
        prop_assert_eq!(fold(from, &original), a.clone());
        let there = translate_stream(&mut StreamTranslator::new(from, to, cx()), &original, every);
        prop_assert_eq!(fold(to, &there), a.clone());
        let back = translate_stream(&mut StreamTranslator::new(to, from, cx()), &there, every);
        prop_assert_eq!(fold(from, &back), a);
    }
}
