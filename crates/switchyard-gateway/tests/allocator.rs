//! The headless gateway's allocator settings (ADR 0010) are compiled into the binary
//! from `.cargo/config.toml`: a build that lost them (the variable renamed, the file
//! not read) would still run, just with the memory and CPU behaviour the ADR measured
//! against. jemalloc prints its options in the statistics it writes at exit when
//! `_RJEM_MALLOC_CONF=stats_print:true` asks for them (an option that adds to the
//! compiled-in ones, it does not replace them); this reads them back from a real run.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

mod common;

use common::{serve_with_env, stop_with_stderr};

#[test]
fn jemalloc_runs_with_the_background_purge_and_the_decay_adr_0010_chose() {
    let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let served = serve_with_env(data.path(), &[], &[("_RJEM_MALLOC_CONF", "stats_print:true")]);
    let (_, stderr) = stop_with_stderr(served);
    let option = |name: &str| {
        stderr
            .lines()
            .find_map(|line| line.trim().strip_prefix(&format!("opt.{name}: ")))
            .map(|rest| rest.split_whitespace().next().unwrap_or_default().to_owned())
            .unwrap_or_else(|| panic!("jemalloc printed no opt.{name}:\n{stderr}"))
    };
    assert_eq!(option("background_thread"), "true");
    assert_eq!(option("dirty_decay_ms"), "5000");
    assert_eq!(option("muzzy_decay_ms"), "0");
    assert_eq!(option("tcache_gc_incr_bytes"), "1048576");
    // No opt line for slab sizes: the compiled-in string is printed whole.
    let compiled = stderr
        .lines()
        .find_map(|line| line.trim().strip_prefix("config.malloc_conf: "))
        .unwrap_or_else(|| panic!("jemalloc printed no config.malloc_conf:\n{stderr}"));
    assert!(compiled.contains("slab_sizes:8192-8192:8"), "{compiled}");
}
