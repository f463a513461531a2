//! One `eval` invocation's work, whatever renders it (SPEC §9): the plan
//! made from a suite and a selection, then run in its mode — turns run
//! (resumed ones read back first), recorded turns merged, or judged again
//! — into a spill, ending in an `Ended` that `EvalOutcome` reads. The
//! binary turns flags into a `PlanRequest` and `RunSettings`, shows the
//! progress it is handed (`Progress`), arms its stop signals, and renders
//! the outcome.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::calibration::{
    CalibrationBar, CalibrationStatus, DEFAULT_MIN_LABELS, JudgeCalibration, JudgeIdentity,
    judge_calibration,
};
use super::matrix::{ModelSettings, build_matrix};
use super::plan::{EvalPlan, Selection};
use super::recorded::merge_recorded;
use super::rescore::rescore_turns;
use super::run_settings::{RunLimits, RunSettings};
use super::runner::{EvalMessage, FEED_CAPACITY, TurnResult, run_turns};
use super::spill::{ResultStore, SpillError};
use super::suite::{LoadedSuite, SuiteError, Variant};
use super::totals::checked;
use super::trace::trace_verdict;
use crate::claims::ClaimStore;
use crate::exit::Exit;
use crate::judge::{Judge, JudgeSpend};
use crate::prompts::PromptRegistry;
use crate::runs::RunLogError;
use crate::telemetry::Tracing;

/// Why a session could not plan or run.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// A selection or a flag that names nothing usable: nothing ran.
    #[error("{0}")]
    Usage(String),
    /// The run's results cannot be kept or read back: it has no verdict.
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<SpillError> for SessionError {
    fn from(error: SpillError) -> Self {
        SessionError::Failed(format!(
            "{error}; the run's results cannot be read back, so it has no verdict"
        ))
    }
}

/// The suite as this invocation runs it: `--overrides` files added as
/// variants, `--variant` applied.
pub fn load_suite(
    path: &Path,
    overrides: &[PathBuf],
    variants: &[String],
) -> Result<LoadedSuite, SessionError> {
    let mut suite = LoadedSuite::load(path, PromptRegistry::embedded())?;
    add_override_variants(&mut suite, overrides)?;
    select_variants(&mut suite, variants)?;
    Ok(suite)
}

/// Whether every variant names its model, so that no default is needed.
pub fn every_variant_names_its_model(suite: &LoadedSuite) -> bool {
    let variants = &suite.suite.variants;
    !variants.is_empty() && variants.iter().all(|v| v.model.is_some())
}

/// The suite's matrix over the claims, and the turns `selection` selects;
/// `eval_run`: the id the shards of one CI run share, else a fresh one.
/// Returns the matrix's warnings about claims beside the plan.
pub fn plan(
    suite: LoadedSuite,
    store: &ClaimStore,
    defaults: &ModelSettings,
    (selection, eval_run): (Selection, Option<String>),
) -> Result<(EvalPlan, Vec<String>), SessionError> {
    let matrix = build_matrix(&suite, store, PromptRegistry::embedded(), defaults)?;
    let warnings = matrix.claim_warnings.clone();
    let (cases, claims) = (or_any(&selection.cases), or_any(&selection.claims));
    let mut plan = EvalPlan::new(suite, matrix, selection);
    plan.check_selection()
        .map_err(|unknown| SessionError::Usage(unknown.to_string()))?;
    if plan.unsharded_count() == 0 {
        return Err(SessionError::Usage(format!(
            "no turn of suite `{}` matches --case {cases} --claim {claims}",
            plan.suite.name
        )));
    }
    if let Some(id) = eval_run {
        plan.eval_run = id;
    }
    Ok((plan, warnings))
}

fn or_any(patterns: &[String]) -> String {
    if patterns.is_empty() {
        "(any)".into()
    } else {
        patterns.join(", ")
    }
}

