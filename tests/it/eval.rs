//! `promptlab eval` through the real binary with the script provider:
//! verdicts and exit codes, JUnit, NDJSON, real concurrency, shards and their
//! merge, resume, and malformed suites.

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use promptlab::runs::read_run_log;
use serde_json::Value;
use support::{promptlab, run_command, write};

fn eval_in(runs: &Path) -> Command {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", runs)
        .args(["eval", "--provider", "script"]);
    command
}

/// A suite in `dir`, with a passing and a failing case over two claims.
fn suite(dir: &Path, extra: &str) -> std::path::PathBuf {
    write(
        dir,
        "ok.yaml",
        "turns:\n  - calls: [{name: get_claim_section, args: {section: policy}}]\n    usage: {inputTokens: 100, outputTokens: 10, cacheReadTokens: 50}\n  - text: The excess is recorded in the policy.\n    usage: {inputTokens: 200, outputTokens: 20, cacheReadTokens: 150}\n",
    );
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: t\nclaims:\n  ids: [CLM-HH-0001, CLM-MTR-0002]\ndefaults:\n  today: 2026-11-30\n{extra}cases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect:\n      answerContains: excess\n      toolCalled: [{{name: get_claim_section, args: {{section: policy}}}}]\n"
        ),
    )
}

fn ndjson(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// The verdict of every turn, keyed by its place in the matrix.
fn verdicts(lines: &[Value]) -> BTreeSet<String> {
    lines
        .iter()
        .filter(|line| line["kind"] == "turn")
        .map(|line| {
            format!(
                "{} {} {} {} {} {}",
                line["variant"],
                line["claim"],
                line["case"],
                line["sample"],
                line["verdict"],
                line["failures"]
            )
        })
        .collect()
}

#[test]
fn a_passing_suite_exits_0_and_writes_valid_junit() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "repeats: 2\n");
    let junit = dir.path().join("report.xml");
    let out = run_command(eval_in(runs.path()).arg(&suite).arg("--junit").arg(&junit));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("4 turns: 4 passed, 0 failed, 0 errored"),
        "{}",
        out.stdout
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).expect("the JUnit report is well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        root.attribute("tests"),
        Some("2"),
        "repeats fold into one testcase per claim × case"
    );
    assert_eq!(root.attribute("failures"), Some("0"));
    let cases: Vec<_> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[0].attribute("name"), Some("CLM-HH-0001 · excess"));
    // Every turn was recorded, labelled with its place in the suite.
    let mut logs = 0;
    // The prompt versions' folders (`evals/` holds the eval runs' summaries,
    // `prompts/` the stored prompts).
    for folder in std::fs::read_dir(runs.path()).unwrap().flatten() {
        // The index (`index.sqlite`, made at the eval's end) is no folder.
        if !folder.path().is_dir()
            || folder.file_name() == "evals"
            || folder.file_name() == "prompts"
        {
            continue;
        }
        for file in std::fs::read_dir(folder.path()).unwrap() {
            let log = read_run_log(&file.unwrap().path()).unwrap();
            let labels = log.header.labels.unwrap();
            assert_eq!(
                (
                    labels.suite.as_str(),
                    labels.variant.as_str(),
                    labels.case.as_str()
                ),
                ("t", "default", "excess")
            );
            logs += 1;
        }
    }
    assert_eq!(logs, 4);
}

#[test]
fn a_failing_suite_exits_1_and_says_what_was_seen() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "");
    let failing = std::fs::read_to_string(&suite)
        .unwrap()
        .replace("answerContains: excess", "answerContains: deductible");
    std::fs::write(&suite, failing).unwrap();
    let junit = dir.path().join("report.xml");
    let out = run_command(eval_in(runs.path()).arg(&suite).arg("--junit").arg(&junit));
    assert_eq!(out.code, 1);
    assert!(out.stdout.contains("fail default · CLM-HH-0001 · excess #1\n    - answer does not contain \"deductible\" (answer: \"The excess is recorded in the policy.\")"), "{}", out.stdout);
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let failures: Vec<_> = document
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .collect();
    assert_eq!(failures.len(), 2);
    // The message CI widgets headline names the unmet expectation.
    assert_eq!(
        failures[0].attribute("message"),
        Some(
            "answer does not contain \"deductible\" (answer: \"The excess is recorded in the policy.\")"
        )
    );
    // GitLab shows the body: the expectation and the run log come first.
    let body = failures[0].text().unwrap();
    let mut lines = body.lines();
    assert_eq!(lines.next(), failures[0].attribute("message"), "{body}");
    let log = lines.next().unwrap().strip_prefix("run log: ").unwrap();
    assert!(std::path::Path::new(log).is_file(), "{body}");
    assert_eq!(
        lines.next(),
        Some("0 of 1 samples passed (pass rate 0%); 1 needed (threshold: 100% of samples)"),
        "{body}"
    );
    assert!(body.contains("answer does not contain \"deductible\""));
}

