//! Eval runs' summaries, kept as files so that the files stay the truth:
//! `<runs dir>/evals/<ev-id>.json` (a shard's `<ev-id>.shard-I-of-N.json`),
//! written whole when an eval run ends — its NDJSON summary record, when it
//! ran, and the turns it counted. The index reads them into
//! `eval_summaries` and `eval_run_turns`; `runs reindex` reads them again.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};

pub use super::eval_file::TurnWalk;
use super::rows::note_eval_run;
use super::sync::{EVALS_FOLDER, SyncReport, set_stamp};
use super::{IndexError, RunIndex, in_transaction};
use crate::whole_file::Durability;

/// The largest summary file read (a million turn ids fit).
const MAX_SUMMARY_BYTES: u64 = 64 * 1024 * 1024;

/// One eval run's summary file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunFile {
    pub eval_run: String,
    /// `run`, `merge` or `rescore`.
    pub run_kind: String,
    pub suite: String,
    /// `I/N` for one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    pub planned: usize,
    pub cancelled: bool,
    pub exit: u8,
    /// The turns its summary counted (run now, resumed, merged or re-scored).
    pub turn_ids: Vec<String>,
    /// Of those, the ones taken from logs (resumed, merged, re-scored): the
    /// rest carry this run's id in their own logs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from_logs: Vec<String>,
    /// The `summary` record of its NDJSON output, as printed.
    pub summary: serde_json::Value,
}

impl EvalRunFile {
    /// `pass` (exit 0), `cancelled`, or `fail`.
    pub fn status(&self) -> &'static str {
        match (self.cancelled, self.exit) {
            (true, _) => "cancelled",
            (false, 0) => "pass",
            _ => "fail",
        }
    }

    /// Its name in the `evals` folder.
    pub fn file_name(&self) -> String {
        match &self.shard {
            Some(shard) => format!(
                "{}.shard-{}.json",
                self.eval_run,
                shard.replace('/', "-of-")
            ),
            None => format!("{}.json", self.eval_run),
        }
    }
}

/// Writes the summary of `run` (its `turn_ids` and `from_logs` left empty:
/// they come from `turns`) into `runs_dir/evals/`, whole (`whole_file`),
/// for the index to read as it catches up. The file reads back as the same
/// `EvalRunFile` with the lists filled in.
pub fn record_eval_run(
    runs_dir: &Path,
    run: &EvalRunFile,
    turns: &mut TurnWalk,
) -> std::io::Result<PathBuf> {
    let dir = runs_dir.join(EVALS_FOLDER);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(run.file_name());
    crate::whole_file::replace(&path, Durability::Synced, |out| {
        super::eval_file::write_file(out, run, turns)
    })?;
    Ok(path)
}

const MEMBER_SQL: &str =
    "INSERT OR REPLACE INTO eval_run_turns (eval_run, turn_id, borrowed) VALUES (?1, ?2, ?3)";

/// Adds one summary file's rows, replacing those it had.
pub(super) fn upsert(db: &Connection, file: &str, run: &EvalRunFile) -> rusqlite::Result<()> {
    upsert_head(db, file, run, run.turn_ids.len())?;
    let mut member = db.prepare_cached(MEMBER_SQL)?;
    let borrowed: HashSet<&String> = run.from_logs.iter().collect();
    for turn in &run.turn_ids {
        member.execute(params![run.eval_run, turn, borrowed.contains(turn)])?;
    }
    Ok(())
}

/// The summary's own row and the eval run's, with `turns` counted.
fn upsert_head(
    db: &Connection,
    file: &str,
    run: &EvalRunFile,
    turns: usize,
) -> rusqlite::Result<()> {
    forget(db, file)?;
    let nanos = super::rows::nanos;
    db.prepare_cached(
        "INSERT INTO eval_summaries (file, eval_run, kind, shard, planned, turns, status, exit,
         started_at, ended_at, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        file,
        run.eval_run,
        run.run_kind,
        run.shard,
        i64::try_from(run.planned).unwrap_or(i64::MAX),
        i64::try_from(turns).unwrap_or(i64::MAX),
        run.status(),
        run.exit,
        run.started_at.to_rfc3339(),
        run.ended_at.to_rfc3339(),
        run.summary.to_string(),
    ])?;
    note_eval_run(
        db,
        &run.eval_run,
        &run.suite,
        nanos(run.started_at),
        nanos(run.ended_at),
    )
}

/// Drops one summary file's rows (its members stay if another shard's
/// file names them too).
fn forget(db: &Connection, file: &str) -> rusqlite::Result<()> {
    db.execute(
        "UPDATE eval_runs SET numbers_stale = 1
         WHERE id IN (SELECT eval_run FROM eval_summaries WHERE file = ?1)",
        [file],
    )?;
    db.execute("DELETE FROM eval_summaries WHERE file = ?1", [file])?;
    db.execute(
        "DELETE FROM eval_run_turns WHERE eval_run NOT IN (SELECT eval_run FROM eval_summaries)",
        [],
    )?;
    Ok(())
}