/// `--overrides FILE`: one variant per file, named after it, next to the
/// suite's own (the code default among them when the suite names none).
fn add_override_variants(suite: &mut LoadedSuite, files: &[PathBuf]) -> Result<(), SessionError> {
    if files.is_empty() {
        return Ok(());
    }
    let variants = &mut suite.suite.variants;
    if variants.is_empty() {
        variants.push(Variant::named("default"));
    }
    let here = std::env::current_dir()?;
    for file in files {
        let name = override_variant_name(file)?;
        if variants.iter().any(|v| v.name == name) {
            return Err(SessionError::Usage(format!(
                "--overrides `{}`: the suite already has a variant named `{name}`",
                file.display()
            )));
        }
        // Read here, so that a bad file is named as the flag's, not as a
        // field of the suite (`variants[2].overrides`) it is not in.
        let path = here.join(file);
        crate::prompts::overrides::OverrideSet::load(std::slice::from_ref(&path))
            .map_err(|error| SessionError::Usage(format!("--overrides: {error}")))?;
        let mut variant = Variant::named(&name);
        // Relative to where the command runs, not to the suite file.
        variant.overrides.push(path);
        variants.push(variant);
    }
    Ok(())
}

/// The variant an override file makes is named after the file.
fn override_variant_name(file: &Path) -> Result<String, SessionError> {
    let name = file
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|name| !name.is_empty())
        .ok_or_else(|| {
            SessionError::Usage(format!("--overrides `{}`: not a file name", file.display()))
        })?;
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(SessionError::Usage(format!(
            "--overrides `{}`: a variant is named after its file, and `{name}` is not a usable name (letters, digits, `-`, `_` and `.` only); rename the file",
            file.display()
        )));
    }
    Ok(name.to_string())
}

/// `--variant NAME`: keeps only the named variants.
fn select_variants(suite: &mut LoadedSuite, names: &[String]) -> Result<(), SessionError> {
    if names.is_empty() {
        return Ok(());
    }
    let variants = &mut suite.suite.variants;
    if variants.is_empty() {
        variants.push(Variant::named("default"));
    }
    for name in names {
        if !variants.iter().any(|v| &v.name == name) {
            let known: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
            return Err(SessionError::Usage(format!(
                "--variant `{name}`: suite `{}` has no such variant (it has: {})",
                suite.name,
                known.join(", ")
            )));
        }
    }
    variants.retain(|v| names.contains(&v.name));
    Ok(())
}

/// The gate at an eval's start (SPEC §15): the judge's calibration under
/// `identity`, and the plan told whether its rubric verdicts decide the
/// exit code. `require` (`--require-calibrated-judge`) makes a judge that
/// is not calibrated an error before any turn runs.
pub fn gate_judge(
    plan: &mut EvalPlan,
    runs_dir: &Path,
    identity: JudgeIdentity,
    require: bool,
) -> Result<JudgeCalibration, SessionError> {
    let section = plan.suite.suite.judge.as_ref();
    let bar = CalibrationBar {
        min_kappa: section.and_then(|judge| judge.min_kappa),
        min_labels: (section.and_then(|judge| judge.min_labels)).unwrap_or(DEFAULT_MIN_LABELS),
    };
    let calibration = judge_calibration(runs_dir, identity, bar);
    if require && calibration.status != CalibrationStatus::Calibrated {
        return Err(SessionError::Usage(format!(
            "--require-calibrated-judge: {}",
            calibration.line()
        )));
    }
    plan.rubric_decides = calibration.decides;
    Ok(calibration)
}

/// What a mode leaves for the end of the run: the plan, the spill with
/// every turn's result, the exit a stop signal asked for, the limits the
/// turns ran under, and the logs a merge could not read.
pub struct Ended {
    pub plan: Arc<EvalPlan>,
    pub spill: ResultStore,
    pub stop: Option<Exit>,
    pub limits: RunLimits,
    pub unreadable: Vec<RunLogError>,
    /// The rubric judge's calibration, gated at the start (`gate_judge`).
    pub judge: Option<JudgeCalibration>,
}

