//! `promptlab eval` cannot give a green run from a regression, a missing
//! secret, a lost log or a typo'd prompt id (issue 11): preflight checks,
//! errors that are not failures, lost logs, honest JUnit, signals, and the
//! everyday controls (filters, ad-hoc variants, --list, gates, shards).

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{promptlab, run_command, write};

const OK: &str = "turns:\n  - calls: [{name: get_claim_section, args: {section: policy}}]\n    usage: {inputTokens: 100, outputTokens: 10, cacheReadTokens: 0}\n  - text: The excess is recorded in the policy.\n    usage: {inputTokens: 200, outputTokens: 20, cacheReadTokens: 0}\n";
const WRONG: &str = "turns:\n  - text: I could not find that.\n";
const BROKEN: &str = "turns:\n  - text: \"The excess is \"\n    calls: [{name: get_claim_section, args: {section: policy}}]\n    usage: {inputTokens: 70, outputTokens: 7, cacheReadTokens: 0}\n  - error: upstream unavailable\n";

/// A suite `t` over two claims, with `cases` (YAML list items) and `extra`
/// top-level lines; the scripts `ok.yaml`, `wrong.yaml`, `broken.yaml` beside it.
fn suite(dir: &Path, extra: &str, cases: &str) -> PathBuf {
    write(dir, "ok.yaml", OK);
    write(dir, "wrong.yaml", WRONG);
    write(dir, "broken.yaml", BROKEN);
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: t\nclaims:\n  ids: [CLM-HH-0001, CLM-MTR-0002]\ndefaults:\n  today: 2026-11-30\n  expect: {{answerContains: excess}}\n{extra}cases:\n{cases}"
        ),
    )
}

const ONE_CASE: &str = "  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n";
const TWO_CASES: &str = "  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n  - name: wrong\n    message: What is the excess?\n    script: wrong.yaml\n";

fn eval(runs: &Path) -> Command {
    let mut command = promptlab();
    command.env("PROMPTLAB_RUNS_DIR", runs).arg("eval");
    command
}

fn scripted(runs: &Path) -> Command {
    let mut command = eval(runs);
    command.args(["--provider", "script"]);
    command
}

fn log_count(runs: &Path) -> usize {
    promptlab::runs::store::run_log_paths(runs)
        .map(|p| p.len())
        .unwrap_or(0)
}

fn ndjson(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

#[test]
fn a_missing_key_stops_before_any_turn() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", ONE_CASE);
    let out = run_command(eval(&runs).arg(&suite));
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("GEMINI_API_KEY"), "{}", out.stderr);
    assert!(out.stderr.contains("--provider script"), "{}", out.stderr);
    assert_eq!(log_count(&runs), 0, "nothing is recorded");
    assert!(out.stdout.is_empty(), "no verdicts: {}", out.stdout);
}

#[test]
fn missing_folders_and_unwritable_reports_are_named_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", ONE_CASE);
    let cases: [(&[&str], &str); 4] = [
        (
            &["--report", "/no/such/dir"],
            "--report `/no/such/dir`: no such folder",
        ),
        (
            &["--junit", "/no/such/dir/j.xml"],
            "the folder `/no/such/dir` does not exist",
        ),
        (
            &["--markdown-summary", "/no/such/dir/s.md"],
            "--markdown-summary `/no/such/dir/s.md`",
        ),
        (
            &["--claims-dir", "/no/such/claims"],
            "the claim store `/no/such/claims` is not a folder: run where the claims/ folder is, or point --claims-dir (or PROMPTLAB_CLAIMS_DIR) at one",
        ),
    ];
    for (args, message) in cases {
        let out = run_command(scripted(&runs).arg(&suite).args(args));
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(message), "{args:?}: {}", out.stderr);
    }
    let replay = run_command(eval(&runs).arg(&suite).args([
        "--provider",
        "replay",
        "--replay",
        "/no/such/recordings",
    ]));
    assert_eq!(replay.code, 2);
    assert!(
        replay.stderr.contains("--replay `/no/such/recordings`"),
        "{}",
        replay.stderr
    );
    let zero = run_command(scripted(&runs).arg(&suite).args(["-j", "0"]));
    assert_eq!(zero.code, 2, "{}", zero.stderr);
    assert_eq!(log_count(&runs), 0);
}

