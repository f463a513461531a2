//! A rubric judge measured against people (SPEC §15): its identity, its
//! agreement with the labels on the turns it judged (Cohen's kappa with a
//! 95% interval, the confusion matrix, per criterion), the calibration
//! record kept in `<runs>/calibrations/`, and the gate an eval applies: a
//! judge that is not calibrated still judges, but its rubric verdicts do
//! not decide the exit code.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::expect::{is_rubric_line, rubric_line_start};
use super::plan::EvalPlan;
use crate::digest::{sha256_hex, sha256_hex_of_json};
use crate::judge::{JudgePrompts, JudgeSettings};
use crate::runs::labels::{LabelRecord, LabelVerdict, TurnLabel};
use crate::runs::record::{Outcome, RecordedVerdict};
use crate::stats::{Agreement2x2, Kappa, cohens_kappa, more_items_for_half_width};

/// The folder of calibration records in a runs folder.
pub const CALIBRATIONS_FOLDER: &str = "calibrations";
/// The largest calibration record read back.
pub const MAX_CALIBRATION_FILE_BYTES: u64 = 1024 * 1024;
/// The most calibration records read from the folder (newest kept).
pub const MAX_CALIBRATION_FILES: usize = 10_000;
/// The labels a calibration needs by default (`judge.minLabels`).
pub const DEFAULT_MIN_LABELS: u64 = 30;
/// Why a kappa has no interval.
const ONE_SIDED: &str = "the labels or the judge gave every turn one verdict: kappa's interval \
is undefined; label turns of the other verdict";
/// The interval's half-width `labelsNeeded` aims under.
const TARGET_HALF_WIDTH: f64 = 0.1;

/// Who judges, and on what: any change makes a calibration stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JudgeIdentity {
    /// The same suite's judge is "the same judge" (SPEC §15).
    pub suite: String,
    pub provider: String,
    pub model: String,
    pub thinking_level: String,
    /// SHA-256 of the effective rubric judge prompt.
    pub prompt_sha256: String,
    /// SHA-256 of the suite's rubric criteria, sorted, one per line.
    pub criteria_sha256: String,
}

impl JudgeIdentity {
    /// The identity of a judge (`provider`: `gemini`, `openai` or
    /// `script`) judging `plan`'s suite with `prompts`.
    pub fn new(
        plan: &EvalPlan,
        provider: &str,
        settings: &JudgeSettings,
        prompts: &JudgePrompts,
    ) -> JudgeIdentity {
        JudgeIdentity {
            suite: plan.suite.name.clone(),
            provider: provider.to_string(),
            model: settings.model.clone(),
            thinking_level: settings.thinking_level.as_str().to_string(),
            prompt_sha256: sha256_hex(&prompts.rubric),
            criteria_sha256: criteria_digest(&plan.rubric_criteria()),
        }
    }

    /// A short name for the identity (in file names and messages).
    pub fn digest(&self) -> String {
        sha256_hex_of_json(self)[..16].to_string()
    }
}

/// SHA-256 of a set of criteria: sorted, deduplicated, one per line.
pub fn criteria_digest(criteria: &[String]) -> String {
    let mut sorted: Vec<&str> = criteria.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    sha256_hex(sorted.join("\n"))
}

/// A judge's calibration as an eval sees it at its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CalibrationStatus {
    /// Its newest calibration meets `minKappa` and `minLabels`.
    Calibrated,
    /// The same suite's judge was calibrated under another identity (a
    /// criterion, the model, the prompt or the thinking level changed).
    Stale,
    /// No calibration meets the bar.
    Uncalibrated,
}

impl CalibrationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CalibrationStatus::Calibrated => "calibrated",
            CalibrationStatus::Stale => "stale",
            CalibrationStatus::Uncalibrated => "uncalibrated",
        }
    }
}

/// The summary's `judgeCalibration`: the status, what it rests on, and
/// whether the judge's rubric verdicts decided the exit code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JudgeCalibration {
    pub status: CalibrationStatus,
    /// The newest calibration's kappa for this identity; absent without one
    /// (or when kappa was undefined).
    pub kappa: Option<f64>,
    /// The labels that calibration used (0 without one).
    pub labels: u64,
    /// `judge.minKappa`, when the suite sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kappa: Option<f64>,
    pub min_labels: u64,
    /// Whether rubric expectations decided the exit code: only a
    /// calibrated judge's do when the suite sets `minKappa`.
    pub decides: bool,
    pub identity: JudgeIdentity,
}

