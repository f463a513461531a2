//! `promptlab compare` and `promptlab prompts diff` over run logs made with
//! the script provider. The Markdown and JSON reports are checked against
//! snapshot files (times, paths and ids redacted).

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::{promptlab, run_command, write};

const OK: &str = "turns:\n  - calls: [{name: get_claim_section, args: {section: policy}}]\n    usage: {inputTokens: 100, outputTokens: 10, cacheReadTokens: 50}\n  - text: The excess is recorded in the policy section.\n    usage: {inputTokens: 200, outputTokens: 20, cacheReadTokens: 150}\n";
const BAD: &str = "turns:\n  - text: I could not find that.\n    usage: {inputTokens: 150, outputTokens: 12, cacheReadTokens: 0}\n";
const CLAIMS: &str =
    "[CLM-HH-0001, CLM-MTR-0002, CLM-CPR-0003, CLM-PL-0005, CLM-EL-0006, CLM-TRV-0007]";

/// Runs a one-case suite over `claims` with `script`, recording into `runs`.
fn record(dir: &Path, runs: &Path, claims: &str, script: &str) {
    write(dir, "script.yaml", script);
    let suite = write(
        dir,
        "suite.yaml",
        &format!(
            "name: cmp\nclaims: {{ids: {claims}}}\ndefaults: {{today: 2026-11-30}}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: script.yaml\n    expect: {{answerContains: excess, toolCalled: [get_claim_section]}}\n"
        ),
    );
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs)
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script"]),
    );
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
}

fn compare_json(a: &Path, b: &Path) -> Value {
    let out = run_command(
        promptlab()
            .arg("compare")
            .arg(a)
            .arg(b)
            .args(["--format", "json"]),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

/// Replaces what changes from run to run: paths, ids, times, latencies.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                match key.as_str() {
                    "path" | "turnId" | "startedAt" | "latencyMs" | "label" | "source" => {
                        *inner = Value::String(format!("[{key}]"))
                    }
                    _ => redact(inner),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

fn markdown_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"\d+ ms", "[n] ms"),
        (r"/tmp/[^ `|)]+", "[dir]"),
        (r"`[^`]*\.tmp[^`]*`", "`[dir]`"),
        // Latency depends on the machine: its trend is not part of the snapshot.
        (r"(?m)^(\| latency .*\|)[^|]*\|$", "$1 [trend] |"),
    ]
}

/// The terminal report's tables (lines drawn with box characters) within
/// `columns`, with every turn label whole.
fn assert_fits(text: &str, columns: usize) {
    for line in text.lines().filter(|l| l.starts_with(['┌', '│', '╞', '└'])) {
        assert!(line.chars().count() <= columns, "{columns}: {line}\n{text}");
    }
    for claim in ["CLM-CPR-0003", "CLM-TRV-0007"] {
        assert!(
            text.contains(&format!("default · {claim} · excess #1")),
            "{text}"
        );
    }
}

/// The terminal report's redactions: paths, and latencies, whose digits
/// shift the columns: cells lose their padding and borders their length,
/// so that the snapshot pins what is shown, not how wide a latency was.
fn text_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"\d+ ms", "[n] ms"),
        (r"/tmp/[^ \n]+", "[dir]"),
        (r"(?m)^(latency \(median / p95\)).*$", "$1 [trend]"),
        (
            r"(?m)^(│ latency \(median / p95\) +┆[^┆]*┆[^┆]*┆).*$",
            "$1 [trend] │",
        ),
        (r"(?m) +(┆|│)", " $1"),
        (r"(?m)^[┌╞└][─═┬╪┴┐╡┘]+$", "[rule]"),
    ]
}

#[test]
fn identical_runs_compare_as_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, CLAIMS, OK);
    record(dir.path(), &b, CLAIMS, OK);
    let report = compare_json(&a, &b);
    assert_eq!(report["conclusion"], "no_change");
    assert_eq!(report["passToFail"], 0);
    assert_eq!(report["pValue"], 1.0);
    assert_eq!(report["pairs"].as_array().unwrap().len(), 6);
    assert!(report["onlyInA"].as_array().unwrap().is_empty());
    let text = run_command(promptlab().arg("compare").arg(&a).arg(&b));
    assert!(
        text.stdout
            .contains("No change: every paired turn has the same verdict, answer and tools"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("6 paired turns, none changed."));
}

