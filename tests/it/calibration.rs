//! Judges calibrated against people (SPEC §15): Cohen's kappa, its
//! interval and the confusion matrix checked against statsmodels and
//! scikit-learn; `judge calibrate` through the binary; and the eval gate's
//! three states (uncalibrated, calibrated, stale after one criterion's
//! edit) and `--require-calibrated-judge`.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::labelled::in_runs;
use support::references::{python_module, run_reference};
use support::{run_command, write};

use promptlab::eval::calibration::Agreement;
use promptlab::runs::labels::LabelVerdict;

/// A small deterministic generator (xorshift): label sets nobody chose.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn verdict(&mut self, pass_per_mille: u64) -> LabelVerdict {
        match self.next() % 1000 < pass_per_mille {
            true => LabelVerdict::Pass,
            false => LabelVerdict::Fail,
        }
    }
}

fn close(ours: Option<f64>, theirs: &Value, what: &str, case: usize) {
    match (ours, theirs.as_f64()) {
        (Some(ours), Some(theirs)) => assert!(
            (ours - theirs).abs() < 1e-9,
            "set {case}: {what}: ours {ours}, the reference's {theirs}"
        ),
        (None, None) => {}
        (ours, _) => panic!("set {case}: {what}: ours {ours:?}, the reference's {theirs}"),
    }
}

#[test]
fn kappa_its_interval_and_the_confusion_matrix_match_statsmodels_and_scikit_learn() {
    let Some((python, script)) = python_module("statsmodels", "statsmodels", "kappa-check.py")
    else {
        return;
    };
    let mut draws = Draws(0x9e37_79b9_7f4a_7c15);
    let mut sets: Vec<Vec<(LabelVerdict, LabelVerdict)>> = Vec::new();
    for case in 0..300 {
        let n = 1 + (draws.next() % 80) as usize;
        // Some sets skewed to one side, some all one class for a rater or
        // both (the degenerate ones), most mixed and correlated.
        let (label_rate, agree) = match case % 6 {
            0 => (1000, 1000),
            1 => (0, 900),
            2 => (950, 500),
            _ => (draws.next() % 1000, draws.next() % 1000),
        };
        let pairs = (0..n)
            .map(|_| {
                let label = draws.verdict(label_rate);
                let judge = match draws.next() % 1000 < agree {
                    true => label,
                    false => draws.verdict(500),
                };
                (label, judge)
            })
            .collect();
        sets.push(pairs);
    }
    let word = |v: &LabelVerdict| v.as_str();
    let input: String = sets
        .iter()
        .map(|pairs| {
            let label: Vec<&str> = pairs.iter().map(|(l, _)| word(l)).collect();
            let judge: Vec<&str> = pairs.iter().map(|(_, j)| word(j)).collect();
            format!("{}\n", serde_json::json!({"label": label, "judge": judge}))
        })
        .collect();
    let said = run_reference(&python, &[script.as_os_str()], input.as_bytes());
    assert!(said.ok, "{}", said.stderr);
    let answers: Vec<Value> = said
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers.len(), sets.len());
    let (mut undefined, mut no_interval) = (0, 0);
    for (case, (pairs, theirs)) in sets.iter().zip(&answers).enumerate() {
        let ours = Agreement::of(pairs.iter().copied());
        assert_eq!(
            serde_json::to_value(ours.confusion).unwrap(),
            theirs["confusion"],
            "set {case}: the confusion matrix"
        );
        close(ours.kappa, &theirs["kappa"], "kappa (statsmodels)", case);
        close(
            ours.kappa,
            &theirs["sklearnKappa"],
            "kappa (scikit-learn)",
            case,
        );
        match (ours.kappa, ours.kappa_interval) {
            // A rater gave every item one class: the variance is zero in
            // exact arithmetic, and statsmodels' rounding says nan or an
            // interval of width 0; ours says undefined.
            (Some(kappa), None) => {
                for end in ["low", "high"] {
                    let end = &theirs[end];
                    // sqrt of a rounding error: up to ~1e-8.
                    let width = end.as_f64().map(|end| (end - kappa).abs());
                    assert!(width.is_none_or(|w| w < 1e-6), "set {case}: {end}");
                }
            }
            (_, interval) => {
                close(
                    interval.map(|i| i.0),
                    &theirs["low"],
                    "interval's low",
                    case,
                );
                close(
                    interval.map(|i| i.1),
                    &theirs["high"],
                    "interval's high",
                    case,
                );
            }
        }
        undefined += usize::from(ours.kappa.is_none());
        no_interval += usize::from(ours.kappa.is_some() && ours.kappa_interval.is_none());
        if ours.kappa.is_none() {
            assert!(ours.kappa_null.unwrap().contains("one class"));
        }
    }
    // The generator reached the degenerate cases it was built to.
    assert!(
        undefined >= 50 && no_interval >= 10,
        "{undefined} {no_interval}"
    );
}

