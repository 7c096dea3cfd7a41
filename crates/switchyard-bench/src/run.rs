//! The benchmark plan: start the fake upstreams, the gateway and the reference
//! relay, then run every phase once directly against the fake upstream, once
//! through the gateway and once through the relay, with identical request bodies
//! and headers, and collect the results for the report.
//!
//! Order matters and is fixed: idle memory first (before any request), then the
//! latency runs from the lowest rate up, streaming TTFB, throughput (with RSS
//! sampling), idle memory after load, and the many-streams phase last, because it
//! leaves the gateway holding a large upstream connection pool. The three runs of an
//! open-loop measurement are interleaved slice by slice (see `open_loop`); the
//! throughput runs follow each other directly.
//!
//! With a baseline (`--baseline-bin`, an older build of the gateway), a second
//! gateway process is started from it with the same config (see `start_baseline`), and it joins the
//! added-latency runs as a fourth way, interleaved with the others; the other phases
//! measure the candidate only (see `ab` for the comparison).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use serde_json::json;
use tokio::process::Command;

use crate::agent_request::agent_body;
use crate::client::{self, RequestSpec, Until};
use crate::closed_loop::{self, ClosedLoop, ClosedLoopResult, Saturated};
use crate::flow::{self, FlowPhase};
use crate::gateway::{self, GatewayProcess};
use crate::machine::{CpuProbe, Interference, Machine, Runtime};
use crate::open_loop::{self, OpenLoop, OpenLoopResult};
use crate::relay::{HopClient, RelayProcess};
use crate::scaling::{self, ScalingPhase};
use crate::streams::{self, StreamsResult};
use crate::upstream::{FakeUpstream, Pace};

/// Size the request bodies are padded to.
const BODY_BYTES: usize = 1024;
/// RSS sampling period.
const RSS_EVERY: Duration = Duration::from_millis(100);

/// What to run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Open-loop rates, requests/s.
    pub rates: Vec<u32>,
    /// Warm-up before each measured window.
    pub warmup: Duration,
    /// Each measured window.
    pub duration: Duration,
    /// Client connections for the open-loop runs.
    pub connections: usize,
    /// Closed-loop workers for the throughput runs.
    pub concurrency: usize,
    /// Concurrent streams in the last phase.
    pub streams: usize,
    /// Fewest samples a way at an open-loop rate (a low rate runs longer).
    pub min_samples: u32,
    /// Open-loop rate for the streaming TTFB runs.
    pub stream_rate: u32,
    /// Open-loop rate for the agent-sized request.
    pub agent_rate: u32,
    /// Frames in each slow stream.
    pub slow_frames: usize,
    /// Gap between slow-stream frames.
    pub slow_interval: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
    /// How long to let the gateway settle before an "after" memory reading.
    pub settle: Duration,
    /// How long after the last stream ends the streams phase reads RSS.
    pub stream_settle: Duration,
    /// Shortest and longest wait for the idle gateway's RSS to hold still before
    /// the streams (the reference the RSS after them is held to).
    pub idle_settle: (Duration, Duration),
    /// The command line, for the report.
    pub command: String,
    /// An older gateway build to compare against, if any.
    pub baseline: Option<Baseline>,
}

impl Settings {
    /// Alternating 1-second closed-loop slices of each target: one per measured second.
    pub fn slices(&self) -> u32 {
        u32::try_from(self.duration.as_secs()).unwrap_or(1).max(1)
    }

    /// How long an open-loop run at `rate` measures each way: the run's duration,
    /// or longer when that would collect fewer than `min_samples` (whole seconds,
    /// as the ways take turns in 1 s slices).
    pub fn open_loop_duration(&self, rate: u32) -> Duration {
        let needed = u64::from(self.min_samples).div_ceil(u64::from(rate.max(1)));
        self.duration.max(Duration::from_secs(needed))
    }

    /// An open-loop run at `rate` with this run's windows, connections and timeout.
    pub fn open_loop(&self, rate: u32, until: Until) -> OpenLoop {
        OpenLoop {
            rate,
            warmup: self.warmup,
            duration: self.open_loop_duration(rate),
            connections: self.connections,
            until,
            timeout: self.timeout,
        }
    }
}

