//! Strict shapes and one error envelope (issue 10, items 7 and 9): management
//! documents must be JSON objects; inference bodies are strict JSON (numbers in
//! range, valid UTF-8 without lone surrogates, bounded nesting) checked before
//! anything is forwarded; ids with dot-segments are refused; a wrong method answers
//! 405 and an oversized body 413, each with `x-switchyard-error` and a JSON body in
//! the route's format. Every refusal names its problem.

use reqwest::Method;
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{CLIENT_KEY, TestGateway, client_key_toml, json as body_json};

fn config(up: &FakeUpstream) -> String {
    format!(
        "{}\n[[connections]]\nid = \"a\"\nprovider = \"anthropic\"\napi_key = \"sk-ant-original\"\nbase_url = \"{}\"\n",
        client_key_toml(),
        up.url()
    )
}

/// Sends `body` raw to a management route and returns status, error code and message.
async fn mgmt_raw(
    gw: &TestGateway,
    method: Method,
    path: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let response = gw
        .mgmt(method, path)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = response.status().as_u16();
    let header = response.headers().get("x-switchyard-error").cloned();
    let body = body_json(response).await;
    assert_eq!(header.as_ref().and_then(|h| h.to_str().ok()), body["error"]["code"].as_str(), "{path}");
    (status, body)
}

#[tokio::test]
async fn management_documents_must_be_json_objects() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let gw = TestGateway::start(&config(&up)).await;
    let cases = [
        (Method::POST, "/api/gateway/pause", "[true]", "an array"),
        (Method::PATCH, "/api/providers/a", "[null,null,null,\"sk-replaced\"]", "an array"),
        (Method::PATCH, "/api/resilience", "[]", "an array"),
        (Method::POST, "/api/resilience/reset", "[1]", "an array"),
        (Method::PATCH, "/api/resilience/model-lockout", "true", "a boolean"),
        (Method::POST, "/api/keys", "\"ide\"", "a string"),
        (Method::POST, "/api/combos", "null", "null"),
        (Method::POST, "/api/resilience/cooldowns", "42", "a number"),
    ];
    for (method, path, body, kind) in cases {
        let (status, doc) = mgmt_raw(&gw, method.clone(), path, body).await;
        assert_eq!(status, 400, "{method} {path} {body}");
        assert_eq!(doc["error"]["code"], "validation_failed", "{path}");
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("must be a JSON object, not {kind}")), "{path}: {message}");
    }
    // Nothing changed: routing is not paused and the key was not replaced.
    assert_eq!(gw.mgmt_json("/api/gateway").await["paused"], false);
    let response = gw.post("/v1/messages", &json!({"model": "claude-x", "messages": []})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        up.last_request().and_then(|r| r.header("x-api-key").map(str::to_owned)),
        Some("sk-ant-original".into())
    );
}

