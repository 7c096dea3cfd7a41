//! Exclusive session leases end to end (SPEC §4.4, issue 12): an agent leases a
//! connection with its client key, its requests are fenced by owner, key and
//! generation before anything goes upstream, other traffic keeps off the leased
//! connection, and the database lets exactly one of two racing owners win. Time
//! runs on a manual clock.

use std::sync::Arc;

use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Hold, Reply, wire};
use switchyard_tests::{CLIENT_KEY, TestGateway, client_key_toml};
use switchyard_types::UnixMillis;

const AGENT_KEY: &str = "sy-lease-agent-key-0001";
const OTHER_AGENT_KEY: &str = "sy-lease-agent-key-0002";
const ONLY_A_KEY: &str = "sy-lease-only-a-key-0003";
const OWNER_1: &str = "vlo_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA1";
const OWNER_2: &str = "vlo_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB2";
const MODEL: &str = "anthropic/claude-sonnet-4-6";
const START: UnixMillis = UnixMillis(1_900_000_000_000);

struct Setup {
    gw: TestGateway,
    /// The data directory (the first gateway's, across a restart).
    data_dir: std::path::PathBuf,
    clock: Arc<ManualClock>,
    a: FakeUpstream,
    b: FakeUpstream,
}

fn ok(from: &str) -> Reply {
    Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", from))
}

/// Two Anthropic connections (`key-a` first); the plain client key; two leasing
/// keys over both connections; a leasing key over `key-a` only.
async fn setup() -> Setup {
    setup_with(ok("a"), "").await
}

/// [`setup`] with `a` answering `a_reply` and `a_extra` TOML lines on `key-a`.
async fn setup_with(a_reply: Reply, a_extra: &str) -> Setup {
    let a = FakeUpstream::start(a_reply).await;
    let b = FakeUpstream::start(ok("b")).await;
    let mut toml = client_key_toml();
    for (name, key, allowed) in [
        ("agent", AGENT_KEY, "[\"key-a\", \"key-b\"]"),
        ("agent-2", OTHER_AGENT_KEY, "[\"key-a\", \"key-b\"]"),
        ("only-a", ONLY_A_KEY, "[\"key-a\"]"),
    ] {
        toml.push_str(&format!(
            "\n[[api_keys]]\nname = \"{name}\"\nkey = \"{key}\"\nscopes = [\"lease:exclusive\"]\n\
             allowed_connections = {allowed}\n"
        ));
    }
    for (id, url, priority, extra) in [("key-a", a.url(), 1, a_extra), ("key-b", b.url(), 2, "")] {
        toml.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"anthropic\"\napi_key = \"sk-{id}\"\n\
             base_url = \"{url}\"\npriority = {priority}\n{extra}\n"
        ));
    }
    let clock = Arc::new(ManualClock::new(START));
    let c = clock.clone();
    let gw = TestGateway::start_with(&toml, move |cfg| cfg.clock = c).await;
    let data_dir = gw.dir.path().join("data");
    Setup { gw, data_dir, clock, a, b }
}

impl Setup {
    /// One lease call; returns status, `Retry-After` and body.
    async fn lease(&self, key: &str, owner: Option<&str>, body: &Value) -> (u16, Option<String>, Value) {
        let mut request = self.gw.http.post(self.gw.url("/api/v1/session-leases")).bearer_auth(key);
        if let Some(owner) = owner {
            request = request.header("x-switchyard-lease-owner", owner);
        }
        let response = request.json(body).send().await.unwrap_or_else(|e| panic!("{e}"));
        let status = response.status().as_u16();
        let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
        (status, retry, response.json().await.unwrap_or_default())
    }

    async fn acquire(&self, key: &str, owner: &str, ttl_ms: Option<u64>) -> (u16, Option<String>, Value) {
        let mut body = json!({"action": "acquire", "model": MODEL});
        if let Some(ttl) = ttl_ms {
            body["ttlMs"] = ttl.into();
        }
        self.lease(key, Some(owner), &body).await
    }