/// An older gateway build, run next to the one under test in the latency runs.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// Its `switchyard` binary.
    pub bin: PathBuf,
    /// What to call it in the report (a commit, a tag).
    pub label: String,
    /// What to call the gateway under test (None: this checkout's commit).
    pub candidate_label: Option<String>,
}

/// One measurement taken three ways.
#[derive(Debug, Clone)]
pub struct Ways<T> {
    /// Straight to the fake upstream.
    pub direct: T,
    /// Through the gateway.
    pub gateway: T,
    /// Through the minimal reference relay (the floor for any proxy here).
    pub relay: T,
}

/// One open-loop rate, every way.
#[derive(Debug, Clone)]
pub struct RateRun {
    /// Requests/s.
    pub rate: u32,
    /// Results.
    pub runs: Ways<OpenLoopResult>,
    /// The baseline gateway's result (A/B runs of the latency phase only).
    pub baseline: Option<OpenLoopResult>,
    /// CPU time per request of both gateways (A/B runs of the latency phase only).
    pub ab_cpu: Option<AbCpu>,
    /// CPU time per request of the gateway and of the relay.
    pub cpu: Option<ProxyCpu>,
    /// CPU time others took during the measurement.
    pub interference: Option<Interference>,
}

/// On-CPU time (all threads, exact scheduler runtime) each gateway spent over one
/// A/B rate run, warm-up and idle turns included, per request sent to it. Work, not
/// waiting: a host that delays the gateway stretches its latency but not (much) its
/// CPU time, so this figure survives contention that drowns a 5 % latency
/// difference. (Contention still costs some CPU: cold caches, more wake-ups.)
#[derive(Debug, Clone, Copy)]
pub struct AbCpu {
    /// The gateway under test, µs per request.
    pub candidate_us: f64,
    /// The baseline, µs per request.
    pub baseline_us: f64,
}

impl AbCpu {
    /// From runtimes (ns) over the run and the requests each gateway was sent.
    fn of(candidate_ns: u64, candidate_sent: u64, baseline_ns: u64, baseline_sent: u64) -> AbCpu {
        let per = |ns: u64, sent: u64| ns as f64 / 1e3 / sent.max(1) as f64;
        AbCpu {
            candidate_us: per(candidate_ns, candidate_sent),
            baseline_us: per(baseline_ns, baseline_sent),
        }
    }
}

/// On-CPU time (all threads, exact scheduler runtime) of the gateway and of the
/// reference relay over one run, per request sent to each. In an interleaved run
/// each process also idles through the other ways' turns, and that idle time is
/// charged to its requests too: at low rates the figure is mostly what the process
/// costs while waiting (timers, background tasks), which is what a laptop pays.
#[derive(Debug, Clone, Copy)]
pub struct ProxyCpu {
    /// The gateway, µs per request.
    pub gateway_us: f64,
    /// The gateway's figure by what its threads do, µs per request.
    pub gateway_threads: ThreadsUs,
    /// The relay, µs per request.
    pub relay_us: f64,
}

/// CPU per request by [`crate::machine::ThreadKind`], µs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadsUs {
    /// The connection lanes, which serve the requests (the relay's worker's match).
    pub lanes: f64,
    /// The request log's writer.
    pub log: f64,
    /// The main thread, the allocator's purge and the rest.
    pub other: f64,
}

impl ProxyCpu {
    /// The gateway's CPU per request as a multiple of the relay's.
    pub fn ratio(&self) -> f64 {
        self.gateway_us / self.relay_us.max(1e-9)
    }

    /// "gateway X µs, relay Y µs (Z×)", for the report's prose.
    pub fn describe(&self) -> String {
        format!("gateway {:.1} µs, relay {:.1} µs ({:.2}×)", self.gateway_us, self.relay_us, self.ratio())
    }
}

/// Runtimes of the gateway and the relay at one moment.
struct ProxyRuntimes(Option<(Runtime, Runtime)>);

