//! Every recorded provider answer in the upstream-recordings folder, replayed by a
//! fake upstream of its format and translated to each other format, must be parsed
//! by that format's official SDK without error (an error the provider itself reported
//! must arrive as the SDK's API error, not as a parse failure). The folder is
//! enumerated, so a new recording is covered without new code.
//!
//! The folder is `SWITCHYARD_RECORDINGS`, else `../shared/fixtures/upstream-recordings`
//! beside the workspace when it exists, else the copy kept in `tests/fixtures/`
//! (byte for byte, with its licenses) for clones that have no `shared` folder.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use switchyard_testkit::Reply;
use switchyard_tests::formats::{FORMATS, Fmt, fakes_and_gateway};
use switchyard_tests::judge::{judge, sdk_python};
use switchyard_tests::{CLIENT_KEY, MANAGEMENT_TOKEN};

fn recordings_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("SWITCHYARD_RECORDINGS") {
        return PathBuf::from(dir);
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = workspace.join("../shared/fixtures/upstream-recordings");
    if shared.is_dir() {
        return shared;
    }
    workspace.join("tests/fixtures/upstream-recordings")
}

/// One replayable answer.
struct Recording {
    name: String,
    format: Fmt,
    body: Vec<u8>,
    sse: bool,
    /// The provider reported an error (an error body, or an error event).
    error: bool,
}

/// Whether an SSE body carries an error event (by its JSON, not its bytes).
fn stream_has_error(body: &[u8]) -> bool {
    String::from_utf8_lossy(body).lines().filter_map(|l| l.strip_prefix("data:")).any(|d| {
        serde_json::from_str::<Value>(d.trim()).is_ok_and(|v| {
            v.get("error").is_some_and(|e| !e.is_null()) && v.get("type").is_none_or(|t| t == "error")
                || v["type"] == "error"
                || v["type"] == "response.failed"
        })
    })
}

/// Splits a body holding several Responses streams back to back at each
/// `response.created`.
fn split_responses(body: &[u8]) -> Vec<Vec<u8>> {
    let text = String::from_utf8_lossy(body);
    let mut parts: Vec<String> = Vec::new();
    for frame in text.split_inclusive("\n\n") {
        if frame.contains("\"type\":\"response.created\"") || parts.is_empty() {
            parts.push(String::new());
        }
        if let Some(last) = parts.last_mut() {
            last.push_str(frame);
        }
    }
    parts.into_iter().map(String::into_bytes).collect()
}

fn load(dir: &Path) -> Vec<Recording> {
    let mut out = Vec::new();
    for (folder, format) in [
        ("anthropic-messages", Fmt::Messages),
        ("openai-chat", Fmt::Chat),
        ("openai-responses", Fmt::Responses),
    ] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(folder))
            .unwrap_or_else(|e| panic!("{}: {e}", dir.join(folder).display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for path in files {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            // `.chunks.txt` has its replayable `.sse` beside it; a cassette its `.sse`/`.json`.
            let sse = name.ends_with(".sse")
                || name.ends_with(".bin")
                || (name.ends_with(".txt") && !name.ends_with(".chunks.txt"));
            if !sse && !name.ends_with(".json") {
                continue;
            }
            let mut body = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            if sse {
                // Some raw captures end right after the last `data:` line.
                if !body.ends_with(b"\n\n") {
                    body.extend_from_slice(if body.ends_with(b"\n") { b"\n" } else { b"\n\n" });
                }
                let pieces = if format == Fmt::Responses { split_responses(&body) } else { vec![body] };
                let many = pieces.len() > 1;
                for (i, piece) in pieces.into_iter().enumerate() {
                    let name =
                        if many { format!("{folder}/{name}#{}", i + 1) } else { format!("{folder}/{name}") };
                    let error = stream_has_error(&piece);
                    out.push(Recording { name, format, body: piece, sse: true, error });
                }
            } else {
                let v: Value = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
                let error = v.get("error").is_some_and(|e| !e.is_null()) || v["type"] == "error";
                out.push(Recording { name: format!("{folder}/{name}"), format, body, sse: false, error });
            }
        }
    }
    out
}

fn reply(r: &Recording) -> Reply {
    let (status, content_type) = match (r.sse, r.error) {
        (true, _) => (200, "text/event-stream"),
        (false, true) => (400, "application/json"),
        (false, false) => (200, "application/json"),
    };
    Reply::Body { status, headers: vec![], body: r.body.clone().into(), content_type: content_type.into() }
}

fn request(client: Fmt) -> Value {
    match client {
        Fmt::Messages => json!({"max_tokens": 1024, "messages": [{"role": "user", "content": "Hello"}]}),
        Fmt::Chat => json!({"messages": [{"role": "user", "content": "Hello"}]}),
        Fmt::Responses => json!({"input": "Hello"}),
    }
}

#[tokio::test]
async fn every_recording_replays_through_every_translated_direction() {
    let Some(python) = sdk_python() else { return };
    let dir = recordings_dir();
    let recordings = load(&dir);
    assert!(recordings.len() >= 40, "only {} recordings found in {}", recordings.len(), dir.display());
    let (fakes, gw) = fakes_and_gateway().await;

    // Answers first, in one batch; then each provider error on its own, after the
    // cooldown the previous one rightly caused is cleared.
    let mut cases = Vec::new();
    let mut batch = Vec::new();
    let clear =
        json!({"url": gw.url("/api/resilience/cooldowns"), "json": {"all": true}, "token": MANAGEMENT_TOKEN});
    for r in &recordings {
        for client in FORMATS.into_iter().filter(|c| *c != r.format) {
            let fake = &fakes.iter().find(|(f, _)| *f == r.format).unwrap_or_else(|| panic!("fake")).1;
            fake.push(reply(r));
            let name = format!("{} → {}", r.name, client.name());
            batch.push(json!({
                "name": name, "client": client.name(), "base_url": gw.gateway().base_url(), "api_key": CLIENT_KEY,
                "model": format!("{}/recorded", r.format.provider()), "stream": r.sse, "request": request(client),
                // A provider error may rightly cool the connection: each case starts clear.
                "before": clear,
            }));
            cases.push((name, r.error));
        }
    }
    let results = judge(&python, &batch).await;
    let mut failures = Vec::new();
    for ((name, error), res) in cases.iter().zip(&results) {
        let passed = if *error { res["ok"] == false && res["api_error"] == true } else { res["ok"] == true };
        if !passed {
            let shown: String = res.to_string().chars().take(1_500).collect();
            failures.push(format!("{name} (provider error expected: {error}): {shown}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} replays failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