#[tokio::test]
async fn invalid_json_never_reaches_an_upstream() {
    let mut up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    up.expect_calls(0);
    let gw = TestGateway::start(&config(&up)).await;
    let deep = format!("{{\"model\":\"claude-x\",\"x\":{}1{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: [(&str, Vec<u8>, &str); 6] = [
        ("1e99999", br#"{"model":"claude-x","temperature":1e99999}"#.to_vec(), "number out of range"),
        ("-1e400 in an array", br#"{"model":"claude-x","x":[-1e400]}"#.to_vec(), "number out of range"),
        (
            "lone surrogate",
            br#"{"model":"claude-x","messages":[{"content":"\ud800"}]}"#.to_vec(),
            "surrogate",
        ),
        ("lone surrogate in a key", br#"{"model":"claude-x","\udfff":1}"#.to_vec(), "surrogate"),
        (
            "raw \\xff",
            b"{\"model\":\"claude-x\",\"messages\":[{\"content\":\"\xff\"}]}".to_vec(),
            "invalid unicode",
        ),
        ("100,000-deep nesting", deep.into_bytes(), "nesting deeper than 100 levels"),
    ];
    for (case, body, problem) in cases {
        let response = gw
            .http
            .post(gw.url("/v1/messages"))
            .bearer_auth(CLIENT_KEY)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(response.status(), 400, "{case}");
        assert_eq!(response.headers()["x-switchyard-error"], "invalid_json", "{case}");
        let doc = body_json(response).await;
        assert_eq!(doc["type"], "error", "{case}: Anthropic envelope");
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("not valid JSON") && message.contains(problem), "{case}: {message}");
    }
}

#[tokio::test]
async fn ids_and_names_with_dot_segments_are_refused() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let gw = TestGateway::start(&config(&up)).await;
    for id in [".", ".."] {
        let (status, doc) = mgmt_raw(
            &gw,
            Method::POST,
            "/api/providers",
            json!({"id": id, "provider": "anthropic", "authKind": "api_key", "apiKey": "sk-x"}).to_string(),
        )
        .await;
        assert_eq!(status, 400, "id {id}");
        assert_eq!(doc["error"]["issues"][0]["path"], "/id");
        assert!(doc["error"]["message"].as_str().unwrap_or_default().contains("'..'"), "{doc}");
    }
    let (status, doc) = mgmt_raw(
        &gw,
        Method::POST,
        "/api/combos",
        json!({"name": "..", "strategy": "priority", "targets": [{"model": "anthropic/claude-x"}]})
            .to_string(),
    )
    .await;
    assert_eq!((status, doc["error"]["issues"][0]["path"].clone()), (400, json!("/name")), "{doc}");
    let (status, doc) = mgmt_raw(
        &gw,
        Method::POST,
        "/api/aliases",
        json!({"from": "a/../b", "to": "anthropic/claude-x"}).to_string(),
    )
    .await;
    assert_eq!((status, doc["error"]["issues"][0]["path"].clone()), (400, json!("/from")), "{doc}");
    let list = gw.mgmt_json("/api/providers").await;
    assert_eq!(list.as_array().map(Vec::len), Some(1), "no dot-segment connection was created");
}

#[tokio::test]
async fn a_wrong_method_gets_405_with_a_json_body_in_the_routes_format() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let ui = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(ui.path().join("index.html"), "<html></html>").unwrap_or_else(|e| panic!("{e}"));
    let ui_dir = ui.path().to_owned();
    let gw = TestGateway::start_with(&config(&up), move |c| c.ui_dir = Some(ui_dir)).await;
    let cases = [
        (Method::GET, "/v1/messages", "anthropic"),
        (Method::PUT, "/v1/chat/completions", "openai"),
        (Method::DELETE, "/v1/responses", "openai"),
        (Method::POST, "/v1/models", "openai"),
        (Method::DELETE, "/api/resilience", "management"),
        (Method::PUT, "/api/providers/a", "management"),
        (Method::POST, "/ui/index.html", "management"),
    ];
    for (method, path, format) in cases {
        let response = gw.mgmt(method.clone(), path).send().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), 405, "{method} {path}");
        assert_eq!(response.headers()["x-switchyard-error"], "method_not_allowed", "{method} {path}");
        assert!(response.headers().contains_key("allow"), "{method} {path}: no Allow header");
        let doc = body_json(response).await;
        assert_eq!(doc["error"]["code"], "method_not_allowed", "{path}");
        assert!(doc["error"]["message"].as_str().unwrap_or_default().contains(method.as_str()), "{doc}");
        match format {
            "anthropic" => assert_eq!(doc["type"], "error", "{path}"),
            "openai" => assert_eq!(doc["error"]["type"], "invalid_request_error", "{path}"),
            _ => assert!(doc["error"].get("issues").is_some(), "{path}: management envelope {doc}"),
        }
    }
}

#[tokio::test]
async fn near_misses_of_the_inference_paths_are_not_routes() {
    // The connection dispatches a POST to the four inference paths itself (not
    // through the router, `http::App`): only the exact paths, as the router matched
    // them. A trailing slash, another case or a longer path is a 404 in the format
    // of the path, and reaches no upstream; the exact path still forwards.
    let mut up = FakeUpstream::start(Reply::json(200, json!({"id": "msg_1"}))).await;
    up.expect_calls(1);
    let gw = TestGateway::start(&config(&up)).await;
    let body = json!({"model": "claude-x", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]});
    for path in [
        "/v1/messages/",
        "/V1/messages",
        "/v1/Messages",
        "/v1/chat/completions/",
        "/v1/responses/x",
        "/v1/messages/count_tokens/",
        "//v1/messages",
    ] {
        let response = gw.post(path, &body).await;
        assert_eq!(response.status(), 404, "{path}");
        assert_eq!(response.headers()["x-switchyard-error"], "not_found", "{path}");
    }
    let response = gw.post("/v1/messages?beta=true", &body).await;
    assert_eq!(response.status(), 200, "the exact path with a query forwards");
    assert_eq!(body_json(response).await["id"], "msg_1");
}

