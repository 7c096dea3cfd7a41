//! The real agents, offline, through the gateway to fake upstreams: Claude Code
//! (`claude -p`, Anthropic Messages over SSE) and Codex CLI (`codex exec`, OpenAI
//! Responses over SSE), at the versions pinned in the root package.json and run as
//! `../shared/CLIENTS.md` describes.
//!
//! The binaries come from `npm ci` at the workspace root (the test command runs it).
//! Without them these tests skip with a notice, unless `SWITCHYARD_REQUIRE_AGENTS=1`
//! (set by `scripts/test.sh`, so CI can never skip them silently).

use std::path::PathBuf;
use std::time::Duration;

use switchyard_testkit::{FakeUpstream, RecordedRequest, Reply, wire};
use switchyard_tests::{CLIENT_KEY, TestGateway, client_key_toml};
use tokio::process::Command;

fn agent_bin(name: &str, env: &str) -> Option<PathBuf> {
    if let Ok(path) = std::env::var(env) {
        return Some(PathBuf::from(path));
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../node_modules/.bin").join(name);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var("SWITCHYARD_REQUIRE_AGENTS").as_deref() != Ok("1"),
        "{name} is not installed (run `npm ci` at the workspace root)"
    );
    eprintln!("SKIPPED: {name} not installed; run `npm ci` at the workspace root");
    None
}

