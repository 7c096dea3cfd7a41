//! Connection hygiene (issue 10, item 3): a trickled request head is closed at the
//! header-read timeout, an idle keep-alive connection likewise, a trickled body
//! gets `408` in the route's format at the body-read timeout, and at the cap on
//! open connections idle sockets give way to a new client while busy ones are
//! never cut, except one whose client stopped reading: its writes wait, and at the
//! write-stall timeout it closes and frees its place and upstream stream. Timeouts
//! run on the gateway's clock: these tests move a manual clock, and the cap tests
//! never move it, so no timeout can be what lets a client in.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchyard_gateway::clock::{Clock, ManualClock};
use switchyard_testkit::{FakeUpstream, Hold, Reply, StreamEnd, wire};
use switchyard_tests::{CLIENT_KEY, MANAGEMENT_TOKEN, TestGateway, client_key_toml, text};
use switchyard_types::UnixMillis;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const BODY_TIMEOUT: Duration = Duration::from_secs(20);
const WRITE_STALL: Duration = Duration::from_secs(45);

fn config(up: &FakeUpstream) -> String {
    format!(
        "{}\n[[connections]]\nid = \"a\"\nprovider = \"anthropic\"\napi_key = \"k\"\nbase_url = \"{}\"\n",
        client_key_toml(),
        up.url()
    )
}

/// A gateway on a manual clock with short, distinct timeouts and `cap` connections.
async fn gateway(up: &FakeUpstream, cap: Option<usize>) -> (TestGateway, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let gw = TestGateway::start_with(&config(up), move |cfg| {
        cfg.clock = c;
        cfg.connections.header_read_timeout = HEADER_TIMEOUT;
        cfg.connections.body_read_timeout = BODY_TIMEOUT;
        cfg.connections.write_stall_timeout = WRITE_STALL;
        cfg.connections.max_connections = cap;
    })
    .await;
    (gw, clock)
}

