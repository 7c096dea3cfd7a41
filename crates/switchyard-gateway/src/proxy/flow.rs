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
//!   `SEMAPHORE_TIMEOUT` when the gate still full was the model's or a shared one
//!   (the provider's, the gateway's).
//!
//! A waiting request first races its candidates' own lines (connection, model);
//! the winner then waits for its shared gates (provider, gateway) within the rest
//! of its budget, holding its own slots: narrow before wide, so a request waiting
//! for a busy account never holds a shared slot that an idle account could use.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use switchyard_resilience::flow::{FlowPermit, GateKind, StrategyInput, WaitStage, admission};
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
    // Phase 1: the candidates' own lines (connection, model), raced; the first with
    // its own slots wins and the other lines are left at once.
    let mut lines: FuturesUnordered<_> = admitted
        .iter()
        .zip(&stages)
        .map(|(&i, stage)| {
            let c = candidate(i);
            let until = state.clock.sleep_until(start + budget(i));
            // A paced queue opens when the upstream's pause ends (on the same clock).
            let pause = c.connection.flow.paced_until(now).map(|at| {
                stage.set_paced();
                let ms = u64::try_from(now.millis_until(at)).unwrap_or(0);
                state.clock.sleep_until(start + Duration::from_millis(ms))
            });
            async move {
                let _waiting = c.connection.flow.queue_place();
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
        })
        .collect();
    let mut won = None;
    while let Some(line) = lines.next().await {
        if line.is_some() {
            won = line;
            break;
        }
    }
    drop(lines);
    // Phase 2: the winner's shared gates (provider, gateway), within what is left
    // of its budget; its own slots are kept meanwhile (narrow before wide).
    if let Some((i, own)) = won {
        let c = candidate(i);
        let slot = admitted.iter().position(|&x| x == i).unwrap_or(0);
        let _waiting = c.connection.flow.queue_place();
        let until = state.clock.sleep_until(start + budget(i));
        return tokio::select! {
            shared = c.connection.flow.enter_shared(&stages[slot]) => Ok((i, c.connection.flow.permit(own, shared))),
            () = until => Err(timed_out(c, stages[slot].get(), budget(i))),
        };
    }
    let first = admitted[0];
    Err(timed_out(candidate(first), stages[0].get(), budget(first)))
}

/// No slot within the budget, naming the gate still full.
fn timed_out(c: &Candidate, kind: GateKind, waited: Duration) -> GatewayError {
    let code = match kind {
        GateKind::Connection | GateKind::Paced => ErrorCode::RateLimitQueueTimeout,
        GateKind::Model | GateKind::Provider | GateKind::Global => ErrorCode::SemaphoreTimeout,
    };
    GatewayError::new(
        code,
        format!(
            "no slot within {} ms waiting for {} (requestQueue.maxWaitMs); nothing was sent upstream",
            waited.as_millis(),
            describe(c, kind)
        ),
    )
    .with_retry_after(Some(1))
}

/// `connection 'a' (cap 2: 2 in flight, 3 queued)` for a gate of `kind`.
fn describe(c: &Candidate, kind: GateKind) -> String {
    let flow = &c.connection.flow;
    let cap = flow.cap_of(kind, &c.model).map_or_else(|| "no cap".to_owned(), |cap| format!("cap {cap}"));
    let what = match kind {
        GateKind::Provider => format!("provider '{}' (all its connections)", c.connection.provider),
        GateKind::Global => "the gateway (requestQueue.globalConcurrentRequests)".to_owned(),
        GateKind::Connection => format!("connection '{}'", c.connection.id),
        GateKind::Model => format!("model '{}' on connection '{}'", c.model, c.connection.id),
        GateKind::Paced => format!("connection '{}', paused at the upstream's request", c.connection.id),
    };
    if matches!(kind, GateKind::Provider | GateKind::Global) {
        // The connection's own counts say nothing about the provider's gate.
        return format!("{what} ({cap})");
    }
    format!("{what} ({cap}: {} in flight, {} queued)", flow.in_flight(), flow.queued())
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
