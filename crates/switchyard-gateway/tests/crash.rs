//! `kill -9` mid-work leaves the database whole (issue 10, item 4). A config import
//! leaves the old state or the whole new one: 20 rounds, each starting `switchyard
//! serve` with a config of 300 connections and 40 client keys and killing it at a
//! different point of its start-up (spread over the time a full import takes);
//! after each kill the database passes `integrity_check` and holds all of that
//! round's items or none. Settings writes: 20 rounds killed mid-stream of PATCHes.

mod common;

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{serve, stop};

const CONNECTIONS: usize = 300;
const KEYS: usize = 40;
const ROUNDS: usize = 20;

fn config(round: usize) -> String {
    let mut toml = String::new();
    for i in 0..KEYS {
        let _ = write!(
            toml,
            "[[api_keys]]\nname = \"key-{round}-{i}\"\nkey = \"sy-crash-{round}-{i}-0123456789\"\n\n"
        );
    }
    // The same 300 ids every round, renamed: a round replaces the last one's rows.
    for i in 0..CONNECTIONS {
        let _ = write!(
            toml,
            "[[connections]]\nid = \"c-{i}\"\nname = \"r{round}-{i}\"\nprovider = \"openai\"\n\
             api_key = \"sk-crash-{round}-{i}\"\nbase_url = \"http://127.0.0.1:9\"\n\n"
        );
    }
    toml
}

/// `(connections, keys)` of `round` in the database, and its integrity check.
fn state(db: &std::path::Path, round: usize) -> (i64, i64, String) {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    runtime.block_on(async {
        let url = format!("sqlite://{}", db.display());
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap_or_else(|e| panic!("{e}"));
        let count = |sql: String| {
            let pool = pool.clone();
            async move {
                sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql)).fetch_one(&pool).await.unwrap_or(-1)
            }
        };
        let connections =
            count(format!("SELECT COUNT(*) FROM connections WHERE name LIKE 'r{round}-%'")).await;
        let keys = count(format!("SELECT COUNT(*) FROM api_keys WHERE name LIKE 'key-{round}-%'")).await;
        let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(&pool)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        pool.close().await;
        (connections, keys, integrity)
    })
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "a crash test kills a real process at real points of its work: it measures and waits in real time"
)]
fn kill_9_during_an_import_leaves_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = dir.path().join("data");
    let db = data.join("switchyard.sqlite");

    // How long a whole import takes here: the kills are spread over it.
    let first = dir.path().join("round-0.toml");
    std::fs::write(&first, config(0)).unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let served = serve(&data, &["--config", first.to_str().unwrap_or_default()]);
    let full = started.elapsed();
    stop(served);
    assert_eq!(state(&db, 0), (CONNECTIONS as i64, KEYS as i64, "ok".to_owned()));

    let mut outcomes = Vec::new();
    for round in 1..=ROUNDS {
        let file = dir.path().join(format!("round-{round}.toml"));
        std::fs::write(&file, config(round)).unwrap_or_else(|e| panic!("{e}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .arg("--config")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        // Kill points from 5 % to 120 % of a full start-up with its import. Real time
        // on purpose: the point of the test is a process killed while it works.
        let at = full.mul_f64(0.05 + 1.15 * (round as f64 - 1.0) / (ROUNDS as f64 - 1.0));
        std::thread::sleep(at);
        let _ = Command::new("kill").args(["-9", &child.id().to_string()]).status();
        let _ = child.wait();
        let (connections, keys, integrity) = state(&db, round);
        assert_eq!(integrity, "ok", "round {round}: database damaged");
        let whole = (CONNECTIONS as i64, KEYS as i64);
        assert!(
            (connections, keys) == (0, 0) || (connections, keys) == whole,
            "round {round} (killed after {at:?} of {full:?}): {connections} connections and {keys} keys survived"
        );
        outcomes.push(connections > 0);
    }
    eprintln!(
        "import rounds: {} complete, {} rolled back (a full start-up with the import took {full:?})",
        outcomes.iter().filter(|c| **c).count(),
        outcomes.iter().filter(|c| !**c).count()
    );
}

/// `kill -9` while settings writes stream in: after each kill the database is
/// intact and the stored settings document is one whole write (two fields every
/// write sets together agree), at a version no older than the last acknowledged one.
#[test]
#[expect(clippy::disallowed_methods, reason = "a crash test kills a real process at real points of its work")]
fn kill_9_during_settings_writes_leaves_one_whole_document() {
    const TOKEN: &str = "sym-crash-settings-token";
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = dir.path().join("data");
    let db = data.join("switchyard.sqlite");
    let mut rounds_with_writes = 0;
    for round in 0..ROUNDS {
        let served = serve(&data, &["--management-token", TOKEN]);
        let url = format!("{}/api/resilience", served.base_url);
        let pid = served.child.id();
        let mut child = served.child;
        // A writer thread patches as fast as it can; the kill lands mid-stream.
        let acknowledged = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let acked = acknowledged.clone();
        let writer = std::thread::spawn(move || {
            for n in 0..10_000_u64 {
                // Both fields carry the same number: a half-written document would
                // show two different ones.
                let ms = 10_000 + (round as u64 * 1_000 + n) % 500_000;
                let body =
                    format!("{{\"streamRecovery\":{{\"stallBudgetMs\":{ms},\"readinessBudgetMs\":{ms}}}}}");
                let (status, answer) = common::http("PATCH", &url, Some(TOKEN), Some(&body));
                if status != 200 {
                    return;
                }
                let version = serde_json::from_str::<serde_json::Value>(&answer)
                    .ok()
                    .and_then(|v| v["version"].as_u64())
                    .unwrap_or(0);
                acked.store(version, std::sync::atomic::Ordering::SeqCst);
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(20 + 7 * round as u64));
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        let _ = child.wait();
        let _ = writer.join();
        let last_ack = acknowledged.load(std::sync::atomic::Ordering::SeqCst);

        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let (integrity, doc, version) = runtime.block_on(async {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            let integrity: String =
                sqlx::query_scalar("PRAGMA integrity_check").fetch_one(&pool).await.unwrap_or_default();
            let row: Option<(String, i64)> =
                sqlx::query_as("SELECT value_json, version FROM settings WHERE key = 'resilience'")
                    .fetch_optional(&pool)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
            pool.close().await;
            let (json, version) = row.unwrap_or_default();
            (integrity, serde_json::from_str::<serde_json::Value>(&json).unwrap_or_default(), version)
        });
        assert_eq!(integrity, "ok", "round {round}");
        if last_ack > 0 {
            rounds_with_writes += 1;
            let stall = &doc["streamRecovery"]["stallBudgetMs"];
            assert_eq!(
                stall, &doc["streamRecovery"]["readinessBudgetMs"],
                "round {round}: a torn document {doc}"
            );
            assert!(
                u64::try_from(version).unwrap_or(0) >= last_ack,
                "round {round}: acknowledged version {last_ack} lost (stored {version})"
            );
        }
    }
    assert!(rounds_with_writes >= ROUNDS / 2, "only {rounds_with_writes} rounds wrote before the kill");
}
