//! The slow-stream throughput watchdog (SPEC §4.7, `streamRecovery.throughputWatchdog`):
//! an upstream that keeps sending events but produces assistant text below a minimum
//! rate is given up on. The stall watchdog cannot see it (every event resets the
//! stall budget); this one counts only what the user waits for.
//!
//! - **What counts**: UTF-8 bytes of assistant text deltas, in all three wire
//!   formats ([`classify`]). Heartbeats, metadata, usage-only and empty events count
//!   nothing and change nothing.
//! - **When it judges**: after `warmupMs` from the stream's start and then a full
//!   `windowMs`, on a sliding window: the text bytes of the last `windowMs` must reach
//!   `max(minUsefulBytes, minUsefulBytesPerSecond × windowMs / 1000)` (rounded up).
//! - **When it does not**: while a tool call or reasoning is in flight (their deltas
//!   are not text, and a long tool call or think is legitimate). When that phase
//!   ends, judging starts over: a full window after its end.
//!
//! Pure: the caller supplies milliseconds since the stream started, on the
//! gateway's one clock.

use std::collections::VecDeque;

use serde_json::Value;
use switchyard_types::settings::ThroughputWatchdogSettings;

use super::HEARTBEATS;

/// What one SSE event means for throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Assistant text: this many UTF-8 bytes (0 for an empty delta).
    Text(usize),
    /// A tool call or reasoning is being produced: judging pauses.
    Busy,
    /// A block or item ended (the tool call or reasoning, if any, is over).
    BlockEnd,
    /// The answer is complete (`message_stop`, `[DONE]`, `response.completed`):
    /// nothing after it is judged.
    End,
    /// Anything else: heartbeats, metadata, usage, starts and stops of the message.
    Other,
}

fn str_len(v: &Value) -> usize {
    v.as_str().map_or(0, str::len)
}

/// Classifies one SSE event (its `event:` name and joined `data:`) of any of the
/// three wire formats.
pub fn classify(event: &str, data: &str) -> Output {
    if HEARTBEATS.contains(&event) {
        return Output::Other;
    }
    let data = data.trim();
    if data == "[DONE]" {
        return Output::End;
    }
    if !data.starts_with('{') {
        return Output::Other; // empty events
    }
    let Ok(v) = serde_json::from_str::<Value>(data) else { return Output::Other };
    match v.get("type").and_then(Value::as_str) {
        Some(kind) => typed(kind, &v),
        None => chat_chunk(&v),
    }
}

/// Anthropic Messages and OpenAI Responses events (both carry a `type`).
fn typed(kind: &str, v: &Value) -> Output {
    match kind {
        // Anthropic Messages.
        "content_block_delta" => messages_delta(v["delta"]["type"].as_str(), || str_len(&v["delta"]["text"])),
        "content_block_start" => block_start(v["content_block"]["type"].as_str()),
        "response.output_text.delta" | "response.refusal.delta" => Output::Text(str_len(&v["delta"])),
        "response.output_item.added" => item_added(v["item"]["type"].as_str()),
        k => by_kind_alone(k),
    }
}

// The decisions, shared with the one-pass reader (`super::judge`), which finds the
// same fields in borrowed JSON.

/// A Messages `content_block_delta`, by its delta's `type` (text: `text_len` bytes).
pub(super) fn messages_delta(delta_type: Option<&str>, text_len: impl FnOnce() -> usize) -> Output {
    match delta_type {
        Some("text_delta") => Output::Text(text_len()),
        Some("thinking_delta" | "signature_delta" | "input_json_delta" | "citations_delta") => Output::Busy,
        _ => Output::Other,
    }
}

/// A Messages `content_block_start`, by its block's `type`.
pub(super) fn block_start(block_type: Option<&str>) -> Output {
    match block_type {
        Some("text") => Output::BlockEnd,
        Some(_) => Output::Busy, // tool_use, server_tool_use, thinking, redacted_thinking
        None => Output::Other,
    }
}

