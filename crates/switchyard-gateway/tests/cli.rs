//! The `switchyard serve` binary as a user runs it: first start generates and prints
//! the management token once and stores it owner-only; later starts reuse it; the
//! printed base URL answers; SIGTERM stops it cleanly.

mod common;

use std::process::Command;

use common::{http, serve, stop};

/// The status of a plain HTTP/1.1 GET.
fn http_status(url: &str, token: Option<&str>) -> u16 {
    http("GET", url, token, None).0
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
    http("GET", url, Some(token), None).1
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
