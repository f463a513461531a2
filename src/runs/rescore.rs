//! Verdicts given to a recorded turn after it ran (`eval --rescore`), kept
//! beside its run log in `<log stem>.verdict.json`. The run log itself —
//! the model's events and the verdict of the run — is never rewritten; a
//! re-score replaces the previous one whole (`whole_file`).
//! `eval --report`, `eval --resume` and `compare` read the re-score when
//! there is one for the same turn.

use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::record::RecordedVerdict;
use super::store::RunLog;
use crate::judge::RubricVerdict;
use crate::whole_file::Durability;

/// The most a re-score file may hold.
const MAX_RESCORE_BYTES: u64 = 16 * 1024 * 1024;

/// `<log stem>.verdict.json`, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RescoreRecord {
    /// The turn it re-scores (a file copied beside another log is ignored).
    pub turn_id: String,
    pub suite: String,
    pub case: String,
    pub variant: String,
    pub fingerprint: String,
    pub rescored_at: DateTime<Utc>,
    pub verdict: RecordedVerdict,
}

/// `runs/<fp>/<time>-<id>.ndjson` → `runs/<fp>/<time>-<id>.verdict.json`.
pub fn rescore_path(log: &Path) -> PathBuf {
    let name = log
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(super::naming::PARTIAL_SUFFIX)
        .unwrap_or(name);
    let stem = stem.strip_suffix(".ndjson").unwrap_or(stem);
    log.with_file_name(format!("{stem}.verdict.json"))
}

/// The re-score beside `log` for turn `turn_id`: `Ok(None)` when there is
/// none, an error when there is one that cannot be read.
pub fn read_rescore(log: &Path, turn_id: &str) -> io::Result<Option<RescoreRecord>> {
    let path = rescore_path(log);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let bytes = crate::input::read_limited(file, MAX_RESCORE_BYTES)?;
    let record: RescoreRecord = serde_json::from_slice(&bytes).map_err(|error| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("`{}` is not a re-score: {error}", path.display()),
        )
    })?;
    Ok((record.turn_id == turn_id).then_some(record))
}

/// Writes `record` beside `log`, replacing any earlier re-score.
pub fn write_rescore(log: &Path, record: &RescoreRecord) -> io::Result<PathBuf> {
    let path = rescore_path(log);
    let mut text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
    text.push('\n');
    // Not synced, as before: a re-score lost to a power loss is made again
    // by running `eval --rescore` again. A link at its name is replaced,
    // never written through (`whole_file`).
    let written = crate::whole_file::replace(&path, Durability::Unsynced, |out| {
        out.write_all(text.as_bytes())
    });
    if let Err(error) = written {
        // A folder that takes no more names says so (`full_folder`).
        return Err(super::full_folder::explain(error, &path));
    }
    Ok(path)
}

/// The verdict that stands for a recorded turn: its re-score's when there
/// is one, else its footer's. A re-score that cannot be read is an `error`
/// verdict naming it — never silently the older verdict.
pub fn current_verdict(log: &RunLog, path: &Path) -> Option<RecordedVerdict> {
    standing_verdict(path, &log.header.turn_id, log.footer.as_ref())
}

/// `current_verdict` from what a listing reads (the footer, not the log).
pub fn standing_verdict(
    path: &Path,
    turn_id: &str,
    footer: Option<&super::record::RunFooter>,
) -> Option<RecordedVerdict> {
    match read_rescore(path, turn_id) {
        Ok(Some(record)) => Some(record.verdict),
        Ok(None) => footer.and_then(|f| f.verdict.clone()),
        Err(error) => Some(RecordedVerdict {
            outcome: super::record::Outcome::Error,
            failures: vec![UnreadableRescore::new(path, error).to_string()],
            rubric: Vec::new(),
        }),
    }
}

/// The judge's recorded rubric verdicts of a turn (see `current_verdict`);
/// an error when its re-score cannot be read.
pub fn recorded_rubric(log: &RunLog, path: &Path) -> Result<Vec<RubricVerdict>, UnreadableRescore> {
    match read_rescore(path, &log.header.turn_id) {
        Ok(Some(record)) => Ok(record.verdict.rubric),
        Ok(None) => Ok(log
            .footer
            .as_ref()
            .and_then(|f| f.verdict.as_ref())
            .map(|v| v.rubric.clone())
            .unwrap_or_default()),
        Err(error) => Err(UnreadableRescore::new(path, error)),
    }
}

/// A re-score beside a log that is there but cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("the re-score `{path}` cannot be read: {error}")]
pub struct UnreadableRescore {
    path: String,
    error: io::Error,
}

impl UnreadableRescore {
    fn new(log: &Path, error: io::Error) -> Self {
        UnreadableRescore {
            path: rescore_path(log).display().to_string(),
            error,
        }
    }
}
