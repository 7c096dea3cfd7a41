//! Every settings field has an effect (issue 11): this test walks every leaf of the
//! settings document (the ranges table, plus the switches the table does not bound)
//! and fails for any field that no behavioural test names.
//!
//! A test names a field with a marker comment right above its test attribute:
//!
//! ```text
//! // settings-test: /providerBreaker/oauth/resetTimeoutMs
//! #[tokio::test]
//! async fn ...
//! ```
//!
//! A marker may name several paths (separated by spaces) when the test changes each of
//! them away from its default and asserts what that changes. A marker that is not
//! followed by a test, or that names a path the document does not have, fails too, so
//! markers cannot drift from the code they vouch for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use switchyard_types::ResilienceSettings;
use switchyard_types::settings::SettingsRanges;

const MARKER: &str = "settings-test:";
/// How many lines below a marker its test attribute may be (doc comments between).
const MARKER_REACH: usize = 12;

/// Every leaf path of the document, with `*` for list items.
fn document_leaves() -> BTreeSet<String> {
    let mut leaves = BTreeSet::new();
    for row in SettingsRanges::current().fields {
        leaves.insert(row.path);
    }
    let doc = serde_json::to_value(ResilienceSettings::default()).unwrap_or_else(|e| panic!("{e}"));
    walk(&doc, String::new(), &mut leaves);
    leaves
}

fn walk(value: &Value, path: String, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                walk(child, format!("{path}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, format!("{path}/*"), out);
            }
        }
        _ => {
            out.insert(path);
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !matches!(name.as_ref(), "target" | "node_modules" | "dist" | ".git") {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") || name.ends_with(".mjs") || name.ends_with(".test.ts") {
            out.push(path);
        }
    }
}

fn is_test_attribute(line: &str) -> bool {
    let l = line.trim_start();
    l.starts_with("#[test]")
        || l.starts_with("#[tokio::test")
        || l.starts_with("test(")
        || l.starts_with("it(")
        || l.starts_with("fn ") && l.contains("proptest")
}

/// path → the places that name it.
fn markers(problems: &mut Vec<String>) -> BTreeMap<String, Vec<String>> {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["crates", "tests", "src-tauri", "ui"] {
        sources(&root.join(dir), &mut files);
    }
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(named) = line.trim_start().strip_prefix("// ").and_then(|l| l.strip_prefix(MARKER))
            else {
                continue;
            };
            let place = format!("{}:{}", file.strip_prefix(&root).unwrap_or(&file).display(), i + 1);
            // Directly above: only comments, attributes and more markers may stand
            // between the marker and its test's attribute.
            let reach = &lines[i + 1..lines.len().min(i + 1 + MARKER_REACH)];
            let above_test = reach
                .iter()
                .map(|l| l.trim_start())
                .take_while(|l| l.starts_with("//") || l.starts_with("#[") || is_test_attribute(l))
                .any(is_test_attribute);
            if !above_test {
                problems.push(format!("{place}: marker is not directly above a test"));
            }
            for path in named.split_whitespace() {
                found.entry(path.to_owned()).or_default().push(place.clone());
            }
        }
    }
    found
}

#[test]
fn every_settings_field_is_named_by_a_behavioural_test() {
    let leaves = document_leaves();
    assert!(leaves.len() > 40, "the walk found only {} leaves", leaves.len());
    let mut problems = Vec::new();
    let named = markers(&mut problems);
    for path in named.keys() {
        if !leaves.contains(path) {
            problems.push(format!("{path}: named by {:?} but not a settings field", named[path]));
        }
    }
    let missing: Vec<&String> = leaves.iter().filter(|p| !named.contains_key(*p)).collect();
    for path in &missing {
        problems.push(format!("{path}: no behavioural test names it (`// {MARKER} {path}`)"));
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_walk_sees_switches_list_items_and_bounded_fields() {
    let leaves = document_leaves();
    for path in [
        "/providerCooldown/enabled",
        "/modelLockout/errorCodes/*",
        "/providerBreaker/apikey/cooldownByKind/timeout",
        "/providerErrorRules/*/scope",
        "/streamRecovery/throughputWatchdog/enabled",
        "/sessionAffinityTtlMs",
    ] {
        assert!(leaves.contains(path), "{path} missing from {leaves:?}");
    }
}
