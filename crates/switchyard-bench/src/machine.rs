//! The machine and checkout a run happened on, read at run time so the report
//! never claims hardware it did not run on. Every field degrades to "unknown"
//! rather than failing the benchmark.

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

/// Aggregate CPU time counters from `/proc/stat`, in clock ticks. On a VM the
/// `steal` column is time the host gave our virtual CPUs to someone else: the main
/// source of millisecond stalls that no process here can cause or avoid.
#[derive(Debug, Clone, Copy)]
pub struct CpuTimes {
    steal: u64,
    total: u64,
}

impl CpuTimes {
    /// Reads the counters now (None where /proc/stat is unavailable).
    pub fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal guest guest_nice; guest time
        // is already counted in user, so the first eight make the total.
        let steal = *fields.get(7)?;
        Some(CpuTimes { steal, total: fields.iter().take(8).sum() })
    }

    /// Percentage of all CPU time stolen by the host between `earlier` and `self`.
    pub fn steal_pct_since(&self, earlier: &CpuTimes) -> f64 {
        let total = self.total.saturating_sub(earlier.total);
        if total == 0 {
            return 0.0;
        }
        100.0 * self.steal.saturating_sub(earlier.steal) as f64 / total as f64
    }
}

/// Steal percentage over a span that began at `start` (None if unreadable).
pub fn steal_since(start: Option<CpuTimes>) -> Option<f64> {
    Some(CpuTimes::now()?.steal_pct_since(&start?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_read_and_difference() {
        let a = CpuTimes { steal: 10, total: 1000 };
        let b = CpuTimes { steal: 30, total: 2000 };
        assert!((b.steal_pct_since(&a) - 2.0).abs() < 1e-9);
        assert_eq!(a.steal_pct_since(&a), 0.0);
        assert!(CpuTimes::now().is_some());
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }
}
