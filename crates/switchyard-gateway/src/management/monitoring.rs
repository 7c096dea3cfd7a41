//! Health and request-log queries.

use std::collections::BTreeMap;

use switchyard_types::api::{
    ClaudeAccountView, HealthView, LogsQuery, ProviderHealthView, RequestLogEntryView,
};

use super::validate::Issues;
use super::{ManagementService, MgmtResult};
use crate::errors::GatewayError;
use crate::routability::{ConnectionFacts, derive};
use switchyard_types::ErrorCode;
use switchyard_types::requests::{RequestDetailView, RequestEntryView, RequestsQuery};
use switchyard_types::routability::{ConnectionRoutabilityView, RoutabilityState};

impl ManagementService {
    /// The basic health document: liveness and per-provider connection counts.
    pub async fn health(&self) -> MgmtResult<HealthView> {
        let table = self.routing.load();
        let mut providers: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
        for conn in table.by_id.values() {
            let entry = providers.entry(&*conn.provider).or_default();
            entry.0 += 1;
            entry.1 += u32::from(conn.enabled);
        }
        let inputs = self.routability_inputs();
        // From the routing snapshot, not the database: health answers (and says
        // `database: unavailable`) while a team's Postgres is away.
        let mut connections: Vec<_> = table.by_id.values().collect();
        connections.sort_by(|a, b| (a.priority, &a.id).cmp(&(b.priority, &b.id)));
        let statuses: Vec<ConnectionRoutabilityView> = connections
            .iter()
            .map(|r| ConnectionRoutabilityView {
                id: r.id.to_string(),
                name: r.name.clone(),
                provider: r.provider.to_string(),
                status: derive(
                    ConnectionFacts { id: &r.id, provider: &r.provider, enabled: r.enabled },
                    &inputs,
                ),
            })
            .collect();
        let team = self.control.team();
        Ok(HealthView {
            status: "ok".to_owned(),
            database: if team.is_none_or(|t| t.database_available()) { "ok" } else { "unavailable" }
                .to_owned(),
            database_backend: self.store.backend().as_str().to_owned(),
            replica: team.map(|t| t.origin().to_owned()),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            listen: self.listen.clone(),
            uptime_ms: self.started_at.elapsed().as_millis() as f64,
            breakers: self.resilience.engine.breakers(),
            // Switched-off connections are not "out of rotation": the tray counts the same.
            connections_out_of_rotation: statuses
                .iter()
                .filter(|c| !c.status.routable && c.status.state != RoutabilityState::Disabled)
                .count() as u32,
            connections: statuses,
            active_lockouts: self.resilience.engine.lockouts().len() as u32,
            claude_accounts: self
                .claude_wall
                .views(self.clock.now_wall())
                .into_iter()
                .map(|(connection, wall)| ClaudeAccountView { connection, wall })
                .collect(),
            providers: providers
                .into_iter()
                .map(|(p, (n, e))| ProviderHealthView {
                    provider: p.to_owned(),
                    connections: n,
                    enabled_connections: e,
                })
                .collect(),
        })
    }

    /// Recent attempts, newest first.
    pub async fn logs(&self, query: LogsQuery) -> MgmtResult<Vec<RequestLogEntryView>> {
        let mut issues = Issues::default();
        let limit = query.limit.unwrap_or(100);
        if !(1..=1000).contains(&limit) {
            issues.add("/limit", "must be between 1 and 1000");
        }
        if query.before_id.is_some_and(|b| !(b.is_finite() && b >= 0.0)) {
            issues.add("/beforeId", "must be a non-negative row id");
        }
        if !issues.is_empty() {
            return Err(GatewayError::validation(issues.0));
        }
        self.log.flush().await;
        Ok(self.store.list_attempts(limit, query.before_id.map(|b| b as i64)).await?)
    }

    /// `GET /api/requests`: client requests, newest first, filtered.
    pub async fn requests(&self, query: RequestsQuery) -> MgmtResult<Vec<RequestEntryView>> {
        let mut issues = Issues::default();
        if query.limit.is_some_and(|l| !(1..=1000).contains(&l)) {
            issues.add("/limit", "must be between 1 and 1000");
        }
        if let Some(status) = query.status.as_deref()
            && status != "ok"
            && status != "error"
            && !status.parse::<u16>().is_ok_and(|s| (100..=599).contains(&s))
        {
            issues.add("/status", "must be 'ok', 'error' or an HTTP status code");
        }
        if !issues.is_empty() {
            return Err(GatewayError::validation(issues.0));
        }
        self.log.flush().await;
        Ok(self.store.list_requests(&query).await?)
    }

    /// `GET /api/requests/{id}`: one request, its attempts and its route.
    pub async fn request_detail(&self, request_id: &str) -> MgmtResult<RequestDetailView> {
        self.log.flush().await;
        let (request, route) = self.store.get_request(request_id).await?.ok_or_else(|| {
            GatewayError::new(
                ErrorCode::NotFound,
                format!("request '{request_id}' is not in the log (never made, or pruned by retention)"),
            )
        })?;
        let attempts = self.store.list_attempts_of(request_id).await?;
        Ok(RequestDetailView { request, attempts, route })
    }
}
