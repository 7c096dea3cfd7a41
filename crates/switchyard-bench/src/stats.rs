//! Latency histograms and their summaries.
//!
//! Latencies are recorded in nanoseconds in an HDR histogram (3 significant
//! digits, so a percentile is within 0.1 % of the true value at any scale, and
//! recording is a constant-time bucket increment). The report prints milliseconds.
//! "Added" latency is a difference of percentiles (gateway pXX minus direct pXX),
//! not a percentile of differences: the two runs are separate samples.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Highest latency a histogram tracks: 60 s (anything slower is a timeout anyway).
const MAX_NS: u64 = 60_000_000_000;

/// A nanosecond latency histogram.
pub fn histogram() -> anyhow::Result<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, MAX_NS, 3)?)
}

/// Records `d`, clamped into the histogram's range.
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(MAX_NS).clamp(1, MAX_NS);
    h.saturating_record(ns);
}

/// The percentiles the report shows, in nanoseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest sample.
    pub max: u64,
}

impl Summary {
    /// Summarises `h`.
    pub fn of(h: &Histogram<u64>) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        Summary {
            count: h.len(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// Nanoseconds as milliseconds with three decimals.
pub fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// `gateway - direct` in milliseconds, signed, three decimals.
pub fn added_ms(gateway_ns: u64, direct_ns: u64) -> f64 {
    (gateway_ns as f64 - direct_ns as f64) / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reads_percentiles_in_nanoseconds() -> anyhow::Result<()> {
        let mut h = histogram()?;
        for us in 1..=1000u64 {
            record(&mut h, Duration::from_micros(us));
        }
        let s = Summary::of(&h);
        assert_eq!(s.count, 1000);
        assert!((499_000..=501_000).contains(&s.p50), "p50 {}", s.p50);
        assert!((989_000..=991_000).contains(&s.p99), "p99 {}", s.p99);
        assert_eq!(ms(1_234_567), "1.235");
        assert!((added_ms(300_000, 100_000) - 0.2).abs() < 1e-9);
        Ok(())
    }

    #[test]
    fn empty_histogram_summarises_to_zero() -> anyhow::Result<()> {
        assert_eq!(Summary::of(&histogram()?).count, 0);
        Ok(())
    }
}
