//! The Prompt Lab page as a prompt engineer uses it, in headless Chromium
//! (Debian's `chromium`, over the DevTools protocol): editors start from
//! the registry's defaults; an edit changes the live fingerprint, saves as a
//! file whose `prompts fingerprint` agrees, and loads back; A/B sends one
//! question to two versions of a mock Gemini that answers by the prompt it
//! is sent, streams both and shows their word diff; a recent run opens its
//! transcript; hostile answers render as text; the keyboard reaches every
//! control; the last claim is remembered. Screenshots go to
//! `target/tmp/serve-screenshots/`, and to `docs/` with
//! `PROMPTLAB_UPDATE_DOCS=1` (the ones `docs/serve.md` shows).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use promptlab::prompts::PromptRegistry;
use serde_json::{Value, json};
use support::browser::Browser;
use support::http_server::{RecordedRequest, Reply, TestServer};
use support::serve::Server;
use support::{promptlab, repo_root, run_command, write};

const WAIT: Duration = Duration::from_secs(30);

fn screenshot(browser: &mut Browser, name: &str) {
    let artifact = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("serve-screenshots")
        .join(name);
    browser.screenshot(&artifact, false);
    // Only the screenshots the docs show are refreshed there; the rest are
    // review artifacts under the target folder.
    let docs = repo_root().join("docs").join(name);
    if std::env::var_os("PROMPTLAB_UPDATE_DOCS").is_some() && docs.exists() {
        std::fs::copy(&artifact, docs).unwrap();
    }
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

fn editor(id: &str) -> String {
    format!("#overrides textarea[data-prompt-id=\"{id}\"]")
}

fn open(browser: &mut Browser, server: &Server) {
    browser.open_url(&server.url, WAIT);
    browser.wait_for(
        "document.body.dataset.ready === '1'",
        "the page to load",
        WAIT,
    );
}

fn fingerprint_is(browser: &mut Browser, expected: &str) {
    browser.wait_for(
        &format!(
            "document.getElementById('fingerprint').textContent === {}",
            json!(expected)
        ),
        &format!("the live fingerprint {expected}"),
        WAIT,
    );
}

/// No page errors but the HTTP statuses the test provokes on purpose.
fn assert_no_page_errors_but(browser: &Browser, expected: &[&str]) {
    let errors: Vec<_> = browser
        .errors
        .iter()
        .filter(|error| {
            !expected
                .iter()
                .any(|status| error.contains(&format!("status of {status}")))
        })
        .collect();
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
}

fn assert_no_page_errors(browser: &Browser) {
    assert_no_page_errors_but(browser, &[]);
}

fn excess_script() -> PathBuf {
    repo_root().join("tests/data/scripts/excess.yaml")
}

#[test]
fn the_editors_start_from_the_defaults_and_a_saved_file_is_the_pages_version() {
    let dir = tempfile::tempdir().unwrap();
    let overrides_dir = dir.path().join("saved");
    let server = Server::start(
        &excess_script(),
        &["--overrides-dir", overrides_dir.to_str().unwrap()],
    );
    let mut browser = Browser::launch(1280, 800);
    open(&mut browser, &server);

    let registry = PromptRegistry::embedded();
    let shown = browser.eval(
        "Object.fromEntries([...document.querySelectorAll('#overrides textarea')].map(a => [a.dataset.promptId, a.value]))",
    );
    let ids: Vec<&str> = registry.prompt_ids().collect();
    assert_eq!(
        shown.as_object().unwrap().len(),
        ids.len(),
        "one editor per prompt id"
    );
    for id in &ids {
        assert_eq!(
            shown[*id].as_str(),
            registry.default_text(id),
            "editor {id} starts from the default"
        );
    }
    assert_eq!(
        browser.eval("document.querySelectorAll('details.overridden').length"),
        0
    );
    fingerprint_is(&mut browser, "default");

    // Texts YAML is picky about: leading spaces, `#`, `: `, U+FEFF, no final
    // newline (a text box holds no CRLF; tests/it/serve_lab_api.rs saves one).
    let edited = "Be brief.\n  # not a comment: keep it\n\u{feff}{{assistant}} answers";
    type_into(&mut browser, &editor("system.base"), edited);
    let live = browser.wait_for(
        "(() => { const f = document.getElementById('fingerprint').textContent; return f !== 'default' && f; })()",
        "the live fingerprint to change",
        WAIT,
    );
    assert_eq!(
        browser.eval("document.querySelectorAll('details.overridden').length"),
        1
    );

    browser.click("details[data-prompt-id=\"system.base\"] > summary");
    browser.click("details[data-prompt-id=\"system.base\"] .show-diff");
    browser.wait_for(
        "document.querySelector('details[data-prompt-id=\"system.base\"] pre.diff .del') !== null",
        "the diff against the default",
        WAIT,
    );

    type_into(&mut browser, "#save-name", "brief");
    browser.click("#save");
    let saved = browser.wait_for(
        "(() => { const r = document.getElementById('save-result'); return r.classList.contains('saved') && r.dataset.fingerprint; })()",
        "the save",
        WAIT,
    );
    assert_eq!(saved, live, "the saved file is the page's version");
    let file = overrides_dir.join("brief.yaml");
    let out =
        run_command(promptlab().args(["prompts", "fingerprint", "--json", file.to_str().unwrap()]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let reported: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        reported["fingerprint"], live,
        "`prompts fingerprint` agrees with the page"
    );
    let loaded = promptlab::prompts::OverrideSet::load(&[file]).unwrap();
    assert_eq!(
        loaded.prompts["system.base"], edited,
        "the text is saved exactly"
    );
    screenshot(&mut browser, "serve-editors.png");

    browser.click("details[data-prompt-id=\"system.base\"] .reset");
    fingerprint_is(&mut browser, "default");
    browser.wait_for(
        "[...document.getElementById('saved-files').options].some(o => o.value === 'brief.yaml')",
        "the saved file in the list",
        WAIT,
    );
    type_into(&mut browser, "#saved-files", "brief.yaml");
    browser.click("#load-file");
    fingerprint_is(&mut browser, live.as_str().unwrap());
    let back = browser.eval(&format!(
        "document.querySelector({}).value",
        json!(editor("system.base"))
    ));
    assert_eq!(back, edited, "the file loads back into the editor");

    // A second save under the same name is refused until replaced.
    type_into(&mut browser, &editor("system.base"), "Shorter still.");
    browser.click("#save");
    browser.wait_for(
        "document.querySelector('#save-result .replace') !== null",
        "the 409 and its Replace button",
        WAIT,
    );
    browser.click("#save-result .replace");
    browser.wait_for(
        "document.getElementById('save-result').classList.contains('saved')",
        "the replace",
        WAIT,
    );
    let replaced =
        promptlab::prompts::OverrideSet::load(&[overrides_dir.join("brief.yaml")]).unwrap();
    assert_eq!(replaced.prompts["system.base"], "Shorter still.");
    assert_no_page_errors_but(&browser, &["409"]);
}

/// A Gemini stream of one text part.
fn gemini_text(text: &str) -> Vec<u8> {
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 12, "totalTokenCount": 112},
        "modelVersion": "gemini-3.1-flash-lite"
    });
    format!("data: {chunk}\r\n\r\n").into_bytes()
}

