//! Dry-run validation of a whole import (config file): every item is checked
//! against the routing table as it would be after the import, before anything is
//! written, so a bad file is rejected as a whole.

use std::collections::HashMap;

use switchyard_types::api::ValidationIssue;
use switchyard_types::api::{AliasView, ApiKeyCreateRequest, ComboView, ConnectionCreateRequest};

use super::ManagementService;
use super::api_keys::key_issues;
use super::routes::{alias_issues, combo_issues};
use crate::routing::RoutingTable;
use crate::store::ConnectionRecord;

fn describe(section: &str, i: usize, label: &str, issues: &[ValidationIssue]) -> Vec<String> {
    issues
        .iter()
        .map(|x| {
            let field = x.path.trim_start_matches('/').replace('/', ".");
            format!("{section}[{i}] ({label}) {field}: {}", x.message)
        })
        .collect()
}

impl ManagementService {
    /// Problems an import of these items would hit, one line each; empty when the
    /// import would succeed.
    pub async fn dry_run_import(
        &self,
        connections: &[ConnectionCreateRequest],
        keys: &[ApiKeyCreateRequest],
        combos: &[ComboView],
        aliases: &[AliasView],
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let existing = match self.store.list_connections().await {
            Ok(list) => list,
            Err(e) => return vec![format!("cannot read the store: {e}")],
        };
        let mut merged: HashMap<String, ConnectionRecord> =
            existing.into_iter().map(|r| (r.id.clone(), r)).collect();
        for (i, req) in connections.iter().enumerate() {
            let label = req.id.clone().unwrap_or_default();
            // As the import will: a masked base URL keeps the stored credentials.
            let stored = req.id.as_ref().and_then(|id| merged.get(id)).cloned();
            match self.record_from_request(req.clone(), stored.as_ref()) {
                Ok(record) => {
                    merged.insert(record.id.clone(), record);
                }
                Err(e) => problems.extend(describe("connections", i, &label, &e.issues)),
            }
        }
        let mut records: Vec<ConnectionRecord> = merged.into_values().collect();
        records.sort_by(|a, b| (a.priority, &a.id).cmp(&(b.priority, &b.id)));
        // A throwaway flow registry: a dry run must not touch the live gates.
        let flows = switchyard_resilience::flow::FlowControl::default();
        let mut table = RoutingTable::build(&records, &[], &[], &[], Default::default(), &flows);
        if let Ok(stored) = self.store.list_aliases().await {
            for a in stored {
                table.aliases.insert(a.alias, a.target);
            }
        }
        for (i, k) in keys.iter().enumerate() {
            problems.extend(describe("api_keys", i, &k.name, &key_issues(k, &table).0));
        }
        // Combos are checked against connections, then registered for the aliases.
        for (i, c) in combos.iter().enumerate() {
            problems.extend(describe("combos", i, &c.name, &combo_issues(c, &table).0));
        }
        for c in combos {
            table.aliases.remove(&c.name);
            table.combos.insert(
                c.name.clone(),
                crate::routing::Combo { strategy: c.strategy, targets: c.targets.clone() },
            );
        }
        for (i, a) in aliases.iter().enumerate() {
            table.aliases.remove(&a.from);
            problems.extend(describe("aliases", i, &a.from, &alias_issues(a, &table).0));
        }
        problems
    }
}
