//! Turns already recorded: the newest run log of each turn under some
//! folders, `--resume` and `--report` (merge) putting them in the run's
//! spill, and a turn judged again from its log.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::expect::{Observation, Outcome, Verdict};
use super::matrix::TurnSpec;
use super::plan::{EvalPlan, TurnKey};
use super::runner::TurnResult;
use super::spill::ResultStore;
use crate::runs::{RunLogError, RunLogReader, RunStatus, scan_runs};

/// The newest finished run log of each turn of `suite` under `dirs`;
/// with `done_only`, only turns that ended in `done`.
pub fn index_recorded(
    dirs: &[PathBuf],
    plan: &EvalPlan,
    done_only: bool,
) -> std::io::Result<HashMap<TurnKey, PathBuf>> {
    index_recorded_counted(dirs, plan, done_only).map(|recorded| recorded.found)
}

/// What the folders' scan found for a plan.
pub struct Recorded {
    /// The newest finished log of each turn.
    pub found: HashMap<TurnKey, PathBuf>,
    /// How many logs the scan read.
    pub scanned: usize,
    /// Logs of the plan's prompt versions that could not be read even in
    /// part (empty, a last line that is not a record): whose turn they hold
    /// is unknown, so each is named. A `.partial` log is not among them: it
    /// is being written (empty until its header is), or was left by a
    /// process that died, and holds no finished turn either way.
    pub unreadable: Vec<RunLogError>,
}

/// `index_recorded`, with what else the scan saw.
pub fn index_recorded_counted(
    dirs: &[PathBuf],
    plan: &EvalPlan,
    done_only: bool,
) -> std::io::Result<Recorded> {
    let (summaries, unreadable) = scan_runs(dirs)?;
    let unreadable = unreadable
        .into_iter()
        .filter(|error| {
            error
                .path()
                .is_some_and(|path| of_the_plan(plan, Path::new(path)))
        })
        .collect();
    let scanned = summaries.len();
    let mut newest: HashMap<TurnKey, (chrono::DateTime<chrono::Utc>, PathBuf)> = HashMap::new();
    for summary in summaries {
        let Some(footer) = summary.footer.as_ref().filter(|_| !summary.partial) else {
            continue;
        };
        if done_only && footer.status != RunStatus::Done {
            continue;
        }
        let Some(key) = summary.view().key().filter(|key| {
            key.place.suite.as_deref() == Some(plan.suite.name.as_str())
                && plan.is_current_version(&summary.header)
        }) else {
            continue;
        };
        let started = summary.header.started_at;
        if newest.get(&key).is_none_or(|(time, _)| started > *time) {
            newest.insert(key, (started, summary.path));
        }
    }
    let found = newest
        .into_iter()
        .map(|(key, (_, path))| (key, path))
        .collect();
    Ok(Recorded {
        found,
        scanned,
        unreadable,
    })
}

/// A finished log's name in the folder of one of the plan's prompt versions.
fn of_the_plan(plan: &EvalPlan, path: &Path) -> bool {
    let folder = path.parent().and_then(Path::file_name);
    let finished = path.extension().is_some_and(|ext| ext == "ndjson");
    finished && (plan.matrix.variants.iter()).any(|v| folder == Some(v.fingerprint.as_ref()))
}

/// Turns of the plan already recorded as done under `runs_dir`, for
/// `--resume`, put in `store`: each log is read whole, and one that cannot
/// be (a corrupt line, bytes that are not UTF-8) does not count as done —
/// the turn runs again, with a warning naming the file. Marks the done
/// turns in `plan`; returns the warnings.
pub fn resume(
    plan: &mut EvalPlan,
    runs_dir: &Path,
    store: &mut ResultStore,
) -> std::io::Result<Vec<String>> {
    let recorded = index_recorded_counted(&[runs_dir.to_path_buf()], plan, true)?;
    let mut warnings: Vec<String> = (recorded.unreadable.iter())
        .map(|error| format!("resume: {error}; not counted as done"))
        .collect();
    let (mut done, mut reader) = (std::collections::HashSet::new(), RunLogReader::default());
    for spec in plan.selected() {
        let Some(path) = recorded.found.get(&plan.key(&spec)) else {
            continue;
        };
        match reader.read_checked(path) {
            Ok(log) => {
                done.insert(spec.index);
                store.push(TurnResult {
                    run_log: Some(path.clone()),
                    from_log: true,
                    ..judged_from_log(plan, &spec, &log, path)
                });
            }
            Err(error) => warnings.push(format!(
                "resume: {error}; running {} again",
                crate::eval::report::spec_label(plan, &spec)
            )),
        }
    }
    plan.done = done;
    Ok(warnings)
}

/// `--report`: every selected turn from its newest recorded log under
/// `dirs` (a turn with none is an error: not run), put in `store`; returns
/// how many logs the folders' scan read, and the logs it could not read —
/// the newest of some turn, perhaps, which the caller cannot judge on.
pub fn merge_recorded(
    plan: &EvalPlan,
    dirs: &[PathBuf],
    store: &mut ResultStore,
) -> std::io::Result<(usize, Vec<RunLogError>)> {
    let recorded = index_recorded_counted(dirs, plan, false)?;
    let mut reader = RunLogReader::default();
    for spec in plan.selected() {
        store.push(match recorded.found.get(&plan.key(&spec)) {
            Some(path) => result_from_log(plan, &spec, path, &mut reader),
            None => missing_result(&spec),
        });
    }
    Ok((recorded.scanned, recorded.unreadable))
}

/// Judged again from the log, on the suite's expectations as they are now;
/// rubric criteria take the judge's recorded verdicts (a re-score's, when
/// there is one, else the footer's), never a new call.
fn judged_from_log(
    plan: &EvalPlan,
    spec: &TurnSpec,
    log: &crate::runs::RunLog,
    path: &Path,
) -> TurnResult {
    let observation = Observation::from_log(log);
    let verdict = match crate::runs::rescore::recorded_rubric(log, path) {
        Ok(rubric) => plan.judge(spec, &observation, &rubric),
        Err(error) => Verdict::new(Outcome::Error, vec![error.to_string()]),
    };
    TurnResult::new(spec, observation, verdict)
}

/// A turn's result from its recorded run log.
fn result_from_log(
    plan: &EvalPlan,
    spec: &TurnSpec,
    path: &Path,
    reader: &mut RunLogReader,
) -> TurnResult {
    let result = match reader.read(path) {
        Ok(log) => judged_from_log(plan, spec, &log, path),
        Err(error) => {
            let observation = Observation {
                error: Some(error.to_string()),
                ..Observation::default()
            };
            let verdict = plan.judge(spec, &observation, &[]);
            TurnResult::new(spec, observation, verdict)
        }
    };
    TurnResult {
        run_log: Some(path.to_path_buf()),
        from_log: true,
        ..result
    }
}

/// A turn with no run log at all (a shard that never ran it).
pub fn missing_result(spec: &TurnSpec) -> TurnResult {
    let observation = Observation {
        error: Some("not run: no run log for this turn".into()),
        ..Observation::default()
    };
    let verdict = Verdict::new(
        Outcome::Error,
        vec!["not run: no run log for this turn".into()],
    );
    TurnResult {
        from_log: true,
        ..TurnResult::new(spec, observation, verdict)
    }
}
