//! Lenient reading of a settings document that is not fresh user input (DESIGN §10,
//! "persisted shapes are not input shapes"). A stored document written by a newer
//! version may name fields this version does not know (after a downgrade), and one
//! edited by hand may hold a value of the wrong type: each costs only its own field,
//! never the rest of the user's settings.
//!
//! How: the strict patch parser runs on the document; its error names one JSON
//! pointer, that value is removed and the parse repeated until the rest reads. Every
//! removal is reported as an [`UnreadableField`], with its path in the document as
//! given (list indices are not shifted by earlier removals). Ranges are not judged
//! here: the values that read are clamped or validated later, by their own path.
//!
//! Two callers: stored documents (log each removal, keep the rest: fail-open) and the
//! config file (reject on any removal, but name every bad field, not only the first).
//! A document whose root is not an object reads as nothing.

use serde_json::Value;
use serde_path_to_error::{Path, Segment};

use super::ResilienceSettingsPatch;
use crate::api::ValidationIssue;

/// Why a field was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnreadableKind {
    /// A key the schema does not have (e.g. written by a newer version).
    UnknownField,
    /// A known key whose value has the wrong type or shape.
    BadValue,
}

/// One value the lenient reading removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableField {
    /// JSON pointer in the document as given.
    pub path: String,
    /// Unknown key or bad value.
    pub kind: UnreadableKind,
    /// The strict parser's message (same text `PATCH /api/resilience` answers).
    pub message: String,
}

impl From<UnreadableField> for ValidationIssue {
    fn from(f: UnreadableField) -> ValidationIssue {
        ValidationIssue { path: f.path, message: f.message }
    }
}

/// One step of a path: an object key, a list index, or a step that cannot be
/// followed in a `Value` (an enum variant, or a position serde did not name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Key(String),
    Index(usize),
    Opaque(String),
}

pub(crate) fn steps(path: &Path) -> Vec<Step> {
    path.iter()
        .map(|segment| match segment {
            Segment::Seq { index } => Step::Index(*index),
            Segment::Map { key } => Step::Key(key.clone()),
            Segment::Enum { variant } => Step::Opaque(variant.clone()),
            Segment::Unknown => Step::Opaque("?".to_owned()),
        })
        .collect()
}

