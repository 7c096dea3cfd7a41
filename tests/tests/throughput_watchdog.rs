//! The slow-stream throughput watchdog end to end (SPEC §4.7, issue 12): a stream
//! that keeps sending events but trickles assistant text is ended after its warm-up
//! and a full window, with one error event, recorded once; tool-call and reasoning
//! phases are not judged. Frames are fed one by one through a live fake upstream,
//! and time moves on the gateway's manual clock.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, LiveFeed, Reply};
use switchyard_tests::TestGateway;
use switchyard_types::UnixMillis;

const START: &str =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n";
const TEXT_START: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
const TOOL_START: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"edit\",\"input\":{}}}\n\n";
const TOOL_DELTA: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"a\"}}\n\n";
const THINKING_START: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n";
const THINKING_DELTA: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"h\"}}\n\n";
const USAGE: &str = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n";
const STOP: &str = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

fn block_stop(index: u32) -> String {
    format!("event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{index}}}\n\n")
}

fn text(t: &str) -> String {
    let delta =
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}});
    format!("event: content_block_delta\ndata: {delta}\n\n")
}

/// One streamed request through a gateway on a manual clock, its upstream fed by hand.
struct Stream {
    gw: TestGateway,
    clock: Arc<ManualClock>,
    feed: Option<LiveFeed>,
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    _upstream: FakeUpstream,
}

impl Stream {
    /// Starts the stream with `message_start` and a text block, after applying
    /// `watchdog` as `streamRecovery.throughputWatchdog` (`None`: the defaults).
    async fn open(watchdog: Option<Value>) -> Stream {
        let (reply, feed) = Reply::live();
        let upstream = FakeUpstream::start(reply).await;
        let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
        let c = clock.clone();
        let config = switchyard_tests::two_anthropic_keys(&upstream.url(), &upstream.url());
        let gw = TestGateway::start_with(&config, move |cfg| cfg.clock = c).await;
        if let Some(w) = watchdog {
            gw.patch_settings(&json!({"streamRecovery": {"throughputWatchdog": w}})).await;
        }
        assert!(feed.send(START));
        let request = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "stream": true,
            "messages": [{"role": "user", "content": "hi"}]});
        let response = gw.post("/v1/messages", &request).await;
        assert_eq!(response.status(), 200);
        let mut s = Stream {
            gw,
            clock,
            feed: Some(feed),
            body: Box::pin(response.bytes_stream()),
            _upstream: upstream,
        };
        assert!(s.next().await.is_some_and(|c| c.contains("message_start")));
        assert!(s.send(0, TEXT_START).await.contains("content_block_start"));
        s
    }

    async fn next(&mut self) -> Option<String> {
        match tokio::time::timeout(Duration::from_secs(5), self.body.next()).await {
            Ok(Some(Ok(b))) => Some(String::from_utf8_lossy(&b).into_owned()),
            Ok(_) => None,
            Err(_) => panic!("no chunk within 5 s of real time"),
        }
    }

    /// Moves the clock on by `after_ms`, sends `frame` and returns what the client
    /// receives for it.
    async fn send(&mut self, after_ms: i64, frame: &str) -> String {
        self.clock.advance_ms(after_ms);
        assert!(self.feed.as_ref().is_some_and(|f| f.send(frame)), "the gateway left the upstream");
        self.next().await.unwrap_or_default()
    }

    /// Sends `frame` every second for `seconds`; returns the second (since the
    /// text block started) at which the client got the watchdog's error, if it did.
    async fn trickle(&mut self, frame: &str, seconds: u32) -> Option<u32> {
        for second in 1..=seconds {
            let got = self.send(1_000, frame).await;
            if got.contains("event: error") {
                assert!(got.contains("throughput minimum"), "{got}");
                return Some(second);
            }
        }
        None
    }

    /// Ends the stream cleanly and returns the rest of the body.
    async fn finish(&mut self) -> String {
        for frame in [block_stop(0).as_str(), USAGE, STOP] {
            assert!(self.feed.as_ref().is_some_and(|f| f.send(frame)));
        }
        self.feed = None;
        let mut rest = String::new();
        while let Some(c) = self.next().await {
            rest.push_str(&c);
        }
        rest
    }
}

fn watchdog(warmup_ms: u32, window_ms: u32, per_second: u32, min_bytes: u32) -> Value {
    json!({"enabled": true, "warmupMs": warmup_ms, "windowMs": window_ms,
        "minUsefulBytesPerSecond": per_second, "minUsefulBytes": min_bytes})
}

