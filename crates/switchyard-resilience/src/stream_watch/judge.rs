//! One parse per event for both stream watchdogs, when both run. The stall
//! watchdog's question ([`super::is_progress`]) and the throughput watchdog's
//! ([`super::throughput::classify`]) each parsed the event's JSON, the second into a
//! `serde_json::Value` (a map node and a string for every field). [`judge`] reads the
//! few fields both look at, borrowed, in one pass: over the 930 recorded events,
//! 337 µs against 919 µs for the two parses (`cargo bench -p switchyard-resilience
//! --bench stream_events`; the stall watchdog alone, which needs only the `type`,
//! 198 µs). An event it cannot read that way (a duplicate key,
//! a `type` that is not a string, a sub-object with a duplicate key) is handed to the
//! two full readers, so every answer is theirs; a test replays the recorded upstream
//! streams and edge cases through both and compares. One difference, by design: an
//! event holding a number too large for a double (`1e400`) is unreadable to the
//! `Value` parse (throughput: "other") but read here by its `type`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::HEARTBEATS;
use super::throughput::{self, Output};

/// What one SSE event means to the stall and the throughput watchdogs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judged {
    /// Model progress ([`super::is_progress`]).
    pub progress: bool,
    /// Its throughput class ([`throughput::classify`]).
    pub throughput: Output,
}

/// Judges one SSE event (its `event:` name, `"message"` when it had none, and its
/// joined `data:`): the same answers as [`super::is_progress`] and
/// [`throughput::classify`], from one parse.
pub fn judge(event: &str, data: &str) -> Judged {
    if HEARTBEATS.contains(&event) {
        return Judged { progress: false, throughput: Output::Other };
    }
    let data = data.trim();
    if data.is_empty() {
        return Judged { progress: false, throughput: Output::Other };
    }
    if !data.starts_with('{') {
        // Not JSON (Chat's `[DONE]`): progress; `[DONE]` ends the answer.
        let throughput = if data == "[DONE]" { Output::End } else { Output::Other };
        return Judged { progress: true, throughput };
    }
    one_pass(data).unwrap_or_else(|| Judged {
        progress: super::is_progress(event, data),
        throughput: throughput::classify(event, data),
    })
}

/// The top-level fields the two watchdogs read.
#[derive(Deserialize, Default)]
struct Fields<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    delta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content_block: Option<&'a RawValue>,
    #[serde(borrow, default)]
    item: Option<&'a RawValue>,
    #[serde(borrow, default)]
    choices: Option<&'a RawValue>,
}

/// An object's `type` and `text` (a Messages delta, a content block, an item).
#[derive(Deserialize, Default)]
struct Typed<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
}

/// A Chat choice.
#[derive(Deserialize, Default)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    finish_reason: Option<&'a RawValue>,
}

/// A Chat delta.
#[derive(Deserialize, Default)]
struct ChatDelta<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_calls: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reasoning_content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reasoning: Option<&'a RawValue>,
}

/// `None` when the event needs the full readers.
fn one_pass(data: &str) -> Option<Judged> {
    let fields: Fields<'_> = serde_json::from_str(data).ok()?;
    let kind = match fields.kind {
        None => None,
        // A `type` that is not a string: the full readers decide.
        Some(raw) => Some(string(Some(raw))?),
    };
    Some(match kind {
        Some(kind) => {
            Judged { progress: !HEARTBEATS.contains(&kind.as_ref()), throughput: typed(&kind, &fields)? }
        }
        None => Judged { progress: true, throughput: chat_chunk(&fields)? },
    })
}

/// A string value, decoded; `None` for absence and for any other kind of value (as
/// `Value::as_str`).
fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    raw.filter(|r| r.get().starts_with('"')).and_then(|r| serde_json::from_str(r.get()).ok())
}

fn str_len(raw: Option<&RawValue>) -> usize {
    string(raw).map_or(0, |s| s.len())
}

/// The fields of a sub-object: all absent when the value is not an object (as
/// indexing a `Value` gives `null`); `None` when the object cannot be read this way.
fn object<'a, T: Deserialize<'a> + Default>(raw: Option<&'a RawValue>) -> Option<T> {
    match raw {
        Some(r) if r.get().starts_with('{') => serde_json::from_str(r.get()).ok(),
        _ => Some(T::default()),
    }
}

/// As `throughput::typed`, on borrowed fields.
fn typed(kind: &str, v: &Fields<'_>) -> Option<Output> {
    Some(match kind {
        "content_block_delta" => {
            let delta: Typed<'_> = object(v.delta)?;
            throughput::messages_delta(string(delta.kind).as_deref(), || str_len(delta.text))
        }
        "content_block_start" => {
            let block: Typed<'_> = object(v.content_block)?;
            throughput::block_start(string(block.kind).as_deref())
        }
        "response.output_text.delta" | "response.refusal.delta" => Output::Text(str_len(v.delta)),
        "response.output_item.added" => {
            let item: Typed<'_> = object(v.item)?;
            throughput::item_added(string(item.kind).as_deref())
        }
        k => throughput::by_kind_alone(k),
    })
}

