//! Flow control end to end (issue 11, SPEC §4.6): concurrency caps per connection
//! and per model, the request queue (depth, wait budget, execution bound), quota
//! sharing between client keys, and that none of it is ever held against a
//! connection. Fake upstreams hold requests until the test lets them through and
//! count how many they hold at once; budgets run on a manual clock.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Hold, Reply, wire};
use switchyard_tests::{CLIENT_KEY, TestGateway, client_key_toml};
use switchyard_types::UnixMillis;

const NOW: i64 = 1_900_000_000_000;

fn ok_reply() -> Reply {
    Reply::json(200, wire::chat_completion("m", "pong"))
}

/// One OpenAI-compatible connection `c1` (provider `pa`) at `url`, with `extra`
/// TOML lines in its table, and `tail` appended (settings, more keys).
fn one_connection(url: &str, extra: &str, tail: &str) -> String {
    format!(
        "{keys}\n[[connections]]\nid = \"c1\"\nprovider = \"pa\"\napi_format = \"openai\"\napi_key = \"sk-1\"\n\
         base_url = \"{url}\"\n{extra}\n{tail}",
        keys = client_key_toml()
    )
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

async fn manual(config: &str) -> (TestGateway, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(UnixMillis(NOW)));
    let c = clock.clone();
    let gw = TestGateway::start_with(config, move |cfg| cfg.clock = c).await;
    (gw, clock)
}

/// `GET /api/rate-limits`, the entry of connection `id`.
async fn flow_of(gw: &TestGateway, id: &str) -> Value {
    let all = gw.mgmt_json("/api/rate-limits").await;
    all["connections"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["connectionId"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("no flow entry for {id}: {all}"))
}

/// Polls (real time) until `cond` holds for connection `id`'s live flow entry.
async fn until_flow(gw: &TestGateway, id: &str, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let flow = flow_of(gw, id).await;
        if cond(&flow) {
            return flow;
        }
        // Polling the gateway's live counters, not waiting out a duration.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id}: never {what}: {}", flow_of(gw, id).await);
}

async fn status_and_body(handle: tokio::task::JoinHandle<reqwest::Response>) -> (u16, Value) {
    let response = tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .unwrap_or_else(|_| panic!("no answer within 10 s"))
        .unwrap_or_else(|e| panic!("{e}"));
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

#[tokio::test]
async fn a_cap_of_two_never_lets_more_than_two_through_and_all_six_succeed() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let gw = TestGateway::start(&one_connection(&upstream.url(), "max_concurrent = 2", "")).await;
    let requests: Vec<_> =
        (0..6).map(|_| gw.post_in_background("/v1/chat/completions", &chat("pa/m"))).collect();
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 2).await);
    let flow = until_flow(&gw, "c1", "4 queued", |f| f["queued"] == 4).await;
    assert_eq!(flow["gate"], json!({"cap": 2, "inFlight": 2, "queued": 4}), "{flow}");
    assert_eq!(flow["inFlight"], 2);
    // Let them through one at a time: each freed slot admits exactly one more.
    for done in 1..=4 {
        hold.release(1);
        assert!(upstream.wait_until(Duration::from_secs(5), |u| u.calls() == 2 + done).await);
    }
    hold.open();
    for request in requests {
        let (status, body) = status_and_body(request).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(upstream.max_in_flight(), 2);
    assert_eq!(upstream.calls(), 6);
    let flow = flow_of(&gw, "c1").await;
    assert_eq!((flow["inFlight"].as_u64(), flow["queued"].as_u64()), (Some(0), Some(0)), "{flow}");
}

