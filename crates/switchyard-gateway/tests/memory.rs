//! An SSE frame that never ends cannot grow the gateway (issue 9): an upstream sends
//! `data: ` followed by 300 MiB without a line break, once before its first event
//! and once after one. The gateway bounds a partial frame at 1 MiB: before the
//! commit the attempt fails over (no candidate left: an error status), after it the
//! client's stream ends with one error event. The gateway runs as its own process,
//! as a user runs it, so its peak RSS (`VmHWM`) is its alone: it stays under 64 MB.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{http, serve, stop};

const FLOOD_BYTES: u64 = 300 * 1024 * 1024;
const TOKEN: &str = "sym-memory-test-token-1";
const CLIENT_KEY: &str = "sy-memory-test-client-key";

/// A fake Anthropic upstream whose every answer is a 200 SSE stream that, after an
/// optional first event, starts a `data:` line and never ends it. Counts the bytes
/// it managed to write (the gateway stops reading, so far fewer than 300 MiB).
struct Flood {
    url: String,
    written: Arc<AtomicU64>,
}

impl Flood {
    fn start() -> Flood {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://{}", listener.local_addr().unwrap_or_else(|e| panic!("{e}")));
        let written = Arc::new(AtomicU64::new(0));
        let counter = written.clone();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(stream) = stream else { continue };
                let counter = counter.clone();
                // Odd connections first send one real event, so the gateway commits.
                std::thread::spawn(move || flood(stream, n % 2 == 1, &counter));
            }
        });
        Flood { url, written }
    }
}

fn flood(stream: TcpStream, event_first: bool, written: &AtomicU64) {
    let mut reader = BufReader::new(stream.try_clone().unwrap_or_else(|e| panic!("{e}")));
    let mut length = 0_usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0_u8; length];
    let _ = reader.read_exact(&mut body);
    let mut out = stream;
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let mut prefix = head.to_owned();
    if event_first {
        prefix.push_str(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\
             \"role\":\"assistant\",\"model\":\"claude-sonnet-4-6\",\"content\":[],\"stop_reason\":null,\
             \"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
        );
    }
    prefix.push_str("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":\"");
    if out.write_all(prefix.as_bytes()).is_err() {
        return;
    }
    let chunk = vec![b'x'; 64 * 1024];
    let mut sent = 0_u64;
    while sent < FLOOD_BYTES {
        if out.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len() as u64;
        written.fetch_add(chunk.len() as u64, Ordering::Relaxed);
    }
}

/// The gateway's peak resident set in KiB (`VmHWM`).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in /proc/{pid}/status"))
}

#[test]
fn an_unterminated_300_mib_frame_keeps_the_gateway_under_64_mb() {
    let upstream = Flood::start();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let config = dir.path().join("switchyard.toml");
    std::fs::write(
        &config,
        format!(
            "[[api_keys]]\nname = \"ide\"\nkey = \"{CLIENT_KEY}\"\n\n[[connections]]\nid = \"flood\"\n\
             provider = \"anthropic\"\napi_key = \"sk-flood\"\nbase_url = \"{}\"\n",
            upstream.url
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let served = serve(
        &dir.path().join("data"),
        &["--management-token", TOKEN, "--config", config.to_str().unwrap_or_default()],
    );
    let request = r#"{"model":"claude-sonnet-4-6","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let messages = format!("{}/v1/messages", served.base_url);

    // Before the first event: the attempt fails over; with no other candidate the
    // client gets an error status naming the oversized event.
    let (status, body) = http("POST", &messages, Some(CLIENT_KEY), Some(request));
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("larger than 1 MiB"), "{body}");

    // The failure cooled the only connection; clear it, then the committed case:
    // the stream ends with one error event after the first event.
    let (status, body) = http(
        "POST",
        &format!("{}/api/resilience/cooldowns", served.base_url),
        Some(TOKEN),
        Some(r#"{"all":true}"#),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = http("POST", &messages, Some(CLIENT_KEY), Some(request));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("message_start"), "{body}");
    assert_eq!(body.matches("event: error").count(), 1, "{body}");
    assert!(!body.contains("xxxx"), "the partial frame never reaches the client");

    let peak_mb = peak_rss_kib(served.child.id()) / 1024;
    let written_mb = upstream.written.load(Ordering::Relaxed) / (1024 * 1024);
    stop(served);
    eprintln!(
        "gateway peak RSS {peak_mb} MB; the upstream wrote {written_mb} MiB before the gateway stopped reading"
    );
    assert!(written_mb < 300, "the gateway read the whole flood ({written_mb} MiB)");
    assert!(peak_mb < 64, "gateway peak RSS {peak_mb} MB (upstream wrote {written_mb} MiB)");
}