#[test]
fn a_version_that_breaks_an_expectation_on_several_claims_is_worse() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, CLAIMS, OK);
    record(dir.path(), &b, CLAIMS, BAD);
    let mut report = compare_json(&a, &b);
    assert_eq!(report["conclusion"], "worse");
    assert_eq!(report["passToFail"], 6);
    assert!(
        (report["pValue"].as_f64().unwrap() - 0.03125).abs() < 1e-12,
        "2 × 0.5^6"
    );
    redact(&mut report);
    insta::assert_json_snapshot!("worse_json", report);

    let markdown = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--format", "markdown"]),
    );
    insta::with_settings!({filters => markdown_filters()}, {
        insta::assert_snapshot!("worse_markdown", markdown.stdout);
    });
    for columns in [80, 120] {
        let text = run_command(
            promptlab()
                .env("COLUMNS", columns.to_string())
                .arg("compare")
                .arg(&a)
                .arg(&b),
        );
        assert_eq!(text.code, 0, "{}", text.stderr);
        assert_fits(&text.stdout, columns);
        insta::with_settings!({filters => text_filters()}, {
            insta::assert_snapshot!(format!("worse_text_{columns}"), text.stdout);
        });
    }
    let failing = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .arg("--fail-if-worse"),
    );
    assert_eq!(failing.code, 1);
    let reverse = compare_json(&b, &a);
    assert_eq!(reverse["conclusion"], "better");
}

#[test]
fn unpaired_runs_are_listed_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, "[CLM-HH-0001, CLM-MTR-0002]", OK);
    record(dir.path(), &b, "[CLM-MTR-0002, CLM-CPR-0003]", OK);
    let report = compare_json(&a, &b);
    assert_eq!(report["pairs"].as_array().unwrap().len(), 1);
    assert_eq!(report["onlyInA"][0]["claim"], "CLM-HH-0001");
    assert_eq!(report["onlyInB"][0]["claim"], "CLM-CPR-0003");
    assert_eq!(report["conclusion"], "no_significant_change");
    let text = run_command(promptlab().arg("compare").arg(&a).arg(&b));
    assert!(
        text.stdout.contains(
            "Only in A (1 unpaired):\n  default · CLM-HH-0001 · excess #1 (done, verdict pass)"
        ),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("Only in B (1 unpaired):\n  default · CLM-CPR-0003 · excess #1"),
        "{}",
        text.stdout
    );
}

/// One scripted chat turn per claim, with the code defaults and with
/// `overrides/plain-spoken.yaml`, recorded into `runs`.
fn record_chat_turns(runs: &Path, claims: &[&str]) {
    for overrides in [None, Some("overrides/plain-spoken.yaml")] {
        for claim in claims {
            let mut command = promptlab();
            command.env("PROMPTLAB_RUNS_DIR", runs).args([
                "chat",
                "--claim-id",
                claim,
                "--provider",
                "script",
                "--script",
                "tests/data/scripts/excess.yaml",
            ]);
            if let Some(file) = overrides {
                command.args(["--overrides", file]);
            }
            assert_eq!(run_command(command.arg("What is the excess?")).code, 0);
        }
    }
}

#[test]
fn versions_are_named_by_fingerprint_or_override_file() {
    let runs = tempfile::tempdir().unwrap();
    record_chat_turns(runs.path(), &["CLM-HH-0001", "CLM-MTR-0002"]);
    let out = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", runs.path()).args([
        "compare",
        "default",
        "overrides/plain-spoken.yaml",
        "--format",
        "json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        report["pairs"].as_array().unwrap().len(),
        2,
        "chat turns pair by claim and message"
    );
    assert_eq!(report["pairs"][0]["case"], "“What is the excess?”");
    assert!(
        report["b"]["source"]
            .as_str()
            .unwrap()
            .starts_with("fingerprint 6ebc72c8dd76 (of overrides/plain-spoken.yaml)")
    );
    assert_eq!(
        report["a"]["passRate"],
        Value::Null,
        "chat runs carry no verdicts"
    );
    let unknown = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs.path())
            .args(["compare", "default", "nonsense"]),
    );
    assert_eq!(unknown.code, 2);
    assert!(unknown.stderr.contains(
        "`nonsense` is not a folder of run logs, an override file, an eval run (`ev-…`), `last`/`last~N` or a prompt fingerprint"
    ));
}