    /// An inference request, under a lease when `lease` is set; returns status,
    /// serving connection (if any), `Retry-After` and body.
    async fn infer(
        &self,
        key: &str,
        lease: Option<(&str, &str)>,
    ) -> (u16, Option<String>, Option<String>, Value) {
        let body = json!({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]});
        let mut request = self.gw.http.post(self.gw.url("/v1/messages")).bearer_auth(key);
        if let Some((owner, generation)) = lease {
            request = request
                .header("x-switchyard-lease-owner", owner)
                .header("x-switchyard-lease-generation", generation);
        }
        let response = request.json(&body).send().await.unwrap_or_else(|e| panic!("{e}"));
        let status = response.status().as_u16();
        let header = |n: &str| response.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let (served, retry) = (header("x-switchyard-connection"), header("retry-after"));
        (status, served, retry, response.json().await.unwrap_or_default())
    }

    async fn leases(&self) -> Vec<Value> {
        self.gw.mgmt_json("/api/leases").await["leases"].as_array().cloned().unwrap_or_default()
    }

    /// Every stored lease row as `(connection, state, end reason)`, oldest first:
    /// what the database says, not the gateway's copy.
    async fn stored(&self) -> Vec<(String, String, Option<String>)> {
        let path = self.data_dir.join(switchyard_gateway::store::DATABASE_FILE);
        let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let rows: Vec<(String, String, Option<String>)> =
            sqlx::query_as("SELECT connection_id, state, end_reason FROM session_leases ORDER BY id")
                .fetch_all(&pool)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        pool.close().await;
        rows
    }

    fn upstream_calls(&self) -> usize {
        self.a.calls() + self.b.calls()
    }
}

#[tokio::test]
async fn a_leased_connection_serves_its_owner_only_and_renewal_extends_it() {
    let t = setup().await;
    let (status, _, lease) = t.acquire(AGENT_KEY, OWNER_1, None).await;
    assert_eq!(status, 200, "{lease}");
    assert_eq!(lease["state"], "active");
    assert_eq!(lease["result"], "acquired");
    assert_eq!(lease["generation"], 1);
    assert_eq!(lease["expiresAt"], START.0 + 120_000, "default TTL 120 s");
    assert_eq!(lease["connection"]["provider"], "anthropic");
    assert!(lease.get("connectionId").is_none() && !lease.to_string().contains("sk-key"), "{lease}");

    // The owner's requests go to its connection, the first by priority.
    for _ in 0..3 {
        let (status, served, _, body) = t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await;
        assert_eq!((status, served.as_deref()), (200, Some("key-a")), "{body}");
    }
    // Everyone else keeps off it while it is held.
    for key in [CLIENT_KEY, OTHER_AGENT_KEY] {
        let (status, served, _, _) = t.infer(key, None).await;
        assert_eq!((status, served.as_deref()), (200, Some("key-b")));
    }

    // Acquiring again is the same lease, renewed; renewing moves the expiry.
    t.clock.advance_ms(60_000);
    let (status, _, again) = t.acquire(AGENT_KEY, OWNER_1, None).await;
    assert_eq!((status, &again["result"], &again["generation"]), (200, &json!("reused"), &json!(1)));
    t.clock.advance_ms(30_000);
    let (status, _, renewed) = t
        .lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "renew", "generation": 1, "ttlMs": 600_000}))
        .await;
    assert_eq!(status, 200, "{renewed}");
    assert_eq!(renewed["expiresAt"], START.0 + 90_000 + 600_000);
    assert_eq!(renewed["renewedAt"], START.0 + 90_000);
    // Past the first TTL, the renewed lease still holds.
    t.clock.advance_ms(300_000);
    let (status, served, _, _) = t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-a")));
    let (status, _, shown) =
        t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "status", "generation": 1})).await;
    assert_eq!((status, &shown["state"]), (200, &json!("active")), "{shown}");
    let listed = t.leases().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["connection"], "key-a");
    assert_eq!(listed[0]["keyName"], "agent");
    assert_eq!(listed[0]["generation"], 1);
    assert_eq!(listed[0]["expiresAt"], START.0 + 690_000);

    // Released: the connection is everyone's again; the owner's next request is stale.
    let (status, _, released) =
        t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "release", "generation": 1})).await;
    assert_eq!((status, &released["state"]), (200, &json!("released")), "{released}");
    let (status, _, again) =
        t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "release", "generation": 1})).await;
    assert_eq!((status, &again["state"]), (200, &json!("released")), "release is idempotent");
    let (status, served, _, _) = t.infer(CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-a")));
    let calls = t.upstream_calls();
    let (status, _, _, body) = t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("lease-fence-stale")), "{body}");
    assert_eq!(t.upstream_calls(), calls, "nothing went upstream");
    assert!(t.leases().await.is_empty());
}