impl ProxyRuntimes {
    fn read(gw: &GatewayProcess, relay: &RelayProcess) -> ProxyRuntimes {
        ProxyRuntimes(Runtime::read(gw.pid()).zip(Runtime::read(relay.pid())))
    }

    /// Per request since `self`, for `gateway_sent` and `relay_sent` requests.
    fn per_request(&self, gw: &GatewayProcess, relay: &RelayProcess, sent: (u64, u64)) -> Option<ProxyCpu> {
        let (g0, r0) = self.0.as_ref()?;
        let ProxyRuntimes(Some((g1, r1))) = ProxyRuntimes::read(gw, relay) else { return None };
        let per = |ns: u64, n: u64| ns as f64 / 1e3 / n.max(1) as f64;
        let by = g1.since_by_kind(g0);
        Some(ProxyCpu {
            gateway_us: per(by.total(), sent.0),
            gateway_threads: ThreadsUs {
                lanes: per(by.lanes, sent.0),
                log: per(by.log, sent.0),
                other: per(by.other, sent.0),
            },
            relay_us: per(r1.since(r0), sent.1),
        })
    }
}

/// Gateway RSS readings, bytes.
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    /// After start, before any request.
    pub idle_start: u64,
    /// Peak while saturated by the throughput run.
    pub throughput_peak: u64,
    /// After the throughput run, once settled.
    pub idle_after_load: u64,
}

/// The many-streams phase with its memory readings (bytes).
#[derive(Debug, Clone)]
pub struct StreamsPhase {
    /// Counts and timing.
    pub result: StreamsResult,
    /// RSS just before, idle and settled (see `idle_settled_after`).
    pub rss_before: u64,
    /// How long the idle gateway took to settle before the streams.
    pub idle_settled_after: Duration,
    /// Peak RSS while the streams ran.
    pub rss_peak: u64,
    /// RSS after all streams ended and the gateway settled.
    pub rss_after: u64,
    /// Gateway open file descriptors before the phase.
    pub fds_before: Option<usize>,
    /// Gateway open file descriptors after it, settled (idle pooled upstream
    /// connections show up here).
    pub fds_after: Option<usize>,
}

/// Request-log rows written versus requests sent through the gateway.
#[derive(Debug, Clone, Copy)]
pub struct LogCheck {
    /// Newest row id in the request log.
    pub rows: u64,
    /// Requests the benchmark sent through the gateway.
    pub gateway_requests: u64,
}

/// Everything the report shows.
#[derive(Debug, Clone)]
pub struct Results {
    /// What ran.
    pub settings: Settings,
    /// Where.
    pub machine: Machine,
    /// Non-streaming open-loop runs, one per rate.
    pub latency: Vec<RateRun>,
    /// Streaming time-to-first-byte.
    pub ttfb: RateRun,
    /// The agent-sized request (~50 KB), non-streaming.
    pub agent: RateRun,
    /// Closed-loop throughput.
    pub throughput: Ways<ClosedLoopResult>,
    /// CPU time others took during the throughput runs.
    pub throughput_interference: Option<Interference>,
    /// CPU per request of the gateway and the relay at saturation.
    pub throughput_cpu: Option<ProxyCpu>,
    /// CPU time others took over the whole benchmark.
    pub interference: Option<Interference>,
    /// Gateway memory.
    pub memory: Memory,
    /// Many concurrent streams.
    pub streams: StreamsPhase,
    /// Request-log check (None if the management API could not be read).
    pub log: Option<LogCheck>,
    /// Flow control: the gates' cost and queueing at saturation.
    pub flow: FlowPhase,
    /// One connection against many for the same model.
    pub scaling: ScalingPhase,
    /// The candidate against the baseline at saturation (A/B runs only).
    pub saturation_ab: Option<SaturationAb>,
    /// Which config the baseline ran with (A/B runs only).
    pub baseline_config: Option<BaselineConfig>,
}

