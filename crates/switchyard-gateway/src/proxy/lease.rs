//! Exclusive leases on the candidate loop ([`crate::leases`]).
//!
//! A managed request (lease headers) is checked three times, all before anything
//! goes upstream: at arrival (the owner holds an active lease through this key at
//! this generation), when the candidates are ordered (its leased connection
//! first, connections leased by others out), and at each final dispatch (the
//! lease is still the same; a dispatch to another connection first moves the
//! lease there, keeping the generation, or skips that connection when another
//! owner holds it). Any other request skips leased connections; when leases hold
//! every free candidate it is refused with `429 lease-capacity-unavailable`.
//! With no lease anywhere each check is one atomic load.

use switchyard_types::{ErrorCode, UnixMillis};

use super::forward::ForwardRequest;
use crate::errors::GatewayError;
use crate::leases::owner::{GENERATION_HEADER, LeaseClaim};
use crate::leases::{EndReason, capacity_unavailable, may_lease, stale};
use crate::routing::{Candidate, ClientKey};
use crate::state::GatewayState;
use crate::store::{LeaseHolder, TransitionOutcome};

/// The lease a managed request presented, checked at arrival.
#[derive(Debug, Clone)]
pub struct HeldLease {
    owner_hash: String,
    generation: i64,
    api_key_id: String,
}

impl HeldLease {
    fn holder(&self) -> LeaseHolder<'_> {
        LeaseHolder { owner_hash: &self.owner_hash, api_key_id: &self.api_key_id }
    }
}

/// Checks a managed request's claim at arrival: a client key that may lease, a
/// generation, and an active lease of this owner through this key at exactly
/// that generation.
pub fn admit(
    state: &GatewayState,
    claim: LeaseClaim,
    key: Option<&ClientKey>,
    now: UnixMillis,
) -> Result<HeldLease, GatewayError> {
    let key = key.ok_or_else(|| {
        GatewayError::new(
            ErrorCode::LeaseNotPermitted,
            "a lease belongs to a client key; this request sent none",
        )
    })?;
    may_lease(key)?;
    let generation = claim.generation.ok_or_else(|| {
        GatewayError::new(
            ErrorCode::LeaseContextRequired,
            format!(
                "a request under a lease must send '{GENERATION_HEADER}' with the generation it was granted"
            ),
        )
    })?;
    let active = state.resilience.leases.active();
    let Some(lease) = active.of_owner(&claim.owner_hash, now) else {
        return Err(stale("this owner holds no active lease (released, expired, or never acquired)"));
    };
    if *lease.api_key_id != *key.id {
        return Err(stale("the lease is held through another client key"));
    }
    if lease.generation != generation {
        return Err(stale(&format!(
            "generation {generation} is not the lease's current generation; acquire again or use the current one"
        )));
    }
    Ok(HeldLease { owner_hash: claim.owner_hash, generation, api_key_id: key.id.to_string() })
}

/// Orders the candidates for leases: the request's leased connection first,
/// connections leased by other owners out. Returns the leased connection's id
/// when it leads the order; `Err` when leases took out every candidate.
pub(super) fn restrict(
    state: &GatewayState,
    req: &ForwardRequest,
    order: &mut Vec<usize>,
) -> Result<Option<String>, GatewayError> {
    let active = state.resilience.leases.active();
    if active.is_empty() {
        return Ok(None);
    }
    let now = state.clock.now_wall();
    let mine = req.lease.as_ref().map(|h| h.owner_hash.as_str());
    let mut earliest: Option<UnixMillis> = None;
    let before = order.len();
    let connection = |i: usize| req.plan.candidates.get(i).map(|c| &*c.connection.id).unwrap_or_default();
    order.retain(|&i| match active.on_connection(connection(i), now) {
        Some(lease) if Some(lease.owner_hash.as_str()) != mine => {
            earliest = Some(earliest.map_or(lease.expires_at, |e| e.min(lease.expires_at)));
            false
        }
        _ => true,
    });
    let mut first = None;
    if let Some(leased) = mine.and_then(|m| active.of_owner(m, now)) {
        // Stable: the leased connection's candidates first, the rest in order.
        order.sort_by_key(|&i| connection(i) != leased.connection_id);
        first = order
            .first()
            .filter(|&&i| connection(i) == leased.connection_id)
            .map(|_| leased.connection_id.clone());
    }
    if order.is_empty() && before > 0 {
        return Err(capacity_unavailable(now, earliest));
    }
    Ok(first)
}