/// A Responses `response.output_item.added`, by its item's `type`.
pub(super) fn item_added(item_type: Option<&str>) -> Output {
    match item_type {
        Some("message") | None => Output::Other,
        Some(_) => Output::Busy, // reasoning, function_call, custom_tool_call, …
    }
}

/// The event types whose class needs none of their fields.
pub(super) fn by_kind_alone(kind: &str) -> Output {
    match kind {
        "content_block_stop" | "response.output_item.done" => Output::BlockEnd,
        "message_stop" | "response.completed" | "response.incomplete" | "response.failed" => Output::End,
        k if k.starts_with("response.reasoning")
            || k.ends_with("arguments.delta")
            || k.ends_with("input.delta") =>
        {
            Output::Busy
        }
        _ => Output::Other,
    }
}

/// An OpenAI Chat Completions chunk: text in `choices[].delta.content`, tool calls
/// and reasoning in their own delta fields, a finish reason ends any phase.
fn chat_chunk(v: &Value) -> Output {
    let Some(choices) = v["choices"].as_array() else { return Output::Other };
    let mut text = None;
    let mut busy = false;
    let mut finished = false;
    for choice in choices {
        let delta = &choice["delta"];
        if let Some(t) = delta["content"].as_str() {
            *text.get_or_insert(0) += t.len();
        }
        let tools = delta["tool_calls"].as_array().is_some_and(|t| !t.is_empty());
        // Some upstreams send `"reasoning_content": null` on every chunk: only a
        // value is reasoning.
        let reasoning = |key: &str| delta[key].as_str().is_some_and(|r| !r.is_empty());
        busy |= tools || reasoning("reasoning_content") || reasoning("reasoning");
        finished |= !choice["finish_reason"].is_null();
    }
    chat_output(text, busy, finished)
}

/// A Chat chunk's class from what its choices held: text bytes (`None`: no
/// `content` at all), a tool call or reasoning, a finish reason.
pub(super) fn chat_output(text: Option<usize>, busy: bool, finished: bool) -> Output {
    match (text, busy, finished) {
        (Some(n), _, _) if n > 0 => Output::Text(n),
        (_, true, _) => Output::Busy,
        (_, _, true) => Output::BlockEnd,
        (Some(_), _, _) => Output::Text(0),
        _ => Output::Other,
    }
}

/// The watchdog's parameters; `None` from [`ThroughputPolicy::from_settings`] when
/// it is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThroughputPolicy {
    /// Grace period from the stream's start.
    pub warmup_ms: u64,
    /// The sliding window.
    pub window_ms: u64,
    /// Text bytes a window must hold.
    pub required_bytes: u64,
}

impl ThroughputPolicy {
    /// From settings; `None` when the watchdog is disabled.
    pub fn from_settings(s: &ThroughputWatchdogSettings) -> Option<ThroughputPolicy> {
        if !s.enabled {
            return None;
        }
        let window_ms = u64::from(s.window_ms.max(1));
        let by_rate = (u64::from(s.min_useful_bytes_per_second) * window_ms).div_ceil(1_000);
        Some(ThroughputPolicy {
            warmup_ms: u64::from(s.warmup_ms),
            window_ms,
            required_bytes: by_rate.max(u64::from(s.min_useful_bytes)),
        })
    }
}

/// The verdict on a stream that is too slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooSlow {
    /// Text bytes in the last window.
    pub bytes: u64,
    /// The window.
    pub window_ms: u64,
    /// What the window had to hold.
    pub required_bytes: u64,
}

/// One stream's watch.
#[derive(Debug, Clone)]
pub struct ThroughputWatch {
    policy: ThroughputPolicy,
    /// Judging starts a full window after this (warm-up end, or a phase's end).
    judged_from: u64,
    busy: bool,
    ended: bool,
    samples: VecDeque<(u64, u64)>,
    in_window: u64,
}

