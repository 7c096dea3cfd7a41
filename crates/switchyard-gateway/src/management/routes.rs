//! Combo and alias operations. Targets must resolve against the current routing
//! table when written, so a typo is caught at once rather than at request time.

use switchyard_types::ErrorCode;
use switchyard_types::api::{AliasView, ComboView};

use super::validate::{self, Issues};
use super::{ManagementService, MgmtResult};
use crate::errors::GatewayError;
use crate::routing::RoutingTable;
use crate::store::{AliasRecord, ComboRecord};

impl ManagementService {
    /// All combos.
    pub async fn list_combos(&self) -> MgmtResult<Vec<ComboView>> {
        Ok(self
            .store
            .list_combos()
            .await?
            .into_iter()
            .map(|c| ComboView { name: c.name, strategy: c.strategy, targets: c.targets })
            .collect())
    }

    /// Creates or replaces a combo by name; returns whether anything changed.
    pub async fn put_combo(&self, combo: ComboView) -> MgmtResult<bool> {
        let issues = combo_issues(&combo, &self.routing.load());
        if !issues.is_empty() {
            return Err(GatewayError::validation(issues.0));
        }
        let existing = self.store.list_combos().await?;
        let current = existing.iter().find(|c| c.name == combo.name);
        if current.is_some_and(|c| c.strategy == combo.strategy && c.targets == combo.targets) {
            return Ok(false);
        }
        let now = self.clock.now_wall();
        let record = ComboRecord {
            name: combo.name,
            strategy: combo.strategy,
            targets: combo.targets,
            created_at: current.map_or(now, |c| c.created_at),
            updated_at: now,
        };
        self.store.put_combo(&record).await?;
        self.reload().await?;
        Ok(true)
    }

    /// Deletes a combo.
    pub async fn delete_combo(&self, name: &str) -> MgmtResult<()> {
        if !self.store.delete_combo(name).await? {
            return Err(GatewayError::new(ErrorCode::NotFound, format!("combo '{name}' does not exist")));
        }
        self.reload().await
    }

    /// All aliases.
    pub async fn list_aliases(&self) -> MgmtResult<Vec<AliasView>> {
        Ok(self
            .store
            .list_aliases()
            .await?
            .into_iter()
            .map(|a| AliasView { from: a.alias, to: a.target })
            .collect())
    }

    /// Creates or replaces an alias; returns whether anything changed.
    pub async fn put_alias(&self, alias: AliasView) -> MgmtResult<bool> {
        let table = self.routing.load();
        let issues = alias_issues(&alias, &table);
        if !issues.is_empty() {
            return Err(GatewayError::validation(issues.0));
        }
        if table.aliases.get(&alias.from) == Some(&alias.to) {
            return Ok(false);
        }
        let record = AliasRecord { alias: alias.from, target: alias.to };
        self.store.put_alias(&record, self.clock.now_wall()).await?;
        self.reload().await?;
        Ok(true)
    }

    /// Deletes an alias.
    pub async fn delete_alias(&self, from: &str) -> MgmtResult<()> {
        if !self.store.delete_alias(from).await? {
            return Err(GatewayError::new(ErrorCode::NotFound, format!("alias '{from}' does not exist")));
        }
        self.reload().await
    }
}

/// Every problem with a combo, checked against `table`.
pub fn combo_issues(combo: &ComboView, table: &RoutingTable) -> Issues {
    let mut issues = Issues::default();
    validate::check_route_name(&mut issues, "/name", &combo.name);
    if table.aliases.contains_key(&combo.name) {
        issues.add("/name", format!("'{}' is already an alias", combo.name));
    }
    if combo.targets.is_empty() || combo.targets.len() > 64 {
        issues.add("/targets", "must list 1–64 targets");
    }
    for (i, t) in combo.targets.iter().enumerate() {
        if !table.target_resolves(&t.model) {
            issues.add(
                format!("/targets/{i}/model"),
                format!("'{}' matches no provider/model, catalogue model or known prefix", t.model),
            );
        }
        if let Some(conn) = &t.connection
            && !table.by_id.contains_key(conn)
        {
            issues.add(format!("/targets/{i}/connection"), format!("connection '{conn}' does not exist"));
        }
    }
    issues
}

/// Every problem with an alias, checked against `table`.
pub fn alias_issues(alias: &AliasView, table: &RoutingTable) -> Issues {
    let mut issues = Issues::default();
    validate::check_route_name(&mut issues, "/from", &alias.from);
    if table.combos.contains_key(&alias.from) {
        issues.add("/from", format!("'{}' is already a combo", alias.from));
    }
    if !table.combos.contains_key(&alias.to) && !table.target_resolves(&alias.to) {
        issues.add(
            "/to",
            format!("'{}' matches no combo, provider/model, catalogue model or known prefix", alias.to),
        );
    }
    issues
}
