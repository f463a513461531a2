//! `eval --watch`: run the suite, then again whenever a file it reads
//! changes — the suite, the override files and scripts it names, the claim
//! files it selects — and say what changed since the previous run: newly
//! failing, newly passing, unchanged, and what the run cost. An edit that
//! makes the suite invalid prints the error and keeps watching. Ctrl-C (or
//! SIGTERM) while waiting ends with 130 (143) and the last run's tally.
//!
//! Folders are watched rather than files, and events filtered by path, so
//! that an editor that saves by writing a new file and renaming it over the
//! old one is seen too.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{Event, EventKind, RecursiveMode, Watcher};

use promptlab::claims::ClaimStore;
use promptlab::cost::Cost;
use promptlab::eval::report::spec_label;
use promptlab::eval::spill::ResultStore;
use promptlab::eval::totals::checked;
use promptlab::eval::{EvalPlan, Outcome};
use promptlab::judge::JudgeSpend;

use super::settings::{CacheChoice, EvalSettings};
use super::summary::unreadable;
use super::{plan, run_once};
use crate::cli::StoreArgs;
use crate::cli::error::{CliError, Exit};
use promptlab::eval::outcome::EvalMode;

/// How long the files must be quiet before a run starts.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// One turn's outcome, for comparing runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSnapshot {
    pub label: String,
    pub outcome: Outcome,
    /// Chat and judge calls; `None`: unknown.
    pub cost_usd: Option<f64>,
    pub cached: bool,
}

/// Each turn of the run's spill, in matrix order, for the next run to
/// compare with (a watched suite is one being edited: its labels are kept).
pub fn snapshot(plan: &EvalPlan, spill: &mut ResultStore) -> Result<Vec<TurnSnapshot>, CliError> {
    let mut snapshots = Vec::new();
    for result in checked(plan, spill).map_err(unreadable)? {
        let result = result.map_err(unreadable)?;
        let judge = JudgeSpend::of_rubric(&result.verdict.rubric).cost;
        snapshots.push(TurnSnapshot {
            label: spec_label(plan, &result.spec),
            outcome: result.verdict.outcome,
            cost_usd: (Cost::from(result.observation.cost_usd) + judge).usd(),
            cached: result.observation.cached_calls > 0,
        });
    }
    Ok(snapshots)
}

pub fn run(
    settings: &EvalSettings,
    store: &ClaimStore,
    stores: &StoreArgs,
    tracing: Option<&promptlab::telemetry::Tracing>,
) -> Result<Exit, CliError> {
    if settings.cache != CacheChoice::Always && !settings.output.quiet {
        promptlab::text::eprintln_or_drop!(
            "tip: add --cache so that each run calls the model only for the turns an edit changed"
        );
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let mut stops = Stops::listen(&runtime)?;
    let mut previous: Option<Vec<TurnSnapshot>> = None;
    let mut watched = BTreeSet::from([absolute(&settings.suite)]);
    for iteration in 1.. {
        watched.extend(watch_set(settings, store));
        // Dropped at the end of the iteration: the next watches anew.
        let (_watcher, mut changes) = start_watcher(&watched)?;
        writeln!(std::io::stdout(), "── watch: run {iteration} ──")?;
        match run_once(
            settings,
            &EvalMode::Run { resume: false },
            store,
            stores,
            tracing,
        ) {
            Ok((exit @ (Exit::Cancelled | Exit::Terminated), _)) => return Ok(exit),
            Ok((_, snapshot)) => {
                for line in changes_since(previous.as_deref(), &snapshot) {
                    writeln!(std::io::stdout(), "{line}")?;
                }
                previous = Some(snapshot);
            }
            Err(error) => {
                promptlab::text::eprintln_or_drop!("error: {}", error.report());
                writeln!(
                    std::io::stdout(),
                    "watch: the run could not start; fix the error and save to run again"
                )?;
            }
        }
        writeln!(
            std::io::stdout(),
            "watch: watching {} file{} for changes (Ctrl-C to stop)",
            watched.len(),
            if watched.len() == 1 { "" } else { "s" }
        )?;
        let stop = runtime.block_on(next_change(&mut changes, &watched, &mut stops));
        if let Some(exit) = stop {
            let tally = previous.as_deref().map(tally).unwrap_or_default();
            writeln!(std::io::stdout(), "watch: stopped{tally}")?;
            return Ok(exit);
        }
    }
    Ok(Exit::Success)
}

type Changes = tokio::sync::mpsc::UnboundedReceiver<Vec<PathBuf>>;

/// Watches the folders of `watched`; its events come through `Changes`.
fn start_watcher(
    watched: &BTreeSet<PathBuf>,
) -> Result<(notify::RecommendedWatcher, Changes), CliError> {
    // Unbounded: events are drained as they come, and dropping one could
    // miss the save that matters.
    let (sender, changes) = tokio::sync::mpsc::unbounded_channel();
    // Only writes, creations, renames and removals: a run reads these
    // files too, and reading must not start another run.
    let mut watcher = notify::recommended_watcher(move |result: notify::Result<Event>| {
        if let Ok(event) = result
            && matches!(
                event.kind,
                EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_)
            )
        {
            let _ = sender.send(event.paths);
        }
    })
    .map_err(|e| CliError::Io(std::io::Error::other(format!("--watch: {e}"))))?;
    for folder in folders(watched) {
        // A folder that is gone (a deleted override folder) is not watched.
        let _ = watcher.watch(&folder, RecursiveMode::NonRecursive);
    }
    Ok((watcher, changes))
}