const LONG: &str =
    "The excess on this policy is £350, as the schedule records for escape of water.";
const SHORT: &str = "The excess is £350.";

/// The mock model answers briefly when the prompt asks it to.
fn answer_by_prompt(request: &RecordedRequest) -> Reply {
    let system = request.json()["systemInstruction"].to_string();
    Reply::stream(gemini_text(if system.contains("Answer in one line.") {
        SHORT
    } else {
        LONG
    }))
}

#[test]
fn a_b_streams_two_versions_side_by_side_and_diffs_their_answers() {
    let gemini = TestServer::start(vec![Box::new(answer_by_prompt), Box::new(answer_by_prompt)]);
    let mut command = promptlab();
    command
        .env("GEMINI_API_KEY", "lab-test-key")
        .env("GEMINI_BASE_URL", &gemini.base_url);
    let server = Server::start_with(
        command,
        &["--provider", "gemini", "--model", "gemini-3.1-flash-lite"],
    );
    let mut browser = Browser::launch(1280, 800);
    open(&mut browser, &server);
    type_into(&mut browser, "#claim", "CLM-HH-0001");
    type_into(&mut browser, &editor("system.base"), "Answer in one line.");
    browser.wait_for(
        "document.getElementById('fingerprint').textContent !== 'default'",
        "the fingerprint",
        WAIT,
    );

    browser.click(".tab[data-view=\"ab\"]");
    assert_eq!(
        browser.eval("document.getElementById('ab-a').value"),
        "default"
    );
    assert_eq!(
        browser.eval("document.getElementById('ab-b').value"),
        "editors"
    );
    type_into(&mut browser, "#ab-message", "What is the excess?");
    browser.click("#ab-send");
    browser.wait_for(
        "document.querySelectorAll('#ab-sides .footer').length === 2 && !document.getElementById('ab-diff').hidden",
        "both answers and the word diff",
        WAIT,
    );
    let answers =
        browser.eval("[...document.querySelectorAll('#ab-sides .answer')].map(a => a.textContent)");
    assert_eq!(
        answers,
        json!([LONG, SHORT]),
        "A has the default's answer, B the edited one's"
    );
    let removed = browser
        .eval("[...document.querySelectorAll('#ab-diff del')].map(d => d.textContent).join(' ')");
    let added = browser
        .eval("[...document.querySelectorAll('#ab-diff ins')].map(d => d.textContent).join(' ')");
    assert!(removed.as_str().unwrap().contains("schedule"), "{removed}");
    assert!(added.as_str().unwrap().contains("£350."), "{added}");
    assert_eq!(gemini.requests().len(), 2, "one model call per side");

    let logs = server.wait_for_logs(2, WAIT);
    let fingerprints: std::collections::BTreeSet<_> = logs
        .iter()
        .map(|log| log.header.fingerprint.clone())
        .collect();
    assert_eq!(fingerprints.len(), 2, "two prompt versions were run");
    browser.click("#ab-side-b .vote-up");
    browser.wait_for(
        "document.querySelector('#ab-side-b .vote-up.chosen') !== null",
        "B's vote",
        WAIT,
    );
    let voted: Vec<_> = logs
        .iter()
        .filter(|log| {
            !promptlab::runs::feedback::read_feedback(&log.path)
                .unwrap()
                .is_empty()
        })
        .collect();
    assert_eq!(voted.len(), 1, "the vote is recorded beside one log");
    assert_ne!(
        voted[0].header.fingerprint, "default",
        "beside B's (edited) log"
    );
    screenshot(&mut browser, "serve-ab.png");
    assert_no_page_errors(&browser);
}

