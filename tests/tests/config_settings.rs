//! SPEC §5 settings from outside the API, end to end: the config file's
//! `[resilience]` table (validated whole like `PATCH /api/resilience`, applied over
//! the stored document at every start, idempotent, a bad table changes nothing) and a
//! stored document that a newer version wrote (unknown fields cost nothing else).

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use switchyard_gateway::{Gateway, GatewayConfig};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml};
use switchyard_types::UnixMillis;

/// A client key, one connection to `up`, then `resilience` (TOML text).
fn config(up: &FakeUpstream, resilience: &str) -> String {
    format!(
        r#"{keys}
[[connections]]
id = "key-a"
provider = "anthropic"
api_key = "sk-a"
base_url = "{up}"

{resilience}
"#,
        keys = client_key_toml(),
        up = up.url(),
    )
}

/// Stops `previous` and starts a gateway on `data_dir` (the first gateway's, whose
/// temporary directory must outlive the restarts), importing `config_toml`.
async fn restart(previous: &mut TestGateway, data_dir: &Path, config_toml: &str) -> TestGateway {
    previous.shutdown().await;
    TestGateway::start_with(config_toml, |c: &mut GatewayConfig| c.data_dir = data_dir.to_owned()).await
}

/// The stored resilience row: `(value_json, updated_at)`.
async fn stored_row(gw: &TestGateway) -> Option<(String, i64)> {
    let pool = gw.gateway().management().store().pool().clone();
    sqlx::query_as("SELECT value_json, updated_at FROM settings WHERE key = 'resilience'")
        .fetch_optional(&pool)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

const LOCKOUT_ON: &str = "[resilience.modelLockout]\nenabled = true\nbaseCooldownMs = 60000\n\n\
                          [resilience.streamRecovery]\nreadinessBudgetMs = 15000\n";

#[tokio::test]
async fn the_resilience_table_sets_settings_the_gateway_uses() {
    let up = FakeUpstream::start(Reply::json(503, wire::anthropic_error("api_error", "down"))).await;
    let gw = TestGateway::start(&config(&up, LOCKOUT_ON)).await;
    // The key, the connection and the settings document.
    assert_eq!(gw.gateway().imported_changes(), 3);

    let settings = gw.mgmt_json("/api/resilience").await;
    assert_eq!(settings["modelLockout"]["enabled"], true);
    assert_eq!(settings["modelLockout"]["baseCooldownMs"], 60_000);
    assert_eq!(settings["streamRecovery"]["readinessBudgetMs"], 15_000);
    // Fields the table does not name keep their defaults.
    assert_eq!(settings["modelLockout"]["maxCooldownMs"], 1_800_000);
    assert_eq!(settings["streamRecovery"]["attemptDeadlineMs"], 1_800_000);
    assert_eq!(gw.mgmt_json("/api/resilience/model-lockout").await["enabled"], true);

    // In use: a 503 now locks the model, for the table's base cooldown (not 120 s).
    let request = json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []});
    let _ = gw.post("/v1/messages", &request).await;
    let lockouts = gw.mgmt_json("/api/resilience/model-cooldowns").await;
    let lockout = lockouts
        .as_array()
        .and_then(|l| l.iter().find(|x| x["connection"] == "key-a"))
        .cloned()
        .unwrap_or_else(|| panic!("no lockout in {lockouts}"));
    assert_eq!(lockout["model"], "claude-sonnet-4-6", "{lockout}");
    let remaining = lockout["remainingMs"].as_u64().unwrap_or_default();
    assert!((50_000..=60_000).contains(&remaining), "{lockout}");
}