#[tokio::test]
async fn a_stale_generation_or_a_foreign_key_is_refused_before_anything_goes_upstream() {
    let t = setup().await;
    let (status, _, first) = t.acquire(AGENT_KEY, OWNER_1, None).await;
    assert_eq!((status, &first["generation"]), (200, &json!(1)));
    t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "release", "generation": 1})).await;
    let (status, _, second) = t.acquire(AGENT_KEY, OWNER_1, None).await;
    assert_eq!((status, &second["generation"]), (200, &json!(2)), "generations grow per owner");

    let before = t.upstream_calls();
    let refusals = [
        (AGENT_KEY, Some((OWNER_1, "1")), 409, "lease-fence-stale"),
        (AGENT_KEY, Some((OWNER_1, "3")), 409, "lease-fence-stale"),
        (OTHER_AGENT_KEY, Some((OWNER_1, "2")), 409, "lease-fence-stale"),
        (AGENT_KEY, Some((OWNER_2, "1")), 409, "lease-fence-stale"),
        (AGENT_KEY, Some(("vlo_short", "2")), 400, "lease-context-invalid"),
        (AGENT_KEY, Some((OWNER_1, "two")), 400, "lease-context-invalid"),
        (CLIENT_KEY, Some((OWNER_1, "2")), 403, "lease-not-permitted"),
    ];
    for (key, lease, status, code) in refusals {
        let (got, _, _, body) = t.infer(key, lease).await;
        assert_eq!((got, body["error"]["code"].as_str()), (status, Some(code)), "{lease:?}: {body}");
        assert_eq!(body["type"], "error", "in the client's (Anthropic) format: {body}");
    }
    // An owner without a generation.
    let response =
        t.gw.http
            .post(t.gw.url("/v1/messages"))
            .bearer_auth(AGENT_KEY)
            .header("x-switchyard-lease-owner", OWNER_1)
            .json(&json!({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["x-switchyard-error"], "lease-context-required");
    assert_eq!(t.upstream_calls(), before, "no refused request reached an upstream");

    let (status, served, _, _) = t.infer(AGENT_KEY, Some((OWNER_1, "2"))).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-a")));
    // An operator release fences the owner out at once.
    let id = t.leases().await[0]["id"].as_u64().unwrap_or_default();
    let response = t.gw.mgmt(reqwest::Method::DELETE, &format!("/api/leases/{id}")).send().await;
    assert_eq!(response.map(|r| r.status().as_u16()).ok(), Some(200));
    let (status, _, _, body) = t.infer(AGENT_KEY, Some((OWNER_1, "2"))).await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("lease-fence-stale")));
    let response = t.gw.mgmt(reqwest::Method::DELETE, &format!("/api/leases/{id}")).send().await;
    assert_eq!(response.map(|r| r.status().as_u16()).ok(), Some(404), "no longer active");
    assert_eq!(
        t.stored().await,
        [
            ("key-a".to_owned(), "RELEASED".to_owned(), Some("owner-exit".to_owned())),
            ("key-a".to_owned(), "RELEASED".to_owned(), Some("operator-released".to_owned()))
        ]
    );
}

