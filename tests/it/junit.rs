//! `eval --junit` as CI reads it: real reports of the binary, with passes,
//! failures, errors, skipped testcases and hostile text, are valid against
//! `junit-10.xsd` (from pytest's sdist, by `xmlschema`) and read back by
//! `junitparser` with the same counts, messages and output.
//! References: `.ci/install-references`; a missing one skips outside CI.

use crate::support;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::http_server::{Reply, Responder, TestServer};
use support::references::{junit_xsd, python, run_reference};
use support::{promptlab, run_command, write};

/// What `junit-read.py` read from each file, or `None` when the references
/// are not installed (outside CI).
fn read_as_ci(files: &[&Path]) -> Option<Result<Value, String>> {
    let python = python()?;
    let xsd = junit_xsd()?;
    let script = support::references::references_dir().join("references/junit-read.py");
    let mut args: Vec<&OsStr> = vec![script.as_os_str(), xsd.as_os_str()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    let said = run_reference(&python, &args, b"");
    Some(if said.ok {
        Ok(serde_json::from_str(&said.stdout).expect("junit-read.py prints JSON"))
    } else {
        Err(said.stderr)
    })
}

/// A scripted eval over two claims and two variants, repeated twice: one
/// case passes, one fails an expectation, one errors; names and answers
/// carry markup, CDATA ends and control characters (names are
/// restricted to letters, digits, `-`, `_` and `.` by the suite rules).
fn scripted_report(dir: &Path) -> PathBuf {
    write(
        dir,
        "hostile.yaml",
        "turns:\n  - text: \"The excess <b>is</b> & ]]> \\x01\\u009b31m <!-- recorded \\uFFFE.\"\n",
    );
    write(
        dir,
        "broken.yaml",
        "turns:\n  - text: Partial\n    error: the model is overloaded\n",
    );
    let suite = write(
        dir,
        "suite.yaml",
        "name: hostile\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\nrepeats: 2\nvariants:\n  - name: default\n  - name: terse\n    prompts: {system.base: Be brief.}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: hostile.yaml\n    expect: {answerContains: excess}\n  - name: missing\n    message: What is the excess?\n    script: hostile.yaml\n    expect: {answerContains: deductible}\n  - name: broken\n    message: Hello?\n    script: broken.yaml\n",
    );
    let junit = dir.join("scripted.xml");
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
            .args(["eval", "--provider", "script", "--quiet", "--junit"])
            .arg(&junit)
            .arg(&suite),
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    junit
}

/// One answer at $0.017 from the test server standing in for Gemini.
fn priced_answer() -> Responder {
    Box::new(|_| {
        let chunk = json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": "The excess is £350."}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "test"
        });
        Reply::stream(format!("data: {chunk}\r\n\r\n"))
    })
}

