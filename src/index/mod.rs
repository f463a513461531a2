//! The run index, `<runs dir>/index.sqlite`: one row per run log, one per
//! eval run, so that history is a query rather than a scan
//! (`docs/run-logs.md` documents the tables). The files stay the truth: the
//! index is a cache with one way of being kept current — a reader brings
//! it up to date when a folder changed since it was last read (a copied
//! shard folder, an eval's new logs), and an eval catches it up (making it
//! if there is none) once at its end (`RunIndex::catch_up`) — rebuilt whole when it is of another schema
//! version or unreadable. A folder that cannot be written, a folder given
//! as an argument, or `PROMPTLAB_INDEX=off` is scanned into an index in
//! memory, so every query has one implementation.

mod eval_file;
pub mod evals;
pub mod file;
pub mod history;
mod numbers;
pub mod pairs;
pub mod query;
pub mod rows;
pub mod schema;
pub mod sync;

use parking_lot::{Mutex, MutexGuard};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

/// The index's file name in a runs folder (`**/index.sqlite*` is git-ignored).
pub const INDEX_FILE: &str = "index.sqlite";
/// `PROMPTLAB_INDEX=off`: scan, never open or write an index (for a runs
/// folder on a network filesystem, where SQLite's locking cannot be trusted).
pub const INDEX_ENV: &str = "PROMPTLAB_INDEX";
/// How long a writer waits for another to finish (concurrent evals).
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("run index `{path}`: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("failed to read runs folder `{path}`: {source}")]
    Folder {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A link at the index's name: never followed (`file::linked`).
    #[error(
        "`{path}` is a link to `{target}`: promptlab never opens its run index through a link \
         (remove the link, and promptlab keeps its own index there)"
    )]
    Linked { path: String, target: String },
    /// The folder takes files, but an index cannot be kept there.
    #[error("the run index cannot be kept in {dir} ({why})")]
    NotKept { dir: String, why: String },
}

/// Why a runs folder is read by scanning rather than through its index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanReason {
    /// `PROMPTLAB_INDEX=off`.
    Off,
    /// The folder cannot be written.
    ReadOnly,
    /// A folder given as an argument, not the configured runs folder.
    Argument,
    /// The folder takes files, but its index cannot be written there.
    NotKept,
    /// A link at the index's name, never followed.
    Linked,
}

/// Errors of writing the index file, not of what it holds: the folder is
/// then read without one (`RunIndex::open`).
fn cannot_be_kept(error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{CannotOpen, DiskFull, ReadOnly, SystemIoFailure};
    matches!(
        error.sqlite_error_code(),
        Some(DiskFull | ReadOnly | SystemIoFailure | CannotOpen)
    )
}

/// An index: the one in a runs folder, or one built in memory by a scan.
pub struct RunIndex {
    root: PathBuf,
    db: Mutex<Connection>,
    scanned: Option<ScanReason>,
}

/// An index opened for reading, brought up to date, and what a reader
/// should be told: logs that could not be read, and notes such as "no
/// index: scanning 12,400 logs" or that an unreadable index was rebuilt.
pub struct Opened {
    pub index: RunIndex,
    pub notes: Vec<String>,
    /// Logs that could not be read, each said as a scan says it.
    pub problems: Vec<String>,
}

/// "no index: scanning 12,400 logs", said once by the reader of a folder
/// that is scanned.
pub fn scan_note(logs: usize) -> String {
    format!(
        "no index: scanning {} {}",
        thousands(logs as u64),
        if logs == 1 { "log" } else { "logs" }
    )
}

