//! The request log writer's SQLite connection, on a thread of its own, through
//! `rusqlite` (SQLite's C API with no runtime around it).
//!
//! Why not sqlx's SQLite driver, like every other statement here: sqlx runs a
//! connection on a worker thread and answers each statement of an `execute` with
//! a message on a channel, and each message woke the writer's task. A batch took
//! a dozen statements (the transaction, the padded inserts, the per-minute
//! counts), so a flush cost about 14 context switches on the main runtime and 12
//! on the worker (`scripts/thread-cpu.sh 1 60`: the log was 168 of the gateway's
//! 451 µs of CPU per request at one request a second, an agent's pace, most of it
//! waking threads). Here a whole flush is one job: the writer hands the batch over
//! (one wake-up), this thread writes it in one transaction, through prepared
//! statements of a few row counts per table (`multi_insert`) with no hand-off
//! between them, and answers once (one wake-up back).
//!
//! rusqlite uses the same `libsqlite3-sys` as sqlx (one SQLite build in the
//! binary, with this crate's compile-time options), so both see the same file
//! with the same library. Every other connection, and Postgres in team mode, stays
//! on sqlx.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use super::{CONNECTION_PRAGMAS, LOG_WRITER_SECURE_DELETE, StoreError, StoreResult};

/// Work for the connection's thread.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// The thread's name (in `top -H`, `scripts/thread-cpu.sh`).
const THREAD_NAME: &str = "switchyard-log-db";

/// A SQLite connection owned by a thread that runs one job at a time.
pub(super) struct LogThread {
    /// `None` once closed.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    /// Signalled (dropped) by the thread once the connection has closed.
    closed: Mutex<Option<oneshot::Receiver<()>>>,
    /// The database file, for messages.
    path: PathBuf,
}

impl std::fmt::Debug for LogThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogThread").field("path", &self.path).finish()
    }
}

impl LogThread {
    /// Opens `path` (created when missing) on a new thread, with the shared
    /// pool's pragmas and the log writer's `secure_delete`.
    pub(super) async fn open(path: &Path) -> StoreResult<LogThread> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (opened, ready) = oneshot::channel();
        let (on_close, closed) = oneshot::channel::<()>();
        let file = path.to_path_buf();
        std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || {
                let mut conn = match connect(&file) {
                    Ok(conn) => {
                        let _ = opened.send(Ok(()));
                        conn
                    }
                    Err(e) => {
                        let _ = opened.send(Err(e));
                        return;
                    }
                };
                // Ends when every sender is gone (closed, or the store dropped).
                // A job that panics loses its own answer (its caller gets an
                // error; a transaction it held rolls back as it unwinds), not
                // the thread: the next batch is written as usual.
                while let Ok(job) = queue.recv() {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut conn)));
                }
                // Closing the last connection to the file checkpoints the write-ahead log.
                let _ = conn.close();
                drop(on_close);
            })
            .map_err(|source| StoreError::Io { path: path.to_path_buf(), source })?;
        ready.await.map_err(|_| gone())??;
        Ok(LogThread {
            jobs: Mutex::new(Some(jobs)),
            closed: Mutex::new(Some(closed)),
            path: path.to_path_buf(),
        })
    }

    /// Runs `work` on the connection and returns what it returned.
    pub(super) async fn run<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let _ = reply.send(work(conn));
        });
        {
            let jobs = self.jobs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            jobs.as_ref().ok_or_else(gone)?.send(job).map_err(|_| gone())?;
        }
        Ok(answer.await.map_err(|_| gone())??)
    }

    /// Closes the connection once the jobs sent before have run, and returns when
    /// it has closed (a checkpoint, when it was the last connection, included).
    /// Later jobs fail.
    pub(super) async fn close(&self) {
        // Dropping the sender ends the thread's loop after the queued jobs.
        drop(self.jobs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take());
        let closed = self.closed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(closed) = closed {
            let _ = closed.await;
        }
    }
}

/// The connection, set up as the shared pool's (`CONNECTION_PRAGMAS`) except
/// for `secure_delete` (see `LOG_WRITER_SECURE_DELETE`).
fn connect(path: &Path) -> StoreResult<Connection> {
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.execute_batch(CONNECTION_PRAGMAS)?;
    conn.execute_batch(LOG_WRITER_SECURE_DELETE)?;
    Ok(conn)
}

/// The thread is gone: closed, or it could not start.
fn gone() -> StoreError {
    StoreError::Database(sqlx::Error::WorkerCrashed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_job_that_panics_fails_alone_and_the_thread_goes_on() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let thread = LogThread::open(&dir.path().join("log.sqlite")).await.unwrap_or_else(|e| panic!("{e}"));
        thread
            .run(|conn| conn.execute_batch("CREATE TABLE t (x INTEGER)"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let failed = thread
            .run(|conn| -> rusqlite::Result<()> {
                let tx = conn.transaction()?;
                tx.execute("INSERT INTO t VALUES (1)", [])?;
                panic!("a bug in a job, inside a transaction");
            })
            .await;
        assert!(failed.is_err());
        thread
            .run(|conn| conn.execute("INSERT INTO t VALUES (2)", []))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let rows: Vec<i64> = thread
            .run(|conn| conn.prepare("SELECT x FROM t")?.query_map([], |row| row.get(0))?.collect())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rows, [2], "the panicking job's transaction rolled back");
        thread.close().await;
    }
}
