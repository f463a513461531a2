//! The index's file, looked at before SQLite opens it, so that opening the
//! run index never alters a file promptlab did not make: a link at its name
//! (or at a companion's, `-wal`, `-shm`, `-journal`) is refused; a file that
//! is not promptlab's index — another database, a file of text — is moved
//! aside, never emptied; promptlab's own index of another schema version,
//! or with tables it does not expect, is rebuilt in place with a note.
//!
//! promptlab's own index says so in its header: SQLite's `application_id`
//! (offset 68) is [`APPLICATION_ID`]. The header is read directly, so a
//! foreign file is recognised before any SQLite connection (whose journal
//! settings alone would write to it) touches it. Every change to the tables
//! bumps `schema::SCHEMA_VERSION` once; nothing else here changes with it.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::{BUSY_TIMEOUT, INDEX_FILE, IndexError, cannot_be_kept, in_transaction, schema};

/// `PRAGMA application_id` of every index promptlab makes: "plab".
pub const APPLICATION_ID: i32 = 0x706c_6162;
/// The files SQLite keeps beside a database, by the suffix of its name.
const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];
/// SQLite's header: its magic string and where the application id is.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";
const HEADER: usize = 100;
const APPLICATION_ID_AT: usize = 68;

/// What is at the index's name, by its header, never through a link.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// No file, or an empty one (a process that has just created it).
    Nothing,
    /// promptlab's index, by its application id.
    Ours,
    /// An SQLite database without an application id: an index of schema 1
    /// (made before the id was set), or a database of something else.
    Unmarked,
    /// Anything else: another application's database, a file of text.
    Foreign,
    /// A folder, a FIFO, a device: nothing an index can be kept in.
    NotAFile,
}

/// The link at the index's name, or at a companion's, as an error naming
/// it and where it points; `None` when there is none. A link is never
/// followed: a repository can commit one, pointing at any database of the
/// user's, and SQLite would open and change what it points to.
pub fn linked(runs_dir: &Path) -> Option<IndexError> {
    let path = runs_dir.join(INDEX_FILE);
    std::iter::once(path.clone())
        .chain(COMPANIONS.iter().map(|suffix| with_suffix(&path, suffix)))
        .find(|name| name.symlink_metadata().is_ok_and(|m| m.is_symlink()))
        .map(|link| IndexError::Linked {
            target: std::fs::read_link(&link)
                .map(|target| target.display().to_string())
                .unwrap_or_else(|_| "an unreadable target".to_string()),
            path: link.display().to_string(),
        })
}

/// Whether the file at `path` is promptlab's index, by its header, or
/// there is none yet (what an eval's catch-up asks: it makes one where
/// there is none, and leaves anything else — a link, another database — to
/// a reader, who says what it does with it).
pub fn is_ours_or_absent(path: &Path) -> bool {
    matches!(look(path), Ok(Found::Ours | Found::Nothing))
}

/// Opens (creating) the index of `runs_dir`, settled: promptlab's own, of
/// this schema version, with the tables it expects. A link is refused; a
/// foreign file is moved aside and a new index made; one of another version
/// or with other tables is rebuilt. Each of these says so in a note.
pub fn open_settled(runs_dir: &Path) -> Result<(Connection, Vec<String>), IndexError> {
    if let Some(link) = linked(runs_dir) {
        return Err(link);
    }
    let path = runs_dir.join(INDEX_FILE);
    let not_kept = |why: &dyn std::fmt::Display| IndexError::NotKept {
        dir: runs_dir.display().to_string(),
        why: why.to_string(),
    };
    let mut notes = Vec::new();
    let found = look(&path).map_err(|error| not_kept(&error))?;
    match found {
        Found::NotAFile => return Err(not_kept(&format!("`{INDEX_FILE}` is not a file"))),
        Found::Unmarked if is_schema_1_index(&path) => {}
        Found::Unmarked | Found::Foreign => {
            notes.push(move_aside(&path).map_err(|e| not_kept(&e))?)
        }
        Found::Nothing | Found::Ours => {}
    }
    match connect_and_settle(&path) {
        Ok((db, note)) => {
            notes.extend(note);
            Ok((db, notes))
        }
        Err(error) if cannot_be_kept(&error) => Err(not_kept(&error)),
        // Unreadable as a database although its header looked right: ours
        // is a damaged cache, removed; anything else is moved aside.
        Err(error) => {
            if found == Found::Ours {
                remove_with_companions(&path);
                notes.push(format!(
                    "`{}` is a damaged run index ({error}): rebuilt from the run logs",
                    path.display()
                ));
            } else {
                notes.push(move_aside(&path).map_err(|e| not_kept(&e))?);
            }
            let (db, _) = connect_and_settle(&path).map_err(|source| IndexError::Sqlite {
                path: path.display().to_string(),
                source,
            })?;
            Ok((db, notes))
        }
    }
}

/// The header of the file at `path`, read without following a link or
/// waiting on a FIFO.
fn look(path: &Path) -> std::io::Result<Found> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Nothing),
        Err(error) => return Err(error),
    };
    if !file.metadata()?.is_file() {
        return Ok(Found::NotAFile);
    }
    let mut header = Vec::with_capacity(HEADER);
    file.take(HEADER as u64).read_to_end(&mut header)?;
    Ok(match header.get(..HEADER) {
        _ if header.is_empty() => Found::Nothing,
        Some(header) if header.starts_with(MAGIC) => {
            let at = APPLICATION_ID_AT;
            let id =
                i32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
            match id {
                APPLICATION_ID => Found::Ours,
                0 => Found::Unmarked,
                _ => Found::Foreign,
            }
        }
        _ => Found::Foreign,
    })
}