#[tokio::test]
async fn every_oversized_body_gets_413_with_one_limit_and_a_json_body() {
    let mut up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    up.expect_calls(0);
    let gw = TestGateway::start_with(&config(&up), |c| c.proxy.max_body_bytes = 4096).await;
    let document = format!("{{\"pad\":\"{}\"}}", "x".repeat(1024 * 1024));
    for (method, path) in [
        (Method::PATCH, "/api/resilience"),
        (Method::POST, "/api/resilience/reset"),
        (Method::POST, "/api/providers"),
        (Method::PATCH, "/api/resilience/model-lockout"),
    ] {
        for chunked in [false, true] {
            let body = if chunked {
                let chunks = vec![Ok::<_, std::io::Error>(document.clone())];
                reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
            } else {
                reqwest::Body::from(document.clone())
            };
            let (status, doc) = mgmt_raw(&gw, method.clone(), path, body).await;
            assert_eq!(status, 413, "{method} {path} chunked={chunked}");
            assert_eq!(doc["error"]["code"], "body_too_large");
            let message = doc["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("limit of 1048576 bytes"), "{path}: {message}");
        }
    }
    let response = gw
        .http
        .post(gw.url("/v1/chat/completions"))
        .bearer_auth(CLIENT_KEY)
        .header("content-type", "application/json")
        .body(format!("{{\"model\":\"gpt-5\",\"pad\":\"{}\"}}", "x".repeat(5000)))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 413);
    assert_eq!(response.headers()["x-switchyard-error"], "body_too_large");
    let doc = body_json(response).await;
    assert!(doc["error"]["message"].as_str().unwrap_or_default().contains("limit of 4096 bytes"), "{doc}");
}

#[tokio::test]
async fn framework_rejections_get_the_envelope_too() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let gw = TestGateway::start(&config(&up)).await;
    let response = gw
        .mgmt(Method::GET, "/api/resilience/cooldowns?provider=a&provider=b")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["x-switchyard-error"], "invalid_request");
    let doc = body_json(response).await;
    assert!(doc["error"]["message"].as_str().unwrap_or_default().contains("provider"), "{doc}");
    let missing = gw.http.get(gw.url("/nowhere")).send().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(missing.status(), 404);
    assert_eq!(missing.headers()["x-switchyard-error"], "not_found");
}

#[tokio::test]
async fn a_client_still_uploading_an_oversized_body_reads_its_413_not_a_reset() {
    // The gateway answers before reading the whole body (at once when the declared
    // length is over the limit, at the limit when it is chunked); the client is still
    // writing 16 MB, more than the sockets hold. Its write completes and it reads the
    // 413: the connection closes gracefully (`conn/linger.rs`) instead of with a reset
    // that fails the write and can take the answer with it.
    let mut up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    up.expect_calls(0);
    let gw = TestGateway::start_with(&config(&up), |c| c.proxy.max_body_bytes = 4096).await;
    let addr = gw.gateway().addr();
    let body = format!("{{\"model\":\"claude-sonnet-4-6\",\"pad\":\"{}\"}}", "x".repeat(16 * 1024 * 1024));
    for chunked in [false, true] {
        let framing = if chunked {
            "transfer-encoding: chunked".to_owned()
        } else {
            format!("content-length: {}", body.len())
        };
        let mut request = format!(
            "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: {CLIENT_KEY}\r\n\
             content-type: application/json\r\n{framing}\r\n\r\n"
        )
        .into_bytes();
        if chunked {
            request.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
            request.extend_from_slice(body.as_bytes());
            request.extend_from_slice(b"\r\n0\r\n\r\n");
        } else {
            request.extend_from_slice(body.as_bytes());
        }
        let answer = switchyard_tests::raw_exchange(addr, &request).await;
        assert_eq!(answer.status, 413, "chunked={chunked}: {}", answer.head);
        assert_eq!(answer.header("x-switchyard-error"), Some("body_too_large"), "chunked={chunked}");
        assert!(answer.body.contains("limit of 4096 bytes"), "chunked={chunked}: {}", answer.body);
    }
}
