//! Team mode (SPEC §9, issue 15): two gateway replicas sharing one real Postgres
//! (a throwaway cluster started by the test, see `switchyard_testkit::postgres`)
//! behave as one gateway — a cooldown seen by one is honoured by the other, a clear
//! made through one reaches the other, leases are exclusive across both, pins and
//! settings made through one apply on the other, and when Postgres goes away both
//! keep serving and catch up when it returns.

use std::time::Duration;

use serde_json::{Value, json};
use std::sync::Arc;
use switchyard_gateway::TokenSource;
use switchyard_testkit::postgres::PgServer;

use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Hold, Reply, wire};
use switchyard_tests::{CLIENT_KEY, TestGateway, claude_account_and_key, client_key_toml};
use switchyard_types::UnixMillis;

const MODEL: &str = "anthropic/claude-sonnet-4-6";
const LEASE_KEY: &str = "sy-team-lease-key-0001";
const OWNER_1: &str = "vlo_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1";
const OWNER_2: &str = "vlo_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB2";
/// How long a replica may take to see another's change before the test fails. The
/// target is 100 ms (measured in `switchyard-bench team`); this bound only keeps
/// a loaded CI machine from failing the test for being slow.
const PROPAGATION_BOUND: Duration = Duration::from_secs(3);

fn ok(from: &str) -> Reply {
    Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", from))
}

fn rate_limited() -> Reply {
    Reply::json(429, json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}))
        .with_header("retry-after", "30")
}

/// `key-a` at `x` (priority 1), `key-b` at `y` (priority 2), the client key, and a
/// leasing key allowed `key-a` only.
fn config(x: &str, y: &str) -> String {
    let mut toml = client_key_toml();
    toml.push_str(&format!(
        "\n[[api_keys]]\nname = \"agent\"\nkey = \"{LEASE_KEY}\"\nscopes = [\"lease:exclusive\"]\n\
         allowed_connections = [\"key-a\"]\n"
    ));
    for (id, url, priority) in [("key-a", x, 1), ("key-b", y, 2)] {
        toml.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"anthropic\"\napi_key = \"sk-{id}\"\n\
             base_url = \"{url}\"\npriority = {priority}\n"
        ));
    }
    toml
}

/// One inference request through `gw` (with a session header when set): status
/// and serving connection.
async fn infer(gw: &TestGateway, key: &str, session: Option<&str>) -> (u16, Option<String>, Value) {
    let body = json!({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]});
    let mut request = gw.http.post(gw.url("/v1/messages")).bearer_auth(key).json(&body);
    if let Some(s) = session {
        request = request.header("x-claude-code-session-id", s);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("{e}"));
    let status = response.status().as_u16();
    let served =
        response.headers().get("x-switchyard-connection").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (status, served, response.json().await.unwrap_or_default())
}

