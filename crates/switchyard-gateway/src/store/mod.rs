//! Persistence: connections, client keys, combos, aliases, settings, the resilience
//! state, pins, leases and the request log, in one of two backends behind one
//! boundary — the embedded SQLite file (WAL mode; the default) or a Postgres server
//! that several replicas share (team mode, SPEC §9).
//!
//! Both backends run the same SQL through sqlx's `Any` driver: queries use `$N`
//! placeholders, integer columns only (booleans as 0/1, `BIGINT` in Postgres) and
//! portable upserts, so one statement serves both; [`Backend`] picks what is not
//! portable (locking, pragmas). Each backend has its own migrations
//! (`migrations/` and `migrations/postgres/`), kept in step by a schema test. One
//! exception: the request log writer's inserts on a SQLite file go through SQLite's
//! own driver ([`LogStore`]), where `Any` cost a second copy of every bound text.
//!
//! The store is only touched by management operations, start-up and the request-log
//! writer; the request path reads an in-memory snapshot instead (see `routing`).
//! Every multi-row change runs in one transaction, so a failure leaves nothing
//! half-written.

mod api_keys;
mod client_requests;
mod connections;
mod json_insert;
mod leases;
mod log_store;
mod log_thread;
mod multi_insert;
mod request_log;
mod request_stats;
mod resilience_state;
mod routing_tables;
mod session_pins;
mod settings;
mod team_state;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::install_default_drivers;
use sqlx::migrate::Migrator;
use sqlx::{Any, AnyPool, Executor, Transaction};

pub use api_keys::ApiKeyRecord;
pub use client_requests::RequestLogRow;
pub use connections::ConnectionRecord;
pub use leases::{AcquireOutcome, LeaseHolder, LeaseRow, LeaseSlot, LeaseState, TransitionOutcome};
pub use log_store::LogStore;
pub use request_log::{AttemptLogRow, LogBatch};
pub use request_stats::{MINUTE_MS, SummaryCounts};
pub use resilience_state::{StateRow, StateWrite};
pub use routing_tables::{AliasRecord, ComboRecord};
pub use session_pins::PinRow;
pub use team_state::TeamStateRow;

/// Migrations of the embedded SQLite file.
static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations");
/// Migrations of a shared Postgres database (same schema, Postgres types).
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/postgres");

/// Errors of the persistence layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The request log writer's SQLite connection failed (`log_thread`).
    #[error("database error: {0}")]
    LogDatabase(#[from] rusqlite::Error),
    /// Applying migrations failed.
    #[error("migration error: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored JSON column could not be read.
    #[error("corrupt stored document in {table}.{column}: {source}")]
    Corrupt {
        /// Table name.
        table: &'static str,
        /// Column name.
        column: &'static str,
        /// The parse error.
        source: serde_json::Error,
    },
    /// A conditional write found the document at another version than the one its
    /// change was made to (another writer got there first).
    #[error("{what} changed since version {expected}")]
    Stale {
        /// The document, for the message (`connection 'a'`).
        what: String,
        /// The version the writer expected.
        expected: i64,
    },
    /// Creating the data directory or database file failed.
    #[error("cannot prepare data directory {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The database URL is not one this build can use.
    #[error("unsupported database URL (expected postgres://… or postgresql://…)")]
    UnsupportedUrl,
}

/// Result alias of this module.
pub type StoreResult<T> = Result<T, StoreError>;

/// The outcome of a conditional write that touched `rows` rows: none means the
/// expected version was not the stored one.
fn stale_unless(rows: u64, what: impl FnOnce() -> String, expected: Option<i64>) -> StoreResult<()> {
    match expected {
        Some(expected) if rows == 0 => Err(StoreError::Stale { what: what(), expected }),
        _ => Ok(()),
    }
}

/// `PRAGMA user_version` once the one-time vacuum for `secure_delete` has run (1),
/// and since that vacuum also switched the file to `auto_vacuum = INCREMENTAL` (2).
const SCRUBBED_USER_VERSION: i64 = 2;

