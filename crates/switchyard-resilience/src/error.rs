//! The crate's errors. The engine's request-path operations do not fail (they
//! fail open: unknown targets are eligible); only restoring persisted state can.

/// What can go wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResilienceError {
    /// A snapshot written by an incompatible version.
    #[error("unsupported resilience snapshot version {0} (expected {1})")]
    UnsupportedSnapshotVersion(u32, u32),
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, ResilienceError>;