/// Whether an SQLite file without an application id in its header is
/// promptlab's all the same: an index of schema 1 (it had none), or one
/// whose id is still in its write-ahead log. Read through a read-only
/// connection; a file that cannot be read so is not taken for ours.
fn is_schema_1_index(path: &Path) -> bool {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let Ok(db) = Connection::open_with_flags(path, flags) else {
        return false;
    };
    let id: rusqlite::Result<i32> = db.query_row("PRAGMA application_id", [], |row| row.get(0));
    if id == Ok(APPLICATION_ID) {
        return true;
    }
    let mut tables = table_names(&db).unwrap_or_default();
    tables.sort();
    tables == schema::SCHEMA_1_TABLES
}

/// Moves the file at `path` and its companions to
/// `<name>.foreign-<UTC time>` (and `…-wal`, `…-shm`), never over a file
/// already there; the note saying so.
fn move_aside(path: &Path) -> Result<String, MoveAsideError> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let base = format!("{}.foreign-{stamp}", path.display());
    let mut attempt = 1;
    let aside = loop {
        let aside = match attempt {
            1 => PathBuf::from(&base),
            n => PathBuf::from(format!("{base}-{n}")),
        };
        match rename_new(path, &aside) {
            Ok(()) => break aside,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(source) => {
                return Err(MoveAsideError {
                    path: path.display().to_string(),
                    source,
                });
            }
        }
    };
    for suffix in COMPANIONS {
        let companion = with_suffix(path, suffix);
        if companion.symlink_metadata().is_ok() {
            let _ = rename_new(&companion, &with_suffix(&aside, suffix));
        }
    }
    Ok(format!(
        "`{}` is not a run index promptlab made: moved aside to `{}`; a new index is built from the run logs",
        path.display(),
        aside.display()
    ))
}

/// A foreign file that could not be moved aside: the index is not kept.
#[derive(Debug, thiserror::Error)]
#[error("`{path}` is not a run index promptlab made, and could not be moved aside: {source}")]
struct MoveAsideError {
    path: String,
    source: std::io::Error,
}

/// `rename` that never replaces a file at `to`.
fn rename_new(from: &Path, to: &Path) -> std::io::Result<()> {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        from,
        rustix::fs::CWD,
        to,
        rustix::fs::RenameFlags::NOREPLACE,
    )
    .map_err(std::io::Error::from)
}

fn remove_with_companions(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(with_suffix(path, suffix));
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A connection to the file at `path` (created when missing), never
/// through a link, with the busy timeout that lets writers take turns.
fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let db = Connection::open_with_flags(path, flags)?;
    db.busy_timeout(BUSY_TIMEOUT)?;
    db.execute_batch("PRAGMA synchronous = NORMAL")?;
    super::schema::leave_keys_unenforced(&db)?;
    Ok(db)
}

/// Connects and settles the index in one immediate transaction (so two
/// processes opening it at once neither both make nor both rebuild it),
/// then asks for WAL where the filesystem allows it. A new index is made
/// before WAL is set, so its application id is in the file's own header
/// (where `look` reads it), not only in a write-ahead log.
fn connect_and_settle(path: &Path) -> rusqlite::Result<(Connection, Option<String>)> {
    let db = connect(path)?;
    let note = in_transaction(&db, |db| {
        Ok(match check(db)? {
            Check::Current => None,
            Check::Empty => {
                schema::create(db)?;
                None
            }
            Check::Stale(why) => {
                schema::drop_all(db)?;
                schema::create(db)?;
                Some(format!(
                    "`{}` {why}: rebuilt from the run logs",
                    path.display()
                ))
            }
            // Something else took the name between `look` and now.
            Check::Foreign => return Err(rusqlite::Error::InvalidQuery),
        })
    })?;
    // Answers `wal`, or the journal mode kept where WAL cannot be set.
    let _mode: String = db.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if note.is_some() {
        // The rebuilt header into the file itself, for the next `look`;
        // a reader holding the log back only delays it.
        let _ = db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    Ok((db, note))
}

/// What an open index holds, against what this version keeps.
enum Check {
    Current,
    /// No tables and no application id: a file just created.
    Empty,
    /// promptlab's, but not as this version keeps it: why, for the note.
    Stale(String),
    Foreign,
}

fn check(db: &Connection) -> rusqlite::Result<Check> {
    let id: i32 = db.query_row("PRAGMA application_id", [], |row| row.get(0))?;
    let mut tables = table_names(db)?;
    tables.sort();
    if id != APPLICATION_ID {
        return Ok(if tables.is_empty() && id == 0 {
            Check::Empty
        } else if id == 0 && tables == schema::SCHEMA_1_TABLES {
            Check::Stale("was made by an older promptlab (index schema 1)".to_string())
        } else {
            Check::Foreign
        });
    }
    let version: i64 = db.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if version != schema::SCHEMA_VERSION {
        let age = if version > schema::SCHEMA_VERSION {
            "a newer"
        } else {
            "an older"
        };
        return Ok(Check::Stale(format!(
            "was made by {age} promptlab (index schema {version}; this one keeps {})",
            schema::SCHEMA_VERSION
        )));
    }
    if schema::definitions(db)? != schema::expected_definitions()? {
        return Ok(Check::Stale(
            "does not hold the tables and columns this promptlab keeps".to_string(),
        ));
    }
    Ok(Check::Current)
}

fn table_names(db: &Connection) -> rusqlite::Result<Vec<String>> {
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?
        .query_map([], |row| row.get(0))?
        .collect()
}
