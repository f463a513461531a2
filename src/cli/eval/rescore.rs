//! `eval --rescore`: the recorded turns judged again, with a line saying
//! what was re-scored and what the judge was asked.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use promptlab::eval::rescore::rescore_turns;
use promptlab::eval::trace::trace_verdict;
use promptlab::eval::{EvalPlan, TurnResult};
use promptlab::judge::{Judge, JudgeSpend};
use promptlab::telemetry::Tracing;

use super::settings::EvalSettings;
use crate::cli::error::{CliError, Exit};
use crate::cli::signals::cancel_on_signals;

pub fn run(
    settings: &EvalSettings,
    plan: &EvalPlan,
    dirs: &[PathBuf],
    judge: Option<&Judge>,
    tracing: Option<&Tracing>,
) -> Result<(Vec<TurnResult>, Option<Exit>), CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    let cancel = CancellationToken::new();
    let (results, stop) = runtime.block_on(async {
        let stop = cancel_on_signals(cancel.clone());
        let results = rescore_turns(plan, dirs, judge, usize::from(settings.jobs), &cancel).await;
        (results, stop.exit())
    });
    let results = results?;
    if let Some(tracing) = tracing {
        for result in &results {
            let Some(log) = &result.run_log else { continue };
            let labels = plan.labels(&result.spec);
            let tags = &plan.suite.suite.cases[result.spec.case].tags;
            // The turn's own trace, when its log names one.
            let original = promptlab::runs::read_run_log(log)
                .ok()
                .and_then(|recorded| recorded.header.trace);
            let verdict = trace_verdict(&labels, tags, &result.verdict);
            tracing.rescored(&labels.case, log, &verdict, original.as_ref());
        }
    }
    if !settings.output.quiet {
        let rescored = results.iter().filter(|r| r.run_log.is_some()).count();
        let mut judge = JudgeSpend::default();
        for result in &results {
            judge += JudgeSpend::of_rubric(&result.verdict.rubric);
        }
        let (calls, cached) = (judge.calls, judge.cached);
        let folders: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        eprintln!(
            "rescore: {rescored} of {} selected turns recorded in {}; no chat model call; judge: {} \
             asked, {cached} from the cache",
            results.len(),
            folders.join(", "),
            calls - cached
        );
    }
    Ok((results, stop))
}
