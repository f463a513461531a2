//! Planted files in a runs folder: a FIFO named like a run log no longer
//! hangs `runs list`, `report` or `/api/runs`, a link out of the folder (to
//! a secret) is refused by name and never read, and a vote or a re-score is
//! never written through a link planted at its sidecar's name.

use crate::support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use promptlab::runs::feedback::{FeedbackRecord, Vote, append_feedback};

const EXAMPLE: &str =
    "runs/examples/default/20261130T022758.416Z-64011163-48d0-400c-acd4-0a1818edc25c.ndjson";
const SECRET: &str = "TOP-SECRET-LINE-do-not-show";

/// A runs folder with the example log, a FIFO and a link to a secret file
/// outside, each named like a run log. Returns (runs, fifo, link).
fn planted(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let runs = dir.join("runs");
    let version = runs.join("default");
    std::fs::create_dir_all(&version).unwrap();
    let example = support::repo_root().join(EXAMPLE);
    std::fs::copy(&example, version.join(example.file_name().unwrap())).unwrap();
    let fifo = version.join("20261130T030000.000Z-aaaaaaaa-0000-4000-8000-000000000000.ndjson");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo works here");
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let link = version.join("20261130T040000.000Z-bbbbbbbb-0000-4000-8000-000000000000.ndjson");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    (runs, fifo, link)
}

/// Runs `command` to its end, failing the test (and killing it) if it is
/// still running after 20 s: the hang this file pins.
fn finishes(mut command: Command) -> support::Run {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the command hung on a planted file");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    support::Run {
        code: child.wait().unwrap().code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

#[test]
fn runs_list_refuses_a_fifo_and_an_outward_link_by_name_and_lists_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, fifo, link) = planted(dir.path());
    let mut command = support::promptlab();
    command
        .env("PROMPTLAB_RUNS_DIR", &runs)
        .args(["runs", "list", "--json"]);
    let out = finishes(command);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("64011163"), "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!(
            "refused run log `{}`: it is a FIFO, not a regular file",
            fifo.display()
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!(
            "refused run log `{}`: it is a link to `",
            link.display()
        )) && out.stderr.contains("outside the runs folder"),
        "{}",
        out.stderr
    );
    assert!(!out.stdout.contains(SECRET) && !out.stderr.contains(SECRET));
}

#[test]
fn report_refuses_them_too_and_still_writes_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let (runs, fifo, _link) = planted(dir.path());
    let page = dir.path().join("report.html");
    let mut command = support::promptlab();
    command.arg("report").arg(&runs).arg("-o").arg(&page);
    let out = finishes(command);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(&fifo.display().to_string()),
        "{}",
        out.stderr
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("64011163") && !html.contains(SECRET));
}

#[test]
fn runs_show_of_a_fifo_named_directly_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let (_runs, fifo, _link) = planted(dir.path());
    let mut command = support::promptlab();
    command.arg("runs").arg("show").arg(&fifo);
    let out = finishes(command);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("it is a FIFO, not a regular file"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn api_runs_answers_with_a_fifo_in_the_folder() {
    let script = support::repo_root().join("tests/data/scripts/excess.yaml");
    let mut server = support::serve::Server::start(&script, &[]);
    // The server reads its own private runs folder: plant there.
    planted_into(&server.runs);
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        reqwest::get(server.at("/api/runs")),
    )
    .await
    .expect("/api/runs answered")
    .unwrap();
    assert_eq!(answer.status(), 200);
    let body = answer.text().await.unwrap();
    assert!(
        body.contains("64011163") && !body.contains(SECRET),
        "{body}"
    );
    server.child.kill().unwrap();
}

fn planted_into(runs: &Path) {
    let parent = runs.parent().unwrap();
    let (made, _, _) = planted(parent);
    assert_eq!(made, runs);
}

#[test]
fn a_vote_is_never_written_through_a_link_at_its_sidecar_name() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir
        .path()
        .join("20261130T022758.416Z-64011163-48d0-400c-acd4-0a1818edc25c.ndjson");
    std::fs::copy(support::repo_root().join(EXAMPLE), &log).unwrap();
    let target = dir.path().join("victim.txt");
    std::fs::write(&target, "untouched\n").unwrap();
    let sidecar = promptlab::runs::feedback::feedback_path(&log);
    std::os::unix::fs::symlink(&target, &sidecar).unwrap();
    let record = FeedbackRecord {
        turn_id: "64011163-48d0-400c-acd4-0a1818edc25c".into(),
        vote: Vote::Up,
        at: chrono::Utc::now(),
        comment: None,
    };
    let error = append_feedback(&log, &record).expect_err("the link is not followed");
    assert!(error.to_string().contains("is a link"), "{error}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched\n");
}