async fn acquire(gw: &TestGateway, owner: &str) -> (u16, Value) {
    let response = gw
        .http
        .post(gw.url("/api/v1/session-leases"))
        .bearer_auth(LEASE_KEY)
        .header("x-switchyard-lease-owner", owner)
        .json(&json!({"action": "acquire", "model": MODEL}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (response.status().as_u16(), response.json().await.unwrap_or_default())
}

/// Polls `check` every 5 ms, up to [`PROPAGATION_BOUND`]; returns how many polls
/// it took (0: already true).
async fn until<F, Fut>(what: &str, mut check: F) -> u32
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    const STEP: Duration = Duration::from_millis(5);
    let polls = (PROPAGATION_BOUND.as_millis() / STEP.as_millis()) as u32;
    for n in 0..polls {
        if check().await {
            return n;
        }
        // Polling another replica's state, not waiting out a duration.
        tokio::time::sleep(STEP).await;
    }
    panic!("{what}: not within {PROPAGATION_BOUND:?}");
}

async fn cooling(gw: &TestGateway, connection: &str) -> bool {
    let entry = gw.cooldown_of(connection).await;
    !entry.is_null() && entry["status"] != "active"
}

async fn database(gw: &TestGateway) -> String {
    gw.mgmt_json("/api/monitoring/health").await["database"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn two_replicas_share_cooldowns_clears_leases_pins_and_survive_postgres_going_away() {
    let Some(mut pg) = PgServer::start() else { return };
    let url = pg.create_database("team");
    let x = FakeUpstream::start(ok("x")).await;
    let y = FakeUpstream::start(ok("y")).await;
    let toml = config(&x.url(), &y.url());
    let team_url = url.clone();
    let a = TestGateway::start_with(&toml, move |c| c.database_url = Some(team_url)).await;
    // B is given no management token: it adopts the team's, which A set.
    let team_url = url.clone();
    let b = TestGateway::start_with(&toml, move |c| {
        c.database_url = Some(team_url);
        c.management_token = None;
    })
    .await;
    assert_eq!(b.gateway().token_source(), TokenSource::Team);
    let health = b.mgmt_json("/api/monitoring/health").await;
    assert_eq!(
        (health["database"].as_str(), health["databaseBackend"].as_str()),
        (Some("ok"), Some("postgres"))
    );
    assert_ne!(health["replica"], a.mgmt_json("/api/monitoring/health").await["replica"]);

    // Settings made through A apply on B: session affinity on.
    a.patch_settings(&json!({"sessionAffinityTtlMs": 600_000})).await;
    until("B takes A's settings", || async {
        b.mgmt_json("/api/resilience").await["sessionAffinityTtlMs"] == 600_000
    })
    .await;

    // A sees a 429 with Retry-After: 30 on X and fails over to Y.
    x.push(rate_limited());
    let (status, served, body) = infer(&a, CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-b")), "{body}");
    assert_eq!(x.calls(), 1);
    let polls = until("B sees X cooling", || cooling(&b, "key-a")).await;
    eprintln!("cooldown A → B visible after {polls} poll(s) of 5 ms");
    // The next request through B does not touch X.
    let (status, served, _) = infer(&b, CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref(), x.calls()), (200, Some("key-b"), 1));

    // A pins a session while X cools: it lands on Y.
    let (_, served, _) = infer(&a, CLIENT_KEY, Some("session-one")).await;
    assert_eq!(served.as_deref(), Some("key-b"));

    // Clearing X through B's management API brings it back on A.
    b.clear_cooldowns().await;
    until("A sees X cleared", || async { !cooling(&a, "key-a").await }).await;
    let (status, served, _) = infer(&a, CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-a")), "X serves again through A");

    // The pin made through A routes the same session through B to the same
    // connection (Y), although X comes first by priority now.
    let calls = x.calls();
    let (_, served, _) = infer(&b, CLIENT_KEY, Some("session-one")).await;
    assert_eq!((served.as_deref(), x.calls()), (Some("key-b"), calls), "the pin holds on B");
    let (_, served, _) = infer(&b, CLIENT_KEY, Some("session-two")).await;
    assert_eq!(served.as_deref(), Some("key-a"), "an unpinned session follows priority");

    // An exclusive lease acquired through A: B refuses a foreign owner.
    let (status, lease) = acquire(&a, OWNER_1).await;
    assert_eq!(status, 200, "{lease}");
    let (status, refused) = acquire(&b, OWNER_2).await;
    assert_eq!((status, &refused["error"]["code"]), (429, &json!("lease-capacity-unavailable")), "{refused}");
    until("B's request path sees A's lease", || async {
        let (status, _, body) = infer(&b, LEASE_KEY, None).await;
        status == 429 && body["error"]["code"] == "lease-capacity-unavailable"
    })
    .await;

    // Released through B (the database fences it whichever replica asks); A sees
    // the connection free again.
    let release = json!({"action": "release", "generation": lease["generation"]});
    let response = b
        .http
        .post(b.url("/api/v1/session-leases"))
        .bearer_auth(LEASE_KEY)
        .header("x-switchyard-lease-owner", OWNER_1)
        .json(&release)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    until("A sees the lease released", || async { infer(&a, LEASE_KEY, None).await.0 == 200 }).await;

    // Postgres goes away: both replicas keep serving on what they know.
    pg.stop();
    until("A reports the database unavailable", || async { database(&a).await == "unavailable" }).await;
    until("B reports the database unavailable", || async { database(&b).await == "unavailable" }).await;
    for gw in [&a, &b] {
        let (status, served, body) = infer(gw, CLIENT_KEY, None).await;
        assert_eq!((status, served.as_deref()), (200, Some("key-a")), "{body}");
    }

    // It returns: both resynchronise, and a new cooldown propagates again.
    pg.start_again();
    until("A reconnects", || async { database(&a).await == "ok" }).await;
    until("B reconnects", || async { database(&b).await == "ok" }).await;
    x.push(rate_limited());
    let (status, served, _) = infer(&b, CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-b")));
    until("A sees B's new cooldown of X", || cooling(&a, "key-a")).await;
    let calls = x.calls();
    let (_, served, _) = infer(&a, CLIENT_KEY, None).await;
    assert_eq!((served.as_deref(), x.calls()), (Some("key-b"), calls));
    assert!(a.gateway().team().is_some_and(|t| t.applied() > 0));
}

/// Two replicas of one team on `url`, importing `toml`, sharing `clock` (one process,
/// so one clock: the wall's reset times and the ordering stamps agree).
async fn two_replicas(toml: &str, url: &str, clock: &Arc<ManualClock>) -> (TestGateway, TestGateway) {
    let mut out = Vec::new();
    for _ in 0..2 {
        let (u, c) = (url.to_owned(), clock.clone());
        out.push(
            TestGateway::start_with(toml, move |cfg| {
                cfg.database_url = Some(u);
                cfg.clock = c;
            })
            .await,
        );
    }
    let b = out.pop().unwrap_or_else(|| panic!("two replicas"));
    let a = out.pop().unwrap_or_else(|| panic!("two replicas"));
    (a, b)
}

/// A Claude account (low-priority lane on) whose next answer is the usage wall's
/// 429 offering the slow lane, and an API key behind it; one clock for the replicas.
struct Wall {
    account: FakeUpstream,
    key: FakeUpstream,
    toml: String,
    clock: Arc<ManualClock>,
}

impl Wall {
    async fn start() -> Wall {
        const NOW: i64 = 1_900_000_000_000;
        let reset_s = (NOW / 1000 + 3_600).to_string();
        let wall_429 = Reply::json(429, wire::anthropic_error("rate_limit_error", "usage limit reached"))
            .with_header("anthropic-ratelimit-unified-status", "rejected")
            .with_header("anthropic-ratelimit-unified-slow-offer", "treatment")
            .with_header("anthropic-ratelimit-unified-reset", &reset_s);
        let slow_ok = ok("slow").with_header("anthropic-ratelimit-unified-slow-status", "active");
        let account = FakeUpstream::start(slow_ok).await;
        account.push(wall_429);
        let key = FakeUpstream::start(ok("key")).await;
        let toml = claude_account_and_key(&account.url(), &key.url(), "lowPriorityMode = true");
        Wall { account, key, toml, clock: Arc::new(ManualClock::new(UnixMillis(NOW))) }
    }
}

/// What `anthropic-usage-limit` header each request to `up` carried.
fn slow_headers(up: &FakeUpstream) -> Vec<Option<String>> {
    up.requests().iter().map(|r| r.header("anthropic-usage-limit").map(str::to_owned)).collect()
}

#[tokio::test]
async fn a_claude_lane_opened_on_one_replica_slows_the_other() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_database("lanes");
    let Wall { account, key: _key, toml, clock } = Wall::start().await;
    let (a, b) = two_replicas(&toml, &url, &clock).await;
    let body = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []});

    // A meets the wall and takes the slow lane; B learns of it and sends slow from
    // its first attempt.
    assert_eq!(a.post("/v1/messages", &body).await.status(), 200);
    assert_eq!(slow_headers(&account), [None, Some("slow".to_owned())]);
    until("B sees A's lane", || async {
        let health = b.mgmt_json("/api/monitoring/health").await;
        health["claudeAccounts"]
            .as_array()
            .is_some_and(|l| l.iter().any(|c| !c["wall"]["laneActiveUntil"].is_null()))
    })
    .await;
    assert_eq!(b.post("/v1/messages", &body).await.status(), 200);
    assert_eq!(slow_headers(&account), [None, Some("slow".to_owned()), Some("slow".to_owned())]);
}

#[tokio::test]
async fn concurrent_429s_on_two_replicas_count_once() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_database("herd");
    let x = FakeUpstream::start(ok("x")).await;
    let y = FakeUpstream::start(ok("y")).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let (a, b) = two_replicas(&config(&x.url(), &y.url()), &url, &clock).await;
    // Both replicas send to X at once and both get its 429 (held until both
    // arrived). Each attempt was dispatched before either cooldown began, so X's
    // backoff counts one failure, not two — on both replicas, whichever order the
    // verdicts and the announcements arrive in.
    let hold = Hold::new();
    for _ in 0..2 {
        x.push(rate_limited().held(&hold));
    }
    let body = json!({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]});
    let (ask_a, ask_b) =
        (a.post_in_background("/v1/messages", &body), b.post_in_background("/v1/messages", &body));
    until("both requests reach X", || async { x.calls() == 2 }).await;
    hold.release(2);
    for ask in [ask_a, ask_b] {
        let response = ask.await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), 200, "served by Y after X's 429");
    }
    for gw in [&a, &b] {
        until("X cooling", || cooling(gw, "key-a")).await;
    }
    // Let the announcements cross (each replica applies the other's record).
    until("each replica applied the other's cooldown", || async {
        [&a, &b].iter().all(|gw| gw.gateway().team().is_some_and(|t| t.applied() >= 1))
    })
    .await;
    for gw in [&a, &b] {
        assert_eq!(gw.cooldown_of("key-a").await["backoffLevel"], 1, "one failure, counted once");
    }
    // A later failure, dispatched after the cooldown ended, does count: X fails
    // again through B, and A sees the next backoff level.
    clock.advance_ms(31_000);
    x.push(rate_limited());
    let (status, served, _) = infer(&b, CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-b")));
    until("A sees level 2", || async { a.cooldown_of("key-a").await["backoffLevel"] == 2 }).await;
}