impl JudgeCalibration {
    /// The one line the summary, JUnit and Markdown say.
    pub fn line(&self) -> String {
        let kappa = match self.kappa {
            Some(kappa) => format!("kappa {kappa:.2} on {} labels", self.labels),
            None => "no calibration".to_string(),
        };
        let needs = match self.min_kappa {
            Some(min) => format!(" (needs kappa ≥ {min:.2} on ≥ {} labels)", self.min_labels),
            None => String::new(),
        };
        let decides = match self.decides {
            true => "its rubric verdicts decide the exit code".to_string(),
            false => format!(
                "its rubric verdicts are shown but do not decide the exit code; label turns \
                 (`promptlab label`) and run `promptlab judge calibrate --suite {}`",
                self.identity.suite
            ),
        };
        format!(
            "judge {} {}: {}{needs}; {decides}",
            self.identity.model,
            self.status.as_str(),
            kappa
        )
    }
}

/// Agreement on one set of paired verdicts (the whole turn, or one
/// criterion): rows the people's label, columns the judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Agreement {
    pub labels: u64,
    /// Share of the turns where judge and label agree.
    pub agreement: Option<f64>,
    /// Absent when undefined (`kappaNull` says why).
    pub kappa: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kappa_null: Option<String>,
    /// 95% interval (asymptotic standard error, z = 1.96).
    pub kappa_interval: Option<(f64, f64)>,
    /// Why there is a kappa but no interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_null: Option<String>,
    /// Of the turns people passed, the share the judge passed.
    pub true_pass_rate: Option<f64>,
    /// Of the turns people failed, the share the judge failed.
    pub true_fail_rate: Option<f64>,
    /// `[[label pass & judge pass, label pass & judge fail], [label fail &
    /// judge pass, label fail & judge fail]]`.
    pub confusion: Agreement2x2,
    /// More labels, in the same proportions, that would bring the
    /// interval's half-width under 0.1.
    pub labels_needed: Option<u64>,
}

impl Agreement {
    /// The agreement of `pairs` of (label, judge) verdicts.
    pub fn of(pairs: impl IntoIterator<Item = (LabelVerdict, LabelVerdict)>) -> Agreement {
        let mut confusion: Agreement2x2 = [[0; 2]; 2];
        for (label, judge) in pairs {
            confusion[usize::from(!label.passed())][usize::from(!judge.passed())] += 1;
        }
        Agreement::of_table(confusion)
    }

    fn of_table(confusion: Agreement2x2) -> Agreement {
        let labels: u64 = confusion.iter().flatten().sum();
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        let kappa: Result<Kappa, _> = cohens_kappa(&confusion);
        Agreement {
            labels,
            agreement: share(confusion[0][0] + confusion[1][1], labels),
            kappa: kappa.as_ref().ok().map(|k| k.kappa),
            kappa_null: kappa.as_ref().err().map(ToString::to_string),
            interval_null: kappa
                .as_ref()
                .is_ok_and(|k| k.interval.is_none())
                .then(|| ONE_SIDED.to_string()),
            kappa_interval: kappa.as_ref().ok().and_then(|k| k.interval),
            true_pass_rate: share(confusion[0][0], confusion[0][0] + confusion[0][1]),
            true_fail_rate: share(confusion[1][1], confusion[1][0] + confusion[1][1]),
            confusion,
            labels_needed: kappa
                .ok()
                .and_then(|k| more_items_for_half_width(&k, labels, TARGET_HALF_WIDTH)),
        }
    }
}

/// Two reviewers' agreement on the turns both labelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewerAgreement {
    pub reviewers: (String, String),
    pub shared: u64,
    pub kappa: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kappa_null: Option<String>,
}

/// A judge's calibration, as stored and as `judge calibrate --format json`
/// prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CalibrationRecord {
    pub judge: JudgeIdentity,
    pub at: DateTime<Utc>,
    /// The eval runs whose turns were read.
    pub eval_runs: Vec<String>,
    /// SHA-256 of the labels used (each reviewer's current label of each
    /// turn, sorted): other labels make another calibration.
    pub labels_sha256: String,
    /// Turns with a label that are left out, and why (disputed, the judge
    /// errored, another expectation failed, no rubric).
    pub left_out: BTreeMap<String, u64>,
    #[serde(flatten)]
    pub overall: Agreement,
    /// The same, per rubric criterion (from per-criterion labels).
    pub criteria: BTreeMap<String, Agreement>,
    /// With several reviewers: their pairwise kappa on the turns both
    /// labelled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reviewers: Vec<ReviewerAgreement>,
}

