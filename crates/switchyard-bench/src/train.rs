//! `switchyard-bench train`: the workload a profile-guided build learns from
//! (`scripts/pgo-build.sh`, docs/adr/0013-profile-guided-build.md).
//!
//! A profile-guided build lays out and inlines the code the training run executed
//! and treats the rest as cold, so the training must run what agents send, not only
//! what the benchmark measures: every client wire format (Chat Completions,
//! Anthropic Messages, Responses) against both upstream formats (the same format,
//! and translated), streamed and not, with the tool-calling turns coding agents
//! send, once at an agent's pace on one keep-alive connection and once under
//! concurrent load. Every combination must answer 2xx with a body: a combination
//! that fails would train the build on an error path, so the run stops and names it.
//!
//! The gateway is stopped with SIGTERM at the end; an instrumented build writes its
//! profile when it exits.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::client::{self, RequestSpec, Until};
use crate::gateway::{self, GatewayProcess};
use crate::run;
use crate::upstream::{FakeUpstream, Pace};

/// `switchyard-bench train` options.
#[derive(clap::Args, Debug)]
pub struct TrainArgs {
    /// The `switchyard` binary to drive (normally an instrumented build)
    /// [default: `switchyard` next to this executable].
    #[arg(long)]
    pub gateway_bin: Option<std::path::PathBuf>,
    /// Seconds of each of the two phases (agent pace, then concurrent load).
    #[arg(long, default_value_t = 10)]
    pub phase_secs: u64,
    /// Concurrent connections in the load phase.
    #[arg(long, default_value_t = 32)]
    pub workers: usize,
}

/// The client's wire format.
#[derive(Debug, Clone, Copy)]
enum Format {
    Chat,
    Messages,
    Responses,
}

impl Format {
    fn path(self) -> &'static str {
        match self {
            Format::Chat => "/v1/chat/completions",
            Format::Messages => "/v1/messages",
            Format::Responses => "/v1/responses",
        }
    }

    /// A coding agent's turn in this format: a system prompt, a tool definition, a
    /// tool call and its result, then the model is asked again.
    fn body(self, model: &str, stream: bool) -> Bytes {
        let schema =
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        let args = r#"{"path":"src/lib.rs"}"#;
        let mut body: Value = match self {
            Format::Chat => json!({
                "model": model,
                "max_tokens": 256,
                "messages": [
                    {"role": "system", "content": "You are a coding agent."},
                    {"role": "user", "content": "Fix the failing test."},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": args}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "pub fn add(a: i32, b: i32) -> i32 { a - b }"}
                ],
                "tools": [{"type": "function", "function": {
                    "name": "read_file", "description": "Read a file", "parameters": schema
                }}]
            }),
            Format::Messages => json!({
                "model": model,
                "max_tokens": 256,
                "system": [{"type": "text", "text": "You are a coding agent."}],
                "messages": [
                    {"role": "user", "content": "Fix the failing test."},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "src/lib.rs"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1",
                         "content": "pub fn add(a: i32, b: i32) -> i32 { a - b }"}
                    ]}
                ],
                "tools": [{"name": "read_file", "description": "Read a file", "input_schema": schema}]
            }),
            Format::Responses => json!({
                "model": model,
                "max_output_tokens": 256,
                "instructions": "You are a coding agent.",
                "input": [
                    {"role": "user", "content": [{"type": "input_text", "text": "Fix the failing test."}]},
                    {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": args},
                    {"type": "function_call_output", "call_id": "call_1",
                     "output": "pub fn add(a: i32, b: i32) -> i32 { a - b }"}
                ],
                "tools": [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": schema}]
            }),
        };
        if stream {
            body["stream"] = json!(true);
            if let Format::Chat = self {
                body["stream_options"] = json!({"include_usage": true});
            }
        }
        Bytes::from(body.to_string())
    }
}

/// One combination of the mix, with how often it answered.
struct Case {
    name: String,
    spec: Arc<RequestSpec>,
    until: Until,
    done: AtomicU64,
}

