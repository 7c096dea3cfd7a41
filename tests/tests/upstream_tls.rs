//! The proxy hop and the side calls over TLS to an upstream a trusted root signed:
//! every real provider is `https://`, so this is the path users take. The upstream is
//! a loopback TLS terminator (`tests/fixtures/tls`, signed by a test CA the gateway is
//! given as an extra root) in front of a fake provider; ALPN decides between HTTP/2
//! and HTTP/1.1 as it does with the real ones. (`upstream_hop.rs` has the refusals: a
//! certificate no trusted root signed, a handshake that never ends.)

use std::sync::{Arc, Mutex};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Reply, wire};
use switchyard_tests::{TestGateway, json as body_json, one_anthropic_key, sse_data, text};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tls");

fn pem_cert(name: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(format!("{FIXTURES}/{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// TLS in front of a plain fake provider: each handshake's ALPN choice is kept, the
/// decrypted bytes are piped to the fake (which speaks whichever HTTP version comes).
struct TlsFront {
    url: String,
    negotiated: Arc<Mutex<Vec<Option<String>>>>,
}

impl TlsFront {
    async fn start(behind: &FakeUpstream, alpn: &[&str]) -> TlsFront {
        let key = PrivateKeyDer::from_pem_file(format!("{FIXTURES}/ca-signed.key.pem"))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|e| panic!("{e}"))
        .with_no_client_auth()
        .with_single_cert(vec![pem_cert("ca-signed.cert.pem")], key)
        .unwrap_or_else(|e| panic!("{e}"));
        config.alpn_protocols = alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
        let negotiated = Arc::new(Mutex::new(Vec::new()));
        let (seen, backend) = (negotiated.clone(), behind.addr());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, seen) = (acceptor.clone(), seen.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let protocol =
                        tls.get_ref().1.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned());
                    seen.lock().unwrap_or_else(|e| e.into_inner()).push(protocol);
                    let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        // `localhost`: the name the certificate is for, as a provider's host name is.
        TlsFront { url: format!("https://localhost:{port}"), negotiated }
    }

    fn negotiated(&self) -> Vec<Option<String>> {
        self.negotiated.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn request(stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 16, "stream": stream,
           "messages": [{"role": "user", "content": "hi"}]})
}

/// One connection lane: each lane keeps its own upstream pool, and the test client may
/// open a second connection to the gateway (its pool takes the first one back
/// asynchronously), which could land on another lane; with one lane, one upstream
/// connection means the hop reused it.
async fn gateway_trusting_the_test_ca(base_url: &str) -> TestGateway {
    TestGateway::start_with(&one_anthropic_key(base_url), |config| {
        config.proxy.extra_tls_roots = vec![pem_cert("test-ca.cert.pem")];
        config.connections.lanes = 1;
    })
    .await
}

#[tokio::test]
async fn a_tls_upstream_offering_http2_is_spoken_http2_on_one_connection_by_the_hop_and_the_side_calls() {
    let fake = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "over tls"))).await;
    let front = TlsFront::start(&fake, &["h2", "http/1.1"]).await;
    let gw = gateway_trusting_the_test_ca(&front.url).await;

    // A whole answer, then a streamed one: both relayed whole.
    let response = gw.post("/v1/messages", &request(false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body_json(response).await["content"][0]["text"], "over tls");
    fake.push(Reply::sse(wire::anthropic_sse("m", "streamed over tls")));
    let response = gw.post("/v1/messages", &request(true)).await;
    assert_eq!(response.status(), 200);
    let events = sse_data(&text(response).await);
    let streamed: String = events.iter().filter_map(|e| e["delta"]["text"].as_str()).collect();
    assert_eq!(streamed, "streamed over tls");
    assert_eq!(events.last().map(|e| e["type"].clone()), Some(json!("message_stop")));

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    for seen in &requests {
        assert_eq!(seen.version, http::Version::HTTP_2, "{} {}", seen.method, seen.path);
        assert_eq!(seen.path, "/v1/messages");
        assert_eq!(seen.header("x-api-key"), Some("sk-ant-upstream-secret"));
    }
    // HTTP/2 carries both requests on the one connection the first handshake opened.
    assert_eq!(front.negotiated(), vec![Some("h2".to_owned())]);
    let rows = gw.wait_for_log_rows(2).await;
    assert!(rows.iter().all(|r| r["status"] == 200 && r["errorKind"].is_null()), "{rows:?}");

    // The side calls' client (the connection test) trusts the same extra root.
    fake.push(Reply::json(200, json!({"data": []})));
    let tested = gw.test_connection("claude-a").await;
    assert_eq!(tested["ok"], true, "{tested}");
    assert_eq!(fake.last_request().map(|r| r.path), Some("/v1/models".to_owned()));
}

#[tokio::test]
async fn a_tls_upstream_offering_only_http1_is_spoken_http1_and_its_connection_reused() {
    let fake = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "h1 over tls"))).await;
    let front = TlsFront::start(&fake, &["http/1.1"]).await;
    let gw = gateway_trusting_the_test_ca(&front.url).await;

    for _ in 0..3 {
        let response = gw.post("/v1/messages", &request(false)).await;
        assert_eq!(response.status(), 200);
        assert_eq!(body_json(response).await["content"][0]["text"], "h1 over tls");
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.version == http::Version::HTTP_11), "{requests:?}");
    // One after another: the pooled connection is reused, not one handshake each.
    assert_eq!(front.negotiated(), vec![Some("http/1.1".to_owned())]);
}

#[tokio::test]
async fn without_the_extra_root_the_same_upstream_is_refused() {
    // The control for the two above: the trust comes from the root given, nothing else.
    let fake = FakeUpstream::start(Reply::json(200, wire::anthropic_message("m", "never"))).await;
    let front = TlsFront::start(&fake, &["h2", "http/1.1"]).await;
    let gw = TestGateway::start(&one_anthropic_key(&front.url)).await;
    let response = gw.post("/v1/messages", &request(false)).await;
    assert_eq!(response.status(), 502);
    let rows = gw.wait_for_log_rows(1).await;
    assert_eq!(rows[0]["errorKind"], "connect");
    assert_eq!(fake.calls(), 0);
    assert!(front.negotiated().is_empty());
}
