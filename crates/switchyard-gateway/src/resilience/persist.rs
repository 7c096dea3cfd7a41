//! The resilience persister: engine transitions arrive on a bounded channel and are
//! written in coalesced batches (the last write per key wins), so a burst of
//! failures costs one row write per key, never a synchronous write per request.

use std::collections::HashMap;

use switchyard_resilience::EngineSnapshot;
use switchyard_resilience::engine::{BreakerSnapshot, ConnectionSnapshot, SNAPSHOT_VERSION};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::retry_wait::{self, Next};
use crate::store::{StateRow, StateWrite, Store};

/// Queue capacity between the engine's sink and the writer.
pub const QUEUE_CAPACITY: usize = 8_192;

fn key(w: &StateWrite) -> (bool, String) {
    match w {
        StateWrite::Breaker { provider, .. } => (true, provider.clone()),
        StateWrite::Connection { connection, .. } => (false, connection.clone()),
    }
}

type Batch = HashMap<(bool, String), StateWrite>;

/// Writes transitions until `shutdown`, then drains what is queued. A batch whose
/// write fails is kept (newer writes of the same key replace its rows) and written
/// again once the database answers, so nothing decided while it was away is lost.
pub async fn run(store: Store, mut rx: mpsc::Receiver<StateWrite>, shutdown: CancellationToken) {
    let mut batch: Batch = HashMap::new();
    let mut failures = 0u32;
    loop {
        let pause = retry_wait::pause_after(failures);
        match retry_wait::next(rx.recv(), !batch.is_empty(), pause, &shutdown).await {
            Next::Stop => break,
            Next::Retry => {}
            Next::Item(w) => {
                batch.insert(key(&w), w);
            }
        }
        while let Ok(w) = rx.try_recv() {
            batch.insert(key(&w), w);
        }
        batch = flush(&store, batch).await;
        failures = if batch.is_empty() { 0 } else { failures + 1 };
    }
    while let Ok(w) = rx.try_recv() {
        batch.insert(key(&w), w);
    }
    flush(&store, batch).await;
}

/// Writes `batch`; returns it back when the write failed.
async fn flush(store: &Store, batch: Batch) -> Batch {
    if batch.is_empty() {
        return batch;
    }
    // In key order: two replicas upserting the same rows take their row locks in
    // the same order, so their transactions cannot deadlock.
    let mut writes: Vec<(&(bool, String), &StateWrite)> = batch.iter().collect();
    writes.sort_by(|a, b| a.0.cmp(b.0));
    let writes: Vec<StateWrite> = writes.into_iter().map(|(_, w)| w.clone()).collect();
    match store.write_resilience_state(&writes).await {
        Ok(()) => HashMap::new(),
        Err(e) => {
            tracing::warn!(event = "resilience.persist_failed", rows = writes.len(), error = %e);
            batch
        }
    }
}

/// Rebuilds an engine snapshot from stored rows, skipping unreadable rows (logged)
/// and connections that no longer exist.
pub fn snapshot_from_rows(
    breakers: &[StateRow],
    connections: &[StateRow],
    known: &[String],
) -> EngineSnapshot {
    let breakers = breakers
        .iter()
        .filter_map(|row| match serde_json::from_str(&row.record_json) {
            Ok(record) => Some(BreakerSnapshot { provider: row.key.clone(), record }),
            Err(e) => {
                tracing::warn!(event = "resilience.restore_skipped", provider = %row.key, error = %e);
                None
            }
        })
        .collect();
    let connections = connections
        .iter()
        .filter(|row| known.contains(&row.key))
        .filter_map(|row| match serde_json::from_str(&row.record_json) {
            Ok(health) => Some(ConnectionSnapshot {
                connection: row.key.clone(),
                provider: row.provider.clone(),
                health,
            }),
            Err(e) => {
                tracing::warn!(event = "resilience.restore_skipped", connection = %row.key, error = %e);
                None
            }
        })
        .collect();
    EngineSnapshot { version: SNAPSHOT_VERSION, breakers, connections }
}
