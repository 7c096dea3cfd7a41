//! The controls against jemalloc as this test binary's global allocator, as in the
//! gateway's binary.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use switchyard_allocator::{flush_thread_cache, purge_arenas, thread_allocated};

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[test]
fn a_thread_s_count_grows_by_what_it_allocates_and_other_threads_do_not_move_it() {
    let before = thread_allocated().unwrap_or_else(|| panic!("jemalloc gave no counter"));
    let kept: Vec<Vec<u8>> = (0..64).map(|_| vec![1u8; 4096]).collect();
    let after = thread_allocated().unwrap_or_default();
    assert!(after - before >= 64 * 4096, "{before} -> {after}");

    // Another thread's allocations are its own count.
    let mine = thread_allocated().unwrap_or_default();
    std::thread::spawn(|| drop(vec![0u8; 1 << 20])).join().unwrap_or_else(|_| panic!("thread"));
    assert!(thread_allocated().unwrap_or_default() - mine < 1 << 20);
    drop(kept);
}

#[test]
fn the_thread_cache_is_flushed_and_allocation_goes_on_after() {
    // Regions freed by this thread go to its cache first; flushing hands them back.
    let freed: Vec<Box<[u8; 512]>> = (0..100).map(|_| Box::new([0u8; 512])).collect();
    drop(freed);
    assert!(flush_thread_cache());
    // The cache refills from the arenas on the next allocations.
    let again: Vec<Box<[u8; 512]>> = (0..100).map(|_| Box::new([7u8; 512])).collect();
    assert!(again.iter().all(|b| b[511] == 7));
    assert!(flush_thread_cache(), "a second flush of a cache in use works too");
}

/// Dirty pages (freed, not yet returned to the system) over all arenas.
fn dirty_pages() -> usize {
    tikv_jemalloc_ctl::epoch::advance().unwrap_or_else(|e| panic!("epoch: {e}"));
    // SAFETY: `stats.arenas.<i>.pdirty` is a size_t (jemalloc's manual), read as
    // a usize; the name is NUL-terminated.
    #[allow(unsafe_code)]
    let pages = unsafe { tikv_jemalloc_ctl::raw::read::<usize>(b"stats.arenas.4096.pdirty\0") };
    pages.unwrap_or_else(|e| panic!("pdirty: {e}"))
}

#[test]
fn a_purge_returns_the_pages_a_burst_left_at_once_not_over_the_decay() {
    // A burst's worth of 8 KB buffers, written to (resident), then freed: their
    // slabs empty and their pages go dirty, where jemalloc's decay (five seconds
    // in this workspace's build) would purge them in steps.
    let burst: Vec<Vec<u8>> = (0..4096).map(|_| vec![1u8; 8192]).collect();
    drop(burst);
    assert!(flush_thread_cache());
    let dirty = dirty_pages();
    assert!(dirty >= 1024, "the burst left only {dirty} dirty pages");

    assert!(purge_arenas());
    assert_eq!(dirty_pages(), 0, "dirty pages left after the purge (before it: {dirty})");

    // The arenas serve allocations as before.
    let again: Vec<Vec<u8>> = (0..64).map(|_| vec![3u8; 8192]).collect();
    assert!(again.iter().all(|b| b[8191] == 3));
}
