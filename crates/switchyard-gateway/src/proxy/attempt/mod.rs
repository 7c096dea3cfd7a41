//! One attempt on one candidate, as named stages, each in its own module:
//! [`credentials`] (a usable token) → [`dispatch`] (send within the budget; the
//! OAuth 401 retry and the Claude usage-wall hook) → [`judge`] (an answer from 400 up
//! goes to the engine, which says relay or fail over) → [`commit`] (wait for the
//! first byte or first model event within the readiness budget, then relay).
//!
//! The attempt's [`AttemptGuard`] travels through the stages and is settled exactly
//! once: by the judge, by a failure before commit, or by the relay when the body ends.
//! Budgets come from the settings and run on the gateway's one clock.

mod commit;
mod credentials;
mod dispatch;
mod judge;

use crate::usage::UsageViewExt;
use std::time::{Duration, Instant};

use axum::response::Response;
use switchyard_resilience::claude_wall::WaitWindow;
use switchyard_types::resilience::ErrorReason;
use tracing::Instrument;

use super::failure::Failure;
use super::forward::ForwardRequest;
use super::guard::AttemptGuard;
use super::translation::Translation;
use super::upstream_error::UpstreamError;
use crate::clock::Wait;
use crate::request_log::AttemptLog;
use crate::routing::Candidate;
use crate::state::GatewayState;
use crate::store::AttemptLogRow;

/// What one attempt produced.
pub enum AttemptResult {
    /// Relay this response (its body settles the attempt when it ends).
    Committed(Response),
    /// Try the next candidate.
    Failed(Failure),
    /// The gateway's own answer for this candidate, nothing sent upstream (its
    /// lease ended while the request waited).
    Refused(Response),
}

/// The attempt's time budgets, as instants of the gateway's clock.
#[derive(Debug, Clone, Copy)]
pub struct Budgets {
    /// The first byte (plain) or first model event (SSE) must arrive by then.
    pub ready_by: Instant,
    /// Nothing of the attempt outlives this.
    pub deadline: Instant,
    /// The readiness budget, for messages.
    pub ready_ms: u64,
    /// `executionMaxWaitMs` after dispatch (SPEC §4.6): a plain answer must be
    /// complete by then, a stream must have started; a started stream is bounded
    /// by the stall watchdog and the deadline instead.
    pub execution_by: Instant,
    /// The execution bound, for messages.
    pub execution_ms: u64,
}

impl Budgets {
    /// Budgets from the effective settings: a streamed request must show a model
    /// event within `readinessBudgetMs`; a plain one may take until the deadline;
    /// both within the connection's execution bound.
    fn new(state: &GatewayState, streaming: bool, candidate: &Candidate) -> Budgets {
        let settings = state.resilience.settings();
        let started = state.clock.now_mono();
        let execution_ms = u64::from(
            candidate.connection.flow.execution_max_wait_ms(settings.request_queue.execution_max_wait_ms),
        );
        let execution_by = started + Duration::from_millis(execution_ms);
        let deadline_ms = u64::from(settings.stream_recovery.attempt_deadline_ms);
        let mut deadline = started + Duration::from_millis(deadline_ms);
        if !streaming {
            deadline = deadline.min(execution_by);
        }
        let ready_ms = if streaming {
            u64::from(settings.stream_recovery.readiness_budget_ms).min(deadline_ms)
        } else {
            deadline_ms
        };
        Budgets {
            ready_by: (started + Duration::from_millis(ready_ms)).min(deadline),
            deadline,
            ready_ms,
            execution_by,
            execution_ms,
        }
    }

    /// A fresh readiness budget from `now` (after a wait of the gateway's own),
    /// never past the deadline.
    pub fn restart_readiness(&mut self, now: Instant) {
        self.ready_by = (now + Duration::from_millis(self.ready_ms)).min(self.deadline);
    }

    /// Until when the attempt waits for an answer (or a stream's first event).
    pub fn wait_until(&self) -> Instant {
        self.ready_by.min(self.execution_by)
    }

    /// The error when [`Self::wait_until`] passed waiting for `what`.
    pub fn expired(&self, waiting_for: &'static str) -> UpstreamError {
        if self.execution_by <= self.ready_by {
            UpstreamError::ExecutionTimeout { budget_ms: self.execution_ms }
        } else {
            UpstreamError::Timeout { waiting_for, budget_ms: Some(self.ready_ms) }
        }
    }
}

/// Everything the stages share.
pub(super) struct AttemptCx<'a> {
    pub state: &'a GatewayState,
    pub req: &'a ForwardRequest,
    pub candidate: &'a Candidate,
    pub log: AttemptLog,
    pub guard: AttemptGuard,
    pub budgets: Budgets,
    /// Set when the candidate does not speak the client's format.
    pub translation: Option<Translation>,
    /// The attempt's timer between stages (see [`AttemptCx::timer`]).
    timer: Option<Timer>,
}