/// Free pages (4 KB each) below which [`Store::reclaim`] leaves the file as it is.
const RECLAIM_MIN_PAGES: i64 = 1_024;

/// The file name of the database inside the data directory.
pub const DATABASE_FILE: &str = "switchyard.sqlite";

/// How long a Postgres operation waits for a pooled connection before failing, so a
/// replica whose database went away fails fast and keeps routing (fail open).
const POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// Which database holds the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded file in the data directory (one process).
    Sqlite,
    /// A Postgres server shared by every replica (team mode).
    Postgres,
}

impl Backend {
    /// The backend's name, as health and logs show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// Where the database is; the URL may hold a password, so it is never printed.
enum Location {
    File(String),
    Server(String),
}

/// Handle to the database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    location: Arc<Location>,
    /// A batch store: one connection inside one transaction ([`Store::begin_batch`]).
    batch: bool,
}

impl std::fmt::Debug for Store {
    // Hand-written: the Postgres URL may carry a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("backend", &self.backend).field("batch", &self.batch).finish()
    }
}

/// A lock shared by every replica ([`Store::replica_lock`]); released on drop.
pub struct ReplicaLock {
    _tx: Transaction<'static, Any>,
}

/// Whether `url` names a Postgres server.
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

impl Store {
    /// Opens (creating if needed) the database in `data_dir`, in WAL mode, and
    /// applies pending migrations.
    ///
    /// Secrets at rest: `secure_delete` zeroes what a write replaces or deletes, so
    /// an old API key does not linger in free pages; a database written before that
    /// (an upgrade) is vacuumed once at open. [`Store::scrub`] then truncates the
    /// WAL after a secret changes, since the log still holds old page images.
    pub async fn open(data_dir: &Path) -> StoreResult<Store> {
        let path = data_dir.join(DATABASE_FILE);
        create_private_file(&path)?;
        let location = Location::File(format!("sqlite://{}", path.display()));
        // Three, and the log writer's own (Store::for_log_writer): four in all.
        let pool = connect(&location, 3, PoolUse::Shared).await?;
        SQLITE_MIGRATIONS.run(&pool).await?;
        let store = Store { pool, backend: Backend::Sqlite, location: Arc::new(location), batch: false };
        store.vacuum_once().await?;
        Ok(store)
    }

    /// Connects to the Postgres server at `url` (team mode) and applies pending
    /// migrations. Replicas may start together: Postgres migrations take sqlx's
    /// advisory lock, so only one applies them.
    pub async fn connect_postgres(url: &str) -> StoreResult<Store> {
        if !is_postgres_url(url) {
            return Err(StoreError::UnsupportedUrl);
        }
        let location = Location::Server(url.to_owned());
        let pool = connect(&location, 8, PoolUse::Shared).await?;
        POSTGRES_MIGRATIONS.run(&pool).await?;
        Ok(Store { pool, backend: Backend::Postgres, location: Arc::new(location), batch: false })
    }

    /// The Postgres store when `database_url` is given, else the file in `data_dir`.
    pub async fn open_configured(data_dir: &Path, database_url: Option<&str>) -> StoreResult<Store> {
        match database_url {
            Some(url) => Store::connect_postgres(url).await,
            None => Store::open(data_dir).await,
        }
    }

    /// Which backend this store uses.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The Postgres URL, in team mode (for the change listener's own connection).
    pub fn postgres_url(&self) -> Option<&str> {
        match self.location.as_ref() {
            Location::Server(url) => Some(url),
            Location::File(_) => None,
        }
    }

