//! Bookkeeping that waits until the client's bytes are written.
//!
//! When an answer completes, the gateway settles it: the usage read from the body,
//! the attempt's log row, the engine's success, the request's row. None of that
//! changes what the client receives, yet done inline it ran between the last
//! upstream byte and the write to the client: at an agent's pace, with cold caches,
//! about a quarter of the latency the gateway adds (docs/benchmarks.md, sixteenth
//! session). So the request path hands it to [`defer`], and the connection runs it
//! right after the poll in which hyper wrote the response ([`Scoped`]): same thread,
//! same order, microseconds later, after the write system call instead of before.
//!
//! Outside a connection's poll (a spawned task, a test calling a handler directly)
//! deferred work runs at once, so nothing depends on a connection being there.
//!
//! Readers see it: until every lane has run what it deferred, [`settled`] waits.
//! The management API waits for it before it answers (and the log's flush, which
//! its log reads use), so a client that got its answer and then asks for its row,
//! its connection's state or its usage sees them, as before.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

/// Work that runs after the write. A closure is one; a large piece of work can be
/// built in its box and handed over with [`defer_boxed`], instead of being moved
/// into a closure and then into a box (each move a copy of all of it).
pub trait Deferred {
    /// Runs it, in its box.
    fn run(self: Box<Self>);
}

impl<F: FnOnce()> Deferred for F {
    fn run(self: Box<Self>) {
        (*self)();
    }
}

type Work = Box<dyn Deferred>;

thread_local! {
    /// Whether this thread is inside a connection's poll (work deferred now runs
    /// when that poll returns).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// What the current poll deferred, in order; keeps its capacity across polls.
    static QUEUE: RefCell<VecDeque<Work>> = const { RefCell::new(VecDeque::new()) };
}

/// Scopes, process-wide, holding deferred work that has not run yet.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// Runs `work` once the current connection poll has written what it wrote, or at
/// once outside a connection's poll.
pub fn defer(work: impl FnOnce() + 'static) {
    if !ACTIVE.get() {
        work();
        return;
    }
    defer_boxed(Box::new(work));
}

/// [`defer`] for work already in its box.
pub fn defer_boxed(work: Box<dyn Deferred>) {
    if !ACTIVE.get() {
        work.run();
        return;
    }
    QUEUE.with_borrow_mut(|queue| {
        if queue.is_empty() {
            PENDING.fetch_add(1, Ordering::AcqRel);
        }
        queue.push_back(work);
    });
}

/// Waits until no connection holds deferred work: what every answer already
/// written deferred has run. Lanes run it microseconds after their write, so this
/// rarely waits at all; it yields meanwhile.
pub async fn settled() {
    while PENDING.load(Ordering::Acquire) != 0 {
        tokio::task::yield_now().await;
    }
}

/// `inner`, each poll of which is a scope: work deferred during it runs after it.
pub struct Scoped<F>(pub F);

impl<F: Future + Unpin> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _scope = Scope::enter();
        Pin::new(&mut self.0).poll(cx)
    }
}

/// One scope; the outermost on a thread runs the queue when it ends.
struct Scope {
    outermost: bool,
}

impl Scope {
    fn enter() -> Scope {
        Scope { outermost: !ACTIVE.replace(true) }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if !self.outermost {
            return;
        }
        // Work deferred while this queue runs runs at once.
        ACTIVE.set(false);
        if QUEUE.with_borrow(VecDeque::is_empty) {
            return;
        }
        let _drained = Drained;
        while let Some(work) = QUEUE.with_borrow_mut(VecDeque::pop_front) {
            if std::thread::panicking() {
                // Dropped, not run: what it owns settles itself on drop (permits
                // released, a row recorded as cut short).
                drop(work);
            } else {
                work.run();
            }
        }
    }
}

/// Ends a non-empty queue's count however its run ends: a deferred closure that
/// panics (the lane's runtime catches it and goes on) must not leave readers
/// waiting, nor its unrun successors to the next scope's count.
struct Drained;