#[tokio::test]
async fn a_model_cap_holds_for_that_model_only() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let extra = "[connections.rate_limit_overrides]\nmodel_concurrency = { \"glm-5\" = 1 }";
    let gw = TestGateway::start(&one_connection(&upstream.url(), extra, "")).await;
    let capped: Vec<_> =
        (0..3).map(|_| gw.post_in_background("/v1/chat/completions", &chat("pa/glm-5"))).collect();
    let free: Vec<_> =
        (0..2).map(|_| gw.post_in_background("/v1/chat/completions", &chat("pa/glm-4.6"))).collect();
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.calls() == 3).await);
    let flow = until_flow(&gw, "c1", "2 queued", |f| f["queued"] == 2).await;
    assert_eq!(flow["models"], json!([{"model": "glm-5", "gate": {"cap": 1, "inFlight": 1, "queued": 2}}]));
    let models: Vec<String> = upstream
        .requests()
        .iter()
        .map(|r| r.json()["model"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(models.iter().filter(|m| *m == "glm-5").count(), 1, "{models:?}");
    assert_eq!(models.iter().filter(|m| *m == "glm-4.6").count(), 2, "{models:?}");
    hold.open();
    for request in capped.into_iter().chain(free) {
        assert_eq!(status_and_body(request).await.0, 200);
    }
}

// settings-test: /requestQueue/maxQueueDepth
#[tokio::test]
async fn a_full_queue_refuses_at_once_and_sends_nothing_upstream() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let config = one_connection(
        &upstream.url(),
        "max_concurrent = 1",
        "[resilience.requestQueue]\nmaxQueueDepth = 1\n",
    );
    let gw = TestGateway::start(&config).await;
    let first = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let second = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    until_flow(&gw, "c1", "1 queued", |f| f["queued"] == 1).await;
    let third = gw.post("/v1/chat/completions", &chat("pa/m")).await;
    assert_eq!(third.status(), 429);
    assert_eq!(
        third.headers().get("x-switchyard-error").and_then(|v| v.to_str().ok()),
        Some("RATE_LIMIT_QUEUE_FULL")
    );
    let body: Value = third.json().await.unwrap_or_default();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("maxQueueDepth = 1") && message.contains("connection 'c1'"), "{body}");
    assert_eq!(upstream.calls(), 1, "the refused request reached the upstream");
    hold.open();
    assert_eq!(status_and_body(first).await.0, 200);
    assert_eq!(status_and_body(second).await.0, 200);
    assert_eq!(upstream.calls(), 2);
}

#[tokio::test]
async fn a_wait_over_the_budget_times_out_upstream_untouched_and_the_connection_unharmed() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let extra = "max_concurrent = 1\n[connections.rate_limit_overrides]\nmax_wait_ms = 5000";
    let (gw, clock) = manual(&one_connection(&upstream.url(), extra, "")).await;
    let first = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let second = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    let flow = until_flow(&gw, "c1", "1 queued", |f| f["queued"] == 1).await;
    assert_eq!(flow["maxWaitMs"], 5000, "the connection's override is in force");
    clock.advance(Duration::from_millis(4_999));
    assert_eq!(flow_of(&gw, "c1").await["queued"], 1, "still waiting at 4.999 s");
    clock.advance(Duration::from_millis(1));
    let (status, body) = status_and_body(second).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMIT_QUEUE_TIMEOUT", "{body}");
    assert_eq!(upstream.calls(), 1);
    // A full gate is nobody's failure: no cooldown, breaker closed, no lockout.
    let state = gw.cooldown_of("c1").await;
    assert_eq!((state["status"].as_str(), state["lastError"].as_str()), (Some("active"), None), "{state}");
    let breakers = gw.mgmt_json("/api/resilience/breakers").await;
    let closed = |b: &Value| b["state"] == "CLOSED" && b["failureCount"] == 0;
    assert!(breakers.as_array().is_some_and(|b| b.iter().all(closed)), "{breakers}");
    assert_eq!(gw.mgmt_json("/api/resilience/model-cooldowns").await, json!([]));
    hold.open();
    assert_eq!(status_and_body(first).await.0, 200);
}

#[tokio::test]
async fn execution_over_its_bound_is_a_504_that_cools_nothing() {
    let upstream = FakeUpstream::start(Reply::Silent).await;
    let extra = "[connections.rate_limit_overrides]\nexecution_max_wait_ms = 20000";
    let (gw, clock) = manual(&one_connection(&upstream.url(), extra, "")).await;
    let request = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.calls() == 1).await);
    clock.advance(Duration::from_millis(20_000));
    let (status, body) = status_and_body(request).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "RATE_LIMIT_EXECUTION_TIMEOUT", "{body}");
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("20000 ms"), "{body}");
    assert_eq!(upstream.calls(), 1, "no failover, no retry");
    assert_eq!(gw.cooldown_of("c1").await["status"], "active");
}

/// Connections `c1` and `c2` of provider `pa` and `d1` of provider `pb`, all at `url`.
fn two_providers(url: &str) -> String {
    let mut config = client_key_toml();
    for (id, provider) in [("c1", "pa"), ("c2", "pa"), ("d1", "pb")] {
        config.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"{provider}\"\napi_format = \"openai\"\n\
             api_key = \"sk-{id}\"\nbase_url = \"{url}\"\n"
        ));
    }
    config
}