/// `12400` → `12,400`.
pub fn thousands(count: u64) -> String {
    let digits = count.to_string();
    let mut out = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Whether `PROMPTLAB_INDEX` turns the index off.
pub fn index_off() -> bool {
    std::env::var(INDEX_ENV).is_ok_and(|value| value.eq_ignore_ascii_case("off"))
}

impl RunIndex {
    /// The configured runs folder's index, brought up to date; a scan into
    /// memory when it is off or the folder cannot be written.
    pub fn open(runs_dir: &Path) -> Result<Opened, IndexError> {
        if index_off() {
            return Self::scan(runs_dir, ScanReason::Off);
        }
        if !runs_dir.is_dir() {
            // Nothing recorded yet: an empty index, and nothing to say.
            let index = Self::in_memory(runs_dir, ScanReason::Argument)?;
            return Ok(Opened {
                index,
                notes: Vec::new(),
                problems: Vec::new(),
            });
        }
        if !writable(runs_dir) {
            return Self::scan(runs_dir, ScanReason::ReadOnly);
        }
        match Self::open_kept(runs_dir) {
            // The folder can be written but the index not kept there (a
            // full disk, an I/O error, something else under its name), or
            // its name is a link: the logs are read all the same, as from
            // a read-only folder, after a line saying why.
            Err(error @ (IndexError::NotKept { .. } | IndexError::Linked { .. })) => {
                let reason = match error {
                    IndexError::Linked { .. } => ScanReason::Linked,
                    _ => ScanReason::NotKept,
                };
                let mut opened = Self::scan(runs_dir, reason)?;
                opened.notes.insert(0, error.to_string());
                Ok(opened)
            }
            Err(IndexError::Sqlite { source, .. }) if cannot_be_kept(&source) => {
                let mut opened = Self::scan(runs_dir, ScanReason::NotKept)?;
                let why = IndexError::NotKept {
                    dir: runs_dir.display().to_string(),
                    why: source.to_string(),
                };
                opened.notes.insert(0, why.to_string());
                Ok(opened)
            }
            opened => opened,
        }
    }

    /// Brings the runs folder's index up to date at the end of an eval
    /// (SPEC §9), making it where there is none, so that the first `evals`,
    /// `runs list` or `compare` after the eval is as fast as the second:
    /// where an index may be kept — promptlab's own by its header, or none
    /// yet; not turned off; in a folder this process may write. Anything
    /// else at its name is left to a reader, who says what it does with
    /// it, and a failure here leaves the rows to that reader.
    pub fn catch_up(runs_dir: &Path) -> Result<(), IndexError> {
        let ours = file::is_ours_or_absent(&runs_dir.join(INDEX_FILE));
        if index_off() || !ours || !writable(runs_dir) {
            return Ok(());
        }
        Self::open_kept(runs_dir).map(drop)
    }

    /// The runs folder's own index file, opened and brought up to date.
    fn open_kept(runs_dir: &Path) -> Result<Opened, IndexError> {
        let (db, mut notes) = file::open_settled(runs_dir)?;
        let index = RunIndex {
            root: runs_dir.to_path_buf(),
            db: Mutex::new(db),
            scanned: None,
        };
        let report = index.sync()?;
        notes.extend(report.notes);
        Ok(Opened {
            index,
            notes,
            problems: report.problems,
        })
    }

    /// `dir` read by scanning into an index in memory (a folder given as an
    /// argument, or a runs folder that cannot carry an index); says so,
    /// except when the index was turned off on purpose.
    pub fn scan(dir: &Path, reason: ScanReason) -> Result<Opened, IndexError> {
        let index = Self::in_memory(dir, reason)?;
        let report = index.sync()?;
        let mut notes = report.notes;
        if reason != ScanReason::Off {
            notes.insert(0, scan_note(report.read));
        }
        Ok(Opened {
            index,
            notes,
            problems: report.problems,
        })
    }

    /// Drops every row and reads every log again (`runs reindex`); the
    /// report's notes say what was found at the index's name.
    pub fn rebuild(runs_dir: &Path) -> Result<(RunIndex, sync::SyncReport), IndexError> {
        let (db, notes) = file::open_settled(runs_dir)?;
        schema::drop_all(&db)
            .and_then(|()| schema::create(&db))
            .map_err(|source| sqlite_error(runs_dir, source))?;
        let index = RunIndex {
            root: runs_dir.to_path_buf(),
            db: Mutex::new(db),
            scanned: None,
        };
        let mut report = index.sync()?;
        report.notes.splice(0..0, notes);
        Ok((index, report))
    }

    fn in_memory(dir: &Path, reason: ScanReason) -> Result<RunIndex, IndexError> {
        let db = Connection::open_in_memory()
            .and_then(|db| schema::create(&db).map(|()| db))
            .map_err(|source| sqlite_error(dir, source))?;
        Ok(RunIndex {
            root: dir.to_path_buf(),
            db: Mutex::new(db),
            scanned: Some(reason),
        })
    }

    /// The folder whose logs it indexes.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Why it was built by a scan; `None` for the runs folder's own index.
    pub fn scanned(&self) -> Option<ScanReason> {
        self.scanned
    }

    /// The connection. (A panic while it was held leaves SQLite
    /// consistent, each change being a transaction: it stays usable.)
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.db.lock()
    }

    fn error(&self, source: rusqlite::Error) -> IndexError {
        sqlite_error(&self.root, source)
    }
}

fn sqlite_error(dir: &Path, source: rusqlite::Error) -> IndexError {
    IndexError::Sqlite {
        path: dir.join(INDEX_FILE).display().to_string(),
        source,
    }
}

/// Whether this process may create files in `dir`.
fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(name) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `name` is a valid NUL-terminated path for the call's duration.
    unsafe { libc::access(name.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Runs `change` as one immediate transaction: it takes the write lock at
/// once (waiting out the busy timeout), so two writers never interleave.
fn in_transaction<T>(
    db: &Connection,
    change: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    db.execute_batch("BEGIN IMMEDIATE")?;
    match change(db) {
        Ok(value) => {
            db.execute_batch("COMMIT")?;
            Ok(value)
        }
        Err(error) => {
            let _ = db.execute_batch("ROLLBACK");
            Err(error)
        }
    }
}
