//! Two dead connections beside one healthy connection of the same provider (issue 9):
//! the dead ones first refuse connections, then answer 503, then cut their streams
//! mid-way; the healthy one answers every request. 100 streamed requests, one per
//! second of the gateway's manual clock. One bad connection must never take its
//! siblings down: connect errors and 503s fail over before the client sees a byte,
//! a dead connection leaves rotation on its first failure (connection cooldown with
//! backoff) instead of opening the provider breaker for everyone, and a cut stream —
//! the one failure a client can see, since its bytes were already relayed — cools
//! its connection so the next request does not meet it again.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, StreamEnd, wire};
use switchyard_tests::{TestGateway, client_key_toml, refused_port, sse_data};
use switchyard_types::UnixMillis;

const REQUESTS: usize = 100;
/// Requests 0..REFUSED see refused ports, REFUSED..ANSWER_503 see 503s, the rest cuts.
const REFUSED: usize = 33;
const ANSWER_503: usize = 66;

fn config(dead1: &str, dead2: &str, healthy: &str) -> String {
    let mut toml = client_key_toml();
    for (i, (id, url)) in [("dead-1", dead1), ("dead-2", dead2), ("healthy", healthy)].iter().enumerate() {
        toml.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"anthropic\"\napi_key = \"sk-{id}\"\n\
             base_url = \"{url}\"\npriority = {}\n",
            i + 1
        ));
    }
    toml
}

/// A stream that stops after its first text delta with a reset: bytes reached the
/// client, so the cut is visible to it.
fn cut_stream() -> Reply {
    let frames: Vec<String> =
        wire::anthropic_sse("claude-sonnet-4-6", "partial").into_iter().take(4).collect();
    Reply::sse(frames).ending(StreamEnd::Reset)
}

/// How one request ended, as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    connection: String,
    ok: bool,
    status: u16,
    /// The start of the body, for failure messages.
    head: String,
}

/// Reads a streamed answer: ok when it is a 200 that ends with `message_stop` and
/// carries no error event.
async fn seen(response: reqwest::Response) -> Seen {
    let status = response.status().as_u16();
    let connection = response
        .headers()
        .get("x-switchyard-connection")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
        .to_owned();
    let text = response.text().await.unwrap_or_default();
    let events: Vec<Value> = sse_data(&text);
    let complete = events.last().is_some_and(|e| e["type"] == "message_stop")
        && !events.iter().any(|e| e["type"] == "error");
    Seen { connection, ok: status == 200 && complete, status, head: text.chars().take(200).collect() }
}

async fn one_request(gw: &TestGateway) -> Seen {
    let body = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    seen(gw.post("/v1/messages", &body).await).await
}

#[tokio::test]
async fn two_dead_connections_never_take_the_healthy_one_down() {
    let (port1, url1) = refused_port().await;
    let (port2, url2) = refused_port().await;
    let healthy = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "fine"))).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let gw = TestGateway::start_with(&config(&url1, &url2, &healthy.url()), move |cfg| cfg.clock = c).await;

    let mut dead: Vec<FakeUpstream> = Vec::new();
    let mut seen = Vec::with_capacity(REQUESTS);
    for i in 0..REQUESTS {
        if i == REFUSED {
            // The same ports now accept connections and answer 503.
            for port in [port1, port2] {
                let fake =
                    FakeUpstream::bind(port, Reply::json(503, wire::anthropic_error("api_error", "down")));
                dead.push(fake.await.unwrap_or_else(|e| panic!("port {port} could not be rebound: {e}")));
            }
        }
        if i == ANSWER_503 {
            dead.iter().for_each(|d| d.set_default(cut_stream()));
        }
        seen.push(one_request(&gw).await);
        clock.advance_ms(1_000);
    }

    // Connect errors and 503s fail over before the client sees a byte: no failure.
    let early: Vec<(usize, &Seen)> = seen[..ANSWER_503].iter().enumerate().filter(|(_, s)| !s.ok).collect();
    assert!(early.is_empty(), "client-visible failures while the dead ones refused or said 503: {early:?}");
    // A cut stream is visible (its bytes were relayed); each dead connection may cut
    // one stream before its cooldown takes it out, and never two in a row.
    let cuts: Vec<(usize, &Seen)> = seen.iter().enumerate().filter(|(_, s)| !s.ok).collect();
    let mut per_connection: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, s) in &cuts {
        *per_connection.entry(s.connection.as_str()).or_default() += 1;
    }
    assert!(per_connection.values().all(|&n| n <= 1), "a dead connection cut more than one stream: {cuts:?}");
    assert!(cuts.iter().all(|(_, s)| s.connection.starts_with("dead-")), "{cuts:?}");
    // The healthy connection served every other request, in every phase.
    let by_healthy = seen.iter().filter(|s| s.ok && s.connection == "healthy").count();
    assert_eq!(by_healthy, REQUESTS - cuts.len(), "{seen:?}");
    assert!(dead.iter().all(|d| d.calls() >= 1), "each dead connection was re-tried after its cooldown");
    assert_eq!(healthy.calls(), by_healthy, "the healthy connection never failed");

    // The provider breaker stayed closed: the dead ones did not take it down.
    let health = gw.mgmt_json("/api/monitoring/health").await;
    let breaker = health["breakers"]
        .as_array()
        .and_then(|l| l.iter().find(|b| b["provider"] == "anthropic"))
        .cloned()
        .unwrap_or_default();
    assert_ne!(breaker["state"], "OPEN", "{health}");
    // Both dead connections are listed as cooling with their backoff.
    let cooldowns = gw.mgmt_json("/api/resilience/cooldowns").await;
    for id in ["dead-1", "dead-2"] {
        let entry = cooldowns
            .as_array()
            .and_then(|l| l.iter().find(|c| c["connection"] == id))
            .cloned()
            .unwrap_or_default();
        assert_eq!(entry["lastErrorKind"], "server_error", "{id}: {cooldowns}");
        assert!(entry["backoffLevel"].as_u64().unwrap_or_default() >= 2, "{id}: {cooldowns}");
    }
}