    /// Rewrites the file once (`VACUUM`, which cannot run inside the migrations'
    /// transactions) so free pages from before `secure_delete` hold no old secret,
    /// and so the file is in `auto_vacuum = INCREMENTAL` mode (a mode only a
    /// `VACUUM` can switch an existing file to): pages retention frees can then be
    /// given back to the file system ([`Store::reclaim`]). `user_version` records
    /// that it ran. On a new, empty file it costs a few milliseconds; an existing
    /// one is rewritten whole once (seconds for a large request log, and room for
    /// a copy of the file).
    async fn vacuum_once(&self) -> StoreResult<()> {
        let done: i64 = sqlx::query_scalar("PRAGMA user_version").fetch_one(&self.pool).await?;
        if done >= SCRUBBED_USER_VERSION {
            return Ok(());
        }
        // One connection: the mode set by the pragma is what this VACUUM applies.
        let mut conn = self.pool.acquire().await?;
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL").await?;
        match conn.execute("VACUUM").await {
            Ok(_) => {}
            // Already scrubbed (an upgrade), only the mode is missing: a file that
            // cannot be rewritten now (no room for the copy) keeps working as it
            // is and is tried again at the next start.
            Err(e) if done >= 1 => {
                tracing::warn!(event = "store.vacuum_failed", error = %e);
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        }
        conn.execute(sqlx::AssertSqlSafe(format!("PRAGMA user_version = {SCRUBBED_USER_VERSION}"))).await?;
        drop(conn);
        tracing::info!(event = "store.vacuumed", upgraded_from = done);
        self.scrub().await
    }

    /// Checkpoints and truncates the write-ahead log after a secret was replaced or
    /// deleted: its old page images would otherwise keep the secret on disk until
    /// overwritten. Cheap (credential changes are rare) and safe at any time. A
    /// Postgres server manages its own files.
    pub async fn scrub(&self) -> StoreResult<()> {
        if self.batch || self.backend == Backend::Postgres {
            // Not inside a transaction: the batch's owner scrubs after the commit.
            return Ok(());
        }
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.pool).await?;
        Ok(())
    }

    /// A transaction serialized against every other one that takes `lock`: SQLite's
    /// write lock taken up front (`BEGIN IMMEDIATE`, so it never reads a snapshot
    /// another writer then invalidates), or a transaction-scoped Postgres advisory
    /// lock, which serializes across replicas too.
    async fn begin_serialized(&self, lock: i64) -> StoreResult<Transaction<'static, Any>> {
        match self.backend {
            Backend::Sqlite => Ok(self.pool.begin_with("BEGIN IMMEDIATE").await?),
            Backend::Postgres => {
                let mut tx = self.pool.begin().await?;
                sqlx::query("SELECT CAST(1 AS BIGINT) FROM (SELECT pg_advisory_xact_lock($1)) AS l")
                    .bind(lock)
                    .execute(&mut *tx)
                    .await?;
                Ok(tx)
            }
        }
    }

    /// Team mode: a lock named `name` that every replica sharing the database
    /// respects, held until the returned guard is dropped (a transaction-scoped
    /// Postgres advisory lock; dropping the transaction releases it). `None` with
    /// SQLite, where one process is the only writer and its own locks suffice.
    pub async fn replica_lock(&self, name: &str) -> StoreResult<Option<ReplicaLock>> {
        if self.backend != Backend::Postgres {
            return Ok(None);
        }
        let key = i64::from_be_bytes(crate::secrets::hash_key(name)[..8].try_into().unwrap_or([0; 8]));
        Ok(Some(ReplicaLock { _tx: self.begin_serialized(key).await? }))
    }

    /// A store whose every write goes into one transaction (on a dedicated
    /// connection), for writes that must land together or not at all — the config
    /// file's import. It reads its own uncommitted writes; nothing is visible
    /// elsewhere, or survives a crash, before [`Store::commit_batch`]. While it is
    /// open other SQLite writers wait (the busy timeout), so keep it short.
    pub async fn begin_batch(&self) -> StoreResult<Store> {
        let pool = connect(&self.location, 1, PoolUse::Batch).await?;
        let begin = match self.backend {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN",
        };
        sqlx::query(begin).execute(&pool).await?;
        Ok(Store { pool, backend: self.backend, location: self.location.clone(), batch: true })
    }

    /// Commits a batch store's transaction and closes it.
    pub async fn commit_batch(self) -> StoreResult<()> {
        sqlx::query("COMMIT").execute(&self.pool).await?;
        self.pool.close().await;
        Ok(())
    }

    /// Discards a batch store's writes and closes it (dropping it without a commit
    /// does the same: a transaction whose connection closes is rolled back).
    pub async fn rollback_batch(self) {
        if let Err(e) = sqlx::query("ROLLBACK").execute(&self.pool).await {
            tracing::warn!(event = "store.rollback_failed", error = %e);
        }
        self.pool.close().await;
    }

    /// The underlying pool (for tests that inspect the database directly).
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Closes the pool, checkpointing the WAL.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// What a pool is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PoolUse {
    /// Everything's reads and writes.
    Shared,
    /// One batch transaction ([`Store::begin_batch`]): its one connection stays open
    /// for the pool's whole life, and losing it fails every later statement.
    Batch,
    /// The request log's writer ([`Store::for_log_writer`]): its one connection
    /// stays open (with the statements prepared on it); a lost one is replaced.
    LogWriter,
}