/// Both gateways at saturation, in alternating closed-loop slices.
#[derive(Debug, Clone)]
pub struct SaturationAb {
    /// Closed-loop workers.
    pub workers: usize,
    /// Slices of each.
    pub rounds: u32,
    /// The gateway under test.
    pub candidate: Saturated,
    /// The older build.
    pub baseline: Saturated,
}

/// A JSON body padded to [`BODY_BYTES`] with filler in the user message.
fn padded(mut body: serde_json::Value) -> Bytes {
    let base = body.to_string().len();
    let filler: String = "Please review this function for off-by-one errors. "
        .chars()
        .cycle()
        .take(BODY_BYTES.saturating_sub(base))
        .collect();
    body["messages"][1]["content"] = json!(filler);
    Bytes::from(body.to_string())
}

pub(crate) fn chat_body() -> Bytes {
    chat_body_for(gateway::CHAT_MODEL)
}

/// The chat body for `model`.
pub(crate) fn chat_body_for(model: &str) -> Bytes {
    padded(json!({
        "model": model,
        "max_tokens": 64,
        "messages": [
            {"role": "system", "content": "You are a terse assistant."},
            {"role": "user", "content": ""}
        ]
    }))
}

pub(crate) fn messages_body(model: &str) -> Bytes {
    padded(json!({
        "model": model,
        "max_tokens": 64,
        "stream": true,
        "messages": [
            {"role": "assistant", "content": "Ready."},
            {"role": "user", "content": ""}
        ]
    }))
}

/// The same request against the fake upstream, the gateway and the relay.
type Specs = Ways<Arc<RequestSpec>>;

/// The request every way sends, addressed to `addr`.
pub(crate) fn spec_for(
    addr: SocketAddr,
    path: &'static str,
    body: &Bytes,
) -> anyhow::Result<Arc<RequestSpec>> {
    let auth = format!("Bearer {}", gateway::CLIENT_KEY);
    let headers = [("authorization", auth.as_str()), ("anthropic-version", "2023-06-01")];
    RequestSpec::post_json(addr, path, &headers, body.clone()).map(Arc::new)
}

fn specs(targets: Ways<SocketAddr>, path: &'static str, body: &Bytes) -> anyhow::Result<Specs> {
    let spec = |addr| spec_for(addr, path, body);
    Ok(Ways { direct: spec(targets.direct)?, gateway: spec(targets.gateway)?, relay: spec(targets.relay)? })
}

/// One request to `spec` must work before anything is measured.
async fn smoke_one(name: &str, spec: &RequestSpec, until: Until, gw: &GatewayProcess) -> anyhow::Result<()> {
    let mut conn = client::connect(spec.addr).await?;
    client::exchange(&mut conn, spec, until).await.with_context(|| {
        format!("{name} smoke request to {} failed; gateway log:\n{}", spec.addr, gw.log_tail())
    })?;
    Ok(())
}

/// One request each way must work before anything is measured.
async fn smoke(name: &str, s: &Specs, until: Until, gw: &GatewayProcess) -> anyhow::Result<()> {
    for spec in [&s.direct, &s.gateway, &s.relay] {
        smoke_one(name, spec, until, gw).await?;
    }
    Ok(())
}

/// Runs the ways of `s` (and `baseline`, when given) interleaved at one rate.
async fn open_ways(
    s: &Specs,
    baseline: Option<&Arc<RequestSpec>>,
    cfg: OpenLoop,
    label: &str,
) -> anyhow::Result<(Ways<OpenLoopResult>, Option<OpenLoopResult>)> {
    let ways =
        if baseline.is_some() { "direct, gateway, baseline and relay" } else { "direct, gateway and relay" };
    eprintln!("[bench] {label} @ {} req/s: {ways}, interleaved", cfg.rate);
    let mut specs = vec![s.direct.clone(), s.gateway.clone(), s.relay.clone()];
    specs.extend(baseline.cloned());
    let mut results = open_loop::run(&specs, cfg).await?.into_iter();
    let mut next = || results.next().context("open loop returned too few results");
    let (direct, gateway, relay) = (next()?, next()?, next()?);
    let baseline = match baseline {
        Some(_) => Some(next()?),
        None => None,
    };
    let named = [("direct", &direct), ("gateway", &gateway), ("relay", &relay)];
    for (way, r) in named.into_iter().chain(baseline.as_ref().map(|b| ("baseline", b))) {
        if let Some(e) = &r.first_error {
            eprintln!("[bench]   {way}: {} error(s), first: {e}", r.errors);
        }
    }
    Ok((Ways { direct, gateway, relay }, baseline))
}

