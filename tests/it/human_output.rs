//! What people read, pinned: `prompts show`, `claims show` and `brief`, a
//! `chat` turn in the pretty view, an eval summary and `runs list`, as
//! insta snapshots with times, durations, turn ids and paths redacted by
//! insta's filters. A change to any of them shows up as a snapshot diff.

use crate::support;

use support::{promptlab, run_command, write};

/// Redactions for what changes from run to run.
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"/tmp/[^\s│┆]+", "[path]"),
        (r"ev-[0-9a-f]{10}", "[eval run]"),
        (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "[time]"),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
            "[turn id]",
        ),
        (r"\b[0-9a-f]{8}\b", "[turn]"),
        (r"\d+\.\d{2} s", "[n] s"),
        (r"\d+ ms", "[n] ms"),
    ]
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn prompts_show_claims_show_and_brief() {
    let prompts = run_command(promptlab().args([
        "prompts",
        "show",
        "--claim-id",
        "CLM-HH-0001",
        "--today",
        "2026-11-30",
    ]));
    assert_eq!(prompts.code, 0, "{}", prompts.stderr);
    snapshot("prompts_show", &prompts.stdout);
    let show =
        run_command(promptlab().args(["claims", "show", "CLM-HH-0001", "--section", "policy"]));
    assert_eq!(show.code, 0, "{}", show.stderr);
    snapshot("claims_show_policy", &show.stdout);
    let brief =
        run_command(promptlab().args(["claims", "brief", "CLM-MIN-0004", "--today", "2026-11-30"]));
    assert_eq!(brief.code, 0, "{}", brief.stderr);
    snapshot("claims_brief_minimal", &brief.stdout);
}

#[test]
fn a_chat_turn_in_the_pretty_view() {
    let out = run_command(promptlab().args([
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--provider",
        "script",
        "--script",
        "tests/data/scripts/excess.yaml",
        "--format",
        "pretty",
        "--no-record",
        "--today",
        "2026-11-30",
        "What is the excess?",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    snapshot("chat_pretty", &out.stdout);
}

#[test]
fn an_eval_summary_and_runs_list() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ok.yaml",
        "turns:\n  - text: The excess is £350.\n    usage: {inputTokens: 100, outputTokens: 10, cacheReadTokens: 40}\n",
    );
    write(
        dir.path(),
        "no.yaml",
        "turns:\n  - text: I could not find it.\n",
    );
    let suite = write(
        dir.path(),
        "suite.yaml",
        "name: pinned\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\ndefaults: {today: 2026-11-30}\ncases:\n  - name: excess\n    message: What is the excess?\n    script: ok.yaml\n    expect: {answerContains: £350}\n  - name: missing\n    message: What is the excess?\n    script: no.yaml\n    expect: {answerContains: £350}\n",
    );
    // One eval per width, each into its own runs folder, so that the
    // listing below sees one run of each turn.
    for columns in [80, 120] {
        let eval = run_command(
            promptlab()
                .env("COLUMNS", columns.to_string())
                .env(
                    "PROMPTLAB_RUNS_DIR",
                    dir.path().join(format!("runs-{columns}")),
                )
                .args(["eval", "--provider", "script", "-j", "1", "--quiet"])
                .arg(&suite),
        );
        assert_eq!(eval.code, 1, "{}", eval.stderr);
        assert_tables_fit(&eval.stdout, columns);
        snapshot(&format!("eval_summary_{columns}"), &eval.stdout);
    }
    // The listing factors out what all rows share, the time and latency
    // included: the turns' start times are moved into one second, in the
    // order they ran, and their durations made one, so that its layout does
    // not depend on whether the two turns ran across a second's boundary or
    // took different tenths of a second on a loaded machine.
    let started = regex::Regex::new(r#""startedAt":"([^"]*)""#).unwrap();
    let took = regex::Regex::new(r#""totalMs":[0-9]+"#).unwrap();
    let mut logs: Vec<(
        chrono::DateTime<chrono::FixedOffset>,
        std::path::PathBuf,
        String,
    )> = support::run_logs_under(&dir.path().join("runs-120"))
        .into_iter()
        .map(|log| {
            let text = std::fs::read_to_string(&log).unwrap();
            let at = chrono::DateTime::parse_from_rfc3339(&started.captures(&text).unwrap()[1]);
            (at.unwrap(), log, text)
        })
        .collect();
    logs.sort();
    for (n, (_, log, text)) in logs.iter().enumerate() {
        let pinned = format!(r#""startedAt":"2026-11-30T12:00:00.{n}00000000Z""#);
        let text = started.replace_all(text, pinned.as_str());
        let text = took.replace_all(&text, r#""totalMs":20"#);
        std::fs::write(log, text.as_bytes()).unwrap();
    }
    for columns in [80, 120] {
        let list = run_command(
            promptlab()
                .env("COLUMNS", columns.to_string())
                .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs-120"))
                .args(["runs", "list", "--claim", "CLM-HH-0001"]),
        );
        assert_eq!(list.code, 0, "{}", list.stderr);
        assert_tables_fit(&list.stdout, columns);
        snapshot(&format!("runs_list_eval_{columns}"), &list.stdout);
    }
}

/// Every table line of `text` within `columns` characters.
fn assert_tables_fit(text: &str, columns: usize) {
    for line in text.lines() {
        if line.starts_with(['┌', '│', '╞', '└']) {
            assert!(line.chars().count() <= columns, "{columns}: {line}\n{text}");
        }
    }
}

#[test]
fn prompts_list_fits_80_and_120_columns() {
    for columns in [80, 120] {
        let list = run_command(
            promptlab()
                .env("COLUMNS", columns.to_string())
                .args(["prompts", "list"]),
        );
        assert_eq!(list.code, 0, "{}", list.stderr);
        assert_tables_fit(&list.stdout, columns);
        assert!(list.stdout.contains("capability.draft_customer_update"));
        snapshot(&format!("prompts_list_{columns}"), &list.stdout);
    }
}

/// `claims list` and `runs list` on an 80- and a 120-column terminal (set by
/// `COLUMNS`, as a terminal of unknown size falls back to 80): ids, times and
/// fingerprints whole, free text cut with `…`, dropped columns named.
#[test]
fn tables_fit_80_and_120_columns() {
    for columns in ["80", "120"] {
        let claims = run_command(promptlab().env("COLUMNS", columns).args(["claims", "list"]));
        assert_eq!(claims.code, 0, "{}", claims.stderr);
        let runs = run_command(promptlab().env("COLUMNS", columns).args([
            "--runs-dir",
            "runs/examples",
            "runs",
            "list",
        ]));
        assert_eq!(runs.code, 0, "{}", runs.stderr);
        let width: usize = columns.parse().unwrap();
        assert_tables_fit(&claims.stdout, width);
        assert_tables_fit(&runs.stdout, width);
        snapshot(&format!("claims_list_{columns}"), &claims.stdout);
        snapshot(&format!("runs_list_examples_{columns}"), &runs.stdout);
    }
}

#[test]
fn a_terminal_of_unknown_width_gets_80_columns() {
    let out = run_command(promptlab().env_remove("COLUMNS").args(["claims", "list"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let widest = out
        .stdout
        .lines()
        .filter(|line| line.starts_with(['┌', '│', '╞', '└']))
        .map(|line| line.chars().count())
        .max()
        .unwrap();
    assert!(widest <= 80, "{widest}\n{}", out.stdout);
    assert!(out.stdout.contains("CLM-AUT-0012"));
}