const PAYMENT: &str = "does not promise payment before coverage is confirmed";

/// A judge that fails the payment criterion on answers with "paid", and
/// passes everything else: its verdicts are known without our code.
fn judge_script(dir: &Path) -> PathBuf {
    write(
        dir,
        "judge.yaml",
        "rubric:\n  - answerContains: 'paid'\n    reply: {pass: false, score: 0.0, reason: promises}\n  \
         - reply: {pass: true, score: 1.0, reason: fine}\n",
    )
}

/// One case on one claim, `repeats` samples; the scripted answer says
/// "paid" (the judge fails it) when `promise` is set.
fn suite(dir: &Path, judge_extra: &str, criterion: &str, repeats: u32, promise: bool) -> PathBuf {
    let answer = match promise {
        true => "It will be paid in full.",
        false => "Coverage is not confirmed yet.",
    };
    write(dir, "answer.yaml", &support::reports::answer_script(answer));
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: calibrated\nclaims: {{ids: [CLM-HH-0001]}}\nrepeats: {repeats}\n\
             defaults: {{today: 2026-11-30}}\njudge: {{model: judge-model{judge_extra}}}\n\
             cases:\n  - name: payment\n    message: Will this claim be paid?\n    script: answer.yaml\n    \
             expect:\n      rubric: {criterion}\n"
        ),
    )
}

fn eval(runs: &Path, suite: &Path, judge: &Path, extra: &[&str]) -> (i32, Value, String) {
    let out = run_command(
        in_runs(runs)
            .arg("eval")
            .arg(suite)
            .args([
                "--provider",
                "script",
                "--format",
                "ndjson",
                "--judge-provider",
                "script",
            ])
            .arg("--judge-script")
            .arg(judge)
            .args(extra),
    );
    let summary = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|record| record["kind"] == "summary")
        .unwrap_or(Value::Null);
    (out.code, summary, out.stderr)
}

