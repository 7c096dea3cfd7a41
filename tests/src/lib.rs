//! Harness for the black-box scenarios in `tests/tests/`: a real gateway on
//! 127.0.0.1:0 with a temporary SQLite file, configured through a real TOML config
//! file, talked to over real HTTP.

pub mod formats;
pub mod judge;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use switchyard_gateway::{Gateway, GatewayConfig};
use tempfile::TempDir;

/// The client key every scenario's config registers.
pub const CLIENT_KEY: &str = "sy-test-client-key-0001";
/// The management token every scenario uses.
pub const MANAGEMENT_TOKEN: &str = "sym-test-management-token";

/// A running gateway with its data directory.
pub struct TestGateway {
    gateway: Option<Gateway>,
    /// Temporary data directory (deleted on drop).
    pub dir: TempDir,
    /// The config file the gateway imported.
    pub config_path: PathBuf,
    /// A plain HTTP client (no keep-alive pool; see [`TestGateway::start_with`]).
    pub http: reqwest::Client,
}

/// The `[[api_keys]]` entry for [`CLIENT_KEY`].
pub fn client_key_toml() -> String {
    format!("[[api_keys]]\nname = \"ide\"\nkey = \"{CLIENT_KEY}\"\n")
}

/// A config with a Claude subscription account `claude-a` (OAuth, priority 1, at
/// `a`, with `options` as its `provider_specific` TOML lines) and an Anthropic API
/// key `claude-b` (priority 2, at `b`).
pub fn claude_account_and_key(a: &str, b: &str, options: &str) -> String {
    format!(
        "{keys}\n[[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\nauth = \"oauth\"\n\
         access_token = \"oat-a\"\nbase_url = \"{a}\"\npriority = 1\n[connections.provider_specific]\n{options}\n\n\
         [[connections]]\nid = \"claude-b\"\nprovider = \"anthropic\"\napi_key = \"sk-b\"\nbase_url = \"{b}\"\n\
         priority = 2\n",
        keys = client_key_toml(),
    )
}

/// The client key and one Anthropic API-key connection, `claude-a` (key
/// `sk-ant-upstream-secret`), at `base_url`.
pub fn one_anthropic_key(base_url: &str) -> String {
    format!(
        "{keys}\n[[connections]]\nid = \"claude-a\"\nprovider = \"anthropic\"\n\
         api_key = \"sk-ant-upstream-secret\"\nbase_url = \"{base_url}\"\n",
        keys = client_key_toml(),
    )
}

/// The client key and two Anthropic API-key connections, `key-a` (priority 1) at `a`
/// and `key-b` (priority 2) at `b`.
pub fn two_anthropic_keys(a: &str, b: &str) -> String {
    let mut toml = client_key_toml();
    for (id, url, priority) in [("key-a", a, 1), ("key-b", b, 2)] {
        let key = id.replace("key-", "sk-");
        toml.push_str(&format!(
            "\n[[connections]]\nid = \"{id}\"\nprovider = \"anthropic\"\napi_key = \"{key}\"\n\
             base_url = \"{url}\"\npriority = {priority}\n"
        ));
    }
    toml
}

impl TestGateway {
    /// Starts a gateway importing `config_toml`.
    pub async fn start(config_toml: &str) -> TestGateway {
        TestGateway::start_with(config_toml, |_| {}).await
    }