impl ThroughputWatch {
    /// A watch for a stream that starts at 0 ms.
    pub fn new(policy: ThroughputPolicy) -> ThroughputWatch {
        ThroughputWatch {
            policy,
            judged_from: policy.warmup_ms,
            busy: false,
            ended: false,
            samples: VecDeque::new(),
            in_window: 0,
        }
    }

    /// Notes one event at `at_ms` since the stream started.
    pub fn observe(&mut self, at_ms: u64, output: Output) {
        match output {
            Output::Text(n) => {
                self.end_phase(at_ms);
                if n > 0 {
                    self.samples.push_back((at_ms, n as u64));
                    self.in_window += n as u64;
                }
            }
            Output::Busy => self.busy = true,
            Output::BlockEnd => self.end_phase(at_ms),
            Output::End => self.ended = true,
            Output::Other => {}
        }
    }

    fn end_phase(&mut self, at_ms: u64) {
        if self.busy {
            self.busy = false;
            self.judged_from = self.judged_from.max(at_ms);
            self.samples.clear();
            self.in_window = 0;
        }
    }

    /// The verdict at `now_ms`: `Some` when a judged window holds too little text.
    pub fn too_slow(&mut self, now_ms: u64) -> Option<TooSlow> {
        let window = self.policy.window_ms;
        if self.busy || self.ended || now_ms < self.judged_from.saturating_add(window) {
            return None;
        }
        while let Some(&(at, n)) = self.samples.front() {
            if at.saturating_add(window) > now_ms {
                break;
            }
            self.samples.pop_front();
            self.in_window -= n;
        }
        (self.in_window < self.policy.required_bytes).then_some(TooSlow {
            bytes: self.in_window,
            window_ms: window,
            required_bytes: self.policy.required_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(warmup_ms: u32, window_ms: u32, per_second: u32, min_bytes: u32) -> ThroughputPolicy {
        let s = ThroughputWatchdogSettings {
            enabled: true,
            warmup_ms,
            window_ms,
            min_useful_bytes_per_second: per_second,
            min_useful_bytes: min_bytes,
        };
        ThroughputPolicy::from_settings(&s).unwrap_or_else(|| panic!("enabled"))
    }

    #[test]
    fn disabled_is_none_and_the_requirement_is_the_larger_of_rate_and_floor() {
        assert_eq!(
            ThroughputPolicy::from_settings(
                &switchyard_types::ResilienceSettings::default().stream_recovery.throughput_watchdog
            ),
            None
        );
        assert_eq!(policy(0, 30_000, 4, 1).required_bytes, 120);
        assert_eq!(policy(0, 1_500, 1, 1).required_bytes, 2, "rounded up");
        assert_eq!(policy(0, 5_000, 1, 50).required_bytes, 50);
    }

    #[test]
    fn text_in_all_three_formats_is_counted_in_bytes() {
        let anthropic =
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"héllo"}}"#;
        assert_eq!(classify("content_block_delta", anthropic), Output::Text(6));
        let chat = r#"{"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#;
        assert_eq!(classify("message", chat), Output::Text(2));
        let responses = r#"{"type":"response.output_text.delta","item_id":"m","delta":"abc"}"#;
        assert_eq!(classify("response.output_text.delta", responses), Output::Text(3));
    }

    #[test]
    fn heartbeats_metadata_usage_and_empty_events_count_nothing() {
        for (event, data) in [
            ("ping", r#"{"type":"ping"}"#),
            ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":5}}}"#),
            ("message_delta", r#"{"type":"message_delta","usage":{"output_tokens":9}}"#),
            ("message", r#"{"id":"c","choices":[],"usage":{"prompt_tokens":3}}"#),
            ("message", ""),
            ("response.created", r#"{"type":"response.created","response":{}}"#),
        ] {
            assert_eq!(classify(event, data), Output::Other, "{event} {data}");
        }
        let empty = r#"{"choices":[{"delta":{"content":""},"finish_reason":null}]}"#;
        assert_eq!(classify("message", empty), Output::Text(0));
        let null_reasoning = r#"{"choices":[{"delta":{"content":"","reasoning_content":null}}]}"#;
        assert_eq!(classify("message", null_reasoning), Output::Text(0), "a null is no reasoning");
    }

    #[test]
    fn tool_calls_and_reasoning_are_busy_and_block_ends_end_them() {
        for (event, data) in [
            (
                "content_block_start",
                r#"{"type":"content_block_start","content_block":{"type":"tool_use","id":"t"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":""}}"#,
            ),
            (
                "message",
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}"#,
            ),
            ("message", r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#),
            ("m", r#"{"type":"response.output_item.added","item":{"type":"function_call"}}"#),
            ("m", r#"{"type":"response.function_call_arguments.delta","delta":"{"}"#),
            ("m", r#"{"type":"response.reasoning_summary_text.delta","delta":""}"#),
        ] {
            assert_eq!(classify(event, data), Output::Busy, "{data}");
        }
        assert_eq!(
            classify("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
            Output::BlockEnd
        );
        assert_eq!(classify("m", r#"{"type":"response.output_item.done","item":{}}"#), Output::BlockEnd);
        let finish = r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#;
        assert_eq!(classify("message", finish), Output::BlockEnd);
    }

    /// One byte of text every `every_ms` from 0; the first instant judged too slow.
    fn first_abort(p: ThroughputPolicy, every_ms: u64, bytes: usize, until_ms: u64) -> Option<u64> {
        let mut w = ThroughputWatch::new(p);
        let mut at = 0;
        while at <= until_ms {
            w.observe(at, Output::Text(bytes));
            if w.too_slow(at).is_some() {
                return Some(at);
            }
            at += every_ms;
        }
        None
    }

    #[test]
    fn a_trickle_is_judged_after_warmup_and_a_full_window() {
        // 10 B/s over 5 s = 50 bytes needed; 1 byte a second is far below.
        assert_eq!(first_abort(policy(2_000, 5_000, 10, 1), 1_000, 1, 60_000), Some(7_000));
        assert_eq!(first_abort(policy(10_000, 5_000, 10, 1), 1_000, 1, 60_000), Some(15_000));
        assert_eq!(first_abort(policy(0, 8_000, 10, 1), 1_000, 1, 60_000), Some(8_000));
        // 20 bytes a second keeps a 10 B/s minimum happy indefinitely.
        assert_eq!(first_abort(policy(0, 5_000, 10, 1), 1_000, 20, 120_000), None);
        // …but not a floor of 200 bytes per window.
        assert_eq!(first_abort(policy(0, 5_000, 10, 200), 1_000, 20, 120_000), Some(5_000));
    }

    #[test]
    fn nothing_is_judged_after_the_answer_is_complete() {
        for (event, data) in [
            ("message_stop", r#"{"type":"message_stop"}"#),
            ("message", "[DONE]"),
            ("response.completed", r#"{"type":"response.completed","response":{}}"#),
        ] {
            assert_eq!(classify(event, data), Output::End, "{data}");
        }
        let mut w = ThroughputWatch::new(policy(0, 5_000, 10, 1));
        w.observe(0, Output::Text(1));
        w.observe(9_000, Output::End);
        assert_eq!(w.too_slow(9_000), None, "a complete answer after a slow end is not cut");
    }

    #[test]
    fn a_long_tool_call_pauses_judging_and_a_full_window_follows_it() {
        let mut w = ThroughputWatch::new(policy(0, 5_000, 10, 1));
        w.observe(0, Output::Text(100));
        w.observe(1_000, Output::Busy);
        for at in (1_000..60_000).step_by(1_000) {
            w.observe(at, Output::Busy);
            assert_eq!(w.too_slow(at), None, "judged during a tool call at {at}");
        }
        w.observe(60_000, Output::BlockEnd);
        assert_eq!(w.too_slow(64_999), None, "a full window after the tool call");
        let slow = w.too_slow(65_000);
        assert_eq!(slow, Some(TooSlow { bytes: 0, window_ms: 5_000, required_bytes: 50 }));
    }
}
