//! The proxy hop honours the user's `HTTP_PROXY` as curl does, with no setting in
//! Switchyard (`UpstreamProxy::FromEnv`, the binary's default): an upstream the
//! gateway cannot reach itself answers through the proxy the variable names.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use common::{http, serve_with_env, stop};

const CLIENT_KEY: &str = "sy-proxy-env-0123456789";

/// A one-shot HTTP proxy on loopback: it answers the first request it gets with an
/// Anthropic message and returns that request's line.
fn one_shot_proxy() -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
    let seen = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap_or_else(|e| panic!("{e}"));
        let mut reader = BufReader::new(stream.try_clone().unwrap_or_else(|e| panic!("{e}")));
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap_or_else(|e| panic!("{e}"));
        let mut length = 0;
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap_or_else(|e| panic!("{e}"));
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap_or_else(|e| panic!("{e}"));
        let answer = r#"{"id":"msg_proxy","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"via the environment's proxy"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":5}}"#;
        let mut stream = stream;
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            answer.len()
        );
        stream.write_all(head.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        stream.write_all(answer.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        request_line.trim_end().to_owned()
    });
    (url, seen)
}

#[test]
fn an_http_proxy_from_the_environment_carries_the_hop() {
    let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // Port 9 (discard) refuses connections on loopback: only the proxy can answer.
    let config = data.path().join("switchyard.toml");
    std::fs::write(
        &config,
        format!(
            "[[api_keys]]\nname = \"ide\"\nkey = \"{CLIENT_KEY}\"\n\n\
             [[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\napi_key = \"sk-ant-proxy-env\"\n\
             base_url = \"http://127.0.0.1:9\"\nmodels = [\"claude-sonnet-4-6\"]\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (proxy, seen) = one_shot_proxy();
    let served = serve_with_env(
        data.path(),
        &["--config", config.to_str().unwrap_or_default()],
        &[("HTTP_PROXY", proxy.as_str()), ("http_proxy", proxy.as_str()), ("NO_PROXY", ""), ("no_proxy", "")],
    );
    let body = r#"{"model":"claude-sonnet-4-6","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}"#;
    let (status, answer) =
        http("POST", &format!("{}/v1/messages", served.base_url), Some(CLIENT_KEY), Some(body));
    stop(served);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("via the environment's proxy"), "{answer}");
    // A proxy gets the upstream's absolute URL.
    let line = seen.join().unwrap_or_else(|_| panic!("the proxy thread failed"));
    assert_eq!(line, "POST http://127.0.0.1:9/v1/messages HTTP/1.1");
}
