//! Helpers shared by the tests that run the `switchyard` binary as a user does.

#![allow(dead_code, reason = "each test binary uses its own subset")]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running `switchyard serve` child.
pub struct Served {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// The start-up banner's lines (stderr), up to the token line.
    pub banner: Vec<String>,
    /// The rest of stderr, read until the process closes it.
    rest_of_stderr: std::thread::JoinHandle<Vec<String>>,
}

/// Starts `switchyard serve` on a free loopback port with `data_dir` and `extra` args.
pub fn serve(data_dir: &std::path::Path, extra: &[&str]) -> Served {
    serve_under(&[], data_dir, extra)
}

/// [`serve`], run through `wrapper` (e.g. `prlimit --nofile=1024:1024 --`), which
/// must exec the binary in place so the child is the gateway.
pub fn serve_under(wrapper: &[&str], data_dir: &std::path::Path, extra: &[&str]) -> Served {
    serve_with(wrapper, data_dir, extra, &[])
}

/// [`serve`] with `env` set in the child's environment (the rest inherited).
pub fn serve_with_env(data_dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Served {
    serve_with(&[], data_dir, extra, env)
}

fn serve_with(wrapper: &[&str], data_dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Served {
    let binary = env!("CARGO_BIN_EXE_switchyard");
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(binary);
            command
        }
        None => Command::new(binary),
    };
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .args(extra)
        .env_remove("SWITCHYARD_MANAGEMENT_TOKEN")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start switchyard: {e}"));
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
    let mut lines = BufReader::new(stderr).lines();
    let mut base_url = String::new();
    let mut banner = Vec::new();
    // The banner is a handful of lines; reading stops at the token line or EOF.
    for _ in 0..200 {
        let Some(Ok(line)) = lines.next() else { break };
        banner.push(line.clone());
        if let Some(url) = line.strip_prefix("Switchyard gateway listening on ") {
            base_url = url.trim().to_owned();
        }
        if line.contains("management token") {
            break;
        }
    }
    assert!(!base_url.is_empty(), "the gateway never said where it listens");
    // Keep draining stderr so the child never blocks on a full pipe.
    let rest_of_stderr = std::thread::spawn(move || lines.map_while(Result::ok).collect());
    Served { child, base_url, banner, rest_of_stderr }
}

/// Sends SIGTERM, asserts a clean exit, and returns what the process printed on stdout.
pub fn stop(served: Served) -> String {
    stop_with_stderr(served).0
}

/// [`stop`], also returning what the process printed on stderr after its banner.
pub fn stop_with_stderr(served: Served) -> (String, String) {
    let pid = served.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let output = served.child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    assert!(output.status.success(), "exit status {:?}", output.status);
    let stderr = served.rest_of_stderr.join().unwrap_or_default().join("\n");
    (String::from_utf8_lossy(&output.stdout).into_owned(), stderr)
}

/// One HTTP/1.1 request over a plain `TcpStream` (`Connection: close`, so the body
/// ends with the connection): the status and the raw body after the headers.
pub fn http(method: &str, url: &str, token: Option<&str>, body: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap_or(url);
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    // An answer that does not come within 10 s reads as status 0, never a hung test.
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap_or_else(|e| panic!("{e}"));
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let content = body.map_or_else(String::new, |b| {
        format!("Content-Type: application/json\r\nContent-Length: {}\r\n", b.len())
    });
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{auth}{content}Connection: close\r\n\r\n{}",
        body.unwrap_or("")
    );
    stream.write_all(request.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let response = String::from_utf8_lossy(&raw).into_owned();
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}
