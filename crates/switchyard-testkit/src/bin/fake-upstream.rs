//! `fake-upstream`: the scriptable [`FakeUpstream`] as a standalone process, for tests
//! driven from outside Rust (the browser end-to-end test in `ui/e2e/`).
//!
//! ```text
//! fake-upstream [--port N] [--control-port N] [--no-stdin]
//! ```
//!
//! It serves two loopback listeners and prints one line for each on stdout, in this
//! order, then flushes:
//!
//! ```text
//! listening on http://127.0.0.1:PORT
//! control on http://127.0.0.1:PORT2
//! ```
//!
//! The first is the fake provider: every request is recorded and answered with the
//! next queued reply, or the default reply when the queue is empty. The default at
//! start is `200` with an Anthropic message (`wire::anthropic_message`). The second
//! is the control API, kept on its own listener so a provider path can never collide
//! with it:
//!
//! - `POST /__control/push` with `{"status":429,"headers":{"retry-after":"30"},"body":{..}}`
//!   queues one reply (`headers` and `body` are optional; the body is sent as JSON);
//! - `POST /__control/default` with the same shape replaces the default reply;
//! - `"hold": true` in either shape holds each such reply until released:
//!   `POST /__control/release` with `{"n": N}` lets the N longest-held through,
//!   `{"all": true}` lets every held reply (and later ones) through;
//! - `GET /__control/calls` answers `{"calls": N, "inFlight": M}`: the requests
//!   received so far, and those not answered yet (held ones included).
//!
//! Bad control input gets `400 {"error": "..."}`. Both ports default to `0` (a free
//! port). The process serves until it is killed, receives Ctrl-C, or its stdin
//! reaches end of file (so a parent that dies takes it along); `--no-stdin` ignores
//! stdin, for a shell's background job with stdin at `/dev/null`.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::StatusCode;
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Hold, Reply, wire};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// Command-line options.
struct Options {
    port: u16,
    control_port: u16,
    watch_stdin: bool,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { port: 0, control_port: 0, watch_stdin: true };
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" | "--control-port" => {
                let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
                let port = value.parse::<u16>().map_err(|e| format!("{arg} {value}: {e}"))?;
                if arg == "--port" {
                    options.port = port;
                } else {
                    options.control_port = port;
                }
            }
            "--no-stdin" => options.watch_stdin = false,
            "-h" | "--help" => {
                return Err("usage: fake-upstream [--port N] [--control-port N] [--no-stdin]".into());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

/// The fake and the valve its held replies wait on.
struct Control {
    fake: FakeUpstream,
    hold: Hold,
}

/// Reads a control body `{"status", "headers"?, "body"?, "hold"?}` into a reply.
fn reply_from(spec: &Value, hold: &Hold) -> Result<Reply, String> {
    let status = spec
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (100..=599).contains(s))
        .ok_or("\"status\" must be an HTTP status (100-599)")?;
    let body = spec.get("body").cloned().unwrap_or(Value::Null);
    let mut reply = Reply::json(status, body);
    match spec.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(headers)) => {
            for (name, value) in headers {
                let value = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Err(format!("header {name:?} must be a string or a number")),
                };
                reply = reply.with_header(name, &value);
            }
        }
        Some(_) => return Err("\"headers\" must be an object".into()),
    }
    match spec.get("hold") {
        None | Some(Value::Null | Value::Bool(false)) => Ok(reply),
        Some(Value::Bool(true)) => Ok(reply.held(hold)),
        Some(_) => Err("\"hold\" must be a boolean".into()),
    }
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": message}))).into_response()
}

fn parse_body(body: &[u8], hold: &Hold) -> Result<Reply, String> {
    let spec: Value = serde_json::from_slice(body).map_err(|e| format!("body is not JSON: {e}"))?;
    reply_from(&spec, hold)
}

async fn push(State(c): State<Arc<Control>>, body: axum::body::Bytes) -> Response {
    match parse_body(&body, &c.hold) {
        Ok(reply) => {
            c.fake.push(reply);
            axum::Json(json!({"ok": true})).into_response()
        }
        Err(e) => bad_request(e),
    }
}

async fn set_default(State(c): State<Arc<Control>>, body: axum::body::Bytes) -> Response {
    match parse_body(&body, &c.hold) {
        Ok(reply) => {
            c.fake.set_default(reply);
            axum::Json(json!({"ok": true})).into_response()
        }
        Err(e) => bad_request(e),
    }
}

async fn calls(State(c): State<Arc<Control>>) -> Response {
    axum::Json(json!({"calls": c.fake.calls(), "inFlight": c.fake.in_flight()})).into_response()
}

async fn release(State(c): State<Arc<Control>>, body: axum::body::Bytes) -> Response {
    let spec: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return bad_request(format!("body is not JSON: {e}")),
    };
    if spec.get("all") == Some(&Value::Bool(true)) {
        c.hold.open();
    } else if let Some(n) = spec.get("n").and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok()) {
        c.hold.release(n);
    } else {
        return bad_request("send {\"n\": N} or {\"all\": true}".into());
    }
    axum::Json(json!({"ok": true})).into_response()
}

/// Resolves when stdin reaches end of file (or fails); never when not watching.
async fn stdin_closed(watch: bool) {
    if !watch {
        return std::future::pending().await;
    }
    let mut stdin = tokio::io::stdin();
    let mut buf = [0_u8; 1024];
    while let Ok(n) = stdin.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

async fn run(options: Options) -> Result<(), String> {
    let default =
        Reply::json(200, wire::anthropic_message("claude-sonnet-4-6", "Hello from the fake upstream."));
    let fake = FakeUpstream::bind(options.port, default)
        .await
        .map_err(|e| format!("cannot bind 127.0.0.1:{}: {e}", options.port))?;
    let url = fake.url();
    let state = Arc::new(Control { fake, hold: Hold::new() });
    let control = TcpListener::bind(("127.0.0.1", options.control_port))
        .await
        .map_err(|e| format!("cannot bind control 127.0.0.1:{}: {e}", options.control_port))?;
    let control_addr = control.local_addr().map_err(|e| format!("control listener: {e}"))?;
    let app = Router::new()
        .route("/__control/push", post(push))
        .route("/__control/default", post(set_default))
        .route("/__control/calls", get(calls))
        .route("/__control/release", post(release))
        .with_state(state);

    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {url}")
        .and_then(|()| writeln!(out, "control on http://{control_addr}"))
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))?;
    drop(out);

    let server = axum::serve(control, app).with_graceful_shutdown(async move {
        tokio::select! {
            () = stdin_closed(options.watch_stdin) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    });
    server.await.map_err(|e| format!("control server: {e}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let result = match parse_args(std::env::args().skip(1)) {
        Ok(options) => run(options).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fake-upstream: {e}");
            ExitCode::FAILURE
        }
    }
}
