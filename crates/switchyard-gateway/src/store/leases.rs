//! `session_leases`: exclusive session leases (SPEC §4.4). Every operation is one
//! serialized transaction (SQLite's write lock, or a Postgres advisory lock shared
//! by every replica) that first expires ACTIVE rows past their expiry
//! (lazy expiry), so a lease's state is always read after its TTL is applied.
//!
//! The partial unique indexes (one ACTIVE row per owner, one per connection) are
//! what makes a lease exclusive: an insert that would break one fails in the
//! database, whichever process or task made it, and is answered as "taken".

use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};
use switchyard_types::UnixMillis;

use super::{Store, StoreResult};

/// Ended rows are kept this long (the owner's latest row is kept regardless, so
/// its generations never repeat).
const HISTORY_MS: i64 = 30 * 24 * 3600 * 1000;

/// The lock every lease transaction takes first (see [`Store::begin_serialized`]).
const LEASE_LOCK: i64 = 0x5359_4c45; // "SYLE"

/// A lease row's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// Held.
    Active,
    /// Given back by its owner or an operator.
    Released,
    /// Its TTL ran out.
    Expired,
    /// Ended by the gateway (key revoked, connection gone, moved elsewhere).
    Invalidated,
}

impl LeaseState {
    fn as_db(self) -> &'static str {
        match self {
            LeaseState::Active => "ACTIVE",
            LeaseState::Released => "RELEASED",
            LeaseState::Expired => "EXPIRED",
            LeaseState::Invalidated => "INVALIDATED",
        }
    }

    fn from_db(s: &str) -> LeaseState {
        match s {
            "ACTIVE" => LeaseState::Active,
            "RELEASED" => LeaseState::Released,
            "EXPIRED" => LeaseState::Expired,
            _ => LeaseState::Invalidated,
        }
    }
}

/// One stored lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRow {
    /// Row id (the management API's lease id).
    pub id: i64,
    /// SHA-256 (hex) of the owner token.
    pub owner_hash: String,
    /// The client key that holds it.
    pub api_key_id: String,
    /// Provider of the connection.
    pub provider: String,
    /// The leased connection.
    pub connection_id: String,
    /// Fencing generation.
    pub generation: i64,
    /// State.
    pub state: LeaseState,
    /// First acquired (kept across a move to another connection).
    pub acquired_at: UnixMillis,
    /// Last renewed.
    pub renewed_at: UnixMillis,
    /// Lapses then unless renewed.
    pub expires_at: UnixMillis,
    /// Why it ended, when it did.
    pub end_reason: Option<String>,
}

/// Who asks: the owner (its token's hash) through a client key.
#[derive(Debug, Clone, Copy)]
pub struct LeaseHolder<'a> {
    /// SHA-256 (hex) of the owner token.
    pub owner_hash: &'a str,
    /// The client key's id.
    pub api_key_id: &'a str,
}

/// A connection a lease may take: `(provider, connection id)`.
pub type LeaseSlot = (String, String);

/// What an acquire came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireOutcome {
    /// A new lease (a new generation).
    Acquired(LeaseRow),
    /// The owner already held one of the candidates through this key: renewed.
    Reused(LeaseRow),
    /// The owner holds a lease elsewhere (another key or connection).
    OwnerBusy,
    /// Every candidate is held by another owner; the earliest of them lapses then.
    NoFreeConnection {
        /// Earliest expiry among the candidates' leases.
        earliest_expiry: Option<UnixMillis>,
    },
}

/// What a move to another connection came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionOutcome {
    /// Now on the new connection, same generation.
    Moved(LeaseRow),
    /// Already there.
    Same(LeaseRow),
    /// No active lease of this owner, key and generation.
    Stale,
    /// Another owner holds the new connection.
    Busy,
}

const COLUMNS: &str = "id, owner_hash, api_key_id, provider, connection_id, generation, state, acquired_at, \
                       renewed_at, expires_at, end_reason";

