//! The Prompt Lab page of `promptlab serve` in a real browser: headless
//! Chromium (Debian's `chromium`) over the DevTools protocol loads `/`,
//! chooses a claim, edits an override (the live fingerprint changes), asks
//! a question and sees the streamed answer, the activity chip before it and
//! the done footer with the same prompt version; on a slow scripted turn
//! the Stop button aborts the fetch and the run log is marked cancelled.
//! Screenshots are kept under `target/tmp/serve-screenshots/`.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use promptlab::runs::RunStatus;
use serde_json::json;
use support::browser::Browser;
use support::serve::Server;
use support::{repo_root, slow_script};

const WAIT: Duration = Duration::from_secs(30);

fn screenshot_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("serve-screenshots")
        .join(name)
}

/// Sets a form field's value as typing would, firing `input` and `change`.
fn type_into(browser: &mut Browser, selector: &str, text: &str) {
    browser.eval(&format!(
        "(() => {{ const e = document.querySelector({s}); e.value = {t}; \
         e.dispatchEvent(new Event('input')); e.dispatchEvent(new Event('change')); }})()",
        s = json!(selector),
        t = json!(text)
    ));
}

fn assert_no_page_errors(browser: &Browser) {
    assert!(
        browser.errors.is_empty(),
        "the page logged errors: {:#?}",
        browser.errors
    );
}

#[test]
fn a_chat_in_the_page_streams_the_answer_and_the_done_footer() {
    let server = Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[]);
    let mut browser = Browser::launch(1400, 900);
    browser.open_url(&server.url, WAIT);
    type_into(&mut browser, "#claim", "CLM-HH-0001");
    type_into(
        &mut browser,
        "#overrides textarea",
        "Answer in one short paragraph.",
    );
    let fingerprint = browser.wait_for(
        "(() => { const f = document.getElementById('fingerprint').textContent; return f !== 'default' && f; })()",
        "the live fingerprint",
        WAIT,
    );
    type_into(&mut browser, "#message", "What is the excess?");
    browser.click("#send");
    browser.wait_for(
        "document.querySelector('.msg.assistant .footer')",
        "the done footer",
        WAIT,
    );
    let answer = browser.eval("document.querySelector('.msg.assistant .answer').textContent");
    assert!(answer.as_str().unwrap().contains("£350"), "{answer}");
    let order = browser
        .eval("[...document.querySelector('.msg.assistant').children].map(c => c.className)");
    assert_eq!(
        order[0], "chips",
        "activity chips come before the answer: {order}"
    );
    let chip = browser.eval("document.querySelector('.chip').textContent");
    assert_eq!(chip, "Reading the policy section");
    let footer = browser.eval("document.querySelector('.msg.assistant .footer').textContent");
    let footer = footer.as_str().unwrap();
    assert!(footer.contains(fingerprint.as_str().unwrap()), "{footer}");
    let logs = server.wait_for_logs(1, WAIT);
    assert!(footer.contains(&logs[0].header.turn_id), "{footer}");
    assert_eq!(logs[0].header.fingerprint, fingerprint.as_str().unwrap());

    browser.click(".vote-up");
    browser.wait_for(
        "document.querySelector('.vote-up.chosen')",
        "the vote to be recorded",
        WAIT,
    );
    let votes = promptlab::runs::feedback::read_feedback(&logs[0].path).unwrap();
    assert_eq!(votes.len(), 1);
    browser.wait_for(
        "document.querySelectorAll('#run-list li').length === 1",
        "the recent runs",
        WAIT,
    );
    browser.screenshot(&screenshot_path("chat.png"), false);
    assert_no_page_errors(&browser);
}

#[test]
fn the_stop_button_aborts_the_turn_and_its_log_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&slow_script(dir.path()), &[]);
    let mut browser = Browser::launch(1400, 900);
    browser.open_url(&server.url, WAIT);
    type_into(&mut browser, "#claim", "CLM-HH-0001");
    type_into(&mut browser, "#message", "Count slowly.");
    browser.click("#send");
    browser.wait_for(
        "document.querySelector('.msg.assistant .answer') && document.querySelector('.msg.assistant .answer').textContent.length > 0",
        "the answer to start streaming",
        WAIT,
    );
    browser.click("#stop");
    browser.wait_for(
        "[...document.querySelectorAll('.msg.assistant .footer')].some(f => f.textContent === 'stopped')",
        "the stopped note",
        WAIT,
    );
    browser.screenshot(&screenshot_path("stopped.png"), false);
    let logs = server.wait_for_logs(1, WAIT);
    let footer = logs[0].footer.as_ref().expect("a complete log");
    assert_eq!(footer.status, RunStatus::Cancelled);
    assert!(
        footer.total_ms < 1_400,
        "stopped before the end: {} ms",
        footer.total_ms
    );
    assert_no_page_errors(&browser);
}

/// #62: a turn whose server reported no usage shows its counts as `–` and
/// says so in the done footer and in the recent run's transcript — never
/// `null`, never 0.
#[test]
fn a_turn_without_reported_usage_says_so_in_the_footer_and_its_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let script = support::write(
        dir.path(),
        "unreported.yaml",
        "turns:\n  - text: The excess is £350.\n    usage: null\n",
    );
    let server = Server::start(&script, &[]);
    let mut browser = Browser::launch(1400, 900);
    browser.open_url(&server.url, WAIT);
    type_into(&mut browser, "#claim", "CLM-HH-0001");
    type_into(&mut browser, "#message", "What is the excess?");
    browser.click("#send");
    browser.wait_for(
        "document.querySelector('.msg.assistant .footer')",
        "the done footer",
        WAIT,
    );
    let footer = browser.eval("document.querySelector('.msg.assistant .footer').textContent");
    let footer = footer.as_str().unwrap();
    assert!(
        footer.contains("– in / – out / – cached (usage not reported by the server (1 call))"),
        "{footer}"
    );
    browser.wait_for(
        "document.querySelectorAll('#run-list li').length === 1",
        "the recent runs",
        WAIT,
    );
    browser.click("#run-list .open-run");
    browser.wait_for(
        "document.querySelector('#run-body .footer')",
        "the recorded transcript",
        WAIT,
    );
    let recorded = browser.eval("document.querySelector('#run-body .footer').textContent");
    let recorded = recorded.as_str().unwrap();
    assert!(
        recorded.contains("– in / – out · usage not reported by the server (1 call)"),
        "{recorded}"
    );
    assert!(!recorded.contains("null"), "{recorded}");
    assert_no_page_errors(&browser);
}
