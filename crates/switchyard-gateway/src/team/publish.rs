//! The announcer: takes what this replica changed off its queue, keeps the last
//! notice per thing (a burst of transitions of one connection is one notice), and
//! sends the batch in one round trip (`pg_notify` over an array) on a small
//! connection pool of its own. Nothing on the request path waits for it.
//!
//! A batch that fails (the database is away) is kept, merged with what follows,
//! and sent again once a send succeeds; receivers ignore anything older than what
//! they already have, so a late notice cannot undo a newer change.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use switchyard_resilience::Engine;
use tokio_util::sync::CancellationToken;

use super::notice::{CHANNEL, Envelope, Notice, StateKind};
use super::{Outgoing, Team};
use crate::retry_wait::{self, Next};
use crate::store::{Store, TeamStateRow};

/// Queued notices, in first-queued order, the last one per thing kept.
#[derive(Default)]
struct Pending {
    order: Vec<String>,
    by_key: HashMap<String, Notice>,
}

impl Pending {
    /// Queues `notice`; an earlier one of the same thing is dropped and this one
    /// goes last, so notices of different things keep their relative order (a pin,
    /// a clear of its connection, the pin again must not arrive as pin, clear).
    fn push(&mut self, notice: Notice) {
        let key = notice.coalesce_key();
        if self.by_key.insert(key.clone(), notice).is_some() {
            self.order.retain(|k| *k != key);
        }
        self.order.push(key);
    }

    fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    fn take(&mut self) -> Vec<Notice> {
        let mut by_key = std::mem::take(&mut self.by_key);
        std::mem::take(&mut self.order).into_iter().filter_map(|k| by_key.remove(&k)).collect()
    }
}

/// Resolves a queued item to the notice to send (a lockout change reads the
/// connection's table as it is now: later changes are included).
fn resolve(out: Outgoing, engine: &Engine) -> Option<Notice> {
    match out {
        Outgoing::Notice(n) => Some(n),
        Outgoing::Lockouts { connection, provider, at } => {
            let table = engine.lockout_table(&connection).unwrap_or_default();
            Some(Notice::Lockouts { connection, provider, at, table: serde_json::to_value(table).ok()? })
        }
    }
}

/// Sends `notices` in one statement; the payloads that do not fit are skipped (logged).
async fn send(pool: &PgPool, origin: &str, notices: &[Notice]) -> Result<(), sqlx::Error> {
    let payloads: Vec<String> = notices
        .iter()
        .filter_map(|n| {
            let envelope = Envelope { origin: origin.to_owned(), notice: n.clone() };
            let encoded = envelope.encode();
            if encoded.is_none() {
                tracing::warn!(event = "team.notice_too_large", key = %n.coalesce_key());
            }
            encoded
        })
        .collect();
    if payloads.is_empty() {
        return Ok(());
    }
    sqlx::query("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p")
        .bind(CHANNEL)
        .bind(&payloads)
        .execute(pool)
        .await?;
    Ok(())
}

/// The row a notice of in-memory state is also stored as (lockouts and wall state,
/// which the persister does not write), so replicas that start later load it.
fn stored_state(notice: &Notice) -> Option<TeamStateRow> {
    let (kind, key, state, at) = match notice {
        Notice::Lockouts { connection, table, at, .. } => (StateKind::Lockouts, connection, table, at),
        Notice::Wall { connection, state, at } => (StateKind::Wall, connection, state, at),
        _ => return None,
    };
    Some(TeamStateRow {
        kind: kind.stored_name()?.to_owned(),
        key: key.clone(),
        state_json: state.to_string(),
        updated_at: *at,
    })
}

/// Stores what must be loadable later, then announces the batch.
async fn deliver(pool: &PgPool, store: &Store, origin: &str, batch: &[Notice]) -> Result<(), String> {
    let states: Vec<TeamStateRow> = batch.iter().filter_map(stored_state).collect();
    if !states.is_empty() {
        store.write_team_state(&states).await.map_err(|e| e.to_string())?;
    }
    send(pool, origin, batch).await.map_err(|e| e.to_string())
}

/// Runs until `shutdown`, then sends what is queued (best effort).
pub async fn run(
    team: Arc<Team>,
    pool: PgPool,
    store: Store,
    engine: Arc<Engine>,
    shutdown: CancellationToken,
) {
    let Some(mut rx) = team.take_queue() else { return };
    let mut pending = Pending::default();
    let mut failures = 0u32;
    loop {
        match retry_wait::next(rx.recv(), !pending.is_empty(), retry_wait::pause_after(failures), &shutdown)
            .await
        {
            Next::Stop => break,
            Next::Retry => {}
            Next::Item(out) => pending.extend_from(out, &engine),
        }
        while let Ok(out) = rx.try_recv() {
            pending.extend_from(out, &engine);
        }
        if pending.is_empty() {
            continue;
        }
        let batch = pending.take();
        let sent = deliver(&pool, &store, team.origin(), &batch).await;
        failures = if sent.is_ok() { 0 } else { failures + 1 };
        if let Err(e) = sent {
            tracing::warn!(event = "team.announce_failed", notices = batch.len(), error = %e);
            // Keep them (newer ones queued meanwhile replace them by key).
            let mut again = Pending::default();
            for n in batch {
                again.push(n);
            }
            for n in pending.take() {
                again.push(n);
            }
            pending = again;
        }
    }
    while let Ok(out) = rx.try_recv() {
        pending.extend_from(out, &engine);
    }
    if !pending.is_empty() {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            deliver(&pool, &store, team.origin(), &pending.take()),
        )
        .await;
    }
}

impl Pending {
    fn extend_from(&mut self, out: Outgoing, engine: &Engine) {
        if let Some(n) = resolve(out, engine) {
            self.push(n);
        }
    }
}

/// The announcer's pool: two connections, opened on first use, failing fast when
/// the server is away.
pub fn connect(url: &str) -> Result<PgPool, sqlx::Error> {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(2))
        .connect_lazy(url)
}