#[tokio::test]
async fn fields_the_table_does_not_name_keep_their_stored_values_across_restarts() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let file = config(&up, LOCKOUT_ON);
    let mut first = TestGateway::start(&file).await;
    first
        .patch_settings(&json!({"requestQueue": {"maxWaitMs": 7000}, "modelLockout": {"maxBackoffSteps": 3}}))
        .await;
    let row = stored_row(&first).await;
    let data = first.dir.path().join("data");

    // Same file again: nothing to change, the stored row is untouched.
    let mut second = restart(&mut first, &data, &file).await;
    assert_eq!(second.gateway().imported_changes(), 0);
    assert_eq!(stored_row(&second).await, row);
    let s = second.mgmt_json("/api/resilience").await;
    assert_eq!(s["requestQueue"]["maxWaitMs"], 7000);
    assert_eq!(s["modelLockout"]["maxBackoffSteps"], 3);
    assert_eq!(s["modelLockout"]["enabled"], true);

    // A field the file names is the file's again at the next start; the rest stays.
    second.patch_settings(&json!({"modelLockout": {"enabled": false}, "sessionAffinityTtlMs": 60000})).await;
    let mut third = restart(&mut second, &data, &file).await;
    assert_eq!(third.gateway().imported_changes(), 1);
    let s = third.mgmt_json("/api/resilience").await;
    assert_eq!(s["modelLockout"]["enabled"], true);
    assert_eq!(s["sessionAffinityTtlMs"], 60_000);
    assert_eq!(s["requestQueue"]["maxWaitMs"], 7000);

    // A changed table changes only what it names, once.
    let changed = config(&up, "[resilience.modelLockout]\nenabled = false\n");
    let mut fourth = restart(&mut third, &data, &changed).await;
    assert_eq!(fourth.gateway().imported_changes(), 1);
    let row = stored_row(&fourth).await;
    let s = fourth.mgmt_json("/api/resilience").await;
    assert_eq!(s["modelLockout"]["enabled"], false);
    assert_eq!(s["modelLockout"]["baseCooldownMs"], 60_000);
    assert_eq!(s["streamRecovery"]["readinessBudgetMs"], 15_000);
    assert_eq!(s["modelLockout"]["maxBackoffSteps"], 3);
    let fifth = restart(&mut fourth, &data, &changed).await;
    assert_eq!(fifth.gateway().imported_changes(), 0);
    assert_eq!(stored_row(&fifth).await, row);
}

#[tokio::test]
async fn a_bad_table_names_every_bad_field_and_changes_nothing() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let mut gw = TestGateway::start(&config(&up, "")).await;
    gw.patch_settings(&json!({"requestQueue": {"maxWaitMs": 7000}})).await;
    let row = stored_row(&gw).await;
    assert!(row.is_some());
    gw.shutdown().await;

    let bad = format!(
        "{}\n[[connections]]\nid = \"key-new\"\nprovider = \"anthropic\"\napi_key = \"sk-n\"\n",
        config(
            &up,
            "[resilience]\nbogus = 1\n\n[resilience.modelLockout]\nenabled = true\nbaseCooldownMs = 1\n\n\
             [resilience.streamRecovery]\nreadinessBudgetMs = 900000\nattemptDeadlineMs = \"long\"\n",
        )
    );
    let path = gw.dir.path().join("bad.toml");
    std::fs::write(&path, bad).unwrap_or_else(|e| panic!("{e}"));
    let mut config = GatewayConfig::new(gw.dir.path().join("data"));
    config.listen = "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}"));
    config.config_file = Some(path);
    let error = match Gateway::start(config).await {
        Ok(_) => panic!("a bad [resilience] table must not start"),
        Err(e) => format!("{e:#}"),
    };
    for expected in [
        "resilience /bogus: unknown field `bogus`",
        "resilience /modelLockout/baseCooldownMs: must be a whole number from 5,000 to 600,000 ms (got 1)",
        "resilience /streamRecovery/readinessBudgetMs: must be a whole number from 1,000 to 600,000 ms (got 900000)",
        "resilience /streamRecovery/attemptDeadlineMs: invalid type: string \"long\"",
    ] {
        assert!(error.contains(expected), "missing {expected:?} in:\n{error}");
    }

    // Nothing was written: the stored document and the connections are as before.
    let again =
        TestGateway::start_with("", |c: &mut GatewayConfig| c.data_dir = gw.dir.path().join("data")).await;
    assert_eq!(stored_row(&again).await, row);
    let s = again.mgmt_json("/api/resilience").await;
    assert_eq!(
        (s["requestQueue"]["maxWaitMs"].clone(), s["modelLockout"]["enabled"].clone()),
        (json!(7000), json!(false))
    );
    let ids: Vec<Value> = again
        .mgmt_json("/api/providers")
        .await
        .as_array()
        .map(|l| l.iter().map(|c| c["id"].clone()).collect())
        .unwrap_or_default();
    assert_eq!(ids, vec![json!("key-a")]);
}

