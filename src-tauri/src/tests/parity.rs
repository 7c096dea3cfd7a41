//! IPC/REST parity (SPEC §1: two transports over one management service): every
//! IPC command, invoked on tauri's mock runtime against a real gateway, answers
//! what its REST twin answers over loopback HTTP: the same document on success,
//! the same `{code, message, issues}` on failure. A command missing from the table
//! fails the test, so a new command cannot skip its twin.

use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{MANAGEMENT_TOKEN, TestGateway, client_key_toml};
use switchyard_types::UnixMillis;
use tauri::test::{MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets};
use tauri::{App, WebviewWindow, WebviewWindowBuilder};

use crate::host::GatewayHost;

/// One command and its REST twin.
struct Case {
    cmd: &'static str,
    args: Value,
    method: Method,
    path: &'static str,
    body: Option<Value>,
    /// Fields that legitimately differ between two calls (elapsed time) or
    /// between the two objects a create pair makes.
    ignore: &'static [&'static str],
    /// Run before each transport's call, so a state-consuming command (a clear)
    /// meets the same state twice.
    prepare: Option<fn(&Harness)>,
}

fn case(cmd: &'static str, args: Value, method: Method, path: &'static str, body: Option<Value>) -> Case {
    Case { cmd, args, method, path, body, ignore: &[], prepare: None }
}

/// Cools `claude-a` (the fake answers 429 with `retry-after`); a no-op while it
/// is already cooling (the gateway then answers 503 itself).
fn cool_claude_a(h: &Harness) {
    let status = tauri::async_runtime::block_on(
        h.gateway
            .post("/v1/messages", &json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": []})),
    )
    .status();
    assert!(status == 429 || status == 503, "unexpected {status}");
}

struct Harness {
    _upstream: FakeUpstream,
    gateway: TestGateway,
    _app: App<MockRuntime>,
    webview: WebviewWindow<MockRuntime>,
    http: reqwest::Client,
}

impl Harness {
    fn start() -> Harness {
        let upstream = tauri::async_runtime::block_on(FakeUpstream::start(
            Reply::json(429, wire::anthropic_error("rate_limit_error", "slow down"))
                .with_header("retry-after", "30"),
        ));
        let config = format!(
            "{keys}\n[[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\nauth = \"oauth\"\n\
             access_token = \"oat-a\"\nbase_url = \"{url}\"\n[connections.provider_specific]\n\
             lowPriorityMode = false\n\n[[connections]]\nid = \"key-b\"\nprovider = \"openai\"\n\
             api_key = \"sk-b\"\nbase_url = \"{url}\"\n",
            keys = client_key_toml(),
            url = upstream.url()
        );
        let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
        let gateway =
            tauri::async_runtime::block_on(TestGateway::start_with(&config, move |c| c.clock = clock));
        let host = GatewayHost::default();
        host.attach(gateway.gateway().management().clone(), gateway.gateway().addr());
        let app = mock_builder()
            .manage(host)
            .invoke_handler(crate::specta_builder!(MockRuntime).invoke_handler())
            .build(mock_context(noop_assets()))
            .unwrap_or_else(|e| panic!("mock app: {e}"));
        let webview = WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .unwrap_or_else(|e| panic!("mock webview: {e}"));
        let http = reqwest::Client::builder().no_proxy().build().unwrap_or_else(|e| panic!("{e}"));
        let h = Harness { _upstream: upstream, gateway, _app: app, webview, http };
        // A real cooldown, so the cooldown and health documents are not empty.
        cool_claude_a(&h);
        h
    }

    fn ipc(&self, cmd: &str, args: &Value) -> Result<Value, Value> {
        let request = super::ipc_request(cmd, args.clone());
        get_ipc_response(&self.webview, request)
            .map(|body| body.deserialize::<Value>().unwrap_or_else(|e| panic!("{cmd}: {e}")))
    }

    fn rest(&self, method: &Method, path: &str, body: Option<&Value>) -> Result<Value, Value> {
        let mut req = self.http.request(method.clone(), self.gateway.url(path)).bearer_auth(MANAGEMENT_TOKEN);
        if let Some(b) = body {
            req = req.json(b);
        }
        tauri::async_runtime::block_on(async move {
            let response = req.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
            let status = response.status();
            let text = response.text().await.unwrap_or_default();
            let value: Value = if text.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).unwrap_or(Value::Null)
            };
            if status.is_success() { Ok(value) } else { Err(value["error"].clone()) }
        })
    }
}

