//! Reading the run logs a report shows: every log under the given folders,
//! read in parallel (10,000 logs are 10,000 files), filtered by suite, the
//! newest run of each turn kept and the older ones counted as superseded —
//! the same rule `eval --report` and `compare` use — and every log that
//! could not be read named with why, never dropped silently.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::runs::RunLogReader;
use crate::runs::store::{RunLogError, RunLogListing, list_run_logs};
use crate::runs::view::{TurnKey, TurnPlace};

use super::turn::{ReportTurn, SharedText};
use super::{ReportError, list_dirs};

/// What a report is built from.
#[derive(Debug, Clone, Default)]
pub struct LoadedRuns {
    /// One per turn (the newest run of it), in variant, claim, case, sample order.
    pub turns: Vec<ReportTurn>,
    /// Older runs of a turn that was recorded again.
    pub superseded: usize,
    /// Runs of other suites left out by `--suite`.
    pub other_suites: usize,
    /// Replays of recorded turns, left out: a replay is not a run of its own.
    pub replays: usize,
    /// Logs that could not be read: (path, why).
    pub unreadable: Vec<(PathBuf, String)>,
    pub dirs: Vec<PathBuf>,
}

/// Reads every run log under `dirs` (each must be a folder), keeping the
/// runs of `suite` when given.
pub fn load_runs(dirs: &[PathBuf], suite: Option<&str>) -> Result<LoadedRuns, ReportError> {
    let mut paths = Vec::new();
    let mut refused: Unreadable = Vec::new();
    for dir in dirs {
        let listing = paths_in(dir)?;
        paths.extend(listing.paths);
        for error in listing.refused {
            if let RunLogError::Refused { path, reason } = error {
                refused.push((PathBuf::from(path), reason));
            }
        }
    }
    if paths.is_empty() {
        return Err(ReportError::NoRunLogs(list_dirs(dirs)));
    }
    let total = paths.len();
    let (turns, mut unreadable) = read_all(paths);
    unreadable.extend(refused);
    if turns.is_empty() {
        let first = unreadable
            .first()
            .map(|(path, why)| format!("`{}`: {why}", path.display()))
            .unwrap_or_default();
        return Err(ReportError::AllUnreadable {
            count: total,
            dirs: list_dirs(dirs),
            first,
        });
    }
    // A replay re-runs a recorded turn with its recorded model replies: it
    // is never a run of that turn (nor of a chat turn's place), so it can
    // neither supersede the judged run nor add a turn.
    let read = turns.len();
    let turns: Vec<ReportTurn> = turns
        .into_iter()
        .filter(|t| t.replay_of.is_none())
        .collect();
    let replays = read - turns.len();
    let found: BTreeSet<String> = turns.iter().filter_map(|t| t.suite.clone()).collect();
    let before = turns.len();
    let turns: Vec<ReportTurn> = match suite {
        Some(name) => turns
            .into_iter()
            .filter(|t| t.suite.as_deref() == Some(name))
            .collect(),
        None => turns,
    };
    if let (Some(name), true) = (suite, turns.is_empty()) {
        return Err(ReportError::NoSuiteRuns {
            suite: name.to_string(),
            dirs: list_dirs(dirs),
            found: if found.is_empty() {
                "none: only chat turns".to_string()
            } else {
                found.into_iter().collect::<Vec<_>>().join(", ")
            },
        });
    }
    let other_suites = before - turns.len();
    let (turns, superseded) = newest_of_each(turns);
    Ok(LoadedRuns {
        turns,
        superseded,
        other_suites,
        replays,
        unreadable,
        dirs: dirs.to_vec(),
    })
}

fn paths_in(dir: &Path) -> Result<RunLogListing, ReportError> {
    if !dir.exists() {
        return Err(ReportError::MissingFolder(dir.display().to_string()));
    }
    if !dir.is_dir() {
        return Err(ReportError::NotAFolder(dir.display().to_string()));
    }
    list_run_logs(dir).map_err(|source| ReportError::Read {
        path: dir.display().to_string(),
        source,
    })
}

type Unreadable = Vec<(PathBuf, String)>;

/// Reads the logs on every core; the order of `paths` is kept.
fn read_all(paths: Vec<PathBuf>) -> (Vec<ReportTurn>, Unreadable) {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = paths.len().div_ceil(workers).max(1);
    let results: Vec<Vec<Result<ReportTurn, (PathBuf, String)>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let (mut reader, mut shared) = (RunLogReader::default(), SharedText::default());
                    (part.iter())
                        .map(|p| read_one(p, &mut reader, &mut shared))
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    vec![Err((
                        PathBuf::new(),
                        "a reader thread panicked".to_string(),
                    ))]
                })
            })
            .collect()
    });
    let (mut turns, mut unreadable) = (Vec::new(), Vec::new());
    for result in results.into_iter().flatten() {
        match result {
            Ok(turn) => turns.push(turn),
            Err(problem) => unreadable.push(problem),
        }
    }
    (turns, unreadable)
}

fn read_one(
    path: &Path,
    reader: &mut RunLogReader,
    shared: &mut SharedText,
) -> Result<ReportTurn, (PathBuf, String)> {
    match reader.read(path) {
        Ok(log) => Ok(ReportTurn::from_log(&log, shared)),
        Err(error) => Err((path.to_path_buf(), error.to_string())),
    }
}

/// The newest run of each turn (suite, version, claim, case, sample), in
/// that order; and how many older runs were set aside. Chat turns (sample
/// 0) are never superseded: asking the same question twice is two turns.
fn newest_of_each(turns: Vec<ReportTurn>) -> (Vec<ReportTurn>, usize) {
    let mut newest: HashMap<TurnKey, ReportTurn> = HashMap::new();
    let mut chat = Vec::new();
    let mut superseded = 0;
    for turn in turns {
        if turn.suite.is_none() {
            chat.push(turn);
            continue;
        }
        let key = TurnKey {
            version: turn.version.clone(),
            place: TurnPlace {
                suite: turn.suite.clone(),
                claim: turn.claim.clone(),
                case: turn.case.clone(),
                sample: turn.sample,
            },
        };
        match newest.get(&key) {
            Some(kept) if kept.started_at >= turn.started_at => superseded += 1,
            Some(_) => {
                superseded += 1;
                newest.insert(key, turn);
            }
            None => {
                newest.insert(key, turn);
            }
        }
    }
    let mut kept: Vec<ReportTurn> = newest.into_values().chain(chat).collect();
    kept.sort_by(|a, b| {
        (
            &a.suite,
            &a.version,
            &a.claim,
            &a.case,
            a.sample,
            &a.started_at,
        )
            .cmp(&(
                &b.suite,
                &b.version,
                &b.claim,
                &b.case,
                b.sample,
                &b.started_at,
            ))
    });
    (kept, superseded)
}