// settings-test: /requestQueue/globalConcurrentRequests
#[tokio::test]
async fn the_global_cap_holds_across_providers_and_times_out_in_line() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let (gw, clock) = manual(&two_providers(&upstream.url())).await;
    gw.patch_settings(&json!({"requestQueue": {"globalConcurrentRequests": 1, "maxWaitMs": 4000}})).await;
    let first = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    // Another provider, another connection: still over the gateway's cap.
    let second = gw.post_in_background("/v1/chat/completions", &chat("pb/m"));
    let global = until_global(&gw, |g| g["queued"] == 1).await;
    assert_eq!((global["cap"].as_u64(), global["inFlight"].as_u64()), (Some(1), Some(1)), "{global}");
    assert_eq!(upstream.calls(), 1);
    hold.release(1);
    assert_eq!(status_and_body(first).await.0, 200);
    hold.open();
    assert_eq!(status_and_body(second).await.0, 200);
    assert_eq!(upstream.max_in_flight(), 1, "never more than one upstream request at once");

    // A wait over maxWaitMs: SEMAPHORE_TIMEOUT, nothing upstream.
    let hold = Hold::new();
    upstream.set_default(ok_reply().held(&hold));
    let calls = upstream.calls();
    let first = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let second = gw.post_in_background("/v1/chat/completions", &chat("pb/m"));
    until_global(&gw, |g| g["queued"] == 1).await;
    clock.advance(Duration::from_millis(4_000));
    let (status, body) = status_and_body(second).await;
    assert_eq!((status, body["error"]["code"].as_str()), (429, Some("SEMAPHORE_TIMEOUT")), "{body}");
    assert_eq!(upstream.calls(), calls + 1);
    hold.open();
    assert_eq!(status_and_body(first).await.0, 200);
    // Uncapped again: no global gate at all.
    gw.patch_settings(&json!({"requestQueue": {"globalConcurrentRequests": 0}})).await;
    assert_eq!(gw.mgmt_json("/api/rate-limits").await["global"], Value::Null);
}

#[tokio::test]
async fn the_global_cap_holds_for_a_whole_stream_and_a_waiter_holds_no_shared_slot() {
    let upstream = FakeUpstream::start(ok_reply()).await;
    let (reply, feed) = Reply::live();
    upstream.push(reply);
    let (gw, _clock) = manual(&two_providers(&upstream.url())).await;
    gw.patch_settings(&json!({"requestQueue": {"globalConcurrentRequests": 1}})).await;
    // A stream holds the gateway's only slot from its first event to its last byte.
    assert!(feed.send("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"));
    let stream =
        gw.post("/v1/chat/completions", &json!({"model": "pa/m", "stream": true, "messages": []})).await;
    assert_eq!(stream.status(), 200);
    let global = until_global(&gw, |g| g["inFlight"] == 1).await;
    assert_eq!(global["cap"], 1, "{global}");
    let second = gw.post_in_background("/v1/chat/completions", &chat("pb/m"));
    until_global(&gw, |g| g["queued"] == 1).await;
    assert_eq!(upstream.calls(), 1, "the second waits while the stream runs");
    assert!(feed.send("data: [DONE]\n\n"));
    drop(feed);
    let body = stream.text().await.unwrap_or_default();
    assert!(body.contains("[DONE]"), "{body}");
    assert_eq!(status_and_body(second).await.0, 200);
    assert_eq!(upstream.max_in_flight(), 1);
}

#[tokio::test]
async fn a_request_waiting_for_its_busy_connection_does_not_block_an_idle_sibling() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let config =
        two_providers(&upstream.url()).replacen("id = \"c1\"\n", "id = \"c1\"\nmax_concurrent = 1\n", 1);
    // Client keys that may use only c1, or only c2.
    let keys = "\n[[api_keys]]\nname = \"only-c1\"\nkey = \"sy-test-only-c1-0001\"\nallowed_connections = [\"c1\"]\n\
                \n[[api_keys]]\nname = \"only-c2\"\nkey = \"sy-test-only-c2-0001\"\nallowed_connections = [\"c2\"]\n";
    let gw = TestGateway::start(&format!("{config}{keys}\n[resilience.providerConcurrency]\npa = 2\n")).await;
    let send = |key: &'static str| {
        let request = gw.http.post(gw.url("/v1/chat/completions")).bearer_auth(key).json(&chat("pa/m"));
        tokio::spawn(async move { request.send().await.unwrap_or_else(|e| panic!("{e}")) })
    };
    // c1 (cap 1) busy; a second request only c1 may serve waits for it…
    let first = send("sy-test-only-c1-0001");
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let waiting = send("sy-test-only-c1-0001");
    until_flow(&gw, "c1", "1 queued", |f| f["queued"] == 1).await;
    // …holding no provider slot: c2 still gets the provider's second one.
    let sibling = send("sy-test-only-c2-0001");
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 2).await, "c2 was blocked");
    hold.open();
    for handle in [first, waiting, sibling] {
        assert_eq!(status_and_body(handle).await.0, 200);
    }
}