#[tokio::test]
async fn when_leases_hold_every_free_connection_the_answer_is_429_waiting_for_capacity() {
    let t = setup().await;
    let (status, _, _) = t.acquire(ONLY_A_KEY, OWNER_1, Some(30_000)).await;
    assert_eq!(status, 200);
    let (status, retry, body) = t.acquire(ONLY_A_KEY, OWNER_2, None).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "lease-capacity-unavailable");
    assert_eq!(body["state"], "waiting-for-capacity");
    assert_eq!(body["retryAfter"], 30);
    assert_eq!(retry.as_deref(), Some("30"), "from the earliest expiry");
    // Inference through a key whose only connection is leased by someone else.
    let (status, _, retry, body) = t.infer(ONLY_A_KEY, None).await;
    assert_eq!((status, &body["error"]["code"]), (429, &json!("lease-capacity-unavailable")), "{body}");
    assert_eq!(retry.as_deref(), Some("30"));
    assert_eq!(body["type"], "error");

    // Bounded: a 30-minute lease still says at most 120 s.
    t.clock.advance_ms(30_000);
    let (status, _, held) = t.acquire(ONLY_A_KEY, OWNER_1, Some(1_800_000)).await;
    assert_eq!(
        (status, &held["generation"]),
        (200, &json!(2)),
        "expired at 30 s, so a new generation: {held}"
    );
    let (status, retry, _) = t.acquire(ONLY_A_KEY, OWNER_2, None).await;
    assert_eq!((status, retry.as_deref()), (429, Some("120")));
    // TTL clamps: below a second is a second.
    t.lease(ONLY_A_KEY, Some(OWNER_1), &json!({"action": "release", "generation": 2})).await;
    let (status, _, short) = t.acquire(ONLY_A_KEY, OWNER_2, Some(5)).await;
    assert_eq!((status, &short["expiresAt"]), (200, &json!(START.0 + 30_000 + 1_000)), "{short}");
    // Lazy expiry: a second later the connection is free without any sweep.
    t.clock.advance_ms(1_000);
    let (status, _, _) = t.acquire(ONLY_A_KEY, OWNER_1, None).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn only_a_key_with_the_scope_and_allowed_connections_may_lease_and_bad_calls_are_named() {
    let t = setup().await;
    let acquire = json!({"action": "acquire", "model": MODEL});
    let (status, _, body) = t.lease(CLIENT_KEY, Some(OWNER_1), &acquire).await;
    assert_eq!((status, &body["error"]["code"]), (403, &json!("lease-not-permitted")), "{body}");
    let (status, _, body) = t.lease("sy-unknown-key-0000000", Some(OWNER_1), &acquire).await;
    assert_eq!((status, &body["error"]["code"]), (401, &json!("authentication_error")));
    let (status, _, body) = t.lease(AGENT_KEY, None, &acquire).await;
    assert_eq!((status, &body["error"]["code"]), (400, &json!("lease-context-required")));
    let (status, _, body) = t.lease(AGENT_KEY, Some("vlo_!!"), &acquire).await;
    assert_eq!((status, &body["error"]["code"]), (400, &json!("lease-context-invalid")));
    let (status, _, body) = t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "steal"})).await;
    assert_eq!((status, &body["error"]["code"]), (400, &json!("validation_failed")), "{body}");
    let (status, _, body) =
        t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "acquire", "model": "nope/x"})).await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!("model_not_found")), "{body}");
    let (status, _, body) =
        t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "renew", "generation": 1})).await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("lease-fence-stale")), "nothing to renew");
    let response =
        t.gw.http
            .post(t.gw.url("/api/v1/session-leases"))
            .bearer_auth(AGENT_KEY)
            .header("x-switchyard-lease-owner", OWNER_1)
            .header("content-type", "text/plain")
            .body(acquire.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 415);
    // The owner already holds a lease through one key: another key cannot rebind it.
    assert_eq!(t.acquire(AGENT_KEY, OWNER_1, None).await.0, 200);
    let (status, _, body) = t.acquire(OTHER_AGENT_KEY, OWNER_1, None).await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("lease-owner-conflict")));
    // Deleting the key ends its leases; the connection is free again.
    let keys = t.gw.mgmt_json("/api/keys").await;
    let id = keys
        .as_array()
        .and_then(|k| k.iter().find(|k| k["name"] == "agent"))
        .and_then(|k| k["id"].as_str())
        .unwrap_or_default()
        .to_owned();
    let response = t.gw.mgmt(reqwest::Method::DELETE, &format!("/api/keys/{id}")).send().await;
    assert_eq!(response.map(|r| r.status().as_u16()).ok(), Some(204));
    assert!(t.leases().await.is_empty(), "the revoked key's lease ended");
    let stored = t.stored().await;
    assert_eq!(
        stored.last(),
        Some(&("key-a".to_owned(), "INVALIDATED".to_owned(), Some("managed-key-revoked".to_owned()))),
        "{stored:?}"
    );
    let (status, served, _, _) = t.infer(CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-a")));
}