impl Drop for Drained {
    fn drop(&mut self) {
        let rest = QUEUE.with_borrow_mut(|queue| (!queue.is_empty()).then(|| std::mem::take(queue)));
        drop(rest);
        PENDING.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn recorder() -> (Rc<RefCell<Vec<&'static str>>>, impl Fn(&'static str) + Clone + 'static) {
        let log = Rc::new(RefCell::new(Vec::new()));
        let push = {
            let log = log.clone();
            move |what| log.borrow_mut().push(what)
        };
        (log, push)
    }

    #[test]
    fn outside_a_scope_work_runs_at_once() {
        let (log, push) = recorder();
        let p = push.clone();
        defer(move || p("deferred"));
        push("after");
        assert_eq!(*log.borrow(), ["deferred", "after"]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn inside_a_scope_work_runs_after_the_poll_in_order() {
        let (log, push) = recorder();
        let p = push.clone();
        let inner = std::future::poll_fn(move |_| {
            let (a, b) = (p.clone(), p.clone());
            defer(move || a("first"));
            defer(move || b("second"));
            p("poll ends");
            Poll::Ready(())
        });
        Scoped(Box::pin(inner)).await;
        assert_eq!(*log.borrow(), ["poll ends", "first", "second"]);
        // Nothing is left pending: a reader does not wait.
        let settled = tokio::time::timeout(std::time::Duration::from_secs(1), settled()).await;
        assert!(settled.is_ok(), "nothing deferred is left pending");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_nested_scope_leaves_the_work_to_the_outermost() {
        let (log, push) = recorder();
        let p = push.clone();
        let inner = std::future::poll_fn(move |cx| {
            let p = p.clone();
            let mut nested = Scoped(Box::pin(std::future::poll_fn(move |_| {
                let q = p.clone();
                defer(move || q("deferred"));
                p("nested poll ends");
                Poll::Ready(())
            })));
            assert!(Pin::new(&mut nested).poll(cx).is_ready());
            Poll::Ready(())
        });
        let outer = push.clone();
        Scoped(Box::pin(async move {
            inner.await;
            outer("outer poll ends");
        }))
        .await;
        assert_eq!(*log.borrow(), ["nested poll ends", "outer poll ends", "deferred"]);
    }

    #[test]
    fn work_deferred_while_the_queue_runs_runs_at_once() {
        let (log, push) = recorder();
        let p = push.clone();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut scoped = Scoped(Box::pin(std::future::poll_fn(move |_| {
            let p = p.clone();
            defer(move || {
                let q = p.clone();
                defer(move || q("nested"));
                p("outer work");
            });
            Poll::Ready(())
        })));
        assert!(Pin::new(&mut scoped).poll(&mut cx).is_ready());
        assert_eq!(*log.borrow(), ["nested", "outer work"]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn deferred_work_that_panics_leaves_nothing_pending() {
        let (log, push) = recorder();
        let (p, q) = (push.clone(), push.clone());
        let poll = std::panic::AssertUnwindSafe(move || {
            let waker = std::task::Waker::noop();
            let mut cx = Context::from_waker(waker);
            let mut scoped = Scoped(Box::pin(std::future::poll_fn(move |_| {
                let p = p.clone();
                defer(|| panic!("deferred work failed"));
                defer(move || p("never runs"));
                Poll::Ready(())
            })));
            let _ = Pin::new(&mut scoped).poll(&mut cx);
        });
        assert!(std::panic::catch_unwind(poll).is_err(), "the panic reaches the poll's caller");
        let settled = tokio::time::timeout(std::time::Duration::from_secs(1), settled()).await;
        assert!(settled.is_ok(), "a reader does not wait for work that cannot run");
        // The next scope starts empty: its own work runs, not the dropped work.
        Scoped(Box::pin(std::future::poll_fn(move |_| {
            let q = q.clone();
            defer(move || q("next scope"));
            Poll::Ready(())
        })))
        .await;
        assert_eq!(*log.borrow(), ["next scope"]);
    }
}
