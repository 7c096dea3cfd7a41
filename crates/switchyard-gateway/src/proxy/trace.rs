//! The route a request took, noted as the candidate loop decides, and its one
//! client-request row for the log (the agent's view: the outcome it received,
//! separate from the attempts). Plain data, no I/O: the row goes to the log
//! writer's queue like the attempts.

use std::sync::Arc;

use axum::response::Response;
use switchyard_resilience::candidates::Exclusion;
use switchyard_types::UnixMillis;
use switchyard_types::requests::{CandidateFate, RequestOutcome, RouteCandidateView, RouteTraceView};
use switchyard_types::resilience::ExclusionReason;
use tokio::time::Instant;

use super::forward::ForwardRequest;
use crate::conn::after_write;
use crate::errors::ERROR_HEADER;
use crate::request_log::RequestLogSink;
use crate::routability::reason_words;
use crate::routing::CandidatePlan;
use crate::store::RequestLogRow;

/// Longest model name kept in a refused request's row (it came from the client).
const MAX_MODEL_CHARS: usize = 200;

/// A new request id: 32 hex digits, time-ordered (UUIDv7). Both log tables index
/// `request_id`; a random id put every insert on a random page of those B-trees, so a
/// batch of 1,024 rows dirtied ~2,000 index pages (8 MB of WAL) and the page cache
/// spilled mid-transaction. Time-ordered ids append to the index's last pages.
/// Shared: the request's two log rows and its keep-alive wrapper hold it by
/// reference count instead of a copy each.
pub fn new_request_id() -> Arc<str> {
    let mut text = [0_u8; uuid::fmt::Simple::LENGTH];
    Arc::from(&*uuid::Uuid::now_v7().simple().encode_lower(&mut text))
}

