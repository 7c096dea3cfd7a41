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

pub mod judge;
pub mod throughput;

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
    if HEARTBEATS.contains(&event) {
        return false;
    }
    let data = data.trim();
    if data.is_empty() {
        return false;
    }
    if !data.starts_with('{') {
        return true;
    }
    match serde_json::from_str::<TypeProbe<'_>>(data) {
        Ok(TypeProbe { kind: Some(kind) }) => !HEARTBEATS.contains(&kind.as_ref()),
        _ => true,
    }
}

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
}
