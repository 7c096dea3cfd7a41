//! Session affinity end to end (SPEC §4.4, issue 12): a client session keeps to one
//! connection under any strategy for `sessionAffinityTtlMs` (sliding), moves when
//! its connection is ruled out and stays on the replacement, survives a restart,
//! comes from the headers or the body real agents send, and never reaches an
//! upstream. Time runs on a manual clock.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_gateway::server::GatewayConfig;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{CLIENT_KEY, TestGateway, client_key_toml, two_anthropic_keys};
use switchyard_types::UnixMillis;

const TTL: &str = "[resilience]\nsessionAffinityTtlMs = 600000\n";
const ROUND_ROBIN: &str = "\n[[combos]]\nname = \"team\"\nstrategy = \"round-robin\"\ntargets = [\"anthropic/claude-sonnet-4-6\"]\n";

fn ok(from: &str) -> Reply {
    Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", from))
}

fn messages(model: &str) -> Value {
    json!({"model": model, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
}

struct Two {
    gw: TestGateway,
    clock: Arc<ManualClock>,
    a: FakeUpstream,
    b: FakeUpstream,
}

async fn two(tail: &str) -> Two {
    let a = FakeUpstream::start(ok("a")).await;
    let b = FakeUpstream::start(ok("b")).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let config = format!("{}{tail}", two_anthropic_keys(&a.url(), &b.url()));
    let gw = TestGateway::start_with(&config, move |cfg| cfg.clock = c).await;
    Two { gw, clock, a, b }
}

impl Two {
    /// Sends one request, with `session` as Claude Code's session header when set;
    /// returns the connection that served it.
    async fn send(&self, model: &str, session: Option<&str>) -> String {
        let mut request = self.gw.http.post(self.gw.url("/v1/messages")).bearer_auth(CLIENT_KEY);
        if let Some(s) = session {
            request = request.header("x-claude-code-session-id", s);
        }
        let response = request.json(&messages(model)).send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
        response.headers()["x-switchyard-connection"].to_str().unwrap_or_default().to_owned()
    }

    async fn served(&self, model: &str, session: Option<&str>, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(self.send(model, session).await);
        }
        out
    }
}

fn distinct(v: &[String]) -> usize {
    let mut d = v.to_vec();
    d.sort();
    d.dedup();
    d.len()
}

// settings-test: /sessionAffinityTtlMs
#[tokio::test]
async fn a_session_stays_on_one_connection_under_round_robin_for_its_sliding_ttl() {
    // Off by default (TTL 0): the same session header is spread like any request.
    let t = two(ROUND_ROBIN).await;
    assert_eq!(distinct(&t.served("team", Some("s-1"), 4).await), 2, "TTL 0 pins nothing");

    let t = two(&format!("{TTL}{ROUND_ROBIN}")).await;
    assert_eq!(distinct(&t.served("team", None, 4).await), 2, "requests without a session still rotate");
    let first = t.served("team", Some("s-1"), 6).await;
    assert_eq!(distinct(&first), 1, "one session, one connection: {first:?}");
    // Sliding: a request every 9 minutes keeps a 10-minute pin alive for an hour.
    for _ in 0..6 {
        t.clock.advance_ms(540_000);
        assert_eq!(t.send("team", Some("s-1")).await, first[0]);
    }
    let pins = t.gw.mgmt_json("/api/sessions").await;
    assert_eq!(pins["ttlMs"], 600_000);
    assert_eq!(pins["pins"].as_array().map(Vec::len), Some(1), "{pins}");
    assert_eq!(pins["pins"][0]["connection"], first[0].as_str());
    let session_shown = pins["pins"][0]["session"].as_str().unwrap_or_default();
    assert!(!session_shown.contains("s-1") && session_shown.len() == 12, "a hash, not the id: {pins}");
    let flow = t.gw.mgmt_json("/api/rate-limits").await;
    let pinned: Vec<(String, u64)> = flow["connections"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|c| {
                    (
                        c["connectionId"].as_str().unwrap_or_default().to_owned(),
                        c["pinnedSessions"].as_u64().unwrap_or(9),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(pinned.contains(&(first[0].clone(), 1)), "{flow}");
    // Ten quiet minutes: the pin lapses.
    t.clock.advance_ms(600_000);
    assert_eq!(t.gw.mgmt_json("/api/sessions").await["pins"], json!([]));

    // No session header ever reaches an upstream.
    for fake in [&t.a, &t.b] {
        for r in fake.requests() {
            assert!(r.headers.get("x-claude-code-session-id").is_none(), "forwarded: {:?}", r.headers);
        }
    }
}

#[tokio::test]
async fn a_ruled_out_pin_is_replaced_and_the_session_stays_on_the_replacement() {
    let t = two(TTL).await;
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-a", "priority puts key-a first");
    t.a.push(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))
            .with_header("retry-after", "5"),
    );
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-b", "failed over");
    t.clock.advance_ms(6_000);
    assert_eq!(t.gw.cooldown_of("key-a").await["status"], "active", "key-a is back");
    assert_eq!(t.send("claude-sonnet-4-6", None).await, "key-a", "without a session, priority order");
    for _ in 0..3 {
        assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-b", "the session stays on key-b");
    }
    // Deleting the pinned connection forgets its pins.
    let before = t.gw.mgmt_json("/api/sessions").await;
    assert_eq!(before["pins"][0]["connection"], "key-b", "{before}");
    // Clearing the pins places the session afresh.
    let cleared =
        t.gw.mgmt(reqwest::Method::DELETE, "/api/sessions").send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cleared.json::<Value>().await.unwrap_or_default(), json!({"removed": 1}));
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-a");
}

#[tokio::test]
async fn a_full_pinned_connection_keeps_its_pin() {
    let hold = switchyard_testkit::Hold::new();
    let a = FakeUpstream::start(ok("a")).await;
    let b = FakeUpstream::start(ok("b")).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let mut config = two_anthropic_keys(&a.url(), &b.url());
    config = config.replacen("priority = 1\n", "priority = 1\nmax_concurrent = 1\n", 1);
    let gw = TestGateway::start_with(&format!("{config}{TTL}"), move |cfg| cfg.clock = c).await;
    let t = Two { gw, clock, a, b };
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-a");
    // Another client fills key-a; the session's next request spills to key-b…
    t.a.set_default(ok("a").held(&hold));
    let busy = t.gw.post_in_background("/v1/messages", &messages("claude-sonnet-4-6"));
    assert!(t.a.wait_until(std::time::Duration::from_secs(5), |f| f.in_flight() == 1).await);
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-b");
    hold.open();
    assert_eq!(busy.await.map(|r| r.status().as_u16()).unwrap_or(0), 200);
    // The busy answer's slot on key-a is given back by its bookkeeping, which runs
    // just after its bytes are written (conn/after_write.rs), so a client can see
    // the answer microseconds before. The management API answers only once that
    // bookkeeping ran: a read of it orders the next request after the release.
    t.gw.mgmt_json("/api/sessions").await;
    // …and returns to key-a, whose pin it kept.
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-a");
}

#[tokio::test]
async fn pins_survive_a_restart() {
    let mut t = two(TTL).await;
    t.a.push(Reply::json(503, wire::anthropic_error("overloaded_error", "busy")));
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-b");
    let data_dir: std::path::PathBuf = t.gw.dir.path().join("data");
    let config = std::fs::read_to_string(&t.gw.config_path).unwrap_or_default();
    t.gw.shutdown().await;
    t.clock.advance_ms(60_000);
    let c = t.clock.clone();
    let dir: &Path = &data_dir;
    let gw = TestGateway::start_with(&config, |cfg: &mut GatewayConfig| {
        cfg.data_dir = dir.to_owned();
        cfg.clock = c;
    })
    .await;
    let t2 = Two { gw, clock: t.clock.clone(), a: t.a, b: t.b };
    t2.gw.clear_cooldowns().await;
    assert_eq!(t2.send("claude-sonnet-4-6", None).await, "key-a", "priority order without a session");
    assert_eq!(t2.send("claude-sonnet-4-6", Some("s-1")).await, "key-b", "the pin came back from disk");
}

#[tokio::test]
async fn claude_code_body_sessions_and_responses_prompt_cache_keys_pin_too() {
    let t = two(&format!("{TTL}{ROUND_ROBIN}")).await;
    let user_id =
        json!({"device_id": "dev", "account_uuid": "acct", "session_id": "cc-session-1"}).to_string();
    let mut served = Vec::new();
    for _ in 0..4 {
        let mut body = messages("team");
        body["metadata"] = json!({"user_id": user_id});
        let response = t.gw.post("/v1/messages", &body).await;
        assert_eq!(response.status(), 200);
        served.push(response.headers()["x-switchyard-connection"].to_str().unwrap_or_default().to_owned());
    }
    assert_eq!(distinct(&served), 1, "{served:?}");

    // Codex: the Responses API's prompt_cache_key, over two OpenAI connections.
    let reply = Reply::json(200, wire::responses_json("gpt-5", "ok"));
    let (x, y) = (FakeUpstream::start(reply.clone()).await, FakeUpstream::start(reply).await);
    let mut config = client_key_toml();
    for (id, fake) in [("o1", &x), ("o2", &y)] {
        config.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"openai\"\napi_format = \"openai\"\napi_key = \"sk-{id}\"\nbase_url = \"{}\"\n",
            fake.url()
        ));
    }
    config.push_str(&format!(
        "{TTL}\n[[combos]]\nname = \"codex\"\nstrategy = \"round-robin\"\ntargets = [\"openai/gpt-5\"]\n"
    ));
    let gw = TestGateway::start(&config).await;
    let mut served = Vec::new();
    for _ in 0..4 {
        let body = json!({"model": "codex", "input": "hi", "prompt_cache_key": "conv-7", "stream": false});
        let response = gw.post("/v1/responses", &body).await;
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
        served.push(response.headers()["x-switchyard-connection"].to_str().unwrap_or_default().to_owned());
    }
    assert_eq!(distinct(&served), 1, "{served:?}");
    let mut rotating = Vec::new();
    for _ in 0..4 {
        let response = gw.post("/v1/responses", &json!({"model": "codex", "input": "hi"})).await;
        rotating.push(response.headers()["x-switchyard-connection"].to_str().unwrap_or_default().to_owned());
    }
    assert_eq!(distinct(&rotating), 2, "no key, no pin: {rotating:?}");
}

#[tokio::test]
async fn deleting_a_connection_forgets_its_pins() {
    let t = two(TTL).await;
    t.a.push(Reply::json(503, wire::anthropic_error("overloaded_error", "busy")));
    assert_eq!(t.send("claude-sonnet-4-6", Some("s-1")).await, "key-b");
    assert_eq!(t.gw.mgmt_json("/api/sessions").await["pins"].as_array().map(Vec::len), Some(1));
    let deleted =
        t.gw.mgmt(reqwest::Method::DELETE, "/api/providers/key-b")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    assert!(deleted.status().is_success());
    assert_eq!(t.gw.mgmt_json("/api/sessions").await["pins"], json!([]));
}
