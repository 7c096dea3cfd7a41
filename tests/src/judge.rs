//! The official SDKs as judges: `tests/python/judge.py` runs a batch of requests
//! through the gateway with the Python `anthropic` and `openai` SDKs (pinned in
//! `tests/python/requirements.txt`) and returns what each SDK parsed.
//!
//! The interpreter is `SWITCHYARD_PYTHON` (the test command creates a virtualenv
//! with the pinned SDKs and sets it). Without it the judged tests skip with a
//! notice, unless `SWITCHYARD_REQUIRE_PYTHON=1` (set by `scripts/test.sh`, so CI can
//! never skip them silently).

use std::path::PathBuf;

use serde_json::Value;

/// The interpreter with the SDKs, or `None` (after a notice) when the test may skip.
pub fn sdk_python() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("SWITCHYARD_PYTHON") {
        return Some(PathBuf::from(path));
    }
    assert!(
        std::env::var("SWITCHYARD_REQUIRE_PYTHON").as_deref() != Ok("1"),
        "SWITCHYARD_PYTHON is not set (scripts/test.sh creates the SDK virtualenv)"
    );
    eprintln!(
        "SKIPPED: SWITCHYARD_PYTHON not set; run scripts/test.sh or point it at a python with tests/python/requirements.txt"
    );
    None
}

/// Runs `cases` (see `judge.py`) and returns one result per case, in order.
pub async fn judge(python: &std::path::Path, cases: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = dir.path().join("cases.json");
    std::fs::write(&file, serde_json::to_vec(cases).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/judge.py");
    let out = tokio::process::Command::new(python)
        .arg(&script)
        .arg(&file)
        .env("NO_PROXY", "127.0.0.1")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "judge.py failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let results: Vec<Value> =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("judge.py printed no JSON ({e}): {stdout}"));
    assert_eq!(results.len(), cases.len(), "one result per case");
    results
}