#[test]
fn a_recent_run_opens_its_transcript_and_hostile_text_stays_text() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script> The excess is <b>£350</b>.";
    let script = write(
        dir.path(),
        "hostile.yaml",
        &format!(
            "turns:\n  - text: \"Checking.\"\n    calls:\n      - name: get_claim_section\n        args: {{section: policy}}\n  - text: {}\n",
            json!(hostile)
        ),
    );
    let server = Server::start(&script, &[]);
    // A pasted claim whose policy text is markup: the tool result shows it.
    let mut claim: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("claims/CLM-HH-0001.json")).unwrap(),
    )
    .unwrap();
    let planted = "<img src=y onerror=\"window.__pwned=3\">Home <i>Plus</i>";
    claim["policy"]["product"] = json!(planted);
    let mut browser = Browser::launch(1280, 800);
    open(&mut browser, &server);
    type_into(&mut browser, "#claim-json", &claim.to_string());
    type_into(&mut browser, "#message", "What is the excess?");
    browser.click("#send");
    browser.wait_for(
        "document.querySelector('.msg.assistant .footer') !== null",
        "the answer",
        WAIT,
    );
    browser.wait_for(
        "document.querySelectorAll('#run-list .open-run').length === 1",
        "the recent run",
        WAIT,
    );
    browser.click("#run-list .open-run");
    browser.wait_for(
        "document.getElementById('run-dialog').open && document.querySelector('#run-body .recorded .answer') !== null",
        "the transcript",
        WAIT,
    );
    let answer = browser.eval("document.querySelector('#run-body .recorded .answer').textContent");
    assert_eq!(answer.as_str().unwrap(), format!("Checking.{hostile}"));
    let markup = "#transcript img, #transcript script, #transcript b, #run-body img, #run-body script, #run-body b";
    let found = browser.eval(&format!(
        "[...document.querySelectorAll({})].map(e => e.outerHTML)",
        json!(markup)
    ));
    assert_eq!(
        found,
        json!([]),
        "no markup from the answer became elements"
    );
    assert_eq!(browser.eval("typeof window.__pwned"), "undefined");
    // The section is JSON: the planted text as a JSON string's contents.
    let planted = json!(planted).to_string();
    let planted = planted.trim_matches('"');
    let lookup = browser.eval("document.querySelector('#run-body .lookups pre').textContent");
    assert!(
        lookup.as_str().unwrap().contains(planted),
        "the claim's markup shown as text: {lookup}"
    );
    let live = browser.eval("document.querySelector('#transcript .lookups pre').textContent");
    assert!(live.as_str().unwrap().contains(planted), "{live}");
    assert_eq!(
        browser.eval("document.querySelectorAll('#transcript i, #run-body i').length"),
        0
    );
    let chips =
        browser.eval("[...document.querySelectorAll('#run-body .chip')].map(c => c.textContent)");
    assert_eq!(chips, json!(["Reading the policy section"]));
    let lookups = browser.eval("document.querySelector('#run-body .lookups summary').textContent");
    assert_eq!(lookups, "lookups (1)");
    screenshot(&mut browser, "serve-transcript.png");
    browser.click("#run-close");
    assert_no_page_errors(&browser);
}

