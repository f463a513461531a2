//! `eval SUITE --rescore`: the turns already recorded, judged again against
//! the suite's current expectations — no chat model call, only the judge
//! for rubric criteria (cached when unchanged). Each new verdict is written
//! beside its log (`runs::rescore`); the log itself is never altered. A
//! turn recorded under another prompt version, or not at all, is reported
//! as such, never matched to a neighbour.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use chrono::Utc;
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::expect::{Observation, Outcome, Verdict};
use super::judging::judge_rubric;
use super::matrix::TurnSpec;
use super::plan::{EvalPlan, TurnKey};
use super::runner::{TurnResult, index_recorded, missing_result};
use super::spill::ResultStore;
use crate::judge::Judge;
use crate::runs::record::RecordedVerdict;
use crate::runs::rescore::{RescoreRecord, recorded_rubric, write_rescore};
use crate::runs::{read_run_log_checked, scan_runs};

/// Re-scores every selected turn recorded under `dirs`, `concurrency` at a
/// time, each put in `store` as it is judged.
pub async fn rescore_turns(
    plan: &EvalPlan,
    dirs: &[PathBuf],
    judge: Option<&Judge>,
    (concurrency, cancel): (usize, &CancellationToken),
    store: &mut ResultStore,
) -> std::io::Result<()> {
    let recorded = index_recorded(dirs, plan, false)?;
    let elsewhere = other_versions(plan, dirs)?;
    let jobs = plan.selected().map(|spec| {
        let path = recorded.get(&plan.key(&spec)).cloned();
        let elsewhere = &elsewhere;
        async move {
            // Once cancelled, nothing more is judged (or written).
            if cancel.is_cancelled() {
                return None;
            }
            Some(match path {
                Some(path) => rescore_one(plan, &spec, &path, judge, cancel).await,
                None => match elsewhere.get(&plan.key(&spec)) {
                    Some(fingerprints) => other_version(plan, &spec, fingerprints),
                    None => missing_result(&spec),
                },
            })
        }
    });
    let mut judged = futures_util::stream::iter(jobs).buffer_unordered(concurrency.max(1));
    while let Some(result) = judged.next().await {
        if let Some(result) = result {
            store.push(result);
        }
    }
    Ok(())
}

/// The prompt versions each turn of the suite was recorded under (by its
/// key: the variant and its place), whatever the current ones are.
fn other_versions(
    plan: &EvalPlan,
    dirs: &[PathBuf],
) -> std::io::Result<HashMap<TurnKey, Vec<String>>> {
    let (summaries, _) = scan_runs(dirs)?;
    let mut versions: HashMap<TurnKey, Vec<String>> = HashMap::new();
    for summary in summaries {
        let Some(key) = summary.view().key() else {
            continue;
        };
        if key.place.suite.as_deref() != Some(plan.suite.name.as_str()) {
            continue;
        }
        let entry = versions.entry(key).or_default();
        if !entry.contains(&summary.header.fingerprint) {
            entry.push(summary.header.fingerprint.clone());
        }
    }
    Ok(versions)
}

fn other_version(plan: &EvalPlan, spec: &TurnSpec, fingerprints: &[String]) -> TurnResult {
    let variant = &plan.matrix.variants[spec.variant];
    let message = format!(
        "not re-scored: recorded under prompt version {} (with other model settings, or another \
         version), but variant `{}` is now {} — run it again to judge this version",
        fingerprints.join(", "),
        variant.name,
        variant.fingerprint
    );
    TurnResult {
        from_log: true,
        ..missing_with(spec, message)
    }
}

fn missing_with(spec: &TurnSpec, message: String) -> TurnResult {
    let mut result = missing_result(spec);
    result.observation.error = Some(message.clone());
    result.verdict = Verdict::new(Outcome::Error, vec![message]);
    result
}

async fn rescore_one(
    plan: &EvalPlan,
    spec: &TurnSpec,
    path: &Path,
    judge: Option<&Judge>,
    cancel: &CancellationToken,
) -> TurnResult {
    let log = match read_run_log_checked(path) {
        Ok(log) => log,
        Err(error) => return missing_with(spec, format!("not re-scored: {error}")),
    };
    let mut observation = Observation::from_log(&log);
    // A re-score calls no chat model: this run spent nothing on the chat.
    observation.cost_usd = Some(0.0);
    let expect = plan.expectations(spec);
    let rubric = match judge {
        _ if expect.rubric.0.is_empty() => Vec::new(),
        Some(judge) => {
            judge_rubric(
                judge,
                expect,
                &observation.message,
                &observation,
                cancel,
                None,
            )
            .await
        }
        None => match recorded_rubric(&log, path) {
            Ok(rubric) => rubric,
            Err(error) => return missing_with(spec, format!("not re-scored: {error}")),
        },
    };
    let verdict = super::expect::judge(expect, &observation, &rubric);
    let labels = plan.labels(spec);
    let record = RescoreRecord {
        turn_id: log.header.turn_id.clone(),
        suite: labels.suite,
        case: labels.case,
        variant: labels.variant,
        fingerprint: log.header.fingerprint.clone(),
        rescored_at: Utc::now(),
        verdict: RecordedVerdict {
            outcome: verdict.outcome,
            failures: verdict.failures.clone(),
            rubric: verdict.rubric.clone(),
        },
    };
    let mut result = TurnResult {
        run_log: Some(path.to_path_buf()),
        from_log: true,
        ..TurnResult::new(spec, observation, verdict)
    };
    // A judge that failed (or a cancelled run) gives no new verdict: the
    // recorded one stands, rather than being replaced by an error.
    if let Some(error) = record.verdict.rubric.iter().find_map(|v| v.error.as_ref()) {
        result.verdict.failures.push(format!(
            "not re-scored ({error}): the recorded verdict stands"
        ));
        return result;
    }
    if let Err(error) = write_rescore(path, &record) {
        let error = format!("the re-score could not be written beside it: {error}");
        result.verdict = Verdict::new(Outcome::Error, vec![error.clone()]);
        result.log_error = Some(error);
    }
    result
}