#[test]
fn a_turn_that_errors_never_stops_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "broken.yaml",
        "turns:\n  - text: Partial\n    error: the model is overloaded\n",
    );
    let suite = suite(dir.path(), "");
    let text = std::fs::read_to_string(&suite).unwrap()
        + "  - name: broken\n    message: Hello?\n    script: broken.yaml\n";
    std::fs::write(&suite, text).unwrap();
    let out = run_command(
        eval_in(runs.path())
            .arg(&suite)
            .args(["--format", "ndjson"]),
    );
    assert_eq!(out.code, 1);
    let lines = ndjson(&out.stdout);
    let outcomes: Vec<String> = lines
        .iter()
        .filter(|l| l["kind"] == "turn")
        .map(|l| {
            format!(
                "{}:{}",
                l["case"].as_str().unwrap(),
                l["verdict"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(outcomes.iter().filter(|o| *o == "excess:pass").count(), 2);
    assert_eq!(outcomes.iter().filter(|o| *o == "broken:error").count(), 2);
    let summary = lines.last().unwrap();
    assert_eq!(summary["kind"], "summary");
    assert_eq!(summary["variants"][0]["errors"], 2);
    assert_eq!(summary["exit"], 1);
    // Events come wrapped with their place in the matrix.
    let event = lines.iter().find(|l| l["kind"] == "event").unwrap();
    assert_eq!(event["variant"], "default");
    assert!(event["event"]["type"].is_string());
}

#[test]
fn concurrency_is_real_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "slow.yaml",
        "turns:\n  - chunks: [one, two, three]\n    delayMs: 150\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: slow\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002, CLM-CPR-0003]}\nrepeats: 2\ncases:\n  - name: q\n    message: Hello\n    script: slow.yaml\n",
    );
    let out = run_command(eval_in(runs.path()).arg(&suite).args(["-j", "3"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // Overlap of the six turns' recorded lifetimes: three at once, never more.
    let mut spans = Vec::new();
    // The prompt versions' folders (`evals/` holds the eval runs' summaries,
    // `prompts/` the stored prompts).
    for folder in std::fs::read_dir(runs.path()).unwrap().flatten() {
        // The index (`index.sqlite`, made at the eval's end) is no folder.
        if !folder.path().is_dir()
            || folder.file_name() == "evals"
            || folder.file_name() == "prompts"
        {
            continue;
        }
        for file in std::fs::read_dir(folder.path()).unwrap() {
            let log = read_run_log(&file.unwrap().path()).unwrap();
            spans.push((log.header.started_at, log.footer.unwrap().ended_at));
        }
    }
    assert_eq!(spans.len(), 6);
    let most_at_once = spans
        .iter()
        .map(|(start, _)| {
            spans
                .iter()
                .filter(|(s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap();
    assert_eq!(most_at_once, 3, "{spans:?}");
}

#[test]
fn two_shards_and_a_merge_give_the_same_verdicts_as_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(
        dir.path(),
        "variants:\n  - name: default\n  - name: terse\n    prompts: {system.base: 'Be terse, {{assistant}}.'}\nrepeats: 2\n",
    );
    write(
        dir.path(),
        "fails.yaml",
        "turns:\n  - text: I do not know.\n",
    );
    let text = std::fs::read_to_string(&suite).unwrap()
        + "  - name: unknown\n    message: What is the excess?\n    script: fails.yaml\n    expect: {answerContains: excess}\n";
    std::fs::write(&suite, text).unwrap();
    let whole = tempfile::tempdir().unwrap();
    let one = run_command(
        eval_in(whole.path())
            .arg(&suite)
            .args(["--format", "ndjson"]),
    );
    assert_eq!(one.code, 1);
    let expected = verdicts(&ndjson(&one.stdout));
    assert_eq!(expected.len(), 16);

    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = run_command(
        eval_in(first.path())
            .arg(&suite)
            .args(["--shard", "1/2", "--format", "ndjson"]),
    );
    let b = run_command(
        eval_in(second.path())
            .arg(&suite)
            .args(["--shard", "2/2", "--format", "ndjson"]),
    );
    let (a, b) = (verdicts(&ndjson(&a.stdout)), verdicts(&ndjson(&b.stdout)));
    assert_eq!(a.len() + b.len(), 16);
    assert!(a.is_disjoint(&b));

    let merged = run_command(
        promptlab()
            .arg("eval")
            .arg(&suite)
            .arg("--report")
            .arg(first.path())
            .arg("--report")
            .arg(second.path())
            .args(["--format", "ndjson"]),
    );
    assert_eq!(merged.code, 1, "the merge has the failures too");
    assert_eq!(verdicts(&ndjson(&merged.stdout)), expected);
    // A merge missing a shard reports its turns as not run.
    let half = run_command(
        promptlab()
            .arg("eval")
            .arg(&suite)
            .arg("--report")
            .arg(first.path())
            .args(["--format", "ndjson"]),
    );
    let missing = ndjson(&half.stdout)
        .iter()
        .filter(|l| l["kind"] == "turn" && l["failures"][0] == "not run: no run log for this turn")
        .count();
    assert_eq!(missing, b.len());
    // More shards than turns: one gets none, and says so (no cost a turn).
    let empty = tempfile::tempdir().unwrap();
    let none = run_command(eval_in(empty.path()).arg(&suite).args(["--shard", "40/40"]));
    assert_eq!(none.code, 0, "{}", none.stderr);
    assert!(
        none.stdout.contains("shard 40/40: 0 of 16 turns"),
        "{}",
        none.stdout
    );
    assert!(none.stdout.contains("(no turns)"), "{}", none.stdout);
    assert!(!none.stdout.contains("/turn)"), "{}", none.stdout);
}

#[test]
fn resume_runs_only_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "repeats: 3\n");
    assert_eq!(run_command(eval_in(runs.path()).arg(&suite)).code, 0);
    let mut logs: Vec<_> = std::fs::read_dir(runs.path().join("default"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 6);
    std::fs::remove_file(&logs[0]).unwrap();
    std::fs::remove_file(&logs[3]).unwrap();
    let out = run_command(eval_in(runs.path()).arg(&suite).arg("--resume"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("resume: 4 turns already done, 2 to run"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("6 turns: 6 passed"), "{}", out.stdout);
    assert_eq!(
        std::fs::read_dir(runs.path().join("default"))
            .unwrap()
            .count(),
        6
    );
    let again = run_command(eval_in(runs.path()).arg(&suite).arg("--resume"));
    assert!(
        again
            .stderr
            .contains("resume: 6 turns already done, 0 to run"),
        "{}",
        again.stderr
    );
}

#[test]
fn malformed_suites_are_rejected_with_the_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, &str)> = vec![
        ("name: x\ncases:\n  - name: a\n    mesage: hi\n", "line 4"),
        (
            "name: x\ncases:\n  - name: a\n    message: hi\n    expect:\n      maxRounds: lots\n",
            "field `cases[0].expect.maxRounds`",
        ),
        (
            "name: x\ncases:\n  - name: a\n    message: hi\n    capability: make_tea\n",
            "field `cases[0].capability`: unknown capability `make_tea`",
        ),
        (
            "name: x\ncases:\n  - name: a\n    message: hi\n    expect: {answerMatches: '(unclosed'}\n",
            "field `cases[0].expect.answerMatches[0]`: not a valid regular expression",
        ),
        (
            "name: x\nclaims: {ids: [NOPE-1]}\ncases:\n  - name: a\n    message: hi\n",
            "field `claims`: claim `NOPE-1` is not in the claim store",
        ),
        (
            "name: x\ncases:\n  - name: a\n    history: [{role: user, text: hi}, {role: assistant, text: yo}]\n",
            "field `cases[0].history`: messages[1].role: the last message must be from the user",
        ),
        (
            "name: x\ncases: []\n",
            "field `cases`: a suite needs at least one case",
        ),
    ];
    for (text, expected) in cases {
        let suite = write(dir.path(), "bad.yaml", text);
        let out = run_command(
            eval_in(runs.path())
                .arg(&suite)
                .args(["--script", "tests/data/scripts/excess.yaml"]),
        );
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{text}: {}", out.stderr);
        assert!(out.stderr.contains("bad.yaml"), "{}", out.stderr);
    }
}

#[test]
fn the_shipped_suites_pass_offline() {
    let runs = tempfile::tempdir().unwrap();
    for suite in [
        "suites/smoke.yaml",
        "suites/regression.yaml",
        "suites/models.yaml",
    ] {
        let out = run_command(eval_in(runs.path()).arg(suite).args(["-j", "8"]));
        assert_eq!(out.code, 0, "{suite}: {}", out.stdout);
    }
}

/// `eval --overrides DIR` (and a suite variant's folder) layers the folder's
/// files: a prompt a later file gives again is said once at the start, and
/// `--strict` does not refuse it (layering may be meant).
#[test]
fn a_variant_whose_later_file_replaces_a_prompt_is_warned_about_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let runs = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "");
    let folder = dir.path().join("alternatives");
    std::fs::create_dir_all(&folder).unwrap();
    write(
        &folder,
        "a-plain.yaml",
        "prompts:\n  system.base: Be plain, {{assistant}}.\n",
    );
    write(
        &folder,
        "b-terse.yaml",
        "prompts:\n  system.base: Be terse, {{assistant}}.\n",
    );
    let out = run_command(
        eval_in(runs.path())
            .arg(&suite)
            .arg("--overrides")
            .arg(&folder)
            .args(["--strict", "--format", "ndjson"]),
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let said: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("replaces"))
        .collect();
    assert_eq!(said.len(), 1, "{}", out.stderr);
    assert!(
        said[0].starts_with("warning: variant `alternatives`: override `system.base` from `")
            && said[0].contains("b-terse.yaml` replaces the one from `"),
        "{}",
        said[0]
    );
}