/// Waits for a watched file to change (`None`: run again) or for Ctrl-C or
/// SIGTERM (the exit).
async fn next_change(
    changes: &mut Changes,
    watched: &BTreeSet<PathBuf>,
    stops: &mut Stops,
) -> Option<Exit> {
    loop {
        tokio::select! {
            paths = changes.recv() => {
                let Some(paths) = paths else { continue };
                let Some(first) = paths.into_iter().find(|p| is_watched(watched, p)) else {
                    continue;
                };
                // An editor saves in several steps: let them finish.
                tokio::time::sleep(DEBOUNCE).await;
                while changes.try_recv().is_ok() {}
                // A stdout that is gone is an error at the next run's
                // first line, which `run` returns.
                let _ = writeln!(std::io::stdout(), "watch: {} changed; running again", first.display());
                return None;
            }
            exit = stops.next() => return Some(exit),
        }
    }
}

/// Ctrl-C and SIGTERM, listened for from the watch's start: a signal sent
/// just after "watching" is printed, before the wait for a change begins,
/// is kept for it rather than missed (a listener made when the wait began
/// would not see it, and the process would wait on).
struct Stops {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Stops {
    #[cfg(unix)]
    fn listen(runtime: &tokio::runtime::Runtime) -> std::io::Result<Stops> {
        use tokio::signal::unix::{SignalKind, signal};
        let _entered = runtime.enter();
        Ok(Stops {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    #[cfg(not(unix))]
    fn listen(_: &tokio::runtime::Runtime) -> std::io::Result<Stops> {
        Ok(Stops {})
    }

    /// The next stop signal's exit.
    #[cfg(unix)]
    async fn next(&mut self) -> Exit {
        tokio::select! {
            _ = self.interrupt.recv() => Exit::Cancelled,
            _ = self.terminate.recv() => Exit::Terminated,
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) -> Exit {
        let _ = tokio::signal::ctrl_c().await;
        Exit::Cancelled
    }
}

/// `; last run: 24 passed, 2 failed, 0 errored`.
fn tally(snapshot: &[TurnSnapshot]) -> String {
    let count = |o| snapshot.iter().filter(|t| t.outcome == o).count();
    format!(
        "; last run: {} passed, {} failed, {} errored",
        count(Outcome::Pass),
        count(Outcome::Fail),
        count(Outcome::Error)
    )
}

/// What changed since the previous run, and what this one cost.
fn changes_since(previous: Option<&[TurnSnapshot]>, now: &[TurnSnapshot]) -> Vec<String> {
    let cost: Cost = now.iter().map(|t| Cost::from(t.cost_usd)).sum();
    let cached = now.iter().filter(|t| t.cached).count();
    let spend = format!(
        "cost of this run {} ({} turn{}, {cached} answered from the model cache)",
        cost.display(),
        now.len(),
        if now.len() == 1 { "" } else { "s" }
    );
    let Some(previous) = previous else {
        return vec![format!("watch: first run; {spend}")];
    };
    let before: BTreeMap<&str, Outcome> = previous
        .iter()
        .map(|t| (t.label.as_str(), t.outcome))
        .collect();
    let (mut failing, mut passing, mut unchanged, mut new) = (Vec::new(), Vec::new(), 0, 0);
    for turn in now {
        match (before.get(turn.label.as_str()), turn.outcome) {
            (None, _) => new += 1,
            (Some(Outcome::Pass), Outcome::Fail | Outcome::Error) => failing.push(&turn.label),
            (Some(Outcome::Fail | Outcome::Error), Outcome::Pass) => passing.push(&turn.label),
            _ => unchanged += 1,
        }
    }
    let mut lines = vec![format!(
        "watch: {} newly failing, {} newly passing, {unchanged} unchanged{}; {spend}",
        failing.len(),
        passing.len(),
        if new > 0 {
            format!(", {new} new")
        } else {
            String::new()
        }
    )];
    for (what, turns) in [("newly failing", &failing), ("newly passing", &passing)] {
        for label in turns.iter().take(10) {
            lines.push(format!("  {what}: {label}"));
        }
        if turns.len() > 10 {
            lines.push(format!("  … and {} more {what}", turns.len() - 10));
        }
    }
    lines
}

/// The files a run of the suite reads: the suite, `--overrides`, the
/// scripts, override files and `casesFrom` bank it names, the claim files it selects, and
/// the judge's script and prompts. An invalid suite gives what can be
/// known without it.
fn watch_set(settings: &EvalSettings, store: &ClaimStore) -> BTreeSet<PathBuf> {
    let mut files = BTreeSet::from([absolute(&settings.suite)]);
    let flags = [
        &settings.model.script,
        &settings.judge.judge_script,
        &settings.judge.judge_prompts,
    ];
    files.extend(flags.into_iter().flatten().map(|p| absolute(p)));
    files.extend(settings.overrides.iter().map(|p| absolute(p)));
    let Ok(plan) = plan(settings, store, None) else {
        return files;
    };
    let base = plan.suite.base_dir().to_path_buf();
    for variant in &plan.suite.suite.variants {
        files.extend(variant.overrides.iter().map(|p| absolute(&base.join(p))));
    }
    for case in &plan.suite.suite.cases {
        files.extend(case.script.iter().map(|p| absolute(&base.join(p))));
    }
    let bank = plan.suite.suite.cases_from.as_ref();
    files.extend(bank.map(|p| absolute(&base.join(p))));
    files.extend(
        plan.matrix
            .claims
            .keys()
            .filter_map(|id| store.locate(id))
            .map(|p| absolute(&p)),
    );
    files
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The folders to watch: each watched folder itself, and each file's folder.
fn folders(watched: &BTreeSet<PathBuf>) -> BTreeSet<PathBuf> {
    watched
        .iter()
        .filter_map(|path| {
            if path.is_dir() {
                Some(path.clone())
            } else {
                path.parent().map(Path::to_path_buf)
            }
        })
        .collect()
}

/// A watched file, or a file inside a watched folder (an override folder).
fn is_watched(watched: &BTreeSet<PathBuf>, path: &Path) -> bool {
    let path = absolute(path);
    watched.contains(&path) || path.parent().is_some_and(|parent| watched.contains(parent))
}
