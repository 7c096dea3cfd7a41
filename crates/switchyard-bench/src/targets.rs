//! The performance targets of issue 2, checked against a run. Each verdict states
//! its margin: how far inside the target a met figure is, or by how much a missed
//! one misses it. A target whose phase did not run (e.g. 2,000 requests/s not among
//! `--rates`) is reported as not measured, never as met.

use crate::run::Results;
use crate::stats;

/// Added p50 budget at 2,000 requests/s, ms.
pub const ADDED_P50_MS: f64 = 0.1;
/// Added p99 budget at 2,000 requests/s, ms.
pub const ADDED_P99_MS: f64 = 0.5;
/// The rate the latency budgets apply at.
pub const TARGET_RATE: u32 = 2_000;
/// Throughput floor through the gateway, requests/s.
pub const THROUGHPUT_RPS: f64 = 10_000.0;
/// Idle RSS ceiling, bytes (20 MB, decimal).
pub const IDLE_RSS_BYTES: u64 = 20_000_000;
/// What "bounded memory" means for the many-streams target: the RSS growth per
/// concurrently open stream stays under this many bytes (64 KB; a relay needs a few
/// KB of buffers and two sockets per stream, so this catches per-stream buffering of
/// whole bodies or leaks, not allocator noise).
pub const STREAM_BYTES_BUDGET: u64 = 64_000;

/// Met or not, with the margin in words.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Met, and by how much.
    Met(String),
    /// Missed, and by how much.
    Missed(String),
    /// The phase did not run.
    NotMeasured(String),
}

/// One row of the targets table.
#[derive(Debug, Clone)]
pub struct TargetCheck {
    /// What is measured.
    pub name: String,
    /// The goal, as text.
    pub goal: String,
    /// The measured figure, as text.
    pub measured: String,
    /// Verdict with margin.
    pub verdict: Verdict,
}

fn at_most(value: f64, limit: f64, unit: &str, digits: usize) -> Verdict {
    if value <= limit {
        Verdict::Met(format!("{:.digits$} {unit} under", limit - value))
    } else {
        Verdict::Missed(format!(
            "over by {:.digits$} {unit} ({:.2}× the budget)",
            value - limit,
            value / limit
        ))
    }
}

fn latency_check(label: &str, limit: f64, added: Option<f64>) -> TargetCheck {
    let name = format!("Added latency {label} at {TARGET_RATE} req/s (non-streaming)");
    let goal = format!("≤ {limit:.1} ms");
    match added {
        Some(added) => TargetCheck {
            name,
            goal,
            measured: format!("{added:.3} ms"),
            verdict: at_most(added, limit, "ms", 3),
        },
        None => TargetCheck {
            name,
            goal,
            measured: "—".into(),
            verdict: Verdict::NotMeasured(format!("{TARGET_RATE} req/s not in --rates")),
        },
    }
}

/// Checks every target.
pub fn check(r: &Results) -> Vec<TargetCheck> {
    let mut out = Vec::new();
    let at_rate = r.latency.iter().find(|run| run.rate == TARGET_RATE);
    let added = |pick: fn(&stats::Summary) -> u64| {
        at_rate.map(|run| stats::added_ms(pick(&run.runs.gateway.latency), pick(&run.runs.direct.latency)))
    };
    out.push(latency_check("p50", ADDED_P50_MS, added(|s| s.p50)));
    out.push(latency_check("p99", ADDED_P99_MS, added(|s| s.p99)));

    let rps = r.throughput.gateway.rps;
    out.push(TargetCheck {
        name: "Throughput through the gateway, small non-streaming".into(),
        goal: format!("≥ {THROUGHPUT_RPS:.0} req/s"),
        measured: format!("{rps:.0} req/s"),
        verdict: if rps >= THROUGHPUT_RPS {
            Verdict::Met(format!("{:.0} req/s over", rps - THROUGHPUT_RPS))
        } else {
            Verdict::Missed(format!(
                "short by {:.0} req/s ({:.0} % of the target)",
                THROUGHPUT_RPS - rps,
                100.0 * rps / THROUGHPUT_RPS
            ))
        },
    });

    let idle_mb = r.memory.idle_start as f64 / 1e6;
    out.push(TargetCheck {
        name: "Gateway RSS at idle after start".into(),
        goal: format!("≤ {:.0} MB", IDLE_RSS_BYTES as f64 / 1e6),
        measured: format!("{idle_mb:.1} MB"),
        verdict: at_most(idle_mb, IDLE_RSS_BYTES as f64 / 1e6, "MB", 1),
    });

    let s = &r.streams;
    // Per stream open at the peak (the bench may not open them all at once).
    let n = s.result.max_open.max(1) as u64;
    let per_stream = s.rss_peak.saturating_sub(s.rss_before) / n;
    let measured = format!(
        "{} errors, {}/{} completed, {:.1} KB RSS per stream",
        s.result.errors,
        s.result.completed,
        s.result.requested,
        per_stream as f64 / 1e3
    );
    let verdict = if s.result.errors > 0 || s.result.completed < s.result.requested {
        Verdict::Missed(format!("{} stream(s) failed", s.result.requested - s.result.completed))
    } else if per_stream > STREAM_BYTES_BUDGET {
        Verdict::Missed(format!(
            "memory per stream over budget by {:.1} KB",
            (per_stream - STREAM_BYTES_BUDGET) as f64 / 1e3
        ))
    } else {
        Verdict::Met(format!(
            "0 errors; {:.1} KB per stream under budget",
            (STREAM_BYTES_BUDGET - per_stream) as f64 / 1e3
        ))
    };
    out.push(TargetCheck {
        name: format!("{} concurrent open streams", s.result.requested),
        goal: format!("0 errors, bounded memory (≤ {} KB per stream)", STREAM_BYTES_BUDGET / 1000),
        measured,
        verdict,
    });
    out
}

