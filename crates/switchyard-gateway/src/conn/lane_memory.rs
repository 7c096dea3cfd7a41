//! A lane hands its allocator's thread cache back once a burst of work on it has
//! passed.
//!
//! Why: jemalloc keeps a cache of freed regions per thread and trims it only as the
//! thread goes on allocating. After a burst (5,000 streams ending within seconds)
//! a lane goes idle holding what its cache had at the end, and each slab one of
//! those regions lies in stays resident however empty the rest of it is: RSS 10 s
//! after the burst stayed 5.4 MB over the idle gateway's, against 3.7 MB with the
//! caches off (docs/benchmarks.md, the twenty-sixth session; ADR 0010, decision 5).
//!
//! How, with no timer at an agent's pace: the thread's runtime calls a park hook
//! each time it is about to sleep, which compares the thread's allocation count
//! with the count at its last flush (two loads). Once [`BURST_BYTES`] more were
//! allocated it wakes a task on that thread, which waits for a [`QUIET`] stretch in
//! which the thread allocated less than [`QUIET_BYTES`], and then flushes the
//! cache. If the thread then stays quiet for [`PURGE_QUIET`] more, it purges the
//! arenas: the pages of the slabs the flush left empty go back to the system then,
//! not a whole decay later.
//! [`trim_after_bursts`] sets both up on a single-threaded runtime: the lanes', and
//! the headless binary's main one, where the accept loop allocates each new
//! connection's task. At an agent's pace a lane allocates ~50 KB a request, so
//! that is a flush every few hundred requests, repaid by the next requests' cache
//! refills in microseconds; under steady load the task wakes once per [`QUIET`]
//! and finds the thread busy.
//!
//! The allocator is behind [`ThreadMemory`]: the headless binary and the desktop app,
//! whose global allocator is jemalloc on Linux, pass [`jemalloc_threads`] (the
//! controls of `switchyard-allocator`); an embedding whose allocator has no such
//! cache passes none and its lanes run without the hook.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::clock::GatewayClock;

/// Allocated since the last flush, the thread's work counts as a burst to trim
/// after. An 8 MB mark had a lane release after every few seconds of requests
/// followed by a pause (the benchmark's interleaved slices, and an agent's
/// pattern): CPU per request +7.5 % at 10 req/s and +15 % at 100 in a same-run
/// A/B, caches refilled and pages faulted in again each time (ADR 0010, decision
/// 5).
pub const BURST_BYTES: u64 = 32 << 20;
/// How long a thread must stay (nearly) idle before its cache is flushed: longer
/// than the 2 s after which the upstream pool closes the idle connections a burst
/// left (`proxy::hop::plain_pool`), whose buffers would otherwise land in the cache
/// just emptied.
pub const QUIET: Duration = Duration::from_millis(2_500);
const _: () = assert!(QUIET.as_millis() > crate::proxy::hop::POOL_BURST_IDLE.as_millis());
/// How much longer than [`QUIET`] a thread must stay quiet after its flush before
/// the arenas are purged. Left to jemalloc's decay, the pages a flush empties went
/// back in one or two large steps a whole decay (5 s) after it, and the flush itself
/// comes 2.5–5 s after a burst: the RSS 10 s after 5,000 streams read +11, +15 or
/// +21 % of idle in three runs of one build, by whether those steps had landed.
/// Purging at the flush itself settled that (+13.0 and +13.4 %) but cost 4–10 %
/// more CPU per request at 1,000 and 2,000 req/s in the benchmark's interleaved
/// slices, a second of requests then three idle: each lane flushed in most pauses,
/// and its next slice faulted every page in again. Pauses as short as that leave
/// the pages to the decay; after a longer one the decay has returned most of them
/// anyway, so the purge costs an agent's next request little (ADR 0010, decision 5).
pub const PURGE_QUIET: Duration = Duration::from_secs(2);
/// Allocated within [`QUIET`], the thread is still busy: a stream or two finishing
/// is not, twenty requests a second of ~50 KB on one lane are.
pub const QUIET_BYTES: u64 = 1 << 20;

/// jemalloc's per-thread controls, for a process whose global allocator is
/// `tikv_jemallocator::Jemalloc` (Linux with glibc; ADR 0010); `None` elsewhere.
/// In a process allocating through another allocator jemalloc's counters stay at
/// zero, so the hook would never fire: pass it only with jemalloc installed.
pub fn jemalloc_threads() -> Option<Arc<dyn ThreadMemory>> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    return Some(Arc::new(JemallocThreads));
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
struct JemallocThreads;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
impl ThreadMemory for JemallocThreads {
    fn allocated(&self) -> u64 {
        switchyard_allocator::thread_allocated().unwrap_or(0)
    }

    fn release(&self) {
        // The cache's regions back into their slabs; the pages of slabs left
        // empty become dirty pages for jemalloc's decay, or for `purge`.
        switchyard_allocator::flush_thread_cache();
    }

