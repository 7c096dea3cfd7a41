//! `switchyard-bench history`: what a long request history costs (issue 16).
//!
//! 1. Fills a fresh data directory's request log with `--rows` attempts and as many
//!    client requests (through the gateway's own `LogStore::write_log`, spread over the
//!    last day, so the summary's every minute has rows) and reports the write rate.
//! 2. Starts the gateway on it (retention above the row count, so nothing is
//!    pruned) next to a gateway on an empty log, and times `GET
//!    /api/monitoring/summary` on both: the Overview's cost at `--rows` and at zero.
//! 3. Sends the same open-loop load through both, interleaved, and compares added
//!    p50 and CPU per request: the per-request cost with a large log.
//! 4. Restarts the full gateway with `--log-retention-rows` a tenth of the rows and
//!    reports the database file and its write-ahead log before and after the first
//!    retention pass.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use http::{Method, StatusCode};
use switchyard_gateway::store::{AttemptLogRow, LogBatch, RequestLogRow, Store};
use switchyard_types::UnixMillis;
use switchyard_types::requests::{RequestOutcome, RouteTraceView};

use crate::client::{self, Until};
use crate::gateway::{self, GatewayProcess, MANAGEMENT_TOKEN};
use crate::machine::Runtime;
use crate::open_loop::{self, OpenLoop};
use crate::stats::{self, ms};
use crate::upstream::{FakeUpstream, Pace};

/// `switchyard-bench history` options.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// Attempt rows (and as many client requests) in the large log.
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Open-loop rate for the per-request comparison.
    #[arg(long, default_value_t = 1000)]
    rate: u32,
    /// Measured seconds of the per-request comparison.
    #[arg(long, default_value_t = 10.0)]
    duration_secs: f64,
    /// Summary requests timed per gateway.
    #[arg(long, default_value_t = 50)]
    samples: usize,
    /// The `switchyard` binary [default: `switchyard` next to this executable].
    #[arg(long)]
    pub gateway_bin: Option<std::path::PathBuf>,
    /// Also write the report into docs/benchmarks.md (between its history markers).
    #[arg(long)]
    write_docs: bool,
    /// Where --write-docs writes.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/benchmarks.md"))]
    docs_file: std::path::PathBuf,
}

const DAY_MS: i64 = 86_400_000;

fn attempt(i: u64, now: i64, rows: u64) -> AttemptLogRow {
    AttemptLogRow {
        at: UnixMillis(now - DAY_MS + (i as i64 * DAY_MS) / rows.max(1) as i64),
        request_id: format!("{i:032x}").into(),
        api_key_id: Some("bench-key".into()),
        route: "/v1/chat/completions",
        provider: "openai-compatible".into(),
        connection_id: "fast".into(),
        model: gateway::CHAT_MODEL.into(),
        status: Some(if i.is_multiple_of(50) { 429 } else { 200 }),
        latency_ms: 120,
        bytes: 900,
        error_kind: i.is_multiple_of(50).then(|| "rate_limited".to_owned()),
        tokens: None,
    }
}

fn request(a: &AttemptLogRow) -> RequestLogRow {
    RequestLogRow {
        request_id: a.request_id.clone(),
        at: a.at,
        api_key_id: a.api_key_id.clone(),
        route: a.route,
        model: a.model.to_string(),
        status: 200,
        outcome: if a.error_kind.is_some() {
            RequestOutcome::ServedAfterFailover
        } else {
            RequestOutcome::Served
        },
        error_code: None,
        connection_id: Some(a.connection_id.clone()),
        attempts: 1,
        failed_attempts: 0,
        latency_ms: a.latency_ms,
        route_trace: RouteTraceView {
            resolved_as: "provider/model or catalogue".into(),
            strategy: "priority".into(),
            candidates: Vec::new(),
            notes: Vec::new(),
        },
    }
}