#[test]
fn two_variants_of_one_prompt_version_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let typo =
        "variants:\n  - name: default\n  - name: edited\n    prompts: {system.bse: Be brief.}\n";
    let suite = suite(dir.path(), typo, ONE_CASE);
    let out = run_command(scripted(&runs).arg(&suite));
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("variant `edited` is the same prompt version and model as `default`")
            && out.stderr.contains("`system.bse`"),
        "{}",
        out.stderr
    );
    assert_eq!(log_count(&runs), 0);
}

#[test]
fn unusable_overrides_are_reported_everywhere_and_strict_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let variants = "variants:\n  - name: default\n  - name: edited\n    prompts: {system.base: Be brief., system.bse: typo}\n";
    let suite = suite(dir.path(), variants, ONE_CASE);
    let junit = dir.path().join("junit.xml");
    let out = run_command(
        scripted(&runs)
            .arg(&suite)
            .args(["--format", "ndjson", "--junit"])
            .arg(&junit),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("variant `edited`: override `system.bse` ignored"),
        "{}",
        out.stderr
    );
    let lines = ndjson(&out.stdout);
    let summary = lines.last().unwrap();
    assert_eq!(summary["kind"], "summary");
    let ignored = &summary["variants"][1]["ignoredOverrides"];
    assert!(
        ignored[0].as_str().unwrap().contains("system.bse"),
        "{ignored}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    assert!(document.descendants().any(|n| {
        n.has_tag_name("property")
            && n.attribute("name") == Some("ignored-override")
            && n.attribute("value")
                .is_some_and(|v| v.contains("system.bse"))
    }));

    let strict = run_command(scripted(&runs).arg(&suite).arg("--strict"));
    assert_eq!(strict.code, 2);
    assert!(
        strict.stderr.contains("override problems (--strict)"),
        "{}",
        strict.stderr
    );
}

#[test]
fn an_errored_turn_is_an_error_carrying_its_error_alone() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let cases = "  - name: broken\n    message: What is the excess?\n    script: broken.yaml\n";
    let suite = suite(dir.path(), "", cases);
    let junit = dir.path().join("junit.xml");
    let out = run_command(
        scripted(&runs)
            .arg(&suite)
            .args(["--format", "ndjson", "--junit"])
            .arg(&junit),
    );
    assert_eq!(out.code, 1);
    let turns: Vec<Value> = ndjson(&out.stdout)
        .into_iter()
        .filter(|l| l["kind"] == "turn")
        .collect();
    assert_eq!(turns.len(), 2);
    for turn in &turns {
        assert_eq!(turn["verdict"], "error");
        assert_eq!(
            turn["failures"],
            serde_json::json!(["the turn ended in an error: upstream unavailable"]),
            "expectations are not judged against a partial answer"
        );
        assert_eq!(
            turn["usage"]["inputTokens"], 70,
            "the completed call's tokens are kept"
        );
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let suite_node = document
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite_node.attribute("errors"), Some("2"), "{xml}");
    assert_eq!(suite_node.attribute("failures"), Some("0"), "{xml}");
    assert!(suite_node.attribute("timestamp").is_some());
    assert!(suite_node.attribute("time").is_some());
    assert_eq!(
        document
            .descendants()
            .filter(|n| n.has_tag_name("error"))
            .count(),
        2
    );
    let out_text: String = document
        .descendants()
        .filter(|n| n.has_tag_name("system-out"))
        .filter_map(|n| n.text())
        .collect();
    assert!(out_text.contains("run log: "), "{xml}");
    assert!(out_text.contains("answer: The excess is"), "{xml}");
}

#[test]
fn lost_run_logs_are_errors_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let suite = suite(dir.path(), "", ONE_CASE);
    // The names of the suite's stored prompts, from a first run...
    let first = dir.path().join("first");
    assert_eq!(run_command(scripted(&first).arg(&suite)).code, 0);
    let prompts = std::fs::read_dir(first.join("prompts")).unwrap();
    // ...then a folder under each in a fresh runs folder: every folder takes
    // files (so preflight passes), but no prompt can be stored, so no log
    // that would name one is kept.
    let runs = dir.path().join("runs");
    for prompt in prompts {
        std::fs::create_dir_all(runs.join("prompts").join(prompt.unwrap().file_name())).unwrap();
    }
    let out = run_command(scripted(&runs).arg(&suite));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("2 turns: 0 passed, 0 failed, 2 errored · 2 run logs lost"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("run log not written"), "{}", out.stdout);
    assert!(out.stderr.contains("default"), "{}", out.stderr);
}

