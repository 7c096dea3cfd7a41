//! Start-up and shutdown: in-flight streams finish within the grace period, a stream
//! that never ends is cut at the bound, the request log is flushed and pruned to its
//! retention, and the database lives in the data directory in WAL mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, StreamEnd, wire};
use switchyard_tests::{TestGateway, client_key_toml, text};
use switchyard_types::UnixMillis;

fn config(up: &FakeUpstream) -> String {
    format!(
        "{}\n[[connections]]\nid = \"a\"\nprovider = \"anthropic\"\napi_key = \"k\"\nbase_url = \"{}\"\n",
        client_key_toml(),
        up.url()
    )
}

fn request() -> serde_json::Value {
    json!({"model": "claude-x", "stream": true, "messages": []})
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_stream_finish() {
    let frames = wire::anthropic_sse("claude-x", "slow but complete");
    let slow = Reply::Sse {
        status: 200,
        headers: vec![],
        frames: frames.iter().map(|f| (Duration::from_millis(60), f.clone())).collect(),
        end: StreamEnd::Complete,
    };
    let up = FakeUpstream::start(slow).await;
    let mut gw = TestGateway::start(&config(&up)).await;
    let url = gw.url("/v1/messages");

    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    let reader = tokio::spawn(text(response));
    // Real time on purpose: the fake upstream paces its frames 60 ms apart in real
    // time, and this lets the stream be mid-way when the shutdown begins.
    tokio::time::sleep(Duration::from_millis(100)).await;
    gw.shutdown().await;
    assert_eq!(reader.await.unwrap_or_default(), frames.concat());

    // After shutdown the port no longer accepts requests.
    let after = reqwest::Client::new().post(url).json(&request()).send().await;
    assert!(after.is_err());
}

#[tokio::test]
async fn shutdown_is_bounded_by_the_grace_period() {
    let frames = wire::anthropic_sse("claude-x", "never ends");
    let up = FakeUpstream::start(Reply::sse(frames[..1].to_vec()).ending(StreamEnd::Hang)).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let mut gw = TestGateway::start_with(&config(&up), move |cfg| {
        cfg.shutdown_grace = Duration::from_secs(30);
        cfg.clock = c;
    })
    .await;
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    // The grace period runs on the gateway's clock: the stream that never ends holds
    // the shutdown until the test moves the clock past 30 s, not a moment before.
    let past_grace = AtomicBool::new(false);
    let drive = async {
        let grace_armed = || {
            clock.pending_in().iter().any(|d| (Duration::from_secs(29)..=Duration::from_secs(30)).contains(d))
        };
        for _ in 0..500 {
            if grace_armed() {
                break;
            }
            // Polling for the shutdown to arm its grace timer, not a wait for time.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(grace_armed(), "no grace timer: {:?}", clock.pending_in());
        clock.advance_ms(29_900);
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        past_grace.store(true, Ordering::SeqCst);
        clock.advance_ms(100);
    };
    let shutdown = async {
        gw.shutdown().await;
        assert!(past_grace.load(Ordering::SeqCst), "shutdown ended before its grace period");
    };
    tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(shutdown, drive) })
        .await
        .unwrap_or_else(|_| panic!("shutdown did not end once the grace period was over"));
    drop(response);
}

#[tokio::test]
async fn an_open_ui_change_feed_does_not_hold_the_shutdown() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-x", "ok"))).await;
    // On a manual clock the 30 s grace never elapses by itself: the shutdown ends
    // only if the open `/api/events` stream ends when it starts.
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let mut gw = TestGateway::start_with(&config(&up), move |cfg| {
        cfg.shutdown_grace = Duration::from_secs(30);
        cfg.clock = c;
    })
    .await;
    let mut feed =
        gw.mgmt(reqwest::Method::GET, "/api/events").send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(feed.status(), 200);
    let read_to_end = tokio::spawn(async move { while let Ok(Some(_)) = feed.chunk().await {} });
    tokio::time::timeout(Duration::from_secs(10), gw.shutdown())
        .await
        .unwrap_or_else(|_| panic!("an open change feed held the shutdown"));
    tokio::time::timeout(Duration::from_secs(10), read_to_end)
        .await
        .unwrap_or_else(|_| panic!("the change feed stayed open after the shutdown"))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test]
async fn the_request_log_is_flushed_and_kept_within_its_retention() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-x", "ok"))).await;
    let mut gw = TestGateway::start_with(&config(&up), |c| c.log_retention_rows = 5).await;
    for _ in 0..12 {
        let r = gw.post("/v1/messages", &json!({"model": "claude-x", "messages": []})).await;
        assert_eq!(r.status(), 200);
    }
    let db = gw.dir.path().join("data").join("switchyard.sqlite");
    gw.shutdown().await;

    let options = format!("sqlite://{}", db.display());
    let pool = sqlx::SqlitePool::connect(&options).await.unwrap_or_else(|e| panic!("{e}"));
    let (count, max_id): (i64, i64) = sqlx::query_as("SELECT COUNT(*), MAX(id) FROM request_log")
        .fetch_one(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((count, max_id), (5, 12));
    let (mode,): (String,) =
        sqlx::query_as("PRAGMA journal_mode").fetch_one(&pool).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(mode, "wal");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&db).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600, "database file must be owner-only");
    }
}

/// With the embedded file, which only this process reads (and every read flushes
/// first), a request-log batch stays open 30 s of the gateway clock: a batch costs
/// ~1 ms of CPU at an agent's pace however few its rows. Team mode keeps 5 s
/// (team_mode.rs), since other replicas read without this one's flush.
#[tokio::test]
async fn a_local_log_batch_is_written_thirty_seconds_after_its_first_row() {
    const BATCH: Duration = Duration::from_secs(30);
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("claude-x", "ok"))).await;
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let gw = TestGateway::start_with(&config(&up), move |cfg| cfg.clock = c).await;
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        gw.dir.path().join("data/switchyard.sqlite").display()
    ))
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let logged = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM request_log").fetch_one(&pool).await.unwrap_or(-1)
    };
    let r = gw.post("/v1/messages", &json!({"model": "claude-x", "messages": []})).await;
    assert_eq!(r.status(), 200);
    // The row opened a batch: the writer arms its timer on the gateway's clock. It
    // is not the only 30 s timer: the idle client connection's header-read timeout
    // and the upstream pool's idle reaper are armed at the same instant of this
    // clock, often before the row reaches the writer (it is queued after the answer
    // is written). So wait until the 30 s timers stop changing, not for the first.
    let thirty = || clock.pending_in().iter().filter(|&&d| d == BATCH).count();
    let (mut seen, mut unchanged) = (thirty(), 0);
    for _ in 0..2_000 {
        if seen > 0 && unchanged >= 40 {
            break;
        }
        // Polling for the writer's timer, not waiting out a duration.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let now = thirty();
        unchanged = if now == seen { unchanged + 1 } else { 0 };
        seen = now;
    }
    assert!(clock.pending_in().contains(&BATCH), "no 30 s batch timer: {:?}", clock.pending_in());
    clock.advance(BATCH - Duration::from_millis(1));
    tokio::task::yield_now().await;
    assert_eq!(logged().await, 0, "the batch is still open 1 ms before its 30 s");
    clock.advance_ms(1);
    for _ in 0..2_000 {
        if logged().await == 1 {
            break;
        }
        // Polling the writer's background write.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(logged().await, 1, "written when the batch is due");
}
