//! `eval --rescore`: the recorded turns judged again, with a line saying
//! what was re-scored and what the judge was asked.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use promptlab::eval::rescore::rescore_turns;
use promptlab::eval::spill::ResultStore;
use promptlab::eval::totals::checked;
use promptlab::eval::trace::trace_verdict;
use promptlab::eval::{EvalPlan, TurnResult};
use promptlab::judge::{Judge, JudgeSpend};
use promptlab::telemetry::Tracing;

use super::settings::EvalSettings;
use super::summary::unreadable;
use crate::cli::error::{CliError, Exit};
use crate::cli::signals::cancel_on_signals;

/// Re-scores the recorded turns into `spill`; returns the exit a signal
/// asked for. Traces and the line on stderr are made from the spill.
pub fn run(
    settings: &EvalSettings,
    plan: &EvalPlan,
    dirs: &[PathBuf],
    (judge, tracing): (Option<&Judge>, Option<&Tracing>),
    spill: &mut ResultStore,
) -> Result<Option<Exit>, CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    let cancel = CancellationToken::new();
    let (rescored, stop) = runtime.block_on(async {
        let stop = cancel_on_signals(cancel.clone());
        let jobs = (usize::from(settings.jobs), &cancel);
        let rescored = rescore_turns(plan, dirs, judge, jobs, spill).await;
        (rescored, stop.exit())
    });
    rescored?;
    if tracing.is_none() && settings.output.quiet {
        return Ok(stop);
    }
    let (mut rescored, mut judge) = (0usize, JudgeSpend::default());
    for result in checked(plan, spill).map_err(unreadable)? {
        let result = result.map_err(unreadable)?;
        judge += JudgeSpend::of_rubric(&result.verdict.rubric);
        let Some(log) = &result.run_log else { continue };
        rescored += 1;
        if let Some(tracing) = tracing {
            trace(tracing, plan, &result, log);
        }
    }
    if !settings.output.quiet {
        let (calls, cached) = (judge.calls, judge.cached);
        let folders: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        promptlab::text::eprintln_or_drop!(
            "rescore: {rescored} of {} selected turns recorded in {}; no chat model call; judge: {} \
             asked, {cached} from the cache",
            spill.len(),
            folders.join(", "),
            calls - cached
        );
    }
    Ok(stop)
}

/// The re-scored turn's verdict as a trace, a child of its own when its
/// log names one.
fn trace(tracing: &Tracing, plan: &EvalPlan, result: &TurnResult, log: &std::path::Path) {
    let labels = plan.labels(&result.spec);
    let tags = &plan.suite.suite.cases[result.spec.case].tags;
    let original = promptlab::runs::read_run_log(log)
        .ok()
        .and_then(|recorded| recorded.header.trace);
    let verdict = trace_verdict(&labels, tags, &result.verdict);
    tracing.rescored(&labels.case, log, &verdict, original.as_ref());
}
