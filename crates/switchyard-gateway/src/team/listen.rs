//! The receiver: `LISTEN`s on its own connection, applies what other replicas
//! announce, and — on start and after every reconnect — resynchronises from the
//! database first, so nothing announced while it was away is missed for long.
//!
//! While the connection is down the replica routes on what it knows (fail open)
//! and reports the database unavailable; it reconnects with a growing pause
//! (250 ms to 2 s).

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};
use switchyard_resilience::Engine;
use switchyard_resilience::breaker::BreakerRecord;
use switchyard_resilience::claude_wall::{ClaudeWall, ConnWall};
use switchyard_resilience::cooldown::{ConnectionHealth, CooldownState};
use switchyard_resilience::lockout::LockoutTable;
use switchyard_types::UnixMillis;
use switchyard_types::status::ChangeTopic;
use tokio_util::sync::CancellationToken;

use super::Team;
use super::notice::{CHANNEL, Envelope, Notice, ReloadKind, StateKind};
use super::token::TokenCheck;
use crate::affinity::{MAX_SESSIONS, Pin, SessionKey};
use crate::control::Control;
use crate::management::ManagementService;
use crate::resilience::Resilience;
use crate::store::Store;

/// What a notice may change on this replica.
#[derive(Clone)]
pub struct Replica {
    /// The shared database.
    pub store: Store,
    /// Engine, pins and leases.
    pub resilience: Arc<Resilience>,
    /// Routing configuration.
    pub management: ManagementService,
    /// This replica's change feed.
    pub control: Arc<Control>,
    /// The management token check.
    pub token: Arc<TokenCheck>,
    /// Claude accounts' usage-wall state.
    pub claude_wall: Arc<ClaudeWall>,
}