#[test]
fn the_keyboard_reaches_every_control_in_order_and_enter_sends() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &excess_script(),
        &["--overrides-dir", dir.path().to_str().unwrap()],
    );
    let mut browser = Browser::launch(1280, 800);
    open(&mut browser, &server);
    let mut order: Vec<String> = Vec::new();
    for _ in 0..120 {
        browser.press("Tab", false);
        let focused = browser.eval(
            "(() => { const e = document.activeElement; return e.id || e.tagName + '.' + e.className + ':' + [...document.querySelectorAll(e.tagName)].indexOf(e); })()",
        );
        let name = focused.as_str().unwrap_or_default().to_string();
        if order.first() == Some(&name) {
            break;
        }
        order.push(name);
    }
    let at = |name: &str| {
        order
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("Tab never reaches #{name}: {order:?}"))
    };
    assert!(
        at("claim") < at("save-name") && at("save-name") < at("save"),
        "{order:?}"
    );
    assert!(
        at("save") < at("message") && at("message") < at("send"),
        "{order:?}"
    );
    let outline = browser.eval("(() => { document.getElementById('send').focus(); return getComputedStyle(document.activeElement).outlineStyle; })()");
    assert_ne!(outline, "none", "a visible focus");

    browser.eval("document.getElementById('message').focus()");
    browser.type_text("What is the excess?");
    browser.press("Enter", false);
    browser.wait_for(
        "document.querySelector('.msg.assistant .footer') !== null",
        "Enter to send",
        WAIT,
    );
    assert_no_page_errors(&browser);
}

#[test]
fn the_page_remembers_the_last_claim_and_fits_a_narrow_window() {
    let server = Server::start(&excess_script(), &[]);
    let mut browser = Browser::launch(1280, 800);
    open(&mut browser, &server);
    assert_eq!(
        browser.eval("document.getElementById('claim').value"),
        "CLM-AUT-0012"
    );
    type_into(&mut browser, "#claim", "CLM-HH-0001");
    type_into(&mut browser, "#capability", "summarise");
    type_into(&mut browser, &editor("system.base"), "Remembered text.");
    browser.wait_for(
        "document.getElementById('fingerprint').textContent !== 'default'",
        "the fingerprint",
        WAIT,
    );
    browser.navigate(&format!("{}/", server.url), WAIT);
    browser.wait_for(
        "document.body.dataset.ready === '1'",
        "the page to reload",
        WAIT,
    );
    assert_eq!(
        browser.eval("document.getElementById('claim').value"),
        "CLM-HH-0001"
    );
    assert_eq!(
        browser.eval("document.getElementById('capability').value"),
        "summarise"
    );
    assert_eq!(
        browser.eval(&format!(
            "document.querySelector({}).value",
            json!(editor("system.base"))
        )),
        "Remembered text."
    );

    browser.resize(560, 900);
    let overflow = browser.eval("document.documentElement.scrollWidth - window.innerWidth");
    assert!(
        overflow.as_i64().unwrap() <= 0,
        "no sideways scrolling at 560 px: {overflow}"
    );
    screenshot(&mut browser, "serve-narrow.png");
    assert_no_page_errors(&browser);
}