/// The row of a request the gateway refused before it had candidates (no key, a
/// body that is not JSON, an unknown model, routing paused ...).
pub fn refused_row(
    route: &'static str,
    at: UnixMillis,
    api_key_id: Option<Arc<str>>,
    model: String,
    response: &Response,
) -> RequestLogRow {
    let error_code = response.headers().get(ERROR_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    RequestLogRow {
        request_id: new_request_id(),
        at,
        api_key_id,
        route,
        model: model.chars().take(MAX_MODEL_CHARS).collect(),
        status: response.status().as_u16(),
        outcome: RequestOutcome::RefusedByGateway,
        error_code,
        connection_id: None,
        attempts: 0,
        failed_attempts: 0,
        latency_ms: 0,
        route_trace: RouteTraceView {
            resolved_as: "".into(),
            strategy: "".into(),
            candidates: Vec::new(),
            notes: vec!["refused before routing: see the error code".to_owned()],
        },
    }
}

/// What happened to each candidate, in plan order. Dropped unfinished (the client
/// went away while the gateway waited or before the answer's headers), it still
/// records the request, as `cancelled`.
#[derive(Debug)]
pub struct Trace {
    /// Until [`Trace::finish`]: what a cancelled request's row needs.
    pending: Option<Pending>,
    at: UnixMillis,
    started: Instant,
    /// The plan's candidate count (indices at or past it are ignored).
    candidates: usize,
    /// Per candidate index (one list for fates and ranks: one allocation a
    /// request); entries past the end are "never judged" and unranked.
    entries: Vec<Entry>,
    notes: Vec<String>,
    attempts: u32,
    failed_attempts: u32,
    last_tried: Option<usize>,
}

/// What the trace knows of one candidate.
#[derive(Debug, Clone, Default)]
struct Entry {
    fate: Option<CandidateFate>,
    reason: Option<String>,
    rank: Option<u32>,
}

fn exclusion_words(e: &Exclusion) -> String {
    let base = match e.reason {
        ExclusionReason::ModelLockout => "model locked out",
        ExclusionReason::CircuitOpen => "provider breaker open",
        ExclusionReason::ProviderCooldown => "provider rate limited as a whole",
        ExclusionReason::ConnectionCooldown => "connection cooling down",
        ExclusionReason::Unavailable => "connection out until you act",
    };
    match e.cause {
        Some(cause) => format!("{base}: {}", reason_words(cause)),
        None => base.to_owned(),
    }
}

/// What the row of a request cancelled mid-way is made of.
#[derive(Debug)]
struct Pending {
    sink: RequestLogSink,
    request_id: Arc<str>,
    api_key_id: Option<Arc<str>>,
    route: &'static str,
    model: String,
}

impl Drop for Trace {
    fn drop(&mut self) {
        let Some(p) = self.pending.take() else { return };
        let mut notes = std::mem::take(&mut self.notes);
        notes.push("the client went away before the answer".to_owned());
        p.sink.record_request(RequestLogRow {
            request_id: p.request_id,
            at: self.at,
            api_key_id: p.api_key_id,
            route: p.route,
            model: p.model,
            // nginx's "client closed request": nothing was answered.
            status: 499,
            outcome: RequestOutcome::Cancelled,
            error_code: None,
            connection_id: None,
            attempts: self.attempts,
            failed_attempts: self.failed_attempts,
            latency_ms: u32::try_from(self.started.elapsed().as_millis()).unwrap_or(u32::MAX),
            route_trace: RouteTraceView {
                resolved_as: "".into(),
                strategy: "".into(),
                candidates: Vec::new(),
                notes,
            },
        });
    }
}

/// Candidates never reached that a route lists at most, after a failover (what
/// would have been tried next). A request its first attempt served lists none: on a
/// pool of 200 the eight entries cost ~12 µs of CPU per request at saturation (their
/// names cloned, serialized and written with every log row; ×1.17 against one
/// connection, ×1.02 without them), for candidates nothing happened to.
const LISTED_UNREACHED: usize = 8;

impl Trace {
    /// A trace for `req`, starting now; `sink` gets its row even if it is dropped.
    pub fn new(req: &ForwardRequest, sink: &RequestLogSink, at: UnixMillis) -> Trace {
        let candidates = req.plan.candidates.len();
        Trace {
            pending: Some(Pending {
                sink: sink.clone(),
                request_id: req.request_id.clone(),
                api_key_id: req.api_key_id.clone(),
                route: req.route,
                model: req.body.model().to_owned(),
            }),
            at,
            started: Instant::now(),
            // Sized to the candidates the request reaches, not to the plan: a pool
            // of 200 served by its first connection fills one entry, not 200.
            entries: Vec::new(),
            candidates,
            notes: Vec::new(),
            attempts: 0,
            failed_attempts: 0,
            last_tried: None,
        }
    }

    /// The entry of candidate `index`, made on first use; `None` past the plan.
    fn entry(&mut self, index: usize) -> Option<&mut Entry> {
        if index < self.candidates && index >= self.entries.len() {
            self.entries.resize(index + 1, Entry::default());
        }
        self.entries.get_mut(index)
    }

    /// Sets a fate; a failure or the answer is never overwritten by what a later
    /// pass saw of the same candidate (excluded, leased, not reached).
    fn set(&mut self, index: usize, fate: CandidateFate, reason: Option<String>) {
        if let Some(slot) = self.entry(index) {
            let settled = matches!(slot.fate, Some(CandidateFate::Failed | CandidateFate::Served));
            if !settled || matches!(fate, CandidateFate::Failed | CandidateFate::Served) {
                (slot.fate, slot.reason) = (Some(fate), reason);
            }
        }
    }

    /// The engine ruled these out.
    pub fn excluded(&mut self, exclusions: &[Exclusion]) {
        for e in exclusions {
            self.set(e.index, CandidateFate::Excluded, Some(exclusion_words(e)));
        }
    }

    /// The order the eligible candidates are tried in (after strategy, session
    /// and leases), ranked after the `before` already ranked in this pass (a
    /// candidate judged later follows them); eligible ones missing from `order`
    /// were held by other agents' leases.
    pub fn ordered(&mut self, before: usize, order: &[usize], eligible: &[usize]) {
        for (rank, &i) in order.iter().enumerate() {
            if let Some(slot) = self.entry(i).filter(|e| e.rank.is_none()) {
                slot.rank = Some(u32::try_from(before + rank + 1).unwrap_or(u32::MAX));
            }
            self.set(i, CandidateFate::NotReached, None);
        }
        // Eligible but not in the order: another agent's lease holds them (a rank
        // marks what is in the order, so this stays linear in the candidates).
        for &i in eligible {
            if i < self.candidates && self.entries.get(i).is_none_or(|e| e.rank.is_none()) {
                self.set(
                    i,
                    CandidateFate::Leased,
                    Some("held by another agent's exclusive lease".to_owned()),
                );
            }
        }
    }

    /// An attempt on `index` failed over.
    pub fn failed(&mut self, index: usize, outcome: &str) {
        self.attempts += 1;
        self.failed_attempts += 1;
        self.last_tried = Some(index);
        self.set(index, CandidateFate::Failed, Some(outcome.to_owned()));
    }

    /// The attempt on `index` produced the answer.
    pub fn served(&mut self, index: usize) {
        self.attempts += 1;
        self.last_tried = Some(index);
        self.set(index, CandidateFate::Served, None);
    }

    /// A decision worth showing, in words (once, however many passes make it).
    pub fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// Records the client-request row for `response` once the response is written
    /// (`after_write`: building the route trace is not the client's wait).
    pub fn record(self, plan: &Arc<CandidatePlan>, response: &Response) {
        let status = response.status().as_u16();
        let error_code =
            response.headers().get(ERROR_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let plan = plan.clone();
        after_write::defer(move || self.finish(&plan, status, error_code));
    }

    /// Writes the client-request row.
    fn finish(mut self, plan: &CandidatePlan, status: u16, error_code: Option<String>) {
        let Some(request) = self.pending.take() else { return };
        let success = (200..300).contains(&status);
        let served = self.entries.iter().any(|e| e.fate == Some(CandidateFate::Served));
        let outcome = match (served, success) {
            (true, true) if self.failed_attempts == 0 => RequestOutcome::Served,
            (true, true) => RequestOutcome::ServedAfterFailover,
            // The gateway's own error after an attempt (an internal failure).
            (true, false) if error_code.is_some() => RequestOutcome::Failed,
            (true, false) => RequestOutcome::UpstreamRejected,
            (false, _) if self.attempts == 0 => RequestOutcome::RefusedByGateway,
            (false, _) => RequestOutcome::Failed,
        };
        // Every candidate that was tried, excluded or held is listed; of those never
        // reached only the first few after a failover, none otherwise (a pool of 200
        // would otherwise write 200 entries per request, for nothing that happened
        // to them).
        let listed_unreached = if self.failed_attempts > 0 { LISTED_UNREACHED } else { 0 };
        let mut unreached = 0_usize;
        let candidates = plan
            .candidates
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                let reached = self
                    .entries
                    .get(*i)
                    .is_some_and(|e| e.fate.is_some_and(|f| f != CandidateFate::NotReached));
                unreached += usize::from(!reached);
                reached || unreached <= listed_unreached
            })
            .map(|(i, c)| {
                let Entry { fate, reason, rank } = self.entries.get(i).cloned().unwrap_or_default();
                RouteCandidateView {
                    provider: c.connection.provider.clone(),
                    connection: c.connection.id.clone(),
                    model: c.model.clone(),
                    fate: fate.unwrap_or(CandidateFate::NotReached),
                    reason,
                    rank,
                }
            })
            .collect();
        if unreached > listed_unreached {
            self.notes.push(format!(
                "{} more candidate(s) were not needed and are not listed",
                unreached - listed_unreached
            ));
        }
        request.sink.record_request(RequestLogRow {
            request_id: request.request_id,
            at: self.at,
            api_key_id: request.api_key_id,
            route: request.route,
            model: request.model,
            status,
            outcome,
            error_code,
            connection_id: self
                .last_tried
                .and_then(|i| plan.candidates.get(i))
                .map(|c| c.connection.id.clone()),
            attempts: self.attempts,
            failed_attempts: self.failed_attempts,
            latency_ms: u32::try_from(self.started.elapsed().as_millis()).unwrap_or(u32::MAX),
            route_trace: RouteTraceView {
                resolved_as: plan.resolved_as.clone(),
                strategy: plan.strategy_name.clone(),
                candidates,
                notes: std::mem::take(&mut self.notes),
            },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::new_request_id;

    /// Both log tables index `request_id`; ids made in order sort in order, so the
    /// inserts append to those indexes instead of landing on random pages.
    #[test]
    fn request_ids_are_32_hex_digits_in_creation_order() {
        let ids: Vec<_> = (0..1000).map(|_| new_request_id()).collect();
        for id in &ids {
            assert_eq!(id.len(), 32, "{id}");
            assert!(id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')), "{id}");
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids sort in the order they were made");
    }
}
