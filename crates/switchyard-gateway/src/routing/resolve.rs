//! Resolution of a client's `model` into ordered candidates (connection + upstream
//! model), following SPEC §2: combo name, alias, `provider/model`, bare model id by
//! catalogue, bare model id by known prefix; otherwise a 404 listing what is routable.
//!
//! Pure over the routing snapshot: no I/O, no clock. Fail-closed: an ambiguous or
//! unknown name is an error, never a guess.

use std::collections::HashSet;
use std::sync::Arc;

use switchyard_types::api::ComboStrategy;
use switchyard_types::{ClientFormat, ErrorCode};

use super::connection::Connection;
use super::table::{ClientKey, RoutingTable};
use crate::errors::GatewayError;

/// How the client's model name was matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteKind {
    /// `provider/model` or a bare model id.
    Direct,
    /// A combo, by name.
    Combo(String),
    /// A user alias, by name.
    Alias(String),
}

/// One connection to try, with the model id to send it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The connection.
    pub connection: Arc<Connection>,
    /// The upstream model id.
    pub model: Arc<str>,
    /// The combo target's weight (`weighted`; 1 outside combos).
    pub weight: u32,
}

impl Candidate {
    /// The engine's shared view of it, for an attempt to keep: clones of the
    /// routing snapshot's ids, not copies.
    pub fn shared_target(&self) -> switchyard_resilience::SharedTarget {
        switchyard_resilience::SharedTarget {
            provider: Arc::clone(&self.connection.provider),
            connection: Arc::clone(&self.connection.id),
            model: Arc::clone(&self.model),
        }
    }
}

/// The engine judges the plan's own candidates: no per-request copy of a pool's
/// provider, connection and model names.
impl switchyard_resilience::Candidate for Candidate {
    fn provider(&self) -> &str {
        &self.connection.provider
    }
    fn connection(&self) -> &str {
        &self.connection.id
    }
    fn model(&self) -> &str {
        &self.model
    }
}

/// The ordered attempt plan for one request.
#[derive(Debug, Clone)]
pub struct CandidatePlan {
    /// How the name matched.
    pub kind: RouteKind,
    /// The combo whose strategy orders the candidates (also through an alias).
    pub combo: Option<String>,
    /// How the candidates are ordered per request (`priority` outside combos).
    pub strategy: ComboStrategy,
    /// How many targets the name resolved to (before connections were chosen).
    pub targets: usize,
    /// Candidates in listed order; never empty.
    pub candidates: Vec<Candidate>,
    /// Whether some candidate needs the request translated from the client's
    /// format (the body is then checked for translatability up front).
    pub translates: bool,
    /// How the name matched, in the words of a request's route trace; with
    /// [`CandidatePlan::strategy_name`], worded once per plan (the memo keeps
    /// plans) rather than per request.
    pub resolved_as: Arc<str>,
    /// [`CandidatePlan::strategy`]'s name.
    pub strategy_name: Arc<str>,
}

/// A resolved target before connections are chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    provider: String,
    model: String,
    connection: Option<String>,
    weight: u32,
}

/// How deep combos may nest (a combo naming a combo naming a combo ...).
pub const MAX_COMBO_DEPTH: usize = 8;

/// Bare model ids owned by a well-known provider, by prefix.
fn provider_for_prefix(model: &str) -> Option<&'static str> {
    const OPENAI_PREFIXES: [&str; 6] = ["gpt-", "chatgpt-", "codex-", "o1", "o3", "o4"];
    if model.starts_with("claude-") {
        Some("anthropic")
    } else if OPENAI_PREFIXES.iter().any(|p| model.starts_with(p)) {
        Some("openai")
    } else {
        None
    }
}

impl RoutingTable {
    /// Resolves a name that is not a combo or alias: `provider/model`, or a bare id.
    fn resolve_plain(&self, name: &str) -> Option<Vec<Target>> {
        if let Some((provider, model)) = name.split_once('/')
            && !model.is_empty()
            && self.by_provider.contains_key(provider)
        {
            let target = Target {
                provider: provider.to_owned(),
                model: model.to_owned(),
                connection: None,
                weight: 1,
            };
            return Some(vec![target]);
        }
        if let Some(providers) = self.catalogue.get(name) {
            let targets = providers
                .iter()
                .map(|p| Target { provider: p.clone(), model: name.to_owned(), connection: None, weight: 1 })
                .collect();
            return Some(targets);
        }
        let provider = provider_for_prefix(name)?;
        self.by_provider.contains_key(provider).then(|| {
            vec![Target {
                provider: provider.to_owned(),
                model: name.to_owned(),
                connection: None,
                weight: 1,
            }]
        })
    }