// settings-test: /streamRecovery/throughputWatchdog/enabled /streamRecovery/throughputWatchdog/warmupMs /streamRecovery/throughputWatchdog/windowMs /streamRecovery/throughputWatchdog/minUsefulBytesPerSecond
#[tokio::test]
async fn a_trickling_stream_is_ended_after_warmup_and_a_full_window_and_recorded_once() {
    // Off (the default): a byte a second runs to its end, even with a window and
    // minimum that would end it at once were the watchdog on.
    let off = json!({"enabled": false, "warmupMs": 0, "windowMs": 1000, "minUsefulBytesPerSecond": 10, "minUsefulBytes": 1});
    let mut s = Stream::open(Some(off)).await;
    assert_eq!(s.trickle(&text("x"), 20).await, None);
    let rest = s.finish().await;
    assert!(rest.contains("message_stop") && !rest.contains("error"), "{rest}");

    // 10 B/s over a 5 s window after a 2 s warm-up: judged (and ended) at 7 s.
    let mut s = Stream::open(Some(watchdog(2_000, 5_000, 10, 1))).await;
    assert_eq!(s.trickle(&text("x"), 30).await, Some(7));
    assert_eq!(s.next().await, None, "the stream ends after the error event");
    let rows = s.gw.wait_for_log_rows(1).await;
    assert_eq!(rows.len(), 1, "one log row: {rows:?}");
    assert_eq!(rows[0]["errorKind"], "stream_too_slow");
    let entry = s.gw.cooldown_of("key-a").await;
    assert_eq!(entry["lastErrorKind"], "stream_stall", "recorded on the connection: {entry}");
    let flow = s.gw.mgmt_json("/api/rate-limits").await;
    let connections = flow["connections"].as_array().cloned().unwrap_or_default();
    assert_eq!(connections.len(), 2, "{flow}");
    assert!(connections.iter().all(|c| c["inFlight"] == 0), "the attempt's slots were released: {flow}");

    // A 6 s warm-up and a 3 s window: judged at 9 s.
    let mut s = Stream::open(Some(watchdog(6_000, 3_000, 10, 1))).await;
    assert_eq!(s.trickle(&text("x"), 30).await, Some(9));

    // Six bytes a second: under a 10 B/s minimum, over a 5 B/s one.
    let mut s = Stream::open(Some(watchdog(2_000, 5_000, 10, 1))).await;
    assert_eq!(s.trickle(&text("abcdef"), 30).await, Some(7));
    let mut s = Stream::open(Some(watchdog(2_000, 5_000, 5, 1))).await;
    assert_eq!(s.trickle(&text("abcdef"), 30).await, None);
    assert!(!s.finish().await.contains("error"), "a complete answer is not cut");
}

// settings-test: /streamRecovery/throughputWatchdog/minUsefulBytes
#[tokio::test]
async fn the_per_window_floor_applies_above_the_rate() {
    // 5 bytes a second meets 1 B/s over 5 s (5 bytes) easily…
    let mut s = Stream::open(Some(watchdog(0, 5_000, 1, 1))).await;
    assert_eq!(s.trickle(&text("abcde"), 20).await, None);
    // …but not a floor of 50 bytes per window: 25 bytes at 5 s.
    let mut s = Stream::open(Some(watchdog(0, 5_000, 1, 50))).await;
    assert_eq!(s.trickle(&text("abcde"), 20).await, Some(5));
}

#[tokio::test]
async fn long_tool_call_and_reasoning_phases_are_not_judged() {
    let mut s = Stream::open(Some(watchdog(0, 5_000, 10, 1))).await;
    assert!(!s.send(0, &text(&"w".repeat(60))).await.contains("error"));
    assert!(!s.send(0, &block_stop(0)).await.contains("error"));
    assert!(!s.send(0, TOOL_START).await.contains("error"));
    assert_eq!(s.trickle(TOOL_DELTA, 30).await, None, "30 s of tool-call arguments");
    assert!(!s.send(0, &block_stop(1)).await.contains("error"));
    assert!(!s.send(0, THINKING_START).await.contains("error"));
    assert_eq!(s.trickle(THINKING_DELTA, 30).await, None, "30 s of reasoning");
    assert!(!s.send(0, &block_stop(2)).await.contains("error"));
    // After the phases a full window is judged again: text must flow.
    assert_eq!(s.trickle(&text("x"), 30).await, Some(5));
}
