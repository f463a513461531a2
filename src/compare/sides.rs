//! What one side of a comparison names, by the one precedence rule
//! (`runs::version`): a folder of run logs (scanned, said once), an eval
//! run (`ev-…`, `last~N` of `--suite`: exactly its turns, from the run
//! index), or an override file or fingerprint (the runs folder's logs of
//! that prompt version).

use std::path::Path;

use crate::index::RunIndex;
use crate::prompts::PromptRegistry;
use crate::runs::store::{RunLogListing, list_run_logs, run_log_paths};
use crate::runs::version::{Side, fingerprint_for, parse_side};

use super::set::{CompareError, RunFilter};

/// Above this many logs, a folder given as an argument (read into memory)
/// is said to be large.
pub const LARGE_FOLDER_LOGS: usize = 100_000;

/// What a side names: where to look for its logs, the fingerprint they
/// must have (none for a folder of logs or an eval run, taken whole), and
/// what to tell the reader.
pub struct Resolved {
    pub source: String,
    pub files: RunLogListing,
    pub wanted: Option<String>,
    pub notes: Vec<String>,
}

pub fn resolve_spec(
    spec: &str,
    runs_dir: &Path,
    registry: &PromptRegistry,
    filter: &RunFilter,
) -> Result<Resolved, CompareError> {
    let holds_logs = |dir: &Path| run_log_paths(dir).is_ok_and(|paths| !paths.is_empty());
    let side = parse_side(spec)?.ok_or_else(|| CompareError::Unknown(spec.to_string()))?;
    match side {
        Side::Path(path) if path.is_dir() && holds_logs(&path) => {
            let files = list(&path)?;
            // A folder given as an argument is read by scanning, said once;
            // and it is read into memory, said above a size.
            let mut notes = vec![crate::index::scan_note(files.paths.len())];
            if files.paths.len() > LARGE_FOLDER_LOGS {
                notes.push(format!(
                    "{} is read into memory to compare; name eval runs (`ev-…`) in the runs folder to stream them in flat memory",
                    path.display()
                ));
            }
            Ok(Resolved {
                source: format!("run logs in {}", path.display()),
                files,
                wanted: None,
                notes,
            })
        }
        Side::EvalRun(prefix) => {
            eval_run_side(runs_dir, |index| pick_by_prefix(index, &prefix, runs_dir))
        }
        Side::Last(back) => last_run_side(spec, back, runs_dir, filter),
        Side::Path(_) | Side::Fingerprint(_) => {
            // Override files and fingerprints (runs::version's rule).
            let fingerprint = fingerprint_for(spec, runs_dir, registry)?
                .ok_or_else(|| CompareError::Unknown(spec.to_string()))?;
            let of = if fingerprint == spec {
                String::new()
            } else {
                format!(" (of {spec})")
            };
            Ok(Resolved {
                source: format!("fingerprint {fingerprint}{of} in {}", runs_dir.display()),
                files: list(runs_dir)?,
                wanted: Some(fingerprint),
                notes: Vec::new(),
            })
        }
    }
}

/// `last` / `last~N`: the newest eval run of `--suite`, else of the newest
/// eval run's suite (said in a note), or the one N before it.
fn last_run_side(
    spec: &str,
    back: u32,
    runs_dir: &Path,
    filter: &RunFilter,
) -> Result<Resolved, CompareError> {
    let mut chosen = None;
    let mut resolved = eval_run_side(runs_dir, |index| {
        let (id, suite) = pick_last(index, spec, back, runs_dir, filter)?;
        chosen = suite;
        Ok(id)
    })?;
    if let Some(suite) = chosen {
        resolved.notes.push(latest_suite_note(&suite));
    }
    Ok(resolved)
}

/// The one eval run whose id starts with `prefix`.
fn pick_by_prefix(index: &RunIndex, prefix: &str, runs_dir: &Path) -> Result<String, CompareError> {
    let mut ids = index.eval_run_ids(prefix)?;
    match ids.len() {
        1 => Ok(ids.remove(0)),
        0 => Err(CompareError::EvalRun(format!(
            "no eval run recorded in `{}` starts with `{prefix}`",
            runs_dir.display()
        ))),
        n => Err(CompareError::EvalRun(format!(
            "`{prefix}` matches {n} eval runs: {}; give more of it",
            ids.join(", ")
        ))),
    }
}

/// `last~back`, and the suite it took when no `--suite` named one.
fn pick_last(
    index: &RunIndex,
    spec: &str,
    back: u32,
    runs_dir: &Path,
    filter: &RunFilter,
) -> Result<(String, Option<String>), CompareError> {
    let (suite, chosen) = match filter.suite.clone() {
        Some(suite) => (suite, None),
        None => {
            let suite = index.latest_suite()?.ok_or_else(|| {
                CompareError::EvalRun(format!(
                    "`{spec}`: no eval run is recorded in `{}`",
                    runs_dir.display()
                ))
            })?;
            (suite.clone(), Some(suite))
        }
    };
    let runs = index.eval_runs_of(&suite)?;
    let id = runs.get(back as usize).cloned().ok_or_else(|| {
        CompareError::EvalRun(format!(
            "`{spec}`: suite {suite} has {} eval runs recorded in `{}`",
            runs.len(),
            runs_dir.display()
        ))
    })?;
    Ok((id, chosen))
}

/// The eval run `spec` names (`ev-…`, `last`, `last~N`) in `index`, with
/// any note on the suite it took; `None` when it names something else.
pub fn eval_run_named(
    spec: &str,
    runs_dir: &Path,
    index: &RunIndex,
    filter: &RunFilter,
    notes: &mut Vec<String>,
) -> Result<Option<String>, CompareError> {
    match parse_side(spec)? {
        Some(Side::EvalRun(prefix)) => pick_by_prefix(index, &prefix, runs_dir).map(Some),
        Some(Side::Last(back)) => {
            let (id, chosen) = pick_last(index, spec, back, runs_dir, filter)?;
            notes.extend(chosen.map(|suite| latest_suite_note(&suite)));
            Ok(Some(id))
        }
        _ => Ok(None),
    }
}

/// Whether `spec` names an eval run (`ev-…`, `last`, `last~N`).
pub fn names_eval_run(spec: &str) -> Result<bool, CompareError> {
    Ok(matches!(
        parse_side(spec)?,
        Some(Side::EvalRun(_) | Side::Last(_))
    ))
}

/// Said when `last`/`last~N` or `evals trend` take the newest eval run's
/// suite because no `--suite` names one.
pub fn latest_suite_note(suite: &str) -> String {
    format!(
        "suite {}: the newest eval run's (--suite NAME for another)",
        crate::text::quote(suite)
    )
}

/// An eval run's turns, exactly: `pick` names the run from the index (or
/// says why none), whose member logs the side then reads.
fn eval_run_side(
    runs_dir: &Path,
    pick: impl FnOnce(&RunIndex) -> Result<String, CompareError>,
) -> Result<Resolved, CompareError> {
    let opened = RunIndex::open(runs_dir)?;
    let id = pick(&opened.index)?;
    let paths = opened.index.member_paths(&id)?;
    Ok(Resolved {
        source: format!("eval run {id} in {}", runs_dir.display()),
        files: RunLogListing {
            paths,
            refused: Vec::new(),
        },
        wanted: None,
        notes: opened.notes,
    })
}

fn list(dir: &Path) -> Result<RunLogListing, CompareError> {
    list_run_logs(dir).map_err(|source| CompareError::Read {
        path: dir.display().to_string(),
        source,
    })
}