/// The config a baseline gateway ran with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaselineConfig {
    /// The candidate's own config file text.
    Same,
    /// The config without the flow-control and pool connections: the baseline (a
    /// build from before flow control) refused the candidate's.
    Reduced,
}

impl BaselineConfig {
    /// For the log and the report.
    pub fn describe(self) -> &'static str {
        match self {
            BaselineConfig::Same => "with the candidate's config",
            BaselineConfig::Reduced => {
                "with a reduced config (it refused the candidate's: no flow-control or pool \
                 connections), so the two differ in more than their builds"
            }
        }
    }
}

/// Starts the baseline gateway with the candidate's config, so the two ways differ
/// only in their builds (it used to get the reduced config, 3 connections against the
/// candidate's 206, while the report said "the same config"). A build from before flow control refuses that config; it gets the
/// reduced one, and the report says so. A baseline that refuses both fails here, with the tail of its log,
/// before anything is measured.
async fn start_baseline(
    bin: &Path,
    fast: SocketAddr,
    slow: SocketAddr,
) -> anyhow::Result<(GatewayProcess, BaselineConfig)> {
    match GatewayProcess::start(bin, fast, slow, true).await {
        Ok(gw) => Ok((gw, BaselineConfig::Same)),
        Err(full) => {
            eprintln!(
                "[bench] the baseline refused the candidate's config ({full:#}); trying the reduced one"
            );
            let gw = GatewayProcess::start(bin, fast, slow, false)
                .await
                .with_context(|| format!("starting the baseline gateway {}", bin.display()))?;
            Ok((gw, BaselineConfig::Reduced))
        }
    }
}

/// `bin --version`, first line, for the log (None if it does not answer).
async fn version_of(bin: &Path) -> Option<String> {
    let out = Command::new(bin).arg("--version").output().await.ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    out.status.success().then(|| text.lines().next().unwrap_or_default().trim().to_owned())
}