/// Waits until the gateway has armed a timer due in exactly `due`.
async fn until_timer(clock: &ManualClock, due: Duration) {
    for _ in 0..500 {
        if clock.pending_in().contains(&due) {
            return;
        }
        // Polling for the gateway to arm its timer, not a wait for time.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no timer due in {due:?}: {:?}", clock.pending_in());
}

/// Whether the gateway has closed `stream` (EOF or reset) within `within` of real time.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0_u8; 1024];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// Reads one response off a kept-alive connection (up to the end of `marker`).
async fn read_until(stream: &mut TcpStream, marker: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0_u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(marker) {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("no answer: {}", String::from_utf8_lossy(&seen)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(n > 0, "closed before {marker:?}: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

async fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect: {e}"))
}

#[tokio::test]
async fn a_trickled_header_is_closed_at_the_header_timeout() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let (gw, clock) = gateway(&up, None).await;
    let mut slow = connect(gw.gateway().addr()).await;
    slow.write_all(b"GET /api/hello HTTP/1.1\r\nHo").await.unwrap_or_else(|e| panic!("{e}"));
    until_timer(&clock, HEADER_TIMEOUT).await;
    // More bytes do not move the deadline: the head as a whole is due.
    clock.advance_ms(5_000);
    slow.write_all(b"st: 127.0").await.unwrap_or_else(|e| panic!("{e}"));
    clock.advance_ms(4_999);
    // Real time on purpose: a still-open socket shows only as a moment of silence.
    assert!(!closed_within(&mut slow, Duration::from_millis(200)).await, "closed before the header timeout");
    clock.advance_ms(1);
    assert!(closed_within(&mut slow, Duration::from_secs(5)).await, "still open after the header timeout");
    // The gateway itself is unaffected.
    let hello = gw.http.get(gw.url("/api/hello")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hello.status(), 200);
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_at_the_header_timeout() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let (gw, clock) = gateway(&up, None).await;
    let mut kept = connect(gw.gateway().addr()).await;
    kept.write_all(b"GET /api/hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(read_until(&mut kept, "{\"ok\":true}").await.starts_with("HTTP/1.1 200"));
    // Kept alive: the same timer now waits for the next request head.
    until_timer(&clock, HEADER_TIMEOUT).await;
    clock.advance_ms(9_999);
    // Real time on purpose: a still-open socket shows only as a moment of silence.
    assert!(!closed_within(&mut kept, Duration::from_millis(200)).await, "closed before the idle timeout");
    clock.advance_ms(1);
    assert!(
        closed_within(&mut kept, Duration::from_secs(5)).await,
        "an idle keep-alive connection stayed open"
    );
}

#[tokio::test]
async fn a_trickled_body_gets_408_in_the_routes_format_at_the_body_timeout() {
    let mut up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    up.expect_calls(0);
    let (gw, clock) = gateway(&up, None).await;
    let cases = [
        ("POST /v1/messages", format!("x-api-key: {CLIENT_KEY}\r\nContent-Type: application/json")),
        ("PATCH /api/resilience", format!("Authorization: Bearer {MANAGEMENT_TOKEN}")),
    ];
    for (line, headers) in cases {
        let mut slow = connect(gw.gateway().addr()).await;
        let head = format!(
            "{line} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}\r\nContent-Length: 100\r\n\r\n{{\"model\""
        );
        slow.write_all(head.as_bytes()).await.unwrap_or_else(|e| panic!("{e}"));
        until_timer(&clock, BODY_TIMEOUT).await;
        clock.advance(BODY_TIMEOUT);
        // The rest of the body never came, so the answer ends the connection.
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut answer))
            .await
            .unwrap_or_else(|_| panic!("{line}: no answer, or kept open after it"))
            .unwrap_or_else(|e| panic!("{e}"));
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{line}: {answer}");
        assert!(answer.contains("x-switchyard-error: request_timeout"), "{line}: {answer}");
        assert!(answer.contains("did not arrive in full within 20 s"), "{line}: {answer}");
        let anthropic = answer.contains("\"type\":\"error\"");
        assert_eq!(anthropic, line.contains("/v1/messages"), "{line}: the route's own envelope: {answer}");
    }
}

#[tokio::test]
async fn at_the_cap_the_longest_idle_sockets_give_way_to_a_new_client() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let (gw, clock) = gateway(&up, Some(8)).await;
    let addr = gw.gateway().addr();
    let mut idle = Vec::new();
    for _ in 0..40 {
        idle.push(connect(addr).await);
    }
    // The clock never moves in this test: no timeout can be what makes room.
    let hello = tokio::time::timeout(Duration::from_secs(10), gw.http.get(gw.url("/api/hello")).send())
        .await
        .unwrap_or_else(|_| panic!("the gateway was unreachable behind 40 idle sockets"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hello.status(), 200);
    let mut closed = Vec::new();
    for (i, socket) in idle.iter_mut().enumerate() {
        if closed_within(socket, Duration::from_millis(50)).await {
            closed.push(i);
        }
    }
    // 41 connections through 8 places: the 33 that waited longest gave way, in order.
    assert_eq!(closed, (0..33).collect::<Vec<_>>());
    assert_eq!(clock.now_wall(), UnixMillis(1_900_000_000_000));
}

#[tokio::test]
async fn at_the_cap_a_busy_connection_is_never_cut_and_a_newcomer_waits_for_room() {
    let (reply, feed) = Reply::live();
    let up = FakeUpstream::start(reply).await;
    let (gw, _clock) = gateway(&up, Some(1)).await;
    let frames = wire::anthropic_sse("claude-x", "still streaming");
    feed.send(&frames[0]);
    let streaming =
        gw.post("/v1/messages", &json!({"model": "claude-x", "stream": true, "messages": []})).await;
    assert_eq!(streaming.status(), 200);

    // The one place is busy: a newcomer (a second client) waits instead of failing.
    let other = reqwest::Client::builder().no_proxy().build().unwrap_or_else(|e| panic!("{e}"));
    let url = gw.url("/api/hello");
    let mut newcomer = tokio::spawn(async move { other.get(url).send().await.map(|r| r.status().as_u16()) });
    // Real time on purpose: waiting shows only as an answer that does not come.
    let early = tokio::time::timeout(Duration::from_millis(300), &mut newcomer).await;
    assert!(early.is_err(), "the newcomer was answered while the only place was busy: {early:?}");

    for frame in &frames[1..] {
        feed.send(frame);
    }
    drop(feed);
    assert_eq!(text(streaming).await, frames.concat(), "the busy stream was cut for a newcomer");
    let status = tokio::time::timeout(Duration::from_secs(10), newcomer)
        .await
        .unwrap_or_else(|_| panic!("the newcomer never got the place"))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_client_that_stops_reading_is_let_go_at_the_write_stall_timeout_with_its_place() {
    // The upstream's answer, held until the test lets it go: 16 MB of stream (four
    // times what a send buffer grows to here), after which it stays open.
    let frames = wire::anthropic_sse("claude-x", "");
    let text = "x".repeat(64 * 1024);
    let delta =
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}});
    let mut stream = frames[..2].to_vec();
    stream.extend(std::iter::repeat_n(format!("event: content_block_delta\ndata: {delta}\n\n"), 256));
    let hold = Hold::new();
    let up = FakeUpstream::start(Reply::sse(stream).ending(StreamEnd::Hang).held(&hold)).await;
    // One place: the stuck client holds it, and a busy connection is never evicted.
    let (gw, clock) = gateway(&up, Some(1)).await;
    let socket = TcpSocket::new_v4().unwrap_or_else(|e| panic!("{e}"));
    // A small, fixed receive buffer: the client's side fills at once.
    socket.set_recv_buffer_size(64 * 1024).unwrap_or_else(|e| panic!("{e}"));
    let mut stuck = socket.connect(gw.gateway().addr()).await.unwrap_or_else(|e| panic!("connect: {e}"));
    let body = json!({"model": "claude-x", "stream": true, "messages": []}).to_string();
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: {CLIENT_KEY}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stuck.write_all(request.as_bytes()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(up.wait_until(Duration::from_secs(5), |u| u.calls() == 1).await, "no upstream request");
    // The one place is busy: a newcomer waits.
    let other = reqwest::Client::builder().no_proxy().build().unwrap_or_else(|e| panic!("{e}"));
    let url = gw.url("/api/hello");
    let mut newcomer = tokio::spawn(async move { other.get(url).send().await.map(|r| r.status().as_u16()) });
    // Real time on purpose: waiting shows only as an answer that does not come.
    let early = tokio::time::timeout(Duration::from_millis(300), &mut newcomer).await;
    assert!(early.is_err(), "the newcomer was answered while the only place was busy: {early:?}");

    hold.release(1);
    // The client reads nothing: a write waits, and its stall is timed.
    until_timer(&clock, WRITE_STALL).await;
    clock.advance(WRITE_STALL - Duration::from_millis(1));
    let early = tokio::time::timeout(Duration::from_millis(300), &mut newcomer).await;
    assert!(early.is_err(), "the place was freed before the write-stall timeout: {early:?}");
    assert_eq!(up.abandoned_streams(), 0);

    clock.advance(Duration::from_millis(1));
    let status = tokio::time::timeout(Duration::from_secs(10), newcomer)
        .await
        .unwrap_or_else(|_| panic!("the stuck client kept the only place: {:?}", clock.pending_in()))
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status, 200);
    // Its upstream stream was cancelled, and the attempt logged as the client's leaving.
    assert!(up.wait_until(Duration::from_secs(5), |u| u.abandoned_streams() == 1).await, "stream kept");
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "client_disconnected", "{rows:?}");
    assert!(closed_within(&mut stuck, Duration::from_secs(5)).await, "the stuck connection stayed open");
}
