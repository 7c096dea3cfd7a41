//! The pin table's stored copy: read back at start, written by a background task
//! [`FLUSH_EVERY`] (gateway clock) after the first change since its last write,
//! and once more at shutdown. Requests
//! never wait for the database; a crash loses at most the last few seconds of
//! renewals (the pins themselves were written when they were made or moved, unless
//! that happened in those seconds too).

use std::sync::Arc;
use std::time::Duration;

use switchyard_types::UnixMillis;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{MAX_SESSIONS, Pin, SessionAffinity, SessionKey};
use crate::clock::GatewayClock;
use crate::resilience::Resilience;
use crate::store::{PinRow, Store, StoreResult};

/// How often changed pins are written.
pub const FLUSH_EVERY: Duration = Duration::from_secs(2);

/// Loads the stored pins into `table`.
pub async fn restore(store: &Store, table: &SessionAffinity) -> StoreResult<usize> {
    let rows = store.session_pins(MAX_SESSIONS).await?;
    let n = rows.len();
    table.restore(
        rows.into_iter()
            .map(|r| {
                let pin = Pin {
                    provider: r.provider,
                    connection: r.connection_id,
                    pinned_at: r.pinned_at,
                    last_seen: r.last_seen_at,
                };
                (SessionKey::from_stored(r.session_key), pin)
            })
            .collect(),
    );
    Ok(n)
}

/// Starts the writer; it flushes one last time when `shutdown` fires.
pub fn spawn_writer(
    store: Store,
    table: Arc<SessionAffinity>,
    resilience: Arc<Resilience>,
    clock: Arc<dyn GatewayClock>,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = table.changed() => {}
                () = shutdown.cancelled() => break,
            }
            // Batch what follows the first change for a while, then write it.
            tokio::select! {
                () = clock.sleep(FLUSH_EVERY) => {}
                () = shutdown.cancelled() => break,
            }
            flush(&store, &table, &resilience, clock.now_wall()).await;
        }
        flush(&store, &table, &resilience, clock.now_wall()).await;
    })
}

/// Writes what changed since the last flush, and prunes rows past the TTL.
pub async fn flush(store: &Store, table: &SessionAffinity, resilience: &Resilience, now: UnixMillis) {
    let (upserts, deletes) = table.take_dirty();
    if upserts.is_empty() && deletes.is_empty() {
        return;
    }
    let rows: Vec<PinRow> = upserts
        .into_iter()
        .map(|(key, pin)| PinRow {
            session_key: key.as_str().to_owned(),
            provider: pin.provider,
            connection_id: pin.connection,
            pinned_at: pin.pinned_at,
            last_seen_at: pin.last_seen,
        })
        .collect();
    let gone: Vec<(String, String)> = deletes.into_iter().map(|(k, p)| (k.as_str().to_owned(), p)).collect();
    let ttl = resilience.settings().session_affinity_ttl_ms;
    let expired_before = (ttl > 0).then(|| now.plus_millis(-i64::from(ttl)));
    if let Err(e) = store.write_session_pins(&rows, &gone, expired_before).await {
        tracing::warn!(event = "affinity.persist_failed", rows = rows.len(), error = %e);
        // Retried with the next flush (the table holds the current value).
        let keys = rows.into_iter().map(|r| (SessionKey::from_stored(r.session_key), r.provider));
        table.requeue(keys.chain(gone.into_iter().map(|(k, p)| (SessionKey::from_stored(k), p))));
    }
}