#[test]
fn a_report_path_that_is_no_file_is_refused_before_any_turn_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", ONE_CASE);
    // A folder where the report file should be is refused before any turn.
    let folder = dir.path().join("junit.xml");
    std::fs::create_dir(&folder).unwrap();
    let out = run_command(scripted(&runs).arg(&suite).arg("--junit").arg(&folder));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("it is a folder"), "{}", out.stderr);
    // A device (here /dev/full, through a link of the test's own) is no
    // report file: refused before any turn too (issue 61), never written.
    let junit = dir.path().join("full.xml");
    std::os::unix::fs::symlink("/dev/full", &junit).unwrap();
    let out = run_command(scripted(&runs).arg(&suite).arg("--junit").arg(&junit));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("it is a device, not a regular file"),
        "{}",
        out.stderr
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn min_pass_rate_gates_on_each_variant() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", TWO_CASES);
    let code = |rate: Option<&str>| {
        let mut command = scripted(&runs);
        command.arg(&suite).arg("--quiet");
        if let Some(rate) = rate {
            command.args(["--min-pass-rate", rate]);
        }
        run_command(&mut command).code
    };
    assert_eq!(code(None), 1, "by default any failure fails");
    assert_eq!(code(Some("0.5")), 0);
    assert_eq!(code(Some("0.6")), 1);
    assert_eq!(code(Some("1.5")), 2);
}

#[test]
fn list_prints_the_plan_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "repeats: 2\n", TWO_CASES);
    let out = run_command(eval(&runs).arg(&suite).arg("--list"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("variant\tmodel\tclaim\tcase\tsample\n")
    );
    assert!(
        out.stdout
            .contains("default\tgemini-3.1-flash-lite · low\tCLM-MTR-0002\twrong\t2\n")
    );
    assert!(
        out.stdout.contains("8 turns planned; nothing was run"),
        "{}",
        out.stdout
    );
    assert_eq!(log_count(&runs), 0);
}

#[test]
fn filters_and_ad_hoc_override_variants_select_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", TWO_CASES);
    write(
        dir.path(),
        "brief.yaml",
        "prompts:\n  system.base: Be brief.\n",
    );
    let out = run_command(
        eval(&runs)
            .arg(&suite)
            .args([
                "--list",
                "--case",
                "exc*",
                "--claim",
                "CLM-HH-*",
                "--overrides",
            ])
            .arg(dir.path().join("brief.yaml")),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let rows: Vec<&str> = out
        .stdout
        .lines()
        .skip(1)
        .filter(|l| l.contains('\t'))
        .collect();
    assert_eq!(
        rows,
        [
            "default\tgemini-3.1-flash-lite · low\tCLM-HH-0001\texcess\t1",
            "brief\tgemini-3.1-flash-lite · low\tCLM-HH-0001\texcess\t1"
        ]
    );
    let only = run_command(
        eval(&runs)
            .arg(&suite)
            .args(["--list", "--variant", "brief", "--overrides"])
            .arg(dir.path().join("brief.yaml")),
    );
    assert!(only.stdout.contains("4 turns planned"), "{}", only.stdout);
    let unknown = run_command(
        eval(&runs)
            .arg(&suite)
            .args(["--list", "--variant", "nope"]),
    );
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .stderr
            .contains("has no such variant (it has: default)"),
        "{}",
        unknown.stderr
    );
    let misspelt = run_command(eval(&runs).arg(&suite).args(["--list", "--case", "zzz"]));
    assert_eq!(misspelt.code, 2);
    assert_eq!(
        misspelt.stderr.trim_end(),
        "error: --case `zzz`: suite `t` has no such case"
    );
    let nothing = run_command(eval(&runs).arg(&suite).args(["--list", "--case", "zzz*"]));
    assert_eq!(nothing.code, 2);
    assert!(
        nothing.stderr.contains("no turn of suite `t` matches"),
        "{}",
        nothing.stderr
    );
}

