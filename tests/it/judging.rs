//! Rubric expectations and their judge (docs/judging.md), through the
//! binary: the judge's request over real HTTP (a local test server), strict
//! replies, retries, the cache, thresholds over repeats, `--rescore`, and
//! pairwise judging in `compare`.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::http_server::{Reply, Responder, TestServer, fixture};
use support::reports::answer_script;
use support::{Run, promptlab, run_command, write};

const KEY: &str = "judge-test-key-0123456789";
const CRITERION: &str = "does not promise payment before coverage is confirmed";

/// A Gemini stream whose text is `text`, in two chunks.
fn gemini_reply(text: &str) -> Reply {
    let (head, tail) = text.split_at(text.len() / 2);
    let chunk = |part: &str, last: bool| {
        let mut candidate = json!({"content": {"role": "model", "parts": [{"text": part}]}});
        if last {
            candidate["finishReason"] = json!("STOP");
        }
        json!({
            "candidates": [candidate],
            "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 30, "totalTokenCount": 930},
            "modelVersion": "judge-model-001"
        })
    };
    Reply::stream(format!(
        "data: {}\r\n\r\ndata: {}\r\n\r\n",
        chunk(head, false),
        chunk(tail, true)
    ))
}

fn verdict(pass: bool, score: f64) -> Responder {
    let text =
        json!({"pass": pass, "score": score, "reason": format!("judged {pass}")}).to_string();
    Box::new(move |_| gemini_reply(&text))
}

/// A one-case suite with a rubric, over one claim, `repeats` samples.
fn rubric_suite(dir: &Path, extra: &str, repeats: u32) -> PathBuf {
    write(
        dir,
        "answer.yaml",
        &answer_script("Coverage is not confirmed yet, so I cannot say it will be paid."),
    );
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: judged\nclaims: {{ids: [CLM-HH-0001]}}\nrepeats: {repeats}\ndefaults: {{today: 2026-11-30}}\n{extra}\
             cases:\n  - name: payment\n    message: Will this claim be paid?\n    script: answer.yaml\n    expect:\n      rubric: {CRITERION}\n"
        ),
    )
}

fn eval(dir: &Path, suite: &Path, server: Option<&TestServer>, args: &[&str]) -> Run {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .args(["eval"])
        .arg(suite)
        .args(["--provider", "script", "--cache-dir"])
        .arg(dir.join("cache"))
        .args(args);
    if let Some(server) = server {
        command
            .env("GEMINI_API_KEY", KEY)
            .env("GEMINI_BASE_URL", &server.base_url);
    }
    run_command(&mut command)
}

fn ndjson(stdout: &str, kind: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["kind"] == kind)
        .collect()
}

fn run_logs(dir: &Path) -> Vec<PathBuf> {
    let mut logs = Vec::new();
    for entry in support::files_under(&dir.join("runs")) {
        if entry.extension().is_some_and(|e| e == "ndjson") {
            logs.push(entry);
        }
    }
    logs.sort();
    logs
}

/// `eval SUITE --rescore` with the runs and cache of `dir` and no chat
/// provider at all: a re-score never calls the chat model.
fn rescore(dir: &Path, suite: &Path, extra: &[&str]) -> Run {
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.join("runs"))
        .arg("eval")
        .arg(suite)
        .args(["--rescore", "--cache-dir"])
        .arg(dir.join("cache"))
        .args(extra);
    run_command(&mut command)
}

