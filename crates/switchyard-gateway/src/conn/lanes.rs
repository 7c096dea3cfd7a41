//! Connection lanes: one single-threaded tokio runtime per core, each serving the
//! client connections the accept loop hands it, start to end.
//!
//! Why not the work-stealing runtime: a request wakes several tasks in turn (the
//! client connection, the handler's upstream connection, the body channel between
//! them), and each wake-up from inside a worker's poll made tokio unpark another
//! worker to steal, which found nothing and parked again: a futex round trip and
//! two context switches per request for nothing, most of the gateway's cost at the
//! few requests a second agents send (docs/benchmarks.md, "one tokio worker"). On a
//! lane every task of a request is on one thread, and the proxy hop keeps a pool of
//! upstream connections per lane ([`current`], `proxy::hop`), so a kept-alive
//! upstream connection is driven by the thread that uses it. Across lanes the load
//! is spread by connection: a new connection goes to the lane with the fewest open.
//!
//! After a burst a lane hands its allocator's thread cache back ([`super::lane_memory`],
//! when the process passes its allocator's controls).
//!
//! Failure behaviour: a lane's thread only ends when its [`Lanes`] is dropped; what
//! is still running on it then (idle upstream connections, connections a stopped
//! gateway gave up on) is dropped with its runtime. A lane that cannot start (no
//! thread, no runtime) fails [`Lanes::start`], which stops the lanes already running.

use std::cell::Cell;
use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::FutureExt;
use tokio::runtime::Handle;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::lane_memory::{ThreadMemory, trim_after_bursts};
use crate::clock::GatewayClock;