fn describe(requests: &[RecordedRequest]) -> String {
    requests
        .iter()
        .map(|r| {
            format!(
                "{} {}?{} model={}",
                r.method,
                r.path,
                r.query.clone().unwrap_or_default(),
                r.json()["model"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Claude Code pointed at `gw` with the client key, offline and with a private
/// home, as `../shared/CLIENTS.md` describes.
fn claude_command(claude: &std::path::Path, home: &std::path::Path, gw: &TestGateway) -> Command {
    let mut command = Command::new(claude);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TERM", "dumb")
        .env("ANTHROPIC_BASE_URL", gw.gateway().base_url())
        .env("ANTHROPIC_AUTH_TOKEN", CLIENT_KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1");
    command
}

/// `codex exec "say hi"` pointed at `gw` with the client key, offline, with a private
/// home (Codex runs its tools in a sandbox that dislikes /tmp homes, so it sits
/// beside the build's temp dir); its last message lands in the returned file.
fn codex_command(codex: &std::path::Path, gw: &TestGateway) -> (tempfile::TempDir, PathBuf, Command) {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap_or_else(|e| panic!("{e}"));
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap_or_else(|e| panic!("{e}"));
    let out_file = home.path().join("last_message.txt");
    let provider = format!(
        "model_providers.switchyard={{name=\"switchyard\",base_url=\"{}/v1\",env_key=\"SY_KEY\",wire_api=\"responses\",request_max_retries=1,stream_max_retries=1}}",
        gw.gateway().base_url()
    );
    let mut command = Command::new(codex);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", &codex_home)
        .env("TERM", "dumb")
        .env("SY_KEY", CLIENT_KEY)
        .current_dir(home.path())
        .args(["exec", "--skip-git-repo-check", "--ephemeral", "--color", "never", "-m", "gpt-5.5"])
        .args(["-c", "model_provider=switchyard", "-c", &provider])
        .args([
            "-c",
            "analytics.enabled=false",
            "-c",
            "features.plugins=false",
            "-c",
            "check_for_update_on_startup=false",
        ])
        .arg("-o")
        .arg(&out_file)
        .arg("say hi");
    (home, out_file, command)
}

async fn run(mut command: Command) -> (bool, String, String) {
    command.kill_on_drop(true).stdin(std::process::Stdio::null());
    let output = match tokio::time::timeout(Duration::from_secs(180), command.output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => panic!("cannot run agent: {e}"),
        Err(_) => panic!("agent did not finish within 180 s"),
    };
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs an agent to its end and asserts it succeeded; returns its standard output
/// and what `upstream` saw.
async fn run_ok(agent: &str, command: Command, upstream: &FakeUpstream) -> (String, Vec<RecordedRequest>) {
    let (ok, stdout, stderr) = run(command).await;
    let requests = upstream.requests();
    assert!(ok, "{agent} failed\nstdout: {stdout}\nstderr: {stderr}\nupstream saw:\n{}", describe(&requests));
    (stdout, requests)
}

/// What `claude -p --output-format json` printed: a result that is not an error
/// and says `expected`.
fn assert_claude_result(stdout: &str, expected: &str) {
    let result: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(result["is_error"], false, "{stdout}");
    assert_eq!(result["result"], expected, "{stdout}");
}

/// Codex CLI's one prompt through `gw`, asserted to have ended with `expected` as
/// its last message; returns what `upstream` saw.
async fn codex_says(
    codex: &std::path::Path,
    gw: &TestGateway,
    upstream: &FakeUpstream,
    expected: &str,
) -> Vec<RecordedRequest> {
    let (_home, out_file, command) = codex_command(codex, gw);
    let (stdout, requests) = run_ok("codex", command, upstream).await;
    let last = std::fs::read_to_string(&out_file).unwrap_or_default();
    assert_eq!(last.trim(), expected, "stdout: {stdout}");
    requests
}

/// The first request the upstream saw on `path`.
fn request_to<'a>(requests: &'a [RecordedRequest], path: &str) -> &'a RecordedRequest {
    requests
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no {path} request:\n{}", describe(requests)))
}

#[tokio::test]
async fn claude_code_runs_through_the_gateway() {
    let Some(claude) = agent_bin("claude", "SWITCHYARD_CLAUDE_BIN") else { return };
    let upstream = FakeUpstream::start(Reply::sse(wire::anthropic_sse(
        "claude-sonnet-4-6",
        "Hello from the fake upstream",
    )))
    .await;
    let config = format!(
        "{}\n[[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\nauth = \"oauth\"\naccess_token = \"oat-upstream\"\nbase_url = \"{}\"\n",
        client_key_toml(),
        upstream.url()
    );
    let gw = TestGateway::start(&config).await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));

    let mut command = claude_command(&claude, home.path(), &gw);
    command.args(["-p", "say hi", "--output-format", "json"]);
    let (stdout, requests) = run_ok("claude", command, &upstream).await;
    assert_claude_result(&stdout, "Hello from the fake upstream");

    let turn = request_to(&requests, "/v1/messages");
    assert_eq!(turn.query.as_deref(), Some("beta=true"));
    assert_eq!(turn.header("authorization"), Some("Bearer oat-upstream"));
    assert!(turn.header("anthropic-beta").is_some_and(|b| b.contains("oauth-2025-04-20")));
    assert!(turn.header("anthropic-version").is_some());
    assert!(turn.header("x-claude-code-session-id").is_none());
    for r in &requests {
        let all = format!("{:?}", r.headers);
        assert!(!all.contains(CLIENT_KEY), "the client key reached the upstream");
    }
    // Claude Code's own body fields arrive untouched.
    assert!(turn.json()["messages"].is_array() && turn.json()["system"].is_array());
}

#[tokio::test]
async fn codex_runs_through_the_gateway() {
    let Some(codex) = agent_bin("codex", "SWITCHYARD_CODEX_BIN") else { return };
    let upstream =
        FakeUpstream::start(Reply::sse(wire::responses_sse("gpt-5.5", "Hello from the fake upstream"))).await;
    let config = format!(
        "{}\n[[connections]]\nid = \"openai\"\nprovider = \"openai\"\napi_key = \"sk-upstream\"\nbase_url = \"{}/v1\"\n",
        client_key_toml(),
        upstream.url()
    );
    let gw = TestGateway::start(&config).await;
    let requests = codex_says(&codex, &gw, &upstream, "Hello from the fake upstream").await;

    let turn = request_to(&requests, "/v1/responses");
    assert_eq!(turn.header("authorization"), Some("Bearer sk-upstream"));
    assert!(turn.header("session-id").is_none() && turn.header("originator").is_none());
    assert_eq!(turn.json()["model"], "gpt-5.5");
    assert!(turn.json()["input"].is_array());
}

/// Issue 12: a real Claude Code session of three turns (one `-p` run, then two
/// `--resume` runs of the same session) through two accounts under round-robin
/// stays on one account: session affinity keeps the account's prompt cache warm.
/// (With `sessionAffinityTtlMs = 0` the same three turns spread over both.)
#[tokio::test]
async fn a_three_turn_claude_code_session_stays_on_one_account_under_round_robin() {
    let Some(claude) = agent_bin("claude", "SWITCHYARD_CLAUDE_BIN") else { return };
    let reply = || Reply::sse(wire::anthropic_sse("claude-sonnet-4-6", "Hello from the fake upstream"));
    let (a, b) = (FakeUpstream::start(reply()).await, FakeUpstream::start(reply()).await);
    let mut config = client_key_toml();
    for (id, fake) in [("claude-a", &a), ("claude-b", &b)] {
        config.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"anthropic\"\nauth = \"oauth\"\n\
             access_token = \"oat-{id}\"\nbase_url = \"{}\"\n",
            fake.url()
        ));
    }
    config.push_str(
        "\n[[combos]]\nname = \"sy-team\"\nstrategy = \"round-robin\"\ntargets = [\"anthropic/claude-sonnet-4-6\"]\n\n\
         [resilience]\nsessionAffinityTtlMs = 600000\n",
    );
    let gw = TestGateway::start(&config).await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let session = uuid::Uuid::new_v4().to_string();
    for turn in 0..3 {
        let mut command = claude_command(&claude, home.path(), &gw);
        command.args(["-p", &format!("turn {turn}"), "--output-format", "json", "--model", "sy-team"]);
        if turn == 0 {
            command.args(["--session-id", &session]);
        } else {
            command.args(["--resume", &session]);
        }
        let (ok, stdout, stderr) = run(command).await;
        let seen = format!("a saw:\n{}\nb saw:\n{}", describe(&a.requests()), describe(&b.requests()));
        assert!(ok, "turn {turn}: claude failed\nstdout: {stdout}\nstderr: {stderr}\n{seen}");
    }
    let turns = |f: &FakeUpstream| f.requests().iter().filter(|r| r.path == "/v1/messages").count();
    let (on_a, on_b) = (turns(&a), turns(&b));
    assert!(on_a + on_b >= 3, "three turns reached the upstreams: a {on_a}, b {on_b}");
    assert!(on_a == 0 || on_b == 0, "the session moved between accounts: a {on_a}, b {on_b}");
    let pins = gw.mgmt_json("/api/sessions").await;
    assert_eq!(pins["pins"].as_array().map(Vec::len), Some(1), "{pins}");
}

/// Issue 14: Claude Code through a gateway whose only connection speaks Chat
/// Completions (a GLM-style `openai-chat` upstream), including one tool round trip:
/// the upstream asks for `Read` on a file, Claude Code runs it and sends the result
/// back, translated to a `tool` message, and the final answer comes back as Messages.
#[tokio::test]
async fn claude_code_runs_on_a_chat_completions_connection_with_a_tool_round_trip() {
    use switchyard_testkit::scenario::{self, Call, Stop, Tokens, Turn};
    let Some(claude) = agent_bin("claude", "SWITCHYARD_CLAUDE_BIN") else { return };
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap_or_else(|e| panic!("{e}"));
    let note = work.path().join("note.txt");
    std::fs::write(&note, "the secret word is banana-42\n").unwrap_or_else(|e| panic!("{e}"));
    let usage = Tokens { input: 40, output: 9, cache_read: 0 };
    let read = Turn {
        thinking: None,
        text: vec!["Let me read it.".into()],
        calls: vec![Call {
            id: "call_read_1".into(),
            name: "Read".into(),
            chunks: vec![
                "{\"file_path\": ".into(),
                serde_json::to_string(&note.to_string_lossy()).unwrap_or_default(),
                "}".into(),
            ],
        }],
        stop: Stop::ToolUse,
        usage,
    };
    let answer = Turn {
        thinking: None,
        text: vec!["The note says ".into(), "banana-42.".into()],
        calls: vec![],
        stop: Stop::EndTurn,
        usage,
    };
    let upstream = FakeUpstream::start(Reply::sse(scenario::chat_sse(&answer, "glm-4.6"))).await;
    upstream.push(Reply::sse(scenario::chat_sse(&read, "glm-4.6")));
    let config = format!(
        "{}\n[[connections]]\nid = \"glm-key\"\nprovider = \"glm\"\napi_format = \"openai-chat\"\napi_key = \"sk-glm\"\nbase_url = \"{}/v1\"\n",
        client_key_toml(),
        upstream.url()
    );
    let gw = TestGateway::start(&config).await;
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut command = claude_command(&claude, home.path(), &gw);
    command
        .current_dir(work.path())
        .env("ANTHROPIC_SMALL_FAST_MODEL", "glm/glm-4.6")
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", "glm/glm-4.6")
        .args(["-p", "What does note.txt say?", "--output-format", "json", "--model", "glm/glm-4.6"])
        .args(["--allowedTools", "Read"]);
    let (stdout, requests) = run_ok("claude", command, &upstream).await;
    assert_claude_result(&stdout, "The note says banana-42.");

    let turns: Vec<&RecordedRequest> = requests.iter().filter(|r| r.path == "/v1/chat/completions").collect();
    assert_eq!(turns.len(), 2, "{}", describe(&requests));
    let second = turns[1].json();
    assert_eq!(second["model"], "glm-4.6");
    assert_eq!(turns[1].header("authorization"), Some("Bearer sk-glm"));
    let messages = second["messages"].as_array().cloned().unwrap_or_default();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()).cloned())
        .unwrap_or_else(|| panic!("no assistant tool call replayed: {second}"));
    assert_eq!(call["id"], "call_read_1");
    assert_eq!(call["function"]["name"], "Read");
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result sent: {second}"));
    assert_eq!(result["tool_call_id"], "call_read_1");
    assert!(result["content"].as_str().is_some_and(|c| c.contains("banana-42")), "{result}");
    // Claude Code's Anthropic-only fields never reach a Chat upstream.
    for r in &turns {
        let b = r.json();
        assert!(
            b.get("system").is_none() && b.get("thinking").is_none() && b.get("context_management").is_none(),
            "{b}"
        );
        assert!(
            !r.body.windows(26).any(|w| w == b"x-anthropic-billing-header"),
            "billing header sent to a Chat upstream"
        );
        assert!(r.header("anthropic-beta").is_none() && r.header("anthropic-version").is_none());
    }
}