/// Polls `GET /api/rate-limits` until the global gate satisfies `cond`.
async fn until_global(gw: &TestGateway, cond: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let global = gw.mgmt_json("/api/rate-limits").await["global"].clone();
        if cond(&global) {
            return global;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the global gate never got there: {}", gw.mgmt_json("/api/rate-limits").await);
}

// settings-test: /providerConcurrency /providerConcurrency/* /providerConcurrency/*/cap
#[tokio::test]
async fn a_provider_cap_holds_across_its_connections_only() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let gw = TestGateway::start(&two_providers(&upstream.url())).await;
    let bad = gw
        .mgmt(reqwest::Method::PATCH, "/api/resilience")
        .json(&json!({"providerConcurrency": {"pa": 0}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap_or_default().contains("/providerConcurrency/pa"));
    gw.patch_settings(&json!({"providerConcurrency": {"pa": 1}})).await;
    // Four requests for provider pa (two connections) and one for pb.
    let pa: Vec<_> = (0..4).map(|_| gw.post_in_background("/v1/chat/completions", &chat("pa/m"))).collect();
    let pb = gw.post_in_background("/v1/chat/completions", &chat("pb/m"));
    assert!(
        upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 2).await,
        "one pa and the pb request"
    );
    let view = gw.mgmt_json("/api/rate-limits").await;
    assert_eq!(
        view["providers"],
        json!([{"provider": "pa", "gate": {"cap": 1, "inFlight": 1, "queued": 3}}]),
        "{view}"
    );
    hold.open();
    for handle in pa {
        assert_eq!(status_and_body(handle).await.0, 200);
    }
    assert_eq!(status_and_body(pb).await.0, 200);
    assert_eq!(upstream.max_in_flight(), 2, "pa never had two at once");
}

// settings-test: /requestQueue/maxWaitMs
#[tokio::test]
async fn the_queue_wait_setting_bounds_connections_without_their_own() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let (gw, clock) = manual(&one_connection(&upstream.url(), "max_concurrent = 1", "")).await;
    gw.patch_settings(&json!({"requestQueue": {"maxWaitMs": 3000}})).await;
    let first = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let second = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    let flow = until_flow(&gw, "c1", "1 queued", |f| f["queued"] == 1).await;
    assert_eq!(flow["maxWaitMs"], 3000, "the setting is in force: {flow}");
    clock.advance(Duration::from_millis(2_999));
    assert_eq!(flow_of(&gw, "c1").await["queued"], 1, "still waiting at 2.999 s (the default is 30 s)");
    clock.advance(Duration::from_millis(1));
    let (status, body) = status_and_body(second).await;
    assert_eq!((status, body["error"]["code"].as_str()), (503, Some("RATE_LIMIT_QUEUE_TIMEOUT")), "{body}");
    assert_eq!(upstream.calls(), 1, "nothing over the wait reached the upstream");
    hold.open();
    assert_eq!(status_and_body(first).await.0, 200);
}

// settings-test: /requestQueue/executionMaxWaitMs
#[tokio::test]
async fn the_execution_bound_setting_applies_to_connections_without_their_own() {
    let upstream = FakeUpstream::start(Reply::Silent).await;
    let (gw, clock) = manual(&one_connection(&upstream.url(), "", "")).await;
    gw.patch_settings(&json!({"requestQueue": {"executionMaxWaitMs": 8000}})).await;
    assert_eq!(flow_of(&gw, "c1").await["executionMaxWaitMs"], 8000);
    let request = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.calls() == 1).await);
    clock.advance(Duration::from_millis(8_000));
    let (status, body) = status_and_body(request).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (504, Some("RATE_LIMIT_EXECUTION_TIMEOUT")),
        "{body}"
    );
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("8000 ms"), "{body}");
}