/// One labelled turn, as calibration reads it.
pub struct LabelledTurn<'a> {
    pub turn_id: &'a str,
    /// The turn's standing verdict (its re-score's, else its footer's).
    pub verdict: Option<&'a RecordedVerdict>,
    /// Every label of the turn, oldest first.
    pub labels: &'a [LabelRecord],
}

/// Why a labelled turn is not among the pairs.
fn left_out_reason(turn: &LabelledTurn<'_>) -> Option<&'static str> {
    let Some(verdict) = turn.verdict else {
        return Some("no verdict recorded");
    };
    if verdict.rubric.is_empty() {
        return Some("no rubric criterion judged");
    }
    if verdict.outcome == Outcome::Error {
        return Some("the turn or its judge errored");
    }
    if verdict.failures.iter().any(|line| !is_rubric_line(line)) {
        return Some("another expectation failed");
    }
    None
}

/// The judge's verdict on a turn's rubric, from its standing verdict: a
/// failing criterion fails it; an errored turn or judge, or no rubric,
/// gives none.
pub fn judge_verdict(verdict: Option<&RecordedVerdict>) -> Option<LabelVerdict> {
    let verdict = verdict?;
    if verdict.rubric.is_empty() || verdict.outcome == Outcome::Error {
        return None;
    }
    let failed = (verdict.failures.iter()).any(|line| is_rubric_line(line));
    Some(match failed {
        true => LabelVerdict::Fail,
        false => LabelVerdict::Pass,
    })
}

/// The judge's verdict on one criterion of a turn: `None` when it was not
/// judged on it or could not judge.
fn judged_criterion(verdict: &RecordedVerdict, criterion: &str) -> Option<LabelVerdict> {
    let judged = verdict.rubric.iter().find(|v| v.criterion == criterion)?;
    if judged.error.is_some() || judged.pass.is_none() {
        return None;
    }
    let named = rubric_line_start(criterion);
    let failed = verdict.failures.iter().any(|line| line.starts_with(&named));
    Some(if failed {
        LabelVerdict::Fail
    } else {
        LabelVerdict::Pass
    })
}

/// The judge's agreement with the labels of `turns` (SPEC §15), bound to
/// `judge` and to the labels used.
pub fn calibrate<'a>(
    judge: JudgeIdentity,
    eval_runs: Vec<String>,
    turns: impl IntoIterator<Item = LabelledTurn<'a>>,
) -> CalibrationRecord {
    let mut pairs = Vec::new();
    let mut criteria: BTreeMap<String, Vec<(LabelVerdict, LabelVerdict)>> = BTreeMap::new();
    let mut left_out: BTreeMap<String, u64> = BTreeMap::new();
    let mut used: Vec<(String, String, LabelVerdict)> = Vec::new();
    let mut by_reviewer: BTreeMap<String, BTreeMap<String, LabelVerdict>> = BTreeMap::new();
    for turn in turns {
        let current = crate::runs::labels::current_by_reviewer(turn.labels);
        for (reviewer, label) in &current {
            let turns = by_reviewer.entry(reviewer.to_string()).or_default();
            turns.insert(turn.turn_id.to_string(), label.verdict);
            used.push((
                turn.turn_id.to_string(),
                reviewer.to_string(),
                label.verdict,
            ));
        }
        let verdict = turn.verdict;
        if let Some(verdict) = verdict {
            add_criteria(verdict, turn.labels, &mut criteria);
        }
        let label = match crate::runs::labels::turn_label(turn.labels) {
            None => continue,
            Some(TurnLabel::Disputed) => Err("disputed"),
            Some(TurnLabel::Agreed(label)) => left_out_reason(&turn).map_or(Ok(label), Err),
        };
        match (label, judge_verdict(verdict)) {
            (Ok(label), Some(judge)) => pairs.push((label, judge)),
            (Err(why), _) => *left_out.entry(why.to_string()).or_default() += 1,
            // `left_out_reason` leaves out every turn without a verdict.
            (Ok(_), None) => {}
        }
    }
    used.sort();
    CalibrationRecord {
        judge,
        at: Utc::now(),
        eval_runs,
        labels_sha256: sha256_hex_of_json(&used),
        left_out,
        overall: Agreement::of(pairs),
        criteria: (criteria.into_iter())
            .map(|(criterion, pairs)| (criterion, Agreement::of(pairs)))
            .collect(),
        reviewers: reviewer_agreement(&by_reviewer),
    }
}