pub(super) fn forget_all(db: &Connection) -> rusqlite::Result<()> {
    super::numbers::all_stale(db)?;
    db.execute("DELETE FROM eval_summaries", [])?;
    db.execute("DELETE FROM eval_run_turns", [])?;
    Ok(())
}

/// Reads the summary files of the `evals` folder again, whole (there is
/// one per eval run, not one per turn).
pub(super) fn read_folder(
    index: &RunIndex,
    dir: &Path,
    stamp: &str,
    report: &mut SyncReport,
) -> Result<(), IndexError> {
    let listed = std::fs::read_dir(dir).map_err(|source| IndexError::Folder {
        path: dir.display().to_string(),
        source,
    })?;
    let mut files = Vec::new();
    for entry in listed.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("ev-") && name.ends_with(".json") {
            match read_file(&entry.path()) {
                Ok(run) => files.push((name, run)),
                Err(problem) => report.problems.push(problem.to_string()),
            }
        }
    }
    let names: HashSet<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    let db = index.lock();
    in_transaction(&db, |db| {
        let known: Vec<String> = db
            .prepare("SELECT file FROM eval_summaries")?
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for file in known.iter().filter(|file| !names.contains(file.as_str())) {
            forget(db, file)?;
        }
        for (name, run) in &files {
            upsert(db, name, run)?;
        }
        set_stamp(db, EVALS_FOLDER, stamp)
    })
    .map_err(|e| index.error(e))
}

/// One summary file, or why it cannot be read (said as a skipped file).
fn read_file(path: &Path) -> Result<EvalRunFile, UnreadableSummary> {
    let unreadable = |problem| UnreadableSummary {
        path: path.display().to_string(),
        problem,
    };
    let bytes = std::fs::File::open(path)
        .and_then(|file| crate::input::read_limited(file, MAX_SUMMARY_BYTES))
        .map_err(|error| unreadable(SummaryProblem::Read(error)))?;
    let run: EvalRunFile = serde_json::from_slice(&bytes).map_err(|error| {
        unreadable(SummaryProblem::Invalid(crate::text::quote(
            &error.to_string(),
        )))
    })?;
    if !crate::runs::version::is_eval_run_id(&run.eval_run) {
        return Err(unreadable(SummaryProblem::NotAnId(crate::text::quote(
            &run.eval_run,
        ))));
    }
    Ok(run)
}

/// A summary file skipped by the sync, and why.
#[derive(Debug, thiserror::Error)]
#[error("eval summary `{path}`: {problem}")]
struct UnreadableSummary {
    path: String,
    problem: SummaryProblem,
}

#[derive(Debug, thiserror::Error)]
enum SummaryProblem {
    #[error("{0}")]
    Read(std::io::Error),
    /// serde's message, quoted briefly.
    #[error("{0}")]
    Invalid(String),
    #[error("`{0}` is not an eval run id")]
    NotAnId(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ended run of suite `s` with no turns, named `eval_run`.
    fn run_file(eval_run: &str) -> EvalRunFile {
        EvalRunFile {
            eval_run: eval_run.into(),
            run_kind: "run".into(),
            suite: "s".into(),
            shard: None,
            started_at: Utc::now(),
            ended_at: Utc::now(),
            planned: 0,
            cancelled: false,
            exit: 0,
            turn_ids: Vec::new(),
            from_logs: Vec::new(),
            summary: serde_json::Value::Null,
        }
    }

    /// What a run of this pid killed while writing its summary leaves (a
    /// container's eval is pid 1 every time) does not stop the next.
    #[test]
    fn a_temporary_left_by_a_killed_run_of_the_same_pid_is_not_in_the_way() {
        let runs = tempfile::tempdir().unwrap();
        let run = run_file("ev-0000000001");
        let evals = runs.path().join(EVALS_FOLDER);
        std::fs::create_dir_all(&evals).unwrap();
        let left = format!(".{}.tmp-{}", run.file_name(), std::process::id());
        std::fs::write(evals.join(left), "{\"evalRun\":").unwrap();
        let mut no_turns = |_: &mut dyn FnMut(&str, bool) -> std::io::Result<()>| Ok(());
        let written = record_eval_run(runs.path(), &run, &mut no_turns).unwrap();
        assert_eq!(read_file(&written).unwrap().eval_run, "ev-0000000001");
    }

    #[test]
    fn a_summary_file_that_is_not_one_is_named_and_quoted_briefly_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("ev-0000000001.json");
        std::fs::write(&garbage, "x".repeat(10_000)).unwrap();
        let problem = read_file(&garbage).unwrap_err().to_string();
        assert!(problem.starts_with(&format!("eval summary `{}`: ", garbage.display())));
        assert!(problem.len() < 400, "{problem}");
        let file = run_file("../../etc");
        let named = dir.path().join("ev-0000000002.json");
        std::fs::write(&named, serde_json::to_vec(&file).unwrap()).unwrap();
        assert!(
            read_file(&named)
                .unwrap_err()
                .to_string()
                .ends_with("`../../etc` is not an eval run id")
        );
        assert_eq!(
            EvalRunFile {
                eval_run: "ev-0000000003".into(),
                shard: Some("2/3".into()),
                ..file
            }
            .file_name(),
            "ev-0000000003.shard-2-of-3.json"
        );
    }
}