#[test]
fn prompts_diff_shows_which_blocks_changed() {
    let out = run_command(promptlab().args([
        "prompts",
        "diff",
        "default",
        "overrides/plain-spoken.yaml",
        "--claim-id",
        "CLM-HH-0001",
        "--capability",
        "summarise",
        "--today",
        "2026-11-30",
        "--json",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["a"]["fingerprint"], "default");
    assert_eq!(report["b"]["fingerprint"], "6ebc72c8dd76");
    let changed: Vec<&str> = report["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["changed"] == true)
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["system.base", "capability.summarise"]);
    let base_diff = report["blocks"][0]["diff"].as_str().unwrap();
    assert!(
        base_diff.contains("-You are Clara, the claims assistant built into Harbour Claims."),
        "{base_diff}"
    );
    assert!(
        base_diff.contains("+You are Clara, the claims assistant in Harbour Claims."),
        "{base_diff}"
    );
    let text = run_command(promptlab().args([
        "prompts",
        "diff",
        "default",
        "overrides/plain-spoken.yaml",
        "--claim-id",
        "CLM-HH-0001",
    ]));
    assert!(text.stdout.contains("changed: system.base\nunchanged: system.safety, system.locale_uk, claim.brief, capability.claim_qa"), "{}", text.stdout);
}

/// Runs a two-variant suite (`default` and `terse`) with `script`, recording into `runs`.
fn record_two_variants(dir: &Path, runs: &Path, script: &str) {
    write(dir, "script2.yaml", script);
    let suite = write(
        dir,
        "suite2.yaml",
        "name: cmp2\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\nvariants:\n  - name: default\n  - name: terse\n    prompts: {system.base: Answer in one short sentence.}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: script2.yaml\n    expect: {answerContains: excess}\n",
    );
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs)
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script"]),
    );
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
}

#[test]
fn folders_of_several_variants_compare_variant_with_variant() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record_two_variants(dir.path(), &a, OK);
    record_two_variants(dir.path(), &b, OK);
    let report = compare_json(&a, &b);
    assert_eq!(report["a"]["runs"], 4, "no variant collapses into another");
    assert_eq!(report["b"]["runs"], 4);
    let pairs = report["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 4);
    for pair in pairs {
        assert_eq!(pair["a"]["variant"], pair["b"]["variant"], "{pair}");
        assert_eq!(pair["a"]["fingerprint"], pair["b"]["fingerprint"]);
    }
    let versions: Vec<&str> = report["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["a"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["default", "terse"]);

    let one = run_command(promptlab().arg("compare").arg(&a).arg(&b).args([
        "--variant",
        "terse",
        "--format",
        "json",
    ]));
    assert_eq!(one.code, 0, "{}", one.stderr);
    let one: Value = serde_json::from_str(&one.stdout).unwrap();
    assert_eq!(one["pairs"].as_array().unwrap().len(), 2);
    assert_eq!(one["a"]["notSelected"].as_array().unwrap().len(), 2);
}

#[test]
fn variants_with_no_name_in_common_are_refused_not_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record_two_variants(dir.path(), &a, OK);
    record(dir.path(), &b, "[CLM-HH-0001]", OK);
    // B's suite has one variant, `default`: it pairs with A's `default`, and
    // A's `terse` is named as having no partner.
    let report = compare_json(&a, &b);
    assert_eq!(report["pairs"].as_array().unwrap().len(), 1);
    assert_eq!(report["pairs"][0]["version"], "default");
    assert_eq!(report["onlyInA"].as_array().unwrap().len(), 3);
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("variant `terse` is only in A (2 runs"),
        "{}",
        report["warnings"]
    );
    let mixed = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--variant", "terse"]),
    );
    assert_eq!(mixed.code, 2, "{}", mixed.stdout);
    assert!(mixed.stderr.contains("no run logs"), "{}", mixed.stderr);
}

#[test]
fn a_small_regression_is_caught_by_fail_on_regression() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    let five = "[CLM-HH-0001, CLM-MTR-0002, CLM-CPR-0003, CLM-PL-0005, CLM-EL-0006]";
    record(dir.path(), &a, CLAIMS, OK);
    record(dir.path(), &b, five, BAD);
    record(dir.path(), &b, "[CLM-TRV-0007]", OK);
    let report = compare_json(&a, &b);
    assert_eq!(report["passToFail"], 5);
    assert_eq!(report["conclusion"], "no_significant_change");
    assert_eq!(report["power"]["discordantNeeded"], 6);
    assert_eq!(report["power"]["moreRegressionsNeeded"], 1);

    let worse = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .arg("--fail-if-worse"),
    );
    assert_eq!(worse.code, 0, "five of six is not significant");
    assert!(
        worse
            .stdout
            .contains("too few discordant pairs for McNemar's test: 5")
            && worse.stdout.contains("--fail-if-worse cannot fire"),
        "{}",
        worse.stdout
    );
    assert!(
        worse
            .stdout
            .contains("- B: answer does not contain \"excess\""),
        "every pass→fail row shows its failures:\n{}",
        worse.stdout
    );
    let gated = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .arg("--fail-on-regression"),
    );
    assert_eq!(gated.code, 1, "{}", gated.stdout);
    assert!(
        gated
            .stdout
            .contains("gate failed: 5 paired turns went from pass to fail (0 allowed)")
    );
    let allowed = |n: &str| {
        run_command(
            promptlab()
                .arg("compare")
                .arg(&a)
                .arg(&b)
                .args(["--max-regressions", n]),
        )
        .code
    };
    assert_eq!(allowed("5"), 0);
    assert_eq!(allowed("4"), 1);
}