/// Issue 16: how far the gateway's added p50 may sit above the relay's at the
/// rates agents send (10 and 100 req/s), ms.
pub const FLOOR_MARGIN_MS: f64 = 0.05;
/// Issue 16: the gateway's CPU per request at saturation, as a multiple of the
/// relay's.
pub const SATURATED_CPU_RATIO: f64 = 2.0;
/// Issue 16: CPU per request at 10 req/s, µs.
pub const LOW_RATE_CPU_US: f64 = 150.0;
/// Issue 16: throughput as a share of the relay's.
pub const THROUGHPUT_SHARE: f64 = 0.6;
/// Issue 16: how much more many connections of one provider may cost than one.
pub const SCALING_TOLERANCE: f64 = 0.1;
/// Issue 16: RSS growth per open stream, bytes.
pub const STREAM_BYTES_ISSUE16: u64 = 40_000;
/// Issue 16: RSS after a streams burst, as a share above the idle before it.
pub const STREAM_RSS_RETURN: f64 = 0.2;

fn floor_check(name: String, gateway_ms: f64, relay_ms: f64, margin: f64) -> TargetCheck {
    TargetCheck {
        name,
        goal: format!("≤ relay + {margin:.2} ms"),
        measured: format!("{gateway_ms:+.3} ms (relay {relay_ms:+.3} ms)"),
        verdict: at_most(gateway_ms - relay_ms, margin, "ms", 3),
    }
}

fn not_measured(name: String, goal: String, why: &str) -> TargetCheck {
    TargetCheck { name, goal, measured: "—".into(), verdict: Verdict::NotMeasured(why.into()) }
}