/// A small deterministic generator (xorshift64*): the chaos is random but the same
/// on every run, so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One fault before anything reaches the client (or, for latency, none at all).
fn chaos_reply(rng: &mut Rng) -> (&'static str, Reply) {
    let ok = || Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "fine"));
    match rng.below(7) {
        0 => ("latency", Reply::Delayed(std::time::Duration::from_millis(rng.below(30)), Box::new(ok()))),
        1 => ("reset", Reply::Hangup),
        2 => ("timeout", Reply::Silent),
        3 => ("503", Reply::json(503, wire::anthropic_error("api_error", "unavailable"))),
        4 => (
            "429",
            Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))
                .with_header("retry-after", "2"),
        ),
        5 => {
            // Heartbeats only, then silence: a stall before the first model event.
            let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned();
            ("stall", Reply::sse(vec![ping.clone(), ping]).ending(StreamEnd::Hang))
        }
        _ => ("ok", ok()),
    }
}

#[tokio::test]
async fn seeded_chaos_on_two_connections_never_reaches_the_client_while_a_healthy_path_exists() {
    const ROUNDS: usize = 200;
    let mut rng = Rng(0x5eed_c4a0_5eed_c4a0);
    let flaky1 = FakeUpstream::start(Reply::Hangup).await;
    let flaky2 = FakeUpstream::start(Reply::Hangup).await;
    let healthy = FakeUpstream::start(Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "fine"))).await;
    let mut injected: BTreeMap<&str, usize> = BTreeMap::new();
    // Each flaky upstream answers from its own seeded script, one entry per call.
    for _ in 0..ROUNDS {
        for up in [&flaky1, &flaky2] {
            let (kind, reply) = chaos_reply(&mut rng);
            *injected.entry(kind).or_default() += 1;
            up.push(reply);
        }
    }
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let gw = TestGateway::start_with(&config(&flaky1.url(), &flaky2.url(), &healthy.url()), move |cfg| {
        cfg.clock = c
    })
    .await;
    let body = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        let pending = gw.post_in_background("/v1/messages", &body);
        // A silent or stalled upstream waits on the gateway's clock: move it a second
        // at a time until the answer is there (the readiness budget is 60 s). The
        // gateway runs on its own threads, so a pending timer does not mean it is
        // idle: each second of its clock is given 2 ms of real time first, so an
        // answer that is on its way (up to 30 ms of scripted latency) has 120 ms.
        let mut waited = 0;
        while !pending.is_finished() && waited < 600 {
            // Polling for the gateway to reach its next wait, not a wait for time.
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            if clock.pending_timers() > 0 && !pending.is_finished() {
                clock.advance_ms(1_000);
                waited += 1;
            }
        }
        let outcome = seen(pending.await.unwrap_or_else(|e| panic!("{e}"))).await;
        if !outcome.ok {
            failures.push((round, outcome));
        }
        // One request every 30 s of the gateway's clock: cooldowns lapse and the
        // flaky connections come back into rotation again and again.
        clock.advance_ms(30_000);
    }
    eprintln!(
        "chaos: {ROUNDS} requests; scripted faults {injected:?}; calls: flaky {} + {}, healthy {}; client-visible failures {}",
        flaky1.calls(),
        flaky2.calls(),
        healthy.calls(),
        failures.len()
    );
    assert!(injected.len() >= 6, "every kind of fault was injected: {injected:?}");
    assert!(
        failures.is_empty(),
        "client-visible failures with a healthy path: {failures:?} (faults {injected:?})"
    );
    assert!(
        flaky1.calls() + flaky2.calls() > ROUNDS / 4,
        "the flaky connections stayed in rotation: {} {} {}",
        flaky1.calls(),
        flaky2.calls(),
        healthy.calls()
    );
    assert!(healthy.calls() > 0);
}
