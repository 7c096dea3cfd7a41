//! The proxy hop's HTTP client (ADR 0011): what it puts on the wire, proxies, and how
//! its failures are sorted.

use serde_json::{Value, json};
use switchyard_gateway::proxy::hop::UpstreamProxy;
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, client_key_toml, json as body_json, refused_port};

fn one_key(base_url: &str) -> String {
    format!(
        r#"{keys}
[[connections]]
id = "claude-a"
provider = "anthropic"
api_key = "sk-ant-upstream-secret"
base_url = "{base_url}"
"#,
        keys = client_key_toml(),
    )
}

fn request() -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn the_hop_sends_host_length_and_accept_as_the_old_client_did() {
    let upstream = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "direct"))).await;
    let gw = TestGateway::start(&one_key(&upstream.url())).await;
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
    assert!(seen.header("accept").is_some(), "an accept header is always sent");
}

#[tokio::test]
async fn an_upstream_proxy_carries_the_hop_to_an_upstream_the_gateway_cannot_reach_itself() {
    // The connection's address refuses connections; only the proxy can answer for it.
    let (port, unreachable) = refused_port().await;
    let proxy = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "via proxy"))).await;
    let proxy_url = proxy.url();
    let gw = TestGateway::start_with(&one_key(&unreachable), |config| {
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
    let gw = TestGateway::start_with(&one_key(&unreachable), |config| {
        config.proxy.upstream_proxy = UpstreamProxy::FromEnv;
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

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test]
async fn the_hop_and_the_side_calls_refuse_a_certificate_no_trusted_root_signed() {
    let upstream = UntrustedTlsUpstream::start().await;
    let gw = TestGateway::start(&one_key(&upstream.url)).await;

    // The proxy hop: the handshake fails, which is the upstream being unreachable.
    let response = gw.post("/v1/messages", &request()).await;
    assert_eq!(response.status(), 502);
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "connect");
    assert_eq!(upstream.refused(), 1);

    // The side calls' client (here the connection test) trusts the same roots.
    let tested = gw
        .mgmt(reqwest::Method::POST, "/api/providers/claude-a/test")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let tested = body_json(tested).await;
    assert_eq!(tested["ok"], false, "{tested}");
    assert_eq!(upstream.refused(), 2);
    assert_eq!(upstream.accepted(), 0);
}
