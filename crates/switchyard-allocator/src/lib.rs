//! jemalloc's per-thread controls for the headless gateway, whose global allocator
//! jemalloc is (`crates/switchyard-gateway/src/main.rs`).
//!
//! jemalloc keeps a cache of freed regions per thread and trims it only as that
//! thread goes on allocating (every 1 MB it allocates, ADR 0010). A connection lane
//! that served a burst of streams and then sits idle therefore keeps what its cache
//! held when the burst ended, and every slab one of those regions lies in stays
//! resident, mostly empty: after 5,000 streams that was most of what RSS kept over
//! the idle gateway. The lanes read [`thread_allocated`] to see a burst pass and
//! call [`flush_thread_cache`] once it has (`conn::lane_memory` in the gateway).
//!
//! Both calls work on jemalloc's own state; linked into a process whose global
//! allocator is another, they see a thread that allocated nothing and flush an
//! empty cache.

/// Bytes the calling thread has allocated since it started (never decreases);
/// `None` without jemalloc (other platforms) or if jemalloc refuses to say.
pub fn thread_allocated() -> Option<u64> {
    imp::thread_allocated()
}

/// Hands the calling thread's cache of freed regions back to jemalloc's arenas,
/// where slabs left empty become pages for the background thread to purge. `false`
/// without jemalloc or with its thread caches off.
pub fn flush_thread_cache() -> bool {
    imp::flush_thread_cache()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    use tikv_jemalloc_ctl::thread::{ThreadLocal, allocatedp};

    thread_local! {
        /// jemalloc's counter for this thread, looked up once (a mallctl name
        /// lookup); reading it after that is a plain load.
        static ALLOCATED: Option<ThreadLocal<u64>> = allocatedp::read().ok();
    }

    pub(super) fn thread_allocated() -> Option<u64> {
        ALLOCATED.with(|counter| counter.map(ThreadLocal::get))
    }

    pub(super) fn flush_thread_cache() -> bool {
        // SAFETY: the name is a NUL-terminated static string, and
        // `thread.tcache.flush` is a command that neither reads nor writes a
        // value: jemalloc requires exactly null old/new pointers and a zero new
        // length for it, which is what this passes. It only touches the calling
        // thread's cache. jemalloc is linked by tikv-jemalloc-sys whether or not
        // it is the global allocator, and initialises itself on a first call.
        #[allow(unsafe_code)]
        let status = unsafe {
            tikv_jemalloc_sys::mallctl(
                c"thread.tcache.flush".as_ptr(),
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

    pub(super) fn flush_thread_cache() -> bool {
        false
    }
}
