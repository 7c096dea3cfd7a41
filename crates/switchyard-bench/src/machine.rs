//! The machine and checkout a run happened on, read at run time so the report
//! never claims hardware it did not run on. Every field degrades to "unknown"
//! rather than failing the benchmark.

use std::collections::HashMap;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where the numbers come from.
#[derive(Debug, Clone)]
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Kernel release.
    pub kernel: String,
    /// Total memory, MB.
    pub mem_total_mb: Option<u64>,
    /// Date and time of the run, UTC.
    pub date: String,
    /// Git commit of the checkout (with `-dirty` if tracked files changed).
    pub commit: String,
}

impl Machine {
    /// Reads the current machine.
    pub fn detect() -> Machine {
        let cpus = std::thread::available_parallelism().map(usize::from).unwrap_or(0);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_total_mb = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<u64>().ok())
            .map(|kib| kib * 1024 / 1_000_000);
        Machine { cpus, cpu_model, kernel, mem_total_mb, date: utc_now(), commit: git_commit() }
    }
}

fn git_commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let run = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match run(&["rev-parse", "--short", "HEAD"]) {
        Some(commit) => {
            let dirty =
                run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            if dirty { format!("{commit}-dirty") } else { commit }
        }
        None => "unknown".to_owned(),
    }
}

/// `YYYY-MM-DD HH:MM UTC` without a date library (days-to-civil, Howard Hinnant).
fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// CPU time the benchmark did not get: `steal` is time the hypervisor gave our
/// virtual CPUs to other guests, `others` is time other processes on this machine
/// used (a build running next to the benchmark, say). Both show up as stalls and
/// as lower throughput, so the report states them next to each measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Interference {
    /// Stolen by the host, % of all CPU time.
    pub steal_pct: f64,
    /// Used by processes other than the benchmark's, % of all CPU time.
    pub others_pct: f64,
}

/// CPU counters at one moment, in clock ticks: from `/proc/stat` for the whole
/// machine and from `/proc/PID/stat` for the benchmark's own processes.
#[derive(Debug, Clone, Copy)]
pub struct CpuTimes {
    steal: u64,
    busy: u64,
    total: u64,
    ours: u64,
}

impl CpuTimes {
    /// Reads the counters now; `pids` are the benchmark's processes (None where
    /// /proc is unavailable).
    pub fn now(pids: &[u32]) -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let f: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal (guest time is already in user).
        let field = |i: usize| f.get(i).copied();
        let busy = field(0)? + field(1)? + field(2)? + field(5)? + field(6)?;
        let total = f.iter().take(8).sum();
        let ours = pids.iter().filter_map(|&pid| process_ticks(pid)).sum();
        Some(CpuTimes { steal: field(7)?, busy, total, ours })
    }

    /// What others took between `earlier` and `self`.
    pub fn interference_since(&self, earlier: &CpuTimes) -> Interference {
        let total = self.total.saturating_sub(earlier.total);
        if total == 0 {
            return Interference::default();
        }
        let pct = |ticks: u64| 100.0 * ticks as f64 / total as f64;
        let busy = self.busy.saturating_sub(earlier.busy);
        let ours = self.ours.saturating_sub(earlier.ours);
        Interference {
            steal_pct: pct(self.steal.saturating_sub(earlier.steal)),
            others_pct: pct(busy.saturating_sub(ours)),
        }
    }
}

/// utime + stime of a process (all its threads), in clock ticks.
fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14
    // and 15 of the whole line, so 12th and 13th after the name.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Exact on-CPU time of one process's threads at one moment: the first field of
/// `/proc/PID/task/TID/schedstat`, the scheduler's own runtime in nanoseconds. Not
/// the tick-sampled utime + stime of `/proc/PID/stat`, which on a busy host is a
/// statistical estimate (two identical gateways differed by 5 % in one run); a
/// per-request CPU comparison needs the exact figure.
#[derive(Debug, Clone, Default)]
pub struct Runtime {
    by_thread: HashMap<u32, (u64, ThreadKind)>,
}

/// What a gateway thread does, from its name: the report splits the gateway's CPU
/// by it, so a run shows whether the requests' own threads or the work around them
/// (the request log, the allocator's purge, the main thread) moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadKind {
    /// A connection lane (`switchyard-lane-N`): where requests are served.
    Lane,
    /// The request log's writer (`switchyard-log-db`, and sqlx's SQLite workers).
    Log,
    /// Everything else: the main thread (accept loop), jemalloc's background
    /// purge, tokio's blocking pool.
    Other,
}

impl ThreadKind {
    /// The kind of a thread named `comm` (the kernel keeps 15 bytes of a name).
    pub fn of(comm: &str) -> ThreadKind {
        if comm.starts_with("switchyard-lane") {
            ThreadKind::Lane
        } else if comm.starts_with("switchyard-log") || comm.starts_with("sqlx-sqlite") {
            ThreadKind::Log
        } else {
            ThreadKind::Other
        }
    }
}

/// Nanoseconds run, by [`ThreadKind`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ByKind {
    /// The connection lanes.
    pub lanes: u64,
    /// The request log's threads.
    pub log: u64,
    /// Every other thread.
    pub other: u64,
}

impl ByKind {
    /// All threads together.
    pub fn total(&self) -> u64 {
        self.lanes + self.log + self.other
    }
}