/// Every client format × both upstream formats × streamed or not.
fn cases(addr: std::net::SocketAddr) -> anyhow::Result<Vec<Case>> {
    let mut cases = Vec::new();
    for format in [Format::Chat, Format::Messages, Format::Responses] {
        // CHAT_MODEL is served by an OpenAI-compatible connection, MESSAGES_MODEL by
        // an Anthropic one: each client format meets its own and a translated one.
        for model in [gateway::CHAT_MODEL, gateway::MESSAGES_MODEL] {
            for stream in [false, true] {
                let body = format.body(model, stream);
                cases.push(Case {
                    name: format!("{format:?} → {model}{}", if stream { " (stream)" } else { "" }),
                    spec: run::spec_for(addr, format.path(), &body)?,
                    until: if stream { Until::FirstByte } else { Until::FullBody },
                    done: AtomicU64::new(0),
                });
            }
        }
    }
    Ok(cases)
}

/// Runs the training workload against `bin`.
pub async fn run(args: &TrainArgs, bin: &Path) -> anyhow::Result<()> {
    let upstream = FakeUpstream::start(Pace::Fast).await?;
    let gw = GatewayProcess::start(bin, upstream.addr(), upstream.addr(), false).await?;
    let cases = Arc::new(cases(gw.addr())?);
    for case in cases.iter() {
        let mut conn = client::connect(gw.addr()).await?;
        client::exchange(&mut conn, &case.spec, case.until)
            .await
            .with_context(|| format!("{} failed; gateway log:\n{}", case.name, gw.log_tail()))?;
    }

    let phase = Duration::from_secs(args.phase_secs);
    eprintln!("[train] agent pace: one connection, a request every 20 ms, for {phase:?}");
    agent_pace(&cases, phase).await.with_context(|| format!("gateway log:\n{}", gw.log_tail()))?;
    eprintln!("[train] load: {} connections, back to back, for {phase:?}", args.workers);
    load(&cases, gw.addr(), args.workers, phase)
        .await
        .with_context(|| format!("gateway log:\n{}", gw.log_tail()))?;

    for case in cases.iter() {
        eprintln!("[train] {:>6} × {}", case.done.load(Ordering::Relaxed), case.name);
    }
    gw.stop().await
}

/// Round-robin over the cases on one keep-alive connection, paced like an agent;
/// a fresh connection every 50 requests, so accepting one is trained too.
async fn agent_pace(cases: &[Case], phase: Duration) -> anyhow::Result<()> {
    let end = Instant::now() + phase;
    let mut conn = None;
    let mut sent = 0usize;
    while Instant::now() < end {
        let case = &cases[sent % cases.len()];
        if sent.is_multiple_of(50) {
            conn = None;
        }
        let c = match conn.as_mut() {
            Some(c) => c,
            None => conn.insert(client::connect(case.spec.addr).await?),
        };
        client::exchange(c, &case.spec, case.until).await.with_context(|| case.name.clone())?;
        case.done.fetch_add(1, Ordering::Relaxed);
        sent += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// `workers` connections sending the cases back to back.
async fn load(
    cases: &Arc<Vec<Case>>,
    addr: std::net::SocketAddr,
    workers: usize,
    phase: Duration,
) -> anyhow::Result<()> {
    let end = Instant::now() + phase;
    let failed = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::with_capacity(workers);
    for w in 0..workers {
        let cases = cases.clone();
        let failed = failed.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = client::connect(addr).await?;
            let mut i = w;
            while Instant::now() < end && !failed.load(Ordering::Relaxed) {
                let case = &cases[i % cases.len()];
                if let Err(e) = client::exchange(&mut conn, &case.spec, case.until).await {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e.context(case.name.clone()));
                }
                case.done.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_json_in_its_format_and_streams_exactly_when_it_says() -> anyhow::Result<()> {
        let cases = cases(std::net::SocketAddr::from(([127, 0, 0, 1], 9)))?;
        assert_eq!(cases.len(), 12, "3 client formats × 2 upstream formats × streamed or not");
        for case in &cases {
            let body: Value = serde_json::from_slice(&case.spec.body)?;
            let streams = case.until == Until::FirstByte;
            assert_eq!(body["stream"] == json!(true), streams, "{}", case.name);
            // The fake upstream's cheap check must see the same thing.
            assert_eq!(crate::upstream::wants_stream(&case.spec.body), streams, "{}", case.name);
            let key = match case.spec.path {
                "/v1/responses" => "input",
                _ => "messages",
            };
            assert!(body[key].as_array().is_some_and(|turns| turns.len() >= 3), "{}", case.name);
            assert!(body["tools"].as_array().is_some_and(|t| t.len() == 1), "{}", case.name);
        }
        Ok(())
    }
}
