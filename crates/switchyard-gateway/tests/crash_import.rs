//! `kill -9` during a config import leaves the old state or the whole new one
//! (issue 10, item 4): 20 rounds, each starting `switchyard serve` with a config of
//! 300 new connections and 40 client keys and killing it at a different point of
//! its start-up (spread over the time a full import takes). After each kill the
//! database passes `integrity_check` and holds all of that round's items or none.

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