#[test]
fn failures_are_capped_and_quiet_keeps_only_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "repeats: 3\n", TWO_CASES);
    let markdown = dir.path().join("summary.md");
    let out = run_command(
        scripted(&runs)
            .arg(&suite)
            .args(["--quiet", "--show-failures", "2", "--markdown-summary"])
            .arg(&markdown),
    );
    assert_eq!(out.code, 1);
    assert!(out.stderr.is_empty(), "quiet: {}", out.stderr);
    assert_eq!(out.stdout.matches("\nfail ").count(), 2, "{}", out.stdout);
    assert!(out.stdout.contains("… and 4 more"), "{}", out.stdout);
    let md = std::fs::read_to_string(&markdown).unwrap();
    assert!(md.starts_with("## ❌ Eval `t`"), "{md}");
    assert!(
        md.contains("| default | `default` | gemini-3.1-flash-lite · low | 12 | 6 | 6 | 0 | 50.0%"),
        "{md}"
    );
    assert!(md.contains("### Failures (6)"), "{md}");
    // Each failure line says where its run log is.
    let failures: Vec<&str> = md.lines().filter(|l| l.starts_with("- **fail**")).collect();
    assert_eq!(failures.len(), 2, "{md}");
    for line in failures {
        let log = line
            .split_once(" (run log `")
            .and_then(|(_, rest)| rest.strip_suffix("`)"))
            .unwrap_or_else(|| panic!("no run log in {line}"));
        assert!(std::path::Path::new(log).is_file(), "{line}");
    }
}

#[test]
fn shard_auto_reads_the_ci_variables() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "repeats: 3\n", TWO_CASES);
    let out = run_command(
        scripted(&runs)
            .arg(&suite)
            .args(["--shard", "auto", "--min-pass-rate", "0"])
            .env("CI_NODE_INDEX", "2")
            .env("CI_NODE_TOTAL", "3"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("shard 2/3: 4 of 12 turns"),
        "{}",
        out.stdout
    );
    let none = run_command(scripted(&runs).arg(&suite).args(["--shard", "auto"]));
    assert_eq!(none.code, 2);
    assert!(
        none.stderr.contains("CI_NODE_INDEX/CI_NODE_TOTAL (GitLab)")
            && none.stderr.contains("CIRCLE_NODE_INDEX")
            && none.stderr.contains("BUILDKITE_PARALLEL_JOB")
            && none.stderr.contains("JOB_COMPLETION_INDEX"),
        "{}",
        none.stderr
    );
}

#[test]
fn a_huge_repeat_count_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    for extra in ["repeats: 1000000000\n", "repeats: 600000\n"] {
        let suite = suite(dir.path(), extra, TWO_CASES);
        let out = run_command(eval(&runs).arg(&suite).arg("--list"));
        assert_eq!(out.code, 2, "{extra}");
        assert!(out.stderr.contains("field `repeats`"), "{}", out.stderr);
    }
}

#[test]
fn suite_errors_point_at_the_right_field() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let blank = suite(dir.path(), "", "  - name: a\n    message: \"   \"\n");
    let out = run_command(eval(&runs).arg(&blank).arg("--list"));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("field `cases[0].message`"),
        "{}",
        out.stderr
    );
    let typo = suite(
        dir.path(),
        "",
        "  - name: a\n    message: hi\n    expect:\n      toolCalled: [{nme: get_schedule}]\n",
    );
    let out = run_command(eval(&runs).arg(&typo).arg("--list"));
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("field `cases[0].expect.toolCalled[0].nme`, line 11")
            && out
                .stderr
                .contains("unknown field `nme`, expected one of name, args"),
        "{}",
        out.stderr
    );
}