#[test]
fn superseded_and_unreadable_runs_are_counted_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, "[CLM-HH-0001]", OK);
    record(dir.path(), &b, "[CLM-HH-0001]", OK);
    record(dir.path(), &b, "[CLM-HH-0001]", BAD);
    let broken = b.join("default").join("broken.ndjson");
    std::fs::write(&broken, "{not json\n").unwrap();
    let report = compare_json(&a, &b);
    assert_eq!(report["b"]["runs"], 1);
    assert_eq!(report["passToFail"], 1, "the newer run counts");
    let superseded = report["b"]["superseded"].as_array().unwrap();
    assert_eq!(superseded.len(), 1);
    assert_eq!(superseded[0]["run"]["verdict"]["outcome"], "pass");
    let unreadable = report["b"]["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1);
    assert!(
        unreadable[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("broken.ndjson")
    );
    let text = run_command(promptlab().arg("compare").arg(&a).arg(&b));
    assert!(
        text.stdout
            .contains("B: 1 runs compared, 1 superseded by a newer run of the same turn or variant, 1 unreadable"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("broken.ndjson"), "{}", text.stdout);
}

#[test]
fn errored_turns_and_missing_turns_fail_a_gate() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, "[CLM-HH-0001, CLM-MTR-0002]", OK);
    record(
        dir.path(),
        &b,
        "[CLM-HH-0001]",
        "turns:\n  - error: upstream unavailable\n",
    );
    let report = compare_json(&a, &b);
    assert_eq!(report["pairs"][0]["change"], "errored");
    assert_eq!(report["passToFail"], 0, "an error is not a regression");
    let gated = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .arg("--fail-on-regression"),
    );
    assert_eq!(gated.code, 1);
    assert!(
        gated.stdout.contains("1 paired turn ended in an error"),
        "{}",
        gated.stdout
    );
    assert!(
        gated.stdout.contains("1 run of A has no partner in B"),
        "{}",
        gated.stdout
    );
}

#[test]
fn chat_turns_get_no_mcnemar_line() {
    let runs = tempfile::tempdir().unwrap();
    record_chat_turns(runs.path(), &["CLM-HH-0001"]);
    let out = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", runs.path()).args([
        "compare",
        "default",
        "overrides/plain-spoken.yaml",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("McNemar"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("compared on answers, tools, tokens and latency"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("made by the script provider"),
        "{}",
        out.stdout
    );
    let gated = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", runs.path()).args([
        "compare",
        "default",
        "overrides/plain-spoken.yaml",
        "--fail-on-regression",
    ]));
    assert_eq!(gated.code, 1, "a gate with no verdicts cannot judge");
}

#[test]
fn votes_from_serve_are_shown_beside_verdicts() {
    use promptlab::runs::feedback::{FeedbackRecord, Vote, append_feedback};
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, "[CLM-HH-0001]", OK);
    record(dir.path(), &b, "[CLM-HH-0001]", OK);
    let log = promptlab::runs::store::run_log_paths(&b).unwrap().remove(0);
    let vote = FeedbackRecord {
        turn_id: "t".into(),
        vote: Vote::Down,
        comment: None,
        at: chrono::Utc::now(),
    };
    append_feedback(&log, &vote).unwrap();
    let report = compare_json(&a, &b);
    assert_eq!(
        report["pairs"][0]["b"]["votes"],
        serde_json::json!({"up": 0, "down": 1})
    );
    let text = run_command(promptlab().arg("compare").arg(&a).arg(&b).arg("--all"));
    assert!(
        text.stdout.contains("pass (same) · votes A +0 −0, B +0 −1"),
        "{}",
        text.stdout
    );
}

