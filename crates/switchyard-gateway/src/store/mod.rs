//! SQLite persistence (sqlx, WAL mode): connections, client keys, combos, aliases,
//! settings and the request log.
//!
//! The store is only touched by management operations, start-up and the request-log
//! writer; the request path reads an in-memory snapshot instead (see `routing`).
//! Every multi-row change runs in one transaction, so a failure leaves nothing
//! half-written.

mod api_keys;
mod client_requests;
mod connections;
mod leases;
mod request_log;
mod resilience_state;
mod routing_tables;
mod session_pins;
mod settings;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

pub use api_keys::ApiKeyRecord;
pub use client_requests::RequestLogRow;
pub use connections::ConnectionRecord;
pub use leases::{AcquireOutcome, LeaseHolder, LeaseRow, LeaseSlot, LeaseState, TransitionOutcome};
pub use request_log::AttemptLogRow;
pub use resilience_state::{StateRow, StateWrite};
pub use routing_tables::{AliasRecord, ComboRecord};
pub use session_pins::PinRow;

/// Errors of the persistence layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
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

/// `PRAGMA user_version` once the one-time vacuum for `secure_delete` has run.
const SCRUBBED_USER_VERSION: i64 = 1;

/// The file name of the database inside the data directory.
pub const DATABASE_FILE: &str = "switchyard.sqlite";

/// Handle to the SQLite database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    options: SqliteConnectOptions,
    /// A batch store: one connection inside `BEGIN IMMEDIATE` ([`Store::begin_batch`]).
    batch: bool,
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
        let url = format!("sqlite://{}", path.display());
        let options = SqliteConnectOptions::from_str(&url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true)
            .pragma("secure_delete", "on");
        let pool = SqlitePoolOptions::new().max_connections(4).connect_with(options.clone()).await?;
        sqlx::migrate!("../../migrations").run(&pool).await?;
        let store = Store { pool, options, batch: false };
        store.vacuum_once().await?;
        Ok(store)
    }

    /// Rewrites the file once (`VACUUM`, which cannot run inside the migrations'
    /// transactions) so free pages from before `secure_delete` hold no old secret;
    /// `user_version` records that it ran.
    async fn vacuum_once(&self) -> StoreResult<()> {
        let done: i64 = sqlx::query_scalar("PRAGMA user_version").fetch_one(&self.pool).await?;
        if done >= SCRUBBED_USER_VERSION {
            return Ok(());
        }
        sqlx::query("VACUUM").execute(&self.pool).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA user_version = {SCRUBBED_USER_VERSION}")))
            .execute(&self.pool)
            .await?;
        self.scrub().await
    }

    /// Checkpoints and truncates the write-ahead log after a secret was replaced or
    /// deleted: its old page images would otherwise keep the secret on disk until
    /// overwritten. Cheap (credential changes are rare) and safe at any time.
    pub async fn scrub(&self) -> StoreResult<()> {
        if self.batch {
            // Not inside a transaction: the batch's owner scrubs after the commit.
            return Ok(());
        }
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&self.pool).await?;
        Ok(())
    }

    /// A store whose every write goes into one transaction (`BEGIN IMMEDIATE` on a
    /// dedicated connection), for writes that must land together or not at all —
    /// the config file's import. It reads its own uncommitted writes; nothing is
    /// visible elsewhere, or survives a crash, before [`Store::commit_batch`].
    /// While it is open other writers wait (the busy timeout), so keep it short.
    pub async fn begin_batch(&self) -> StoreResult<Store> {
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .connect_with(self.options.clone())
            .await?;
        sqlx::query("BEGIN IMMEDIATE").execute(&pool).await?;
        Ok(Store { pool, options: self.options.clone(), batch: true })
    }

    /// Commits a batch store's transaction and closes it.
    pub async fn commit_batch(self) -> StoreResult<()> {
        sqlx::query("COMMIT").execute(&self.pool).await?;
        self.pool.close().await;
        Ok(())
    }

    /// Discards a batch store's writes and closes it (dropping it without a commit
    /// does the same: SQLite rolls back a transaction whose connection closes).
    pub async fn rollback_batch(self) {
        if let Err(e) = sqlx::query("ROLLBACK").execute(&self.pool).await {
            tracing::warn!(event = "store.rollback_failed", error = %e);
        }
        self.pool.close().await;
    }

    /// The underlying pool (for tests that inspect the database directly).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes the pool, checkpointing the WAL.
    pub async fn close(&self) {
        self.pool.close().await;
    }
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
