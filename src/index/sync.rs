//! Bringing an index up to date with its folder: each folder's stamp (its
//! modification and change times, taken before it is listed) says whether
//! anything was added, renamed or removed since it was last read; only a
//! changed folder is listed again, and only its new logs (and those with a
//! re-score beside them) are read. So a copied shard folder is picked up,
//! and an unchanged history costs a few `stat` calls.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

use super::rows::{TurnBody, TurnRow, relative};
use super::{IndexError, RunIndex, in_transaction};
use crate::runs::RunLogReader;
use crate::runs::naming::is_run_log;
use crate::runs::store::{RunLogError, refused, summarize};

/// The folder of eval-run summaries (`index::evals`).
pub const EVALS_FOLDER: &str = "evals";
/// Rows written per transaction while a folder is read.
const BATCH: usize = 2_000;

/// What a sync did.
#[derive(Debug, Default)]
pub struct SyncReport {
    /// Logs in the folders read.
    pub listed: usize,
    /// Logs read (new, or with a re-score beside them).
    pub read: usize,
    /// Rows of logs no longer there.
    pub removed: usize,
    /// Logs that could not be read, each said as a scan says it.
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

impl RunIndex {
    /// Reads what changed since the last sync (everything, the first time).
    pub fn sync(&self) -> Result<SyncReport, IndexError> {
        let folder_error = |source| IndexError::Folder {
            path: self.root.display().to_string(),
            source,
        };
        let real_root = self.root.canonicalize().map_err(folder_error)?;
        let mut report = SyncReport::default();
        let on_disk = folders(&self.root).map_err(folder_error)?;
        let stored: HashMap<String, String> = self
            .query_pairs("SELECT name, stamp FROM folders")
            .map_err(|e| self.error(e))?;
        for (name, path) in &on_disk {
            let Ok(stamp) = stamp_of(path) else { continue };
            if stored.get(name) == Some(&stamp) {
                continue;
            }
            if name == EVALS_FOLDER {
                super::evals::read_folder(self, path, &stamp, &mut report)?;
            } else {
                self.read_folder(name, path, &real_root, &stamp, &mut report)?;
            }
        }
        let names: HashSet<&String> = on_disk.iter().map(|(name, _)| name).collect();
        for gone in stored.keys().filter(|name| !names.contains(name)) {
            report.removed += self.forget_folder(gone).map_err(|e| self.error(e))?;
        }
        report
            .problems
            .extend(self.unreadable().map_err(|e| self.error(e))?);
        self.refresh_numbers()?;
        Ok(report)
    }

    /// Lists one folder of logs and reads those the index lacks, a batch
    /// at a time as the listing goes: nothing holds every path of a folder
    /// of a million logs (an eval's end catches the index up, SPEC §9).
    fn read_folder(
        &self,
        name: &str,
        path: &Path,
        real_root: &Path,
        stamp: &str,
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        let folder_error = |source| IndexError::Folder {
            path: path.display().to_string(),
            source,
        };
        let rescores = rescores_in(path).map_err(folder_error)?;
        // Rows the index has; those still left once the listing is read
        // are of logs gone from the folder.
        let mut known: HashSet<String> = self
            .query_pairs_one("SELECT path FROM turns WHERE folder = ?1", name)
            .map_err(|e| self.error(e))?;
        let mut unreadable: Vec<(String, RunLogError)> = Vec::new();
        let mut reader = RunLogReader::default();
        let mut batch: Vec<PathBuf> = Vec::with_capacity(BATCH);
        let mut read = |batch: &mut Vec<PathBuf>, report: &mut SyncReport| {
            self.read_batch(batch, real_root, &mut reader, (&mut unreadable, report))
        };
        let entries = std::fs::read_dir(path).map_err(folder_error)?;
        for entry in entries {
            let log = entry.map_err(folder_error)?.path();
            if !is_run_log(&log) {
                continue;
            }
            report.listed += 1;
            let was_known = known.remove(&relative(&log, &self.root));
            let rescored = rescores.contains(&crate::runs::rescore::rescore_path(&log));
            if !was_known || rescored {
                batch.push(log);
            }
            if batch.len() == BATCH {
                read(&mut batch, report)?;
            }
        }
        read(&mut batch, report)?;
        let gone: Vec<&String> = known.iter().collect();
        report.removed += gone.len();
        let db = self.lock();
        in_transaction(&db, |db| {
            if !gone.is_empty() {
                // Removed logs are rare: every run is folded again.
                super::numbers::all_stale(db)?;
            }
            for path in &gone {
                db.execute("DELETE FROM turns WHERE path = ?1", [path])?;
            }
            db.execute("DELETE FROM unreadable WHERE folder = ?1", [name])?;
            for (path, error) in &unreadable {
                db.execute(
                    "INSERT OR REPLACE INTO unreadable (path, folder, error) VALUES (?1, ?2, ?3)",
                    params![path, name, error.to_string()],
                )?;
            }
            set_stamp(db, name, stamp)
        })
        .map_err(|e| self.error(e))
    }