// settings-test: /quotaShareConcurrencyLimit/enabled
#[tokio::test]
async fn two_client_keys_on_a_capped_account_are_serialised_or_refused_without_quota_share() {
    let hold = Hold::new();
    let upstream = FakeUpstream::start(ok_reply().held(&hold)).await;
    let second_key = "sy-test-client-key-0002";
    let tail = format!("[[api_keys]]\nname = \"script\"\nkey = \"{second_key}\"\n");
    let gw = TestGateway::start(&one_connection(&upstream.url(), "max_concurrent = 1", &tail)).await;
    let send = |key: &'static str| {
        let request = gw.http.post(gw.url("/v1/chat/completions")).bearer_auth(key).json(&chat("pa/m"));
        tokio::spawn(async move { request.send().await.unwrap_or_else(|e| panic!("{e}")) })
    };
    let ide = send(CLIENT_KEY);
    let script = send("sy-test-client-key-0002");
    until_flow(&gw, "c1", "one running, one queued", |f| f["inFlight"] == 1 && f["queued"] == 1).await;
    // The slot is taken before the request reaches the upstream: wait for it there.
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    hold.open();
    assert_eq!(status_and_body(ide).await.0, 200);
    assert_eq!(status_and_body(script).await.0, 200);
    assert_eq!(upstream.max_in_flight(), 1);

    // With quota-share serialisation off, the request over the cap is refused.
    let response = gw
        .mgmt(reqwest::Method::PATCH, "/api/resilience")
        .json(&json!({"quotaShareConcurrencyLimit": {"enabled": false}}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    let hold = Hold::new();
    upstream.set_default(ok_reply().held(&hold));
    let ide = send(CLIENT_KEY);
    assert!(upstream.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let (status, body) = status_and_body(send("sy-test-client-key-0002")).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "SEMAPHORE_QUEUE_FULL", "{body}");
    hold.open();
    assert_eq!(status_and_body(ide).await.0, 200);
    assert_eq!(upstream.max_in_flight(), 1);
}

#[tokio::test]
async fn a_full_connection_spills_over_to_a_free_one_instead_of_waiting() {
    let hold = Hold::new();
    let a = FakeUpstream::start(ok_reply().held(&hold)).await;
    let b = FakeUpstream::start(ok_reply()).await;
    let mut config = client_key_toml();
    for (id, url, priority, cap) in [("a", a.url(), 1, "max_concurrent = 1"), ("b", b.url(), 2, "")] {
        config.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"pa\"\napi_format = \"openai\"\napi_key = \"sk\"\n\
             base_url = \"{url}\"\npriority = {priority}\n{cap}\n"
        ));
    }
    let gw = TestGateway::start(&config).await;
    let held = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(a.wait_until(Duration::from_secs(5), |u| u.in_flight() == 1).await);
    for _ in 0..3 {
        let response = gw.post("/v1/chat/completions", &chat("pa/m")).await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers().get("x-switchyard-connection").and_then(|v| v.to_str().ok()),
            Some("b")
        );
    }
    assert_eq!((a.calls(), b.calls()), (1, 3));
    hold.open();
    assert_eq!(status_and_body(held).await.0, 200);
}

mod protection {
    //! Rate-limit protection (SPEC §4.6): an API-key connection (by default) or one
    //! forced on paces its queue by a short retry hint in the upstream's error body
    //! instead of being cooled, and a long one locks just the model. (A `Retry-After`
    //! header cools the connection as always: `tests/tests/resilience.rs`.)

    use std::time::Duration;

    use serde_json::json;
    use switchyard_testkit::{FakeUpstream, Reply};

    use super::{chat, flow_of, manual, ok_reply, one_connection, status_and_body, until_flow};