thread_local! {
    static LANE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The lane this thread runs (`None` off the lanes: the caller's runtime, blocking
/// threads).
pub fn current() -> Option<usize> {
    LANE.with(Cell::get)
}

/// One lane per core the process may use.
pub fn default_count() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// What the lanes need to hand their thread caches back after bursts.
#[derive(Clone)]
pub struct TrimAfterBursts {
    pub memory: Arc<dyn ThreadMemory>,
    /// The gateway's clock (the quiet wait runs on it).
    pub clock: Arc<dyn GatewayClock>,
}

/// The running lanes; they stop when this is dropped.
pub struct Lanes {
    lanes: Vec<Lane>,
    stop: CancellationToken,
}

struct Lane {
    runtime: Handle,
    /// Connections open on it.
    open: Arc<AtomicUsize>,
}

impl Lanes {
    /// Starts `count` lanes (at least one), each on a thread of its own; with
    /// `trim`, each hands its thread cache back after a burst.
    pub fn start(count: usize, trim: Option<&TrimAfterBursts>) -> anyhow::Result<Arc<Lanes>> {
        anyhow::ensure!(count >= 1, "the gateway needs at least one connection lane");
        // Built up in place: if a later lane cannot start, dropping this stops the
        // ones already running.
        let mut started = Lanes { lanes: Vec::with_capacity(count), stop: CancellationToken::new() };
        // The caller's subscriber (an embedding app's or a test's scoped one) sees
        // the lanes' events too.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        for index in 0..count {
            // Each runtime is built on its own thread and never leaves it: a runtime
            // dropped on the caller's (an async context, if the thread could not be
            // spawned) would panic. The thread hands back its handle.
            let (ready_tx, ready) = std::sync::mpsc::sync_channel(1);
            let (stop, dispatch) = (started.stop.clone(), dispatch.clone());
            let trim = trim.cloned();
            std::thread::Builder::new().name(format!("switchyard-lane-{index}")).spawn(move || {
                let mut builder = tokio::runtime::Builder::new_current_thread();
                builder.enable_all();
                let trim = trim.map(|trim| trim_after_bursts(&mut builder, trim.memory, trim.clock));
                let runtime = match builder.build() {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(runtime.handle().clone()));
                LANE.set(Some(index));
                let _events = tracing::dispatcher::set_default(&dispatch);
                if let Some(trim) = trim {
                    runtime.spawn(trim);
                }
                runtime.block_on(stop.cancelled());
                // Dropping the runtime here, off any async context, cancels what
                // is left on it.
                drop(runtime);
            })?;
            // A brief blocking wait, once per lane at start-up.
            let runtime = ready
                .recv()
                .map_err(|_| anyhow::anyhow!("connection lane {index} ended as it started"))??;
            started.lanes.push(Lane { runtime, open: Arc::new(AtomicUsize::new(0)) });
        }
        Ok(Arc::new(started))
    }

    /// How many lanes run (at least one).
    pub fn count(&self) -> usize {
        self.lanes.len()
    }

    /// Runs `connection` on the lane with the fewest open connections (the lowest
    /// index among equals), as a task of `set`.
    pub fn spawn<F>(&self, set: &mut JoinSet<()>, connection: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let lane = self
            .lanes
            .iter()
            .min_by_key(|lane| lane.open.load(Ordering::Relaxed))
            .unwrap_or_else(|| unreachable!("Lanes::start refuses zero lanes"));
        let open = OpenConnection::new(lane.open.clone());
        set.spawn_on(counted(connection, open), &lane.runtime);
    }

    /// Connections open on each lane, in lane order.
    #[cfg(test)]
    fn open_per_lane(&self) -> Vec<usize> {
        self.lanes.iter().map(|lane| lane.open.load(Ordering::Relaxed)).collect()
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One lane's count of a connection, taken back when its task ends or is dropped.
struct OpenConnection(Arc<AtomicUsize>);

impl OpenConnection {
    fn new(open: Arc<AtomicUsize>) -> OpenConnection {
        open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(open)
    }
}

/// `connection`, giving its lane's count back when it ends or is dropped.
///
/// A combinator, not `async move { let _open = open; connection.await }`: an async
/// block keeps the future it captured and the one it awaits in separate fields, so
/// every connection's task would carry its state twice (1.3 KB per open connection,
/// measured in the 5,000-stream burst).
fn counted<F>(connection: F, open: OpenConnection) -> impl Future<Output = ()>
where
    F: Future<Output = ()>,
{
    connection.map(move |()| drop(open))
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn connections_spread_over_the_lanes_and_run_on_the_lanes_threads() {
        let lanes = Lanes::start(2, None).unwrap_or_else(|e| panic!("{e}"));
        let mut set = JoinSet::new();
        let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        let hold = CancellationToken::new();
        for _ in 0..4 {
            let (seen_tx, hold) = (seen_tx.clone(), hold.clone());
            lanes.spawn(&mut set, async move {
                let _ = seen_tx.send(current());
                hold.cancelled().await;
            });
        }
        let mut ran_on = Vec::new();
        for _ in 0..4 {
            ran_on.push(seen.recv().await.flatten());
        }
        ran_on.sort();
        assert_eq!(ran_on, [Some(0), Some(0), Some(1), Some(1)]);
        assert_eq!(lanes.open_per_lane(), [2, 2]);
        assert_eq!(current(), None, "the test's own thread is not a lane");
        hold.cancel();
        while set.join_next().await.is_some() {}
        assert_eq!(lanes.open_per_lane(), [0, 0]);
    }

    #[test]
    fn a_counted_connection_holds_its_future_once() {
        // State that lives across an await, like a served connection's.
        let connection = async {
            let state = [7u8; 4096];
            tokio::task::yield_now().await;
            std::hint::black_box(&state);
        };
        let inner = std::mem::size_of_val(&connection);
        assert!(inner >= 4096);
        let task = counted(connection, OpenConnection::new(Arc::default()));
        let size = std::mem::size_of_val(&task);
        assert!(size <= inner + 64, "the task is {size} bytes for a {inner}-byte connection");
    }

    #[test]
    fn zero_lanes_are_refused() {
        assert!(Lanes::start(0, None).is_err());
    }
}