/// Removes `fields` wherever they appear.
fn strip(mut v: Value, fields: &[&str]) -> Value {
    match &mut v {
        Value::Object(map) => {
            for f in fields {
                map.remove(*f);
            }
            for (_, child) in map.iter_mut() {
                *child = strip(child.take(), fields);
            }
        }
        Value::Array(items) => {
            for item in items.iter_mut() {
                *item = strip(item.take(), fields);
            }
        }
        _ => {}
    }
    v
}

fn combo() -> Value {
    json!({"name": "coding", "strategy": "priority",
           "targets": [{"model": "anthropic/claude-sonnet-4-6", "connection": null}]})
}

fn alias() -> Value {
    json!({"from": "fast", "to": "claude-sonnet-4-6"})
}

/// (Re)creates the combo a delete pair removes.
fn put_combo(h: &Harness) {
    assert!(h.rest(&Method::POST, "/api/combos", Some(&combo())).is_ok());
}

/// (Re)creates the alias a delete pair removes.
fn put_alias(h: &Harness) {
    assert!(h.rest(&Method::POST, "/api/aliases", Some(&alias())).is_ok());
}

fn cases() -> Vec<Case> {
    use Method as M;
    let claude_patch = json!({"providerSpecific": {"lowPriorityMode": true, "autoLimitReset": true}});
    let (combo, alias) = (combo(), alias());
    let new_conn = |id: &str| json!({"id": id, "provider": "openai", "authKind": "api_key", "apiKey": "sk-new", "baseUrl": "http://127.0.0.1:9"});
    vec![
        // Reads.
        case("connections_list", json!({}), M::GET, "/api/providers", None),
        case("connections_get", json!({"id": "claude-a"}), M::GET, "/api/providers/claude-a", None),
        case("connections_get", json!({"id": "ghost"}), M::GET, "/api/providers/ghost", None),
        case("keys_list", json!({}), M::GET, "/api/keys", None),
        case("combos_list", json!({}), M::GET, "/api/combos", None),
        case("aliases_list", json!({}), M::GET, "/api/aliases", None),
        Case {
            ignore: &["uptimeMs"],
            ..case("monitoring_health", json!({}), M::GET, "/api/monitoring/health", None)
        },
        case("monitoring_summary", json!({}), M::GET, "/api/monitoring/summary", None),
        case("logs_list", json!({"query": {"limit": 5}}), M::GET, "/api/logs?limit=5", None),
        case("logs_list", json!({"query": {"limit": 0}}), M::GET, "/api/logs?limit=0", None),
        case("rate_limits_get", json!({}), M::GET, "/api/rate-limits", None),
        case("sessions_list", json!({}), M::GET, "/api/sessions", None),
        case("leases_list", json!({}), M::GET, "/api/leases", None),
        case("requests_list", json!({"query": {"limit": 5}}), M::GET, "/api/requests?limit=5", None),
        case("requests_list", json!({"query": {"limit": 0}}), M::GET, "/api/requests?limit=0", None),
        case("request_get", json!({"requestId": "nope"}), M::GET, "/api/requests/nope", None),
        case("presets_list", json!({}), M::GET, "/api/presets", None),
        case("setup_list", json!({}), M::GET, "/api/setup", None),
        // Only unknown agents here: a real setup would edit this user's own files.
        case("setup_apply", json!({"agent": "nope"}), M::POST, "/api/setup/nope", None),
        case("setup_undo", json!({"agent": "nope", "force": false}), M::DELETE, "/api/setup/nope", None),
        case(
            "connections_import_claude_login",
            json!({"request": {"path": "/nonexistent/.credentials.json"}}),
            M::POST,
            "/api/providers/import-claude-login",
            Some(json!({"path": "/nonexistent/.credentials.json"})),
        ),
        case("resilience_get", json!({}), M::GET, "/api/resilience", None),
        case("resilience_defaults", json!({}), M::GET, "/api/resilience/defaults", None),
        case("resilience_ranges", json!({}), M::GET, "/api/resilience/ranges", None),
        case("breakers_list", json!({}), M::GET, "/api/resilience/breakers", None),
        case("cooldowns_list", json!({"provider": null}), M::GET, "/api/resilience/cooldowns", None),
        case(
            "cooldowns_list",
            json!({"provider": "anthropic"}),
            M::GET,
            "/api/resilience/cooldowns?provider=anthropic",
            None,
        ),
        case("lockouts_list", json!({}), M::GET, "/api/resilience/model-cooldowns", None),
        case("model_lockout_get", json!({}), M::GET, "/api/resilience/model-lockout", None),
        case("gateway_status", json!({}), M::GET, "/api/gateway", None),
        // Rejected input: the same code, message and issue paths.
        case(
            "resilience_patch",
            json!({"patch": {"modelLockout": {"baseCooldownMs": 1}}}),
            M::PATCH,
            "/api/resilience",
            Some(json!({"modelLockout": {"baseCooldownMs": 1}})),
        ),
        case(
            "resilience_patch",
            json!({"patch": {"bogus": 1}}),
            M::PATCH,
            "/api/resilience",
            Some(json!({"bogus": 1})),
        ),
        case(
            "model_lockout_patch",
            json!({"patch": {"maxBackoffSteps": 99}}),
            M::PATCH,
            "/api/resilience/model-lockout",
            Some(json!({"maxBackoffSteps": 99})),
        ),
        case(
            "connections_create",
            json!({"request": {"provider": "BAD!", "authKind": "api_key"}}),
            M::POST,
            "/api/providers",
            Some(json!({"provider": "BAD!", "authKind": "api_key"})),
        ),
        case(
            "connections_update",
            json!({"id": "claude-a", "patch": {"priority": "high"}}),
            M::PATCH,
            "/api/providers/claude-a",
            Some(json!({"priority": "high"})),
        ),
        case(
            "cooldowns_clear",
            json!({"request": {}}),
            M::POST,
            "/api/resilience/cooldowns",
            Some(json!({})),
        ),
        case(
            "lockouts_clear",
            json!({"request": {"provider": "anthropic", "model": "none"}}),
            M::DELETE,
            "/api/resilience/model-cooldowns",
            Some(json!({"provider": "anthropic", "model": "none"})),
        ),
        case(
            "breakers_reset",
            json!({"request": {"provider": "ghost"}}),
            M::POST,
            "/api/resilience/reset",
            Some(json!({"provider": "ghost"})),
        ),
        case("keys_delete", json!({"id": "ghost"}), M::DELETE, "/api/keys/ghost", None),
        // Idempotent writes: the second call (REST) answers what the first (IPC) did.
        Case {
            prepare: Some(cool_claude_a),
            ..case(
                "cooldowns_clear",
                json!({"request": {"all": true}}),
                M::POST,
                "/api/resilience/cooldowns",
                Some(json!({"all": true})),
            )
        },
        case(
            "connections_update",
            json!({"id": "claude-a", "patch": claude_patch.clone()}),
            M::PATCH,
            "/api/providers/claude-a",
            Some(claude_patch),
        ),
        case(
            "resilience_patch",
            json!({"patch": {"sessionAffinityTtlMs": 60000}}),
            M::PATCH,
            "/api/resilience",
            Some(json!({"sessionAffinityTtlMs": 60000})),
        ),
        case(
            "model_lockout_patch",
            json!({"patch": {"enabled": true}}),
            M::PATCH,
            "/api/resilience/model-lockout",
            Some(json!({"enabled": true})),
        ),
        case("breakers_reset", json!({"request": {}}), M::POST, "/api/resilience/reset", Some(json!({}))),
        case(
            "rate_limits_set",
            json!({"toggle": {"connectionId": "claude-a", "enabled": true}}),
            M::POST,
            "/api/rate-limits",
            Some(json!({"connectionId": "claude-a", "enabled": true})),
        ),
        case(
            "rate_limits_set",
            json!({"toggle": {"connectionId": "ghost", "enabled": true}}),
            M::POST,
            "/api/rate-limits",
            Some(json!({"connectionId": "ghost", "enabled": true})),
        ),
        case("sessions_clear", json!({"clear": {}}), M::DELETE, "/api/sessions", Some(json!({}))),
        case("leases_release", json!({"id": 999}), M::DELETE, "/api/leases/999", None),
        case(
            "sessions_clear",
            json!({"clear": {"connection": "claude-a"}}),
            M::DELETE,
            "/api/sessions",
            Some(json!({"connection": "claude-a"})),
        ),
        case(
            "gateway_set_paused",
            json!({"request": {"paused": true}}),
            M::POST,
            "/api/gateway/pause",
            Some(json!({"paused": true})),
        ),
        case(
            "gateway_set_paused",
            json!({"request": {"paused": false}}),
            M::POST,
            "/api/gateway/pause",
            Some(json!({"paused": false})),
        ),
        case("combos_put", json!({"combo": combo.clone()}), M::POST, "/api/combos", Some(combo)),
        case("aliases_put", json!({"alias": alias.clone()}), M::POST, "/api/aliases", Some(alias)),
        Case {
            ignore: &["latencyMs"],
            ..case("connections_test", json!({"id": "key-b"}), M::POST, "/api/providers/key-b/test", None)
        },
        // Create / delete pairs: IPC and REST each make (or remove) their own object.
        Case {
            ignore: &["id", "name"],
            ..case(
                "connections_create",
                json!({"request": new_conn("made-by-ipc")}),
                M::POST,
                "/api/providers",
                Some(new_conn("made-by-rest")),
            )
        },
        Case {
            ignore: &["id", "name", "secret"],
            ..case(
                "keys_create",
                json!({"request": {"name": "ipc-key"}}),
                M::POST,
                "/api/keys",
                Some(json!({"name": "rest-key"})),
            )
        },
        Case {
            prepare: Some(put_combo),
            ..case("combos_delete", json!({"name": "coding"}), M::DELETE, "/api/combos/coding", None)
        },
        Case {
            prepare: Some(put_alias),
            ..case("aliases_delete", json!({"from": "fast"}), M::DELETE, "/api/aliases/fast", None)
        },
    ]
}