/// Fills `dir`'s database with `rows` attempts and requests; rows per second.
async fn fill(dir: &Path, rows: u64) -> anyhow::Result<f64> {
    let store = Store::open(dir).await?;
    let log = store.for_log_writer().await?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
    let started = Instant::now();
    let mut i = 0;
    while i < rows {
        let mut batch = LogBatch::default();
        for _ in 0..1_024.min(rows - i) {
            let a = attempt(i, now, rows);
            batch.push_request(request(&a));
            batch.push_attempt(a);
            i += 1;
        }
        log.write_log(batch).await?;
    }
    let rate = 2.0 * rows as f64 / started.elapsed().as_secs_f64();
    log.close().await;
    store.close().await;
    Ok(rate)
}

/// Times the summary endpoint `n` times: sorted durations.
async fn time_summary(gw: &GatewayProcess, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let (status, _) =
            client::simple(gw.addr(), Method::GET, "/api/monitoring/summary", Some(MANAGEMENT_TOKEN)).await?;
        times.push(started.elapsed());
        anyhow::ensure!(status == StatusCode::OK, "summary answered {status}");
    }
    times.sort();
    Ok(times)
}

fn file_sizes(dir: &Path) -> (u64, u64) {
    let size = |name: &str| std::fs::metadata(dir.join(name)).map(|m| m.len()).unwrap_or(0);
    (size("switchyard.sqlite"), size("switchyard.sqlite-wal"))
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Runs the phase and prints (and optionally writes) its report.
pub async fn run(args: &HistoryArgs, bin: &Path, command: &str) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let fast = FakeUpstream::start(Pace::Fast).await?;
    let slow = FakeUpstream::start(Pace::Slow { interval: Duration::from_millis(100), frames: 3 }).await?;
    let full_dir = tempfile::Builder::new().prefix("switchyard-history-").tempdir()?;
    eprintln!("[history] filling {} attempts and {} requests", args.rows, args.rows);
    let fill_rate = fill(full_dir.path(), args.rows).await?;
    let (db_full, wal_full) = file_sizes(full_dir.path());
    let keep = ["--log-retention-rows".to_owned(), (args.rows * 2).to_string()];
    let full = GatewayProcess::start_in(bin, fast.addr(), slow.addr(), full_dir.path(), &keep).await?;
    let empty = GatewayProcess::start_with(bin, fast.addr(), slow.addr(), false, "", &[]).await?;
    eprintln!("[history] timing the summary");
    let summary_full = time_summary(&full, args.samples).await?;
    let summary_empty = time_summary(&empty, args.samples).await?;

    eprintln!("[history] per-request cost @ {} req/s, full vs empty log, interleaved", args.rate);
    let body = crate::run::chat_body();
    let spec = |gw: &GatewayProcess| crate::run::spec_for(gw.addr(), "/v1/chat/completions", &body);
    let direct = crate::run::spec_for(fast.addr(), "/v1/chat/completions", &body)?;
    let cfg = OpenLoop {
        rate: args.rate,
        warmup: Duration::from_secs(1),
        duration: Duration::try_from_secs_f64(args.duration_secs).context("--duration-secs")?,
        connections: 16,
        until: Until::FullBody,
        timeout: Duration::from_secs(10),
    };
    let cpu0 = (Runtime::read(full.pid()), Runtime::read(empty.pid()));
    let results = open_loop::run(&[direct, spec(&full)?, spec(&empty)?], cfg).await?;
    let cpu1 = (Runtime::read(full.pid()), Runtime::read(empty.pid()));
    let per = |a: &Option<Runtime>, b: &Option<Runtime>, sent: u64| match (a, b) {
        (Some(a), Some(b)) => format!("{:.1}", b.since(a) as f64 / 1e3 / sent.max(1) as f64),
        _ => "—".to_owned(),
    };
    let [d, f, e] = [&results[0], &results[1], &results[2]];
    empty.stop().await?;
    full.stop().await?;

    eprintln!("[history] retention: restarting with a tenth of the rows kept");
    let (db_before, wal_before) = file_sizes(full_dir.path());
    let keep = u32::try_from(args.rows / 10).unwrap_or(u32::MAX);
    let cut = ["--log-retention-rows".to_owned(), keep.to_string()];
    let pruned = GatewayProcess::start_in(bin, fast.addr(), slow.addr(), full_dir.path(), &cut).await?;
    // Retention runs once a tenth of the rows it keeps were written since its last
    // pass (two rows a request): send them, then wait for the file to shrink (a
    // pass over a million rows takes seconds).
    let requests = switchyard_gateway::request_log::prune_every(keep).div_ceil(2) + 100;
    let chat = spec(&pruned)?;
    let mut conn = client::connect(pruned.addr()).await?;
    for _ in 0..requests {
        client::exchange(&mut conn, &chat, Until::FullBody).await?;
    }
    let started = Instant::now();
    let (mut db_after, mut wal_after) = file_sizes(full_dir.path());
    while started.elapsed() < Duration::from_secs(120) {
        // Reading the log flushes the writer's batch (and with it, retention).
        let _ = pruned.request_log_rows().await;
        (db_after, wal_after) = file_sizes(full_dir.path());
        if db_after * 2 < db_before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let shrink_secs = started.elapsed().as_secs_f64();
    pruned.stop().await?;

    let pct = |v: &[Duration], q: f64| v[((v.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## A long request history (issue 16)\n\n`{command}`, {}. A log of {} attempts and {} client \
         requests (2 % failed), spread over the last 24 hours, written through the gateway's own batch \
         writer at {:.0} rows/s; database {} + write-ahead log {}.\n",
        crate::machine::Machine::detect().date,
        args.rows,
        args.rows,
        fill_rate,
        megabytes(db_full),
        megabytes(wal_full)
    );
    let _ = writeln!(
        out,
        "| `GET /api/monitoring/summary` ({} requests each) | p50 ms | p90 ms | max ms |\n|---|---:|---:|---:|",
        args.samples
    );
    for (what, v) in
        [(format!("{} rows", args.rows), &summary_full), ("empty log".to_owned(), &summary_empty)]
    {
        let _ = writeln!(out, "| {what} | {:.3} | {:.3} | {:.3} |", pct(v, 0.5), pct(v, 0.9), pct(v, 1.0));
    }
    let added = |x: &open_loop::OpenLoopResult| stats::added_ms(x.latency.p50, d.latency.p50);
    let _ = writeln!(
        out,
        "\nPer request at {} req/s, interleaved (1 s slices): \n\n| gateway | p50 ms | added p50 ms | p99 ms | \
         CPU µs/request | errors |\n|---|---:|---:|---:|---:|---:|",
        args.rate
    );
    let rows = [
        (format!("{} rows in the log", args.rows), f, per(&cpu0.0, &cpu1.0, f.sent)),
        ("empty log".to_owned(), e, per(&cpu0.1, &cpu1.1, e.sent)),
    ];
    for (what, x, cpu) in rows {
        let (p50, p99) = (ms(x.latency.p50), ms(x.latency.p99));
        let _ = writeln!(out, "| {what} | {p50} | {:+.3} | {p99} | {cpu} | {} |", added(x), x.errors);
    }
    let _ = writeln!(
        out,
        "\nRetention cut to {keep} rows (restart with `--log-retention-rows`), then {requests} requests \
         (retention runs once a tenth of the rows it keeps were written): database {} → {}, \
         write-ahead log {} → {}, {:.1} s after the last request.\n",
        megabytes(db_before),
        megabytes(db_after),
        megabytes(wal_before),
        megabytes(wal_after),
        shrink_secs
    );
    println!("{out}");
    if args.write_docs {
        crate::report::write_between(
            &args.docs_file,
            "<!-- history:begin — generated by `switchyard-bench history --write-docs` -->",
            "<!-- history:end -->",
            &out,
            "# Benchmarks",
        )?;
        eprintln!("[history] wrote {}", args.docs_file.display());
    }
    Ok(())
}