/// Every SQLite connection's settings.
const CONNECTION_PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
     PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA secure_delete = ON; \
     PRAGMA journal_size_limit = 16777216;";

/// `secure_delete` on the request log writer's connection, which deletes only log
/// rows (retention), and those never hold a secret: `FAST` still zeroes what a
/// deletion leaves inside a page that is written anyway, but a page freed whole is
/// no longer read, zeroed and written back (with `ON`, retention at saturation
/// read and wrote every page it freed: as many page writes as the inserts made).
/// Every other connection keeps `ON`, for the secrets it deletes.
const LOG_WRITER_SECURE_DELETE: &str = "PRAGMA secure_delete = FAST";

/// The settings of a pool of `size` connections for `purpose`, whichever driver:
/// every pool but the shared one keeps its connections open for its whole life.
fn pool_options<DB: sqlx::Database>(size: u32, purpose: PoolUse) -> sqlx::pool::PoolOptions<DB> {
    let options = sqlx::pool::PoolOptions::<DB>::new().max_connections(size);
    if purpose == PoolUse::Shared {
        return options;
    }
    options.min_connections(1).idle_timeout(None).max_lifetime(None)
}

/// A pool of `size` connections to `location`, for `purpose`.
async fn connect(location: &Location, size: u32, purpose: PoolUse) -> StoreResult<AnyPool> {
    install_default_drivers();
    let pinned = purpose == PoolUse::Batch;
    let options = pool_options::<Any>(size, purpose);
    let pool = match location {
        Location::File(url) => {
            // A connection to a local file cannot drop silently, so the pool's
            // check before each acquire (a `ping`, one more round trip to the
            // connection's thread) buys nothing.
            options
                .test_before_acquire(false)
                .after_connect(move |conn, _meta| {
                    Box::pin(async move {
                        conn.execute(CONNECTION_PRAGMAS).await?;
                        Ok(())
                    })
                })
                .connect(&format!("{url}?mode=rwc"))
                .await?
        }
        Location::Server(url) => {
            let mut options = options.acquire_timeout(POSTGRES_ACQUIRE_TIMEOUT);
            if pinned {
                // A batch's transaction lives on its one connection: if that
                // connection is lost, a new one must not take over (its statements
                // would commit one by one), so every later statement fails instead.
                let opened = Arc::new(std::sync::atomic::AtomicBool::new(false));
                options = options.after_connect(move |_conn, _meta| {
                    let again = opened.swap(true, std::sync::atomic::Ordering::SeqCst);
                    Box::pin(async move {
                        if again {
                            return Err(sqlx::Error::Protocol(
                                "the batch's database connection was lost; its transaction is gone"
                                    .to_owned(),
                            ));
                        }
                        Ok(())
                    })
                });
            }
            options.connect(url).await?
        }
    };
    Ok(pool)
}

/// Creates the database file with owner-only permissions before SQLite opens it,
/// since it holds upstream credentials.
fn create_private_file(path: &Path) -> StoreResult<()> {
    if path.exists() {
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(StoreError::Io { path: path.to_path_buf(), source }),
    }
}

/// Parses a JSON column, naming the column on failure.
fn parse_json<T: serde::de::DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    text: &str,
) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|source| StoreError::Corrupt { table, column, source })
}

/// Serialises a value for a JSON column. Our own types always serialise.
fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}
