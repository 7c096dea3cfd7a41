//! The agent's view of the request log (issue 13): one entry per client request
//! with the outcome the agent received, counted apart from upstream attempts (a
//! failover the agent never saw is "served after failover", not an error), each
//! request's attempts and why it went where it went, requests the gateway refused
//! without any attempt, and filters.

use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Hold, Reply, wire};
use switchyard_tests::{TestGateway, two_anthropic_keys};

fn request(model: &str) -> Value {
    json!({"model": model, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
}

async fn requests(gw: &TestGateway, query: &str, n: usize) -> Vec<Value> {
    for _ in 0..400 {
        let rows = gw.mgmt_json(&format!("/api/requests{query}")).await;
        let rows = rows.as_array().cloned().unwrap_or_default();
        if rows.len() >= n {
            return rows;
        }
        // Polling the log writer's background flush, not waiting out a duration.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("never {n} requests for {query}");
}

#[tokio::test]
async fn a_failover_the_agent_never_saw_is_one_served_request_with_two_attempts_and_its_route() {
    let a = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "a"))).await;
    a.push(Reply::json(503, wire::anthropic_error("overloaded_error", "busy")));
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "b"))).await;
    let gw = TestGateway::start(&two_anthropic_keys(&a.url(), &b.url())).await;
    let model = "anthropic/claude-sonnet-4-6";
    assert_eq!(gw.post("/v1/messages", &request(model)).await.status(), 200, "key-a 503 → key-b");
    // key-a cools after its 503: the next three go to key-b directly.
    for _ in 0..3 {
        assert_eq!(gw.post("/v1/messages", &request(model)).await.status(), 200);
    }
    let rows = requests(&gw, "", 4).await;
    let first = &rows[3];
    assert_eq!(first["outcome"], "served-after-failover", "{first}");
    assert_eq!(
        (&first["status"], &first["attempts"], &first["connection"]),
        (&json!(200), &json!(2), &json!("key-b"))
    );
    assert_eq!(first["model"], model);
    assert!(rows[..3].iter().all(|r| r["outcome"] == "served" && r["attempts"] == 1), "{rows:?}");

    let detail =
        gw.mgmt_json(&format!("/api/requests/{}", first["requestId"].as_str().unwrap_or_default())).await;
    let attempts: Vec<(String, Value)> = detail["attempts"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|a| (a["connectionId"].as_str().unwrap_or_default().to_owned(), a["status"].clone()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(attempts, [("key-a".to_owned(), json!(503)), ("key-b".to_owned(), json!(200))]);
    let route = &detail["route"];
    assert_eq!(route["strategy"], "priority");
    let fates: Vec<(&str, &str, Value)> = route["candidates"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|c| {
                    (
                        c["connection"].as_str().unwrap_or_default(),
                        c["fate"].as_str().unwrap_or_default(),
                        c["rank"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(fates, [("key-a", "failed", json!(1)), ("key-b", "served", json!(2))]);
    assert!(route["candidates"][0]["reason"].as_str().is_some_and(|r| r.contains("503")), "{route}");

    // The second request: key-a excluded, with its reason in words.
    let second =
        gw.mgmt_json(&format!("/api/requests/{}", rows[2]["requestId"].as_str().unwrap_or_default())).await;
    let a_then = &second["route"]["candidates"][0];
    assert_eq!((&a_then["fate"], &a_then["rank"]), (&json!("excluded"), &Value::Null), "{second}");
    assert!(a_then["reason"].as_str().is_some_and(|r| r.contains("connection cooling down")), "{second}");

    let summary = gw.mgmt_json("/api/monitoring/summary").await;
    assert_eq!(
        summary["clientsLastHour"],
        json!({"requests": 4, "served": 3, "servedAfterFailover": 1, "errors": 0, "attempts": 5, "failedAttempts": 1}),
        "four agent requests, all served, one failover absorbed: {summary}"
    );
    assert_eq!((&summary["attemptsLastHour"], &summary["failedAttemptsLastHour"]), (&json!(5), &json!(1)));
}

#[tokio::test]
async fn requests_refused_without_any_attempt_are_in_the_log_and_the_filters_find_them() {
    let a = FakeUpstream::start(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))
            .with_header("retry-after", "60"),
    )
    .await;
    let b = FakeUpstream::start(
        Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))
            .with_header("retry-after", "60"),
    )
    .await;
    let gw = TestGateway::start(&two_anthropic_keys(&a.url(), &b.url())).await;
    let model = "anthropic/claude-sonnet-4-6";
    assert_eq!(gw.post("/v1/messages", &request(model)).await.status(), 429, "both rate limited");
    assert_eq!(gw.post("/v1/messages", &request(model)).await.status(), 503, "both cooling: refused");
    assert_eq!(gw.post("/v1/messages", &request("nope/x")).await.status(), 404);
    let unauthenticated = gw
        .http
        .post(gw.url("/v1/messages"))
        .bearer_auth("sy-wrong-key-000000000")
        .json(&request(model))
        .send()
        .await;
    assert_eq!(unauthenticated.map(|r| r.status().as_u16()).ok(), Some(401));
    let rows = requests(&gw, "", 4).await;
    let outcomes: Vec<(&str, u64, u64, Option<&str>)> = rows
        .iter()
        .map(|r| {
            (
                r["outcome"].as_str().unwrap_or_default(),
                r["status"].as_u64().unwrap_or_default(),
                r["attempts"].as_u64().unwrap_or(9),
                r["errorCode"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("refused-by-gateway", 401, 0, Some("authentication_error")),
            ("refused-by-gateway", 404, 0, Some("model_not_found")),
            ("refused-by-gateway", 503, 0, Some("all_targets_cooling_down")),
            ("failed", 429, 2, Some("all_attempts_rate_limited")),
        ]
    );
    assert!(rows[2]["apiKeyId"].is_string(), "the key that sent it");
    assert_eq!(rows[1]["model"], "nope/x", "a request refused for its model names it");
    assert_eq!(rows[2]["model"], model);
    let refused =
        gw.mgmt_json(&format!("/api/requests/{}", rows[2]["requestId"].as_str().unwrap_or_default())).await;
    assert_eq!(refused["attempts"], json!([]));
    assert!(
        refused["route"]["candidates"]
            .as_array()
            .is_some_and(|l| l.len() == 2 && l.iter().all(|c| c["fate"] == "excluded")),
        "{refused}"
    );
    // Filters.
    assert_eq!(requests(&gw, "?status=error", 4).await.len(), 4);
    let ok = gw.mgmt_json("/api/requests?status=ok").await;
    assert_eq!(ok, json!([]), "none of them was served");
    assert_eq!(requests(&gw, "?status=503", 1).await.len(), 1);
    assert_eq!(requests(&gw, &format!("?model={model}"), 2).await.len(), 2);
    assert_eq!(requests(&gw, "?connection=key-b", 1).await.len(), 1, "the failed request last tried key-b");
    let keyed = requests(&gw, &format!("?key={}", rows[2]["apiKeyId"].as_str().unwrap_or_default()), 3).await;
    assert_eq!(keyed.len(), 3, "the 401 has no key");
    assert_eq!(rows[1]["model"], "nope/x", "a refused request keeps the model it named");
    let paged =
        requests(&gw, &format!("?limit=2&before={}", rows[1]["requestId"].as_str().unwrap_or_default()), 2)
            .await;
    assert_eq!(paged.iter().map(|r| r["status"].clone()).collect::<Vec<_>>(), [json!(503), json!(429)]);
    let bad = gw.mgmt(reqwest::Method::GET, "/api/requests?status=sometimes").send().await;
    assert_eq!(bad.map(|r| r.status().as_u16()).ok(), Some(400));
    let missing = gw.mgmt(reqwest::Method::GET, "/api/requests/unknown-id").send().await;
    assert_eq!(missing.map(|r| r.status().as_u16()).ok(), Some(404));
    let summary = gw.mgmt_json("/api/monitoring/summary").await;
    assert_eq!(summary["clientsLastHour"]["errors"], 4);
    assert_eq!(summary["clientsLastHour"]["requests"], 4);
}

#[tokio::test]
async fn a_request_the_client_gave_up_on_is_logged_as_cancelled() {
    let hold = Hold::new();
    let a = FakeUpstream::start(
        Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "late")).held(&hold),
    )
    .await;
    let b = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "b"))).await;
    let gw = TestGateway::start(&two_anthropic_keys(&a.url(), &b.url())).await;
    let request = gw
        .http
        .post(gw.url("/v1/messages"))
        .bearer_auth(switchyard_tests::CLIENT_KEY)
        .json(&request("anthropic/claude-sonnet-4-6"))
        .send();
    let sent = tokio::spawn(request);
    assert!(a.wait_until(std::time::Duration::from_secs(5), |u| u.in_flight() == 1).await);
    // The agent gives up (Esc) while the upstream is still thinking.
    sent.abort();
    let rows = requests(&gw, "", 1).await;
    assert_eq!((&rows[0]["outcome"], &rows[0]["status"]), (&json!("cancelled"), &json!(499)), "{rows:?}");
    assert_eq!(rows[0]["model"], "anthropic/claude-sonnet-4-6");
    hold.open();
}

