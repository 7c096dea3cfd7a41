//! Connection limits of the `switchyard` binary as a user meets them: under a
//! 1,024-fd limit (hard and soft, a common desktop default) 1,100 idle sockets do
//! not make the gateway unreachable for a new client; the soft fd limit is raised
//! to the hard one at start; the connection flags take effect.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{http, serve, serve_under, stop};

const TOKEN: &str = "sym-limits-test-token";

/// `127.0.0.1:PORT` of a served gateway.
fn addr(base_url: &str) -> std::net::SocketAddr {
    base_url.trim_start_matches("http://").parse().unwrap_or_else(|e| panic!("{base_url}: {e}"))
}

/// Reads until the gateway closes `stream`; what it sent (fails after 10 s).
fn read_until_closed(stream: &mut TcpStream) -> String {
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap_or_else(|e| panic!("{e}"));
    let mut seen = Vec::new();
    match stream.read_to_end(&mut seen) {
        Ok(_) => String::from_utf8_lossy(&seen).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            String::from_utf8_lossy(&seen).into_owned()
        }
        Err(e) => panic!("still open after 10 s ({e}); read so far: {}", String::from_utf8_lossy(&seen)),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn eleven_hundred_idle_sockets_under_a_1024_fd_limit_leave_the_gateway_reachable() {
    // The test's own 1,100 sockets need room in this process (the gateway's limit
    // is set on the child alone).
    let own = switchyard_gateway::conn::raise_nofile_limit();
    assert!(own.is_some_and(|l| l >= 1_300), "this test needs 1,300 fds of its own, has {own:?}");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let served = serve_under(
        &["prlimit", "--nofile=1024:1024", "--"],
        &dir.path().join("data"),
        &["--management-token", TOKEN],
    );
    // The default cap, derived from the limit the gateway really has.
    assert!(
        served.banner.iter().any(|l| l.contains("client connections: up to 448 (open-file limit 1024)")),
        "{:?}",
        served.banner
    );
    let target = addr(&served.base_url);
    let idle: Vec<TcpStream> = (0..1_100)
        .map(|i| {
            TcpStream::connect_timeout(&target, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("idle socket {i} could not connect: {e}"))
        })
        .collect();
    // A new client is answered at once, well inside the 30 s header timeout: idle
    // sockets gave way, nothing timed out. So does the management API (the UI).
    let (status, body) = http("GET", &format!("{}/api/hello", served.base_url), None, None);
    assert_eq!((status, body.as_str()), (200, "{\"ok\":true}"));
    let (status, _) = http("GET", &format!("{}/api/providers", served.base_url), Some(TOKEN), None);
    assert_eq!(status, 200);
    drop(idle);
    stop(served);
}

#[cfg(target_os = "linux")]
#[test]
fn the_soft_fd_limit_is_raised_to_the_hard_limit_at_start() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let served = serve_under(&["prlimit", "--nofile=256:2048", "--"], &dir.path().join("data"), &[]);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", served.child.id())).unwrap_or_default();
    let open_files = limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or_default();
    let values: Vec<&str> = open_files.split_whitespace().skip(3).take(2).collect();
    assert_eq!(values, ["2048", "2048"], "{open_files}");
    assert!(
        served.banner.iter().any(|l| l.contains("client connections: up to 896 (open-file limit 2048)")),
        "{:?}",
        served.banner
    );
    stop(served);
}

#[test]
fn the_connection_flags_take_effect() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let served = serve(
        &dir.path().join("data"),
        &[
            "--management-token",
            TOKEN,
            "--header-read-timeout-secs",
            "1",
            "--body-read-timeout-secs",
            "1",
            "--max-connections",
            "5",
            "--write-stall-timeout-secs",
            "1",
        ],
    );
    assert!(served.banner.iter().any(|l| l.contains("client connections: up to 5")), "{:?}", served.banner);
    let target = addr(&served.base_url);
    // A socket that never sends a request is closed after 1 s (the default is 30 s).
    let mut silent = TcpStream::connect(target).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read_until_closed(&mut silent), "");
    // A body that stops arriving gets 408 after 1 s (the default is 60 s).
    let mut slow = TcpStream::connect(target).unwrap_or_else(|e| panic!("{e}"));
    let head = format!(
        "PATCH /api/resilience HTTP/1.1\r\nHost: {target}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    );
    slow.write_all(head.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let answer = read_until_closed(&mut slow);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    // A client that stops reading is let go 1 s into the stall (the default is 60 s).
    let answered = answers_to_a_client_that_stops_reading(target);
    assert!(answered < PIPELINED, "a client that stopped reading kept its connection ({answered} answers)");
    stop(served);
}

/// Requests a client sends at once without reading (~50 MB): their answers are many
/// times what the socket buffers hold, so the gateway's writes wait for the client;
/// and so are the requests, so the sending cannot end while the gateway waits.
const PIPELINED: usize = 1_000_000;

/// Sends `PIPELINED` requests on one connection and reads nothing until the sending
/// is over (it ends when the gateway closes the connection: the requests do not fit
/// in the socket buffers while the gateway waits), then reads until the gateway
/// closes it and counts the answers. All of them: the connection outlived the stall.
fn answers_to_a_client_that_stops_reading(target: std::net::SocketAddr) -> usize {
    let mut stream = TcpStream::connect(target).unwrap_or_else(|e| panic!("{e}"));
    let mut writer = stream.try_clone().unwrap_or_else(|e| panic!("{e}"));
    let (sent, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let request = format!("GET /api/hello HTTP/1.1\r\nHost: {target}\r\n\r\n");
        let all = request.repeat(PIPELINED);
        // An error here is the gateway closing the connection: the point.
        let _ = writer.write_all(all.as_bytes());
        let _ = sent.send(());
    });
    // Without a limit the sending blocks for good (the gateway stops reading while
    // its writes wait): a bounded wait, then the reading shows which it was.
    let _ = done.recv_timeout(Duration::from_secs(30));
    read_until_closed(&mut stream).matches("HTTP/1.1 200").count()
}