#[test]
fn every_ipc_command_answers_what_its_rest_twin_answers() {
    let h = Harness::start();
    let mut covered = std::collections::BTreeSet::new();
    for c in cases() {
        covered.insert(c.cmd);
        let prepare = |h: &Harness| c.prepare.iter().for_each(|p| p(h));
        prepare(&h);
        let ipc = h.ipc(c.cmd, &c.args);
        prepare(&h);
        let rest = h.rest(&c.method, c.path, c.body.as_ref());
        if c.ignore.contains(&"id") {
            assert!(ipc.is_ok() && rest.is_ok(), "{}: a create pair must succeed: {ipc:?} / {rest:?}", c.cmd);
        }
        // Each side's write moves the document's version on, so after IPC then REST
        // wrote, the versions differ by design; reads must agree on them.
        let written = if c.method == Method::GET { Vec::new() } else { vec!["version"] };
        let ignore: Vec<&str> = c.ignore.iter().copied().chain(written).collect();
        let (ipc, rest) = match (ipc, rest) {
            (Ok(a), Ok(b)) => (Ok(strip(a, &ignore)), Ok(strip(b, &ignore))),
            (Err(a), Err(b)) => (Err(a), Err(b)),
            (a, b) => panic!(
                "{} vs {} {}: one failed, one did not\nIPC:  {a:?}\nREST: {b:?}",
                c.cmd, c.method, c.path
            ),
        };
        assert_eq!(ipc, rest, "{} ≠ {} {}", c.cmd, c.method, c.path);
    }
    // A write made to a version that is no longer stored is refused over IPC as over
    // REST (`If-Match`, tests/tests/concurrency.rs), and changes nothing.
    let stale = h.ipc(
        "connections_update",
        &json!({"id": "claude-a", "patch": {"priority": 9}, "expectedVersion": 1}),
    );
    assert_eq!(stale.map_err(|e| e["code"].clone()), Err(json!("precondition_failed")));
    let now = h.ipc("connections_get", &json!({"id": "claude-a"})).unwrap_or_default();
    assert_ne!(now["priority"], 9);
    let current = now["version"].clone();
    let fresh = h.ipc(
        "connections_update",
        &json!({"id": "claude-a", "patch": {"priority": 9}, "expectedVersion": current}),
    );
    assert_eq!(fresh.map(|v| v["priority"].clone()), Ok(json!(9)));
    // Deletes of what the create pair made: both answer null (REST 204).
    assert_eq!(h.ipc("connections_delete", &json!({"id": "made-by-ipc"})), Ok(Value::Null));
    assert_eq!(h.rest(&Method::DELETE, "/api/providers/made-by-rest", None), Ok(Value::Null));
    covered.insert("connections_delete");
    let keys = h.ipc("keys_list", &json!({})).unwrap_or_default();
    let id_of = |name: &str| {
        keys.as_array()
            .and_then(|k| k.iter().find(|k| k["name"] == name))
            .map(|k| k["id"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(h.ipc("keys_delete", &json!({"id": id_of("ipc-key")})), Ok(Value::Null));
    let rest_key = id_of("rest-key");
    assert_eq!(h.rest(&Method::DELETE, &format!("/api/keys/{rest_key}"), None), Ok(Value::Null));

    // Every management command of the bindings is in the table.
    let bindings = std::fs::read_to_string(super::bindings::bindings_path()).unwrap_or_default();
    let missing: Vec<&str> = bindings
        .split("TAURI_INVOKE(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .filter(|name| !name.starts_with("desktop_") && !covered.contains(name))
        .collect();
    assert!(!bindings.is_empty(), "bindings file missing");
    assert!(missing.is_empty(), "commands without a parity case: {missing:?}");
}
