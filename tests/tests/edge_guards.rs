//! The edge guards (issue 10, items 2 and 8): a web page cannot spend the user's
//! credit (foreign `Origin` or `Sec-Fetch-Site: cross-site` → 403, inference bodies
//! must be declared JSON → 415) in either auth mode, the settings UI's same-origin
//! calls still work, and the Host guard fails closed (unreadable, missing or
//! repeated Host → 400; foreign → 403), each in the route's own error format.

use serde_json::json;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{
    CLIENT_KEY, MANAGEMENT_TOKEN, TestGateway, client_key_toml, json as body_json, raw_exchange,
};

fn config(up: &FakeUpstream, allow_unauthenticated_loopback: bool) -> String {
    format!(
        "[gateway]\nallow_unauthenticated_loopback = {allow_unauthenticated_loopback}\n{}\n\
         [[connections]]\nid = \"claude\"\nprovider = \"anthropic\"\napi_key = \"sk-ant\"\nbase_url = \"{u}\"\n\n\
         [[connections]]\nid = \"gpt\"\nprovider = \"openai\"\napi_key = \"sk-openai\"\nbase_url = \"{u}/v1\"\n",
        client_key_toml(),
        u = up.url()
    )
}

/// A content type, extra browser headers, and the expected status and code.
type Case = (&'static str, &'static [(&'static str, &'static str)], u16, &'static str);

fn anthropic_body() -> String {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
        .to_string()
}

#[tokio::test]
async fn a_cross_site_text_plain_post_reaches_no_upstream_in_either_auth_mode() {
    for keyless in [true, false] {
        let mut up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
        up.expect_calls(0);
        let gw = TestGateway::start(&config(&up, keyless)).await;
        // What a page on another site can send without a preflight: a text/plain
        // (or form) POST with its Origin, with or without the client key it
        // cannot know but might guess.
        let cases: [Case; 6] = [
            (
                "text/plain",
                &[("origin", "https://evil.example"), ("sec-fetch-site", "cross-site")],
                403,
                "forbidden_origin",
            ),
            ("text/plain", &[("origin", "https://evil.example")], 403, "forbidden_origin"),
            ("text/plain", &[("sec-fetch-site", "cross-site")], 403, "forbidden_origin"),
            ("application/json", &[("origin", "null")], 403, "forbidden_origin"),
            ("text/plain", &[], 415, "unsupported_media_type"),
            ("application/x-www-form-urlencoded", &[], 415, "unsupported_media_type"),
        ];
        for (content_type, headers, status, code) in cases {
            for with_key in [false, true] {
                let mut request = gw
                    .http
                    .post(gw.url("/v1/messages"))
                    .header("content-type", content_type)
                    .body(anthropic_body());
                for (name, value) in headers {
                    request = request.header(*name, *value);
                }
                if with_key {
                    request = request.header("x-api-key", CLIENT_KEY);
                }
                let response = request.send().await.unwrap_or_else(|e| panic!("{e}"));
                let case = format!("keyless={keyless} key={with_key} {content_type} {headers:?}");
                assert_eq!(response.status(), status, "{case}");
                assert_eq!(response.headers()["x-switchyard-error"], code, "{case}");
                let body = body_json(response).await;
                assert_eq!(body["type"], "error", "Anthropic envelope: {case}");
                assert_eq!(body["error"]["code"], code, "{case}");
                let message = body["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    message.contains("cross-site") || message.contains("application/json"),
                    "{case}: {message}"
                );
            }
        }
        // The OpenAI routes answer in their own format.
        for path in ["/v1/chat/completions", "/v1/responses"] {
            let response = gw
                .http
                .post(gw.url(path))
                .header("origin", "https://evil.example")
                .header("content-type", "text/plain")
                .body(json!({"model": "gpt-5", "input": "hi"}).to_string())
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(response.status(), 403, "{path}");
            let body = body_json(response).await;
            assert_eq!(body["error"]["code"], "forbidden_origin", "{path}");
            assert_eq!(body["error"]["type"], "permission_error", "{path}");
            assert!(body.get("type").is_none(), "{path}: not the Anthropic envelope");
        }
        drop(gw);
        assert_eq!(up.calls(), 0, "keyless={keyless}: a cross-site request reached the upstream");
    }
}

#[tokio::test]
async fn management_routes_refuse_foreign_origins_even_with_the_token() {
    let up = FakeUpstream::start(Reply::json(200, json!({}))).await;
    let gw = TestGateway::start(&config(&up, true)).await;
    let response = gw
        .mgmt(reqwest::Method::POST, "/api/gateway/pause")
        .header("origin", "https://evil.example")
        .json(&json!({"paused": true}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 403);
    assert_eq!(response.headers()["x-switchyard-error"], "forbidden_origin");
    let body = body_json(response).await;
    assert_eq!(body["error"]["code"], "forbidden_origin");
    assert_eq!(gw.mgmt_json("/api/gateway").await["paused"], false, "the refused request changed nothing");
}

#[tokio::test]
async fn same_origin_and_loopback_pages_still_work() {
    let up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    let gw = TestGateway::start(&config(&up, false)).await;
    // The settings UI served under /ui/ calls /api from the gateway's own origin.
    let own = gw.gateway().base_url();
    let response = gw
        .mgmt(reqwest::Method::POST, "/api/gateway/pause")
        .header("origin", &own)
        .header("sec-fetch-site", "same-origin")
        .json(&json!({"paused": false}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    let listed = gw
        .mgmt(reqwest::Method::GET, "/api/providers")
        .header("origin", own.replace("127.0.0.1", "localhost"))
        .header("sec-fetch-site", "same-site")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed.status(), 200);
    // A loopback page on another port (a local dev server) is still the user's machine.
    for content_type in ["application/json", "application/json; charset=utf-8", "application/vnd.api+json"] {
        let response = gw
            .http
            .post(gw.url("/v1/messages"))
            .bearer_auth(CLIENT_KEY)
            .header("origin", "http://localhost:5173")
            .header("content-type", content_type)
            .body(anthropic_body())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(response.status(), 200, "{content_type}");
    }
    assert_eq!(up.calls(), 3);
    // A link to the settings UI from another site opens it (no UI is built here, so
    // the answer is the JSON 404 that says how to build one, not a 403).
    let navigation = gw
        .http
        .get(gw.url("/ui/"))
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "navigate")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(navigation.status(), 404);
    assert_eq!(navigation.headers()["x-switchyard-error"], "not_found");
}

#[tokio::test]
async fn the_host_guard_fails_closed() {
    let mut up = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "x"))).await;
    up.expect_calls(0);
    let gw = TestGateway::start(&config(&up, true)).await;
    let addr = gw.gateway().addr();
    let body = anthropic_body();
    let post = |host_lines: &[u8]| {
        let mut request = b"POST /v1/messages HTTP/1.1\r\n".to_vec();
        request.extend_from_slice(host_lines);
        request.extend_from_slice(
            format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        request
    };
    let cases: [(&str, Vec<u8>, u16, &str); 5] = [
        ("unreadable", post(b"Host: 127.0.0.1\xff\r\n"), 400, "invalid_host"),
        ("missing", post(b""), 400, "invalid_host"),
        ("duplicate", post(b"Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n"), 400, "invalid_host"),
        ("duplicate, one foreign", post(b"Host: 127.0.0.1\r\nHost: evil.example\r\n"), 400, "invalid_host"),
        ("foreign", post(b"Host: evil.example\r\n"), 403, "forbidden_host"),
    ];
    for (case, request, status, code) in cases {
        let response = raw_exchange(addr, &request).await;
        assert_eq!(response.status, status, "{case}: {}", response.head);
        assert_eq!(response.header("x-switchyard-error"), Some(code), "{case}");
        let body = response.json();
        assert_eq!(body["type"], "error", "{case}: Anthropic envelope on /v1/messages: {}", response.body);
        assert_eq!(body["error"]["code"], code, "{case}");
    }
    // An absolute-form target names the host too.
    let absolute = raw_exchange(
        addr,
        b"GET http://evil.example/api/hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(absolute.status, 403);
    assert_eq!(absolute.json()["error"]["code"], "forbidden_host", "management envelope");
    // HTTP/1.0 predates Host; browsers always send one, so this is not a rebinding.
    let old = raw_exchange(addr, b"GET /api/hello HTTP/1.0\r\n\r\n").await;
    assert_eq!(old.status, 200, "{}", old.head);
    let fine =
        raw_exchange(addr, b"GET /api/hello HTTP/1.1\r\nHost: localhost:7821\r\nConnection: close\r\n\r\n")
            .await;
    assert_eq!(fine.status, 200);
    let token = raw_exchange(
        addr,
        format!(
            "GET /api/providers HTTP/1.1\r\nHost: [::1]\r\nHost: [::1]\r\nAuthorization: Bearer {MANAGEMENT_TOKEN}\r\n\
             Connection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await;
    assert_eq!(token.status, 400, "a repeated Host is refused even with the management token");
    assert_eq!(token.json()["error"]["code"], "invalid_host");
}
