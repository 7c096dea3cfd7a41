//! Session affinity on the candidate loop ([`crate::affinity`]): the session's
//! pinned connections go first, and the connection that serves takes (or keeps)
//! the pin. Nothing here runs for a request without a session or with affinity off.

use switchyard_types::UnixMillis;

use super::forward::ForwardRequest;
use crate::affinity::{PinCandidate, PinnedFate};
use crate::state::GatewayState;

/// One pass's view of the session's pins.
#[derive(Debug, Default)]
pub(super) struct SessionPass {
    /// Plan indices of the pinned candidates found eligible, first in the order.
    pinned: Vec<usize>,
    /// Plan indices whose attempt failed (or was taken out) in this pass.
    failed: Vec<usize>,
}

fn candidates(req: &ForwardRequest) -> Vec<PinCandidate<'_>> {
    req.plan
        .candidates
        .iter()
        .map(|c| PinCandidate {
            provider: &c.connection.provider,
            connection: &c.connection.id,
            model: &c.model,
        })
        .collect()
}

impl SessionPass {
    /// Moves the session's pinned connections to the front of `order`.
    pub(super) fn prefer(state: &GatewayState, req: &ForwardRequest, order: &mut Vec<usize>) -> SessionPass {
        let Some(session) = &req.session else { return SessionPass::default() };
        let ttl = state.resilience.settings().session_affinity_ttl_ms;
        let now = state.clock.now_wall();
        let pinned = state.resilience.affinity.prefer(session, ttl, now, &candidates(req), order);
        SessionPass { pinned, failed: Vec::new() }
    }

    /// Notes that the attempt on `index` did not serve.
    pub(super) fn failed(&mut self, index: usize) {
        self.failed.push(index);
    }

    /// Tells the trace which connections the session was pinned to.
    pub(super) fn note_pins(&self, req: &ForwardRequest, trace: &mut super::trace::Trace) {
        for &i in &self.pinned {
            if let Some(c) = req.plan.candidates.get(i) {
                trace.note(format!(
                    "session affinity: the session is pinned to '{}', tried first",
                    c.connection.id
                ));
            }
        }
    }

    /// Plan indices whose attempt failed (or was taken out) in this pass.
    pub(super) fn failed_indices(&self) -> &[usize] {
        &self.failed
    }

    /// Notes that `index` served the request (a success status).
    pub(super) fn served(&self, state: &GatewayState, req: &ForwardRequest, index: usize, now: UnixMillis) {
        let Some(session) = &req.session else { return };
        let all = candidates(req);
        let Some(&served) = all.get(index) else { return };
        let pinned_here =
            self.pinned.iter().find(|&&p| all.get(p).is_some_and(|c| c.provider == served.provider));
        // The pinned connection was eligible and did not fail: it was only full.
        let fate = match pinned_here {
            Some(&p) if p != index && !self.failed.contains(&p) => PinnedFate::Kept,
            _ => PinnedFate::Replaced,
        };
        state.resilience.affinity.served(session, served, fate, now);
    }
}
