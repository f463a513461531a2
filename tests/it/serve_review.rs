//! The Prompt Lab page's Review view in headless Chromium: an eval run's
//! turns one at a time, labelled with keys, the judge's verdict shown only
//! once decided; and `POST /api/labels` under serve's trust rules (Host,
//! Origin, JSON only) with its bad input refused and nothing written.

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::browser::Browser;
use support::labelled;
use support::repo_root;
use support::serve::Server;

const WAIT: Duration = Duration::from_secs(60);

fn text_of(browser: &mut Browser, selector: &str) -> String {
    let found = browser.eval(&format!(
        "(document.querySelector('{selector}') || {{}}).textContent || ''"
    ));
    found.as_str().unwrap().to_string()
}

#[test]
fn the_review_view_labels_with_keys_and_shows_the_judge_only_after_deciding() {
    let server = Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[]);
    labelled::judged_runs(&server.runs);
    let mut browser = Browser::launch(1400, 1000);
    browser.open_url(&server.url, WAIT);
    browser.wait_for("document.body.dataset.ready === '1'", "the page", WAIT);
    browser.click(".tab[data-view='review']");
    browser.click("#review-reviewer");
    browser.type_text("ann");
    browser.click("#review-start");
    browser.wait_for(
        "document.getElementById('review-progress').textContent.startsWith('1 of ')",
        "the first turn",
        WAIT,
    );
    let first = text_of(&mut browser, "#review-turn");
    assert!(
        first.contains("Will this claim be paid?") || first.contains("excess"),
        "{first}"
    );
    for said in ["judge pass", "judge fail"] {
        assert!(!first.contains(said), "blind until decided: {first}");
    }
    // Keys go to the page, not to a field.
    browser.eval("document.activeElement.blur()");
    browser.press("f", false);
    browser.wait_for(
        "document.getElementById('review-progress').textContent.startsWith('2 of ')",
        "the second turn",
        WAIT,
    );
    let last = text_of(&mut browser, ".review-last");
    assert!(last.starts_with("previous: you fail · judge "), "{last}");
    browser.press("1", false);
    browser.wait_for(
        "document.querySelector('.review-criteria .mark').textContent === 'pass'",
        "the criterion marked",
        WAIT,
    );
    browser.press("p", false);
    browser.wait_for(
        "document.getElementById('review-progress').textContent.startsWith('3 of ')",
        "the third turn",
        WAIT,
    );
    let written = labelled::labels_under(&server.runs);
    assert_eq!(written.len(), 2, "{written:?}");
    assert_eq!(written[0]["verdict"], "fail");
    assert_eq!(written[1]["verdict"], "pass");
    assert!(written.iter().all(|label| label["reviewer"] == "ann"));
    let criteria = written[1]["criteria"].as_object().unwrap();
    assert_eq!(criteria.values().next().unwrap(), "pass");
    let progress = text_of(&mut browser, "#review-progress");
    assert!(progress.contains("κ so far"), "{progress}");
    assert!(browser.errors.is_empty(), "{:#?}", browser.errors);
}

/// One GET: (status, body).
fn get(server: &Server, path: &str) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::get(server.at(path)).await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    })
}

/// One POST with these headers: (status, body).
fn post(server: &Server, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .post(server.at("/api/labels"))
            .body(body.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    })
}

#[test]
fn post_labels_keeps_serve_s_trust_rules_and_refuses_bad_input() {
    let server = Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[]);
    labelled::judged_runs(&server.runs);
    let log = support::run_logs_under(&server.runs)[0].clone();
    let text = std::fs::read_to_string(&log).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let turn = header["turnId"].as_str().unwrap();
    let json = [("content-type", "application/json")];
    let body = |extra: &str| {
        format!("{{\"turnId\":\"{turn}\",\"verdict\":\"pass\",\"reviewer\":\"ann\"{extra}}}")
    };
    // A page of another origin, a form post, a rebinding Host: refused.
    let (status, _) = post(
        &server,
        &body(""),
        &[json[0], ("origin", "https://evil.example")],
    );
    assert_eq!(status, 403);
    let (status, _) = post(&server, &body(""), &[("content-type", "text/plain")]);
    assert_eq!(status, 415);
    let (status, _) = post(&server, &body(""), &[json[0], ("host", "evil.example:80")]);
    assert!(status == 403 || status == 421, "{status}");
    // Bad input: each a clear error.
    let unknown = body("").replace(turn, "0123abcd-0000-4000-8000-000000000000");
    let (status, said) = post(&server, &unknown, &json);
    assert_eq!(status, 404, "{said}");
    assert!(said.contains("no recorded turn"), "{said}");
    let (status, said) = post(
        &server,
        &body(",\"criteria\":{\"is polite\":\"fail\"}"),
        &json,
    );
    assert_eq!(status, 400, "{said}");
    assert!(said.contains("not judged on `is polite`"), "{said}");
    let (status, said) = post(&server, &body("").replace("\"pass\"", "\"maybe\""), &json);
    assert_eq!(status, 400, "{said}");
    let (status, said) = post(&server, &body("").replace("\"ann\"", "\"  \""), &json);
    assert_eq!(status, 400, "{said}");
    assert!(
        labelled::labels_under(&server.runs).is_empty(),
        "nothing written"
    );
    // The queue: an eval run by a prefix of its id, as the CLI takes it;
    // no reviewer is a 400.
    let eval_run = header["labels"]["evalRun"].as_str().unwrap();
    let prefixed = format!("/api/review?reviewer=ann&evalRun={}", &eval_run[..6]);
    let (status, said) = get(&server, &prefixed);
    assert_eq!(status, 200, "{said}");
    let queue: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(queue["evalRun"], eval_run);
    assert!(!queue["turns"].as_array().unwrap().is_empty());
    assert!(
        !said.contains("\"judge\""),
        "the queue never holds the judge's verdict"
    );
    let (status, _) = get(&server, "/api/review?evalRun=ev-");
    assert_eq!(status, 400);
    // And a good one: 201, the label, then the judge's verdict.
    let (status, said) = post(&server, &body(""), &json);
    assert_eq!(status, 201, "{said}");
    let answer: Value = serde_json::from_str(&said).unwrap();
    assert_eq!(answer["label"]["turnId"], turn);
    assert!(
        answer["judge"] == "pass" || answer["judge"] == "fail",
        "{answer}"
    );
    assert_eq!(labelled::labels_under(&server.runs).len(), 1);
}

/// Whatever body a page sends, `POST /api/labels` answers with a 4xx and
/// a JSON error, never a server error, and the server lives on.
#[test]
fn any_label_body_is_a_clear_answer_never_a_server_error() {
    use proptest::test_runner::{Config, TestRunner};
    let server = Server::start(&repo_root().join("tests/data/scripts/excess.yaml"), &[]);
    let bodies = "\\{(\"(turnId|verdict|reviewer|criteria|note|evalRun|x)\":(\"[a-z0-9 -]{0,12}\"|\\{\\}|\\[\\]|1|null),?){0,5}\\}|[ -~]{0,40}";
    let mut runner = TestRunner::new(Config::with_cases(48));
    runner
        .run(&bodies, |body| {
            let (status, said) = post(&server, &body, &[("content-type", "application/json")]);
            proptest::prop_assert!((400..500).contains(&status), "{} {}", status, said);
            proptest::prop_assert!(serde_json::from_str::<Value>(&said).is_ok(), "{}", said);
            Ok(())
        })
        .unwrap();
}