/// Runs the whole benchmark; `relay_exe` is this binary (for the `relay` subcommand).
pub async fn run(settings: Settings, gateway_bin: &Path, relay_exe: &Path) -> anyhow::Result<Results> {
    let machine = Machine::detect();
    let fast = FakeUpstream::start(Pace::Fast).await?;
    let slow =
        FakeUpstream::start(Pace::Slow { interval: settings.slow_interval, frames: settings.slow_frames })
            .await?;
    let gw = GatewayProcess::start(gateway_bin, fast.addr(), slow.addr(), true).await?;
    let relay = RelayProcess::start(relay_exe, fast.addr(), HopClient::Reference).await?;
    eprintln!(
        "[bench] gateway pid {} on {}; fake upstream on {}; relay on {}",
        gw.pid(),
        gw.addr(),
        fast.addr(),
        relay.addr()
    );
    let (base_gw, baseline_config) = match &settings.baseline {
        Some(b) => {
            let (base_gw, config) = start_baseline(&b.bin, fast.addr(), slow.addr()).await?;
            eprintln!(
                "[bench] baseline gateway ({}; {}) pid {} on {}, {}",
                b.label,
                version_of(&b.bin).await.unwrap_or_else(|| "no --version".to_owned()),
                base_gw.pid(),
                base_gw.addr(),
                config.describe()
            );
            (Some(base_gw), Some(config))
        }
        None => (None, None),
    };
    let mut ours = vec![std::process::id(), gw.pid(), relay.pid()];
    ours.extend(base_gw.as_ref().map(GatewayProcess::pid));
    let probe = CpuProbe::new(ours);
    let run_cpu = probe.start();

    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_start = gw.rss()?;

    let targets = Ways { direct: fast.addr(), gateway: gw.addr(), relay: relay.addr() };
    let chat = specs(targets.clone(), "/v1/chat/completions", &chat_body())?;
    let sse = specs(targets.clone(), "/v1/messages", &messages_body(gateway::MESSAGES_MODEL))?;
    let agent = specs(targets, "/v1/chat/completions", &agent_body(gateway::CHAT_MODEL))?;
    let slow_spec = spec_for(gw.addr(), "/v1/messages", &messages_body(gateway::SLOW_MODEL))?;
    smoke("chat", &chat, Until::FullBody, &gw).await?;
    smoke("messages stream", &sse, Until::FirstByte, &gw).await?;
    smoke("agent-sized chat", &agent, Until::FullBody, &gw).await?;
    let (base_chat, base_agent) = match &base_gw {
        Some(base_gw) => {
            let spec = spec_for(base_gw.addr(), chat.gateway.path, &chat.gateway.body)?;
            smoke_one("baseline chat", &spec, Until::FullBody, base_gw).await?;
            let agent_spec = spec_for(base_gw.addr(), agent.gateway.path, &agent.gateway.body)?;
            smoke_one("baseline agent-sized chat", &agent_spec, Until::FullBody, base_gw).await?;
            (Some(spec), Some(agent_spec))
        }
        None => (None, None),
    };
    // The three smoke requests.
    let mut gateway_requests: u64 = 3;

    let mut latency = Vec::new();
    for &rate in &settings.rates {
        let cfg = settings.open_loop(rate, Until::FullBody);
        let cpu_probe = probe.start();
        let runtimes = |b: &GatewayProcess| Some((Runtime::read(gw.pid())?, Runtime::read(b.pid())?));
        let before = base_gw.as_ref().and_then(runtimes);
        let proxies = ProxyRuntimes::read(&gw, &relay);
        let (runs, baseline) = open_ways(&chat, base_chat.as_ref(), cfg, "chat latency").await?;
        let cpu = proxies.per_request(&gw, &relay, (runs.gateway.sent, runs.relay.sent));
        let after = base_gw.as_ref().and_then(runtimes);
        let ab_cpu = match (before, after, &baseline) {
            (Some((c0, b0)), Some((c1, b1)), Some(base)) => {
                Some(AbCpu::of(c1.since(&c0), runs.gateway.sent, b1.since(&b0), base.sent))
            }
            _ => None,
        };
        gateway_requests += runs.gateway.sent;
        latency.push(RateRun { rate, runs, baseline, ab_cpu, cpu, interference: probe.since(cpu_probe) });
    }
    // Right after the latency runs, which both gateways served alike, so their
    // request logs (and retention's work) are alike when it starts.
    let saturation_ab = match (&base_gw, &base_chat) {
        (Some(base_gw), Some(base_spec)) => {
            let ab = saturation_ab(&settings, (&chat.gateway, &gw), (base_spec, base_gw)).await?;
            gateway_requests += ab.candidate.sent + ab.candidate.warmup_sent;
            Some(ab)
        }
        _ => None,
    };

    let ttfb_cfg = settings.open_loop(settings.stream_rate, Until::FirstByte);
    let cpu = probe.start();
    let proxies = ProxyRuntimes::read(&gw, &relay);
    let (runs, _) = open_ways(&sse, None, ttfb_cfg, "stream TTFB").await?;
    let ttfb = RateRun {
        rate: settings.stream_rate,
        cpu: proxies.per_request(&gw, &relay, (runs.gateway.sent, runs.relay.sent)),
        runs,
        baseline: None,
        ab_cpu: None,
        interference: probe.since(cpu),
    };
    gateway_requests += ttfb.runs.gateway.sent;

    let agent_cfg = settings.open_loop(settings.agent_rate, Until::FullBody);
    let cpu = probe.start();
    let proxies = ProxyRuntimes::read(&gw, &relay);
    let (runs, baseline) = open_ways(&agent, base_agent.as_ref(), agent_cfg, "agent-sized chat").await?;
    let agent = RateRun {
        rate: settings.agent_rate,
        cpu: proxies.per_request(&gw, &relay, (runs.gateway.sent, runs.relay.sent)),
        runs,
        baseline,
        ab_cpu: None,
        interference: probe.since(cpu),
    };
    gateway_requests += agent.runs.gateway.sent;

    let tp_cfg =
        ClosedLoop { workers: settings.concurrency, warmup: settings.warmup, duration: settings.duration };
    let cpu = probe.start();
    eprintln!("[bench] throughput, {} workers: direct", settings.concurrency);
    let tp_direct = closed_loop::run(chat.direct.clone(), tp_cfg).await?;
    eprintln!("[bench] throughput, {} workers: gateway", settings.concurrency);
    let sampler = gw.sample_rss(RSS_EVERY);
    let proxies = ProxyRuntimes::read(&gw, &relay);
    let tp_gateway = closed_loop::run(chat.gateway.clone(), tp_cfg).await?;
    let throughput_peak = sampler.stop().await?;
    gateway_requests += tp_gateway.sent;
    eprintln!("[bench] throughput, {} workers: relay", settings.concurrency);
    let tp_relay = closed_loop::run(chat.relay.clone(), tp_cfg).await?;
    // Each ran alone, so the other's idle time is tiny beside its saturated run.
    let throughput_cpu = proxies.per_request(&gw, &relay, (tp_gateway.sent, tp_relay.sent));
    let throughput_interference = probe.since(cpu);
    for (way, r) in [("direct", &tp_direct), ("gateway", &tp_gateway), ("relay", &tp_relay)] {
        if let Some(e) = &r.first_error {
            eprintln!("[bench]   {way}: {} error(s), first: {e}", r.errors);
        }
    }
    tokio::time::sleep(settings.settle).await;
    let idle_after_load = gw.rss()?;

    let flow = flow::run(&settings, &gw).await?;
    gateway_requests +=
        flow.ungated.sent + flow.gated.sent + flow.ungated_throughput.sent + flow.saturated_throughput.sent;
    let scaling = scaling::run(&settings, &gw).await?;
    gateway_requests += scaling.one.sent
        + scaling.pool.sent
        + scaling.one_throughput.sent
        + scaling.pool_throughput.sent
        + scaling.one_throughput.warmup_sent
        + scaling.pool_throughput.warmup_sent;

    eprintln!("[bench] {} concurrent streams through the gateway", settings.streams);
    // The reference: the gateway idle, the earlier phases' memory given back as far
    // as it will be (not a reading that depends on how far that had got).
    let (rss_before, idle_settled_after) =
        gw.settled_rss(settings.idle_settle.0, settings.idle_settle.1).await?;
    eprintln!(
        "[bench]   idle RSS held still after {:.1} s: {:.1} MB",
        idle_settled_after.as_secs_f64(),
        rss_before as f64 / 1e6
    );
    let fds_before = gw.open_fds().ok();
    let sampler = gw.sample_rss(RSS_EVERY);
    let stream_time = settings.slow_interval * u32::try_from(settings.slow_frames)?;
    // Opening thousands of connections on two cores takes seconds of its own.
    let deadline = 2 * stream_time + settings.timeout + Duration::from_millis(2 * settings.streams as u64);
    let result = streams::run(slow_spec, settings.streams, deadline).await?;
    let rss_peak = sampler.stop().await?;
    gateway_requests += settings.streams as u64;
    if let Some(e) = &result.first_error {
        eprintln!("[bench]   {} stream error(s), first: {e}", result.errors);
    }
    tokio::time::sleep(settings.stream_settle).await;
    let rss_after = gw.rss()?;
    let fds_after = gw.open_fds().ok();

    let log = match gw.request_log_rows().await {
        Ok(rows) => Some(LogCheck { rows, gateway_requests }),
        Err(e) => {
            eprintln!("[bench] could not read the request log: {e:#}");
            None
        }
    };
    let interference = probe.since(run_cpu);
    relay.stop().await?;
    if let Some(base_gw) = base_gw {
        base_gw.stop().await?;
    }
    gw.stop().await?;
    if result.completed == 0 && settings.streams > 0 {
        bail!("no stream completed: {}", result.first_error.unwrap_or_default());
    }
    Ok(Results {
        settings,
        machine,
        latency,
        ttfb,
        agent,
        throughput: Ways { direct: tp_direct, gateway: tp_gateway, relay: tp_relay },
        throughput_interference,
        throughput_cpu,
        interference,
        memory: Memory { idle_start, throughput_peak, idle_after_load },
        streams: StreamsPhase {
            result,
            rss_before,
            idle_settled_after,
            rss_peak,
            rss_after,
            fds_before,
            fds_after,
        },
        log,
        flow,
        scaling,
        saturation_ab,
        baseline_config,
    })
}

