//! `eval --markdown-summary` and `compare --format markdown` as GitHub
//! shows them: real reports of the binary, holding a model answer full of
//! markup, are rendered by npm `markdown-it` (CommonMark + GFM tables, raw
//! HTML allowed, as on GitHub), and no raw HTML from the answer or the
//! suite survives, no `|` splits a table cell, and nothing after an
//! unclosed `<!--` is hidden. The reference comes from `.ci/install-references`; a
//! missing one skips outside CI.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::references::{node_script, run_node};
use support::{promptlab, run_command, write};

/// The answer every hostile turn gives.
const ANSWER: &str = "The excess <img src=x onerror=alert(1)> | pipe <!-- hide ``code`` *em* [link](http://x) $x$ \\u009b31m";

/// What `markdown-check.mjs` made of a file, or `None` outside CI without it.
fn render(file: &Path) -> Option<Value> {
    let script = node_script("markdown-check.mjs", "markdown-it")?;
    let said = run_node(&script, &[file.as_os_str()], b"");
    assert!(said.ok, "{}", said.stderr);
    Some(serde_json::from_str(&said.stdout).expect("markdown-check.mjs prints JSON"))
}

/// The checks every report must pass; `allowed` is the raw HTML we write.
fn assert_safe(rendered: &Value, allowed: fn(&str) -> bool) {
    let raw: Vec<&str> = rendered["rawHtml"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        raw.iter().all(|html| allowed(html)),
        "raw HTML survived: {raw:?}"
    );
    let html = rendered["html"].as_str().unwrap();
    for tag in ["<img", "<!--"] {
        assert!(!html.contains(tag), "{tag} in the rendered page:\n{html}");
    }
    let text = rendered["text"].as_str().unwrap();
    for literal in [
        "<img src=x onerror=alert(1)>",
        "| pipe <!-- hide ``code`` *em* [link](",
        "$x$",
    ] {
        assert!(
            text.contains(literal),
            "{literal:?} is not shown as text:\n{text}"
        );
    }
    assert!(!text.contains('\u{9b}'), "a C1 control reached the page");
    // A `|` that split a cell would lose the rest of the text (GFM drops
    // cells past the header's), which the check above sees.
    assert!(
        !rendered["rows"].as_array().unwrap().is_empty(),
        "the report has its tables"
    );
}

fn hostile_suite(dir: &Path, expect: &str) -> std::path::PathBuf {
    write(
        dir,
        "hostile.yaml",
        &format!("turns:\n  - text: \"{ANSWER}\"\n"),
    );
    write(dir, "ok.yaml", "turns:\n  - text: The excess is £350.\n");
    write(
        dir,
        "suite.yaml",
        &format!(
            "name: hostile\nclaims: {{ids: [CLM-HH-0001, CLM-MTR-0002]}}\nvariants:\n  - name: default\n  - name: odd\n    prompts: {{system.base: Be brief., \"system.bse<img src=x>|<!--\": typo}}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: {expect}\n    expect: {{answerContains: £350}}\n"
        ),
    )
}

fn eval(dir: &Path, suite: &Path, runs: &str, extra: &[&str]) {
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.join(runs))
            .args(["eval", "--provider", "script", "--quiet"])
            .args(extra)
            .arg(suite),
    );
    assert!(out.code <= 1, "{}{}", out.stdout, out.stderr);
}

#[test]
fn the_markdown_summary_shows_hostile_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let suite = hostile_suite(dir.path(), "hostile.yaml");
    let summary = dir.path().join("summary.md");
    let summary_arg = summary.to_str().unwrap();
    eval(
        dir.path(),
        &suite,
        "runs",
        &["--markdown-summary", summary_arg],
    );
    let Some(rendered) = render(&summary) else {
        return;
    };
    assert_safe(&rendered, |_| false);
    let text = rendered["text"].as_str().unwrap();
    assert!(
        text.contains("odd · CLM-MTR-0002 · excess #1"),
        "the last failure, after every `<!--`, is still shown:\n{text}"
    );
    assert!(text.contains("system.bse<img src=x>|<!--"), "{text}");
}

#[test]
fn compare_markdown_shows_hostile_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let suite = hostile_suite(dir.path(), "ok.yaml");
    eval(dir.path(), &suite, "before", &[]);
    let text = std::fs::read_to_string(&suite)
        .unwrap()
        .replace("script: ok.yaml", "script: hostile.yaml");
    std::fs::write(&suite, text).unwrap();
    eval(dir.path(), &suite, "after", &[]);
    let out = run_command(
        promptlab()
            .arg("compare")
            .arg(dir.path().join("before"))
            .arg(dir.path().join("after"))
            .args(["--format", "markdown"]),
    );
    assert!(out.code <= 1, "{}", out.stderr);
    let report = write(dir.path(), "compare.md", &out.stdout);
    let Some(rendered) = render(&report) else {
        return;
    };
    // Ours: each changed pair folded in <details>, its label HTML-escaped.
    assert_safe(&rendered, |html| {
        html == "</details>\n"
            || html
                .strip_prefix("<details><summary>")
                .and_then(|rest| rest.strip_suffix("</summary>\n"))
                .is_some_and(|label| !label.contains(['<', '>']))
    });
    assert!(
        rendered["html"]
            .as_str()
            .unwrap()
            .matches("<details>")
            .count()
            >= 2,
        "{}",
        out.stdout
    );
}

#[test]
fn the_check_sees_raw_html_and_split_rows() {
    // What the reports wrote before issue #27, rendered by the same reference.
    let dir = tempfile::tempdir().unwrap();
    let old = write(
        dir.path(),
        "old.md",
        &format!(
            "| turn | failures |\n|---|---|\n| a | {} |\n",
            ANSWER.replace("\\u009b", "")
        ),
    );
    let Some(rendered) = render(&old) else {
        return;
    };
    assert!(
        !rendered["rawHtml"].as_array().unwrap().is_empty(),
        "{rendered}"
    );
    let text = rendered["text"].as_str().unwrap();
    assert!(!text.contains("pipe"), "the pipe split the cell: {text}");
}

#[test]
fn the_tag_table_counts_a_tag_s_errored_turns() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ok.yaml",
        "turns:\n  - text: The excess is £350.\n",
    );
    write(dir.path(), "broken.yaml", "turns:\n  - error: overloaded\n");
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: tagged\nrepeats: 2\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ncases:\n\
         \x20 - {name: fine, tags: [steady], message: What is the excess?, script: ok.yaml, expect: {answerContains: £350}}\n\
         \x20 - {name: down, tags: [flaky], message: What is the excess?, script: broken.yaml, expect: {answerContains: £350}}\n",
    );
    let summary = dir.path().join("summary.md");
    eval(
        dir.path(),
        &suite,
        "runs",
        &["--markdown-summary", summary.to_str().unwrap()],
    );
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.contains(
            "| tag | variant | passed | errors | pass rate (95% CI) |\n|---|---|---|---|---|\n"
        ),
        "{markdown}"
    );
    assert!(
        markdown.contains("| `flaky` | default | 0/0 | 4 | 0.0% (0–49%) |\n"),
        "the 4 errored turns are counted, not a bare 0/0:\n{markdown}"
    );
    assert!(
        markdown.contains("| `steady` | default | 4/4 | 0 | 100.0% ("),
        "{markdown}"
    );
}