#[test]
fn an_a_b_side_refused_by_max_concurrent_shows_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        &support::slow_script(dir.path()),
        &["--max-concurrent", "1"],
    );
    let mut browser = Browser::launch(1280, 800);
    open(&mut browser, &server);
    type_into(&mut browser, "#claim", "CLM-HH-0001");
    browser.click(".tab[data-view=\"ab\"]");
    type_into(&mut browser, "#ab-message", "Count slowly.");
    browser.click("#ab-send");
    browser.wait_for(
        "document.querySelectorAll('#ab-sides .error').length === 1 && document.querySelectorAll('#ab-sides .footer').length === 1",
        "one side refused, the other answered",
        WAIT,
    );
    let refused = browser.eval("document.querySelector('#ab-sides .error').textContent");
    assert!(
        refused
            .as_str()
            .unwrap()
            .starts_with("busy: 1 turns are running"),
        "the side says why: {refused}"
    );
    assert_eq!(
        browser.eval("document.getElementById('ab-diff').hidden"),
        true,
        "no diff without two answers"
    );
    assert_no_page_errors_but(&browser, &["503"]);
}

#[test]
fn the_history_view_charts_the_eval_runs_and_opens_one() {
    let server = Server::start(&excess_script(), &[]);
    for _ in 0..2 {
        let out = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", &server.runs).args([
            "eval",
            "suites/smoke.yaml",
            "--provider",
            "script",
            "--quiet",
        ]));
        assert!(out.code <= 1, "{}", out.stderr);
    }
    let mut browser = Browser::launch(1280, 800);
    open(&mut browser, &server);
    browser.click(".tab[data-view=\"history\"]");
    browser.wait_for(
        "document.querySelectorAll('#eval-list .open-eval').length === 2",
        "the two eval runs",
        WAIT,
    );
    let lines = browser.eval("document.querySelectorAll('#history-chart polyline').length");
    assert!(lines.as_u64().unwrap() >= 1, "a line per variant: {lines}");
    let first = browser.eval("document.querySelector('#eval-list .open-eval').textContent");
    assert!(first.as_str().unwrap().contains("smoke"), "{first}");
    browser.click("#eval-list .open-eval");
    browser.wait_for(
        "document.querySelector('#eval-detail table.summary') !== null",
        "the run's summary",
        WAIT,
    );
    screenshot(&mut browser, "serve-history.png");
    assert_no_page_errors(&browser);
}