/// Issue 14: Codex (Responses only) through a gateway whose only connection is an
/// Anthropic Messages upstream.
#[tokio::test]
async fn codex_runs_on_an_anthropic_connection() {
    let Some(codex) = agent_bin("codex", "SWITCHYARD_CODEX_BIN") else { return };
    let upstream = FakeUpstream::start(Reply::sse(wire::anthropic_sse(
        "claude-sonnet-4-6",
        "Hello from Claude via Codex",
    )))
    .await;
    let config = format!(
        "{}\n[[connections]]\nid = \"claude-key\"\nprovider = \"anthropic\"\napi_key = \"sk-ant\"\nbase_url = \"{}\"\n\
         \n[[aliases]]\nfrom = \"gpt-5.5\"\nto = \"anthropic/claude-sonnet-4-6\"\n",
        client_key_toml(),
        upstream.url()
    );
    let gw = TestGateway::start(&config).await;
    let requests = codex_says(&codex, &gw, &upstream, "Hello from Claude via Codex").await;
    let turn = request_to(&requests, "/v1/messages");
    let body = turn.json();
    assert_eq!(body["model"], "claude-sonnet-4-6");
    assert_eq!(turn.header("x-api-key"), Some("sk-ant"));
    assert!(turn.header("anthropic-version").is_some());
    assert!(body["messages"].is_array() && body["max_tokens"].as_u64().is_some_and(|n| n > 0), "{body}");
    // Codex's Responses-only fields are not sent to Anthropic.
    for field in ["input", "store", "include", "prompt_cache_key", "client_metadata", "reasoning"] {
        assert!(body.get(field).is_none(), "{field} reached Anthropic: {body}");
    }
}