    /// Reads `batch`'s logs into rows and writes them in one transaction;
    /// a log that cannot be read is kept in `unreadable`.
    fn read_batch(
        &self,
        batch: &mut Vec<PathBuf>,
        real_root: &Path,
        reader: &mut RunLogReader,
        (unreadable, report): (&mut Vec<(String, RunLogError)>, &mut SyncReport),
    ) -> Result<(), IndexError> {
        let mut rows = Vec::with_capacity(batch.len());
        for log in batch.drain(..) {
            if let Some(refusal) = refused(&log, real_root) {
                unreadable.push((relative(&log, &self.root), refusal));
                continue;
            }
            match row_of(&log, &self.root, reader) {
                Ok(row) => rows.push(row),
                Err(error) => unreadable.push((relative(&log, &self.root), error)),
            }
        }
        report.read += rows.len();
        let db = self.lock();
        in_transaction(&db, |db| rows.iter().try_for_each(|row| row.upsert(db)))
            .map_err(|e| self.error(e))
    }

    /// Drops the rows of a folder that is gone.
    fn forget_folder(&self, name: &str) -> rusqlite::Result<usize> {
        let db = self.lock();
        in_transaction(&db, |db| {
            super::numbers::all_stale(db)?;
            let removed = db.execute("DELETE FROM turns WHERE folder = ?1", [name])?;
            db.execute("DELETE FROM unreadable WHERE folder = ?1", [name])?;
            if name == EVALS_FOLDER {
                super::evals::forget_all(db)?;
            }
            db.execute("DELETE FROM folders WHERE name = ?1", [name])?;
            Ok(removed)
        })
    }

    /// The logs found unreadable when their folders were last read.
    fn unreadable(&self) -> rusqlite::Result<Vec<String>> {
        let pairs: HashMap<String, String> =
            self.query_pairs("SELECT path, error FROM unreadable")?;
        let mut problems: Vec<(String, String)> = pairs.into_iter().collect();
        problems.sort();
        Ok(problems.into_iter().map(|(_, error)| error).collect())
    }

    fn query_pairs(&self, sql: &str) -> rusqlite::Result<HashMap<String, String>> {
        let db = self.lock();
        let mut statement = db.prepare(sql)?;
        let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
        rows.collect()
    }

    fn query_pairs_one(&self, sql: &str, value: &str) -> rusqlite::Result<HashSet<String>> {
        let db = self.lock();
        let mut statement = db.prepare(sql)?;
        let rows = statement.query_map([value], |row| row.get(0))?;
        rows.collect()
    }
}

/// A log's row from the whole log, so that it carries what `compare`
/// pairs on; from its header and footer alone (`body` unknown) when a
/// line of its body cannot be read, as a listing reads it.
fn row_of(log: &Path, root: &Path, reader: &mut RunLogReader) -> Result<TurnRow, RunLogError> {
    if let Ok(whole) = reader.read(log) {
        let mut row = TurnRow::of(&whole.view(), root);
        row.body = Some(TurnBody::of(&whole));
        return Ok(row);
    }
    summarize(log).map(|summary| TurnRow::of(&summary.view(), root))
}

pub(super) fn set_stamp(db: &Connection, name: &str, stamp: &str) -> rusqlite::Result<()> {
    db.execute(
        "INSERT OR REPLACE INTO folders (name, stamp) VALUES (?1, ?2)",
        params![name, stamp],
    )?;
    Ok(())
}

/// The runs folder itself (`""`, for logs directly in it) and its real
/// subfolders, by name (a link to a folder is not followed, as listing does),
/// but not the stored prompts, which hold no logs.
fn folders(root: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut found = vec![(String::new(), root.to_path_buf())];
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if entry.file_type().is_ok_and(|kind| kind.is_dir())
            && let Ok(name) = entry.file_name().into_string()
            && name != crate::runs::prompt_store::PROMPTS_FOLDER
        {
            found.push((name, entry.path()));
        }
    }
    Ok(found)
}

/// A folder's modification and change times: any entry added, removed or
/// renamed changes them, and the change time cannot be set back by a copy
/// that keeps times (`cp -a`).
pub(super) fn stamp_of(path: &Path) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    Ok(format!(
        "{}.{:09} {}.{:09}",
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    ))
}

/// The re-scores (`<log stem>.verdict.json`) in one folder: the logs
/// beside them are read again, their standing verdict being the re-score's.
fn rescores_in(dir: &Path) -> std::io::Result<HashSet<PathBuf>> {
    let mut verdicts = HashSet::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.to_string_lossy().ends_with(".verdict.json") {
            verdicts.insert(path);
        }
    }
    Ok(verdicts)
}
