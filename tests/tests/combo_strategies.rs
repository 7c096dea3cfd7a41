//! Combo strategies end to end (issue 11, SPEC §4.6): a combo over three
//! connections (providers `pa`, `pb`, `pc`, each its own fake upstream), created
//! through the management API, and the distribution each strategy gives to real
//! requests through the gateway. Nested combos and their validation too.

use std::time::Duration;

use serde_json::{Value, json};
use switchyard_gateway::clock::{Clock, SystemClock};
use switchyard_testkit::{FakeUpstream, Hold, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml};

const PROVIDERS: [&str; 3] = ["pa", "pb", "pc"];

fn ok_reply() -> Reply {
    Reply::json(200, wire::chat_completion("m", "pong"))
}

struct Three {
    gw: TestGateway,
    fakes: Vec<FakeUpstream>,
}

/// Three connections `a`, `b`, `c` (providers `pa`, `pb`, `pc`) with `extra` TOML
/// lines each.
async fn three(extra: &str) -> Three {
    let mut fakes = Vec::new();
    let mut config = client_key_toml();
    for provider in PROVIDERS {
        let fake = FakeUpstream::start(ok_reply()).await;
        let id = &provider[1..];
        config.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"{provider}\"\napi_format = \"openai\"\n\
             api_key = \"sk-{id}\"\nbase_url = \"{}\"\n{extra}\n",
            fake.url()
        ));
        fakes.push(fake);
    }
    Three { gw: TestGateway::start(&config).await, fakes }
}