/// Issue 70: at 1400×900 and 800×900 the page looks finished — the
/// composer docked at the bottom of the chat pane (it floated mid-column),
/// recent runs naming their question, suite and case and verdict (20
/// identical boxes), history charts with a legend above them, axes, dates
/// and every value on hover and the last in text, series that coincide
/// still both visible, and thumbs that look like buttons.
#[test]
fn the_page_keeps_its_layout_rules_at_two_widths() {
    let server = Server::start(&excess_script(), &[]);
    for _ in 0..2 {
        let out = run_command(promptlab().env("PROMPTLAB_RUNS_DIR", &server.runs).args([
            "eval",
            "suites/smoke.yaml",
            "--provider",
            "script",
            "--quiet",
        ]));
        assert!(out.code <= 1, "{}", out.stderr);
    }
    for (width, height) in [(1400, 900), (800, 900)] {
        let mut browser = Browser::launch(width, height);
        open(&mut browser, &server);
        type_into(
            &mut browser,
            "#message",
            "What is the excess on this claim?",
        );
        browser.click("#send");
        browser.wait_for(
            "document.querySelector('#transcript .footer .vote-up') !== null",
            "the answer's footer",
            WAIT,
        );
        browser.wait_for(
            "[...document.querySelectorAll('#run-list .question')].some(q => q.textContent === 'What is the excess on this claim?')",
            "the chat turn in recent runs, by its question",
            WAIT,
        );
        let docked = browser.eval(
            "(() => { const pane = document.getElementById('view-chat').getBoundingClientRect(); \
             const box = document.querySelector('#view-chat .composer').getBoundingClientRect(); \
             return { gap: pane.bottom - box.bottom, inside: box.bottom <= pane.bottom + 0.5, \
                      below: box.top >= document.getElementById('transcript').getBoundingClientRect().bottom - 0.5 }; })()",
        );
        assert!(
            docked["gap"].as_f64().unwrap() <= 120.0
                && docked["inside"] == true
                && docked["below"] == true,
            "{width}: the composer at the bottom of the chat pane: {docked}"
        );
        if width == 1400 {
            let fits = browser.eval(
                "document.getElementById('view-chat').getBoundingClientRect().bottom <= window.innerHeight",
            );
            assert_eq!(fits, true, "the chat pane ends within the window");
        }
        let runs = browser.eval(
            "[...document.querySelectorAll('#run-list .open-run')].map(b => ({ \
               question: b.querySelector('.question').textContent, \
               where: b.querySelector('.where').textContent, \
               verdict: b.querySelector('.verdict').textContent }))",
        );
        for run in runs.as_array().unwrap() {
            assert!(!run["question"].as_str().unwrap().is_empty(), "{run}");
            assert!(!run["verdict"].as_str().unwrap().is_empty(), "{run}");
        }
        assert!(
            runs.as_array().unwrap().iter().any(|r| r["where"]
                .as_str()
                .unwrap()
                .starts_with("smoke · ")
                && r["verdict"] == "pass"),
            "an eval turn says its suite, case and verdict: {runs}"
        );
        let vote = browser.eval(
            "(() => { const s = getComputedStyle(document.querySelector('#transcript .vote-up')); \
             return { border: parseFloat(s.borderTopWidth), background: s.backgroundColor, \
                      label: document.querySelector('#transcript .vote-up').getAttribute('aria-label') }; })()",
        );
        assert!(
            vote["border"].as_f64().unwrap() > 0.0
                && vote["background"] != "rgba(0, 0, 0, 0)"
                && vote["label"] == "thumbs up",
            "{vote}"
        );
        // The wide chat view is the docs' picture of the page.
        let name = if width >= 1400 {
            "serve.png".to_owned()
        } else {
            format!("serve-chat-{width}.png")
        };
        screenshot(&mut browser, &name);

        browser.click(".tab[data-view=\"history\"]");
        browser.wait_for(
            "document.querySelectorAll('#history-chart figure').length === 1",
            "the smoke suite's chart",
            WAIT,
        );
        let chart = browser.eval(
            "(() => { const f = document.querySelector('#history-chart figure'); const svg = f.querySelector('svg.chart'); \
             return { legendFirst: f.firstElementChild.tagName === 'FIGCAPTION', \
               yLabels: [...svg.querySelectorAll('.y-label')].map(t => t.textContent), \
               xLabels: svg.querySelectorAll('.x-label').length, \
               points: [...svg.querySelectorAll('.point title')].map(t => t.textContent), \
               dashes: [...svg.querySelectorAll('polyline')].map(l => l.getAttribute('stroke-dasharray')), \
               legend: f.querySelector('figcaption').textContent }; })()",
        );
        assert_eq!(chart["legendFirst"], true, "{chart}");
        assert_eq!(chart["yLabels"], json!(["0%", "50%", "100%"]), "{chart}");
        assert!(chart["xLabels"].as_u64().unwrap() >= 2, "{chart}");
        let points = chart["points"].as_array().unwrap();
        assert_eq!(points.len(), 4, "two runs × two variants: {chart}");
        assert!(
            points
                .iter()
                .all(|p| p.as_str().unwrap().ends_with("100.0%")),
            "every point says its value: {chart}"
        );
        let dashes = chart["dashes"].as_array().unwrap();
        assert_eq!(dashes.len(), 2);
        assert_ne!(
            dashes[0], dashes[1],
            "the variants' lines coincide here, and stay told apart"
        );
        assert!(
            chart["legend"]
                .as_str()
                .unwrap()
                .contains("default 100.0% last"),
            "{chart}"
        );
        screenshot(&mut browser, &format!("serve-history-{width}.png"));
        assert_no_page_errors(&browser);
    }
}

