//! The storage boundary on both backends: every `Store` operation runs the same
//! suite against a real SQLite file and a real Postgres server (Debian's binaries,
//! a throwaway cluster; see `switchyard_testkit::postgres`), and the two migration
//! sets must produce the same schema.

use std::collections::BTreeMap;

use serde_json::json;
use sqlx::Row;
use switchyard_gateway::store::{
    AcquireOutcome, AliasRecord, ApiKeyRecord, AttemptLogRow, Backend, ComboRecord, ConnectionRecord,
    LeaseHolder, LeaseState, LogBatch, PinRow, RequestLogRow, StateWrite, Store, StoreError, TeamStateRow,
    TransitionOutcome,
};
use switchyard_testkit::postgres::PgServer;
use switchyard_types::api::{ComboStrategy, ComboTarget, RateLimitOverrides, TokenUsageView};
use switchyard_types::requests::{RequestOutcome, RequestsQuery, RouteTraceView};
use switchyard_types::{ApiFormat, AuthKind, UnixMillis};

const NOW: UnixMillis = UnixMillis(1_900_000_000_000);

fn connection(id: &str, priority: i32) -> ConnectionRecord {
    ConnectionRecord {
        id: id.to_owned(),
        provider: "anthropic".to_owned(),
        api_format: ApiFormat::OpenaiChat,
        name: format!("Conn {id}"),
        auth_kind: AuthKind::ApiKey,
        api_key: Some("sk-secret".to_owned()),
        access_token: None,
        refresh_token: None,
        token_expires_at: None,
        base_url: Some("http://127.0.0.1:9".to_owned()),
        priority,
        enabled: true,
        max_concurrent: Some(3),
        rate_limit_overrides: RateLimitOverrides::default(),
        rate_limit_protection: Some(true),
        models: vec!["m1".to_owned(), "m2".to_owned()],
        provider_specific: json!({"x": 1}),
        created_at: NOW,
        updated_at: NOW,
        version: 1,
    }
}

fn owner(n: u8) -> String {
    format!("{n:064x}")
}

fn attempt(request: &str, at: i64, error: Option<&str>) -> AttemptLogRow {
    AttemptLogRow {
        at: UnixMillis(at),
        request_id: request.into(),
        api_key_id: Some("key-1".into()),
        route: "/v1/messages",
        provider: "anthropic".into(),
        connection_id: "a".into(),
        model: "m1".into(),
        status: Some(if error.is_some() { 429 } else { 200 }),
        latency_ms: 12,
        bytes: 345,
        error_kind: error.map(str::to_owned),
        tokens: error.is_none().then_some(TokenUsageView {
            input: 10,
            output: 5,
            cache_read: 2,
            cache_write: 1,
        }),
    }
}

fn request(id: &str, at: i64, status: u16, outcome: RequestOutcome) -> RequestLogRow {
    RequestLogRow {
        request_id: id.into(),
        at: UnixMillis(at),
        api_key_id: Some("key-1".into()),
        route: "/v1/messages",
        model: "m1".to_owned(),
        status,
        outcome,
        error_code: None,
        connection_id: Some("a".into()),
        attempts: 2,
        failed_attempts: 1,
        latency_ms: 40,
        route_trace: RouteTraceView {
            resolved_as: "catalogue".into(),
            strategy: "priority".into(),
            candidates: Vec::new(),
            notes: vec!["note".to_owned()],
        },
    }
}

