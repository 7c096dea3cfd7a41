//! The routing snapshot's memo of candidate plans: each name a client sends is
//! resolved over the connections once per snapshot and format, not per request
//! (with 200 connections of one provider, building the plan per request was a
//! fifth of the gateway's CPU). The snapshot is immutable and rebuilt on every
//! change, so the memo never needs invalidating: a new snapshot starts empty.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use switchyard_types::ClientFormat;

use super::resolve::CandidatePlan;

/// Names remembered at most per snapshot: any `claude-…` or `gpt-…` name resolves
/// by prefix, so the set a client could send is open; past this, plans are built
/// per request again rather than letting a scanner grow memory.
const MAX_NAMES: usize = 1_024;

/// A name's plans, one per client format asked for.
type FormatPlans = Vec<(ClientFormat, Arc<CandidatePlan>)>;

/// Plans by model name, then client format.
#[derive(Debug, Default)]
pub struct PlanMemo {
    plans: RwLock<HashMap<String, FormatPlans>>,
}

impl PlanMemo {
    /// The plan remembered for `model` and `format`.
    pub fn get(&self, model: &str, format: ClientFormat) -> Option<Arc<CandidatePlan>> {
        let plans = self.plans.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        plans.get(model)?.iter().find(|(f, _)| *f == format).map(|(_, plan)| plan.clone())
    }

    /// Remembers `plan` (unless the memo is full).
    pub fn insert(&self, model: &str, format: ClientFormat, plan: Arc<CandidatePlan>) {
        let mut plans = self.plans.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if plans.len() >= MAX_NAMES && !plans.contains_key(model) {
            return;
        }
        let formats = plans.entry(model.to_owned()).or_default();
        if !formats.iter().any(|(f, _)| *f == format) {
            formats.push((format, plan));
        }
    }
}
