//! The request path's side of flow control (SPEC §4.6): put the eligible candidates
//! in the combo's strategy order, and — when every one of them is at its cap — wait
//! in line for a slot, bounded on the gateway's clock.
//!
//! Waiting happens on every saturated candidate at once (each in its own FIFO
//! line); the first slot granted wins and the other lines are left at once. A
//! request waits only when none of its candidates has room: a free candidate
//! further down the order is taken rather than queueing for the first (caps spread
//! load; they never hold a request back that another account could serve).
//!
//! Outcomes, each the gateway's own (nothing is sent upstream, no connection is
//! cooled, no breaker counts, no model is locked):
//! - quota-share serialisation off → `SEMAPHORE_QUEUE_FULL` at once: requests over
//!   a cap are refused instead of queued;
//! - every candidate's queue already holds `maxQueueDepth` → `RATE_LIMIT_QUEUE_FULL`
//!   at once (the admission check runs before any wait);
//! - a paced queue (a protected connection the upstream asked to pause) opens when
//!   the pause ends; the wait counts against the same budget;
//! - no slot within the connection's `maxWaitMs` → `RATE_LIMIT_QUEUE_TIMEOUT`, or
//!   `SEMAPHORE_TIMEOUT` when the gate still full was a shared one (the provider's)
//!   or the model's.
//!
//! The gateway-wide gate ([`enter_global`]) is taken once per request before its
//! first attempt, under the same rules (`SEMAPHORE_QUEUE_FULL` / `SEMAPHORE_TIMEOUT`).

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use std::sync::Arc;

use switchyard_resilience::flow::{
    FlowPermit, Gate, GateKind, GatePermit, StrategyInput, WaitStage, admission,
};
use switchyard_types::ErrorCode;
use switchyard_types::api::ComboStrategy;

use super::forward::ForwardRequest;
use crate::errors::GatewayError;
use crate::routing::Candidate;
use crate::state::GatewayState;

/// `eligible` (plan indices, in listed order) in the plan's strategy order.
pub(super) fn order(state: &GatewayState, req: &ForwardRequest, eligible: &[usize]) -> Vec<usize> {
    let plan = &req.plan;
    let (Some(combo), strategy) = (&plan.combo, plan.strategy) else { return eligible.to_vec() };
    if strategy == ComboStrategy::Priority {
        return eligible.to_vec();
    }
    let now = state.clock.now_wall();
    let keys: Vec<String> =
        plan.candidates.iter().map(|c| format!("{}\u{1f}{}", c.connection.id, c.model)).collect();
    let items: Vec<StrategyInput<'_>> = plan
        .candidates
        .iter()
        .zip(&keys)
        .map(|(c, key)| StrategyInput {
            key,
            weight: c.weight,
            in_flight: c.connection.flow.in_flight(),
            dispatched: c.connection.flow.dispatched(),
            reset_at: c.connection.flow.quota_reset_at(now),
        })
        .collect();
    state.resilience.flow.strategies.order(combo, strategy, &items, eligible)
}

/// Waits for a slot on one of `saturated` (plan indices whose gates were full).
pub(super) async fn wait_for_slot(
    state: &GatewayState,
    req: &ForwardRequest,
    saturated: &[usize],
) -> Result<(usize, FlowPermit), GatewayError> {
    let candidate = |i: usize| &req.plan.candidates[i];
    let settings = state.resilience.settings();
    if !settings.quota_share_concurrency_limit.enabled {
        return Err(GatewayError::new(
            ErrorCode::SemaphoreQueueFull,
            format!(
                "every candidate is at its concurrency cap ({}) and quota-share serialisation is off \
                 (quotaShareConcurrencyLimit.enabled), so requests over a cap are refused instead of queued",
                describe_all(req, saturated)
            ),
        )
        .with_retry_after(Some(1)));
    }
    let depth = settings.request_queue.max_queue_depth;
    let admitted: Vec<usize> = saturated
        .iter()
        .copied()
        .filter(|&i| admission::admit(candidate(i).connection.flow.queued(), depth).is_ok())
        .collect();
    if admitted.is_empty() {
        return Err(GatewayError::new(
            ErrorCode::RateLimitQueueFull,
            format!(
                "the request queue of every candidate is full ({}; requestQueue.maxQueueDepth = {depth}); \
                 nothing was sent upstream",
                describe_all(req, saturated)
            ),
        )
        .with_retry_after(Some(1)));
    }
    let _waiting = req.waits.enter();
    let start = state.clock.now_mono();
    let now = state.clock.now_wall();
    let default_wait = settings.request_queue.max_wait_ms;
    let stages: Vec<WaitStage> = admitted.iter().map(|_| WaitStage::default()).collect();
    let budget =
        |i: usize| Duration::from_millis(u64::from(candidate(i).connection.flow.max_wait_ms(default_wait)));
    // One line per candidate, raced; candidates sharing a provider gate take it once
    // (as a group), so a request never stands in that line twice.
    let mut groups: Vec<(Option<Arc<Gate>>, Vec<usize>)> = Vec::new();
    for (slot, &i) in admitted.iter().enumerate() {
        let gate = candidate(i).connection.flow.provider_gate();
        let same = |g: &Option<Arc<Gate>>| match (g, &gate) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        match groups.iter_mut().find(|(g, _)| same(g)) {
            Some((_, members)) => members.push(slot),
            None => groups.push((gate, vec![slot])),
        }
    }
    let line = |slot: usize| {
        let i = admitted[slot];
        let (c, stage) = (candidate(i), &stages[slot]);
        let until = state.clock.sleep_until(start + budget(i));
        // A paced queue opens when the upstream's pause ends (on the same clock).
        let pause = c.connection.flow.paced_until(now).map(|at| {
            stage.set_paced();
            let ms = u64::try_from(now.millis_until(at)).unwrap_or(0);
            state.clock.sleep_until(start + Duration::from_millis(ms))
        });
        async move {
            let enter = async {
                if let Some(pause) = pause {
                    pause.await;
                }
                c.connection.flow.enter_own(&c.model, stage).await
            };
            tokio::select! {
                own = enter => Some((i, own)),
                () = until => None,
            }
        }
    };
    let mut lines: FuturesUnordered<_> = groups
        .into_iter()
        .map(|(gate, members)| {
            let places: Vec<_> =
                members.iter().map(|&m| candidate(admitted[m]).connection.flow.queue_place()).collect();
            let longest = members.iter().map(|&m| budget(admitted[m])).max().unwrap_or_default();
            let provider_until = state.clock.sleep_until(start + longest);
            if gate.is_some() {
                for &m in &members {
                    stages[m].set_provider();
                }
            }
            async move {
                let _places = places;
                let provider = match gate {
                    Some(gate) => tokio::select! {
                        slot = gate.enter() => Some(slot),
                        () = provider_until => return None,
                    },
                    None => None,
                };
                // The first member with its own slots wins, with the provider slot.
                let mut own: FuturesUnordered<_> = members.iter().map(|&m| line(m)).collect();
                while let Some(won) = own.next().await {
                    if let Some((i, slots)) = won {
                        return Some((i, candidate(i).connection.flow.permit(provider, slots)));
                    }
                }
                None
            }
        })
        .collect();
    while let Some(line) = lines.next().await {
        if let Some(granted) = line {
            return Ok(granted);
        }
    }
    drop(lines);
    let first = admitted[0];
    let c = candidate(first);
    let kind = stages[0].get();
    let waited = c.connection.flow.max_wait_ms(default_wait);
    let code = match kind {
        GateKind::Connection | GateKind::Paced => ErrorCode::RateLimitQueueTimeout,
        GateKind::Model | GateKind::Provider => ErrorCode::SemaphoreTimeout,
    };
    Err(GatewayError::new(
        code,
        format!(
            "no slot within {waited} ms waiting for {} (requestQueue.maxWaitMs); nothing was sent upstream",
            describe(c, kind)
        ),
    )
    .with_retry_after(Some(1)))
}

