//! Exclusive session leases for the operator (SPEC §7): list the active ones,
//! release one, and end those a configuration change made unauthorized.

use switchyard_types::ErrorCode;
use switchyard_types::api::{LeaseReleased, LeaseView, LeasesView};

use super::{ManagementService, MgmtResult};
use crate::errors::GatewayError;
use crate::leases::{EndReason, may_lease};
use crate::routing::RoutingTable;

impl ManagementService {
    /// `GET /api/leases`: the live leases, oldest first.
    pub async fn leases(&self) -> MgmtResult<LeasesView> {
        let keys = self.store.list_api_keys().await?;
        let active = self.resilience.leases.active();
        let leases = active
            .live(self.clock.now_wall())
            .into_iter()
            .map(|l| LeaseView {
                id: u32::try_from(l.id).unwrap_or(u32::MAX),
                key_id: l.api_key_id.clone(),
                key_name: keys.iter().find(|k| k.id == l.api_key_id).map(|k| k.name.clone()),
                provider: l.provider.clone(),
                connection: l.connection_id.clone(),
                generation: u32::try_from(l.generation).unwrap_or(u32::MAX),
                acquired_at: l.acquired_at,
                renewed_at: l.renewed_at,
                expires_at: l.expires_at,
            })
            .collect();
        Ok(LeasesView { leases })
    }

    /// `DELETE /api/leases/{id}`: releases an active lease; its owner's next
    /// request is refused as stale, and the connection is free for others.
    pub async fn release_lease(&self, id: u32) -> MgmtResult<LeaseReleased> {
        let now = self.clock.now_wall();
        let ended = self
            .resilience
            .leases
            .end(i64::from(id), EndReason::OperatorReleased, now)
            .await
            .map_err(GatewayError::internal)?;
        if !ended {
            return Err(GatewayError::new(ErrorCode::NotFound, format!("lease {id} is not active")));
        }
        Ok(LeaseReleased { released: 1 })
    }

    /// Ends the active leases the current configuration no longer authorizes (at
    /// start, once the stored leases are loaded).
    pub async fn reconcile_leases_now(&self) -> MgmtResult<()> {
        let table = self.routing.load_full();
        self.reconcile_leases(&table).await
    }

    /// Ends the active leases `table` no longer authorizes: a deleted or disabled
    /// connection, a deleted key, or a key that lost the scope or the connection.
    pub(super) async fn reconcile_leases(&self, table: &RoutingTable) -> MgmtResult<()> {
        let now = self.clock.now_wall();
        let ended: Vec<(i64, EndReason)> = {
            let active = self.resilience.leases.active();
            active
                .live(now)
                .into_iter()
                .filter_map(|l| {
                    let key = table.client_keys.values().find(|k| *k.id == *l.api_key_id);
                    let connection = table.by_id.get(&l.connection_id).filter(|c| c.enabled);
                    let reason = match (key, connection) {
                        (None, _) => EndReason::ManagedKeyRevoked,
                        (_, None) => EndReason::ConnectionIneligible,
                        (Some(k), Some(_)) if may_lease(k).is_err() || !k.allows(&l.connection_id) => {
                            EndReason::AuthorizationChanged
                        }
                        _ => return None,
                    };
                    Some((l.id, reason))
                })
                .collect()
        };
        for (id, reason) in ended {
            self.resilience.leases.end(id, reason, now).await.map_err(GatewayError::internal)?;
            tracing::info!(event = "lease.ended", lease = id, reason = reason.as_str());
        }
        Ok(())
    }
}