/// Every operation of the store, with the answers it must give.
async fn suite(store: &Store) {
    // Connections: insert, conditional update, stale update, OAuth tokens, delete.
    store.put_connection(&connection("b", 1), None).await.unwrap_or_else(|e| panic!("{e}"));
    store.put_connection(&connection("a", 0), None).await.unwrap_or_else(|e| panic!("{e}"));
    let listed = store.list_connections().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    let a = &listed[0];
    assert_eq!(a, &connection("a", 0), "a connection reads back as written");
    let mut changed = connection("a", 5);
    changed.enabled = false;
    changed.rate_limit_protection = None;
    store.put_connection(&changed, Some(1)).await.unwrap_or_else(|e| panic!("{e}"));
    let stale = store.put_connection(&changed, Some(1)).await;
    assert!(matches!(stale, Err(StoreError::Stale { expected: 1, .. })), "{stale:?}");
    let missing = store.put_connection(&connection("zz", 0), Some(1)).await;
    assert!(
        matches!(missing, Err(StoreError::Stale { .. })),
        "an expected version of a missing row is stale"
    );
    let got =
        store.get_connection("a").await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("a"));
    assert_eq!((got.priority, got.enabled, got.rate_limit_protection, got.version), (5, false, None, 2));
    assert!(store.put_oauth_tokens("a", "at", Some("rt"), Some(UnixMillis(7)), NOW).await.unwrap_or(false));
    let got =
        store.get_connection("a").await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("a"));
    assert_eq!(
        (got.access_token.as_deref(), got.refresh_token.as_deref(), got.token_expires_at),
        (Some("at"), Some("rt"), Some(UnixMillis(7)))
    );
    assert!(store.put_oauth_tokens("a", "at2", None, None, NOW).await.unwrap_or(false));
    let got =
        store.get_connection("a").await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("a"));
    assert_eq!(got.refresh_token.as_deref(), Some("rt"), "an absent refresh token keeps the stored one");
    assert!(store.delete_connection("b").await.unwrap_or(false));
    assert!(!store.delete_connection("b").await.unwrap_or(true));
    assert!(store.get_connection("b").await.unwrap_or_else(|e| panic!("{e}")).is_none());

    // Client keys.
    let key = ApiKeyRecord {
        id: "key-1".to_owned(),
        name: "laptop".to_owned(),
        key_hash: "ab".repeat(32),
        scopes: vec!["lease:exclusive".to_owned()],
        allowed_connections: vec!["a".to_owned()],
        created_at: NOW,
    };
    store.put_api_key(&key).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.list_api_keys().await.unwrap_or_default(), vec![key.clone()]);
    assert!(store.delete_api_key("key-1").await.unwrap_or(false));
    assert!(store.list_api_keys().await.unwrap_or_default().is_empty());

    // Combos and aliases, with versions.
    let combo = ComboRecord {
        name: "team".to_owned(),
        strategy: ComboStrategy::RoundRobin,
        targets: vec![ComboTarget { model: "anthropic/m1".to_owned(), connection: None, weight: Some(2) }],
        created_at: NOW,
        updated_at: NOW,
        version: 1,
    };
    store.put_combo(&combo, None).await.unwrap_or_else(|e| panic!("{e}"));
    store.put_combo(&combo, Some(1)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(store.put_combo(&combo, Some(1)).await, Err(StoreError::Stale { .. })));
    let combos = store.list_combos().await.unwrap_or_default();
    assert_eq!(
        (combos[0].strategy, combos[0].version, &combos[0].targets),
        (ComboStrategy::RoundRobin, 2, &combo.targets)
    );
    assert!(store.delete_combo("team").await.unwrap_or(false));
    let alias = AliasRecord { alias: "fast".to_owned(), target: "anthropic/m1".to_owned(), version: 1 };
    store.put_alias(&alias, NOW, None).await.unwrap_or_else(|e| panic!("{e}"));
    store.put_alias(&alias, NOW, Some(1)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.list_aliases().await.unwrap_or_default()[0].version, 2);
    assert!(store.delete_alias("fast").await.unwrap_or(false));

    // Settings documents: versioned, equal writes are no change.
    store.put_setting("doc", &json!({"a": 1}), NOW, None).await.unwrap_or_else(|e| panic!("{e}"));
    store.put_setting("doc", &json!({"a": 1}), NOW, Some(1)).await.unwrap_or_else(|e| panic!("{e}"));
    store.put_setting("doc", &json!({"a": 2}), NOW, Some(1)).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        store.put_setting("doc", &json!({"a": 3}), NOW, Some(1)).await,
        Err(StoreError::Stale { .. })
    ));
    let (doc, version): (serde_json::Value, i64) = store
        .get_setting_versioned("doc")
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("doc"));
    assert_eq!((doc, version), (json!({"a": 2}), 2));
    assert!(store.get_setting::<serde_json::Value>("none").await.unwrap_or_else(|e| panic!("{e}")).is_none());

    // Resilience state: upserts, last write wins.
    let writes = [
        StateWrite::Breaker {
            provider: "anthropic".into(),
            state: "OPEN".into(),
            record_json: "{\"b\":1}".into(),
            at: NOW,
        },
        StateWrite::Connection {
            connection: "a".into(),
            provider: "anthropic".into(),
            record_json: "{\"c\":1}".into(),
            at: NOW,
        },
    ];
    store.write_resilience_state(&writes).await.unwrap_or_else(|e| panic!("{e}"));
    let again = [StateWrite::Connection {
        connection: "a".into(),
        provider: "anthropic".into(),
        record_json: "{\"c\":2}".into(),
        at: NOW.plus_millis(5),
    }];
    store.write_resilience_state(&again).await.unwrap_or_else(|e| panic!("{e}"));
    // A write of an older transition (another replica flushing late) changes nothing.
    let stale = [StateWrite::Connection {
        connection: "a".into(),
        provider: "anthropic".into(),
        record_json: "{\"c\":0}".into(),
        at: NOW.plus_millis(1),
    }];
    store.write_resilience_state(&stale).await.unwrap_or_else(|e| panic!("{e}"));
    let breakers = store.load_breakers().await.unwrap_or_default();
    assert_eq!((breakers[0].key.as_str(), breakers[0].record_json.as_str()), ("anthropic", "{\"b\":1}"));
    let health = store.load_connection_health().await.unwrap_or_default();
    assert_eq!((health.len(), health[0].record_json.as_str()), (1, "{\"c\":2}"));

    // Team mode's in-memory state, stored for replicas that start later.
    let row = |json: &str, at: i64| TeamStateRow {
        kind: "wall".to_owned(),
        key: "a".to_owned(),
        state_json: json.to_owned(),
        updated_at: UnixMillis(at),
    };
    store.write_team_state(&[row("{\"n\":2}", 20)]).await.unwrap_or_else(|e| panic!("{e}"));
    store.write_team_state(&[row("{\"n\":1}", 10)]).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.load_team_state().await.unwrap_or_default(), vec![row("{\"n\":2}", 20)], "older loses");

    // Session pins.
    let pin = |s: &str, seen: i64| PinRow {
        session_key: s.to_owned(),
        provider: "anthropic".to_owned(),
        connection_id: "a".to_owned(),
        pinned_at: UnixMillis(seen),
        last_seen_at: UnixMillis(seen),
    };
    store
        .write_session_pins(&[pin("s1", 10), pin("s2", 20), pin("s3", 30)], &[], None)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    store
        .write_session_pins(&[], &[("s1".to_owned(), "anthropic".to_owned())], Some(UnixMillis(20)))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let pins = store.session_pins(10).await.unwrap_or_default();
    assert_eq!(pins, vec![pin("s3", 30)]);
    assert_eq!(store.delete_session_pins(Some("a")).await.unwrap_or(0), 1);
    assert_eq!(store.delete_session_pins(None).await.unwrap_or(9), 0);

    // Leases: acquire, reuse, busy owner, no free connection, renew, move, release, end.
    let (o1, o2) = (owner(1), owner(2));
    let h1 = LeaseHolder { owner_hash: &o1, api_key_id: "key-1" };
    let h2 = LeaseHolder { owner_hash: &o2, api_key_id: "key-1" };
    let slots = vec![("anthropic".to_owned(), "a".to_owned())];
    let first = store.acquire_lease(h1, &slots, NOW, 60_000).await.unwrap_or_else(|e| panic!("{e}"));
    let AcquireOutcome::Acquired(lease) = first else { panic!("{first:?}") };
    assert_eq!((lease.generation, lease.state, lease.connection_id.as_str()), (1, LeaseState::Active, "a"));
    let again =
        store.acquire_lease(h1, &slots, NOW.plus_millis(5), 60_000).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(&again, AcquireOutcome::Reused(r) if r.id == lease.id), "{again:?}");
    let other = store.acquire_lease(h2, &slots, NOW, 60_000).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(other, AcquireOutcome::NoFreeConnection { earliest_expiry: Some(NOW.plus_millis(60_005)) });
    let elsewhere = vec![("anthropic".to_owned(), "b".to_owned())];
    let busy = store.acquire_lease(h1, &elsewhere, NOW, 60_000).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(busy, AcquireOutcome::OwnerBusy);
    let renewed =
        store.renew_lease(h1, 1, NOW.plus_millis(10), 1_000).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(renewed.map(|r| r.expires_at), Some(NOW.plus_millis(1_010)));
    assert!(store.renew_lease(h1, 9, NOW, 1_000).await.unwrap_or_else(|e| panic!("{e}")).is_none(), "fenced");
    let moved = store
        .transition_lease(h1, 1, ("anthropic", "b"), NOW, "moved")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let TransitionOutcome::Moved(moved) = moved else { panic!("{moved:?}") };
    assert_eq!((moved.connection_id.as_str(), moved.generation), ("b", 1));
    let active = store.active_leases().await.unwrap_or_default();
    assert_eq!(active.iter().map(|l| l.connection_id.as_str()).collect::<Vec<_>>(), ["b"]);
    let released = store.release_lease(h1, 1, NOW, "done").await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(released.map(|r| r.state), Some(LeaseState::Released));
    let status = store.lease_status(h1, 1, NOW).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.map(|r| r.state), Some(LeaseState::Released));
    let next = store.acquire_lease(h1, &slots, NOW, 1_000).await.unwrap_or_else(|e| panic!("{e}"));
    let AcquireOutcome::Acquired(next) = next else { panic!("{next:?}") };
    assert_eq!(next.generation, 2, "a new lease of the same owner is the next generation");
    let lapsed = store.lease_status(h1, 2, NOW.plus_millis(2_000)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lapsed.map(|r| r.state), Some(LeaseState::Expired));
    let ended = store
        .end_lease(next.id, LeaseState::Invalidated, "key revoked", NOW)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ended.and_then(|r| r.end_reason), Some("key revoked".to_owned()));

    // The request log: attempts and client requests, listing, filters, counts, pruning.
    // The last attempt is an hour later, so the summary's hour holds only it.
    let attempts =
        [attempt("r1", 100, None), attempt("r1", 110, Some("rate_limited")), attempt("r2", 3_660_000, None)];
    let mut batch = LogBatch::default();
    attempts.into_iter().for_each(|a| batch.push_attempt(a));
    let log = store.for_log_writer().await.unwrap_or_else(|e| panic!("{e}"));
    log.write_log(batch).await.unwrap_or_else(|e| panic!("{e}"));
    let listed = store.list_attempts(10, None).await.unwrap_or_default();
    assert_eq!(listed.len(), 3);
    assert_eq!(
        listed[0].tokens,
        Some(TokenUsageView { input: 10, output: 5, cache_read: 2, cache_write: 1 })
    );
    let older = store.list_attempts(10, Some(listed[0].id as i64)).await.unwrap_or_default();
    assert_eq!(older.len(), 2);
    assert_eq!(store.list_attempts_of("r1").await.unwrap_or_default().len(), 2);
    assert_eq!(store.list_failed_attempts(10).await.unwrap_or_default().len(), 1);
    let requests = [
        request("r1", 100, 200, RequestOutcome::ServedAfterFailover),
        request("r2", 200, 429, RequestOutcome::UpstreamRejected),
        request("r3", 300, 200, RequestOutcome::Served),
    ];
    let mut batch = LogBatch::default();
    requests.iter().cloned().for_each(|r| batch.push_request(r));
    log.write_log(batch).await.unwrap_or_else(|e| panic!("{e}"));
    let mut again = LogBatch::default();
    again.push_request(requests[0].clone());
    log.write_log(again).await.unwrap_or_else(|e| panic!("a repeated request id is ignored: {e}"));
    // (The repeated row is still counted: ids are random, it does not happen.)
    let all = store.list_requests(&RequestsQuery::default()).await.unwrap_or_default();
    assert_eq!(all.iter().map(|r| r.request_id.as_str()).collect::<Vec<_>>(), ["r3", "r2", "r1"]);
    let q = RequestsQuery {
        before: Some("r3".to_owned()),
        status: Some("ok".to_owned()),
        model: Some("m1".to_owned()),
        since: Some(UnixMillis(50)),
        until: Some(UnixMillis(250)),
        limit: Some(5),
        ..RequestsQuery::default()
    };
    let filtered = store.list_requests(&q).await.unwrap_or_default();
    assert_eq!(filtered.iter().map(|r| r.request_id.as_str()).collect::<Vec<_>>(), ["r1"]);
    let by_status = RequestsQuery {
        status: Some("429".to_owned()),
        key: Some("key-1".to_owned()),
        ..RequestsQuery::default()
    };
    assert_eq!(store.list_requests(&by_status).await.unwrap_or_default().len(), 1);
    let (entry, trace) =
        store.get_request("r2").await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("r2"));
    assert_eq!(
        (entry.status, entry.outcome, trace.notes),
        (429, RequestOutcome::UpstreamRejected, vec!["note".to_owned()])
    );
    // The summary: per-minute counts.
    let summary = store.summary_counts(UnixMillis(3_700_000)).await.unwrap_or_else(|e| panic!("{e}"));
    let day = &summary.clients_last_day;
    assert_eq!(
        (day.requests, day.served, day.served_after_failover, day.errors, day.attempts, day.failed_attempts),
        (4, 1, 2, 1, 8, 4)
    );
    assert_eq!(summary.clients_last_hour.requests, 0, "the requests are over an hour old");
    assert_eq!((summary.attempts_last_day, summary.attempts_last_hour), ((3, 1), (1, 0)));
    // Retention keeps the newest row of each table; the counts stay.
    assert_eq!(log.prune_log(1).await.unwrap_or(0), 4);
    assert_eq!(store.list_attempts(10, None).await.unwrap_or_default().len(), 1);
    // Four small rows free no page worth giving back.
    assert!(!log.reclaim().await.unwrap_or_else(|e| panic!("{e}")));
    let after = store.summary_counts(UnixMillis(3_700_000)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(after, summary);
    assert_eq!(log.prune_stats(UnixMillis(60_000)).await.unwrap_or(0), 1, "minute 0 is older");
    let pruned = store.summary_counts(UnixMillis(3_700_000)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((pruned.clients_last_day.requests, pruned.attempts_last_day), (0, (1, 0)));

    // A batch lands whole or not at all.
    let batch = store.begin_batch().await.unwrap_or_else(|e| panic!("{e}"));
    batch.put_connection(&connection("c", 2), None).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(batch.get_connection("c").await.unwrap_or(None).is_some(), "a batch reads its own writes");
    batch.rollback_batch().await;
    assert!(store.get_connection("c").await.unwrap_or_else(|e| panic!("{e}")).is_none());
    let batch = store.begin_batch().await.unwrap_or_else(|e| panic!("{e}"));
    batch.put_connection(&connection("c", 2), None).await.unwrap_or_else(|e| panic!("{e}"));
    batch.commit_batch().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(store.get_connection("c").await.unwrap_or_else(|e| panic!("{e}")).is_some());
}

#[tokio::test]
async fn the_sqlite_store_passes_the_suite() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.backend(), Backend::Sqlite);
    suite(&store).await;
}