/// Another replica reads the shared log without this one's flush, so in team mode a
/// batch stays open 5 s of the gateway clock (the embedded file's 30 s would leave
/// the other replicas' Requests page that far behind).
#[tokio::test]
async fn another_replica_sees_a_request_once_its_five_second_batch_is_written() {
    const BATCH: Duration = Duration::from_secs(5);
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_database("batches");
    let x = FakeUpstream::start(ok("x")).await;
    let y = FakeUpstream::start(ok("y")).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let (a, b) = two_replicas(&config(&x.url(), &y.url()), &url, &clock).await;
    let (status, _, _) = infer(&a, CLIENT_KEY, None).await;
    assert_eq!(status, 200);
    until("A's batch timer", || async { clock.pending_in().contains(&BATCH) }).await;
    clock.advance(BATCH - Duration::from_millis(1));
    tokio::task::yield_now().await;
    assert_eq!(listed(&b).await, 0, "A's batch is still open");
    clock.advance_ms(1);
    until("B lists A's request", || async { listed(&b).await == 1 }).await;
}

/// Client requests a replica lists (its own flushed, the others' as written).
async fn listed(gw: &TestGateway) -> usize {
    gw.mgmt_json("/api/requests").await.as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn an_expiring_claude_token_is_refreshed_once_across_replicas() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_database("oauth");
    const NOW: i64 = 1_900_000_000_000;
    let upstream = FakeUpstream::start(ok("claude")).await;
    let fresh = json!({"access_token": "oat-new", "refresh_token": "ort-new", "expires_in": 28800});
    // A provider that rotates refresh tokens: a second use of `ort-old` would be
    // refused, so exactly one refresh may happen, whichever replica makes it.
    let mut token = FakeUpstream::start(Reply::json(200, fresh)).await;
    token.expect_calls(1);
    let toml = format!(
        "{keys}\n[[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\nauth = \"oauth\"\n\
         access_token = \"oat-old\"\nrefresh_token = \"ort-old\"\nexpires_at = {expires}\nbase_url = \"{u}\"\n\
         [connections.provider_specific]\noauthTokenUrl = \"{t}/v1/oauth/token\"\n",
        keys = client_key_toml(),
        expires = NOW + 60_000,
        u = upstream.url(),
        t = token.url()
    );
    let clock = Arc::new(ManualClock::new(UnixMillis(NOW)));
    let (a, b) = two_replicas(&toml, &url, &clock).await;
    let body = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []});
    let asks: Vec<_> =
        (0..8).map(|i| if i % 2 == 0 { &a } else { &b }).map(|gw| gw.post("/v1/messages", &body)).collect();
    let statuses: Vec<u16> =
        futures_util::future::join_all(asks).await.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses, [200; 8]);
    assert_eq!(token.calls(), 1, "one refresh for the whole team");
    let bearers: Vec<Option<String>> =
        upstream.requests().iter().map(|r| r.header("authorization").map(str::to_owned)).collect();
    assert_eq!(bearers, vec![Some("Bearer oat-new".to_owned()); 8], "both replicas use the refreshed token");
}

