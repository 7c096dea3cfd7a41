//! What counts as progress in a streamed answer (SPEC 4.7): the stall watchdog and
//! the readiness budget reset only on model events, judged by the event's name and
//! its JSON `type`, never by matching bytes. Heartbeats are not progress: SSE
//! comments (never seen here: the framing drops them), `ping` / `heartbeat` /
//! `keepalive` events (whatever the spacing of their JSON), and events without data.
//! Everything else the model sends is, including reasoning that carries no text yet
//! (Claude `thinking_delta` with an empty `thinking`, `signature_delta`, Responses
//! reasoning items), so a long silent think never trips the watchdog.
//!
//! Pure; total (a payload that is not JSON, such as Chat's `[DONE]`, is progress).
//!
//! Most events are text deltas, and most of them cannot name a heartbeat at all: a
//! `type` of `ping` is the JSON string `"ping"` in the event's bytes, or carries a
//! `\u` escape (the only escape that spells a letter). An event with neither a quoted
//! heartbeat name nor a `\u` is progress whatever its parse would say, so it is not
//! parsed (`could_name_a_heartbeat`); the verdict stays the parse's, which the
//! tests check against a parse of every event on all the recorded ones.

pub mod judge;
pub mod throughput;

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::Deserialize;

/// Event names and JSON `type`s that are only keep-alives.
pub const HEARTBEATS: &[&str] = &["ping", "heartbeat", "keepalive", "keep-alive", "keep_alive"];

#[derive(Deserialize)]
struct TypeProbe<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<std::borrow::Cow<'a, str>>,
}

/// Whether one SSE event (its `event:` name, `"message"` when it had none, and its
/// joined `data:`) is model progress.
pub fn is_progress(event: &str, data: &str) -> bool {
    verdict(event, data, true)
}

/// [`is_progress`] without the shortcut: every JSON object is parsed. The reference
/// the shortcut (and `judge`) is tested against.
#[cfg(test)]
pub(crate) fn is_progress_by_parse(event: &str, data: &str) -> bool {
    verdict(event, data, false)
}

/// The verdict; with `shortcut`, an object that cannot name a heartbeat is not parsed.
fn verdict(event: &str, data: &str, shortcut: bool) -> bool {
    if HEARTBEATS.contains(&event) {
        return false;
    }
    let data = data.trim();
    if data.is_empty() {
        return false;
    }
    if !data.starts_with('{') || (shortcut && !could_name_a_heartbeat(data.as_bytes())) {
        return true;
    }
    probe_says_progress(data)
}

/// The verdict of the event's JSON `type`.
fn probe_says_progress(data: &str) -> bool {
    match serde_json::from_str::<TypeProbe<'_>>(data) {
        Ok(TypeProbe { kind: Some(kind) }) => !HEARTBEATS.contains(&kind.as_ref()),
        _ => true,
    }
}