/// What the final check before a dispatch decided.
pub(super) enum Fence {
    /// Send it.
    Go,
    /// Not this connection: another owner holds it, or the request's own leased
    /// connection can still serve it. Try the next candidate.
    Skip,
    /// The request's own lease no longer stands: answer this, send nothing.
    Reject(GatewayError),
}

/// Why a managed request may leave its leased connection `leased` for another
/// one: the model is not served there, an attempt there failed in this pass
/// (`failed` plan indices), or the engine rules it out now. `None`: it may not.
fn move_reason(
    state: &GatewayState,
    req: &ForwardRequest,
    failed: &[usize],
    leased: &str,
) -> Option<EndReason> {
    let on_leased: Vec<usize> = (0..req.plan.candidates.len())
        .filter(|&i| req.plan.candidates[i].connection.id.as_ref() == leased)
        .collect();
    if on_leased.is_empty() {
        return Some(EndReason::ModelIneligible);
    }
    if on_leased.iter().any(|i| failed.contains(i)) {
        return Some(EndReason::HealthOrCooldown);
    }
    let here: Vec<&Candidate> = on_leased.iter().filter_map(|&i| req.plan.candidates.get(i)).collect();
    state.resilience.engine.filter(&here).eligible.is_empty().then_some(EndReason::HealthOrCooldown)
}

/// The final check before `candidate` is sent upstream (after the engine let the
/// dispatch through).
pub(super) async fn fence(
    state: &GatewayState,
    req: &ForwardRequest,
    candidate: &Candidate,
    failed: &[usize],
) -> Fence {
    let book = &state.resilience.leases;
    let now = state.clock.now_wall();
    let target = &*candidate.connection.id;
    let Some(held) = &req.lease else {
        let active = book.active();
        return if active.on_connection(target, now).is_some() { Fence::Skip } else { Fence::Go };
    };
    let leased = {
        let active = book.active();
        match active.of_owner(&held.owner_hash, now) {
            Some(l) if l.generation == held.generation && l.api_key_id == held.api_key_id => {
                if l.connection_id == target {
                    return Fence::Go;
                }
                if active.on_connection(target, now).is_some() {
                    return Fence::Skip;
                }
                l.connection_id.clone()
            }
            _ => {
                return Fence::Reject(stale(
                    "the lease was released, expired or renewed to a newer generation while this request \
                     waited; nothing was sent upstream",
                ));
            }
        }
    };
    // Leave the leased connection only when it cannot serve this request: a
    // request whose order was made before another request of the same owner moved
    // the lease must not move it back.
    let Some(reason) = move_reason(state, req, failed, &leased) else { return Fence::Skip };
    let to = (&*candidate.connection.provider, target);
    // Boxed: moving a lease is rare (a store write), and inline its future would sit
    // in every request's future.
    match Box::pin(book.transition(held.holder(), held.generation, to, now, reason)).await {
        Ok(TransitionOutcome::Moved(_) | TransitionOutcome::Same(_)) => {
            tracing::info!(event = "lease.moved", from = %leased, to = %target, reason = reason.as_str());
            Fence::Go
        }
        Ok(TransitionOutcome::Busy) => Fence::Skip,
        Ok(TransitionOutcome::Stale) => {
            Fence::Reject(stale("the lease ended while this request waited; nothing was sent upstream"))
        }
        Err(e) => {
            tracing::warn!(event = "lease.move_failed", error = %e);
            Fence::Skip
        }
    }
}