    fn purge(&self) {
        switchyard_allocator::purge_arenas();
    }
}

/// The allocator's per-thread state, as far as a lane needs it.
pub trait ThreadMemory: Send + Sync + 'static {
    /// Bytes the calling thread has allocated so far (never decreases).
    fn allocated(&self) -> u64;
    /// Hands the calling thread's cache of freed memory back to the allocator.
    fn release(&self);
    /// Hands the allocator's unused pages back to the system now.
    fn purge(&self);
}

/// One runtime thread's bookkeeping: shared by its park hook and its trim task,
/// both of which run on that thread (so the counts read are its own).
struct LaneMemory {
    memory: Arc<dyn ThreadMemory>,
    /// The thread's allocation count at the last flush (0 at start).
    flushed_at: AtomicU64,
    /// The trim task was woken and has not flushed yet.
    armed: AtomicBool,
    wake: Notify,
}

/// Sets `builder`'s park hook for a single-threaded runtime; the returned task,
/// spawned on that runtime, does the flushing.
pub fn trim_after_bursts(
    builder: &mut tokio::runtime::Builder,
    memory: Arc<dyn ThreadMemory>,
    clock: Arc<dyn GatewayClock>,
) -> impl Future<Output = ()> + Send + 'static {
    let lane = LaneMemory::new(memory);
    let on_park = lane.clone();
    builder.on_thread_park(move || on_park.on_park());
    lane.trim(clock)
}

/// The runtime the gateway's own background work runs on (the accept loop, the
/// writers' tasks, timers), as `switchyard serve` and the desktop app both start it:
/// one thread (client connections run on the lanes, so a second worker would only
/// add work-stealing wake-ups and an allocator arena), with the trim after bursts
/// when `memory` is the allocator's (the accept loop allocates each new
/// connection's task here). Build it on the thread that will run it.
pub fn main_runtime(
    memory: Option<Arc<dyn ThreadMemory>>,
    clock: Arc<dyn GatewayClock>,
) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_all();
    let trim = memory.map(|memory| trim_after_bursts(&mut builder, memory, clock));
    let runtime = builder.build()?;
    if let Some(trim) = trim {
        runtime.spawn(trim);
    }
    Ok(runtime)
}

impl LaneMemory {
    fn new(memory: Arc<dyn ThreadMemory>) -> Arc<LaneMemory> {
        Arc::new(LaneMemory {
            memory,
            flushed_at: AtomicU64::new(0),
            armed: AtomicBool::new(false),
            wake: Notify::new(),
        })
    }

    /// Called by the lane's runtime before it parks: wakes the trim task once the
    /// lane allocated [`BURST_BYTES`] since the last flush.
    fn on_park(&self) {
        if self.armed.load(Ordering::Relaxed) {
            return;
        }
        let since = self.memory.allocated().saturating_sub(self.flushed_at.load(Ordering::Relaxed));
        if since >= BURST_BYTES {
            self.armed.store(true, Ordering::Relaxed);
            self.wake.notify_one();
        }
    }

