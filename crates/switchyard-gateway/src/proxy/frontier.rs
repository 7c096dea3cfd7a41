//! Judging a request's candidates a few at a time (issue 16).
//!
//! When the candidates are tried in the plan's own order (no combo strategy that
//! reorders them, no session pin or exclusive lease that can move a later one
//! forward), a request served by its first candidate has no use for the engine's
//! verdict on the other 199 of a pool. The frontier judges [`CHUNK`] candidates at
//! a time: the first chunk with an eligible candidate starts the pass, and the next
//! chunks are judged only when the ones before them are used up (tried and failed,
//! taken out, or full). Every candidate is judged before a request waits for a slot
//! or is refused, so the decision (and the refusal's list of excluded targets) is
//! the same as judging them all at once. Candidates never judged are "not reached"
//! in the route trace, which is what happened to them.
//!
//! Otherwise the first call judges them all, as before.

use switchyard_resilience::{Engine, Selection};
use switchyard_types::UnixMillis;
use switchyard_types::api::ComboStrategy;

use super::forward::ForwardRequest;
use super::trace::Trace;
use crate::routing::Candidate;
use crate::state::GatewayState;

/// Candidates judged per step when judging lazily: enough that a failover rarely
/// needs a second step, few enough that a pool's size costs nothing.
const CHUNK: usize = 8;

/// How far down the plan the engine has judged.
pub(super) struct Frontier {
    /// The first candidate not yet judged.
    next: usize,
    /// Candidates judged per step (all of them when the order is not the list's).
    chunk: usize,
    /// When the pass started: a breaker this request's own failures opened does not
    /// exclude the candidates judged after them (as at dispatch).
    started: UnixMillis,
    /// Eligible candidates already given a rank in the trace.
    ranked: usize,
}

impl Frontier {
    /// Lazy when the try order is the plan's list order and nothing can move a later
    /// candidate forward.
    pub(super) fn new(state: &GatewayState, req: &ForwardRequest, started: UnixMillis) -> Frontier {
        let plan = &req.plan;
        let list_order = plan.combo.is_none() || plan.strategy == ComboStrategy::Priority;
        let lazy = list_order && req.session.is_none() && state.resilience.leases.active().is_empty();
        Frontier { next: 0, chunk: if lazy { CHUNK } else { usize::MAX }, started, ranked: 0 }
    }

    /// The pass's first selection: chunks are judged until one has an eligible
    /// candidate, or all are judged (then it is the whole plan's selection).
    pub(super) fn first(&mut self, engine: &Engine, targets: &[Candidate], trace: &mut Trace) -> Selection {
        let mut selection = self.judge(engine, targets, trace);
        while selection.eligible.is_empty() && self.next < targets.len() {
            let part = self.judge(engine, targets, trace);
            selection.eligible = part.eligible;
            selection.excluded.extend(part.excluded);
        }
        selection
    }

    /// Records that the pass put `count` eligible candidates in its order.
    pub(super) fn ranked(&mut self, count: usize) {
        self.ranked += count;
    }

    /// The eligible candidates of the next chunks (list order) once the judged ones
    /// are used up; `None` when every candidate has been judged.
    pub(super) fn more(
        &mut self,
        engine: &Engine,
        targets: &[Candidate],
        trace: &mut Trace,
    ) -> Option<Vec<usize>> {
        while self.next < targets.len() {
            let part = self.judge(engine, targets, trace);
            if !part.eligible.is_empty() {
                trace.ordered(self.ranked, &part.eligible, &part.eligible);
                self.ranked += part.eligible.len();
                return Some(part.eligible);
            }
        }
        None
    }

    fn judge(&mut self, engine: &Engine, targets: &[Candidate], trace: &mut Trace) -> Selection {
        let end = self.next.saturating_add(self.chunk).min(targets.len());
        let part = engine.filter_range(targets, self.next..end, Some(self.started));
        self.next = end;
        trace.excluded(&part.excluded);
        part
    }
}