impl Ended {
    fn of(plan: Arc<EvalPlan>, spill: ResultStore, stop: Option<Exit>) -> Ended {
        Ended {
            plan,
            spill,
            stop,
            limits: RunLimits::default(),
            unreadable: Vec::new(),
            judge: None,
        }
    }

    /// The exit once the summary is out: a log a merge could not read may
    /// be some turn's newest, whose verdict cannot be vouched for.
    pub fn exit(&self, summarised: Exit) -> Exit {
        match self.unreadable.is_empty() {
            true => summarised,
            false => Exit::Failure,
        }
    }
}

/// The run's spill, where every turn's result goes and the end of the run
/// reads it back (`eval::spill`): in the runs folder, else (a merge into a
/// folder that does not exist) the temporary folder.
pub fn new_spill(runs_dir: &Path, plan: &EvalPlan) -> Result<ResultStore, SessionError> {
    ResultStore::create(runs_dir, &plan.eval_run, plan.matrix.planned)
        .map_err(|error| SessionError::Failed(error.to_string()))
}

/// `--report DIR…`: every selected turn from its newest log under `dirs`;
/// returns how many logs the folders' scan read beside the end.
pub fn merge(
    plan: EvalPlan,
    runs_dir: &Path,
    dirs: &[PathBuf],
) -> Result<(Ended, usize), SessionError> {
    let mut spill = new_spill(runs_dir, &plan)?;
    let (scanned, unreadable) = merge_recorded(&plan, dirs, &mut spill)?;
    let mut ended = Ended::of(Arc::new(plan), spill, None);
    ended.unreadable = unreadable;
    Ok((ended, scanned))
}

/// What `--rescore` did, for its line on stderr.
pub struct Rescored {
    pub ended: Ended,
    /// Turns found recorded and judged again.
    pub rescored: usize,
    /// The judge's calls and their cost.
    pub judge: JudgeSpend,
}

/// `--rescore`: the recorded turns under `dirs` judged again, `jobs` at a
/// time; each re-scored turn's verdict traced when `tracing` is on.
/// `arm` hooks the caller's stop signals to the run's cancel token, on the
/// runtime the judge runs on, and says at the end which exit one asked for.
pub fn rescore<S: Fn() -> Option<Exit>>(
    plan: EvalPlan,
    (runs_dir, dirs): (&Path, &[PathBuf]),
    (judge, tracing): (Option<&Judge>, Option<&Tracing>),
    jobs: usize,
    arm: impl FnOnce(CancellationToken) -> S,
) -> Result<Rescored, SessionError> {
    let mut spill = new_spill(runs_dir, &plan)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let cancel = CancellationToken::new();
    let (rescored, stop) = runtime.block_on(async {
        let stop = arm(cancel.clone());
        let rescored = rescore_turns(&plan, dirs, judge, (jobs, &cancel), &mut spill).await;
        (rescored, stop())
    });
    rescored?;
    let (mut rescored, mut spend) = (0usize, JudgeSpend::default());
    for result in checked(&plan, &mut spill)? {
        let result = result?;
        spend += JudgeSpend::of_rubric(&result.verdict.rubric);
        let Some(log) = &result.run_log else { continue };
        rescored += 1;
        if let Some(tracing) = tracing {
            trace_rescored(tracing, &plan, &result, log);
        }
    }
    Ok(Rescored {
        ended: Ended::of(Arc::new(plan), spill, stop),
        rescored,
        judge: spend,
    })
}

