//! What a lane does after a burst with jemalloc as the global allocator, as in the
//! gateway's binaries (ADR 0010, decision 5): its release and the purge that
//! follows a longer quiet give the memory a burst freed back at once, not a whole
//! decay (five seconds here) later.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use switchyard_gateway::conn::lane_memory;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// This process's resident set, in bytes (`VmRSS`, which the kernel gives in kB
/// whatever the page size).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_else(|e| panic!("status: {e}"));
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next());
    kb.and_then(|kb| kb.parse::<u64>().ok()).unwrap_or_else(|| panic!("no VmRSS in {status}")) * 1024
}

#[test]
fn a_lane_s_release_and_purge_give_a_burst_s_pages_back_to_the_system_at_once() {
    const BURST: u64 = 64 << 20;
    let memory = lane_memory::jemalloc_threads().unwrap_or_else(|| panic!("no jemalloc controls"));

    // A burst of 8 KB buffers (hyper's size), written to so their pages are resident.
    let burst: Vec<Vec<u8>> = (0..BURST / 8192).map(|_| vec![1u8; 8192]).collect();
    let at_peak = rss();
    drop(burst);
    let freed = rss();
    // Freed, the pages stay with jemalloc until its decay would purge them.
    assert!(
        at_peak.saturating_sub(freed) < BURST / 4,
        "jemalloc returned the pages before the release: {at_peak} -> {freed}"
    );

    memory.release();
    memory.purge();
    let released = rss();
    assert!(
        freed.saturating_sub(released) > BURST * 3 / 4,
        "the release and purge gave back {} of the burst's {BURST} bytes (peak {at_peak}, freed {freed}, released {released})",
        freed.saturating_sub(released)
    );
}
