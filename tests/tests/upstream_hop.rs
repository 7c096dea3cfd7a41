//! The proxy hop's HTTP client (ADR 0011): what it puts on the wire, proxies, and how
//! its failures are sorted.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchyard_gateway::clock::ManualClock;
use switchyard_gateway::proxy::hop::UpstreamProxy;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{
    CLIENT_KEY, TestGateway, json as body_json, one_anthropic_key, raw_exchange, refused_port,
};
use switchyard_types::UnixMillis;

fn request() -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn the_hop_sends_host_length_query_and_credentials() {
    let upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "direct"))).await;
    let gw = TestGateway::start(&one_anthropic_key(&upstream.url())).await;
    let response = gw
        .http
        .post(gw.url("/v1/messages?beta=true"))
        .bearer_auth(switchyard_tests::CLIENT_KEY)
        .header("content-type", "application/json")
        .body(request().to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "direct");
    let seen = upstream.last_request().unwrap_or_else(|| panic!("the upstream saw nothing"));
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.query.as_deref(), Some("beta=true"));
    assert_eq!(seen.header("host"), Some(upstream.addr().to_string().as_str()));
    assert_eq!(seen.header("content-length"), Some(seen.body.len().to_string().as_str()));
    assert_eq!(seen.header("x-api-key"), Some("sk-ant-upstream-secret"));
}

#[tokio::test]
async fn a_request_without_accept_reaches_the_upstream_with_accept_any() {
    let upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let gw = TestGateway::start(&one_anthropic_key(&upstream.url())).await;
    let body = request().to_string();
    let raw = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer {CLIENT_KEY}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = raw_exchange(gw.gateway().addr(), raw.as_bytes()).await;
    assert_eq!(answer.status, 200, "{}", answer.head);
    let seen = upstream.last_request().unwrap_or_else(|| panic!("the upstream saw nothing"));
    assert_eq!(seen.header("accept"), Some("*/*"));
}

#[tokio::test]
async fn credentials_in_a_base_url_go_as_basic_auth_never_in_the_url() {
    let upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let with_credentials = upstream.url().replacen("http://", "http://proxy-user:p%40ss@", 1);
    let gw = TestGateway::start(&one_anthropic_key(&with_credentials)).await;
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    let seen = upstream.last_request().unwrap_or_else(|| panic!("the upstream saw nothing"));
    // base64("proxy-user:p@ss"): percent-decoded first, as reqwest sent it.
    assert_eq!(seen.header("authorization"), Some("Basic cHJveHktdXNlcjpwQHNz"));
    assert_eq!(seen.header("host"), Some(upstream.addr().to_string().as_str()));
    assert_eq!(seen.header("x-api-key"), Some("sk-ant-upstream-secret"));
}

#[tokio::test]
async fn the_api_never_shows_base_url_credentials_and_a_masked_url_keeps_them() {
    let upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "ok"))).await;
    let with_credentials = upstream.url().replacen("http://", "http://proxy-user:p%40ss@", 1);
    let gw = TestGateway::start(&one_anthropic_key(&with_credentials)).await;
    let masked = upstream.url().replacen("http://", "http://***@", 1);
    let view = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(view["baseUrl"], masked.as_str(), "{view}");
    assert_eq!(view["effectiveBaseUrl"], masked.as_str(), "{view}");
    let list = gw.mgmt_json("/api/providers").await.to_string();
    assert!(!list.contains("p%40ss") && !list.contains("proxy-user"), "{list}");

    // The form sends back what it was shown (here with a new path): the stored
    // credentials stay and still go upstream as Basic auth.
    let patched = gw
        .mgmt(reqwest::Method::PATCH, "/api/providers/claude-a")
        .json(&json!({"baseUrl": format!("{masked}/"), "priority": 3}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched.status(), 200);
    assert_eq!(body_json(patched).await["baseUrl"], format!("{masked}/").as_str());
    assert_eq!(gw.post("/v1/messages", &request()).await.status(), 200);
    let seen = upstream.last_request().unwrap_or_else(|| panic!("the upstream saw nothing"));
    assert_eq!(seen.header("authorization"), Some("Basic cHJveHktdXNlcjpwQHNz"));

    // Removing the credentials, then sending the mask again, is refused: the mask
    // is never stored or sent as a user name.
    let bare = gw
        .mgmt(reqwest::Method::PATCH, "/api/providers/claude-a")
        .json(&json!({"baseUrl": upstream.url()}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(bare.status(), 200);
    let refused = gw
        .mgmt(reqwest::Method::PATCH, "/api/providers/claude-a")
        .json(&json!({"baseUrl": masked, "priority": 9}))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(refused.status(), 400);
    let problem = body_json(refused).await.to_string();
    assert!(problem.contains("/baseUrl") && problem.contains("masked credentials"), "{problem}");
    let view = gw.mgmt_json("/api/providers/claude-a").await;
    assert_eq!(
        (view["baseUrl"].as_str(), view["priority"].as_i64()),
        (Some(upstream.url().as_str()), Some(3))
    );
}

#[tokio::test]
async fn an_upstream_proxy_carries_the_hop_to_an_upstream_the_gateway_cannot_reach_itself() {
    // The connection's address refuses connections; only the proxy can answer for it.
    let (port, unreachable) = refused_port().await;
    let proxy = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "via proxy"))).await;
    let proxy_url = proxy.url();
    let gw = TestGateway::start_with(&one_anthropic_key(&unreachable), |config| {
        config.proxy.upstream_proxy = UpstreamProxy::Url(proxy_url);
    })
    .await;
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "via proxy");
    let seen = proxy.last_request().unwrap_or_else(|| panic!("the proxy saw nothing"));
    // A proxy gets the upstream's host and path (absolute form) and the credentials.
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.header("host"), Some(format!("127.0.0.1:{port}").as_str()));
    assert_eq!(seen.header("x-api-key"), Some("sk-ant-upstream-secret"));
}