/// How often an idle receiver checks that its connection still answers.
const HEARTBEAT: Duration = Duration::from_secs(5);
/// How long that check may take before the connection counts as lost.
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(3);
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// Runs until `shutdown`.
pub async fn run(team: Arc<Team>, replica: Replica, url: String, shutdown: CancellationToken) {
    let mut pause = FIRST_PAUSE;
    loop {
        match session(&team, &replica, &url, &shutdown).await {
            Ok(()) => return,
            Err(e) => {
                team.set_available(false);
                tracing::debug!(event = "team.listen_failed", error = %e);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = shutdown.cancelled() => return,
        }
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// One connection's life: listen, resynchronise, apply until it breaks (`Err`) or
/// the replica stops (`Ok`).
async fn session(
    team: &Team,
    replica: &Replica,
    url: &str,
    shutdown: &CancellationToken,
) -> Result<(), sqlx::Error> {
    // A pool of one that fails fast (sqlx's default waits 30 s for a server that is
    // down), and no silent reconnect inside the listener: a lost connection must
    // end this session, so the replica reports it and resynchronises on return.
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(2))
        .idle_timeout(None)
        .max_lifetime(None)
        .connect(url)
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.eager_reconnect(false);
    // Listen first, then read: a change made in between is both read and heard.
    listener.listen(CHANNEL).await?;
    resync(team, replica)
        .await
        .map_err(|e| sqlx::Error::Protocol(format!("resynchronisation failed: {e}")))?;
    team.set_available(true);
    team.synced.send_replace(true);
    loop {
        let next = tokio::select! {
            n = listener.try_recv() => n?,
            () = shutdown.cancelled() => return Ok(()),
            // A connection the network silently dropped never errors by itself:
            // a query on it every few seconds finds out.
            () = tokio::time::sleep(HEARTBEAT) => {
                match tokio::time::timeout(HEARTBEAT_TIMEOUT, sqlx::query("SELECT 1").execute(&mut listener)).await {
                    Ok(Ok(_)) => continue,
                    Ok(Err(e)) => return Err(e),
                    Err(_) => return Err(sqlx::Error::Protocol("heartbeat timed out".to_owned())),
                }
            }
        };
        // `None`: the connection was lost.
        let Some(notification) = next else {
            return Err(sqlx::Error::Protocol("notification connection lost".to_owned()));
        };
        if let Some(envelope) = Envelope::decode(notification.payload())
            && envelope.origin != team.origin()
        {
            apply(team, replica, &envelope.origin, envelope.notice).await;
        }
    }
}

/// Applies one notice from another replica.
pub async fn apply(team: &Team, r: &Replica, origin: &str, notice: Notice) {
    let key = notice.coalesce_key();
    let engine = &r.resilience.engine;
    match notice {
        Notice::Breaker { provider, at, record } => {
            if let Ok(record) = serde_json::from_value::<BreakerRecord>(record)
                && team.newer(&key, at, origin)
            {
                engine.adopt_breaker(&provider, record);
                r.control.notify_local(ChangeTopic::Breakers);
            }
        }
        Notice::Health { connection, provider, at, record } => {
            if let Ok(health) = serde_json::from_value::<ConnectionHealth>(record)
                && takes_health(team, engine, &key, &connection, &health, at, origin)
            {
                engine.adopt_health(&connection, &provider, health);
                r.control.notify_local(ChangeTopic::Cooldowns);
            }
        }
        Notice::Reset { connection, provider, at } => {
            team.record_reset(&connection, at);
            if team.newer(&StateKind::Health.key(&connection), at, origin) {
                engine.adopt_health(&connection, &provider, ConnectionHealth::default());
            }
            if team.newer(&StateKind::Lockouts.key(&connection), at, origin) {
                engine.adopt_lockouts(&connection, &provider, LockoutTable::default());
            }
            r.control.notify_local(ChangeTopic::Cooldowns);
        }
        Notice::Lockouts { connection, provider, at, table } => {
            if let Ok(table) = serde_json::from_value::<LockoutTable>(table)
                && team.newer(&key, at, origin)
            {
                engine.adopt_lockouts(&connection, &provider, table);
                r.control.notify_local(ChangeTopic::Lockouts);
            }
        }
        Notice::Wall { connection, at, state } => {
            if let Ok(state) = serde_json::from_value::<ConnWall>(state)
                && team.newer(&key, at, origin)
            {
                r.claude_wall.adopt(&connection, state);
                r.control.notify_local(ChangeTopic::Lanes);
            }
        }
        Notice::Pin { session, provider, connection, pinned_at, last_seen } => {
            let pin = Pin { provider, connection, pinned_at, last_seen };
            r.resilience.affinity.adopt(SessionKey::from_stored(session), pin);
        }
        Notice::PinsCleared { connection } => {
            r.resilience.affinity.clear_from_peer(connection.as_deref());
        }
        Notice::Reload { what } => reload(r, what).await,
    }
    team.applied.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Whether another replica's health record of `connection` replaces this one's.
/// A terminal state (banned, expired, out of credits) holds until the connection
/// is reset, whatever the clocks say: an ordinary record never lifts it, and a
/// terminal record is taken unless a reset came after it.
fn takes_health(
    team: &Team,
    engine: &Engine,
    key: &str,
    connection: &str,
    health: &ConnectionHealth,
    at: UnixMillis,
    origin: &str,
) -> bool {
    let terminal = |h: &ConnectionHealth| matches!(h.state, CooldownState::Terminal { .. });
    if terminal(health) {
        let take = !team.reset_since(connection, at);
        if take {
            // The newest now, whatever this replica did since.
            team.newer(key, at, origin);
        }
        return take && !engine.health_of(connection).is_some_and(|h| h == *health);
    }
    if engine.health_of(connection).is_some_and(|h| terminal(&h)) {
        return false;
    }
    team.newer(key, at, origin)
}

async fn reload(r: &Replica, what: ReloadKind) {
    let failed = match what {
        ReloadKind::Routing => r.management.reload_from_peer().await.err().map(|e| e.message),
        ReloadKind::Settings => r.management.reload_settings_from_peer().await.err().map(|e| e.message),
        ReloadKind::Leases => {
            let out = r.resilience.leases.load().await.err().map(|e| e.to_string());
            r.control.notify_local(ChangeTopic::Leases);
            out
        }
        ReloadKind::Token => r.token.reload(&r.store).await.err().map(|e| e.to_string()),
    };
    if let Some(error) = failed {
        tracing::warn!(event = "team.reload_failed", what = ?what, error = %error);
    }
}

/// Loads the shared state from the database (on start and after a reconnect),
/// keeping whatever this replica changed more recently than the stored rows.
pub async fn resync(team: &Team, r: &Replica) -> Result<(), String> {
    // Configuration first: which connections exist decides which health rows count.
    for what in [ReloadKind::Routing, ReloadKind::Settings, ReloadKind::Leases, ReloadKind::Token] {
        reload(r, what).await;
    }
    let engine = &r.resilience.engine;
    for row in r.store.load_breakers().await.map_err(|e| e.to_string())? {
        if let Ok(record) = serde_json::from_str::<BreakerRecord>(&row.record_json)
            && team.newer(&StateKind::Breaker.key(&row.key), row.updated_at, "")
        {
            engine.adopt_breaker(&row.key, record);
        }
    }
    let routing = r.management.routing().load_full();
    for row in r.store.load_connection_health().await.map_err(|e| e.to_string())? {
        if !routing.by_id.contains_key(&row.key) {
            continue;
        }
        let key = StateKind::Health.key(&row.key);
        if let Ok(health) = serde_json::from_str::<ConnectionHealth>(&row.record_json)
            && takes_health(team, engine, &key, &row.key, &health, row.updated_at, "")
        {
            engine.adopt_health(&row.key, &row.provider, health);
        }
    }
    for row in r.store.load_team_state().await.map_err(|e| e.to_string())? {
        let Some(conn) = routing.by_id.get(&row.key) else { continue };
        let kind = [StateKind::Lockouts, StateKind::Wall]
            .into_iter()
            .find(|k| k.stored_name() == Some(row.kind.as_str()));
        let newer = |kind: StateKind| team.newer(&kind.key(&row.key), row.updated_at, "");
        match kind {
            Some(StateKind::Lockouts) => {
                if let Ok(table) = serde_json::from_str::<LockoutTable>(&row.state_json)
                    && newer(StateKind::Lockouts)
                {
                    engine.adopt_lockouts(&row.key, &conn.provider, table);
                }
            }
            Some(StateKind::Wall) => {
                if let Ok(state) = serde_json::from_str::<ConnWall>(&row.state_json)
                    && newer(StateKind::Wall)
                {
                    r.claude_wall.adopt(&row.key, state);
                }
            }
            _ => {}
        }
    }
    for row in r.store.session_pins(MAX_SESSIONS).await.map_err(|e| e.to_string())? {
        let pin = Pin {
            provider: row.provider,
            connection: row.connection_id,
            pinned_at: row.pinned_at,
            last_seen: row.last_seen_at,
        };
        r.resilience.affinity.adopt(SessionKey::from_stored(row.session_key), pin);
    }
    for topic in ChangeTopic::ALL {
        r.control.notify_local(topic);
    }
    Ok(())
}
