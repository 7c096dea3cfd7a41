//! `switchyard-bench team`: what team mode (SPEC §9) costs, measured in one run.
//!
//! - **Propagation**: replicas A and B of one team (two `switchyard serve`
//!   processes on one throwaway Postgres, see `switchyard_testkit::postgres`).
//!   Transitions are made on A — a connection cooling after an upstream 429 with
//!   `Retry-After`, then cleared through A's management API, alternately — and
//!   each is timed from the moment the request that makes it is sent to A until
//!   B's management API shows it. So a figure includes A's request, the announce,
//!   B's apply and the polling step (about 0.2 ms): an upper bound.
//! - **Hot path**: the same config served by a SQLite gateway and by replica A
//!   (Postgres), against the same fast upstream, interleaved slice by slice with a
//!   direct call: added latency (p50, p99) and gateway CPU per request.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use switchyard_testkit::postgres::PgServer;
use switchyard_testkit::{FakeUpstream as ScriptedUpstream, Reply};

use crate::client::{self, RequestSpec, Until};
use crate::gateway::{GatewayProcess, MANAGEMENT_TOKEN};
use crate::machine::{Machine, Runtime};
use crate::open_loop::{self, OpenLoop};
use crate::run::{chat_body, spec_for};
use crate::stats::{Summary, added_ms, histogram, ms, record};
use crate::upstream::{FakeUpstream, Pace};

/// The model of the two connections transitions are made on.
const TEAM_MODEL: &str = "team-model";
/// How often B is polled while a transition propagates.
const POLL: Duration = Duration::from_micros(200);
/// A transition not visible on B after this is a failure.
const GIVE_UP: Duration = Duration::from_secs(5);
/// Markers of the section `--write-docs` replaces in docs/benchmarks.md.
const BEGIN: &str = "<!-- team-mode:begin -->";
const END: &str = "<!-- team-mode:end -->";

/// `switchyard-bench team` options.
#[derive(clap::Args, Debug)]
pub struct TeamArgs {
    /// Transitions to time (half cooldowns, half clears).
    #[arg(long, default_value_t = 1000)]
    transitions: u32,
    /// Open-loop rates (requests/s) for the hot-path comparison.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
    rates: Vec<u32>,
    /// Measured seconds per way and rate.
    #[arg(long, default_value_t = 5.0)]
    duration_secs: f64,
    /// Keep-alive client connections for the open loop.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// The `switchyard` binary [default: `switchyard` next to this executable].
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// Also write the report into docs/benchmarks.md (between its team-mode markers).
    #[arg(long)]
    write_docs: bool,
    /// Where --write-docs writes.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/benchmarks.md"))]
    docs_file: PathBuf,
}

impl TeamArgs {
    /// The gateway binary in use.
    pub fn gateway_bin(&self, default: PathBuf) -> PathBuf {
        self.gateway_bin.clone().unwrap_or(default)
    }
}

/// The two connections of [`TEAM_MODEL`]: `team-x` (first; the scripted upstream
/// that answers 429 on demand) and `team-y` (the fast upstream, failover).
fn team_toml(x: &str, fast: SocketAddr) -> String {
    format!(
        r#"
[[connections]]
id = "team-x"
provider = "team"
api_format = "openai-chat"
api_key = "upstream-key"
base_url = "{x}/v1"
models = ["{TEAM_MODEL}"]
priority = 1

[[connections]]
id = "team-y"
provider = "team"
api_format = "openai-chat"
api_key = "upstream-key"
base_url = "http://{fast}/v1"
models = ["{TEAM_MODEL}"]
priority = 2
"#
    )
}

/// Propagation latencies in nanoseconds: cooldowns, clears, and both.
struct Propagation {
    cooldowns: Summary,
    clears: Summary,
    all: Summary,
}

/// Runs the benchmark and prints (and optionally writes) its report.
pub async fn run(args: &TeamArgs, gateway_bin: &Path) -> anyhow::Result<()> {
    let machine = Machine::detect();
    let Some(pg) = PgServer::start() else {
        bail!("team mode needs Postgres: apt-get install postgresql");
    };
    let url = pg.create_database("bench");
    let fast = FakeUpstream::start(Pace::Fast).await?;
    let x = ScriptedUpstream::start(Reply::json(200, chat_completion())).await;
    let extra = team_toml(&x.url(), fast.addr());
    let team_args = ["--database-url".to_owned(), url.clone()];
    // Started one after the other: each imports the same config into the database.
    let a =
        GatewayProcess::start_with(gateway_bin, fast.addr(), fast.addr(), false, &extra, &team_args).await?;
    let b =
        GatewayProcess::start_with(gateway_bin, fast.addr(), fast.addr(), false, &extra, &team_args).await?;
    let lite = GatewayProcess::start_with(gateway_bin, fast.addr(), fast.addr(), false, &extra, &[]).await?;
    eprintln!(
        "[team] replicas A {} and B {} on Postgres; SQLite gateway {}",
        a.addr(),
        b.addr(),
        lite.addr()
    );

    let propagation = propagation(&a, &b, &x, args.transitions).await?;
    let hot = hot_path(args, fast.addr(), &lite, &a).await?;
    let report = report(&machine, args, &propagation, &hot);
    println!("{report}");
    if args.write_docs {
        write_section(&args.docs_file, &report)?;
        eprintln!("[team] wrote {}", args.docs_file.display());
    }
    a.stop().await?;
    b.stop().await?;
    lite.stop().await?;
    drop(pg);
    Ok(())
}

