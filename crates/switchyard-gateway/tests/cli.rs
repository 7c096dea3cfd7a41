//! The `switchyard serve` binary as a user runs it: first start generates and prints
//! the management token once and stores it owner-only; later starts reuse it; the
//! printed base URL answers; SIGTERM stops it cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

struct Served {
    child: Child,
    base_url: String,
}

fn serve(data_dir: &std::path::Path, extra: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .args(extra)
        .env_remove("SWITCHYARD_MANAGEMENT_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start switchyard: {e}"));
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let mut lines = BufReader::new(stderr).lines();
    let mut base_url = String::new();
    // The banner is a handful of lines; reading stops at the token line or EOF.
    for _ in 0..200 {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(url) = line.strip_prefix("Switchyard gateway listening on ") {
            base_url = url.trim().to_owned();
        }
        if line.contains("management token") {
            break;
        }
    }
    assert!(!base_url.is_empty(), "the gateway never said where it listens");
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Served { child, base_url }
}

/// Sends SIGTERM, asserts a clean exit, and returns what the process printed on stdout.
fn stop(served: Served) -> String {
    let pid = served.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let output = served.child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "exit status {:?}", output.status);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The status of a plain HTTP/1.1 GET (std only, so the test needs no HTTP client).
fn http_status(url: &str, token: Option<&str>) -> u16 {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[test]
fn first_start_prints_the_token_once_and_later_starts_reuse_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = dir.path().join("data");

    let first = serve(&data, &[]);
    assert_eq!(http_status(&format!("{}/api/hello", first.base_url), None), 200);
    let token_file = data.join("management-token");
    let token = std::fs::read_to_string(&token_file).unwrap_or_default().trim().to_owned();
    assert!(token.starts_with("sym-"), "token file holds {token:?}");
    assert_eq!(http_status(&format!("{}/api/providers", first.base_url), Some(&token)), 200);
    assert_eq!(http_status(&format!("{}/api/providers", first.base_url), None), 401);
    let printed = stop(first);
    assert_eq!(printed.trim(), token, "the first start prints exactly the token on stdout");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_file).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
        assert_eq!(mode, 0o600);
    }

    let printed = stop(serve(&data, &[]));
    assert_eq!(printed.trim(), "", "a later start must not print the token again");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap_or_default().trim(), token);

    let overridden = serve(&data, &["--management-token", "sym-override-token-123"]);
    assert_eq!(
        http_status(&format!("{}/api/providers", overridden.base_url), Some("sym-override-token-123")),
        200
    );
    assert_eq!(http_status(&format!("{}/api/providers", overridden.base_url), Some(&token)), 401);
    stop(overridden);
}

#[test]
fn a_non_loopback_listen_address_needs_allow_remote() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_switchyard"))
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
}

/// The body of a plain HTTP/1.1 GET with a bearer token.
fn http_get_body(url: &str, token: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default()
}

#[test]
fn import_claude_reads_claude_codes_login_idempotently() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = dir.path().join("data");
    let creds = dir.path().join(".credentials.json");
    std::fs::write(
        &creds,
        r#"{"claudeAiOauth":{"accessToken":"sk-ant-oat01-SECRET","refreshToken":"sk-ant-ort01-SECRET","expiresAt":1893456000000,"scopes":["user:inference"],"subscriptionType":"max"}}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let import = || {
        Command::new(env!("CARGO_BIN_EXE_switchyard"))
            .args(["import-claude", "--file"])
            .arg(&creds)
            .arg("--data-dir")
            .arg(&data)
            .output()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let first = import();
    let said = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(first.status.success(), "{said}");
    assert!(said.contains("'claude-code': created") && said.contains("max plan"), "{said}");
    assert!(!said.contains("SECRET") && !String::from_utf8_lossy(&first.stdout).contains("SECRET"));
    let second = import();
    assert!(String::from_utf8_lossy(&second.stderr).contains("unchanged"));

    let served = serve(&data, &["--management-token", "sym-cli-test-token-1"]);
    let body =
        http_get_body(&format!("{}/api/providers/claude-code", served.base_url), "sym-cli-test-token-1");
    stop(served);
    let view: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(view["authKind"], "oauth");
    assert_eq!(view["provider"], "anthropic");
    assert_eq!(view["hasRefreshToken"], true);
    assert_eq!(view["tokenExpiresAt"], 1_893_456_000_000_i64);
    assert!(!body.contains("SECRET"));

    std::fs::write(&creds, "{}").unwrap_or_else(|e| panic!("{e}"));
    let bad = import();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("claudeAiOauth"));
}