/// A `tracing` writer that keeps everything written.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
            .into_owned()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_stored_document_from_a_newer_version_keeps_every_known_value() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let mut gw = TestGateway::start(&config(&up, "")).await;
    gw.patch_settings(&json!({
        "requestQueue": {"maxWaitMs": 7000},
        "modelLockout": {"enabled": true, "errorCodes": [429, 503]},
        "streamRecovery": {"readinessBudgetMs": 20000},
    }))
    .await;
    // What a newer version might write: new groups and fields, and a field whose
    // type changed.
    let (text, _) = stored_row(&gw).await.unwrap_or_else(|| panic!("nothing stored"));
    let mut doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    doc["futureGroup"] = json!({"enabled": true});
    doc["modelLockout"]["jitterRatio"] = json!(0.25);
    doc["providerBreaker"]["oauth"]["cooldownByKind"]["overloaded"] = json!(5000);
    doc["sessionAffinityTtlMs"] = json!("1h");
    let store = gw.gateway().management().store().clone();
    store.put_setting("resilience", &doc, UnixMillis(1), None).await.unwrap_or_else(|e| panic!("{e}"));

    let data = gw.dir.path().join("data");
    let again = restart(&mut gw, &data, "").await;
    let s = again.mgmt_json("/api/resilience").await;
    assert_eq!(s["requestQueue"]["maxWaitMs"], 7000);
    assert_eq!(s["modelLockout"]["enabled"], true);
    assert_eq!(s["modelLockout"]["errorCodes"], json!([429, 503]));
    assert_eq!(s["streamRecovery"]["readinessBudgetMs"], 20_000);
    // Only the unreadable field fell back to its default.
    assert_eq!(s["sessionAffinityTtlMs"], 0);
    assert!(s.get("futureGroup").is_none());

    let logs = captured.text();
    for path in
        ["/futureGroup", "/modelLockout/jitterRatio", "/providerBreaker/oauth/cooldownByKind/overloaded"]
    {
        let line = logs
            .lines()
            .find(|l| l.contains("settings.stored_unknown_field") && l.contains(&format!("path={path} ")))
            .unwrap_or_else(|| panic!("no warning for {path} in:\n{logs}"));
        assert!(line.contains("WARN"), "{line}");
    }
    assert!(
        logs.lines()
            .any(|l| l.contains("settings.stored_bad_value") && l.contains("path=/sessionAffinityTtlMs")),
        "{logs}"
    );
    assert!(!logs.contains("settings.stored_unreadable"), "{logs}");
}

#[tokio::test]
async fn a_stored_value_out_of_range_does_not_block_later_patches() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let gw = TestGateway::start(&config(&up, "")).await;
    // An older version (or a hand edit) stored a readiness budget above today's maximum.
    let store = gw.gateway().management().store().clone();
    let doc =
        json!({"streamRecovery": {"readinessBudgetMs": 9_999_999}, "requestQueue": {"maxWaitMs": 7000}});
    store.put_setting("resilience", &doc, UnixMillis(1), None).await.unwrap_or_else(|e| panic!("{e}"));
    // A patch of another field is accepted; the stored value is brought into range.
    gw.patch_settings(&json!({"sessionAffinityTtlMs": 60_000})).await;
    let s = gw.mgmt_json("/api/resilience").await;
    assert_eq!(s["sessionAffinityTtlMs"], 60_000);
    assert_eq!(s["requestQueue"]["maxWaitMs"], 7000);
    assert_eq!(s["streamRecovery"]["readinessBudgetMs"], 600_000, "{s}");
}