/// The candidate and the baseline at saturation (closed loop), in alternating
/// 1-second slices so that what drifts over a run falls on both alike: the
/// throughput phase runs each way alone, one after the other, and between runs of
/// one build this VM moved the gateway's figures by ±15 %.
async fn saturation_ab(
    settings: &Settings,
    (candidate, gw): (&Arc<RequestSpec>, &GatewayProcess),
    (baseline, base_gw): (&Arc<RequestSpec>, &GatewayProcess),
) -> anyhow::Result<SaturationAb> {
    let rounds = settings.slices();
    eprintln!(
        "[bench] saturation A/B: {rounds} alternating 1 s closed-loop slices of candidate and baseline"
    );
    let targets = [(candidate.clone(), gw.pid()), (baseline.clone(), base_gw.pid())];
    let [candidate, baseline] = closed_loop::alternate_two(
        settings,
        targets,
        ["saturation A/B candidate", "saturation A/B baseline"],
    )
    .await?;
    Ok(SaturationAb { workers: settings.concurrency, rounds, candidate, baseline })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_about_one_kilobyte_and_valid_json() -> anyhow::Result<()> {
        for body in [chat_body(), messages_body("claude-bench")] {
            assert!((BODY_BYTES - 8..=BODY_BYTES + 8).contains(&body.len()), "len {}", body.len());
            let _: serde_json::Value = serde_json::from_slice(&body)?;
        }
        assert!(messages_body("m").windows(13).any(|w| w == b"\"stream\":true"));
        Ok(())
    }

    fn settings(duration_secs: u64, min_samples: u32) -> Settings {
        Settings {
            rates: vec![10],
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(duration_secs),
            min_samples,
            connections: 1,
            concurrency: 1,
            streams: 0,
            stream_rate: 200,
            agent_rate: 10,
            slow_frames: 1,
            slow_interval: Duration::from_millis(100),
            timeout: Duration::from_secs(1),
            settle: Duration::from_secs(1),
            stream_settle: Duration::from_secs(1),
            idle_settle: (Duration::ZERO, Duration::from_secs(1)),
            command: String::new(),
            baseline: None,
        }
    }

    #[test]
    fn a_low_rate_runs_long_enough_for_its_samples() {
        let s = settings(10, 300);
        assert_eq!(s.open_loop(10, Until::FullBody).duration, Duration::from_secs(30));
        assert_eq!(s.open_loop_duration(7), Duration::from_secs(43), "whole seconds, rounded up");
        assert_eq!(s.open_loop_duration(100), Duration::from_secs(10), "1,000 samples in the run's 10 s");
        assert_eq!(settings(10, 0).open_loop_duration(10), Duration::from_secs(10));
    }

    #[test]
    fn cpu_per_request_from_runtimes() {
        // 2 s and 1.8 s of CPU for 40,000 requests each: 50 and 45 µs.
        let c = AbCpu::of(2_000_000_000, 40_000, 1_800_000_000, 40_000);
        assert!((c.candidate_us - 50.0).abs() < 1e-9, "{c:?}");
        assert!((c.baseline_us - 45.0).abs() < 1e-9, "{c:?}");
    }
}