    /// Starts a gateway importing `config_toml`, after `adjust` tweaks its config.
    pub async fn start_with(config_toml: &str, adjust: impl FnOnce(&mut GatewayConfig)) -> TestGateway {
        let dir = match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("no temp dir: {e}"),
        };
        let config_path = dir.path().join("switchyard.toml");
        if let Err(e) = std::fs::write(&config_path, config_toml) {
            panic!("cannot write config: {e}");
        }
        let mut config = GatewayConfig::new(dir.path().join("data"));
        config.listen = "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}"));
        config.config_file = Some(config_path.clone());
        config.management_token = Some(MANAGEMENT_TOKEN.to_owned());
        config.shutdown_grace = Duration::from_secs(2);
        adjust(&mut config);
        let gateway = match Gateway::start(config).await {
            Ok(g) => g,
            Err(e) => panic!("gateway failed to start: {e:#}"),
        };
        // A fresh connection per request: scenarios that move a manual gateway clock by
        // minutes also age the gateway's idle keep-alive connections past its header
        // timeout (which runs on that clock), while the client's pool lives in real
        // time and would reuse a connection the gateway is closing.
        let http = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        TestGateway { gateway: Some(gateway), dir, config_path, http }
    }

    /// The running gateway.
    pub fn gateway(&self) -> &Gateway {
        match &self.gateway {
            Some(g) => g,
            None => panic!("gateway already shut down"),
        }
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.gateway().base_url())
    }

    /// POSTs `body` to an inference endpoint with the client key as a bearer token.
    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(self.url(path))
            .bearer_auth(CLIENT_KEY)
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path} failed: {e:?}"))
    }

    /// POSTs `body` on a task of its own, so the test can move the clock while the
    /// gateway waits on it.
    pub fn post_in_background(&self, path: &str, body: &Value) -> tokio::task::JoinHandle<reqwest::Response> {
        let request = self.http.post(self.url(path)).bearer_auth(CLIENT_KEY).json(body);
        let path = path.to_owned();
        tokio::spawn(
            async move { request.send().await.unwrap_or_else(|e| panic!("POST {path} failed: {e}")) },
        )
    }

    /// A management request builder with the token set.
    pub fn mgmt(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http.request(method, self.url(path)).bearer_auth(MANAGEMENT_TOKEN)
    }

    /// GETs a management document as JSON, asserting 200.
    pub async fn mgmt_json(&self, path: &str) -> Value {
        let response = self
            .mgmt(reqwest::Method::GET, path)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path} failed: {e}"));
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.unwrap_or_else(|e| panic!("GET {path} not JSON: {e}"))
    }

    /// `POST /api/providers/{id}/test` (the connection test, a side call): its
    /// result document.
    pub async fn test_connection(&self, id: &str) -> Value {
        let path = format!("/api/providers/{id}/test");
        let response = self
            .mgmt(reqwest::Method::POST, &path)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path} failed: {e}"));
        response.json().await.unwrap_or_else(|e| panic!("POST {path} not JSON: {e}"))
    }

    /// `PATCH /api/resilience` with a partial settings document, asserting 200.
    pub async fn patch_settings(&self, patch: &Value) {
        let response = self
            .mgmt(reqwest::Method::PATCH, "/api/resilience")
            .json(patch)
            .send()
            .await
            .unwrap_or_else(|e| panic!("PATCH /api/resilience failed: {e}"));
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert_eq!(status, 200, "PATCH /api/resilience {patch}: {body}");
    }

    /// A connection's entry in `GET /api/resilience/cooldowns` (`Null` when absent).
    pub async fn cooldown_of(&self, connection: &str) -> Value {
        let list = self.mgmt_json("/api/resilience/cooldowns").await;
        list.as_array()
            .and_then(|l| l.iter().find(|c| c["connection"] == connection))
            .cloned()
            .unwrap_or_default()
    }

    /// Clears every connection cooldown (`POST /api/resilience/cooldowns {"all":true}`).
    pub async fn clear_cooldowns(&self) {
        let response = self
            .mgmt(reqwest::Method::POST, "/api/resilience/cooldowns")
            .json(&serde_json::json!({"all": true}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("clearing cooldowns failed: {e}"));
        assert_eq!(response.status(), 200, "clearing cooldowns");
    }

    /// Waits until the request log holds at least `n` rows, returning them.
    pub async fn wait_for_log_rows(&self, n: usize) -> Vec<Value> {
        for _ in 0..400 {
            let rows = self.mgmt_json("/api/logs?limit=1000").await;
            let rows = rows.as_array().cloned().unwrap_or_default();
            if rows.len() >= n {
                return rows;
            }
            // Polling the log writer's background flush, not waiting out a duration.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("request log never reached {n} rows");
    }

    /// Shuts the gateway down gracefully.
    pub async fn shutdown(&mut self) {
        if let Some(g) = self.gateway.take() {
            g.shutdown().await;
        }
    }
}

/// A loopback port nothing listens on (bound, then released), and its URL.
pub async fn refused_port() -> (u16, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("cannot bind 127.0.0.1: {e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    drop(listener);
    (addr.port(), format!("http://{addr}"))
}

/// A response read off a raw socket.
#[derive(Debug)]
pub struct RawResponse {
    /// The status code (0 when the gateway closed without answering).
    pub status: u16,
    /// The status line and headers, as sent.
    pub head: String,
    /// The body after the blank line, as sent (not de-chunked).
    pub body: String,
}

impl RawResponse {
    /// A header's value (case-insensitive name), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_default()
    }
}

/// Sends `request` as raw bytes over a new loopback connection and reads until the
/// gateway closes it (send `Connection: close`), for requests no HTTP client will
/// make (bad Host headers, trickled heads). Fails after 10 s.
pub async fn raw_exchange(addr: std::net::SocketAddr, request: &[u8]) -> RawResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream =
            tokio::net::TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect: {e}"));
        stream.write_all(request).await.unwrap_or_else(|e| panic!("write: {e}"));
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw).await;
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .unwrap_or_else(|_| panic!("no complete answer within 10 s"));
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    RawResponse { status, head: head.to_owned(), body: body.to_owned() }
}

/// Reads a response body as text.
pub async fn text(response: reqwest::Response) -> String {
    response.text().await.unwrap_or_else(|e| panic!("body unreadable: {e}"))
}

/// Reads a response body as JSON.
pub async fn json(response: reqwest::Response) -> Value {
    response.json().await.unwrap_or_else(|e| panic!("body not JSON: {e}"))
}

/// `data:` payloads of an SSE text, parsed as JSON where possible.
pub fn sse_data(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap_or(Value::String(d.to_owned())))
        .collect()
}