/// Issue 16's targets: the gateway against the reference relay of the same run.
pub fn check_floor(r: &Results) -> Vec<TargetCheck> {
    let mut out = Vec::new();
    let added = |run: &crate::run::RateRun, relay: bool| {
        let way = if relay { &run.runs.relay } else { &run.runs.gateway };
        stats::added_ms(way.latency.p50, run.runs.direct.latency.p50)
    };
    for rate in [10, 100] {
        let name = format!("Added p50 at {rate} req/s");
        match r.latency.iter().find(|run| run.rate == rate) {
            Some(run) => out.push(floor_check(name, added(run, false), added(run, true), FLOOR_MARGIN_MS)),
            None => out.push(not_measured(
                name,
                format!("≤ relay + {FLOOR_MARGIN_MS:.2} ms"),
                "rate not in --rates",
            )),
        }
    }
    let name = format!("Added p50 at {TARGET_RATE} req/s");
    match r.latency.iter().find(|run| run.rate == TARGET_RATE) {
        Some(run) => {
            let g = added(run, false);
            out.push(TargetCheck {
                name,
                goal: format!("≤ {ADDED_P50_MS:.1} ms"),
                measured: format!("{g:+.3} ms (relay {:+.3} ms)", added(run, true)),
                verdict: at_most(g, ADDED_P50_MS, "ms", 3),
            });
        }
        None => out.push(not_measured(name, format!("≤ {ADDED_P50_MS:.1} ms"), "rate not in --rates")),
    }
    let name = "CPU per request at saturation".to_owned();
    let goal = format!("≤ {SATURATED_CPU_RATIO:.0}× the relay's");
    match r.throughput_cpu {
        Some(c) => out.push(TargetCheck {
            name,
            goal,
            measured: format!(
                "{:.1} µs (relay {:.1} µs, {:.2}×)",
                c.gateway_us,
                c.relay_us,
                c.gateway_us / c.relay_us
            ),
            verdict: at_most(c.gateway_us, SATURATED_CPU_RATIO * c.relay_us, "µs", 1),
        }),
        None => out.push(not_measured(name, goal, "no schedstat")),
    }
    let name = "CPU per request at 10 req/s".to_owned();
    let goal = format!("≤ {LOW_RATE_CPU_US:.0} µs");
    match r.latency.iter().find(|run| run.rate == 10).and_then(|run| run.cpu) {
        Some(c) => out.push(TargetCheck {
            name,
            goal,
            measured: format!(
                "{:.1} µs (relay {:.1} µs; the gateway's lanes {:.1}, its log writer {:.1})",
                c.gateway_us, c.relay_us, c.gateway_threads.lanes, c.gateway_threads.log
            ),
            verdict: at_most(c.gateway_us, LOW_RATE_CPU_US, "µs", 1),
        }),
        None => out.push(not_measured(name, goal, "10 req/s not in --rates")),
    }
    out.push(floor_check(
        format!("Streaming TTFB added p50 at {} req/s", r.ttfb.rate),
        added(&r.ttfb, false),
        added(&r.ttfb, true),
        FLOOR_MARGIN_MS,
    ));
    let t = &r.throughput;
    let share = t.gateway.rps / t.relay.rps.max(1.0);
    out.push(TargetCheck {
        name: "Maximum throughput".into(),
        goal: format!("≥ {:.0} % of the relay's", THROUGHPUT_SHARE * 100.0),
        measured: format!("{:.0} req/s (relay {:.0}, {:.0} %)", t.gateway.rps, t.relay.rps, share * 100.0),
        verdict: if share >= THROUGHPUT_SHARE {
            Verdict::Met(format!("{:.0} points over", (share - THROUGHPUT_SHARE) * 100.0))
        } else {
            Verdict::Missed(format!("short by {:.0} points", (THROUGHPUT_SHARE - share) * 100.0))
        },
    });
    let sc = &r.scaling;
    let p50_ratio = sc.pool.latency.p50 as f64 / sc.one.latency.p50.max(1) as f64;
    let pool = crate::gateway::POOL_SIZE;
    out.push(TargetCheck {
        name: format!("{pool} connections against one: p50 at {} req/s", sc.rate),
        goal: format!("within {:.0} %", SCALING_TOLERANCE * 100.0),
        measured: format!("×{p50_ratio:.3}"),
        verdict: at_most((p50_ratio - 1.0) * 100.0, SCALING_TOLERANCE * 100.0, "points", 1),
    });
    let name = format!("{pool} connections against one: CPU per request");
    let goal = format!("within {:.0} %", SCALING_TOLERANCE * 100.0);
    match sc.cpu_us {
        Some((one, many)) => out.push(TargetCheck {
            name,
            goal,
            measured: format!("{many:.1} µs against {one:.1} µs (×{:.3})", many / one.max(1e-9)),
            verdict: at_most((many / one.max(1e-9) - 1.0) * 100.0, SCALING_TOLERANCE * 100.0, "points", 1),
        }),
        None => out.push(not_measured(name, goal, "no schedstat")),
    }
    let s = &r.streams;
    // Per stream open at the peak (the bench may not open them all at once).
    let n = s.result.max_open.max(1) as u64;
    let per_stream = s.rss_peak.saturating_sub(s.rss_before) / n;
    let back = s.rss_after as f64 / s.rss_before.max(1) as f64 - 1.0;
    let settled = r.settings.stream_settle.as_secs_f64();
    out.push(TargetCheck {
        name: format!("{} concurrent streams", s.result.requested),
        goal: format!(
            "0 errors, ≤ {} KB RSS per open stream, RSS within {:.0} % of idle {settled:.0} s after",
            STREAM_BYTES_ISSUE16 / 1000,
            STREAM_RSS_RETURN * 100.0
        ),
        measured: format!(
            "{} errors, {:.1} KB per stream, {:+.0} % of idle after",
            s.result.errors,
            per_stream as f64 / 1e3,
            back * 100.0
        ),
        verdict: if s.result.errors > 0 || s.result.completed < s.result.requested {
            Verdict::Missed(format!("{} stream(s) failed", s.result.requested - s.result.completed))
        } else if per_stream > STREAM_BYTES_ISSUE16 {
            Verdict::Missed(format!(
                "{:.1} KB per stream over",
                (per_stream - STREAM_BYTES_ISSUE16) as f64 / 1e3
            ))
        } else if back > STREAM_RSS_RETURN {
            Verdict::Missed(format!("RSS {:.0} % above idle after the burst", back * 100.0))
        } else {
            Verdict::Met(format!(
                "{:.1} KB per stream under; RSS back within {:.0} %",
                (STREAM_BYTES_ISSUE16 - per_stream) as f64 / 1e3,
                back.max(0.0) * 100.0
            ))
        },
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_read_naturally() {
        assert_eq!(at_most(0.04, 0.1, "ms", 3), Verdict::Met("0.060 ms under".into()));
        assert_eq!(at_most(0.3, 0.1, "ms", 3), Verdict::Missed("over by 0.200 ms (3.00× the budget)".into()));
    }
}