#[tokio::test]
async fn two_owners_acquiring_one_connection_at_once_get_exactly_one_lease() {
    let t = setup().await;
    let owners: Vec<String> = (0..8).map(|i| format!("vlo_{}{i}", "C".repeat(42))).collect();
    let barrier = Arc::new(tokio::sync::Barrier::new(owners.len()));
    let mut tasks = Vec::new();
    for owner in &owners {
        let request =
            t.gw.http
                .post(t.gw.url("/api/v1/session-leases"))
                .bearer_auth(ONLY_A_KEY)
                .header("x-switchyard-lease-owner", owner.as_str())
                .json(&json!({"action": "acquire", "model": MODEL}));
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            request.send().await.map(|r| r.status().as_u16()).unwrap_or_default()
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap_or_default());
    }
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 429, 429, 429, 429, 429, 429, 429], "exactly one winner");
    assert_eq!(t.leases().await.len(), 1);
}

#[tokio::test]
async fn a_leased_request_fails_over_by_moving_its_lease_with_the_same_generation() {
    let t = setup().await;
    let (status, _, _) = t.acquire(AGENT_KEY, OWNER_1, None).await;
    assert_eq!(status, 200);
    t.a.push(
        Reply::json(429, json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}))
            .with_header("retry-after", "60"),
    );
    let (status, served, _, body) = t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-b")), "{body}");
    let listed = t.leases().await;
    assert_eq!(
        (listed.len(), &listed[0]["connection"], &listed[0]["generation"]),
        (1, &json!("key-b"), &json!(1))
    );
    assert_eq!(
        t.stored().await,
        [
            ("key-a".to_owned(), "INVALIDATED".to_owned(), Some("health-or-cooldown".to_owned())),
            ("key-b".to_owned(), "ACTIVE".to_owned(), None)
        ]
    );
    // The owner stays on its new connection (key-a is cooling anyway), and the
    // other traffic now keeps off key-b: with key-a cooling, the only eligible
    // connection is leased.
    let (status, served, _, _) = t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-b")));
    let (status, _, _, body) = t.infer(CLIENT_KEY, None).await;
    assert_eq!((status, &body["error"]["code"]), (429, &json!("lease-capacity-unavailable")), "{body}");
}

#[tokio::test]
async fn a_leased_connection_that_is_only_busy_is_waited_for_not_left() {
    let hold = Hold::new();
    let t = setup_with(ok("a").held(&hold), "max_concurrent = 1").await;
    assert_eq!(t.acquire(AGENT_KEY, OWNER_1, None).await.0, 200);
    let send = || infer_in_background(&t, AGENT_KEY, Some((OWNER_1, "1")));
    let first = send();
    assert!(t.a.wait_until(std::time::Duration::from_secs(5), |u| u.in_flight() == 1).await);
    // key-a is at its cap of 1 and key-b is free: the second request queues for key-a.
    let second = send();
    let queued = async {
        loop {
            let flow = t.gw.mgmt_json("/api/rate-limits").await;
            let a = flow["connections"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["connectionId"] == "key-a").cloned());
            if a.is_some_and(|a| a["queued"] == 1) {
                break;
            }
            // Polling the gateway's live counters, not waiting out a duration.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(5), queued).await.is_ok(),
        "never queued on key-a"
    );
    hold.open();
    for handle in [first, second] {
        let (status, served, _) = handle.await.unwrap_or_default();
        assert_eq!((status, served.as_deref()), (200, Some("key-a")));
    }
    assert_eq!(t.b.calls(), 0, "the lease never moved to key-b");
    assert_eq!(t.leases().await[0]["connection"], "key-a");
}