#[test]
fn an_all_errored_side_cannot_be_judged_on_tokens_or_latency() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, "[CLM-HH-0001, CLM-MTR-0002]", OK);
    record(
        dir.path(),
        &b,
        "[CLM-HH-0001, CLM-MTR-0002]",
        "turns:\n  - error: upstream unavailable\n    usage: {inputTokens: 5, outputTokens: 1}\n",
    );
    let report = compare_json(&a, &b);
    assert_eq!(report["b"]["erroredRuns"], 2);
    assert_eq!(report["b"]["inputTokens"]["median"], Value::Null);
    assert_eq!(report["b"]["latencyMs"]["median"], Value::Null);
    let table = run_command(
        promptlab()
            .env("COLUMNS", "200")
            .arg("compare")
            .arg(&a)
            .arg(&b),
    );
    assert!(!table.stdout.contains("▼ better"), "{}", table.stdout);
    let rows: Vec<&str> = table
        .stdout
        .lines()
        .filter(|line| line.contains("tokens (median") || line.contains("latency (median"))
        .collect();
    assert_eq!(rows.len(), 3, "{}", table.stdout);
    for row in rows {
        assert!(
            row.contains("cannot be judged: every run of B errored"),
            "{row}"
        );
    }
}

/// A `.partial` log is no verdict, even one holding a footer (a group
/// commit cut short by a kill leaves those): `compare` and the report count
/// it as a turn that never finished, as `runs list` shows it.
#[test]
fn a_partial_log_with_a_footer_is_not_counted_as_passed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(dir.path(), &a, CLAIMS, OK);
    record(dir.path(), &b, CLAIMS, OK);
    // Two of B's six turns as a kill mid-commit leaves them: whole, footer
    // and all, but still named `.partial`.
    for log in support::run_logs_under(&b).iter().take(2) {
        let partial = format!("{}.partial", log.display());
        std::fs::rename(log, &partial).unwrap();
        let read = promptlab::runs::read_run_log(Path::new(&partial)).unwrap();
        assert!(read.footer.is_none(), "a .partial's footer is no footer");
        assert!(read.view().verdict().is_none());
        assert!(read.view().numbers(None).errored);
    }
    let report = compare_json(&a, &b);
    assert_eq!(report["a"]["passed"], 6);
    assert_eq!(report["b"]["passed"], 4, "{}", report["b"]);
    assert_eq!(report["b"]["judged"], 4);
    assert_eq!(report["b"]["erroredRuns"], 2);

    let html = dir.path().join("report.html");
    let out = run_command(promptlab().arg("report").arg(&b).arg("-o").arg(&html));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("\"passed\":4"),
        "the report's numbers count 4 passed"
    );
    assert!(page.contains("the run log is partial: the turn never finished"));
}

/// Chat turns of one prompt version recorded under two models are two
/// versions (a model change never passes for a prompt change): a side with
/// both cannot be paired with a side with one, and the refusal points to
/// `--model`/`--provider`, which choose one model so that they pair.
#[test]
fn turns_under_two_models_are_chosen_by_model_or_provider() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (runs, model) in [
        (a.path(), "model-one"),
        (a.path(), "model-two"),
        (b.path(), "model-one"),
    ] {
        let mut command = promptlab();
        command.env("PROMPTLAB_RUNS_DIR", runs).args([
            "chat",
            "--claim-id",
            "CLM-HH-0001",
            "--provider",
            "script",
            "--script",
            "tests/data/scripts/excess.yaml",
            "--model",
            model,
        ]);
        assert_eq!(run_command(command.arg("What is the excess?")).code, 0);
    }
    let compare = |extra: &[&str]| {
        run_command(
            promptlab()
                .arg("compare")
                .arg(a.path())
                .arg(b.path())
                .args(["--format", "json"])
                .args(extra),
        )
    };
    let refused = compare(&[]);
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("or one model with --model NAME or --provider NAME"),
        "{}",
        refused.stderr
    );
    let one = compare(&["--model", "model-one"]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    let report: Value = serde_json::from_str(&one.stdout).unwrap();
    let pairs = report["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{report}");
    assert_eq!(
        pairs[0]["version"], "default",
        "one model: the plain version"
    );
    assert!(
        pairs[0]["a"]["model"]
            .as_str()
            .unwrap()
            .starts_with("model-one")
    );
    let none = compare(&["--provider", "gemini"]);
    assert_eq!(none.code, 2, "{}", none.stdout);
    assert!(
        none.stderr.contains("with --provider gemini"),
        "{}",
        none.stderr
    );
}