fn chat_completion() -> Value {
    json!({
        "id": "chatcmpl-team", "object": "chat.completion", "created": 0, "model": TEAM_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
}

/// Whether `gw` shows `team-x` cooling.
async fn x_cooling(gw: &GatewayProcess) -> anyhow::Result<bool> {
    let (status, body) =
        client::simple(gw.addr(), Method::GET, "/api/resilience/cooldowns", Some(MANAGEMENT_TOKEN)).await?;
    if status != StatusCode::OK {
        bail!("cooldowns: {status}");
    }
    let list: Value = serde_json::from_slice(&body)?;
    Ok(list
        .as_array()
        .is_some_and(|l| l.iter().any(|c| c["connection"] == "team-x" && c["status"] != "active")))
}

/// Polls B until `team-x` is (`cooling`) or is not cooling; the time since `start`.
async fn visible_on(b: &GatewayProcess, cooling: bool, start: Instant) -> anyhow::Result<Duration> {
    loop {
        if x_cooling(b).await? == cooling {
            return Ok(start.elapsed());
        }
        if start.elapsed() > GIVE_UP {
            bail!("a transition was not visible on replica B within {GIVE_UP:?}:\n{}", b.log_tail());
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn propagation(
    a: &GatewayProcess,
    b: &GatewayProcess,
    x: &ScriptedUpstream,
    transitions: u32,
) -> anyhow::Result<Propagation> {
    let infer = spec_for(a.addr(), "/v1/chat/completions", &crate::run::chat_body_for(TEAM_MODEL))?;
    let clear = management_post(a.addr(), "/api/resilience/cooldowns", &json!({"all": true}))?;
    let mut conn = client::connect(a.addr()).await?;
    let (mut cooldowns, mut clears, mut all) = (histogram()?, histogram()?, histogram()?);
    eprintln!("[team] propagation: {transitions} transitions on A, watched on B");
    for i in 0..transitions {
        let cool = i % 2 == 0;
        let start = Instant::now();
        if cool {
            x.push(
                Reply::json(429, json!({"error": {"type": "rate_limit_error", "message": "slow down"}}))
                    .with_header("retry-after", "30"),
            );
            client::exchange(&mut conn, &infer, Until::FullBody).await.context("the request that cools X")?;
        } else {
            client::exchange(&mut conn, &clear, Until::FullBody).await.context("clearing X through A")?;
        }
        let took = visible_on(b, cool, start).await?;
        record(if cool { &mut cooldowns } else { &mut clears }, took);
        record(&mut all, took);
    }
    Ok(Propagation {
        cooldowns: Summary::of(&cooldowns),
        clears: Summary::of(&clears),
        all: Summary::of(&all),
    })
}

fn management_post(addr: SocketAddr, path: &'static str, body: &Value) -> anyhow::Result<RequestSpec> {
    let auth = format!("Bearer {MANAGEMENT_TOKEN}");
    RequestSpec::post_json(addr, path, &[("authorization", auth.as_str())], Bytes::from(body.to_string()))
}

/// One rate of the hot-path comparison.
struct HotRun {
    rate: u32,
    direct: Summary,
    sqlite: Summary,
    postgres: Summary,
    sqlite_cpu_us: f64,
    postgres_cpu_us: f64,
    errors: u64,
}

async fn hot_path(
    args: &TeamArgs,
    fast: SocketAddr,
    lite: &GatewayProcess,
    team: &GatewayProcess,
) -> anyhow::Result<Vec<HotRun>> {
    let body = chat_body();
    let specs: Vec<Arc<RequestSpec>> = vec![
        spec_for(fast, "/v1/chat/completions", &body)?,
        spec_for(lite.addr(), "/v1/chat/completions", &body)?,
        spec_for(team.addr(), "/v1/chat/completions", &body)?,
    ];
    let mut out = Vec::new();
    for &rate in &args.rates {
        eprintln!("[team] hot path @ {rate} req/s: direct, SQLite and Postgres gateways, interleaved");
        let cfg = OpenLoop {
            rate,
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs_f64(args.duration_secs),
            connections: args.connections,
            until: Until::FullBody,
            timeout: Duration::from_secs(10),
        };
        let before = (Runtime::read(lite.pid()), Runtime::read(team.pid()));
        let results = open_loop::run(&specs, cfg).await?;
        let after = (Runtime::read(lite.pid()), Runtime::read(team.pid()));
        let [direct, sqlite, postgres] =
            <[_; 3]>::try_from(results).map_err(|_| anyhow::anyhow!("three ways"))?;
        let per_request = |a: &Option<Runtime>, b: &Option<Runtime>, sent: u64| match (a, b) {
            (Some(a), Some(b)) if sent > 0 => b.since(a) as f64 / 1e3 / sent as f64,
            _ => f64::NAN,
        };
        out.push(HotRun {
            rate,
            direct: direct.latency,
            sqlite: sqlite.latency,
            postgres: postgres.latency,
            sqlite_cpu_us: per_request(&before.0, &after.0, sqlite.sent),
            postgres_cpu_us: per_request(&before.1, &after.1, postgres.sent),
            errors: direct.errors + sqlite.errors + postgres.errors,
        });
    }
    Ok(out)
}

fn report(machine: &Machine, args: &TeamArgs, p: &Propagation, hot: &[HotRun]) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "### Team mode (issue 15): propagation and hot-path cost\n\n\
         `cargo run --release -p switchyard-bench -- team` (two replicas and a SQLite gateway, one \
         throwaway Postgres from Debian's package) at commit `{commit}`, {date}, on {cpus} × {cpu} \
         (kernel {kernel}).\n\n",
        commit = machine.commit,
        date = machine.date,
        cpus = machine.cpus,
        cpu = machine.cpu_model,
        kernel = machine.kernel,
    ));
    s.push_str(&format!(
        "**Propagation**, transition on replica A → visible through replica B's management API, \
         over {n} transitions (timed from the request that makes it; upper bound):\n\n\
         | transitions | count | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|\n",
        n = args.transitions
    ));
    for (name, sum) in
        [("cooldown (upstream 429)", &p.cooldowns), ("clear (management API)", &p.clears), ("all", &p.all)]
    {
        s.push_str(&format!(
            "| {name} | {} | {} | {} | {} |\n",
            sum.count,
            ms(sum.p50),
            ms(sum.p99),
            ms(sum.max)
        ));
    }
    s.push_str(
        "\n**Hot path**, the same config on SQLite and on Postgres (replica A), added to a direct call \
         (open loop, interleaved slices; CPU is the gateway process's per request):\n\n\
         | rate req/s | direct p50 ms | SQLite added p50 / p99 ms | Postgres added p50 / p99 ms | \
         SQLite CPU µs/req | Postgres CPU µs/req | errors |\n|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in hot {
        s.push_str(&format!(
            "| {} | {} | {:+.3} / {:+.3} | {:+.3} / {:+.3} | {:.0} | {:.0} | {} |\n",
            r.rate,
            ms(r.direct.p50),
            added_ms(r.sqlite.p50, r.direct.p50),
            added_ms(r.sqlite.p99, r.direct.p99),
            added_ms(r.postgres.p50, r.direct.p50),
            added_ms(r.postgres.p99, r.direct.p99),
            r.sqlite_cpu_us,
            r.postgres_cpu_us,
            r.errors
        ));
    }
    s.push_str(
        "\nReading it: the propagation figure includes the request that makes the transition and the \
         HTTP polling of B's management API; the notice itself is one `pg_notify` batch and an in-memory \
         apply. Routing reads memory on both backends, so the hot path should match within the run's \
         noise. The CPU column is the gateway process's: in team mode the Postgres server also spends CPU \
         writing the request log rows, which a SQLite gateway spends in its own process. Rerun with \
         `cargo build --release -p switchyard-gateway -p switchyard-bench && target/release/switchyard-bench \
         team --gateway-bin target/release/switchyard --write-docs` (it needs Debian's `postgresql`; it \
         starts its own throwaway cluster).\n",
    );
    s
}

/// Replaces the text between the team-mode markers (appending them if absent).
fn write_section(path: &Path, report: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let section = format!("{BEGIN}\n{report}{END}");
    let next = match (text.find(BEGIN), text.find(END)) {
        (Some(b), Some(e)) if e > b => format!("{}{section}{}", &text[..b], &text[e + END.len()..]),
        _ => format!("{}\n\n{section}\n", text.trim_end()),
    };
    std::fs::write(path, next).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_replaced_between_its_markers_and_appended_once() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("b.md");
        std::fs::write(&path, "# Benchmarks\n\nbefore\n")?;
        write_section(&path, "one\n")?;
        write_section(&path, "two\n")?;
        let text = std::fs::read_to_string(&path)?;
        assert!(text.starts_with("# Benchmarks\n\nbefore\n"), "{text}");
        assert_eq!(text.matches(BEGIN).count(), 1);
        assert!(text.contains("two\n") && !text.contains("one\n"), "{text}");
        Ok(())
    }

    #[test]
    fn two_connections_serve_the_team_model_in_priority_order() -> anyhow::Result<()> {
        let doc: toml::Value = toml::from_str(&team_toml("http://127.0.0.1:1", "127.0.0.1:2".parse()?))?;
        let conns = doc.get("connections").and_then(|c| c.as_array()).context("connections")?;
        let ids: Vec<_> = conns.iter().filter_map(|c| c.get("id")?.as_str()).collect();
        assert_eq!(ids, ["team-x", "team-y"]);
        Ok(())
    }
}