/// A wait on the gateway's clock until `at`.
pub(super) struct Timer {
    at: Instant,
    wait: Wait,
}

impl Timer {
    /// The wait itself, to race against the stage's work.
    fn wait(&mut self) -> &mut Wait {
        &mut self.wait
    }
}

impl AttemptCx<'_> {
    /// A timer until `at`: the one the previous stage kept when it ends at the same
    /// instant, else a new one. The stages' limits are mostly one instant (a plain
    /// answer's headers, first byte and body are all due by the deadline), and each
    /// new wait is an allocation and a timer-wheel entry on every request.
    fn timer(&mut self, at: Instant) -> Timer {
        match self.timer.take() {
            Some(kept) if kept.at == at => kept,
            _ => Timer { at, wait: self.state.clock.sleep_until(at) },
        }
    }

    /// Keeps `timer` for the next stage.
    fn keep(&mut self, timer: Timer) {
        self.timer = Some(timer);
    }

    /// Fails the attempt with a typed error: the engine judges it (a local failure
    /// changes nothing), the log row closes, the failure joins the summary.
    fn failed(mut self, err: &UpstreamError) -> AttemptResult {
        // The execution bound is the gateway's own limit, not the upstream's
        // failure: no verdict (nothing cools), but the next candidate may serve.
        let recorded = if let UpstreamError::ExecutionTimeout { .. } = err {
            self.guard.release();
            None
        } else {
            self.guard.fail(&err.outcome())
        };
        self.log.finish(self.log.status(), 0, Some(err.kind().to_owned()));
        let reason = recorded.as_ref().map(|r| r.verdict.reason).unwrap_or(ErrorReason::Local);
        tracing::info!(
            event = "attempt.failed",
            request_id = %self.req.request_id,
            connection = %self.candidate.connection.id,
            model = %self.candidate.model,
            outcome = %err.message(),
            reason = ?reason,
        );
        let now = self.state.clock.now_wall();
        AttemptResult::Failed(Failure {
            connection: self.candidate.connection.id.to_string(),
            model: self.candidate.model.to_string(),
            outcome: err.message(),
            status: None,
            reason,
            execution_timeout: matches!(err, UpstreamError::ExecutionTimeout { .. }),
            retry_after_secs: recorded
                .and_then(|r| r.verdict.hint)
                .map(|h| h.remaining_ms(now).div_ceil(1_000)),
        })
    }
}

/// Runs one attempt in its own tracing span.
pub async fn run(
    state: &GatewayState,
    req: &ForwardRequest,
    candidate: &Candidate,
    guard: AttemptGuard,
    wait: &mut WaitWindow,
) -> AttemptResult {
    let conn = &candidate.connection;
    let span = tracing::debug_span!(
        "attempt",
        request_id = %req.request_id,
        connection = %conn.id,
        provider = %conn.provider,
        model = %candidate.model,
    );
    let log = AttemptLog::start(
        &state.log,
        AttemptLogRow {
            at: state.clock.now_wall(),
            request_id: req.request_id.clone(),
            api_key_id: req.api_key_id.clone(),
            route: req.route,
            provider: conn.provider.clone(),
            connection_id: conn.id.clone(),
            model: candidate.model.clone(),
            status: None,
            latency_ms: 0,
            bytes: 0,
            error_kind: None,
            tokens: None,
        },
    );
    let budgets = Budgets::new(state, req.body.streaming(), candidate);
    let translation = Translation::for_attempt(req, candidate);
    // Boxed: each stage takes the context by value, and an async fn keeps a
    // by-value argument twice (as passed and as its local), so inline the 552 bytes
    // were copied and kept at every level of every request's future.
    let cx = Box::new(AttemptCx { state, req, candidate, log, guard, budgets, translation, timer: None });
    stages(cx, wait).instrument(span).await
}

async fn stages(mut cx: Box<AttemptCx<'_>>, wait: &mut WaitWindow) -> AttemptResult {
    let sender = match credentials::usable(&cx).await {
        Ok(sender) => sender,
        Err(e) => return (*cx).failed(&e),
    };
    let response = match dispatch::send(&mut cx, sender, wait).await {
        Ok(r) => r,
        Err(e) => return (*cx).failed(&e),
    };
    let status = response.status().as_u16();
    cx.log.set_status(status);
    // The account's usage windows ride on every answer, errors included.
    let conn = &cx.candidate.connection;
    if let Some((usage, changed)) =
        cx.state.resilience.usage.observe(&conn.id, response.headers(), cx.state.clock.now_wall())
    {
        if let Some(reset) = usage.binding_reset().filter(|at| *at > usage.observed_at) {
            conn.flow.note_quota_reset(reset);
        }
        if changed {
            cx.state.management.control().notify(switchyard_types::status::ChangeTopic::Connections);
        }
    }
    if status >= 400 {
        return judge::error_answer(cx, response).await;
    }
    commit::relay(cx, response).await
}