#[tokio::test]
async fn leases_survive_a_restart_unless_the_configuration_no_longer_allows_them() {
    let mut t = setup().await;
    assert_eq!(t.acquire(AGENT_KEY, OWNER_1, None).await.0, 200);
    assert_eq!(t.acquire(OTHER_AGENT_KEY, OWNER_2, None).await.0, 200, "key-b for the second owner");
    let data_dir = t.gw.dir.path().join("data");
    let config = std::fs::read_to_string(&t.gw.config_path).unwrap_or_default();
    t.gw.shutdown().await;
    // On restart, "agent-2" has lost the scope: its lease ends; "agent" keeps its own.
    let edited = config.replacen(
        "name = \"agent-2\"\nkey = \"sy-lease-agent-key-0002\"\nscopes = [\"lease:exclusive\"]",
        "name = \"agent-2\"\nkey = \"sy-lease-agent-key-0002\"\nscopes = []",
        1,
    );
    assert_ne!(edited, config);
    let c = t.clock.clone();
    let dir = data_dir.clone();
    let data_dir = t.data_dir.clone();
    let gw = TestGateway::start_with(&edited, move |cfg| {
        cfg.data_dir = dir;
        cfg.clock = c;
    })
    .await;
    let t = Setup { gw, data_dir, clock: t.clock, a: t.a, b: t.b };
    let listed = t.leases().await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((&listed[0]["keyName"], &listed[0]["connection"]), (&json!("agent"), &json!("key-a")));
    let (status, served, _, _) = t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-a")), "the lease came back from disk");
    let (status, served, _, _) = t.infer(CLIENT_KEY, None).await;
    assert_eq!((status, served.as_deref()), (200, Some("key-b")), "key-b is free again, key-a still leased");
    assert_eq!(
        t.stored().await,
        [
            ("key-a".to_owned(), "ACTIVE".to_owned(), None),
            ("key-b".to_owned(), "INVALIDATED".to_owned(), Some("authorization-changed".to_owned()))
        ]
    );
}

#[tokio::test]
async fn disabling_or_deleting_the_leased_connection_ends_the_lease() {
    let t = setup().await;
    assert_eq!(t.acquire(AGENT_KEY, OWNER_1, None).await.0, 200);
    let response =
        t.gw.mgmt(reqwest::Method::PATCH, "/api/providers/key-a")
            .json(&json!({"enabled": false}))
            .send()
            .await;
    assert_eq!(response.map(|r| r.status().as_u16()).ok(), Some(200));
    assert!(t.leases().await.is_empty(), "a disabled connection holds no lease");
    let (status, _, _, body) = t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("lease-fence-stale")));
    // The owner leases again: key-b now; deleting it ends that lease too.
    let (status, _, lease) = t.acquire(AGENT_KEY, OWNER_1, None).await;
    assert_eq!((status, &lease["generation"]), (200, &json!(2)));
    assert_eq!(t.leases().await[0]["connection"], "key-b");
    let response = t.gw.mgmt(reqwest::Method::DELETE, "/api/providers/key-b").send().await;
    assert_eq!(response.map(|r| r.status().as_u16()).ok(), Some(204));
    assert!(t.leases().await.is_empty());
    assert_eq!(
        t.stored().await,
        [
            ("key-a".to_owned(), "INVALIDATED".to_owned(), Some("connection-ineligible".to_owned())),
            ("key-b".to_owned(), "INVALIDATED".to_owned(), Some("connection-ineligible".to_owned()))
        ]
    );
}

/// Sends an inference request on a task of its own; the answer's status, serving
/// connection and body.
fn infer_in_background(
    t: &Setup,
    key: &str,
    lease: Option<(&str, &str)>,
) -> tokio::task::JoinHandle<(u16, Option<String>, Value)> {
    let body = json!({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]});
    let mut request = t.gw.http.post(t.gw.url("/v1/messages")).bearer_auth(key).json(&body);
    if let Some((owner, generation)) = lease {
        request = request
            .header("x-switchyard-lease-owner", owner)
            .header("x-switchyard-lease-generation", generation);
    }
    tokio::spawn(async move {
        let response = request.send().await.unwrap_or_else(|e| panic!("{e}"));
        let served = response
            .headers()
            .get("x-switchyard-connection")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (response.status().as_u16(), served, response.json().await.unwrap_or_default())
    })
}

