//! Exclusive session leases (SPEC §4.4): a managed agent holds one connection
//! exclusively, and every dispatch it makes is fenced by the lease's generation.
//!
//! The database decides (`store::leases`: one transaction per operation, partial
//! unique indexes for "one active lease per owner and per connection"). The
//! request path never waits for it: it reads [`ActiveSet`], a copy of the active
//! rows reloaded after every lease write. Reloads are serialized, so a later
//! reload never publishes an older state than an earlier one.
//!
//! Map: `owner` (the headers), this module (the lease book and its operations),
//! `crate::http::leases` (`POST /api/v1/session-leases`), `crate::proxy::lease`
//! (the fence on the candidate loop), `crate::management::leases` (list, release).

pub mod owner;

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use switchyard_types::status::ChangeTopic;
use switchyard_types::{ErrorCode, UnixMillis};

use crate::control::Control;
use crate::errors::GatewayError;
use crate::routing::ClientKey;
use crate::store::{
    AcquireOutcome, LeaseHolder, LeaseRow, LeaseSlot, LeaseState, Store, StoreResult, TransitionOutcome,
};

/// TTL of a lease when the acquire does not name one.
pub const DEFAULT_TTL_MS: u64 = 120_000;
/// Shortest TTL.
pub const MIN_TTL_MS: u64 = 1_000;
/// Longest TTL.
pub const MAX_TTL_MS: u64 = 1_800_000;
/// Bounds of a capacity refusal's `Retry-After`, seconds.
pub const RETRY_AFTER_SECS: (u64, u64) = (1, 120);
/// The client-key scope that may hold leases.
pub const SCOPE: &str = "lease:exclusive";

/// A requested TTL within the bounds (the default when absent).
pub fn clamp_ttl(ttl_ms: Option<u64>) -> i64 {
    let ttl = ttl_ms.unwrap_or(DEFAULT_TTL_MS).clamp(MIN_TTL_MS, MAX_TTL_MS);
    i64::try_from(ttl).unwrap_or(i64::MAX)
}

/// The active leases, by owner and by connection.
#[derive(Debug, Default)]
pub struct ActiveSet {
    by_owner: HashMap<String, Arc<LeaseRow>>,
    by_connection: HashMap<String, Arc<LeaseRow>>,
}

impl ActiveSet {
    /// No lease exists (the request path's fast exit).
    pub fn is_empty(&self) -> bool {
        self.by_connection.is_empty()
    }

    /// The lease on `connection`, unless it has lapsed by `now`.
    pub fn on_connection(&self, connection: &str, now: UnixMillis) -> Option<&LeaseRow> {
        self.by_connection.get(connection).map(Arc::as_ref).filter(|l| l.expires_at > now)
    }

    /// The owner's lease, unless it has lapsed by `now`.
    pub fn of_owner(&self, owner_hash: &str, now: UnixMillis) -> Option<&LeaseRow> {
        self.by_owner.get(owner_hash).map(Arc::as_ref).filter(|l| l.expires_at > now)
    }

    /// Every lease live at `now`, oldest first.
    pub fn live(&self, now: UnixMillis) -> Vec<&LeaseRow> {
        let mut out: Vec<&LeaseRow> =
            self.by_connection.values().map(Arc::as_ref).filter(|l| l.expires_at > now).collect();
        out.sort_by_key(|l| l.id);
        out
    }
}

/// The lease book: the store's lease operations and the in-memory active set.
pub struct Leases {
    store: Store,
    control: Arc<Control>,
    active: ArcSwap<ActiveSet>,
    reload: tokio::sync::Mutex<()>,
}

/// Why the gateway ended or moved a lease (the stored `end_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The owner released it.
    OwnerExit,
    /// The owner released it because its client cancelled.
    ClientCancelled,
    /// An operator released it (management API or UI).
    OperatorReleased,
    /// Its client key was deleted.
    ManagedKeyRevoked,
    /// Its client key lost the scope or the connection.
    AuthorizationChanged,
    /// Its connection was deleted.
    ConnectionIneligible,
    /// Its connection was ruled out (cooling, breaker, failed attempt): moved.
    HealthOrCooldown,
    /// The requested model is not served on its connection: moved.
    ModelIneligible,
}