    /// Resolves a combo's or alias's destination. A target naming another combo is
    /// replaced by that combo's targets, in its listed order (the outer combo's
    /// strategy orders them all); nesting stops at [`MAX_COMBO_DEPTH`] and at a
    /// combo already being expanded (validation refuses cycles; this guards a
    /// database edited by hand).
    fn resolve_combo(&self, name: &str) -> Option<Vec<Target>> {
        self.combos.get(name)?;
        let mut targets = Vec::new();
        let mut path = vec![name];
        self.expand_combo(name, &mut path, &mut targets);
        Some(targets)
    }

    fn expand_combo<'a>(&'a self, name: &str, path: &mut Vec<&'a str>, out: &mut Vec<Target>) {
        let Some(combo) = self.combos.get(name) else { return };
        for t in &combo.targets {
            let weight = t.weight.unwrap_or(1);
            if let Some((inner, _)) = self.combos.get_key_value(t.model.as_str()) {
                if path.len() < MAX_COMBO_DEPTH && !path.contains(&inner.as_str()) {
                    path.push(inner);
                    self.expand_combo(inner, path, out);
                    path.pop();
                }
                continue;
            }
            if let Some(resolved) = self.resolve_plain(&t.model) {
                for mut r in resolved {
                    r.connection = t.connection.clone();
                    r.weight = weight;
                    out.push(r);
                }
            }
        }
    }

    /// Whether targets named `from_targets` lead to the combo `target`, directly or
    /// through other combos (a cycle, when `target` is the combo being saved).
    pub fn combo_reaches(&self, from_targets: &[String], target: &str) -> bool {
        let mut stack: Vec<&str> = from_targets.iter().map(String::as_str).collect();
        let mut seen: Vec<&str> = Vec::new();
        while let Some(name) = stack.pop() {
            if name == target {
                return true;
            }
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            if let Some(combo) = self.combos.get(name) {
                stack.extend(combo.targets.iter().map(|t| t.model.as_str()));
            }
        }
        false
    }

    /// The providers a combo target or alias destination resolves to (empty when it
    /// resolves to nothing).
    pub fn target_providers(&self, name: &str) -> Vec<&str> {
        self.resolve_plain(name)
            .map(|targets| {
                targets
                    .iter()
                    .filter_map(|t| self.by_provider.get_key_value(&t.provider))
                    .map(|(p, _)| p.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether a combo target or alias destination names something routable now.
    pub fn target_resolves(&self, name: &str) -> bool {
        self.resolve_plain(name).is_some()
    }

    fn resolve_targets(&self, name: &str) -> Option<(RouteKind, Vec<Target>)> {
        if let Some(targets) = self.resolve_combo(name) {
            return Some((RouteKind::Combo(name.to_owned()), targets));
        }
        if let Some(to) = self.aliases.get(name) {
            let targets = self.resolve_combo(to).or_else(|| self.resolve_plain(to))?;
            return Some((RouteKind::Alias(name.to_owned()), targets));
        }
        self.resolve_plain(name).map(|t| (RouteKind::Direct, t))
    }

    /// The candidate plan for `model` as sent by a client of `format`, restricted to
    /// what `key` may use.
    ///
    /// A name's plan is built once per routing snapshot and format and shared by
    /// every request after (the snapshot is rebuilt on any change, and its memo
    /// with it), so a request pays a map lookup, not a pass over the connections;
    /// only a key limited to some connections filters a copy.
    pub fn plan(
        &self,
        model: &str,
        format: ClientFormat,
        key: Option<&ClientKey>,
    ) -> Result<Arc<CandidatePlan>, GatewayError> {
        let full = match self.plans.get(model, format) {
            Some(plan) => plan,
            None => {
                let plan = Arc::new(self.build_plan(model, format)?);
                self.plans.insert(model, format, plan.clone());
                plan
            }
        };
        let Some(key) = key.filter(|k| !k.allowed_connections.is_empty()) else { return Ok(full) };
        let candidates: Vec<Candidate> =
            full.candidates.iter().filter(|c| key.allows(&c.connection.id)).cloned().collect();
        if candidates.is_empty() {
            return Err(self.nothing_executable(model, full.targets, true));
        }
        let translates = candidates.iter().any(|c| !c.connection.api_format.serves_natively(format));
        Ok(Arc::new(CandidatePlan { candidates, translates, ..CandidatePlan::clone(&full) }))
    }

    /// [`RoutingTable::plan`] for every key: the enabled connections of every
    /// target, de-duplicated in one pass, each target's in priority order.
    fn build_plan(&self, model: &str, format: ClientFormat) -> Result<CandidatePlan, GatewayError> {
        let Some((kind, targets)) = self.resolve_targets(model) else {
            return Err(self.unknown_model(model));
        };
        let combo = match &kind {
            RouteKind::Combo(name) => Some(name.clone()),
            RouteKind::Alias(name) => {
                self.aliases.get(name).filter(|to| self.combos.contains_key(*to)).cloned()
            }
            RouteKind::Direct => None,
        };
        let strategy =
            combo.as_ref().and_then(|c| self.combos.get(c)).map_or(ComboStrategy::Priority, |c| c.strategy);
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        for target in &targets {
            let conns = self.by_provider.get(&target.provider).map(Vec::as_slice).unwrap_or(&[]);
            let first = candidates.len();
            // One copy of the model name for all of this target's candidates.
            let model: Arc<str> = Arc::from(target.model.as_str());
            for conn in conns {
                if !conn.enabled || target.connection.as_ref().is_some_and(|pin| pin.as_str() != &*conn.id) {
                    continue;
                }
                if seen.insert((&*conn.id, target.model.as_str())) {
                    candidates.push(Candidate {
                        connection: conn.clone(),
                        model: model.clone(),
                        weight: target.weight,
                    });
                }
            }
            // Format is a cost, not a filter: within a priority level, connections
            // that speak the client's format go before those needing translation.
            candidates[first..]
                .sort_by_key(|c| (c.connection.priority, !c.connection.api_format.serves_natively(format)));
        }
        if candidates.is_empty() {
            return Err(self.nothing_executable(model, targets.len(), false));
        }
        let translates = candidates.iter().any(|c| !c.connection.api_format.serves_natively(format));
        let resolved_as: Arc<str> = match &kind {
            RouteKind::Combo(name) => format!("combo '{name}'").into(),
            RouteKind::Alias(name) => format!("alias '{name}'").into(),
            RouteKind::Direct => "provider/model or catalogue".into(),
        };
        Ok(CandidatePlan {
            kind,
            combo,
            strategy,
            targets: targets.len(),
            candidates,
            translates,
            resolved_as,
            strategy_name: strategy.as_str().into(),
        })
    }

    fn nothing_executable(&self, model: &str, targets: usize, by_key: bool) -> GatewayError {
        GatewayError::new(
            ErrorCode::NoExecutableTargets,
            format!(
                "model '{model}' resolves to {targets} target(s), but no enabled connection may \
                 serve them{}",
                if by_key { " with this API key's allowed connections" } else { "" }
            ),
        )
    }

    fn unknown_model(&self, model: &str) -> GatewayError {
        let mut providers: Vec<&str> = self.by_provider.keys().map(String::as_str).collect();
        providers.sort_unstable();
        let routable: Vec<String> = self.routable_models().into_iter().map(|(id, _)| id).take(40).collect();
        let message = if providers.is_empty() {
            format!("model '{model}' is not routable: no connections are configured")
        } else {
            format!(
                "model '{model}' is not routable. Send 'provider/model' with a provider of \
                 [{}], or one of: [{}]",
                providers.join(", "),
                routable.join(", ")
            )
        };
        GatewayError::new(ErrorCode::ModelNotFound, message)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchyard_types::api::{ComboStrategy, ComboTarget};
    use switchyard_types::{AuthKind, UnixMillis};

    use super::*;
    use crate::store::{AliasRecord, ComboRecord, ConnectionRecord};
    use switchyard_types::ApiFormat;

    fn conn(id: &str, provider: &str, format: ApiFormat, priority: i32, models: &[&str]) -> ConnectionRecord {
        ConnectionRecord {
            id: id.into(),
            provider: provider.into(),
            api_format: format,
            name: id.into(),
            auth_kind: AuthKind::ApiKey,
            api_key: Some("k".into()),
            access_token: None,
            refresh_token: None,
            token_expires_at: None,
            base_url: Some("http://127.0.0.1:1".into()),
            priority,
            enabled: true,
            max_concurrent: None,
            rate_limit_overrides: Default::default(),
            rate_limit_protection: None,
            models: models.iter().map(|m| (*m).to_owned()).collect(),
            provider_specific: json!({}),
            created_at: UnixMillis(0),
            updated_at: UnixMillis(0),
            version: 1,
        }
    }

    fn table() -> RoutingTable {
        let conns = vec![
            conn("a1", "anthropic", ApiFormat::Anthropic, 1, &[]),
            conn("a2", "anthropic", ApiFormat::Anthropic, 2, &[]),
            conn("g1", "glm", ApiFormat::Openai, 1, &["glm-4.6", "glm-4.5-air"]),
            conn("o1", "openai", ApiFormat::Openai, 1, &[]),
        ];
        let combos = vec![ComboRecord {
            name: "coding".into(),
            strategy: ComboStrategy::Priority,
            targets: vec![
                ComboTarget { model: "anthropic/claude-sonnet-4-6".into(), connection: None, weight: None },
                ComboTarget { model: "glm/glm-4.6".into(), connection: None, weight: None },
            ],
            created_at: UnixMillis(0),
            updated_at: UnixMillis(0),
            version: 1,
        }];
        let aliases =
            vec![AliasRecord { alias: "fast".into(), target: "glm/glm-4.5-air".into(), version: 1 }];
        RoutingTable::build(&conns, &[], &combos, &aliases, Default::default(), &Default::default())
    }

    fn ids(plan: &CandidatePlan) -> Vec<String> {
        plan.candidates.iter().map(|c| format!("{}:{}", c.connection.id, c.model)).collect()
    }

    #[test]
    fn provider_slash_model_uses_connections_in_priority_order() {
        let plan = table().plan("anthropic/claude-x", ClientFormat::AnthropicMessages, None);
        assert_eq!(ids(&plan.unwrap_or_else(|e| panic!("{e:?}"))), ["a1:claude-x", "a2:claude-x"]);
    }

    #[test]
    fn bare_ids_route_by_catalogue_then_prefix() {
        let t = table();
        let glm = t.plan("glm-4.6", ClientFormat::OpenaiChat, None).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(ids(&glm), ["g1:glm-4.6"]);
        let claude = t.plan("claude-opus-4-6", ClientFormat::AnthropicMessages, None);
        assert_eq!(
            ids(&claude.unwrap_or_else(|e| panic!("{e:?}"))),
            ["a1:claude-opus-4-6", "a2:claude-opus-4-6"]
        );
        let gpt = t.plan("gpt-5.5", ClientFormat::OpenaiResponses, None);
        assert_eq!(ids(&gpt.unwrap_or_else(|e| panic!("{e:?}"))), ["o1:gpt-5.5"]);
    }

    #[test]
    fn combos_keep_target_order_across_formats() {
        // The user's chain is the order, whatever format each target speaks.
        let t = table();
        let plan =
            t.plan("coding", ClientFormat::AnthropicMessages, None).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(plan.kind, RouteKind::Combo("coding".into()));
        assert_eq!(ids(&plan), ["a1:claude-sonnet-4-6", "a2:claude-sonnet-4-6", "g1:glm-4.6"]);
        let plan = t.plan("coding", ClientFormat::OpenaiChat, None).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(ids(&plan), ["a1:claude-sonnet-4-6", "a2:claude-sonnet-4-6", "g1:glm-4.6"]);
    }

    #[test]
    fn aliases_route_to_their_target() {
        let plan = table().plan("fast", ClientFormat::OpenaiChat, None).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(plan.kind, RouteKind::Alias("fast".into()));
        assert_eq!(ids(&plan), ["g1:glm-4.5-air"]);
    }

    #[test]
    fn unknown_model_is_404_listing_routable_names() {
        let err = table().plan("mystery", ClientFormat::OpenaiChat, None).err();
        let err = err.unwrap_or_else(|| panic!("expected an error"));
        assert_eq!(err.code, ErrorCode::ModelNotFound);
        assert!(err.message.contains("coding") && err.message.contains("glm/glm-4.6"));
        assert!(err.message.contains("anthropic, glm, openai"));
    }

    #[test]
    fn format_is_a_cost_not_a_filter() {
        // Another format's connection serves (translated)...
        let plan = table().plan("glm/glm-4.6", ClientFormat::AnthropicMessages, None);
        let plan = plan.unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(plan.candidates.iter().map(|c| &*c.connection.id).collect::<Vec<_>>(), ["g1"]);
        // ...but within a priority level the client's own format goes first, and
        // priority still outranks format.
        let t = RoutingTable::build(
            &[
                conn("x-chat", "mix", ApiFormat::OpenaiChat, 1, &[]),
                conn("x-msgs", "mix", ApiFormat::Anthropic, 1, &[]),
                conn("x-early", "mix", ApiFormat::OpenaiResponses, 0, &[]),
            ],
            &[],
            &[],
            &[],
            Default::default(),
            &Default::default(),
        );
        let order = |f| {
            t.plan("mix/m", f, None)
                .map(|p| p.candidates.iter().map(|c| c.connection.id.to_string()).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        assert_eq!(order(ClientFormat::AnthropicMessages), ["x-early", "x-msgs", "x-chat"]);
        assert_eq!(order(ClientFormat::OpenaiChat), ["x-early", "x-chat", "x-msgs"]);
    }

    #[test]
    fn allowed_connections_restrict_candidates() {
        let key = ClientKey { id: "k".into(), scopes: vec![], allowed_connections: vec!["a2".into()] };
        let t = table();
        let plan = t.plan("anthropic/claude-x", ClientFormat::AnthropicMessages, Some(&key));
        assert_eq!(ids(&plan.unwrap_or_else(|e| panic!("{e:?}"))), ["a2:claude-x"]);
        let err = t.plan("glm-4.6", ClientFormat::OpenaiChat, Some(&key)).err();
        assert_eq!(err.map(|e| e.code), Some(ErrorCode::NoExecutableTargets));
    }
}