/// `/a/0/b`, with `~` and `/` in keys escaped (RFC 6901).
pub(crate) fn pointer(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        out.push('/');
        match step {
            Step::Key(k) | Step::Opaque(k) => out.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

/// List items removed so far, per list (the list's path, then the removed items'
/// indices in the document as given, ascending).
type Removals = Vec<(Vec<Step>, Vec<usize>)>;

/// Reads `doc` as a [`ResilienceSettingsPatch`], removing every value the strict
/// parser rejects. Returns the patch of what remains (`None` when the root itself is
/// unreadable) and one entry per removed value, in document order.
pub fn parse_patch_lenient(doc: &Value) -> (Option<ResilienceSettingsPatch>, Vec<UnreadableField>) {
    if !doc.is_object() {
        let message = "the settings document must be a JSON object".to_owned();
        return (
            None,
            vec![UnreadableField { path: String::new(), kind: UnreadableKind::BadValue, message }],
        );
    }
    let mut doc = doc.clone();
    let mut unreadable = Vec::new();
    let mut removals: Removals = Vec::new();
    // Every pass removes one value, so the passes are bounded by the value count.
    for _ in 0..=value_count(&doc) {
        let err = match serde_path_to_error::deserialize::<_, ResilienceSettingsPatch>(&doc) {
            Ok(patch) => return (Some(patch), unreadable),
            Err(err) => err,
        };
        let mut at = steps(err.path());
        if let Some(opaque) = at.iter().position(|s| matches!(s, Step::Opaque(_))) {
            at.truncate(opaque);
        }
        let message = err.into_inner().to_string();
        let kind = if message.starts_with("unknown field") {
            UnreadableKind::UnknownField
        } else {
            UnreadableKind::BadValue
        };
        unreadable.push(UnreadableField { path: pointer(&as_given(&at, &removals)), kind, message });
        if !remove(&mut doc, &at, &mut removals) {
            break;
        }
    }
    (None, unreadable)
}

fn value_count(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(value_count).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(value_count).sum::<usize>(),
        _ => 1,
    }
}

/// `at` (a path in the document after the removals) as a path in the document as
/// given: each list index moves past the items removed before it.
fn as_given(at: &[Step], removals: &Removals) -> Vec<Step> {
    let mut out = Vec::with_capacity(at.len());
    for (depth, step) in at.iter().enumerate() {
        let given = match step {
            Step::Index(i) => {
                let removed = removals.iter().find(|(list, _)| list.as_slice() == &at[..depth]);
                let mut index = *i;
                for r in removed.map(|(_, r)| r.as_slice()).unwrap_or_default() {
                    if *r <= index {
                        index += 1;
                    }
                }
                Step::Index(index)
            }
            other => other.clone(),
        };
        out.push(given);
    }
    out
}

/// Removes the value at `at`; false when there is nothing to remove (the root, or a
/// path that does not resolve), which ends the reading.
fn remove(doc: &mut Value, at: &[Step], removals: &mut Removals) -> bool {
    let Some((last, parent)) = at.split_last() else { return false };
    let mut node = doc;
    for step in parent {
        let next = match (step, node) {
            (Step::Key(k), Value::Object(map)) => map.get_mut(k),
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        let Some(next) = next else { return false };
        node = next;
    }
    match (last, node) {
        (Step::Key(k), Value::Object(map)) => map.remove(k).is_some(),
        (Step::Index(i), Value::Array(items)) if *i < items.len() => {
            let given = match as_given(at, removals).last() {
                Some(Step::Index(g)) => *g,
                _ => *i,
            };
            items.remove(*i);
            match removals.iter_mut().find(|(list, _)| list.as_slice() == parent) {
                Some((_, removed)) => {
                    let at = removed.partition_point(|r| *r < given);
                    removed.insert(at, given);
                }
                None => removals.push((parent.to_vec(), vec![given])),
            }
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::settings::{ResilienceSettings, parse_patch};

    fn read(doc: Value) -> (ResilienceSettings, Vec<(String, UnreadableKind)>) {
        let (patch, removed) = parse_patch_lenient(&doc);
        let mut s = ResilienceSettings::default();
        s.merge(patch.unwrap_or_else(|| panic!("unreadable: {removed:?}")));
        (s, removed.into_iter().map(|f| (f.path, f.kind)).collect())
    }

    #[test]
    fn a_clean_document_reads_exactly_as_the_strict_parser_reads_it() {
        let mut doc = serde_json::to_value(ResilienceSettings::default()).unwrap_or_default();
        doc["modelLockout"]["enabled"] = json!(true);
        let strict = parse_patch(doc.to_string().as_bytes()).unwrap_or_else(|i| panic!("{i:?}"));
        let (lenient, removed) = parse_patch_lenient(&doc);
        assert_eq!(lenient, Some(strict));
        assert!(removed.is_empty());
    }

    #[test]
    fn unknown_fields_at_any_depth_are_removed_and_every_known_value_kept() {
        let (s, removed) = read(json!({
            "futureGroup": {"x": 1},
            "modelLockout": {"enabled": true, "jitter": 0.2, "baseCooldownMs": 60000},
            "providerBreaker": {"oauth": {"failureThreshold": 20, "cooldownByKind": {"overload": 5000, "timeout": 9000}}},
            "providerErrorRules": [
                {"provider": "glm", "match": "quota", "scope": "connection", "priority": 3},
            ],
            "sessionAffinityTtlMs": 5000,
        }));
        assert_eq!(
            removed,
            vec![
                ("/futureGroup".to_owned(), UnreadableKind::UnknownField),
                ("/modelLockout/jitter".to_owned(), UnreadableKind::UnknownField),
                ("/providerBreaker/oauth/cooldownByKind/overload".to_owned(), UnreadableKind::UnknownField),
                ("/providerErrorRules/0/priority".to_owned(), UnreadableKind::UnknownField),
            ]
        );
        assert!(s.model_lockout.enabled);
        assert_eq!(s.model_lockout.base_cooldown_ms, 60_000);
        assert_eq!(s.provider_breaker.oauth.failure_threshold, 20);
        assert_eq!(s.provider_breaker.oauth.cooldown_by_kind.timeout, Some(9000));
        assert_eq!(s.provider_error_rules.len(), 1);
        assert_eq!(s.session_affinity_ttl_ms, 5000);
    }

    #[test]
    fn a_value_of_the_wrong_type_costs_only_that_value() {
        let (s, removed) = read(json!({
            "modelLockout": {"enabled": true, "errorCodes": [429, "x", 503]},
            "requestQueue": {"maxQueueDepth": 7, "maxWaitMs": "soon"},
            "streamRecovery": "off",
        }));
        assert_eq!(
            removed,
            vec![
                ("/modelLockout/errorCodes/1".to_owned(), UnreadableKind::BadValue),
                ("/requestQueue/maxWaitMs".to_owned(), UnreadableKind::BadValue),
                ("/streamRecovery".to_owned(), UnreadableKind::BadValue),
            ]
        );
        assert_eq!(s.request_queue.max_queue_depth, 7);
        assert_eq!(s.request_queue.max_wait_ms, ResilienceSettings::default().request_queue.max_wait_ms);
        assert_eq!(s.model_lockout.error_codes, vec![429, 503]);
        assert!(s.model_lockout.enabled);
    }

    #[test]
    fn removed_list_items_are_reported_at_their_index_in_the_given_document() {
        let rule = |provider: &str| json!({"provider": provider, "match": "quota", "scope": "connection"});
        let (s, removed) = read(json!({
            "providerErrorRules": [
                rule("a"),
                {"provider": "b", "match": "quota", "scope": "account"},
                {"provider": "c", "match": "quota"},
                rule("d"),
                {"provider": "e", "match": "quota", "scope": "model", "cooldownMs": -1},
            ],
        }));
        let paths: Vec<&str> = removed.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "/providerErrorRules/1/scope",
                "/providerErrorRules/1",
                "/providerErrorRules/2",
                "/providerErrorRules/4/cooldownMs",
            ]
        );
        let providers: Vec<&str> = s.provider_error_rules.iter().map(|r| r.provider.as_str()).collect();
        assert_eq!(providers, vec!["a", "d", "e"]);
    }

    #[test]
    fn a_root_that_is_not_an_object_reads_as_nothing() {
        for doc in [json!("settings"), json!([1, 2]), json!(7)] {
            let (patch, removed) = parse_patch_lenient(&doc);
            assert_eq!(patch, None);
            assert_eq!(removed.len(), 1);
            assert_eq!(removed[0].path, "");
        }
        assert_eq!(parse_patch_lenient(&json!({})), (Some(ResilienceSettingsPatch::default()), Vec::new()));
    }

    #[test]
    fn keys_are_escaped_in_pointers() {
        let (_, removed) = read(json!({"a/b~c": 1}));
        assert_eq!(removed, vec![("/a~1b~0c".to_owned(), UnreadableKind::UnknownField)]);
    }

    /// JSON trees whose keys are mostly the schema's own, so the reading meets every
    /// kind of error at every depth.
    fn documents() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        const KEYS: &[&str] = &[
            "modelLockout",
            "enabled",
            "errorCodes",
            "baseCooldownMs",
            "providerBreaker",
            "oauth",
            "cooldownByKind",
            "timeout",
            "providerErrorRules",
            "provider",
            "match",
            "scope",
            "streamRecovery",
            "throughputWatchdog",
            "bogus",
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-2i64..70_000).prop_map(Value::from),
            proptest::sample::select(vec!["model", "x", ""]).prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(proptest::sample::select(KEYS), inner, 0..5)
                    .prop_map(|m| { Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()) }),
            ]
        })
    }

    proptest::proptest! {
        /// Whatever is stored, the reading ends without panicking, reports a path for
        /// every removal, and what it keeps parses strictly.
        #[test]
        fn any_document_reads_and_the_rest_is_strictly_valid(doc in documents()) {
            let (patch, removed) = parse_patch_lenient(&doc);
            if let Some(patch) = patch {
                let again = serde_json::to_vec(&patch).unwrap_or_default();
                proptest::prop_assert!(parse_patch(&again).is_ok());
                proptest::prop_assert!(removed.iter().all(|f| f.path.starts_with('/')));
            }
        }
    }
}
