//! jemalloc's per-thread controls for the headless gateway, whose global allocator
//! jemalloc is (`crates/switchyard-gateway/src/main.rs`).
//!
//! jemalloc keeps a cache of freed regions per thread and trims it only as that
//! thread goes on allocating (every 1 MB it allocates, ADR 0010). A connection lane
//! that served a burst of streams and then sits idle therefore keeps what its cache
//! held when the burst ended, and every slab one of those regions lies in stays
//! resident, mostly empty: after 5,000 streams that was most of what RSS kept over
//! the idle gateway. The lanes read [`thread_allocated`] to see a burst pass,
//! call [`flush_thread_cache`] once it has, and [`purge_arenas`] if they then stay
//! quiet a while longer (`conn::lane_memory` in the gateway).
//!
//! The calls work on jemalloc's own state; linked into a process whose global
//! allocator is another, they see a thread that allocated nothing, flush an empty
//! cache and purge empty arenas.

/// Bytes the calling thread has allocated since it started (never decreases);
/// `None` without jemalloc (other platforms) or if jemalloc refuses to say.
pub fn thread_allocated() -> Option<u64> {
    imp::thread_allocated()
}

/// Hands the calling thread's cache of freed regions back to jemalloc's arenas,
/// where slabs left empty become pages for the background thread to purge. `false`
/// without jemalloc or with its thread caches off.
pub fn flush_thread_cache() -> bool {
    imp::command(Command::FlushThreadCache)
}

/// Returns every arena's unused dirty pages to the system now, instead of over
/// jemalloc's decay (`dirty_decay_ms`: the background thread purges them in steps
/// of a thousand pages or more, the last ones a whole decay after they were
/// freed). `false` without jemalloc.
pub fn purge_arenas() -> bool {
    imp::command(Command::PurgeArenas)
}

/// The mallctl commands sent here: names that take no value and return none (the
/// one kind of call tikv-jemalloc-ctl's typed controls cannot make).
#[derive(Clone, Copy)]
enum Command {
    FlushThreadCache,
    PurgeArenas,
}

impl Command {
    #[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(dead_code))]
    fn name(self) -> &'static std::ffi::CStr {
        match self {
            Command::FlushThreadCache => c"thread.tcache.flush",
            // MALLCTL_ARENAS_ALL (4096) stands for every arena.
            Command::PurgeArenas => c"arena.4096.purge",
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use tikv_jemalloc_ctl::thread::{ThreadLocal, allocatedp};

    use super::Command;

    thread_local! {
        /// jemalloc's counter for this thread, looked up once (a mallctl name
        /// lookup); reading it after that is a plain load.
        static ALLOCATED: Option<ThreadLocal<u64>> = allocatedp::read().ok();
    }

    pub(super) fn thread_allocated() -> Option<u64> {
        ALLOCATED.with(|counter| counter.map(ThreadLocal::get))
    }

    pub(super) fn command(command: Command) -> bool {
        // SAFETY: the name is a NUL-terminated static string, and both commands
        // (`thread.tcache.flush`, `arena.<i>.purge`) neither read nor write a
        // value: jemalloc requires exactly null old/new pointers and a zero new
        // length for them, which is what this passes. The flush touches only the
        // calling thread's cache; the purge takes each arena's own lock. jemalloc
        // is linked by tikv-jemalloc-sys whether or not it is the global
        // allocator, and initialises itself on a first call.
        #[allow(unsafe_code)]
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                command.name().as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        status == 0
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub(super) fn thread_allocated() -> Option<u64> {
        None
    }

    pub(super) fn command(_command: super::Command) -> bool {
        false
    }
}