/// Each per-criterion label the judge also judged, as a pair.
fn add_criteria(
    verdict: &RecordedVerdict,
    labels: &[LabelRecord],
    criteria: &mut BTreeMap<String, Vec<(LabelVerdict, LabelVerdict)>>,
) {
    let mut named: Vec<&String> = labels.iter().flat_map(|l| l.criteria.keys()).collect();
    named.sort();
    named.dedup();
    for criterion in named {
        let label = crate::runs::labels::criterion_label(labels, criterion);
        let (Some(TurnLabel::Agreed(label)), Some(judge)) =
            (label, judged_criterion(verdict, criterion))
        else {
            continue;
        };
        criteria
            .entry(criterion.clone())
            .or_default()
            .push((label, judge));
    }
}

/// Pairwise kappa of every two reviewers on the turns both labelled.
fn reviewer_agreement(
    by_reviewer: &BTreeMap<String, BTreeMap<String, LabelVerdict>>,
) -> Vec<ReviewerAgreement> {
    let reviewers: Vec<&String> = by_reviewer.keys().collect();
    let mut agreements = Vec::new();
    for (i, first) in reviewers.iter().enumerate() {
        for second in &reviewers[i + 1..] {
            let (a, b) = (&by_reviewer[*first], &by_reviewer[*second]);
            let pairs: Vec<_> = (a.iter())
                .filter_map(|(turn, verdict)| b.get(turn).map(|other| (*verdict, *other)))
                .collect();
            let agreement = Agreement::of(pairs);
            agreements.push(ReviewerAgreement {
                reviewers: ((*first).clone(), (*second).clone()),
                shared: agreement.labels,
                kappa: agreement.kappa,
                kappa_null: agreement.kappa_null,
            });
        }
    }
    agreements
}

/// `<runs>/calibrations/`.
pub fn calibrations_dir(runs_dir: &Path) -> PathBuf {
    runs_dir.join(CALIBRATIONS_FOLDER)
}

/// Keeps `record` as a new file, `<UTC time>-<identity digest>.json`,
/// never replacing one.
pub fn store_calibration(runs_dir: &Path, record: &CalibrationRecord) -> io::Result<PathBuf> {
    std::fs::create_dir_all(runs_dir)?;
    let name = format!(
        "{}-{}.json",
        record.at.format("%Y%m%dT%H%M%S%.3fZ"),
        record.judge.digest()
    );
    let mut text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
    text.push('\n');
    crate::whole_file::create_record(&calibrations_dir(runs_dir), &name, text.as_bytes())
}

/// The calibrations kept in the runs folder, oldest first; files that are
/// not one (or over the bound) are skipped — a calibration is re-made by
/// running `judge calibrate` again.
pub fn read_calibrations(runs_dir: &Path) -> Vec<CalibrationRecord> {
    let Ok(entries) = std::fs::read_dir(calibrations_dir(runs_dir)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    let skip = paths.len().saturating_sub(MAX_CALIBRATION_FILES);
    paths
        .into_iter()
        .skip(skip)
        .filter_map(|path| {
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if !meta.is_file() || meta.len() > MAX_CALIBRATION_FILE_BYTES {
                return None;
            }
            serde_json::from_slice(&std::fs::read(&path).ok()?).ok()
        })
        .collect()
}

/// What a suite's `judge:` section asks of its judge's calibration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CalibrationBar {
    pub min_kappa: Option<f64>,
    pub min_labels: u64,
}

/// The gate at an eval's start: the identity's newest calibration, and
/// whether it meets the bar (SPEC §15).
pub fn judge_calibration(
    runs_dir: &Path,
    identity: JudgeIdentity,
    bar: CalibrationBar,
) -> JudgeCalibration {
    let calibrations = read_calibrations(runs_dir);
    let newest = calibrations.iter().rev().find(|c| c.judge == identity);
    let meets = newest.is_some_and(|c| {
        c.overall.labels >= bar.min_labels
            && c.overall
                .kappa
                .is_some_and(|kappa| bar.min_kappa.is_none_or(|min| kappa + 1e-12 >= min))
    });
    let other_identity = calibrations
        .iter()
        .any(|c| c.judge.suite == identity.suite && c.judge != identity);
    let status = match (meets, other_identity) {
        (true, _) => CalibrationStatus::Calibrated,
        (false, true) if newest.is_none() => CalibrationStatus::Stale,
        (false, _) => CalibrationStatus::Uncalibrated,
    };
    JudgeCalibration {
        status,
        kappa: newest.and_then(|c| c.overall.kappa),
        labels: newest.map_or(0, |c| c.overall.labels),
        min_kappa: bar.min_kappa,
        min_labels: bar.min_labels,
        decides: bar.min_kappa.is_none() || status == CalibrationStatus::Calibrated,
        identity,
    }
}