    /// The lane's trim task: after each burst, once the lane is quiet, flushes.
    /// Runs until the lane's runtime is dropped.
    async fn trim(self: Arc<Self>, clock: Arc<dyn GatewayClock>) {
        loop {
            self.wake.notified().await;
            loop {
                let before = self.memory.allocated();
                clock.sleep(QUIET).await;
                if self.memory.allocated().saturating_sub(before) < QUIET_BYTES {
                    break;
                }
            }
            // The bookkeeping first: nothing else runs on this thread in between,
            // and a test that sees the release sees it done.
            let flushed_at = self.memory.allocated();
            self.flushed_at.store(flushed_at, Ordering::Relaxed);
            self.armed.store(false, Ordering::Relaxed);
            self.memory.release();
            clock.sleep(PURGE_QUIET).await;
            if self.memory.allocated().saturating_sub(flushed_at) < QUIET_BYTES {
                self.memory.purge();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use switchyard_resilience::clock::ManualClock;
    use switchyard_types::UnixMillis;
    use tokio::sync::mpsc;
    use tokio::task::JoinSet;

    use super::*;
    use crate::conn::lanes::{Lanes, TrimAfterBursts};
    use crate::test_support::eventually;

    /// An allocator whose count the test sets; each release reports the thread it
    /// ran on and the count then, each purge the count.
    struct FakeMemory {
        allocated: AtomicU64,
        reads: AtomicUsize,
        released: mpsc::UnboundedSender<(Option<String>, u64)>,
        purged: mpsc::UnboundedSender<u64>,
    }

    impl ThreadMemory for FakeMemory {
        fn allocated(&self) -> u64 {
            self.reads.fetch_add(1, Ordering::SeqCst);
            self.allocated.load(Ordering::SeqCst)
        }

        fn release(&self) {
            let thread = std::thread::current().name().map(str::to_owned);
            let _ = self.released.send((thread, self.allocated.load(Ordering::SeqCst)));
        }

        fn purge(&self) {
            let _ = self.purged.send(self.allocated.load(Ordering::SeqCst));
        }
    }

    #[tokio::test]
    async fn after_a_burst_a_lane_flushes_its_cache_once_quiet_and_purges_once_quiet_for_longer() {
        let clock = Arc::new(ManualClock::new(UnixMillis(1_700_000_000_000)));
        let (released, mut releases) = mpsc::unbounded_channel();
        let (purged, mut purges) = mpsc::unbounded_channel();
        let memory = Arc::new(FakeMemory {
            allocated: AtomicU64::new(0),
            reads: AtomicUsize::new(0),
            released,
            purged,
        });
        let trim = TrimAfterBursts { memory: memory.clone(), clock: clock.clone() };
        let lanes = Lanes::start(1, Some(&trim)).unwrap_or_else(|e| panic!("{e}"));
        let mut set = JoinSet::new();
        // Runs a task on the lane and waits until the lane parked after it (its park
        // hook read the count).
        let poke = async |set: &mut JoinSet<()>| {
            let reads = memory.reads.load(Ordering::SeqCst);
            lanes.spawn(set, async {});
            let _ = set.join_next().await;
            eventually("the lane parking", || memory.reads.load(Ordering::SeqCst) > reads).await;
        };

        // Short of a burst: no wait is armed.
        memory.allocated.store(BURST_BYTES - 1, Ordering::SeqCst);
        poke(&mut set).await;
        assert_eq!(clock.pending_timers(), 0);

        // A burst's worth: the lane waits for a quiet second.
        memory.allocated.store(BURST_BYTES, Ordering::SeqCst);
        poke(&mut set).await;
        eventually("the quiet wait", || clock.pending_timers() == 1).await;
        assert_eq!(clock.pending_in(), [QUIET]);

        // Still busy through that second: it waits another.
        memory.allocated.fetch_add(QUIET_BYTES, Ordering::SeqCst);
        clock.advance(QUIET);
        eventually("the next quiet wait", || clock.pending_timers() == 1).await;
        assert!(releases.try_recv().is_err(), "flushed while the lane was busy");

        // Quiet: the cache is handed back, on the lane's own thread.
        memory.allocated.fetch_add(QUIET_BYTES - 1, Ordering::SeqCst);
        clock.advance(QUIET);
        let flushed = tokio::time::timeout(Duration::from_secs(5), releases.recv()).await;
        let (thread, at) = flushed.ok().flatten().unwrap_or_else(|| panic!("no flush"));
        assert_eq!(thread.as_deref(), Some("switchyard-lane-0"));
        assert_eq!(at, BURST_BYTES + 2 * QUIET_BYTES - 1);

        // Still quiet a while after the flush: the arenas are purged, not before.
        eventually("the wait before the purge", || clock.pending_in() == [PURGE_QUIET]).await;
        clock.advance(PURGE_QUIET - Duration::from_millis(1));
        assert!(purges.try_recv().is_err(), "purged before the lane had been quiet long enough");
        memory.allocated.fetch_add(QUIET_BYTES - 1, Ordering::SeqCst);
        clock.advance(Duration::from_millis(1));
        let purge = tokio::time::timeout(Duration::from_secs(5), purges.recv()).await;
        assert_eq!(purge.ok().flatten(), Some(BURST_BYTES + 3 * QUIET_BYTES - 2));
        eventually("the trim task going back to waiting", || clock.pending_timers() == 0).await;

        // The next burst counts from the flush.
        memory.allocated.fetch_add(BURST_BYTES - QUIET_BYTES, Ordering::SeqCst);
        poke(&mut set).await;
        assert_eq!(clock.pending_timers(), 0, "armed before a whole burst since the flush");
        memory.allocated.fetch_add(1, Ordering::SeqCst);
        poke(&mut set).await;
        eventually("the quiet wait after the second burst", || clock.pending_timers() == 1).await;

        // Flushed after it, but busy again before the purge's wait is over (the
        // benchmark's slices, an agent's short pauses): the decay is left to it.
        clock.advance(QUIET);
        let flushed = tokio::time::timeout(Duration::from_secs(5), releases.recv()).await;
        assert!(flushed.ok().flatten().is_some(), "no flush after the second burst");
        eventually("the wait before the purge", || clock.pending_in() == [PURGE_QUIET]).await;
        memory.allocated.fetch_add(QUIET_BYTES, Ordering::SeqCst);
        clock.advance(PURGE_QUIET);
        // The woken trim task runs on the lane before a task spawned after it.
        poke(&mut set).await;
        assert!(purges.try_recv().is_err(), "purged although the lane was busy again");
    }
}
