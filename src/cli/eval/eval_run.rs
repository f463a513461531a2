//! The eval run an invocation is: its id (`--eval-run` or fresh), what it
//! did, and the line the summary gives it.

use promptlab::eval::EvalPlan;
use promptlab::eval::report::TurnsFromRun;
use promptlab::eval::run_id::EvalRunKind;

use promptlab::eval::outcome::EvalMode;

/// `eval run ev-0123456789 (merge) · 12 turns from ev-aaaaaaaaaa, 3 from logs without an id`
/// `from_runs`: the turns read from logs, by the run that recorded them.
pub fn eval_run_line(mode: &EvalMode, plan: &EvalPlan, from_runs: &[TurnsFromRun]) -> String {
    let kind = match mode.run_kind() {
        EvalRunKind::Run => "",
        EvalRunKind::Merge => " (merge)",
        EvalRunKind::Rescore => " (rescore)",
    };
    let mut line = format!("eval run {}{kind}", plan.eval_run);
    let from: Vec<String> = from_runs
        .iter()
        .map(|run| match &run.eval_run {
            Some(id) => format!("{} from {id}", run.turns),
            None => format!("{} from logs without an eval run id", run.turns),
        })
        .collect();
    if !from.is_empty() {
        line.push_str(&format!(" · turns read: {}", from.join(", ")));
    }
    line
}