impl Three {
    async fn combo(&self, name: &str, strategy: &str, weights: Option<[u32; 3]>) {
        let targets: Vec<Value> = PROVIDERS
            .iter()
            .enumerate()
            .map(|(i, p)| match weights {
                Some(w) => json!({"model": format!("{p}/m"), "weight": w[i]}),
                None => json!({"model": format!("{p}/m")}),
            })
            .collect();
        let response = self
            .gw
            .mgmt(reqwest::Method::POST, "/api/combos")
            .json(&json!({"name": name, "strategy": strategy, "targets": targets}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(response.status().is_success(), "{}", response.text().await.unwrap_or_default());
    }

    /// Sends `n` requests one after another; returns the calls each fake received.
    async fn send(&self, model: &str, n: usize) -> [usize; 3] {
        let before = self.calls();
        for _ in 0..n {
            let response = self.gw.post("/v1/chat/completions", &chat(model)).await;
            assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
        }
        let after = self.calls();
        [after[0] - before[0], after[1] - before[1], after[2] - before[2]]
    }

    fn calls(&self) -> [usize; 3] {
        [self.fakes[0].calls(), self.fakes[1].calls(), self.fakes[2].calls()]
    }
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn round_robin_is_even_random_uses_all_and_priority_stays_first() {
    let t = three("").await;
    t.combo("rr", "round-robin", None).await;
    t.combo("rand", "random", None).await;
    t.combo("prio", "priority", None).await;
    assert_eq!(t.send("rr", 30).await, [10, 10, 10]);
    let random = t.send("rand", 90).await;
    assert!(random.iter().all(|&n| n >= 10), "random must use every target: {random:?}");
    assert_eq!(t.send("prio", 5).await, [5, 0, 0]);
}

#[tokio::test]
async fn weighted_follows_the_weights_and_never_draws_weight_zero() {
    let t = three("").await;
    t.combo("w", "weighted", Some([6, 3, 1])).await;
    let counts = t.send("w", 200).await;
    // The gateway draws from the OS's random source, so the bands are five standard
    // deviations of each binomial (200 draws: 120 ± 35, 60 ± 32, 20 ± 21), which fail
    // about once in a million runs by chance; at 3.5 they failed CI once ([103, 84, 13]).
    // They still tell the weights apart from an even draw (~67 each).
    assert!((85..=155).contains(&counts[0]), "{counts:?}");
    assert!((28..=92).contains(&counts[1]), "{counts:?}");
    assert!((1..=41).contains(&counts[2]), "{counts:?}");
    t.combo("w0", "weighted", Some([0, 1, 1])).await;
    assert_eq!(t.send("w0", 30).await[0], 0);
}

#[tokio::test]
async fn fill_first_fills_the_first_until_capped() {
    let t = three("max_concurrent = 2").await;
    t.combo("ff", "fill-first", None).await;
    assert_eq!(t.send("ff", 4).await, [4, 0, 0], "one at a time, the first takes all");
    let hold = Hold::new();
    for fake in &t.fakes {
        fake.set_default(ok_reply().held(&hold));
    }
    let pending: Vec<_> =
        (0..5).map(|_| t.gw.post_in_background("/v1/chat/completions", &chat("ff"))).collect();
    let all_arrived = |f: &FakeUpstream| f.in_flight();
    for _ in 0..500 {
        if t.fakes.iter().map(all_arrived).sum::<usize>() == 5 {
            break;
        }
        // Polling the fakes' counters while the requests travel over loopback.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held: Vec<usize> = t.fakes.iter().map(FakeUpstream::in_flight).collect();
    assert_eq!(held, [2, 2, 1], "fill the first to its cap, then the next");
    hold.open();
    for p in pending {
        assert_eq!(p.await.unwrap_or_else(|e| panic!("{e}")).status(), 200);
    }
}

#[tokio::test]
async fn least_used_and_p2c_keep_away_from_the_busy_connection() {
    let t = three("").await;
    t.combo("lu", "least-used", None).await;
    t.combo("p2c", "p2c", None).await;
    // A long request keeps connection `a` busy.
    let hold = Hold::new();
    t.fakes[0].set_default(ok_reply().held(&hold));
    let busy = t.gw.post_in_background("/v1/chat/completions", &chat("pa/m"));
    assert!(t.fakes[0].wait_until(Duration::from_secs(5), |f| f.in_flight() == 1).await);
    let lu = t.send("lu", 10).await;
    assert_eq!(lu, [0, 5, 5], "least-used spreads over the idle ones by use: {lu:?}");
    let p2c = t.send("p2c", 30).await;
    assert_eq!(p2c[0], 0, "{p2c:?}");
    assert!(p2c[1] > 0 && p2c[2] > 0, "{p2c:?}");
    hold.open();
    assert_eq!(busy.await.unwrap_or_else(|e| panic!("{e}")).status(), 200);
}

#[tokio::test]
async fn reset_aware_prefers_the_soonest_announced_reset() {
    let t = three("").await;
    t.combo("ra", "reset-aware", None).await;
    // The gateway under test runs on the system clock; read it the same way.
    let now_s = u64::try_from(SystemClock.now_wall().0 / 1000).unwrap_or(0);
    t.fakes[0].set_default(
        ok_reply().with_header("anthropic-ratelimit-unified-reset", &(now_s + 7_200).to_string()),
    );
    t.fakes[1].set_default(ok_reply().with_header("x-ratelimit-reset-requests", "90s"));
    // Each account answers once, directly, and announces its reset (c announces none).
    for p in PROVIDERS {
        assert_eq!(t.gw.post("/v1/chat/completions", &chat(&format!("{p}/m"))).await.status(), 200);
    }
    assert_eq!(t.send("ra", 6).await, [0, 6, 0]);
}

#[tokio::test]
async fn combos_nest_and_cycles_or_referenced_deletes_are_refused() {
    let t = three("").await;
    let post = |doc: Value| t.gw.mgmt(reqwest::Method::POST, "/api/combos").json(&doc).send();
    let inner =
        json!({"name": "inner", "strategy": "priority", "targets": [{"model": "pb/m"}, {"model": "pc/m"}]});
    assert!(post(inner).await.unwrap_or_else(|e| panic!("{e}")).status().is_success());
    let outer = json!({"name": "outer", "strategy": "round-robin", "targets": [{"model": "pa/m"}, {"model": "inner"}]});
    assert!(post(outer).await.unwrap_or_else(|e| panic!("{e}")).status().is_success());
    // `outer` expands to a, b, c: round-robin over all three.
    assert_eq!(t.send("outer", 9).await, [3, 3, 3]);
    // inner → outer → inner would be a cycle.
    let cycle = json!({"name": "inner", "strategy": "priority", "targets": [{"model": "outer"}]});
    let response = post(cycle).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap_or_default();
    assert_eq!(body["error"]["issues"][0]["path"], "/targets/0/model", "{body}");
    assert!(body["error"]["issues"][0]["message"].as_str().unwrap_or_default().contains("cycle"), "{body}");
    let response =
        t.gw.mgmt(reqwest::Method::DELETE, "/api/combos/inner")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 409, "a combo another combo targets cannot go");
    // Bad weights are named.
    let heavy =
        json!({"name": "heavy", "strategy": "weighted", "targets": [{"model": "pa/m", "weight": 5000}]});
    let response = post(heavy).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap_or_default();
    assert_eq!(body["error"]["issues"][0]["path"], "/targets/0/weight", "{body}");
}

mod cooldown_wait {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{Value, json};
    use switchyard_gateway::clock::ManualClock;
    use switchyard_testkit::{FakeUpstream, Reply, wire};
    use switchyard_tests::{TestGateway, client_key_toml};
    use switchyard_types::UnixMillis;

    use super::{chat, ok_reply};

    /// One connection `a` behind combo `c` on a manual clock; `tail` appended.
    async fn start(fake: &FakeUpstream, tail: &str) -> (TestGateway, Arc<ManualClock>) {
        let config = format!(
            "{}\n[[connections]]\nid = \"a\"\nprovider = \"pa\"\napi_format = \"openai\"\napi_key = \"sk-a\"\n\
             base_url = \"{}\"\n\n[[combos]]\nname = \"c\"\ntargets = [\"pa/m\"]\n{tail}",
            client_key_toml(),
            fake.url()
        );
        let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
        let c = clock.clone();
        let gateway = TestGateway::start_with(&config, move |cfg| {
            cfg.clock = c;
            cfg.log_batch_interval = Some(LOG_BATCH_INTERVAL);
        })
        .await;
        (gateway, clock)
    }

    /// The request log's batch interval here: its timer runs on the same manual
    /// clock, and this keeps it past every cooldown wait these tests arm (they
    /// advance the clock by less than 50 s in all).
    const LOG_BATCH_INTERVAL: Duration = Duration::from_secs(60);

    /// Whether a timer on the manual clock is the gateway's cooldown wait: up to
    /// 10 s ahead (the log's batch timer is further out, see LOG_BATCH_INTERVAL).
    fn is_cooldown_wait(d: &Duration) -> bool {
        *d <= Duration::from_secs(10)
    }

    /// The gateway's cooldown wait as armed on the manual clock, polled in real time.
    async fn armed_wait(clock: &ManualClock) -> Duration {
        for _ in 0..500 {
            if let Some(d) = clock.pending_in().into_iter().find(is_cooldown_wait) {
                return d;
            }
            // Polling for the gateway's task to reach its wait.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the gateway never waited: {:?}", clock.pending_in());
    }

    #[tokio::test]
    async fn a_brief_rate_limit_is_waited_out_and_the_request_succeeds() {
        let fake = FakeUpstream::start(ok_reply()).await;
        fake.push(
            Reply::json(429, wire::openai_error("rate_limit_exceeded", "slow down"))
                .with_header("retry-after", "2"),
        );
        let (gw, clock) = start(&fake, "").await;
        let request = gw.post_in_background("/v1/chat/completions", &chat("c"));
        let wait = armed_wait(&clock).await;
        assert!(wait <= Duration::from_secs(3), "waits for the cooldown, {wait:?}");
        assert_eq!(fake.calls(), 1);
        clock.advance(wait);
        let response = request.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), 200);
        assert_eq!(fake.calls(), 2, "re-dispatched once the cooldown lapsed");
    }

    // settings-test: /comboCooldownWait/enabled
    #[tokio::test]
    async fn exhausted_quota_is_not_waited_for_and_a_disabled_wait_answers_at_once() {
        let fake = FakeUpstream::start(Reply::json(
            429,
            json!({"error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "You exceeded your current quota"}}),
        ))
        .await;
        let (gw, _clock) = start(&fake, "").await;
        let response = gw.post("/v1/chat/completions", &chat("c")).await;
        assert_eq!(response.status(), 429);
        assert_eq!(fake.calls(), 1, "no wait, no second dispatch");
        let body: Value = response.json().await.unwrap_or_default();
        assert_ne!(body["error"]["code"], "combo_rate_limited", "{body}");

        let fake = FakeUpstream::start(ok_reply()).await;
        fake.push(
            Reply::json(429, wire::openai_error("rate_limit_exceeded", "slow down"))
                .with_header("retry-after", "2"),
        );
        let (gw, _clock) = start(&fake, "[resilience.comboCooldownWait]\nenabled = false\n").await;
        let response = gw.post("/v1/chat/completions", &chat("c")).await;
        assert_eq!(response.status(), 429, "the 429 stands when the wait is off");
        assert_eq!(fake.calls(), 1);
    }

    /// A combo request against an upstream that always answers a 2 s rate limit:
    /// how many dispatches it makes before the wait gives up, and the final answer.
    async fn dispatches_until_refused(tail: &str) -> (usize, u16, Option<String>) {
        let limited = Reply::json(429, wire::openai_error("rate_limit_exceeded", "slow down"))
            .with_header("retry-after", "2");
        let fake = FakeUpstream::start(limited).await;
        let (gw, clock) = start(&fake, tail).await;
        let request = gw.post_in_background("/v1/chat/completions", &chat("c"));
        loop {
            let calls = fake.calls();
            let mut armed = None;
            // Real-time poll: either the gateway arms its next wait or it answers.
            for _ in 0..500 {
                armed = clock.pending_in().into_iter().find(is_cooldown_wait);
                if armed.is_some() || request.is_finished() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let Some(wait) = armed else { break };
            clock.advance(wait);
            assert!(fake.wait_until(Duration::from_secs(5), |f| f.calls() > calls).await, "no re-dispatch");
        }
        assert!(request.is_finished(), "neither waiting nor answered");
        let response = request.await.unwrap_or_else(|e| panic!("{e}"));
        let code =
            response.headers().get("x-switchyard-error").and_then(|v| v.to_str().ok()).map(str::to_owned);
        (fake.calls(), response.status().as_u16(), code)
    }

    // settings-test: /comboCooldownWait/maxAttempts /comboCooldownWait/budgetMs
    #[tokio::test]
    async fn the_wait_stops_after_max_attempts_or_when_its_budget_is_spent() {
        let refused = Some("combo_rate_limited".to_owned());
        assert_eq!(
            dispatches_until_refused("[resilience.comboCooldownWait]\nmaxAttempts = 2\n").await,
            (3, 429, refused.clone()),
            "two waits, three dispatches"
        );
        assert_eq!(
            dispatches_until_refused("[resilience.comboCooldownWait]\nmaxAttempts = 4\n").await,
            (5, 429, refused.clone()),
            "four waits, five dispatches"
        );
        assert_eq!(
            dispatches_until_refused("[resilience.comboCooldownWait]\nmaxWaitMs = 2500\nbudgetMs = 3000\n")
                .await,
            (2, 429, refused),
            "a second 2 s wait would spend 4 s of a 3 s budget"
        );
    }

    // settings-test: /comboCooldownWait/maxWaitMs
    #[tokio::test]
    async fn a_cooldown_longer_than_max_wait_is_refused_with_its_retry_time() {
        let fake = FakeUpstream::start(ok_reply()).await;
        fake.push(
            Reply::json(429, wire::openai_error("rate_limit_exceeded", "slow down"))
                .with_header("retry-after", "30"),
        );
        let (gw, _clock) = start(&fake, "[resilience.comboCooldownWait]\nmaxWaitMs = 5000\n").await;
        let response = gw.post("/v1/chat/completions", &chat("c")).await;
        assert_eq!(response.status(), 429);
        assert_eq!(
            response.headers().get("x-switchyard-error").and_then(|v| v.to_str().ok()),
            Some("combo_rate_limited")
        );
        let retry: u64 = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        assert!((25..=31).contains(&retry), "retry-after {retry}");
        assert_eq!(fake.calls(), 1);
    }
}