#[tokio::test]
async fn the_postgres_store_passes_the_suite_and_two_replicas_share_one_lease_book() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.create_database("suite");
    let store = Store::connect_postgres(&url).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.backend(), Backend::Postgres);
    suite(&store).await;

    // Two replicas (two pools), racing for one connection: the database gives one lease.
    let other = Store::connect_postgres(&url)
        .await
        .unwrap_or_else(|e| panic!("a second replica migrates nothing: {e}"));
    let owners: Vec<String> = (10..30).map(owner).collect();
    let slots = vec![("anthropic".to_owned(), "race".to_owned())];
    let mut tasks = Vec::new();
    for (i, o) in owners.iter().enumerate() {
        let replica = if i % 2 == 0 { store.clone() } else { other.clone() };
        let (o, slots) = (o.clone(), slots.clone());
        tasks.push(tokio::spawn(async move {
            replica.acquire_lease(LeaseHolder { owner_hash: &o, api_key_id: "k" }, &slots, NOW, 60_000).await
        }));
    }
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|e| panic!("{e}")) {
            AcquireOutcome::Acquired(_) => won += 1,
            AcquireOutcome::NoFreeConnection { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(won, 1, "exactly one replica hands out the lease");
}

/// `table.column → (type, not null, default)`, `index → definition`: the schema in
/// backend-neutral words.
type Schema = (BTreeMap<String, (String, bool, Option<String>)>, BTreeMap<String, String>);

fn neutral_type(t: &str) -> String {
    match t.to_ascii_lowercase().as_str() {
        "integer" | "bigint" => "integer".to_owned(),
        "text" => "text".to_owned(),
        other => other.to_owned(),
    }
}

async fn sqlite_schema(store: &Store) -> Schema {
    let pool = store.pool();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%'",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let mut columns = BTreeMap::new();
    let mut indexes = BTreeMap::new();
    for t in tables {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT name, type, \"notnull\" AS nn, CAST(dflt_value AS TEXT) AS d, pk FROM pragma_table_info('{t}')"
        )))
        .fetch_all(pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        for r in rows {
            let name: String = r.get("name");
            let pk: i64 = r.get("pk");
            let not_null = r.get::<i64, _>("nn") != 0 || pk > 0;
            let default: Option<String> = r.get("d");
            columns.insert(format!("{t}.{name}"), (neutral_type(r.get("type")), not_null, default));
        }
        let idx = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT name, \"unique\" AS u, partial FROM pragma_index_list('{t}') WHERE origin = 'c'"
        )))
        .fetch_all(pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        for i in idx {
            let name: String = i.get("name");
            let cols: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT name FROM pragma_index_info('{name}') ORDER BY seqno"
            )))
            .fetch_all(pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
            let unique = i.get::<i64, _>("u") != 0;
            let partial = i.get::<i64, _>("partial") != 0;
            indexes.insert(name, format!("{t}({}) unique={unique} partial={partial}", cols.join(",")));
        }
    }
    (columns, indexes)
}