impl EndReason {
    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::OwnerExit => "owner-exit",
            EndReason::ClientCancelled => "client-cancelled",
            EndReason::OperatorReleased => "operator-released",
            EndReason::ManagedKeyRevoked => "managed-key-revoked",
            EndReason::AuthorizationChanged => "authorization-changed",
            EndReason::ConnectionIneligible => "connection-ineligible",
            EndReason::HealthOrCooldown => "health-or-cooldown",
            EndReason::ModelIneligible => "model-ineligible",
        }
    }
}

/// The shown name of a lease state.
pub fn state_name(state: LeaseState) -> &'static str {
    match state {
        LeaseState::Active => "active",
        LeaseState::Released => "released",
        LeaseState::Expired => "expired",
        LeaseState::Invalidated => "invalidated",
    }
}

/// `429 lease-capacity-unavailable`: every free eligible connection is held by
/// another owner. `Retry-After` is the earliest of their expiries, within bounds.
pub fn capacity_unavailable(now: UnixMillis, earliest_expiry: Option<UnixMillis>) -> GatewayError {
    let secs = earliest_expiry
        .map(|at| u64::try_from(now.millis_until(at)).unwrap_or(u64::MAX).div_ceil(1000))
        .unwrap_or(RETRY_AFTER_SECS.0)
        .clamp(RETRY_AFTER_SECS.0, RETRY_AFTER_SECS.1);
    GatewayError::new(
        ErrorCode::LeaseCapacityUnavailable,
        format!(
            "every free connection for this request is held by another agent's exclusive lease; \
             retry after {secs} s"
        ),
    )
    .with_retry_after(Some(secs))
    .with_field("state", "waiting-for-capacity".into())
    .with_field("reason", "no-free-eligible-connection".into())
    .with_field("freeCount", 0.into())
    .with_field("retryAfter", secs.into())
}

/// Whether `key` may hold exclusive leases.
pub fn may_lease(key: &ClientKey) -> Result<(), GatewayError> {
    if key.scopes.iter().any(|s| s == SCOPE) && !key.allowed_connections.is_empty() {
        return Ok(());
    }
    Err(GatewayError::new(
        ErrorCode::LeaseNotPermitted,
        format!(
            "this client key may not hold exclusive leases: it needs the scope '{SCOPE}' and a non-empty \
             allowedConnections list"
        ),
    ))
}

/// `409 lease-fence-stale` with a message naming why.
pub fn stale(why: &str) -> GatewayError {
    GatewayError::new(ErrorCode::LeaseFenceStale, format!("lease fence check failed: {why}"))
}

impl Leases {
    /// An empty book over `store`; [`Leases::load`] fills it.
    pub fn new(store: Store, control: Arc<Control>) -> Leases {
        Leases {
            store,
            control,
            active: ArcSwap::from_pointee(ActiveSet::default()),
            reload: Default::default(),
        }
    }

    /// The active set, for the request path.
    pub fn active(&self) -> arc_swap::Guard<Arc<ActiveSet>> {
        self.active.load()
    }

    /// Reloads the active set from the store.
    pub async fn load(&self) -> StoreResult<usize> {
        let _one_at_a_time = self.reload.lock().await;
        let rows = self.store.active_leases().await?;
        let n = rows.len();
        let mut set = ActiveSet::default();
        for row in rows {
            let row = Arc::new(row);
            set.by_owner.insert(row.owner_hash.clone(), row.clone());
            set.by_connection.insert(row.connection_id.clone(), row);
        }
        self.active.store(Arc::new(set));
        Ok(n)
    }