/// `connection 'a' (cap 2: 2 in flight, 3 queued)` for a gate of `kind`.
fn describe(c: &Candidate, kind: GateKind) -> String {
    let flow = &c.connection.flow;
    let cap = flow.cap_of(kind, &c.model).map_or_else(|| "no cap".to_owned(), |cap| format!("cap {cap}"));
    let what = match kind {
        GateKind::Provider => format!("provider '{}' (all its connections)", c.connection.provider),
        GateKind::Connection => format!("connection '{}'", c.connection.id),
        GateKind::Model => format!("model '{}' on connection '{}'", c.model, c.connection.id),
        GateKind::Paced => format!("connection '{}', paused at the upstream's request", c.connection.id),
    };
    if kind == GateKind::Provider {
        // The connection's own counts say nothing about the provider's gate.
        return format!("{what} ({cap})");
    }
    format!("{what} ({cap}: {} in flight, {} queued)", flow.in_flight(), flow.queued())
}

/// Takes the request's slot in the gateway-wide gate
/// (`requestQueue.globalConcurrentRequests`), waiting in line when it is full:
/// under the same rules as every gate (refused when quota-share serialisation is
/// off or the line is `maxQueueDepth` long, else within `maxWaitMs`). `None` when
/// there is no global cap. The slot is kept through failovers.
pub(super) async fn enter_global(
    state: &GatewayState,
    req: &ForwardRequest,
) -> Result<Option<GatePermit>, GatewayError> {
    let Some(gate) = state.resilience.flow.global_gate() else { return Ok(None) };
    if let Some(slot) = gate.try_enter() {
        return Ok(Some(slot));
    }
    let settings = state.resilience.settings();
    let cap = gate.cap();
    let full = |why: &str| {
        GatewayError::new(
            ErrorCode::SemaphoreQueueFull,
            format!(
                "the gateway is at its concurrency cap (requestQueue.globalConcurrentRequests = {cap}, {} in flight) \
                 and {why}; nothing was sent upstream",
                gate.in_flight()
            ),
        )
        .with_retry_after(Some(1))
    };
    if !settings.quota_share_concurrency_limit.enabled {
        return Err(full("quota-share serialisation is off (quotaShareConcurrencyLimit.enabled)"));
    }
    let depth = settings.request_queue.max_queue_depth;
    if admission::admit(gate.queued(), depth).is_err() {
        return Err(full(&format!("its line is full (requestQueue.maxQueueDepth = {depth})")));
    }
    let waited = settings.request_queue.max_wait_ms;
    drop(settings);
    let _waiting = req.waits.enter();
    let until = state.clock.sleep(Duration::from_millis(u64::from(waited)));
    tokio::select! {
        slot = gate.enter() => Ok(Some(slot)),
        () = until => Err(GatewayError::new(
            ErrorCode::SemaphoreTimeout,
            format!(
                "no slot within {waited} ms under the gateway's concurrency cap \
                 (requestQueue.globalConcurrentRequests = {cap}; requestQueue.maxWaitMs); nothing was sent upstream"
            ),
        )
        .with_retry_after(Some(1))),
    }
}

fn describe_all(req: &ForwardRequest, indices: &[usize]) -> String {
    indices
        .iter()
        .map(|&i| {
            let c = &req.plan.candidates[i];
            describe(c, c.connection.flow.full_gate(&c.model).unwrap_or(GateKind::Paced))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