/// The re-scored turn's verdict as a trace, a child of its own when its
/// log names one.
fn trace_rescored(tracing: &Tracing, plan: &EvalPlan, result: &TurnResult, log: &Path) {
    let labels = plan.labels(&result.spec);
    let tags = &plan.suite.suite.cases[result.spec.case].tags;
    let original = crate::runs::read_run_log(log)
        .ok()
        .and_then(|recorded| recorded.header.trace);
    let verdict = trace_verdict(&labels, tags, &result.verdict);
    tracing.rescored(&labels.case, log, &verdict, original.as_ref());
}

/// Whoever shows a run's progress: handed every message of the feed, on a
/// thread of its own, so a stalled terminal or pipe holds back only what
/// would pile up.
pub trait Progress: Send {
    /// Shows one message; `false` when whoever reads it is gone (a closed
    /// stdout), which cancels the run.
    fn show(&mut self, message: &EvalMessage) -> bool;

    /// Whether messages may wait to be shown together (`GATHER`): true
    /// unless each turn's events stream out as they happen.
    fn gathers(&self) -> bool;
}

/// How long the progress thread lets turns' results gather before it
/// shows them, when no events stream out: woken for each result, it cost
/// the run a wake-up of a sleeping thread a turn (futex calls fell from ~2
/// to ~0.7 a turn, BENCHMARKS.md, issue #31). A bar redraws at most 20
/// times a second anyway. The feed holds 1,024 messages, and each turn
/// waiting for its group commit holds room for two (`hand_on`): with all
/// 512 waiting, a finishing turn waits for room — at most this long more
/// than it would, holding its `-j` slot.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

/// Runs the plan's remaining turns into `spill` (which holds the resumed
/// ones already), showing each message to `progress`; returns the exit a
/// stop signal asked for (`arm`, as for `rescore`) and the progress.
///
/// One thread runs every turn: an eval's turns wait on their model most of
/// the time, and on a pool of workers each wake-up of a turn, of its HTTP
/// connection or of the feed crossed threads; on one a turn costs ~25% less
/// CPU (BENCHMARKS.md, issue #31). Nothing a turn does blocks that thread:
/// the feed and the syncs are awaited (`eval::feed`, the blocking pool).
pub fn run<P: Progress, S: Fn() -> Option<Exit>>(
    plan: &Arc<EvalPlan>,
    settings: &Arc<RunSettings>,
    spill: &mut ResultStore,
    mut progress: P,
    arm: impl FnOnce(CancellationToken) -> S,
) -> std::io::Result<(Option<Exit>, P)> {
    let cancel = CancellationToken::new();
    let (sender, mut receiver) = tokio::sync::mpsc::channel(FEED_CAPACITY);
    std::thread::scope(|scope| {
        // Built in here: a turn's panic, unwinding through `block_on`, drops
        // the runtime's tasks — and the feed's senders they hold — before
        // the scope waits for the thread below, which then sees the feed end.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let showing = cancel.clone();
        let shown = scope.spawn(move || {
            // Should this thread die, the run stops (nobody would show it)
            // and the receiver goes with it: no turn waits on a dead feed.
            let _stop_if_it_dies = CancelOnPanic(showing.clone());
            let gathers = progress.gathers();
            let mut show = |message: &EvalMessage| {
                if !progress.show(message) {
                    showing.cancel();
                }
            };
            // Every sender is gone once the last turn has finished.
            while let Some(message) = receiver.blocking_recv() {
                show(&message);
                if gathers {
                    while let Ok(message) = receiver.try_recv() {
                        show(&message);
                    }
                    std::thread::sleep(GATHER);
                }
            }
            progress
        });
        let stop = runtime.block_on(async {
            let stop = arm(cancel.clone());
            let turns = run_turns(
                Arc::clone(plan),
                Arc::clone(settings),
                cancel.clone(),
                sender,
                spill,
            );
            turns.await;
            stop()
        });
        match shown.join() {
            Ok(progress) => Ok((stop, progress)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Cancels the run when dropped in a panic.
struct CancelOnPanic(CancellationToken);

impl Drop for CancelOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.cancel();
        }
    }
}
