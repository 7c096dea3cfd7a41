//! The resilience persister: engine transitions arrive on a bounded channel and are
//! written in coalesced batches (the last write per key wins), so a burst of
//! failures costs one row write per key, never a synchronous write per request.

use std::collections::HashMap;
use std::sync::Arc;

use switchyard_resilience::Clock;
use switchyard_resilience::EngineSnapshot;
use switchyard_resilience::engine::{BreakerSnapshot, ConnectionSnapshot, SNAPSHOT_VERSION};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::store::{StateRow, StateWrite, Store};

/// Queue capacity between the engine's sink and the writer.
pub const QUEUE_CAPACITY: usize = 8_192;

fn key(w: &StateWrite) -> (bool, String) {
    match w {
        StateWrite::Breaker { provider, .. } => (true, provider.clone()),
        StateWrite::Connection { connection, .. } => (false, connection.clone()),
    }
}

/// Writes transitions until `shutdown`, then drains what is queued.
pub async fn run(
    store: Store,
    clock: Arc<dyn Clock>,
    mut rx: mpsc::Receiver<StateWrite>,
    shutdown: CancellationToken,
) {
    loop {
        let first = tokio::select! {
            w = rx.recv() => w,
            () = shutdown.cancelled() => None,
        };
        let Some(first) = first else { break };
        let mut batch: HashMap<(bool, String), StateWrite> = HashMap::new();
        batch.insert(key(&first), first);
        while let Ok(w) = rx.try_recv() {
            batch.insert(key(&w), w);
        }
        flush(&store, clock.as_ref(), batch).await;
    }
    let mut rest: HashMap<(bool, String), StateWrite> = HashMap::new();
    while let Ok(w) = rx.try_recv() {
        rest.insert(key(&w), w);
    }
    flush(&store, clock.as_ref(), rest).await;
}

async fn flush(store: &Store, clock: &dyn Clock, batch: HashMap<(bool, String), StateWrite>) {
    if batch.is_empty() {
        return;
    }
    let writes: Vec<StateWrite> = batch.into_values().collect();
    if let Err(e) = store.write_resilience_state(&writes, clock.now_wall()).await {
        tracing::warn!(event = "resilience.persist_failed", rows = writes.len(), error = %e);
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