impl Runtime {
    /// Reads every live thread of `pid` (None if /proc has no schedstat).
    pub fn read(pid: u32) -> Option<Runtime> {
        let mut by_thread = HashMap::new();
        for entry in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
            let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse::<u32>().ok()) else { continue };
            // A thread may end between the listing and the read: skip it.
            let Ok(stat) = std::fs::read_to_string(entry.path().join("schedstat")) else { continue };
            let kind = std::fs::read_to_string(entry.path().join("comm"))
                .map_or(ThreadKind::Other, |comm| ThreadKind::of(comm.trim_end()));
            if let Some(ns) = stat.split_whitespace().next().and_then(|f| f.parse::<u64>().ok()) {
                by_thread.insert(tid, (ns, kind));
            }
        }
        (!by_thread.is_empty()).then_some(Runtime { by_thread })
    }

    /// Nanoseconds run since `earlier` by the threads alive now (a thread started
    /// in between counts from zero). A thread that ended in between is missed: the
    /// gateway's runtime workers and its SQLite thread live as long as it does.
    pub fn since(&self, earlier: &Runtime) -> u64 {
        self.since_by_kind(earlier).total()
    }

    /// [`Runtime::since`], by what each thread does.
    pub fn since_by_kind(&self, earlier: &Runtime) -> ByKind {
        let mut by = ByKind::default();
        for (tid, &(ns, kind)) in &self.by_thread {
            let ran = ns.saturating_sub(earlier.by_thread.get(tid).map_or(0, |&(before, _)| before));
            match kind {
                ThreadKind::Lane => by.lanes += ran,
                ThreadKind::Log => by.log += ran,
                ThreadKind::Other => by.other += ran,
            }
        }
        by
    }
}

/// Measures interference over spans, for a fixed set of our processes.
#[derive(Debug, Clone)]
pub struct CpuProbe {
    pids: Vec<u32>,
}

impl CpuProbe {
    /// A probe counting `pids` as the benchmark's own.
    pub fn new(pids: Vec<u32>) -> CpuProbe {
        CpuProbe { pids }
    }

    /// Marks the start of a span.
    pub fn start(&self) -> Option<CpuTimes> {
        CpuTimes::now(&self.pids)
    }

    /// Interference since `start` (None if /proc was unreadable).
    pub fn since(&self, start: Option<CpuTimes>) -> Option<Interference> {
        Some(CpuTimes::now(&self.pids)?.interference_since(&start?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interference_is_steal_and_foreign_busy_time() {
        let a = CpuTimes { steal: 10, busy: 100, total: 1000, ours: 50 };
        let b = CpuTimes { steal: 30, busy: 700, total: 2000, ours: 450 };
        let i = b.interference_since(&a);
        assert!((i.steal_pct - 2.0).abs() < 1e-9);
        assert!((i.others_pct - 20.0).abs() < 1e-9);
        assert_eq!(a.interference_since(&a), Interference::default());
    }

    #[test]
    fn threads_are_sorted_by_their_names() {
        assert_eq!(ThreadKind::of("switchyard-lane"), ThreadKind::Lane);
        assert_eq!(ThreadKind::of("switchyard-log-"), ThreadKind::Log);
        assert_eq!(ThreadKind::of("sqlx-sqlite-wor"), ThreadKind::Log);
        assert_eq!(ThreadKind::of("switchyard"), ThreadKind::Other);
        assert_eq!(ThreadKind::of("jemalloc_bg_thd"), ThreadKind::Other);
    }

    #[test]
    fn runtime_since_splits_by_kind() {
        let at = |rows: &[(u32, u64, ThreadKind)]| Runtime {
            by_thread: rows.iter().map(|&(tid, ns, kind)| (tid, (ns, kind))).collect(),
        };
        let before =
            at(&[(1, 100, ThreadKind::Other), (2, 1_000, ThreadKind::Lane), (3, 50, ThreadKind::Log)]);
        let after = at(&[
            (1, 130, ThreadKind::Other),
            (2, 1_700, ThreadKind::Lane),
            (3, 60, ThreadKind::Log),
            (4, 5, ThreadKind::Lane),
        ]);
        assert_eq!(after.since_by_kind(&before), ByKind { lanes: 705, log: 10, other: 30 });
        assert_eq!(after.since(&before), 745);
    }

    #[test]
    fn reads_own_threads_by_kind() -> anyhow::Result<()> {
        let read = || Runtime::read(std::process::id()).ok_or_else(|| anyhow::anyhow!("no schedstat"));
        let first = read()?;
        let mut spin = 0u64;
        for i in 0..2_000_000u64 {
            spin = std::hint::black_box(spin.wrapping_add(i));
        }
        let later = read()?;
        // The test's own thread is not a gateway thread: its time counts as other.
        let by = later.since_by_kind(&first);
        assert!(by.other > 0 && by.lanes == 0, "{by:?}");
        Ok(())
    }

    #[test]
    fn reads_own_process_ticks() {
        let probe = CpuProbe::new(vec![std::process::id()]);
        let start = probe.start();
        assert!(start.is_some());
        assert!(process_ticks(std::process::id()).is_some());
        assert!(probe.since(start).is_some());
    }

    #[test]
    fn runtime_counts_what_threads_ran_since() {
        let other = ThreadKind::Other;
        let earlier = Runtime { by_thread: HashMap::from([(1, (100, other)), (2, (50, other))]) };
        // Thread 2 ended, thread 3 started.
        let later = Runtime { by_thread: HashMap::from([(1, (400, other)), (3, (25, other))]) };
        assert_eq!(later.since(&earlier), 325);
        let own = Runtime::read(std::process::id());
        assert!(own.is_some_and(|r| r.by_thread.contains_key(&std::process::id())));
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }
}