/// An eval stopped by `--max-cost` after its first turn: the second
/// claim's testcase never ran and is skipped.
fn budget_report(dir: &Path) -> PathBuf {
    let prices = write(
        dir,
        "prices.yaml",
        "currency: USD\nmodels:\n  priced-model:\n    source: the test\n    date: 2026-11-30\n    input: 1000\n    cachedInput: 100\n    output: 1000\n    thinking: 2000\n",
    );
    let suite = write(
        dir,
        "budget.yaml",
        "name: budget\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\ncases:\n  - name: excess\n    message: What is the excess?\n    expect: {answerContains: excess}\n",
    );
    let server = TestServer::start(vec![priced_answer(), priced_answer()]);
    let junit = dir.join("budget.xml");
    let out = run_command(
        promptlab()
            .env("GEMINI_API_KEY", "junit-test-key")
            .env("GEMINI_BASE_URL", &server.base_url)
            .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
            .arg("--prices")
            .arg(prices)
            .args(["eval", "-j", "1", "--quiet", "--model", "priced-model"])
            .args(["--max-cost", "0.01", "--junit"])
            .arg(&junit)
            .arg(&suite),
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    junit
}

fn cases(report: &Value) -> Vec<&Value> {
    report["suites"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|suite| suite["cases"].as_array().unwrap())
        .collect()
}

#[test]
fn real_reports_are_valid_against_junit_10_xsd_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let scripted = scripted_report(dir.path());
    let budget = budget_report(dir.path());
    let Some(read) = read_as_ci(&[&scripted, &budget]) else {
        return;
    };
    let read = read.unwrap_or_else(|error| panic!("not valid against junit-10.xsd: {error}"));

    let report = &read[0];
    // 2 variants × 2 claims × 3 cases; repeats fold into one testcase.
    assert_eq!(
        (&report["tests"], &report["failures"], &report["errors"]),
        (&json!(12), &json!(4), &json!(4)),
        "{report}"
    );
    let suite = &report["suites"][0];
    assert_eq!(suite["name"], "hostile / default");
    assert_eq!((&suite["tests"], &suite["skipped"]), (&json!(6), &json!(0)));
    let properties = suite["properties"].as_array().unwrap();
    for name in ["fingerprint", "model", "thinking-level"] {
        assert!(properties.iter().any(|p| p[0] == name), "{properties:?}");
    }
    let all = cases(report);
    let passed = all
        .iter()
        .find(|c| c["name"] == "CLM-HH-0001 · excess")
        .unwrap();
    assert_eq!(passed["results"], json!([]));
    let out = passed["systemOut"].as_str().unwrap();
    assert!(
        out.contains("answer: The excess <b>is</b> & ]]> 31m <!-- recorded ."),
        "control characters and non-characters dropped, the rest kept: {out:?}"
    );

    let failed = all
        .iter()
        .find(|c| c["name"] == "CLM-HH-0001 · missing")
        .unwrap();
    let failure = &failed["results"][0];
    assert_eq!(failure["kind"], "failure");
    let message = failure["message"].as_str().unwrap();
    assert!(
        message.starts_with("answer does not contain \"deductible\""),
        "the message names the first unmet expectation: {message}"
    );
    let text = failure["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("{message}\nrun log: ")),
        "the body leads with the expectation and the run log: {text}"
    );
    assert!(
        text.contains(
            "\n0 of 2 samples passed (pass rate 0%); 2 needed (threshold: 100% of samples)\n"
        ),
        "{text}"
    );
    assert_eq!(
        failed["classname"], "promptlab.hostile.default",
        "no file is named like the classname"
    );
    assert!(
        text.contains("sample 2 (fail):\n  - answer does not contain"),
        "{text}"
    );

    let errored = all
        .iter()
        .find(|c| c["name"] == "CLM-MTR-0002 · broken")
        .unwrap();
    assert_eq!(errored["results"][0]["kind"], "error");
    assert_eq!(
        errored["results"][0]["message"],
        "the turn ended in an error: the model is overloaded"
    );

    let budget = &read[1];
    let suite = &budget["suites"][0];
    assert_eq!(
        (&suite["tests"], &suite["skipped"]),
        (&json!(2), &json!(1)),
        "{budget}"
    );
    let skipped = cases(budget)
        .into_iter()
        .find(|c| c["name"] == "CLM-MTR-0002 · excess")
        .unwrap();
    assert_eq!(
        skipped["results"],
        json!([{"kind": "skipped", "message": "not run: budget reached", "text": null}])
    );
}

#[test]
fn the_schema_check_refuses_what_quick_junit_wrote() {
    // quick-junit 0.8 put `skipped` and `timestamp` on <testsuites>.
    let dir = tempfile::tempdir().unwrap();
    let old = write(
        dir.path(),
        "old.xml",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"t\" tests=\"0\" failures=\"0\" errors=\"0\" skipped=\"0\" timestamp=\"2026-12-01T00:00:00Z\"></testsuites>\n",
    );
    let Some(read) = read_as_ci(&[&old]) else {
        return;
    };
    let error = read.expect_err("junit-10.xsd refuses it");
    assert!(error.contains("skipped"), "{error}");
}

/// A case repeated more often than a testcase lists (#65): its counts are
/// all there, its first failure headlines it, and only the first
/// `MAX_SAMPLES_LISTED` samples are listed, the rest counted — what the
/// report needs, not every sample held until the case's fold.
#[test]
fn a_case_of_many_repeats_lists_its_first_samples_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "answer.yaml",
        "turns:\n  - text: I could not find it.\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: many\nclaims: {ids: [CLM-HH-0001]}\nrepeats: 25\ncases:\n  - name: excess\n    message: What is the excess?\n    script: answer.yaml\n    expect: {answerContains: excess}\n",
    );
    let junit = dir.path().join("many.xml");
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .args(["eval", "--provider", "script", "--quiet", "--junit"])
            .arg(&junit)
            .arg(&suite),
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    let xml = std::fs::read_to_string(&junit).unwrap();
    let listed = promptlab::eval::junit::MAX_SAMPLES_LISTED;
    assert_eq!(listed, 20);
    assert!(xml.contains("0 of 25 samples passed"), "{xml}");
    assert!(xml.contains("sample 20: fail\n"), "{xml}");
    assert!(!xml.contains("sample 21: fail\n"), "{xml}");
    assert!(
        xml.contains("… and 5 more samples (see their run logs)"),
        "{xml}"
    );
    assert!(xml.contains("sample 20 (fail):\n"), "{xml}");
    assert!(!xml.contains("sample 21 (fail):\n"), "{xml}");
    assert!(
        xml.contains("… and 5 more samples that did not pass (see their run logs)"),
        "{xml}"
    );
    if let Some(read) = read_as_ci(&[&junit]) {
        let read = read.unwrap_or_else(|error| panic!("not valid against junit-10.xsd: {error}"));
        assert_eq!(read[0]["failures"], json!(1), "{read}");
    }
}