    /// A 429 whose retry hint is in the body (as Gemini's `RetryInfo` puts it).
    fn rate_limited(retry_after_s: u32) -> Reply {
        Reply::json(
            429,
            json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "rate limited",
                "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{retry_after_s}s")}]}}),
        )
    }

    #[tokio::test]
    async fn a_protected_key_waits_out_a_short_hint_instead_of_cooling() {
        let upstream = FakeUpstream::start(ok_reply()).await;
        upstream.push(rate_limited(2));
        let (gw, clock) = manual(&one_connection(&upstream.url(), "", "")).await;
        assert_eq!(
            flow_of(&gw, "c1").await["protected"],
            true,
            "API-key connections are protected by default"
        );
        let first = gw.post("/v1/chat/completions", &chat("pa/m")).await;
        assert_eq!(first.status(), 429, "the refused request itself is answered");
        let state = gw.cooldown_of("c1").await;
        assert_eq!(state["status"], "active", "paced, not cooled: {state}");
        let paced = flow_of(&gw, "c1").await;
        assert!(paced["pacedUntil"].is_number(), "{paced}");
        // The next request waits in the paced queue, nothing goes upstream early.
        let second = gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
        until_flow(&gw, "c1", "1 queued", |f| f["queued"] == 1).await;
        assert_eq!(upstream.calls(), 1);
        clock.advance(Duration::from_millis(2_000));
        let (status, body) = status_and_body(second).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(upstream.calls(), 2);
    }

    // settings-test: /requestQueue/autoEnableApiKeyProviders
    #[tokio::test]
    async fn without_protection_the_same_hint_cools_the_connection() {
        let upstream = FakeUpstream::start(ok_reply()).await;
        upstream.push(rate_limited(2));
        let tail = "[resilience.requestQueue]\nautoEnableApiKeyProviders = false\n";
        let (gw, _clock) = manual(&one_connection(&upstream.url(), "", tail)).await;
        assert_eq!(flow_of(&gw, "c1").await["protected"], false);
        assert_eq!(gw.post("/v1/chat/completions", &chat("pa/m")).await.status(), 429);
        assert_eq!(gw.cooldown_of("c1").await["status"], "unavailable");
        let second = gw.post("/v1/chat/completions", &chat("pa/m")).await;
        assert_eq!(second.status(), 503, "cooled out of rotation");
        assert_eq!(upstream.calls(), 1);
    }

    #[tokio::test]
    async fn a_long_hint_locks_the_model_on_that_connection_only() {
        let upstream = FakeUpstream::start(ok_reply()).await;
        upstream.push(rate_limited(7_200));
        let (gw, _clock) = manual(&one_connection(&upstream.url(), "", "")).await;
        assert_eq!(gw.post("/v1/chat/completions", &chat("pa/m")).await.status(), 429);
        let locks = gw.mgmt_json("/api/resilience/model-cooldowns").await;
        let lock = locks.as_array().and_then(|l| l.first()).cloned().unwrap_or_default();
        assert_eq!((lock["connection"].as_str(), lock["model"].as_str()), (Some("c1"), Some("m")), "{locks}");
        let left = lock["remainingMs"].as_u64().unwrap_or(0);
        assert!(
            (7_100_000..=7_200_000).contains(&left),
            "locked for the hinted two hours, not the lockout cap: {lock}"
        );
        assert_eq!(gw.cooldown_of("c1").await["status"], "active");
        assert_eq!(
            gw.post("/v1/chat/completions", &chat("pa/other")).await.status(),
            200,
            "other models still run"
        );
        assert_eq!(
            gw.post("/v1/chat/completions", &chat("pa/m")).await.status(),
            503,
            "the locked model does not"
        );
    }

    #[tokio::test]
    async fn post_rate_limits_forces_protection_on_and_off() {
        let upstream = FakeUpstream::start(ok_reply()).await;
        let tail = "[resilience.requestQueue]\nautoEnableApiKeyProviders = false\n";
        let (gw, _clock) = manual(&one_connection(&upstream.url(), "", tail)).await;
        let post =
            |body: serde_json::Value| gw.mgmt(reqwest::Method::POST, "/api/rate-limits").json(&body).send();
        let on = post(json!({"connectionId": "c1", "enabled": true})).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(on.status(), 200);
        let on: serde_json::Value = on.json().await.unwrap_or_default();
        assert_eq!(on, json!({"success": true, "connectionId": "c1", "enabled": true, "protected": true}));
        let flow = flow_of(&gw, "c1").await;
        assert_eq!(
            (flow["protected"].as_bool(), flow["protectionForced"].as_bool()),
            (Some(true), Some(true))
        );
        assert_eq!(gw.mgmt_json("/api/providers/c1").await["rateLimitProtection"], true);
        // Forced on, the short hint paces instead of cooling.
        upstream.push(rate_limited(2));
        assert_eq!(gw.post("/v1/chat/completions", &chat("pa/m")).await.status(), 429);
        assert_eq!(gw.cooldown_of("c1").await["status"], "active");
        let off =
            post(json!({"connectionId": "c1", "enabled": false})).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(off.status(), 200);
        assert_eq!(flow_of(&gw, "c1").await["protected"], false);
        let ghost =
            post(json!({"connectionId": "ghost", "enabled": true})).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ghost.status(), 404);
        let bad = post(json!({"connectionId": "c1"})).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bad.status(), 400);
    }
}
