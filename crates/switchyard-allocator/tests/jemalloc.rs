//! The two controls against jemalloc as this test binary's global allocator, as in
//! the gateway's binary.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use switchyard_allocator::{flush_thread_cache, purge_thread_arena, thread_allocated};

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

/// This process's resident set, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_else(|e| panic!("{e}"));
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

#[test]
fn the_thread_s_arena_gives_its_unused_pages_back_at_once() {
    // 16 MB written and freed: the pages stay resident in the arena, waiting for
    // the decay (seconds), until the purge hands them back.
    let big: Vec<Vec<u8>> = (0..256).map(|_| vec![1u8; 64 << 10]).collect();
    drop(big);
    assert!(flush_thread_cache());
    let before = rss();
    assert!(purge_thread_arena());
    let after = rss();
    assert!(before.saturating_sub(after) >= 8 << 20, "RSS {before} -> {after}");
    let again = vec![2u8; 64 << 10];
    assert_eq!(again[65535], 2);
}