/// As `throughput::chat_chunk`, on borrowed fields.
fn chat_chunk(v: &Fields<'_>) -> Option<Output> {
    let Some(raw) = v.choices.filter(|r| r.get().starts_with('[')) else { return Some(Output::Other) };
    let choices: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
    let mut text = None;
    let mut busy = false;
    let mut finished = false;
    for choice in choices {
        let choice: Choice<'_> = object(Some(choice))?;
        let delta: ChatDelta<'_> = object(choice.delta)?;
        if let Some(t) = string(delta.content) {
            *text.get_or_insert(0) += t.len();
        }
        let tools = delta
            .tool_calls
            .filter(|r| r.get().starts_with('['))
            .and_then(|r| serde_json::from_str::<Vec<&RawValue>>(r.get()).ok())
            .is_some_and(|t| !t.is_empty());
        let reasoning = |raw| string(raw).is_some_and(|r| !r.is_empty());
        busy |= tools || reasoning(delta.reasoning_content) || reasoning(delta.reasoning);
        // `null` reads as absent.
        finished |= choice.finish_reason.is_some();
    }
    Some(throughput::chat_output(text, busy, finished))
}

#[cfg(test)]
mod tests {
    use super::super::recorded::recorded_events;
    use super::*;

    /// Both readers' answers.
    fn full(event: &str, data: &str) -> Judged {
        Judged {
            progress: super::super::is_progress_by_parse(event, data),
            throughput: throughput::classify(event, data),
        }
    }

    /// Every event of the recorded upstream streams (Anthropic Messages, Chat
    /// Completions, Responses) is judged as the two full readers judge it.
    #[test]
    fn recorded_streams_are_judged_as_the_full_readers_judge_them() {
        let events = recorded_events();
        let mut classes = std::collections::HashSet::new();
        for (event, data) in &events {
            let judged = judge(event, data);
            assert_eq!(judged, full(event, data), "{event} {data}");
            classes.insert(std::mem::discriminant(&judged.throughput));
        }
        assert!(events.len() > 300, "only {} recorded events", events.len());
        // Text, Busy, BlockEnd, End and Other all occur in the recordings.
        assert_eq!(classes.len(), 5);
    }

    /// Inputs the one pass hands over, and shapes it reads itself, give the full
    /// readers' answers.
    #[test]
    fn odd_events_are_judged_as_the_full_readers_judge_them() {
        let cases = [
            ("ping", r#"{"type":"ping"}"#),
            ("message", r#"{"type": "keepalive"}"#),
            ("message", ""),
            ("message", "[DONE]"),
            ("message", "not json"),
            ("message", "{not json"),
            ("message", r#"{"type":"ping","type":"ping"}"#),
            ("message", r#"{"type":7,"choices":[{"delta":{"content":"hi"}}]}"#),
            ("message", r#"{"type":null,"choices":[{"delta":{"content":"hi"}}]}"#),
            ("message", r#"{"choices":[{"delta":{"content":"a","content":"bcd"}}]}"#),
            ("message", r#"{"choices":[1,{"delta":{"content":""}}]}"#),
            ("message", r#"{"choices":[{"delta":{"tool_calls":[ ]},"finish_reason":null}]}"#),
            ("message", r#"{"choices":[{"delta":{"tool_calls":[{}]}}]}"#),
            ("message", r#"{"choices":[{"delta":{"reasoning_content":null,"content":"h\u00e9"}}]}"#),
            ("message", r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#),
            ("message", r#"{"choices":{"delta":{"content":"x"}}}"#),
            ("message", r#"{"id":"c"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"\"quoted\""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":7}}"#,
            ),
            ("content_block_delta", r#"{"type":"content_block_delta","delta":"text_delta"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"text_delta","type":"x"}}"#,
            ),
            ("content_block_delta", r#"{"type":"content_block_delta","delta":{"type":"signature_delta"}}"#),
            ("content_block_start", r#"{"type":"content_block_start","content_block":{"type":"tool_use"}}"#),
            ("content_block_start", r#"{"type":"content_block_start","content_block":[]}"#),
            ("message", r#"{"type":"response.output_text.delta","delta":"abc"}"#),
            ("message", r#"{"type":"response.output_text.delta","delta":{"text":"abc"}}"#),
            ("message", r#"{"type":"response.output_item.added","item":{"type":"function_call"}}"#),
            ("message", r#"{"type":"response.output_item.added","item":{}}"#),
            ("message", r#"{"type":"response.function_call_arguments.delta","delta":"{"}"#),
            ("message", r#"{"type":"message_stop"} trailing"#),
            ("message", r#"  {"type":"message_stop"}  "#),
        ];
        for (event, data) in cases {
            assert_eq!(judge(event, data), full(event, data), "{event} {data}");
        }
    }

    /// The one difference: a number beyond a double's range leaves the event
    /// readable by its `type` here, where the `Value` parse gives up.
    #[test]
    fn an_out_of_range_number_does_not_hide_the_type() {
        let data = r#"{"type":"content_block_stop","index":1e400}"#;
        assert_eq!(full("message", data).throughput, Output::Other);
        assert_eq!(judge("message", data), Judged { progress: true, throughput: Output::BlockEnd });
    }
}