#[tokio::test]
async fn replicas_started_together_import_the_same_config_once() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_database("together");
    let x = FakeUpstream::start(ok("x")).await;
    let y = FakeUpstream::start(ok("y")).await;
    let toml = config(&x.url(), &y.url());
    // An orchestrator starts every replica at once: migrations, the config import
    // and the team token must not trip over each other.
    let starts = (0..3).map(|_| {
        let (toml, url) = (toml.clone(), url.clone());
        async move { TestGateway::start_with(&toml, move |c| c.database_url = Some(url)).await }
    });
    let replicas = futures_util::future::join_all(starts).await;
    for gw in &replicas {
        let (status, served, body) = infer(gw, CLIENT_KEY, None).await;
        assert_eq!((status, served.as_deref()), (200, Some("key-a")), "{body}");
        let connections = gw.mgmt_json("/api/providers").await;
        assert_eq!(connections.as_array().map(Vec::len), Some(2), "{connections}");
    }
}

#[tokio::test]
async fn a_replica_started_later_loads_the_lane_another_opened() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_database("later");
    let Wall { account, key: _key, toml, clock } = Wall::start().await;
    let start = |clock: Arc<ManualClock>| {
        let (toml, url) = (toml.clone(), url.clone());
        async move {
            TestGateway::start_with(&toml, move |cfg| {
                cfg.database_url = Some(url);
                cfg.clock = clock;
            })
            .await
        }
    };
    let a = start(clock.clone()).await;
    let body = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []});
    assert_eq!(a.post("/v1/messages", &body).await.status(), 200);
    assert_eq!(slow_headers(&account), [None, Some("slow".to_owned())]);
    // The lane is in memory (SPEC), but team mode also stores it: B, started now,
    // loads it and sends slow from its first request.
    let stored = until("the lane is stored", || async {
        let rows = a.gateway().management().store().load_team_state().await.unwrap_or_default();
        rows.iter().any(|r| r.kind == "wall" && r.key == "claude-a")
    });
    stored.await;
    let b = start(clock.clone()).await;
    assert_eq!(b.post("/v1/messages", &body).await.status(), 200);
    assert_eq!(slow_headers(&account), [None, Some("slow".to_owned()), Some("slow".to_owned())]);
}