/// Why `judge calibrate` could not calibrate.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    /// Nothing to calibrate: no eval run, or none that names its judge.
    #[error("{0}")]
    Nothing(String),
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The judge an eval run recorded in its summary (`judgeCalibration`).
fn recorded_identity(
    index: &crate::index::RunIndex,
    eval_run: &str,
) -> Result<Option<JudgeIdentity>, CalibrateError> {
    let summaries = index.summary_records(eval_run)?;
    Ok(summaries.into_iter().find_map(|summary| {
        serde_json::from_value(summary["judgeCalibration"]["identity"].clone()).ok()
    }))
}

/// The eval runs to calibrate on, newest first: those among `eval_runs`
/// whose judge has the newest one's identity. Returns that identity, the
/// runs kept, and a note for each run left out.
pub fn runs_of_one_judge(
    index: &crate::index::RunIndex,
    eval_runs: &[String],
    named: bool,
) -> Result<(JudgeIdentity, Vec<String>, Vec<String>), CalibrateError> {
    let mut identity: Option<JudgeIdentity> = None;
    let (mut kept, mut notes) = (Vec::new(), Vec::new());
    for run in eval_runs {
        match (recorded_identity(index, run)?, &identity) {
            (None, _) => notes.push(format!(
                "eval run {run} left out: its summary names no rubric judge (no rubric, or \
                 recorded before judges were named)"
            )),
            (Some(found), None) => {
                identity = Some(found);
                kept.push(run.clone());
            }
            (Some(found), Some(newest)) if &found == newest => kept.push(run.clone()),
            // Runs named on the command line are calibrated together or not
            // at all: one judge's verdicts are never mixed with another's.
            (Some(found), Some(first)) if named => {
                return Err(CalibrateError::Nothing(format!(
                    "eval runs {} and {run} were judged by different judges ({} {} and {} {}): \
                     calibrate each judge's runs on their own",
                    kept[0], first.provider, first.model, found.provider, found.model
                )));
            }
            (Some(found), Some(_)) => notes.push(format!(
                "eval run {run} left out: judged by another judge ({} {}, identity {})",
                found.provider,
                found.model,
                found.digest()
            )),
        }
    }
    let identity = identity.ok_or_else(|| {
        CalibrateError::Nothing(
            "no eval run here names its rubric judge: run the suite's eval (with rubric \
             criteria), label some of its turns, then calibrate"
                .into(),
        )
    })?;
    Ok((identity, kept, notes))
}

/// Calibrates `identity` on the labelled turns of `eval_runs` (their
/// members in the index): each turn with a labels folder is read, its
/// standing verdict beside its labels. Returns the record and the labels
/// or logs that could not be read.
pub fn calibrate_runs(
    index: &crate::index::RunIndex,
    identity: JudgeIdentity,
    eval_runs: Vec<String>,
) -> Result<(CalibrationRecord, Vec<String>), CalibrateError> {
    let mut paths = Vec::new();
    for run in &eval_runs {
        paths.extend(index.member_paths(run)?);
    }
    paths.sort();
    paths.dedup();
    let mut problems = Vec::new();
    let mut read: Vec<(String, Option<RecordedVerdict>, Vec<LabelRecord>)> = Vec::new();
    for path in paths {
        // Most turns have no label: a stat, not a read of the log.
        if std::fs::symlink_metadata(crate::runs::labels::labels_dir(&path)).is_err() {
            continue;
        }
        let log = match crate::runs::read_run_log_checked(&path) {
            Ok(log) => log,
            Err(error) => {
                problems.push(error.to_string());
                continue;
            }
        };
        let turn_id = log.header.turn_id.clone();
        let (labels, unreadable) = crate::runs::labels::read_labels(&path, &turn_id)?;
        problems.extend(unreadable.iter().map(ToString::to_string));
        let verdict = crate::runs::rescore::current_verdict(&log, &path);
        read.push((turn_id, verdict, labels));
    }
    let turns = read.iter().map(|(turn_id, verdict, labels)| LabelledTurn {
        turn_id,
        verdict: verdict.as_ref(),
        labels,
    });
    Ok((calibrate(identity, eval_runs, turns), problems))
}