#[test]
fn resume_runs_again_a_turn_whose_log_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", ONE_CASE);
    assert_eq!(run_command(scripted(&runs).arg(&suite)).code, 0);
    let paths = promptlab::runs::store::run_log_paths(&runs).unwrap();
    assert_eq!(paths.len(), 2);
    // Corrupt a middle line of one log; its header and footer stay intact.
    let text = std::fs::read_to_string(&paths[0]).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"record\": \"event\", broken";
    std::fs::write(&paths[0], lines.join("\n") + "\n").unwrap();
    let out = run_command(scripted(&runs).arg(&suite).arg("--resume"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("resume: invalid run log"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("1 turns already done, 1 to run"),
        "{}",
        out.stderr
    );
    assert_eq!(log_count(&runs), 3);
}

#[test]
fn sigterm_keeps_finished_logs_and_lists_the_turns_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    support::slow_script(dir.path());
    let cases = "  - name: slow\n    message: What is the excess?\n    script: slow.yaml\n    expect: {answerContains: one}\n";
    let suite = suite(dir.path(), "repeats: 4\n", cases);
    let junit = dir.path().join("junit.xml");
    let mut child = scripted(&runs)
        .arg(&suite)
        .args(["-j", "1", "--junit"])
        .arg(&junit)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until one turn has finished, then stop the run.
    let mut progress = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = progress.next().unwrap().unwrap();
    assert!(first.starts_with("[1/8] "), "{first}");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("terminated with"), "{stdout}");
    let paths = promptlab::runs::store::run_log_paths(&runs).unwrap();
    assert!(
        paths
            .iter()
            .all(|p| p.extension().is_some_and(|e| e == "ndjson"))
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let skipped = document
        .descendants()
        .filter(|n| n.has_tag_name("skipped"))
        .count();
    assert!(
        skipped >= 1,
        "a testcase with no sample run is skipped: {xml}"
    );
    assert!(xml.contains("not run: cancelled"), "{xml}");
}

/// A log that cannot be read at all (an empty file under a log's name) is
/// some turn's, perhaps its newest: `--resume` names it, and `--report`
/// names it and cannot pass.
#[test]
fn an_unreadable_log_is_named_by_resume_and_fails_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", ONE_CASE);
    assert_eq!(run_command(scripted(&runs).arg(&suite).arg("-q")).code, 0);
    let folder = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.join(".").is_dir() && !path.ends_with("prompts") && !path.ends_with("evals")
        })
        .expect("a fingerprint folder");
    let name = "20261130T000000.000Z-00000000-0000-0000-0000-000000000000.ndjson";
    // Not the plan's: a log being written (empty until its header is), and
    // an empty log of another prompt version; neither stops a report.
    std::fs::write(folder.join(format!("{name}.partial")), "").unwrap();
    std::fs::create_dir(runs.join("0123456789ab")).unwrap();
    std::fs::write(runs.join("0123456789ab").join(name), "").unwrap();
    let report = run_command(eval(&runs).arg(&suite).arg("--report").arg(&runs).arg("-q"));
    assert_eq!(report.code, 0, "{}", report.stderr);
    let empty = folder.join(name);
    std::fs::write(&empty, "").unwrap();
    let resumed = run_command(scripted(&runs).arg(&suite).args(["-q", "--resume"]));
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    let named = format!("warning: resume: invalid run log `{}`", empty.display());
    assert!(resumed.stderr.contains(&named), "{}", resumed.stderr);
    assert!(
        resumed.stderr.contains("; not counted as done"),
        "{}",
        resumed.stderr
    );
    let report = run_command(eval(&runs).arg(&suite).arg("--report").arg(&runs).arg("-q"));
    assert_eq!(report.code, 1, "{}", report.stderr);
    let named = format!("error: --report: invalid run log `{}`", empty.display());
    assert!(report.stderr.contains(&named), "{}", report.stderr);
}

/// A bad `--overrides` file is named as the flag's, not as a field of the
/// suite (`variants[1].overrides`) it is not in.
#[test]
fn a_bad_overrides_file_is_named_as_the_flags() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite = suite(dir.path(), "", ONE_CASE);
    let missing = dir.path().join("missing.yaml");
    let broken = write(dir.path(), "broken.yaml", "prompts: [\n");
    for (file, said) in [
        (&missing, "failed to read override file"),
        (&broken, "invalid override file"),
    ] {
        let out = run_command(scripted(&runs).arg(&suite).arg("--overrides").arg(file));
        assert_eq!(out.code, 2, "{}", out.stderr);
        let expected = format!("error: --overrides: {said} `{}`", file.display());
        assert!(out.stderr.starts_with(&expected), "{}", out.stderr);
        assert!(!out.stderr.contains("variants["), "{}", out.stderr);
    }
}