async fn postgres_schema(store: &Store) -> Schema {
    let pool = store.pool();
    let rows = sqlx::query(
        "SELECT CAST(table_name AS TEXT) AS t, CAST(column_name AS TEXT) AS c, CAST(data_type AS TEXT) AS ty, \
                CAST(is_nullable AS TEXT) AS n, CAST(column_default AS TEXT) AS d \
         FROM information_schema.columns WHERE table_schema = 'public' AND table_name NOT LIKE '\\_sqlx%'",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let mut columns = BTreeMap::new();
    for r in rows {
        let (t, c): (String, String) = (r.get("t"), r.get("c"));
        let default: Option<String> = r.get("d");
        // Postgres spells a text default with a cast; identity columns have none.
        let default = default.map(|d| d.trim_end_matches("::text").to_owned());
        columns
            .insert(format!("{t}.{c}"), (neutral_type(r.get("ty")), r.get::<&str, _>("n") == "NO", default));
    }
    let idx = sqlx::query(
        "SELECT CAST(i.relname AS TEXT) AS name, CAST(t.relname AS TEXT) AS tbl, ix.indisunique AS u, \
                ix.indpred IS NOT NULL AS partial, \
                (SELECT string_agg(CAST(a.attname AS TEXT), ',' ORDER BY k.ord) FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord) \
                 JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum) AS cols, \
                CAST(c.contype AS TEXT) AS constraint_kind \
         FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid \
         JOIN pg_namespace n ON n.oid = t.relnamespace \
         LEFT JOIN pg_constraint c ON c.conindid = ix.indexrelid \
         WHERE n.nspname = 'public' AND t.relname NOT LIKE '\\_sqlx%'",
    )
    .fetch_all(pool)
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let mut indexes = BTreeMap::new();
    for i in idx {
        // Constraint-backed indexes (primary keys, UNIQUE columns) are SQLite's
        // automatic indexes, which `origin = 'c'` leaves out there too.
        let constraint: Option<String> = i.try_get("constraint_kind").ok().flatten();
        if constraint.is_some() {
            continue;
        }
        let (name, tbl, cols): (String, String, String) = (i.get("name"), i.get("tbl"), i.get("cols"));
        let (unique, partial): (bool, bool) = (i.get("u"), i.get("partial"));
        indexes.insert(name, format!("{tbl}({cols}) unique={unique} partial={partial}"));
    }
    (columns, indexes)
}

#[tokio::test]
async fn both_migration_sets_give_the_same_schema() {
    let Some(pg) = PgServer::start() else { return };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let sqlite = Store::open(dir.path()).await.unwrap_or_else(|e| panic!("{e}"));
    let postgres =
        Store::connect_postgres(&pg.create_database("schema")).await.unwrap_or_else(|e| panic!("{e}"));
    let (mut lite_cols, lite_idx) = sqlite_schema(&sqlite).await;
    let (mut pg_cols, pg_idx) = postgres_schema(&postgres).await;
    // Identity keys: SQLite's rowid alias has no default, Postgres' identity neither.
    for cols in [&mut lite_cols, &mut pg_cols] {
        for (_, (_, _, default)) in cols.iter_mut() {
            if let Some(d) = default {
                *d = d.trim_matches('\'').to_owned();
            }
        }
    }
    assert!(!lite_cols.is_empty() && !lite_idx.is_empty());
    let only = |a: &BTreeMap<String, (String, bool, Option<String>)>,
                b: &BTreeMap<String, (String, bool, Option<String>)>| {
        a.iter().filter(|(k, v)| b.get(*k) != Some(v)).map(|(k, v)| format!("{k} {v:?}")).collect::<Vec<_>>()
    };
    assert_eq!(
        only(&lite_cols, &pg_cols),
        Vec::<String>::new(),
        "columns SQLite has that Postgres lacks or types differently"
    );
    assert_eq!(
        only(&pg_cols, &lite_cols),
        Vec::<String>::new(),
        "columns Postgres has that SQLite lacks or types differently"
    );
    assert_eq!(lite_idx, pg_idx, "indexes differ");
}