/// Issue 13's gap, closed with issue 14's parsers: every attempt row carries the
/// tokens its upstream reported, streamed or whole, relayed or translated, in
/// Anthropic's meaning (input without cached tokens).
#[tokio::test]
async fn attempts_carry_the_tokens_their_upstream_reported() {
    let up = FakeUpstream::start(Reply::sse(wire::anthropic_sse("m", "hi"))).await;
    let chat = FakeUpstream::start(Reply::json(
        200,
        json!({"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 64}}}),
    ))
    .await;
    let config = format!(
        "{}\n[[connections]]\nid = \"glm-key\"\nprovider = \"glm\"\napi_format = \"openai-chat\"\napi_key = \"sk-g\"\nbase_url = \"{}/v1\"\n",
        two_anthropic_keys(&up.url(), &up.url()),
        chat.url()
    );
    let gw = TestGateway::start(&config).await;
    // A same-format Messages stream (usage in message_start and message_delta).
    let streamed = gw
        .post("/v1/messages", &json!({"model": "anthropic/m", "max_tokens": 5, "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .await;
    let _ = streamed.text().await;
    // A same-format Chat answer, whole.
    let _ = gw
        .post(
            "/v1/chat/completions",
            &json!({"model": "glm/m", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await
        .text()
        .await;
    // The same Chat upstream for a Messages client (translated whole).
    let _ = gw
        .post(
            "/v1/messages",
            &json!({"model": "glm/m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await
        .text()
        .await;
    let rows = gw.wait_for_log_rows(3).await;
    let tokens: Vec<Value> = rows.iter().rev().map(|r| r["tokens"].clone()).collect();
    assert_eq!(
        tokens,
        [
            json!({"input": 12, "output": 5, "cacheRead": 0, "cacheWrite": 0}),
            json!({"input": 36, "output": 9, "cacheRead": 64, "cacheWrite": 0}),
            json!({"input": 36, "output": 9, "cacheRead": 64, "cacheWrite": 0}),
        ],
        "{rows:?}"
    );
}

/// `count` Anthropic key connections `key-1`… in priority order; the first `failing`
/// point at `bad`, the rest at `good`.
fn anthropic_pool(count: usize, failing: usize, bad: &str, good: &str) -> String {
    let mut toml = switchyard_tests::client_key_toml();
    for n in 1..=count {
        let url = if n <= failing { bad } else { good };
        toml.push_str(&format!(
            "\n[[connections]]\nid = \"key-{n}\"\nprovider = \"anthropic\"\napi_key = \"sk-{n}\"\n\
             base_url = \"{url}\"\npriority = {n}\n"
        ));
    }
    toml
}

fn fates(detail: &Value) -> Vec<(String, String, Value)> {
    detail["route"]["candidates"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
                    (s("connection"), s("fate"), c["rank"].clone())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Issue 16: a pool is judged a few candidates at a time in priority order, so a
/// request the first candidates serve never judges the rest; a failover runs past
/// the first few judged into the next ones, ranked on from where they stopped, and
/// a breaker the request's own failures open does not stop it.
#[tokio::test]
async fn a_pool_is_judged_a_few_at_a_time_and_a_failover_runs_on_past_them() {
    let bad = FakeUpstream::start(Reply::json(503, wire::anthropic_error("overloaded_error", "busy"))).await;
    let good =
        FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "ok"))).await;
    let gw = TestGateway::start(&anthropic_pool(20, 10, &bad.url(), &good.url())).await;
    let model = "anthropic/claude-sonnet-4-6";
    assert_eq!(gw.post("/v1/messages", &request(model)).await.status(), 200, "key-11 serves");
    let rows = requests(&gw, "", 1).await;
    assert_eq!((&rows[0]["attempts"], &rows[0]["connection"]), (&json!(11), &json!("key-11")), "{rows:?}");
    let detail =
        gw.mgmt_json(&format!("/api/requests/{}", rows[0]["requestId"].as_str().unwrap_or_default())).await;
    let mut expected: Vec<(String, String, Value)> =
        (1..=10).map(|n| (format!("key-{n}"), "failed".to_owned(), json!(n))).collect();
    expected.push(("key-11".to_owned(), "served".to_owned(), json!(11)));
    // Judged eight at a time: key-9..key-16 came with the second step (ranked on
    // from 9); key-17 on were never judged. Eight of the nine never reached are listed.
    expected.extend((12..=16).map(|n| (format!("key-{n}"), "not-reached".to_owned(), json!(n))));
    expected.extend((17..=19).map(|n| (format!("key-{n}"), "not-reached".to_owned(), Value::Null)));
    assert_eq!(fates(&detail), expected, "{detail}");

    // Now key-1..key-10 cool down: the next request is served by key-11 at once,
    // with the ten judged as excluded on the way and the rest never judged.
    assert_eq!(gw.post("/v1/messages", &request(model)).await.status(), 200);
    let rows = requests(&gw, "", 2).await;
    assert_eq!((&rows[0]["attempts"], &rows[0]["connection"]), (&json!(1), &json!("key-11")), "{rows:?}");
    let detail =
        gw.mgmt_json(&format!("/api/requests/{}", rows[0]["requestId"].as_str().unwrap_or_default())).await;
    let fates = fates(&detail);
    assert!(fates[..10].iter().all(|(_, fate, rank)| fate == "excluded" && rank.is_null()), "{detail}");
    assert_eq!(fates[10], ("key-11".to_owned(), "served".to_owned(), json!(1)), "{detail}");
    // Served by its first attempt: the candidates nothing happened to are counted,
    // not listed (issue 16: a pool's request log row stays the size of what happened).
    assert_eq!(fates.len(), 11, "{detail}");
    let notes = detail["route"]["notes"].as_array().cloned().unwrap_or_default();
    assert!(
        notes.iter().any(|n| n.as_str() == Some("9 more candidate(s) were not needed and are not listed")),
        "{detail}"
    );
}