/// Waits until `key-a` has `n` requests queued.
async fn until_queued_on_a(t: &Setup, n: u64) {
    let queued = async {
        loop {
            let flow = t.gw.mgmt_json("/api/rate-limits").await;
            let a = flow["connections"]
                .as_array()
                .and_then(|l| l.iter().find(|c| c["connectionId"] == "key-a").cloned());
            if a.is_some_and(|a| a["queued"] == n) {
                break;
            }
            // Polling the gateway's live counters, not waiting out a duration.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(5), queued).await.is_ok(),
        "never {n} queued on key-a"
    );
}

#[tokio::test]
async fn a_request_that_queued_while_its_lease_ended_is_refused_with_nothing_sent_upstream() {
    let hold = Hold::new();
    let t = setup_with(ok("a").held(&hold), "max_concurrent = 1").await;
    assert_eq!(t.acquire(AGENT_KEY, OWNER_1, None).await.0, 200);
    let first = infer_in_background(&t, AGENT_KEY, Some((OWNER_1, "1")));
    assert!(t.a.wait_until(std::time::Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let second = infer_in_background(&t, AGENT_KEY, Some((OWNER_1, "1")));
    until_queued_on_a(&t, 1).await;
    let (status, _, _) =
        t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "release", "generation": 1})).await;
    assert_eq!(status, 200);
    hold.open();
    assert_eq!(first.await.map(|r| r.0).ok(), Some(200), "the request already upstream finishes");
    let (status, _, body) = second.await.unwrap_or_default();
    assert_eq!((status, &body["error"]["code"]), (409, &json!("lease-fence-stale")), "{body}");
    assert_eq!((t.a.calls(), t.b.calls()), (1, 0), "the queued request never went upstream");
}

#[tokio::test]
async fn a_request_that_queued_for_a_connection_leased_meanwhile_keeps_off_it() {
    let hold = Hold::new();
    let t = setup_with(ok("a").held(&hold), "max_concurrent = 1").await;
    // Two requests through a key allowed only key-a, neither under a lease.
    let first = infer_in_background(&t, ONLY_A_KEY, None);
    assert!(t.a.wait_until(std::time::Duration::from_secs(5), |u| u.in_flight() == 1).await);
    let second = infer_in_background(&t, ONLY_A_KEY, None);
    until_queued_on_a(&t, 1).await;
    // Meanwhile an agent leases key-a.
    assert_eq!(t.acquire(AGENT_KEY, OWNER_1, Some(45_000)).await.0, 200);
    hold.open();
    assert_eq!(first.await.map(|r| r.0).ok(), Some(200));
    let (status, _, body) = second.await.unwrap_or_default();
    assert_eq!((status, &body["error"]["code"]), (429, &json!("lease-capacity-unavailable")), "{body}");
    assert_eq!(body["state"], "waiting-for-capacity");
    assert_eq!(t.a.calls(), 1, "the leased connection served no one else");
}

#[tokio::test]
async fn no_lease_owner_reaches_an_upstream_a_log_row_an_api_answer_or_the_data_directory() {
    let t = setup().await;
    let (_, _, lease) = t.acquire(AGENT_KEY, OWNER_1, None).await;
    for _ in 0..2 {
        assert_eq!(t.infer(AGENT_KEY, Some((OWNER_1, "1"))).await.0, 200);
    }
    t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "renew", "generation": 1})).await;
    let rows = t.gw.wait_for_log_rows(2).await;
    let mut seen = vec![lease.to_string(), json!(rows).to_string(), json!(t.leases().await).to_string()];
    for path in ["/api/rate-limits", "/api/sessions", "/api/monitoring/health", "/api/keys"] {
        seen.push(t.gw.mgmt_json(path).await.to_string());
    }
    for upstream in [&t.a, &t.b] {
        for request in upstream.requests() {
            assert!(request.header("x-switchyard-lease-owner").is_none());
            assert!(request.header("x-switchyard-lease-generation").is_none());
            seen.push(format!("{:?}", request.headers));
        }
    }
    for text in &seen {
        assert!(!text.contains(OWNER_1), "owner leaked: {text}");
    }
    t.lease(AGENT_KEY, Some(OWNER_1), &json!({"action": "release", "generation": 1})).await;
    let mut files = vec![t.gw.dir.path().to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                files.push(entry.path());
            }
        } else {
            let bytes = std::fs::read(&path).unwrap_or_default();
            let found = bytes.windows(OWNER_1.len()).any(|w| w == OWNER_1.as_bytes());
            assert!(!found, "owner token stored in {}", path.display());
        }
    }
}