fn label_all(runs: &Path, verdict: &str, reviewer: &str) -> usize {
    let logs = support::run_logs_under(runs);
    for log in &logs {
        let out = run_command(in_runs(runs).arg("label").arg(log).args([
            "--verdict",
            verdict,
            "--reviewer",
            reviewer,
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    logs.len()
}

fn calibrate(runs: &Path) -> Value {
    let out = run_command(in_runs(runs).args(["judge", "calibrate", "--format", "json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn an_uncalibrated_judge_does_not_decide_until_its_calibration_meets_the_bar() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let judge = judge_script(dir.path());
    let bar = ", minKappa: 0.5, minLabels: 4";
    // Four passing turns, four the judge fails: people agree with it.
    let passing = suite(dir.path(), bar, PAYMENT, 4, false);
    let (code, summary, stderr) = eval(&runs, &passing, &judge, &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(summary["judgeCalibration"]["status"], "uncalibrated");
    label_all(&runs, "pass", "ann");
    let promising = suite(dir.path(), bar, PAYMENT, 4, true);
    let (code, summary, stderr) = eval(&runs, &promising, &judge, &[]);
    // The judge failed every turn, but it is not calibrated: exit 0.
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(summary["judgeCalibration"]["decides"], false);
    assert_eq!(
        summary["variants"][0]["failed"], 4,
        "its verdicts are shown"
    );
    let before: Vec<PathBuf> = support::run_logs_under(&runs);
    for log in before.iter().filter(|log| {
        std::fs::read_to_string(log)
            .unwrap()
            .contains("will be paid")
            || std::fs::read_to_string(log)
                .unwrap()
                .contains("paid in full")
    }) {
        let out = run_command(
            in_runs(&runs)
                .arg("label")
                .arg(log)
                .args(["--verdict", "fail", "--reviewer", "ann", "--criterion"])
                .arg(format!("{PAYMENT}=fail")),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let record = calibrate(&runs);
    // Per criterion: only the four turns labelled on it, all failed by
    // both the people and the judge — one class everywhere, no kappa.
    let criterion = &record["criteria"][PAYMENT];
    assert_eq!(criterion["confusion"], serde_json::json!([[0, 0], [0, 4]]));
    assert!(criterion["kappa"].is_null() && criterion["kappaNull"].is_string());
    // Known by construction: 4 labelled pass the judge passed, 4 labelled
    // fail it failed — over the newest run's judge (both runs share it).
    assert_eq!(record["confusion"], serde_json::json!([[4, 0], [0, 4]]));
    assert_eq!(record["kappa"], 1.0);
    assert_eq!(record["judge"]["suite"], "calibrated");
    let (code, summary, _) = eval(&runs, &promising, &judge, &[]);
    assert_eq!(summary["judgeCalibration"]["status"], "calibrated");
    assert_eq!(code, 1, "a calibrated judge's fail decides");
    // One criterion edited: the calibration is stale, the judge advisory.
    let edited = suite(dir.path(), bar, "never promises payment", 4, true);
    let (code, summary, _) = eval(&runs, &edited, &judge, &[]);
    assert_eq!(summary["judgeCalibration"]["status"], "stale");
    assert_eq!(code, 0);
    let shown = run_command(in_runs(&runs).args(["evals", "show", "last"]));
    assert!(
        shown
            .stdout
            .contains("judge judge-model stale: no calibration (needs kappa ≥ 0.50"),
        "{}",
        shown.stdout
    );
    // --require-calibrated-judge: exit 2 before any turn runs.
    let logs = support::run_logs_under(&runs).len();
    let (code, _, stderr) = eval(&runs, &edited, &judge, &["--require-calibrated-judge"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--require-calibrated-judge: judge judge-model stale"),
        "{stderr}"
    );
    assert_eq!(support::run_logs_under(&runs).len(), logs, "nothing ran");
}

#[test]
fn a_tie_between_reviewers_is_disputed_and_left_out_and_a_bar_unmet_stays_uncalibrated() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let judge = judge_script(dir.path());
    let suite = suite(dir.path(), ", minKappa: 0.5", PAYMENT, 3, false);
    let (code, _, stderr) = eval(&runs, &suite, &judge, &[]);
    assert_eq!(code, 0, "{stderr}");
    let turns = label_all(&runs, "pass", "ann");
    label_all(&runs, "fail", "bob");
    // Every turn disputed: the figures are said, nothing is kept (a
    // calibration on no label would hide a stale one), exit 2.
    let out = run_command(in_runs(&runs).args(["judge", "calibrate", "--format", "json"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("nothing to calibrate"),
        "{}",
        out.stderr
    );
    assert!(!runs.join("calibrations").exists());
    let record: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(record["leftOut"]["disputed"], turns as u64);
    assert_eq!(record["labels"], 0);
    assert!(record["kappa"].is_null());
    assert!(record["kappaNull"].as_str().unwrap().contains("no turn"));
    assert_eq!(
        record["reviewers"][0]["reviewers"],
        serde_json::json!(["ann", "bob"])
    );
    assert_eq!(record["reviewers"][0]["shared"], turns as u64);
    // With no calibration meeting minLabels (30 by default) the judge is
    // not trusted.
    let (_, summary, _) = eval(&runs, &suite, &judge, &[]);
    assert_eq!(summary["judgeCalibration"]["status"], "uncalibrated");
    assert_eq!(summary["judgeCalibration"]["minLabels"], 30);
}

#[test]
fn calibrate_with_nothing_to_calibrate_and_a_bad_bar_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    let out = run_command(in_runs(&runs).args(["judge", "calibrate"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("no eval run here names its rubric judge"),
        "{}",
        out.stderr
    );
    let judge = judge_script(dir.path());
    for (bar, problem) in [
        (", minKappa: 1.5", "judge.minKappa"),
        (", minLabels: 0", "judge.minLabels"),
    ] {
        let suite = suite(dir.path(), bar, PAYMENT, 1, false);
        let (code, _, stderr) = eval(&runs, &suite, &judge, &[]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(problem), "{stderr}");
    }
}
