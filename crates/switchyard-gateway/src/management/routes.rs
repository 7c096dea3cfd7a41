//! Combo and alias operations. Targets must resolve against the current routing
//! table when written, so a typo is caught at once rather than at request time.

use switchyard_types::ErrorCode;
use switchyard_types::api::{AliasView, ComboView, Versioned};

use super::validate::{self, Issues};
use super::{ManagementService, MgmtResult, check_version, versioned};
use crate::errors::GatewayError;
use crate::routing::RoutingTable;
use crate::store::{AliasRecord, ComboRecord};

impl ManagementService {
    /// All combos, each with its version.
    pub async fn list_combos(&self) -> MgmtResult<Vec<Versioned<ComboView>>> {
        Ok(self.store.list_combos().await?.into_iter().map(combo_view).collect())
    }

    /// Creates or replaces a combo by name (`412` when `expected` is not the stored
    /// version; a combo that does not exist is at version 0).
    pub async fn put_combo(&self, combo: ComboView, expected: Option<u64>) -> MgmtResult<Put<ComboView>> {
        let _writing = self.writing().await;
        let issues = combo_issues(&combo, &self.routing.load());
        if !issues.is_empty() {
            return Err(GatewayError::validation(issues.0));
        }
        let existing = self.store.list_combos().await?;
        let current = existing.iter().find(|c| c.name == combo.name);
        check_version(&format!("combo '{}'", combo.name), expected, current.map_or(0, |c| c.version))?;
        if let Some(c) = current.filter(|c| c.strategy == combo.strategy && c.targets == combo.targets) {
            return Ok(Put { changed: false, doc: versioned(combo, c.version) });
        }
        let now = self.clock.now_wall();
        let record = ComboRecord {
            name: combo.name.clone(),
            strategy: combo.strategy,
            targets: combo.targets.clone(),
            created_at: current.map_or(now, |c| c.created_at),
            updated_at: now,
            version: current.map_or(1, |c| c.version + 1),
        };
        self.store.put_combo(&record, current.map(|c| c.version)).await?;
        self.reload().await?;
        Ok(Put { changed: true, doc: versioned(combo, record.version) })
    }

    /// Deletes a combo (`412` when `expected` is not the stored version).
    pub async fn delete_combo(&self, name: &str, expected: Option<u64>) -> MgmtResult<()> {
        let _writing = self.writing().await;
        if expected.is_some() {
            let combos = self.store.list_combos().await?;
            let current = combos.iter().find(|c| c.name == name).map_or(0, |c| c.version);
            check_version(&format!("combo '{name}'"), expected, current)?;
        }
        let table = self.routing.load();
        let mut referrers: Vec<&str> = table
            .combos
            .iter()
            .filter(|(other, c)| other.as_str() != name && c.targets.iter().any(|t| t.model == name))
            .map(|(other, _)| other.as_str())
            .collect();
        if !referrers.is_empty() {
            referrers.sort_unstable();
            return Err(GatewayError::new(
                ErrorCode::Conflict,
                format!(
                    "combo '{name}' is a target of combo(s) {}: remove it there first",
                    referrers.join(", ")
                ),
            ));
        }
        if !self.store.delete_combo(name).await? {
            return Err(GatewayError::new(ErrorCode::NotFound, format!("combo '{name}' does not exist")));
        }
        self.reload().await
    }

    /// All aliases, each with its version.
    pub async fn list_aliases(&self) -> MgmtResult<Vec<Versioned<AliasView>>> {
        Ok(self
            .store
            .list_aliases()
            .await?
            .into_iter()
            .map(|a| versioned(AliasView { from: a.alias, to: a.target }, a.version))
            .collect())
    }

    /// Creates or replaces an alias (`412` when `expected` is not the stored version;
    /// an alias that does not exist is at version 0).
    pub async fn put_alias(&self, alias: AliasView, expected: Option<u64>) -> MgmtResult<Put<AliasView>> {
        let _writing = self.writing().await;
        let issues = alias_issues(&alias, &self.routing.load());
        if !issues.is_empty() {
            return Err(GatewayError::validation(issues.0));
        }
        let aliases = self.store.list_aliases().await?;
        let current = aliases.iter().find(|a| a.alias == alias.from);
        check_version(&format!("alias '{}'", alias.from), expected, current.map_or(0, |a| a.version))?;
        if let Some(a) = current.filter(|a| a.target == alias.to) {
            return Ok(Put { changed: false, doc: versioned(alias, a.version) });
        }
        let record = AliasRecord {
            alias: alias.from.clone(),
            target: alias.to.clone(),
            version: current.map_or(1, |a| a.version + 1),
        };
        self.store.put_alias(&record, self.clock.now_wall(), current.map(|a| a.version)).await?;
        self.reload().await?;
        Ok(Put { changed: true, doc: versioned(alias, record.version) })
    }

    /// Deletes an alias (`412` when `expected` is not the stored version).
    pub async fn delete_alias(&self, from: &str, expected: Option<u64>) -> MgmtResult<()> {
        let _writing = self.writing().await;
        if expected.is_some() {
            let aliases = self.store.list_aliases().await?;
            let current = aliases.iter().find(|a| a.alias == from).map_or(0, |a| a.version);
            check_version(&format!("alias '{from}'"), expected, current)?;
        }
        if !self.store.delete_alias(from).await? {
            return Err(GatewayError::new(ErrorCode::NotFound, format!("alias '{from}' does not exist")));
        }
        self.reload().await
    }
}

/// What a create-or-replace did: whether anything changed, and the document now.
#[derive(Debug, Clone)]
pub struct Put<T> {
    /// False when the stored document already held exactly this.
    pub changed: bool,
    /// The document and its version.
    pub doc: Versioned<T>,
}

fn combo_view(c: ComboRecord) -> Versioned<ComboView> {
    versioned(ComboView { name: c.name, strategy: c.strategy, targets: c.targets }, c.version)
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
        if t.weight.is_some_and(|w| w > 1000) {
            issues.add(format!("/targets/{i}/weight"), "must be between 0 and 1000");
        }
        if t.model == combo.name || table.combo_reaches(std::slice::from_ref(&t.model), &combo.name) {
            issues.add(
                format!("/targets/{i}/model"),
                format!("'{}' leads back to combo '{}': combos may not form a cycle", t.model, combo.name),
            );
            continue;
        }
        if table.combos.contains_key(&t.model) {
            if t.connection.is_some() {
                issues.add(
                    format!("/targets/{i}/connection"),
                    format!("'{}' is a combo: pin connections in its own targets", t.model),
                );
            }
            continue;
        }
        if !table.target_resolves(&t.model) {
            issues.add(
                format!("/targets/{i}/model"),
                format!("'{}' matches no combo, provider/model, catalogue model or known prefix", t.model),
            );
        }
        if let Some(conn) = &t.connection {
            match table.by_id.get(conn) {
                None => issues
                    .add(format!("/targets/{i}/connection"), format!("connection '{conn}' does not exist")),
                Some(c) if !table.target_providers(&t.model).contains(&&*c.provider) => issues.add(
                    format!("/targets/{i}/connection"),
                    format!(
                        "connection '{conn}' belongs to provider '{}', which does not serve '{}'",
                        c.provider, t.model
                    ),
                ),
                Some(_) => {}
            }
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
