//! One concurrency gate: a cap on requests in flight, with a fair (FIFO) line of
//! waiters. Built on tokio's semaphore (fair, cancel-safe: a waiter that gives up
//! leaves the line without losing anyone else's place); this module only adds what
//! the semaphore lacks: counts for the UI, a cap that can change while permits are
//! out, and closing (a removed cap lets its waiters through).
//!
//! Resizing: raising the cap adds permits; lowering it forgets the free permits at
//! once and records the rest as *debt*, paid by the next permits that come back
//! (they are forgotten instead of returned). So in-flight requests finish and the
//! new cap holds from then on, without a request ever being cut.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// A resizable, closable concurrency gate.
#[derive(Debug)]
pub struct Gate {
    sem: Arc<Semaphore>,
    sizing: Mutex<Sizing>,
    queued: AtomicU32,
}

#[derive(Debug, Clone, Copy)]
struct Sizing {
    cap: u32,
    /// Permits still out that are forgotten instead of returned (a lowered cap).
    debt: u32,
}

/// A slot in a gate, returned when dropped.
#[derive(Debug)]
pub struct GatePermit {
    gate: Arc<Gate>,
    permit: Option<OwnedSemaphorePermit>,
}

impl Gate {
    /// A gate letting `cap` requests through at once (a cap of 0 is treated as 1).
    pub fn new(cap: u32) -> Arc<Gate> {
        let cap = cap.max(1);
        Arc::new(Gate {
            sem: Arc::new(Semaphore::new(cap as usize)),
            sizing: Mutex::new(Sizing { cap, debt: 0 }),
            queued: AtomicU32::new(0),
        })
    }

    fn sizing(&self) -> std::sync::MutexGuard<'_, Sizing> {
        self.sizing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The cap in force.
    pub fn cap(&self) -> u32 {
        self.sizing().cap
    }

    /// Requests holding a slot.
    pub fn in_flight(&self) -> u32 {
        let s = *self.sizing();
        let out = (s.cap + s.debt) as usize;
        u32::try_from(out.saturating_sub(self.sem.available_permits())).unwrap_or(u32::MAX)
    }

    /// Requests waiting for a slot.
    pub fn queued(&self) -> u32 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Whether a request could take a slot now without waiting.
    pub fn has_room(&self) -> bool {
        self.sem.available_permits() > 0 || self.sem.is_closed()
    }

    /// Changes the cap; requests in flight keep their slots (see the module docs).
    pub fn resize(&self, cap: u32) {
        let cap = cap.max(1);
        let mut s = self.sizing();
        if cap > s.cap {
            let grow = cap - s.cap;
            let paid = grow.min(s.debt);
            s.debt -= paid;
            self.sem.add_permits((grow - paid) as usize);
        } else if cap < s.cap {
            let shrink = s.cap - cap;
            let forgotten = u32::try_from(self.sem.forget_permits(shrink as usize)).unwrap_or(shrink);
            s.debt += shrink - forgotten;
        }
        s.cap = cap;
    }

    /// Opens the gate for good: waiters and later requests pass without a slot
    /// (the cap was removed).
    pub fn close(&self) {
        self.sem.close();
    }

    /// A slot now, or `None` when the gate is full.
    pub fn try_enter(self: &Arc<Self>) -> Option<GatePermit> {
        match self.sem.clone().try_acquire_owned() {
            Ok(permit) => Some(GatePermit { gate: self.clone(), permit: Some(permit) }),
            Err(TryAcquireError::Closed) => Some(GatePermit { gate: self.clone(), permit: None }),
            Err(TryAcquireError::NoPermits) => None,
        }
    }

    /// Waits in line for a slot. Cancel-safe: dropping the future leaves the line.
    pub async fn enter(self: &Arc<Self>) -> GatePermit {
        let _waiting = Queued::new(&self.queued);
        let permit = self.sem.clone().acquire_owned().await.ok();
        GatePermit { gate: self.clone(), permit }
    }
}

impl Drop for GatePermit {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else { return };
        let mut s = self.gate.sizing();
        if s.debt > 0 {
            s.debt -= 1;
            permit.forget();
        } else {
            drop(permit);
        }
    }
}

/// Counts one waiter for as long as it lives.
#[derive(Debug)]
pub(crate) struct Queued<'a>(&'a AtomicU32);

impl<'a> Queued<'a> {
    pub(crate) fn new(counter: &'a AtomicU32) -> Queued<'a> {
        counter.fetch_add(1, Ordering::Relaxed);
        Queued(counter)
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::task::Poll;

    use super::*;

    fn poll_once<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        let waker = std::task::Waker::noop();
        f.poll(&mut std::task::Context::from_waker(waker))
    }

    #[test]
    fn the_cap_holds_and_a_returned_slot_goes_to_the_first_waiter() {
        let gate = Gate::new(2);
        let a = gate.try_enter();
        let b = gate.try_enter();
        assert!(a.is_some() && b.is_some());
        assert!(gate.try_enter().is_none());
        assert_eq!((gate.in_flight(), gate.queued()), (2, 0));
        let mut first = Box::pin(gate.enter());
        let mut second = Box::pin(gate.enter());
        assert!(poll_once(first.as_mut()).is_pending());
        assert!(poll_once(second.as_mut()).is_pending());
        assert_eq!(gate.queued(), 2);
        drop(a);
        // FIFO: the slot goes to the first in line, and a newcomer cannot take it.
        assert!(gate.try_enter().is_none());
        assert!(poll_once(second.as_mut()).is_pending());
        let Poll::Ready(p) = poll_once(first.as_mut()) else { panic!("first waiter not served") };
        assert_eq!((gate.in_flight(), gate.queued()), (2, 1));
        drop(second);
        assert_eq!(gate.queued(), 0, "a cancelled waiter leaves the line");
        drop((p, b));
        assert_eq!(gate.in_flight(), 0);
    }

    #[test]
    fn lowering_the_cap_lets_running_requests_finish_and_then_holds() {
        let gate = Gate::new(3);
        let held: Vec<_> = (0..3).filter_map(|_| gate.try_enter()).collect();
        gate.resize(1);
        assert_eq!((gate.cap(), gate.in_flight()), (1, 3));
        let mut held = held.into_iter();
        drop(held.next());
        assert!(gate.try_enter().is_none(), "still two in flight over a cap of one");
        drop(held.next());
        assert!(gate.try_enter().is_none(), "one in flight = the cap");
        drop(held.next());
        let one = gate.try_enter();
        assert!(one.is_some());
        assert!(gate.try_enter().is_none());
        gate.resize(2);
        assert!(gate.try_enter().is_some());
    }

    #[test]
    fn raising_the_cap_first_pays_the_debt() {
        let gate = Gate::new(2);
        let held: Vec<_> = (0..2).filter_map(|_| gate.try_enter()).collect();
        gate.resize(1); // one permit in debt
        gate.resize(2); // the debt is cancelled; no permit added
        assert!(gate.try_enter().is_none(), "two in flight at a cap of two");
        drop(held);
        assert_eq!(gate.in_flight(), 0);
        let two: Vec<_> = (0..3).filter_map(|_| gate.try_enter()).collect();
        assert_eq!(two.len(), 2);
    }

    #[test]
    fn closing_lets_everyone_through() {
        let gate = Gate::new(1);
        let _held = gate.try_enter();
        let mut waiter = Box::pin(gate.enter());
        assert!(poll_once(waiter.as_mut()).is_pending());
        gate.close();
        assert!(poll_once(waiter.as_mut()).is_ready());
        assert!(gate.try_enter().is_some());
    }
}
