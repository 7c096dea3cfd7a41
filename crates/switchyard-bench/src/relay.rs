//! A reference point: the cheapest possible HTTP/1.1 reverse proxy, run as a
//! separate process (this binary re-executed with the hidden `relay` subcommand).
//!
//! It forwards each client connection's requests over its own upstream connection,
//! bodies streamed through untouched, with no auth, routing, parsing or logging.
//! Whatever it adds over the direct run is the cost of the extra loopback hop and
//! process on this machine (syscalls, thread wake-ups, TCP), the floor that no
//! gateway can beat. The report puts it next to the gateway's figures so the
//! gateway's own share of its added latency can be read off.
//!
//! Failure behaviour: an upstream failure closes that client connection.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hyper::body::Incoming;
use hyper::client::conn::http1 as client_http1;
use hyper::server::conn::http1 as server_http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

/// Serves the relay forever (the `relay` subcommand).
pub async fn serve(listen: SocketAddr, upstream: SocketAddr) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    loop {
        let (client, _) = listener.accept().await?;
        tokio::spawn(async move {
            if let Err(e) = relay_connection(client, upstream).await {
                eprintln!("relay: {e:#}");
            }
        });
    }
}

async fn relay_connection(client: TcpStream, upstream: SocketAddr) -> anyhow::Result<()> {
    client.set_nodelay(true)?;
    let stream = TcpStream::connect(upstream).await?;
    stream.set_nodelay(true)?;
    let (sender, driver) = client_http1::handshake::<_, Incoming>(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = driver.await;
    });
    // One request at a time per HTTP/1.1 connection, so the lock is never contended.
    let sender = std::sync::Arc::new(Mutex::new(sender));
    let service = service_fn(move |req| {
        let sender = sender.clone();
        async move { sender.lock().await.send_request(req).await }
    });
    server_http1::Builder::new().serve_connection(TokioIo::new(client), service).await?;
    Ok(())
}

/// The relay child process.
pub struct RelayProcess {
    child: Child,
    addr: SocketAddr,
}

impl RelayProcess {
    /// Starts `exe relay --listen ... --upstream ...` and waits until it accepts.
    pub async fn start(exe: &Path, upstream: SocketAddr) -> anyhow::Result<RelayProcess> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut child = Command::new(exe)
            .arg("relay")
            .arg("--listen")
            .arg(addr.to_string())
            .arg("--upstream")
            .arg(upstream.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} relay", exe.display()))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(addr).await.is_err() {
            if let Some(status) = child.try_wait()? {
                bail!("relay exited during start ({status})");
            }
            if Instant::now() > deadline {
                bail!("relay not accepting on {addr} after 10 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(RelayProcess { child, addr })
    }

    /// Its pid (0 if it already exited).
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// Its listen address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Kills it.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}