/// What a JSON string equal to one of [`HEARTBEATS`] must contain: the name in
/// quotes (`"keep` covers the three spellings of keep-alive), or a `\u` escape.
static HEARTBEAT_SPELLINGS: LazyLock<[Finder<'static>; 4]> = LazyLock::new(|| {
    [Finder::new(br#""ping""#), Finder::new(br#""heartbeat""#), Finder::new(br#""keep"#), Finder::new(br"\u")]
});

/// Whether `data` could hold a JSON string that decodes to a heartbeat name. False
/// means its `type`, whatever it is, is not one.
fn could_name_a_heartbeat(data: &[u8]) -> bool {
    HEARTBEAT_SPELLINGS.iter().any(|f| f.find(data).is_some())
}

#[cfg(test)]
#[path = "../benches/common/recorded.rs"]
mod recorded;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_are_not_progress_however_they_are_spelled() {
        assert!(!is_progress("ping", r#"{"type":"ping"}"#));
        assert!(!is_progress("message", r#"{"type": "ping"}"#));
        assert!(!is_progress("message", "{ \"type\" : \"ping\" }"));
        assert!(!is_progress("heartbeat", "{}"));
        assert!(!is_progress("message", ""));
        assert!(!is_progress("message", r#"{"type":"keepalive"}"#));
    }

    #[test]
    fn model_output_and_reasoning_are_progress() {
        let thinking =
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#;
        assert!(is_progress("content_block_delta", thinking));
        assert!(is_progress("message", r#"{"type":"response.reasoning_summary_text.delta","delta":""}"#));
        assert!(is_progress(
            "message",
            r#"{"type":"response.output_item.added","item":{"type":"reasoning"}}"#
        ));
        assert!(is_progress("message", r#"{"id":"c","choices":[{"delta":{"content":"hi"}}]}"#));
        assert!(is_progress("message", "[DONE]"));
        assert!(is_progress("message", "{not json"));
        assert!(is_progress("message_start", r#"{"type":"message_start","message":{}}"#));
        assert!(is_progress("message", r#"{"type":"pingpong"}"#));
    }

    /// Payloads on both sides of the shortcut: heartbeats spelled with escapes,
    /// spacing and duplicate keys, heartbeat names inside text, broken JSON.
    const EDGES: &[&str] = &[
        r#"{"type":"ping"}"#,
        r#"{"type":"p\u0069ng"}"#,
        r#"{"type":"\u0070ing"}"#,
        r#"{"t\u0079pe":"ping"}"#,
        r#"{"type" :   "heartbeat" }"#,
        r#"{"type":"keep-alive"}"#,
        r#"{"type":"keep_alive","x":1}"#,
        r#"{"type":"keepalive"}"#,
        r#"{"type":"keeper"}"#,
        r#"{"type":"ping","type":"ping"}"#,
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"say \"ping\""}}"#,
        r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"ping"}}"#,
        r#"{"delta":{"type":"ping"}}"#,
        r#"{"choices":[{"delta":{"content":"keep going"}}]}"#,
        r#"{"choices":[{"delta":{"content":"caf\u00e9"}}]}"#,
        r#"{"type":"ping""#,
        r#"{"type":ping}"#,
        r#"{"type":null}"#,
        r#"{"type":["ping"]}"#,
        r#"{}"#,
        "{",
    ];

    #[test]
    fn the_shortcut_answers_as_the_parse_does() {
        for data in EDGES {
            for event in ["message", "content_block_delta"] {
                assert_eq!(is_progress(event, data), is_progress_by_parse(event, data), "{event} {data}");
            }
        }
        // Without the shortcut's guard these would be misjudged: the guard must see them.
        for data in [r#"{"type":"ping"}"#, r#"{"type":"p\u0069ng"}"#, r#"{"type":"keep_alive"}"#] {
            assert!(could_name_a_heartbeat(data.as_bytes()), "{data}");
            assert!(!is_progress("message", data), "{data}");
        }
        assert!(!could_name_a_heartbeat(br#"{"type":"content_block_delta","delta":{"text":"hi"}}"#));
    }

    #[test]
    fn recorded_streams_are_judged_as_the_parse_judges_them() {
        let events = recorded::recorded_events();
        assert!(events.len() > 300, "only {} recorded events", events.len());
        let mut parsed = 0;
        for (event, data) in &events {
            assert_eq!(is_progress(event, data), is_progress_by_parse(event, data), "{event} {data}");
            parsed += usize::from(could_name_a_heartbeat(data.as_bytes()));
        }
        // The recordings' pings are among the few events still parsed.
        assert!(parsed > 0 && parsed * 10 < events.len(), "{parsed} of {} events parsed", events.len());
    }

    #[test]
    fn every_heartbeat_name_is_one_the_shortcut_looks_for() {
        // A name added to HEARTBEATS needs its spelling in HEARTBEAT_SPELLINGS, or the
        // shortcut would call its events progress without parsing them.
        for name in HEARTBEATS {
            let data = format!(r#"{{"type":"{name}"}}"#);
            assert!(could_name_a_heartbeat(data.as_bytes()), "{name}");
            assert!(!is_progress("message", &data), "{name}");
        }
    }

    proptest::proptest! {
        /// Any text built from JSON-ish pieces and heartbeat names: the shortcut and
        /// the parse agree.
        #[test]
        fn the_shortcut_agrees_with_the_parse_on_generated_events(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "{", "}", "\"", ":", ",", " ", "type", "ping", "heartbeat", "keep", "alive", "-", "_",
                "\\u0070", "\\u0069", "\\", "p", "ing", "ng", "delta", "text", "1", "null", "[", "]",
            ]), 0..24)
        ) {
            let data = format!("{{{}", pieces.concat());
            proptest::prop_assert_eq!(is_progress("message", &data), is_progress_by_parse("message", &data));
        }
    }
}