fn row_of(r: &AnyRow) -> LeaseRow {
    LeaseRow {
        id: r.get("id"),
        owner_hash: r.get("owner_hash"),
        api_key_id: r.get("api_key_id"),
        provider: r.get("provider"),
        connection_id: r.get("connection_id"),
        generation: r.get("generation"),
        state: LeaseState::from_db(r.get::<&str, _>("state")),
        acquired_at: UnixMillis(r.get("acquired_at")),
        renewed_at: UnixMillis(r.get("renewed_at")),
        expires_at: UnixMillis(r.get("expires_at")),
        end_reason: r.get("end_reason"),
    }
}

#[cfg(test)]
fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

type Tx = Transaction<'static, Any>;

/// Ends every ACTIVE row whose expiry has passed.
async fn expire(tx: &mut Tx, now: UnixMillis) -> StoreResult<()> {
    sqlx::query(
        "UPDATE session_leases SET state = 'EXPIRED', ended_at = expires_at, end_reason = 'ttl-expired' \
         WHERE state = 'ACTIVE' AND expires_at <= $1",
    )
    .bind(now.0)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn active_of(tx: &mut Tx, owner_hash: &str) -> StoreResult<Option<LeaseRow>> {
    let sql = format!("SELECT {COLUMNS} FROM session_leases WHERE owner_hash = $1 AND state = 'ACTIVE'");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(owner_hash).fetch_optional(&mut **tx).await?;
    Ok(row.as_ref().map(row_of))
}

async fn by_id(tx: &mut Tx, id: i64) -> StoreResult<Option<LeaseRow>> {
    let sql = format!("SELECT {COLUMNS} FROM session_leases WHERE id = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(&mut **tx).await?;
    Ok(row.as_ref().map(row_of))
}

/// The owner's active lease, when it is held through `holder`'s key at `generation`.
async fn fenced(tx: &mut Tx, holder: LeaseHolder<'_>, generation: i64) -> StoreResult<Option<LeaseRow>> {
    Ok(active_of(tx, holder.owner_hash)
        .await?
        .filter(|r| r.api_key_id == holder.api_key_id && r.generation == generation))
}

/// Inserts an ACTIVE row; `None` when a unique index refused it.
async fn insert_active(
    tx: &mut Tx,
    holder: LeaseHolder<'_>,
    slot: (&str, &str),
    generation: Option<i64>,
    acquired_at: UnixMillis,
    now: UnixMillis,
    expires_at: UnixMillis,
) -> StoreResult<Option<LeaseRow>> {
    // A new lease's generation is one past the owner's last, computed in the same
    // statement so two inserts cannot both take it.
    let inserted = sqlx::query(
        "INSERT INTO session_leases (owner_hash, api_key_id, provider, connection_id, generation, state, \
         acquired_at, renewed_at, expires_at) VALUES ($1, $2, $3, $4, COALESCE($5, (SELECT COALESCE(MAX(generation), 0) + 1 \
         FROM session_leases WHERE owner_hash = $6)), 'ACTIVE', $7, $8, $9) \
         ON CONFLICT DO NOTHING RETURNING id",
    )
    .bind(holder.owner_hash)
    .bind(holder.api_key_id)
    .bind(slot.0)
    .bind(slot.1)
    .bind(generation)
    .bind(holder.owner_hash)
    .bind(acquired_at.0)
    .bind(now.0)
    .bind(expires_at.0)
    .fetch_optional(&mut **tx)
    .await?;
    // A conflict with either partial unique index inserts nothing (and, unlike an
    // error, leaves a Postgres transaction usable for the next look).
    match inserted {
        Some(row) => by_id(tx, row.try_get("id")?).await,
        None => Ok(None),
    }
}

async fn end_row(
    tx: &mut Tx,
    id: i64,
    state: LeaseState,
    reason: &str,
    now: UnixMillis,
) -> StoreResult<bool> {
    let done = sqlx::query(
        "UPDATE session_leases SET state = $1, ended_at = $2, end_reason = $3 WHERE id = $4 AND state = 'ACTIVE'",
    )
    .bind(state.as_db())
    .bind(now.0)
    .bind(reason)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

impl Store {
    async fn lease_tx(&self, now: UnixMillis) -> StoreResult<Tx> {
        let mut tx = self.begin_serialized(LEASE_LOCK).await?;
        expire(&mut tx, now).await?;
        Ok(tx)
    }

    /// Acquires a lease on the first free connection of `candidates` (in order) for
    /// `holder`, lasting `ttl_ms`. An owner that already holds one of them through
    /// the same key keeps it (same generation, renewed).
    pub async fn acquire_lease(
        &self,
        holder: LeaseHolder<'_>,
        candidates: &[LeaseSlot],
        now: UnixMillis,
        ttl_ms: i64,
    ) -> StoreResult<AcquireOutcome> {
        let mut tx = self.lease_tx(now).await?;
        let expires_at = now.plus_millis(ttl_ms);
        sqlx::query(
            "DELETE FROM session_leases WHERE state <> 'ACTIVE' AND ended_at < $1 \
             AND id NOT IN (SELECT MAX(id) FROM session_leases GROUP BY owner_hash)",
        )
        .bind(now.0 - HISTORY_MS)
        .execute(&mut *tx)
        .await?;
        // A unique index refusing the insert means another writer took the
        // connection (or the owner) in between: look again, a bounded number of times.
        for _ in 0..3 {
            if let Some(held) = active_of(&mut tx, holder.owner_hash).await? {
                let here = candidates.iter().any(|(_, c)| *c == held.connection_id);
                if held.api_key_id != holder.api_key_id || !here {
                    tx.rollback().await?;
                    return Ok(AcquireOutcome::OwnerBusy);
                }
                sqlx::query("UPDATE session_leases SET renewed_at = $1, expires_at = $2 WHERE id = $3")
                    .bind(now.0)
                    .bind(expires_at.0)
                    .bind(held.id)
                    .execute(&mut *tx)
                    .await?;
                let row = by_id(&mut tx, held.id).await?;
                tx.commit().await?;
                return Ok(row.map_or(AcquireOutcome::OwnerBusy, AcquireOutcome::Reused));
            }
            let taken: Vec<(String, i64)> =
                sqlx::query_as("SELECT connection_id, expires_at FROM session_leases WHERE state = 'ACTIVE'")
                    .fetch_all(&mut *tx)
                    .await?;
            let free = candidates.iter().find(|(_, c)| !taken.iter().any(|(t, _)| t == c));
            let Some((provider, connection)) = free else {
                let earliest = taken
                    .iter()
                    .filter(|(t, _)| candidates.iter().any(|(_, c)| c == t))
                    .map(|&(_, at)| UnixMillis(at))
                    .min();
                tx.rollback().await?;
                return Ok(AcquireOutcome::NoFreeConnection { earliest_expiry: earliest });
            };
            let slot = (provider.as_str(), connection.as_str());
            if let Some(row) = insert_active(&mut tx, holder, slot, None, now, now, expires_at).await? {
                tx.commit().await?;
                return Ok(AcquireOutcome::Acquired(row));
            }
        }
        tx.rollback().await?;
        Ok(AcquireOutcome::NoFreeConnection { earliest_expiry: None })
    }

    /// Extends the owner's active lease at `generation` to `now + ttl_ms`.
    pub async fn renew_lease(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        now: UnixMillis,
        ttl_ms: i64,
    ) -> StoreResult<Option<LeaseRow>> {
        let mut tx = self.lease_tx(now).await?;
        let Some(held) = fenced(&mut tx, holder, generation).await? else {
            tx.commit().await?;
            return Ok(None);
        };
        sqlx::query("UPDATE session_leases SET renewed_at = $1, expires_at = $2 WHERE id = $3")
            .bind(now.0)
            .bind(now.plus_millis(ttl_ms).0)
            .bind(held.id)
            .execute(&mut *tx)
            .await?;
        let row = by_id(&mut tx, held.id).await?;
        tx.commit().await?;
        Ok(row)
    }

    /// Releases the owner's lease at `generation`. Idempotent: a lease this owner
    /// and key already released answers with its released row again.
    pub async fn release_lease(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        now: UnixMillis,
        reason: &str,
    ) -> StoreResult<Option<LeaseRow>> {
        let mut tx = self.lease_tx(now).await?;
        if let Some(held) = fenced(&mut tx, holder, generation).await? {
            end_row(&mut tx, held.id, LeaseState::Released, reason, now).await?;
        }
        let row = self.latest_in(&mut tx, holder, generation).await?;
        tx.commit().await?;
        Ok(row.filter(|r| r.state == LeaseState::Released))
    }

    /// The owner's latest row at `generation` through `holder`'s key, in any state.
    /// A read: an ACTIVE row past its expiry is reported as EXPIRED without
    /// taking the write lock (the next lease write records it).
    pub async fn lease_status(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        now: UnixMillis,
    ) -> StoreResult<Option<LeaseRow>> {
        let mut tx = self.pool.begin().await?;
        let row = self.latest_in(&mut tx, holder, generation).await?;
        tx.commit().await?;
        Ok(row.map(|mut r| {
            if r.state == LeaseState::Active && r.expires_at <= now {
                r.state = LeaseState::Expired;
                r.end_reason = Some("ttl-expired".to_owned());
            }
            r
        }))
    }

    async fn latest_in(
        &self,
        tx: &mut Tx,
        holder: LeaseHolder<'_>,
        generation: i64,
    ) -> StoreResult<Option<LeaseRow>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM session_leases WHERE owner_hash = $1 AND api_key_id = $2 AND generation = $3 \
             ORDER BY id DESC LIMIT 1"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(holder.owner_hash)
            .bind(holder.api_key_id)
            .bind(generation)
            .fetch_optional(&mut **tx)
            .await?;
        Ok(row.as_ref().map(row_of))
    }

    /// Moves the owner's active lease at `generation` to `to`, keeping the
    /// generation, the acquisition time and the expiry; the old row ends as
    /// INVALIDATED with `reason`.
    pub async fn transition_lease(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        to: (&str, &str),
        now: UnixMillis,
        reason: &str,
    ) -> StoreResult<TransitionOutcome> {
        let mut tx = self.lease_tx(now).await?;
        let Some(held) = fenced(&mut tx, holder, generation).await? else {
            tx.commit().await?;
            return Ok(TransitionOutcome::Stale);
        };
        if held.connection_id == to.1 {
            tx.commit().await?;
            return Ok(TransitionOutcome::Same(held));
        }
        end_row(&mut tx, held.id, LeaseState::Invalidated, reason, now).await?;
        let moved = insert_active(
            &mut tx,
            holder,
            to,
            Some(generation),
            held.acquired_at,
            held.renewed_at,
            held.expires_at,
        )
        .await?;
        match moved {
            Some(row) => {
                tx.commit().await?;
                Ok(TransitionOutcome::Moved(row))
            }
            None => {
                tx.rollback().await?;
                Ok(TransitionOutcome::Busy)
            }
        }
    }

    /// Ends lease `id` (if active) as `state` with `reason`; returns the row it
    /// ended.
    pub async fn end_lease(
        &self,
        id: i64,
        state: LeaseState,
        reason: &str,
        now: UnixMillis,
    ) -> StoreResult<Option<LeaseRow>> {
        let mut tx = self.lease_tx(now).await?;
        let ended = end_row(&mut tx, id, state, reason, now).await?;
        let row = if ended { by_id(&mut tx, id).await? } else { None };
        tx.commit().await?;
        Ok(row)
    }

    /// Every ACTIVE row (some may be past their expiry until the next lease
    /// transaction; readers compare `expires_at` with the clock).
    pub async fn active_leases(&self) -> StoreResult<Vec<LeaseRow>> {
        let sql = format!("SELECT {COLUMNS} FROM session_leases WHERE state = 'ACTIVE' ORDER BY id");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&self.pool).await?;
        Ok(rows.iter().map(row_of).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixMillis = UnixMillis(1_900_000_000_000);

    fn owner(n: u8) -> String {
        format!("{:064x}", n)
    }

    fn slots(ids: &[&str]) -> Vec<LeaseSlot> {
        ids.iter().map(|c| ("anthropic".to_owned(), (*c).to_owned())).collect()
    }

    async fn store(dir: &std::path::Path) -> Store {
        Store::open(dir).await.unwrap_or_else(|e| panic!("{e}"))
    }

    #[tokio::test]
    async fn two_processes_racing_for_one_connection_get_one_lease_from_the_database() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // Two stores on one file: two pools, as two gateway processes would have.
        let (a, b) = (store(dir.path()).await, store(dir.path()).await);
        for round in 0..20u8 {
            let (oa, ob) = (owner(2 * round + 1), owner(2 * round + 2));
            let candidates = slots(&["x"]);
            let now = NOW.plus_millis(i64::from(round) * 1_000_000);
            let (ra, rb) = tokio::join!(
                a.acquire_lease(LeaseHolder { owner_hash: &oa, api_key_id: "k1" }, &candidates, now, 1000),
                b.acquire_lease(LeaseHolder { owner_hash: &ob, api_key_id: "k2" }, &candidates, now, 1000),
            );
            let outcomes = [ra.unwrap_or_else(|e| panic!("{e}")), rb.unwrap_or_else(|e| panic!("{e}"))];
            let won = outcomes.iter().filter(|o| matches!(o, AcquireOutcome::Acquired(_))).count();
            assert_eq!(won, 1, "round {round}: {outcomes:?}");
            assert!(outcomes.iter().any(|o| matches!(
                o,
                AcquireOutcome::NoFreeConnection { earliest_expiry: Some(at) } if *at == now.plus_millis(1000)
            )));
        }
    }

    #[tokio::test]
    async fn the_unique_indexes_refuse_a_second_active_row_whatever_the_code_does() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let s = store(dir.path()).await;
        let insert = |owner: String, connection: &'static str| {
            let pool = s.pool.clone();
            async move {
                sqlx::query(
                    "INSERT INTO session_leases (owner_hash, api_key_id, provider, connection_id, generation, \
                     state, acquired_at, renewed_at, expires_at) VALUES ($1, 'k', 'p', $2, 1, 'ACTIVE', 0, 0, 1)",
                )
                .bind(owner)
                .bind(connection)
                .execute(&pool)
                .await
            }
        };
        assert!(insert(owner(1), "x").await.is_ok());
        let same_connection = insert(owner(2), "x").await;
        assert!(same_connection.as_ref().is_err_and(is_unique_violation), "{same_connection:?}");
        let same_owner = insert(owner(1), "y").await;
        assert!(same_owner.as_ref().is_err_and(is_unique_violation), "{same_owner:?}");
        let bad_hash = insert("not-a-hash".to_owned(), "z").await;
        assert!(bad_hash.is_err(), "the owner column holds only SHA-256 hex");
    }

    #[tokio::test]
    async fn a_refused_insert_or_move_is_reported_as_taken_not_as_an_error() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let s = store(dir.path()).await;
        let (o1, o2) = (owner(1), owner(2));
        let h1 = LeaseHolder { owner_hash: &o1, api_key_id: "k" };
        let h2 = LeaseHolder { owner_hash: &o2, api_key_id: "k" };
        assert!(matches!(
            s.acquire_lease(h1, &slots(&["x"]), NOW, 1000).await,
            Ok(AcquireOutcome::Acquired(_))
        ));
        assert!(matches!(
            s.acquire_lease(h2, &slots(&["y"]), NOW, 1000).await,
            Ok(AcquireOutcome::Acquired(_))
        ));
        // What another writer's insert would meet: the index, inside a transaction.
        let mut tx = s.lease_tx(NOW).await.unwrap_or_else(|e| panic!("{e}"));
        let refused =
            insert_active(&mut tx, h2, ("anthropic", "x"), None, NOW, NOW, NOW.plus_millis(1000)).await;
        assert!(matches!(refused, Ok(None)), "{refused:?}");
        tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
        let moved = s.transition_lease(h1, 1, ("anthropic", "y"), NOW, "health-or-cooldown").await;
        assert!(matches!(moved, Ok(TransitionOutcome::Busy)), "{moved:?}");
        // The refused move left the lease where it was.
        let active = s.active_leases().await.unwrap_or_default();
        let on: Vec<(&str, &str)> =
            active.iter().map(|r| (r.owner_hash.as_str(), r.connection_id.as_str())).collect();
        assert_eq!(on, [(o1.as_str(), "x"), (o2.as_str(), "y")]);
    }

    #[tokio::test]
    async fn generations_grow_per_owner_and_expiry_is_applied_lazily() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let s = store(dir.path()).await;
        let o = owner(7);
        let holder = LeaseHolder { owner_hash: &o, api_key_id: "k" };
        let first = s.acquire_lease(holder, &slots(&["x", "y"]), NOW, 1000).await;
        let Ok(AcquireOutcome::Acquired(first)) = first else { panic!("{first:?}") };
        assert_eq!((first.generation, first.connection_id.as_str()), (1, "x"));
        // Again through the same key: the same lease, renewed.
        let again = s.acquire_lease(holder, &slots(&["y", "x"]), NOW.plus_millis(500), 1000).await;
        let Ok(AcquireOutcome::Reused(again)) = again else { panic!("{again:?}") };
        assert_eq!((again.generation, again.expires_at), (1, NOW.plus_millis(1500)));
        // Through another key: refused, no rebinding.
        let other = LeaseHolder { owner_hash: &o, api_key_id: "k2" };
        let refused = s.acquire_lease(other, &slots(&["x"]), NOW.plus_millis(600), 1000).await;
        assert!(matches!(refused, Ok(AcquireOutcome::OwnerBusy)), "{refused:?}");
        // Past its expiry the row is EXPIRED at the next transaction, and the next
        // acquire is generation 2.
        let status = s.lease_status(holder, 1, NOW.plus_millis(1500)).await;
        assert!(matches!(&status, Ok(Some(r)) if r.state == LeaseState::Expired), "{status:?}");
        let next = s.acquire_lease(holder, &slots(&["y"]), NOW.plus_millis(2000), 1000).await;
        let Ok(AcquireOutcome::Acquired(next)) = next else { panic!("{next:?}") };
        assert_eq!((next.generation, next.connection_id.as_str()), (2, "y"));
        // A move keeps the generation and the expiry; the old row is invalidated.
        let moved = s
            .transition_lease(holder, 2, ("anthropic", "x"), NOW.plus_millis(2100), "health-or-cooldown")
            .await;
        let Ok(TransitionOutcome::Moved(moved)) = moved else { panic!("{moved:?}") };
        assert_eq!(
            (moved.generation, moved.expires_at, moved.connection_id.as_str()),
            (2, next.expires_at, "x")
        );
        let stale = s.transition_lease(holder, 1, ("anthropic", "y"), NOW.plus_millis(2100), "r").await;
        assert!(matches!(stale, Ok(TransitionOutcome::Stale)));
        let active = s.active_leases().await.unwrap_or_default();
        assert_eq!(active.len(), 1);
        // Release is idempotent.
        for _ in 0..2 {
            let released = s.release_lease(holder, 2, NOW.plus_millis(2200), "owner-exit").await;
            assert!(matches!(&released, Ok(Some(r)) if r.state == LeaseState::Released), "{released:?}");
        }
        assert!(s.active_leases().await.unwrap_or_default().is_empty());
    }
}