/// Issue 70: the editors say what the server will do with them, and ask
/// before a file replaces what a person has not saved.
#[test]
fn the_editors_ask_before_a_load_and_count_only_what_applies() {
    let dir = tempfile::tempdir().unwrap();
    let overrides_dir = dir.path().join("saved");
    let server = Server::start(
        &excess_script(),
        &["--overrides-dir", overrides_dir.to_str().unwrap()],
    );
    let mut browser = Browser::launch(1400, 900);
    open(&mut browser, &server);

    // A blanked editor is ignored by the server: so says its heading, and
    // the count leaves it out (it said "1 overridden").
    type_into(&mut browser, &editor("system.safety"), "   ");
    browser.wait_for(
        "document.querySelector('details[data-prompt-id=\"system.safety\"]').classList.contains('ignored')",
        "the blank editor marked ignored",
        WAIT,
    );
    assert_eq!(
        browser.eval("document.querySelector('details[data-prompt-id=\"system.safety\"]').classList.contains('overridden')"),
        false
    );
    assert_eq!(
        browser.eval("document.getElementById('override-count').textContent"),
        "(1 ignored)"
    );
    browser.click("details[data-prompt-id=\"system.safety\"] .reset");

    // An open editor has room, and no scroll bar inside the column's own
    // (it was ~310 px wide, scrolling inside a scrolling list).
    browser.click("details[data-prompt-id=\"system.safety\"] > summary");
    let room = browser.eval(&format!(
        "(() => {{ const a = document.querySelector({}); return {{ width: a.getBoundingClientRect().width, inner: a.scrollHeight - a.clientHeight }}; }})()",
        json!(editor("system.safety"))
    ));
    assert!(
        room["width"].as_f64().unwrap() >= 400.0 && room["inner"].as_f64().unwrap() <= 2.0,
        "{room}"
    );
    screenshot(&mut browser, "serve-editor-open-1400.png");
    browser.click("details[data-prompt-id=\"system.safety\"] > summary");

    type_into(&mut browser, &editor("system.base"), "Saved text.");
    type_into(&mut browser, "#save-name", "kept");
    browser.click("#save");
    browser.wait_for(
        "document.getElementById('save-result').classList.contains('saved')",
        "the save",
        WAIT,
    );
    // Saving again over the name asks in a person's words.
    browser.click("#save");
    browser.wait_for(
        "document.querySelector('#save-result .replace') !== null",
        "the question",
        WAIT,
    );
    let asked = browser.eval("document.getElementById('save-result').textContent");
    let asked = asked.as_str().unwrap();
    assert!(
        asked.starts_with("A saved file named “kept” already exists.")
            && !asked.contains("replace: true"),
        "{asked}"
    );
    browser.click("#save-result .keep");

    // Unsaved edits are not replaced by a load without asking.
    type_into(&mut browser, &editor("system.base"), "Unsaved work.");
    browser.wait_for(
        "[...document.getElementById('saved-files').options].some(o => o.value === 'kept.yaml')",
        "the saved file",
        WAIT,
    );
    type_into(&mut browser, "#saved-files", "kept.yaml");
    browser.click("#load-file");
    browser.wait_for(
        "document.querySelector('#save-result .load-anyway') !== null",
        "the question before loading",
        WAIT,
    );
    let value = format!(
        "document.querySelector({}).value",
        json!(editor("system.base"))
    );
    assert_eq!(
        browser.eval(&value),
        "Unsaved work.",
        "nothing replaced yet"
    );
    assert!(
        browser
            .eval("document.getElementById('save-result').textContent")
            .as_str()
            .unwrap()
            .contains("replaces your unsaved edits to system.base")
    );
    browser.click("#save-result .keep");
    assert_eq!(browser.eval(&value), "Unsaved work.", "kept");
    browser.click("#load-file");
    browser.wait_for(
        "document.querySelector('#save-result .load-anyway') !== null",
        "the question again",
        WAIT,
    );
    browser.click("#save-result .load-anyway");
    browser.wait_for(
        &format!("{value} === 'Saved text.'"),
        "the file loaded once asked",
        WAIT,
    );
    screenshot(&mut browser, "serve-editors-1400.png");
    assert_no_page_errors_but(&browser, &["409"]);
}
