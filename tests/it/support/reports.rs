//! Recording eval runs for the report tests, reading a report's embedded
//! data back, and reading the pages in the browser.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::browser::Browser;
use super::{promptlab, repo_root, run_command, write};

/// Reads the policy section, then answers that the excess is recorded there.
pub const OK_SCRIPT: &str = "turns:\n  - calls: [{name: get_claim_section, args: {section: policy}}]\n    usage: {inputTokens: 100, outputTokens: 10, cacheReadTokens: 50}\n  - text: The excess is recorded in the policy section.\n    usage: {inputTokens: 200, outputTokens: 20, cacheReadTokens: 150}\n";

/// A scripted model that answers `answer` in one call.
pub fn answer_script(answer: &str) -> String {
    let quoted = serde_json::to_string(answer).expect("a JSON string is YAML");
    format!(
        "turns:\n  - text: {quoted}\n    usage: {{inputTokens: 120, outputTokens: 12, cacheReadTokens: 0}}\n"
    )
}

/// A model call that fails: the turn ends in an error event.
pub const ERROR_SCRIPT: &str = "turns:\n  - error: the model is overloaded\n";

/// A two-variant suite over three claims, two samples each: `excess`
/// passes, `amount` (answered by `amount_script`) expects £350 and fails
/// unless the answer has it, `broken` errors.
pub fn suite(dir: &Path, amount_script: &str) -> PathBuf {
    write(dir, "ok.yaml", OK_SCRIPT);
    write(dir, "amount.yaml", amount_script);
    write(dir, "broken.yaml", ERROR_SCRIPT);
    let overrides = repo_root().join("overrides/plain-spoken.yaml");
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: rpt\nclaims: {{ids: [CLM-HH-0001, CLM-MTR-0002, CLM-PL-0005]}}\ndefaults: {{today: 2026-11-30}}\nrepeats: 2\n\
             variants:\n  - name: default\n  - name: plain-spoken\n    overrides: [{}]\n\
             cases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {{answerContains: excess, toolCalled: [get_claim_section]}}\n\
             \x20 - name: amount\n    message: How much is the excess?\n    script: amount.yaml\n    expect: {{answerContains: \"£350\"}}\n\
             \x20 - name: broken\n    claims: {{ids: [CLM-HH-0001]}}\n    message: Anything?\n    script: broken.yaml\n",
            overrides.display()
        ),
    )
}

/// Runs `suite` with the script provider into `runs`; the summary record
/// of `eval --format ndjson`.
pub fn record(suite: &Path, runs: &Path) -> Value {
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", runs)
            .arg("eval")
            .arg(suite)
            .args(["--provider", "script", "--format", "ndjson"]),
    );
    assert!(out.code == 0 || out.code == 1, "{}", out.stderr);
    let last = out.stdout.lines().last().expect("a summary line");
    let summary: Value = serde_json::from_str(last).expect("NDJSON");
    assert_eq!(summary["kind"], "summary", "{last}");
    summary
}

/// `promptlab report DIR -o FILE`, asserting it succeeds.
pub fn report(runs: &Path, out: &Path) {
    let result = run_command(promptlab().arg("report").arg(runs).arg("-o").arg(out));
    assert_eq!(result.code, 0, "{}", result.stderr);
}

/// The JSON block a report embeds (still escaped, which JSON reads back).
pub fn embedded(html: &str) -> Value {
    let start_tag = "<script type=\"application/json\" id=\"report-data\">";
    let start = html.find(start_tag).expect("the data block") + start_tag.len();
    let end = start + html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..end]).expect("the data is JSON")
}

/// Where the browser tests keep their screenshots (artifacts, not committed).
pub fn screenshot_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("report-screenshots")
        .join(name)
}

pub fn assert_no_page_errors(browser: &Browser) {
    assert!(
        browser.errors.is_empty(),
        "the page logged errors: {:#?}",
        browser.errors
    );
}

/// The page's text for a summary cell, and its raw value.
pub fn cell(browser: &mut Browser, variant: &str, key: &str) -> (String, String) {
    let value = browser.eval(&format!(
        "(() => {{ const row = [...document.querySelectorAll('#summary tr[data-variant]')].find(r => r.dataset.variant === {variant}); \
         const td = row && row.querySelector('td[data-key={key}]'); return td ? [td.textContent, td.dataset.value] : null; }})()",
        variant = json!(variant)
    ));
    let pair = value
        .as_array()
        .unwrap_or_else(|| panic!("no summary cell {key} for {variant}"));
    (
        pair[0].as_str().unwrap().to_string(),
        pair[1].as_str().unwrap().to_string(),
    )
}

pub fn percent(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Marks the matrix cell of `claim` so that it can be clicked by selector.
pub fn mark_cell_of(browser: &mut Browser, claim: &str) -> String {
    let found = browser.eval(&format!(
        "(() => {{ const td = [...document.querySelectorAll('td.cell')].find(td => td.parentElement.firstChild.textContent === {}); \
         if (!td) return false; document.querySelectorAll('#target').forEach(e => e.removeAttribute('id')); td.id = 'target'; return true; }})()",
        json!(claim)
    ));
    assert_eq!(found, json!(true), "a matrix cell for {claim}");
    "#target".to_string()
}
