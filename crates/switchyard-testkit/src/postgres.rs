//! A throwaway Postgres server for tests and benchmarks: Debian's `postgresql`
//! binaries, a fresh cluster in a temp directory, listening on a free loopback port
//! only, trust authentication, no fsync. Stopped (immediately) on drop.
//!
//! Postgres refuses to run as root, so when the tests run as root (CI) every server
//! command runs as `nobody` through `runuser`, and the directory is handed to it.
//!
//! Where the binaries are missing, [`PgServer::start`] answers `None` and the test
//! skips with a notice, unless `SWITCHYARD_REQUIRE_POSTGRES=1` (set by
//! `scripts/test.sh`, which installs them): then it panics, so CI cannot skip.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// A running (or stopped, between [`PgServer::stop`] and [`PgServer::start_again`])
/// Postgres cluster of one test.
pub struct PgServer {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_nobody: bool,
    running: bool,
}

/// The directory holding `initdb` and `pg_ctl`: `SWITCHYARD_PG_BIN`, else the
/// newest `/usr/lib/postgresql/<version>/bin`.
fn find_bin() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("SWITCHYARD_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .is_some_and(|s| s.trim() == "0")
}

/// The number in the next cluster directory's name (see [`fresh_dir`]).
static NEXT_DIR: AtomicU32 = AtomicU32::new(0);

/// A new directory of this cluster's own. Named by the process and a counter, and
/// made with `create_dir` (which fails on an existing one): a name taken from a free
/// port, as before, could repeat for two tests of one process (a port released is
/// free to be handed out again), and the first test's drop then removed the
/// directory the second's `initdb` was running in.
fn fresh_dir() -> PathBuf {
    loop {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("switchyard-pg-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return dir,
            // Left by an earlier process with the same id (a killed run).
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("{}: {e}", dir.display()),
        }
    }
}

/// A free loopback port for a cluster, never one already given to another cluster of
/// this process: the kernel may hand a released port out again at once, and two
/// tests starting servers side by side would then race for it.
fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("no free loopback port: {e}"));
        let mut given = GIVEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

impl PgServer {
    /// Starts a fresh cluster, or `None` (with a notice) when Postgres is not
    /// installed and not required.
    pub fn start() -> Option<PgServer> {
        let Some(bin) = find_bin() else {
            assert!(
                std::env::var("SWITCHYARD_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "SWITCHYARD_REQUIRE_POSTGRES=1 but no Postgres binaries (apt-get install postgresql)"
            );
            eprintln!("skipping: Postgres is not installed (apt-get install postgresql)");
            return None;
        };
        let dir = fresh_dir();
        let as_nobody = is_root();
        if as_nobody {
            run(Command::new("chown").arg("nobody:nogroup").arg(&dir), "chown");
        }
        let mut server = PgServer { bin, dir, port: free_port(), as_nobody, running: false };
        let data = server.dir.join("data");
        server.run_pg(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        );
        server.start_again();
        Some(server)
    }

    /// The URL of database `postgres` (the cluster's default).
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// The URL of database `name`.
    pub fn url_of(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates database `name` and returns its URL.
    pub fn create_database(&self, name: &str) -> String {
        let status = Command::new(self.bin.join("psql"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", "-q", "-c"])
            .arg(format!("CREATE DATABASE \"{name}\""))
            .stdout(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("psql: {e}"));
        assert!(status.success(), "CREATE DATABASE {name} failed");
        self.url_of(name)
    }

    /// Stops the server at once (`immediate`: like a crash, connections cut).
    pub fn stop(&mut self) {
        if self.running {
            self.run_pg("pg_ctl", &["-D", path_str(&self.dir.join("data")), "-m", "immediate", "-w", "stop"]);
            self.running = false;
        }
    }

    /// Starts the cluster (again) on the same port.
    pub fn start_again(&mut self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let data = self.dir.join("data");
        let log = self.dir.join("server.log");
        self.run_pg("pg_ctl", &["-D", path_str(&data), "-o", &options, "-l", path_str(&log), "-w", "start"]);
        self.running = true;
    }

    fn run_pg(&self, tool: &str, args: &[&str]) {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args).current_dir(&self.dir);
        run(&mut cmd, tool);
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap_or_else(|| panic!("non-UTF-8 path {}", p.display()))
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            let data = self.dir.join("data");
            let exe = self.bin.join("pg_ctl");
            let mut cmd = if self.as_nobody {
                let mut c = Command::new("runuser");
                c.args(["-u", "nobody", "--"]).arg(&exe);
                c
            } else {
                Command::new(&exe)
            };
            let _ = cmd
                .args(["-D", path_str(&data), "-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cluster_gets_a_directory_of_its_own() {
        // One left by an earlier process with this id is passed over, not reused.
        let taken = std::env::temp_dir().join(format!(
            "switchyard-pg-{}-{}",
            std::process::id(),
            NEXT_DIR.load(Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&taken).unwrap_or_else(|e| panic!("{e}"));
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8).map(|_| s.spawn(fresh_dir)).collect();
            threads.into_iter().map(|t| t.join().unwrap_or_else(|_| panic!("fresh_dir panicked"))).collect()
        });
        let mut unique = dirs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), dirs.len(), "{dirs:?}");
        assert!(!dirs.contains(&taken), "{dirs:?}");
        for dir in dirs.iter().chain([&taken]) {
            assert!(dir.is_dir());
            let _ = std::fs::remove_dir(dir);
        }
    }
}