#[tokio::test]
async fn without_a_proxy_the_same_unreachable_upstream_is_a_connect_failure() {
    let (_, unreachable) = refused_port().await;
    let gw = TestGateway::start_with(&one_anthropic_key(&unreachable), |config| {
        config.proxy.upstream_proxy = UpstreamProxy::Direct;
    })
    .await;
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 502);
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "connect");
}

/// A TLS upstream on loopback whose certificate no trusted root signed
/// (`tests/fixtures/tls`): counts handshakes that failed and that succeeded.
struct UntrustedTlsUpstream {
    url: String,
    refused: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl UntrustedTlsUpstream {
    async fn start() -> UntrustedTlsUpstream {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::AsyncWriteExt;

        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tls");
        let cert = CertificateDer::from_pem_file(format!("{dir}/self-signed.cert.pem"))
            .unwrap_or_else(|e| panic!("{e}"));
        let key = PrivateKeyDer::from_pem_file(format!("{dir}/self-signed.key.pem"))
            .unwrap_or_else(|e| panic!("{e}"));
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|e| panic!("{e}"))
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap_or_else(|e| panic!("{e}"));
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
        let (refused, accepted) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let counts = (refused.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, counts) = (acceptor.clone(), counts.clone());
                tokio::spawn(async move {
                    match acceptor.accept(tcp).await {
                        Err(_) => counts.0.fetch_add(1, Ordering::SeqCst),
                        Ok(mut tls) => {
                            let body = r#"{"data":[]}"#;
                            let answer = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                                body.len()
                            );
                            let _ = tls.write_all(answer.as_bytes()).await;
                            counts.1.fetch_add(1, Ordering::SeqCst)
                        }
                    };
                });
            }
        });
        UntrustedTlsUpstream { url: format!("https://localhost:{port}"), refused, accepted }
    }

    fn refused(&self) -> usize {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (real time, for the loopback handshake to finish on the server's side)
    /// until `n` handshakes were refused.
    async fn wait_refused(&self, n: usize) -> usize {
        for _ in 0..500 {
            if self.refused() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.refused()
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test]
async fn the_hop_and_the_side_calls_refuse_a_certificate_no_trusted_root_signed() {
    let upstream = UntrustedTlsUpstream::start().await;
    let gw = TestGateway::start(&one_anthropic_key(&upstream.url)).await;

    // The proxy hop: the handshake fails, which is the upstream being unreachable.
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 502);
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "connect");
    assert_eq!(upstream.wait_refused(1).await, 1);

    // The side calls' client (here the connection test) trusts the same roots.
    let tested = gw.test_connection("claude-a").await;
    assert_eq!(tested["ok"], false, "{tested}");
    assert_eq!(upstream.wait_refused(2).await, 2);
    assert_eq!(upstream.accepted(), 0);
}

#[tokio::test]
async fn an_upstream_that_accepts_and_never_finishes_the_tls_handshake_is_a_connect_failure() {
    // It accepts TCP, then says nothing: the TLS handshake never completes.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    let (accepted_tx, mut accepted_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let _ = accepted_tx.send(socket);
        }
    });
    let clock = Arc::new(ManualClock::new(UnixMillis(1_900_000_000_000)));
    let c = clock.clone();
    let gw =
        TestGateway::start_with(&one_anthropic_key(&format!("https://localhost:{port}")), move |config| {
            config.clock = c;
            config.proxy.connect_timeout = Duration::from_secs(2);
        })
        .await;
    let pending = gw.post_in_background("/v1/messages", &request());
    // Real-time wait for the loopback connect itself (not for a timeout).
    let held = tokio::time::timeout(Duration::from_secs(5), accepted_rx.recv())
        .await
        .unwrap_or_else(|_| panic!("the gateway never connected"));
    // Past the connect timeout, short of any other budget: the attempt fails as a
    // connection failure, not as a slow answer.
    clock.advance_ms(2_000);
    let response = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .unwrap_or_else(|_| panic!("the stalled handshake was not cut at the connect timeout"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(response.status(), 502);
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "connect", "{}", rows[0]);
    drop(held);
}