fn footer(log: &Path) -> Value {
    let text = std::fs::read_to_string(log).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn the_judge_is_asked_for_json_in_a_schema_and_its_call_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let server = TestServer::start(vec![verdict(true, 0.9)]);
    let out = eval(dir.path(), &suite, Some(&server), &["--format", "ndjson"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one criterion, one judge call");
    assert!(
        requests[0].target.contains("gemini-3.1-pro-preview"),
        "{}",
        requests[0].target
    );
    let body = requests[0].json();
    let config = &body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(
        config["responseSchema"]["required"],
        json!(["pass", "score", "reason"])
    );
    assert_eq!(config["thinkingConfig"]["thinkingLevel"], "medium");
    assert!(
        body.get("tools").is_none(),
        "no tools beside a JSON reply: {body}"
    );
    let question = body["contents"][0]["parts"][0]["text"].as_str().unwrap();
    for needle in [
        CRITERION,
        "Will this claim be paid?",
        "Coverage is not confirmed yet",
        "<answer>",
    ] {
        assert!(
            question.contains(needle),
            "{needle} missing from {question}"
        );
    }
    let system = body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(system.contains("You are grading one answer"), "{system}");

    let turn = &ndjson(&out.stdout, "turn")[0];
    assert_eq!(turn["verdict"], "pass");
    let call = &turn["rubric"][0]["call"];
    assert_eq!(call["model"], "gemini-3.1-pro-preview");
    assert_eq!(
        call["usage"]["inputTokens"], 900,
        "judge tokens recorded: {call}"
    );
    assert_eq!(call["cached"], false);
    // The chat's tokens stay the chat's: the judge's are apart.
    assert_eq!(turn["usage"]["inputTokens"], 120);
    let summary = &ndjson(&out.stdout, "summary")[0]["variants"][0];
    assert_eq!(summary["judgeUsage"]["inputTokens"], 900);
    assert_eq!(summary["inputTokens"], 120);
    let recorded = footer(&run_logs(dir.path())[0]);
    assert_eq!(recorded["verdict"]["rubric"][0]["score"], 0.9);
    assert_eq!(
        recorded["verdict"]["rubric"][0]["call"]["promptSha256"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    let everything = format!(
        "{}{}{}",
        out.stdout,
        out.stderr,
        std::fs::read_to_string(&run_logs(dir.path())[0]).unwrap()
    );
    assert!(
        !everything.contains(KEY),
        "the key never appears in any output"
    );
}

#[test]
fn a_judge_that_misbehaves_is_an_error_never_a_pass() {
    for (reply, expected) in [
        ("Sure! The answer passes.", "judge: the reply is not JSON"),
        (
            r#"{"score": 1, "reason": "fine"}"#,
            "judge: the reply has no `pass`",
        ),
        (
            r#"{"pass": "yes", "score": 1}"#,
            "judge: `pass` must be true or false",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let suite = rubric_suite(dir.path(), "", 1);
        let text = reply.to_string();
        let server = TestServer::start(vec![Box::new(move |_| gemini_reply(&text))]);
        let out = eval(dir.path(), &suite, Some(&server), &["--format", "ndjson"]);
        assert_eq!(out.code, 1, "{reply}: {}", out.stderr);
        let turn = &ndjson(&out.stdout, "turn")[0];
        assert_eq!(turn["verdict"], "error", "{reply}");
        let failures = turn["failures"].to_string();
        assert!(failures.contains(expected), "{reply}: {failures}");
        // A malformed reply is not cached: the next run asks again.
        assert!(
            support::files_under(&dir.path().join("cache")).is_empty(),
            "{reply}"
        );
    }
}

#[test]
fn a_judge_reply_cut_at_its_limit_is_an_error_that_keeps_its_usage() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let cut = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"{\\\"pass\\\": tr\"}]},\"finishReason\":\"MAX_TOKENS\"}],\"usageMetadata\":{\"promptTokenCount\":900,\"candidatesTokenCount\":2048}}\r\n\r\n";
    let server = TestServer::start(vec![Box::new(move |_| Reply::stream(cut))]);
    let out = eval(dir.path(), &suite, Some(&server), &["--format", "ndjson"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let turn = &ndjson(&out.stdout, "turn")[0];
    assert_eq!(turn["verdict"], "error");
    let call = &turn["rubric"][0]["call"];
    assert_eq!(call["usage"]["inputTokens"], 900, "{turn}");
    assert_eq!(call["usage"]["outputTokens"], 2048, "{turn}");
    assert!(
        call["costUsd"].as_f64().is_some_and(|usd| usd > 0.0),
        "billed: {turn}"
    );
}

#[test]
fn a_429_on_the_judge_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let quota = String::from_utf8(fixture("google-429-retry-info.json"))
        .unwrap()
        .replace("34.4s", "0.05s");
    let server = TestServer::start(vec![
        Box::new(move |_| Reply::status(429, quota.clone())),
        verdict(true, 1.0),
    ]);
    let out = eval(dir.path(), &suite, Some(&server), &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn an_unchanged_answer_is_never_judged_twice() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    // One good reply; any further request gets a 500.
    let server = TestServer::start(vec![verdict(true, 1.0)]);
    let first = eval(dir.path(), &suite, Some(&server), &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let second = eval(dir.path(), &suite, Some(&server), &["--format", "ndjson"]);
    assert_eq!(second.code, 0, "{}\n{}", second.stdout, second.stderr);
    assert_eq!(
        server.requests().len(),
        1,
        "the second run made no judge call"
    );
    assert_eq!(
        ndjson(&second.stdout, "turn")[0]["rubric"][0]["call"]["cached"],
        true
    );
    // Without the cache the judge is asked again (and this time fails).
    let third = eval(dir.path(), &suite, Some(&server), &["--no-judge-cache"]);
    assert!(server.requests().len() > 1, "asked again");
    assert_eq!(third.code, 1, "{}", third.stdout);
}

#[test]
fn repeats_fold_into_one_verdict_by_the_case_threshold() {
    let run_with = |threshold: &str, replies: Vec<Responder>| {
        let dir = tempfile::tempdir().unwrap();
        let suite = rubric_suite(
            dir.path(),
            &format!("defaults:\n  today: 2026-11-30\n  {threshold}\n")
                .replace("defaults: {today: 2026-11-30}\n", ""),
            3,
        );
        // The suite above already has a `defaults:` line: rewrite it.
        let text = std::fs::read_to_string(&suite).unwrap().replacen(
            "defaults: {today: 2026-11-30}\n",
            "",
            1,
        );
        std::fs::write(&suite, text).unwrap();
        let server = TestServer::start(replies);
        let out = eval(
            dir.path(),
            &suite,
            Some(&server),
            &["--format", "ndjson", "-j", "1", "--no-judge-cache"],
        );
        (out, dir)
    };
    // Two of three samples pass.
    let two_of_three = || vec![verdict(true, 1.0), verdict(false, 0.0), verdict(true, 1.0)];
    let (met, _dir) = run_with("passThreshold: 0.6", two_of_three());
    assert_eq!(met.code, 0, "{}\n{}", met.stdout, met.stderr);
    let case = &ndjson(&met.stdout, "case")[0];
    assert_eq!(
        (
            case["passed"].clone(),
            case["required"].clone(),
            case["verdict"].clone()
        ),
        (json!(2), json!(2), json!("pass"))
    );
    let variant = &ndjson(&met.stdout, "summary")[0]["variants"][0];
    assert_eq!(variant["casesMet"], 1);
    assert_eq!(variant["passAtK"], 1.0);
    assert_eq!(variant["passAllK"], 0.0);

    let (missed, _dir) = run_with("minPasses: 3", two_of_three());
    assert_eq!(missed.code, 1);
    let case = &ndjson(&missed.stdout, "case")[0];
    assert_eq!(
        (case["required"].clone(), case["verdict"].clone()),
        (json!(3), json!("fail"))
    );

    // An error that could have made up the difference: the threshold cannot be judged.
    let malformed: Responder = Box::new(|_| gemini_reply("not json"));
    let (unjudged, _dir) = run_with(
        "minPasses: 3",
        vec![verdict(true, 1.0), verdict(true, 1.0), malformed],
    );
    assert_eq!(unjudged.code, 1);
    assert_eq!(ndjson(&unjudged.stdout, "case")[0]["verdict"], "error");
}

#[test]
fn a_threshold_on_the_score_and_the_pretty_summary() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let text = std::fs::read_to_string(&suite)
        .unwrap()
        .replace("      rubric:", "      rubricThreshold: 0.8\n      rubric:");
    std::fs::write(&suite, text).unwrap();
    let server = TestServer::start(vec![verdict(true, 0.5)]);
    let out = eval(dir.path(), &suite, Some(&server), &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("score 0.50 is below the threshold 0.80"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("judge: 1 verdict (1 asked, 0 from the cache), judge tokens 900/30"),
        "{}",
        out.stdout
    );
}

fn judge_script(dir: &Path, rubric: &str) -> PathBuf {
    write(dir, "judge.yaml", rubric)
}

const PASS_ALL: &str = "rubric:\n  - reply: {pass: true, score: 1, reason: fine}\n";

#[test]
fn rescore_judges_recorded_turns_again_without_the_chat_model() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 2);
    let script = judge_script(dir.path(), PASS_ALL);
    let scripted = [
        "--judge-provider",
        "script",
        "--judge-script",
        script.to_str().unwrap(),
    ];
    let first = eval(dir.path(), &suite, None, &scripted);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let logs = run_logs(dir.path());
    let before: Vec<String> = logs
        .iter()
        .map(|l| std::fs::read_to_string(l).unwrap())
        .collect();

    // The rubric changes; the judge fails the new criterion.
    let text = std::fs::read_to_string(&suite)
        .unwrap()
        .replace(CRITERION, "quotes the policy number");
    std::fs::write(&suite, text).unwrap();
    let strict = judge_script(
        dir.path(),
        "rubric:\n  - criterion: policy number\n    reply: {pass: false, score: 0, reason: no policy number}\n",
    );
    let scripted = [
        "--judge-provider",
        "script",
        "--judge-script",
        strict.to_str().unwrap(),
    ];
    let rescored = rescore(dir.path(), &suite, &scripted);
    assert_eq!(rescored.code, 1, "{}\n{}", rescored.stdout, rescored.stderr);
    assert!(
        rescored
            .stdout
            .contains("rubric \"quotes the policy number\" failed (score 0.00): no policy number"),
        "{}",
        rescored.stdout
    );
    assert!(
        rescored
            .stderr
            .contains("rescore: 2 of 2 selected turns recorded"),
        "{}",
        rescored.stderr
    );
    let after: Vec<String> = logs
        .iter()
        .map(|l| std::fs::read_to_string(l).unwrap())
        .collect();
    assert_eq!(before, after, "the recorded logs are never altered");
    // Its NDJSON has a `turn` record per re-scored turn, as --report's has.
    let mut as_ndjson = scripted.to_vec();
    as_ndjson.extend(["--format", "ndjson"]);
    let records = rescore(dir.path(), &suite, &as_ndjson);
    let turns = ndjson(&records.stdout, "turn");
    assert_eq!(turns.len(), 2, "{}", records.stdout);
    assert!(
        turns[0]["failures"]
            .to_string()
            .contains("no policy number")
    );
    let summary = &ndjson(&records.stdout, "summary")[0];
    assert_eq!(summary["runKind"], "rescore", "{summary}");
    assert_eq!(summary["fromRuns"][0]["turns"], 2, "{summary}");
    assert_ne!(
        summary["evalRun"], turns[0]["evalRun"],
        "a re-score is a run of its own"
    );
    let sidecars: Vec<PathBuf> = support::files_under(&dir.path().join("runs"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".verdict.json"))
        .collect();
    assert_eq!(sidecars.len(), 2);

    // --report and compare read the re-score.
    let mut command = promptlab();
    command
        .arg("eval")
        .arg(&suite)
        .arg("--report")
        .arg(dir.path().join("runs"))
        .args(["--format", "ndjson"]);
    let merged = run_command(&mut command);
    assert_eq!(merged.code, 1, "{}", merged.stderr);
    assert!(
        ndjson(&merged.stdout, "turn")[0]["failures"]
            .to_string()
            .contains("no policy number")
    );
    let runs = dir.path().join("runs");
    let mut command = promptlab();
    command.args([
        "compare",
        &format!("{}@default", runs.display()),
        &format!("{}@default", runs.display()),
        "--format",
        "json",
    ]);
    let compared = run_command(&mut command);
    let report: Value =
        serde_json::from_str(&compared.stdout).unwrap_or_else(|_| panic!("{}", compared.stderr));
    assert_eq!(report["pairs"][0]["a"]["verdict"]["outcome"], "fail");

    // A re-score that cannot be read is an error naming it, not the older verdict.
    std::fs::write(&sidecars[0], "{ half a re-score").unwrap();
    let mut command = promptlab();
    command
        .arg("eval")
        .arg(&suite)
        .arg("--report")
        .arg(dir.path().join("runs"));
    let merged = run_command(&mut command);
    assert_eq!(merged.code, 1);
    assert!(
        merged.stdout.contains("cannot be read") && merged.stdout.contains(".verdict.json"),
        "{}",
        merged.stdout
    );
}

#[test]
fn rescore_says_which_turns_it_cannot_rescore() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let script = judge_script(dir.path(), PASS_ALL);
    let scripted = [
        "--judge-provider",
        "script",
        "--judge-script",
        script.to_str().unwrap(),
    ];
    assert_eq!(eval(dir.path(), &suite, None, &scripted).code, 0);
    // The default variant now has an override: a new prompt version.
    write(
        dir.path(),
        "edit.yaml",
        "prompts:\n  system.base: You are a terse claims assistant.\n",
    );
    let text = std::fs::read_to_string(&suite).unwrap().replace(
        "cases:",
        "variants:\n  - name: default\n    overrides: [edit.yaml]\ncases:",
    );
    std::fs::write(&suite, text).unwrap();
    let out = rescore(dir.path(), &suite, &scripted);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout
            .contains("not re-scored: recorded under prompt version default"),
        "{}",
        out.stdout
    );
}

#[test]
fn judge_setup_problems_stop_before_any_turn() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let no_key = eval(dir.path(), &suite, None, &[]);
    assert_eq!(no_key.code, 2, "{}", no_key.stderr);
    assert!(
        no_key
            .stderr
            .contains("GEMINI_API_KEY is not set: the judge")
            && no_key.stderr.contains("--judge-provider script"),
        "{}",
        no_key.stderr
    );
    let no_script = eval(dir.path(), &suite, None, &["--judge-provider", "script"]);
    assert_eq!(no_script.code, 2);
    assert!(
        no_script
            .stderr
            .contains("--judge-provider script needs --judge-script FILE")
    );
    let bad = judge_script(dir.path(), "rubric:\n  - replyy: {}\n");
    let bad_script = eval(
        dir.path(),
        &suite,
        None,
        &[
            "--judge-provider",
            "script",
            "--judge-script",
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(bad_script.code, 2, "{}", bad_script.stderr);
    assert!(
        bad_script.stderr.contains("invalid judge script") && bad_script.stderr.contains("replyy"),
        "{}",
        bad_script.stderr
    );
    for (text, expected) in [
        (
            "prompts:\n  judge.rubrik: Grade it.\n",
            "`judge.rubrik` is not a judge prompt",
        ),
        (
            "prompts:\n  judge.rubric: \"   \"\n",
            "judge prompt `judge.rubric` is blank",
        ),
        ("prompts: [not, a, map]\n", "--judge-prompts"),
    ] {
        let file = write(dir.path(), "judge-prompts.yaml", text);
        let script = judge_script(dir.path(), PASS_ALL);
        let out = eval(
            dir.path(),
            &suite,
            None,
            &[
                "--judge-provider",
                "script",
                "--judge-script",
                script.to_str().unwrap(),
                "--judge-prompts",
                file.to_str().unwrap(),
            ],
        );
        assert_eq!(out.code, 2, "{text}: {}", out.stderr);
        assert!(out.stderr.contains(expected), "{text}: {}", out.stderr);
    }
    assert!(!dir.path().join("runs").exists(), "nothing ran");

    let same_model = eval(
        dir.path(),
        &suite,
        None,
        &[
            "--judge-provider",
            "script",
            "--judge-script",
            judge_script(dir.path(), PASS_ALL).to_str().unwrap(),
            "--judge-model",
            "gemini-3.1-flash-lite",
        ],
    );
    assert_eq!(same_model.code, 0, "{}", same_model.stderr);
    assert!(
        same_model
            .stderr
            .contains("warning: the judge model is the chat model of variant `default`"),
        "{}",
        same_model.stderr
    );
}

#[test]
fn suite_rules_for_rubrics_and_thresholds_name_the_field() {
    for (extra, field) in [
        ("  passThreshold: 1.5\n", "defaults.passThreshold"),
        ("  minPasses: 4\n", "defaults.minPasses"),
        (
            "  minPasses: 1\n  passThreshold: 0.5\n",
            "defaults.minPasses",
        ),
        ("  expect: {rubric: \"  \"}\n", "defaults.expect.rubric[0]"),
        (
            "  expect: {rubricThreshold: 2}\n",
            "defaults.expect.rubricThreshold",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let suite = rubric_suite(dir.path(), "", 3);
        let text = std::fs::read_to_string(&suite).unwrap().replace(
            "defaults: {today: 2026-11-30}\n",
            &format!("defaults:\n{extra}"),
        );
        std::fs::write(&suite, text).unwrap();
        let out = eval(dir.path(), &suite, None, &[]);
        assert_eq!(out.code, 2, "{extra}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!("field `{field}`")),
            "{extra}: {}",
            out.stderr
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "judge: {prompts: {judge.rubrik: x}}\n", 1);
    let out = eval(dir.path(), &suite, None, &[]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("field `judge.prompts`") && out.stderr.contains("judge.rubrik"),
        "{}",
        out.stderr
    );
}

/// Two folders of the same suite, answered differently.
fn two_runs(dir: &Path, answer_a: &str, answer_b: &str) -> (PathBuf, PathBuf) {
    let mut folders = Vec::new();
    for (name, answer) in [("a", answer_a), ("b", answer_b)] {
        write(dir, &format!("{name}.yaml"), &answer_script(answer));
        let suite = write(
            dir,
            &format!("suite-{name}.yaml"),
            &format!(
                "name: pw\nclaims: {{ids: [CLM-HH-0001, CLM-MTR-0002]}}\nrepeats: 3\ndefaults: {{today: 2026-11-30}}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: {name}.yaml\n"
            ),
        );
        let runs = dir.join(format!("runs-{name}"));
        let mut command = promptlab();
        command
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .arg("eval")
            .arg(&suite)
            .args(["--provider", "script", "-q"]);
        assert_eq!(run_command(&mut command).code, 0);
        folders.push(runs);
    }
    (folders.remove(0), folders.remove(0))
}

fn compare(dir: &Path, a: &Path, b: &Path, script: &Path, extra: &[&str]) -> Run {
    let mut command = promptlab();
    command
        .arg("compare")
        .arg(a)
        .arg(b)
        .args([
            "--judge",
            "states the excess amount",
            "--judge-provider",
            "script",
            "--judge-script",
        ])
        .arg(script)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(extra);
    run_command(&mut command)
}

#[test]
fn pairwise_judging_asks_both_orders_and_tests_the_wins() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_runs(
        dir.path(),
        "The excess is in the policy.",
        "The excess is £350, per the policy.",
    );
    let script = write(dir.path(), "pw.yaml", "pairwise:\n  - prefer: \"£350\"\n");
    let better = compare(
        dir.path(),
        &a,
        &b,
        &script,
        &["--format", "json", "--fail-if-worse"],
    );
    assert_eq!(better.code, 0, "{}\n{}", better.stdout, better.stderr);
    let report: Value = serde_json::from_str(&better.stdout).unwrap();
    let tally = &report["pairwise"]["overall"];
    assert_eq!(
        (
            tally["bWins"].clone(),
            tally["aWins"].clone(),
            tally["conclusion"].clone()
        ),
        (json!(6), json!(0), json!("better"))
    );
    assert_eq!(
        report["pairwise"]["judgeCalls"], 12,
        "each pair asked in both orders"
    );
    assert_eq!(report["pairs"][0]["judged"]["winner"], "b");

    // The other way round, the gate fires on the sign test alone.
    let worse = compare(dir.path(), &b, &a, &script, &["--fail-if-worse"]);
    assert_eq!(worse.code, 1, "{}", worse.stdout);
    assert!(
        worse
            .stdout
            .contains("the pairwise judge prefers A: A in 6 pairs, B in 0 (sign test p = 0.031"),
        "{}",
        worse.stdout
    );
    assert!(
        worse
            .stdout
            .contains("12 answers used (0 asked now, 12 from the cache)"),
        "{}",
        worse.stdout
    );

    // A judge that always prefers whatever it sees first decides nothing.
    let biased = write(
        dir.path(),
        "biased.yaml",
        "pairwise:\n  - reply: {winner: first, reason: first is best}\n",
    );
    let tied = compare(
        dir.path(),
        &a,
        &b,
        &biased,
        &["--format", "json", "--no-judge-cache"],
    );
    let report: Value = serde_json::from_str(&tied.stdout).unwrap();
    assert_eq!(report["pairwise"]["overall"]["ties"], 6);
    assert!(
        report["pairs"][0]["judged"]["note"]
            .as_str()
            .unwrap()
            .contains("the orders disagree")
    );

    // A judge that misbehaves fails a gate: those pairs cannot be judged.
    let broken = write(
        dir.path(),
        "broken.yaml",
        "pairwise:\n  - raw: \"B, clearly\"\n",
    );
    let failed = compare(
        dir.path(),
        &a,
        &b,
        &broken,
        &["--fail-on-regression", "--no-judge-cache"],
    );
    assert_eq!(failed.code, 1, "{}", failed.stdout);
    assert!(
        failed
            .stdout
            .contains("the pairwise judge failed on 6 pairs"),
        "{}",
        failed.stdout
    );
}

#[test]
fn the_shipped_rubric_suite_passes_offline_and_rescores_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let suite = support::repo_root().join("suites/rubric.yaml");
    let judge = support::repo_root().join("suites/scripts/judge.yaml");
    let scripted = [
        "--judge-provider",
        "script",
        "--judge-script",
        judge.to_str().unwrap(),
    ];
    let out = eval(dir.path(), &suite, None, &scripted);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("5 of 5 cases met their threshold · pass@3 100.0% · pass^3 100.0%"),
        "{}",
        out.stdout
    );
    let rescored = rescore(dir.path(), &suite, &scripted);
    assert_eq!(rescored.code, 0, "{}\n{}", rescored.stdout, rescored.stderr);
    assert!(
        rescored
            .stderr
            .contains("rescore: 15 of 15 selected turns recorded")
            && rescored
                .stderr
                .contains("judge: 0 asked, 21 from the cache"),
        "{}",
        rescored.stderr
    );
}

#[test]
fn the_judge_cache_knows_who_judged_and_a_failed_rescore_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let passing = judge_script(dir.path(), PASS_ALL);
    let with = |script: &Path| {
        [
            "--judge-provider",
            "script",
            "--judge-script",
            script.to_str().unwrap(),
        ]
        .map(str::to_string)
    };
    let first = eval(
        dir.path(),
        &suite,
        None,
        &with(&passing)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    // Another judge (the same file name, other content) is not answered by the first's verdicts.
    let failing = judge_script(
        dir.path(),
        "rubric:\n  - reply: {pass: false, score: 0, reason: strict}\n",
    );
    let second = eval(
        dir.path(),
        &suite,
        None,
        &with(&failing)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(second.code, 1, "{}", second.stdout);
    assert!(second.stdout.contains("strict"), "{}", second.stdout);

    // A re-score whose judge fails leaves no sidecar: the recorded verdict stands.
    let broken = judge_script(dir.path(), "rubric:\n  - raw: \"Sure, it passes\"\n");
    let rescored = rescore(
        dir.path(),
        &suite,
        &with(&broken).iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(rescored.code, 1, "{}", rescored.stdout);
    assert!(
        rescored.stdout.contains("the recorded verdict stands"),
        "{}",
        rescored.stdout
    );
    let sidecars = support::files_under(&dir.path().join("runs"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".verdict.json"))
        .count();
    assert_eq!(sidecars, 0);
}

/// A judge whose model is busy says so, as a turn's retries do: an eval
/// `notice` record for the judged turn and a line on stderr, naming the judge;
/// `--rescore` says it on stderr.
#[test]
fn a_retrying_judge_says_so_for_the_turn_it_judges() {
    // The server's wait of 0 s, plus jitter.
    const NOTICE: &str = "Gemini (judging) answered 503; retrying (2 of 3) in 0.";
    let busy = || -> Responder {
        Box::new(|_| Reply::Status {
            code: 503,
            headers: vec![("Retry-After".into(), "0".into())],
            body: r#"{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}"#
                .into(),
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let suite = rubric_suite(dir.path(), "", 1);
    let server = TestServer::start(vec![busy(), verdict(true, 0.9)]);
    let out = eval(dir.path(), &suite, Some(&server), &["--format", "ndjson"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let notices = ndjson(&out.stdout, "notice");
    assert_eq!(notices.len(), 1, "{}", out.stdout);
    assert_eq!(notices[0]["case"], "payment");
    assert_eq!(notices[0]["notice"]["who"], "Gemini (judging)");
    assert_eq!(notices[0]["notice"]["status"], 503);
    assert!(out.stderr.contains(NOTICE), "{}", out.stderr);

    let server = TestServer::start(vec![busy(), verdict(true, 0.9)]);
    let mut command = promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
        .env("GEMINI_API_KEY", KEY)
        .env("GEMINI_BASE_URL", &server.base_url)
        .arg("eval")
        .arg(&suite)
        .args(["--rescore", "--no-judge-cache"]);
    let rescored = run_command(&mut command);
    assert_eq!(rescored.code, 0, "{}\n{}", rescored.stdout, rescored.stderr);
    assert!(rescored.stderr.contains(NOTICE), "{}", rescored.stderr);
}
