//! Why the run's database writer could not store or commit rows: SQLite's error, or a commit postponed by
//! another process's lock. The store prefixes `writing PATH failed: `; no variant has a `#[source]`, the
//! message already holding SQLite's reason.

use std::sync::Arc;

/// The writer thread's first error, answered to a flush and returned when the thread ends.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// An insert, `BEGIN` or `COMMIT` failed (shared: the writer keeps it and answers every flush with it).
    #[error("{0}")]
    Sqlite(Arc<rusqlite::Error>),
    /// A flush found its commit postponed: another process holds a lock on the file.
    #[error("commit postponed: the database is locked by another process")]
    CommitPostponed,
}