    /// After a write: reload, and tell the UI.
    async fn changed(&self) -> StoreResult<()> {
        let loaded = self.load().await;
        // Announced even when the reload failed: the write itself committed, and
        // other replicas (and the UI) must learn of it.
        self.control.notify(ChangeTopic::Leases);
        loaded.map(|_| ())
    }

    /// Acquires (or reuses) a lease on the first free of `candidates`.
    pub async fn acquire(
        &self,
        holder: LeaseHolder<'_>,
        candidates: &[LeaseSlot],
        now: UnixMillis,
        ttl_ms: i64,
    ) -> StoreResult<AcquireOutcome> {
        let outcome = self.store.acquire_lease(holder, candidates, now, ttl_ms).await?;
        if matches!(outcome, AcquireOutcome::Acquired(_) | AcquireOutcome::Reused(_)) {
            self.changed().await?;
        }
        Ok(outcome)
    }

    /// Renews the owner's lease at `generation`.
    pub async fn renew(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        now: UnixMillis,
        ttl_ms: i64,
    ) -> StoreResult<Option<LeaseRow>> {
        let row = self.store.renew_lease(holder, generation, now, ttl_ms).await?;
        if row.is_some() {
            self.changed().await?;
        }
        Ok(row)
    }

    /// Releases the owner's lease at `generation` (idempotent).
    pub async fn release(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        now: UnixMillis,
        reason: EndReason,
    ) -> StoreResult<Option<LeaseRow>> {
        let was_active =
            self.active().of_owner(holder.owner_hash, now).is_some_and(|l| l.generation == generation);
        let row = self.store.release_lease(holder, generation, now, reason.as_str()).await?;
        if was_active {
            self.changed().await?;
        }
        Ok(row)
    }

    /// The owner's lease at `generation`, in any state.
    pub async fn status(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        now: UnixMillis,
    ) -> StoreResult<Option<LeaseRow>> {
        self.store.lease_status(holder, generation, now).await
    }

    /// Moves the owner's lease to `to`, keeping its generation.
    pub async fn transition(
        &self,
        holder: LeaseHolder<'_>,
        generation: i64,
        to: (&str, &str),
        now: UnixMillis,
        reason: EndReason,
    ) -> StoreResult<TransitionOutcome> {
        let outcome = self.store.transition_lease(holder, generation, to, now, reason.as_str()).await?;
        if matches!(outcome, TransitionOutcome::Moved(_)) {
            self.changed().await?;
        }
        Ok(outcome)
    }

    /// Ends lease `id` if it is active; whether it did.
    pub async fn end(&self, id: i64, reason: EndReason, now: UnixMillis) -> StoreResult<bool> {
        let state = match reason {
            EndReason::OwnerExit | EndReason::ClientCancelled | EndReason::OperatorReleased => {
                LeaseState::Released
            }
            _ => LeaseState::Invalidated,
        };
        let ended = self.store.end_lease(id, state, reason.as_str(), now).await?.is_some();
        if ended {
            self.changed().await?;
        }
        Ok(ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_and_retry_after_stay_within_their_bounds() {
        assert_eq!(clamp_ttl(None), 120_000);
        assert_eq!(clamp_ttl(Some(10)), 1_000);
        assert_eq!(clamp_ttl(Some(u64::MAX)), 1_800_000);
        let now = UnixMillis(1_000_000);
        let secs =
            |at: Option<i64>| capacity_unavailable(now, at.map(|ms| now.plus_millis(ms))).retry_after_secs;
        assert_eq!(secs(Some(30_001)), Some(31));
        assert_eq!(secs(Some(0)), Some(1));
        assert_eq!(secs(Some(1_800_000)), Some(120));
        assert_eq!(secs(None), Some(1));
        let body = capacity_unavailable(now, None).body(crate::errors::ErrorFormat::Management);
        assert_eq!(body["state"], "waiting-for-capacity");
        assert_eq!(body["error"]["code"], "lease-capacity-unavailable");
    }
}
