//! `casesFrom:`: a question bank in CSV (spreadsheet quoting, a UTF-8 BOM)
//! or JSONL becomes cases merged with the suite's defaults; a bad file names
//! the file, row and column; the readers never panic.

use crate::support;

use std::path::{Path, PathBuf};

use promptlab::eval::cases_from::parse_cases;
use promptlab::eval::suite::ToolExpectation;
use promptlab::eval::{LoadedSuite, SuiteError};
use promptlab::prompts::PromptRegistry;
use proptest::prelude::*;
use serde_json::json;
use support::{promptlab, run_command};

fn suite_with(dir: &Path, bank_name: &str, bank: &str, cases: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("banks")).unwrap();
    std::fs::write(dir.join("banks").join(bank_name), bank).unwrap();
    let path = dir.join("suite.yaml");
    std::fs::write(
        &path,
        format!(
            "claims: {{ids: [CLM-HH-0001]}}\ndefaults:\n  expect:\n    answerNotContains: [as an AI]\ncasesFrom: banks/{bank_name}\n{cases}"
        ),
    )
    .unwrap();
    path
}

fn load(path: &Path) -> Result<LoadedSuite, SuiteError> {
    LoadedSuite::load(path, PromptRegistry::embedded())
}

fn error(path: &Path) -> String {
    load(path).expect_err("the suite is refused").to_string()
}

/// Commas, doubled quotes and a newline inside quoted cells, after a BOM.
const BANK: &str = "\u{feff}name,message,tags,expect.answerContains,expect.toolCalled,expect.maxRounds\n\
excess,\"What is the excess, and has it been paid?\",money|policy,£350,\"{\"\"name\"\":\"\"get_claim_section\"\",\"\"args\"\":{\"\"section\"\":\"\"policy\"\"}}\",3\n\
multi,\"First line\nsecond line with \"\"quotes\"\"\",,,read_document|get_schedule,\n";

#[test]
fn a_csv_bank_becomes_cases_merged_with_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = suite_with(
        dir.path(),
        "bank.csv",
        BANK,
        "cases:\n  - {name: inline, message: Hi}\n",
    );
    let suite = load(&path).unwrap().suite;
    let names: Vec<&str> = suite.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["inline", "excess", "multi"], "inline cases first");
    let excess = &suite.cases[1];
    assert_eq!(
        excess.message.as_deref(),
        Some("What is the excess, and has it been paid?")
    );
    assert_eq!(excess.tags, ["money", "policy"]);
    let settings = excess.settings(&suite.defaults);
    assert_eq!(settings.expect.answer_contains.0, ["£350"]);
    assert_eq!(
        settings.expect.answer_not_contains.0,
        ["as an AI"],
        "defaults merged"
    );
    assert_eq!(settings.expect.max_rounds, Some(3));
    assert_eq!(
        settings.expect.tool_called.0,
        [ToolExpectation::WithArgs {
            name: "get_claim_section".into(),
            args: Some(json!({"section": "policy"}))
        }]
    );
    let multi = &suite.cases[2];
    assert_eq!(
        multi.message.as_deref(),
        Some("First line\nsecond line with \"quotes\"")
    );
    assert!(multi.tags.is_empty());
    let tools: Vec<&str> = multi
        .expect
        .tool_called
        .0
        .iter()
        .map(|t| t.name())
        .collect();
    assert_eq!(tools, ["read_document", "get_schedule"]);
}

#[test]
fn a_spreadsheets_emptied_rows_are_no_cases() {
    let dir = tempfile::tempdir().unwrap();
    let bank = "name,message,tags\n,,\nexcess,What is the excess?,\n , ,\n,,\n";
    let path = suite_with(dir.path(), "bank.csv", bank, "");
    let suite = load(&path).unwrap().suite;
    let names: Vec<&str> = suite.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["excess"]);
    // A row with something in it is still checked.
    let path = suite_with(
        dir.path(),
        "bank.csv",
        "name,message\n,What is the excess?\n",
        "",
    );
    assert!(error(&path).contains("row 2"), "{}", error(&path));
}

#[test]
fn a_jsonl_bank_becomes_cases() {
    let dir = tempfile::tempdir().unwrap();
    let bank = "{\"name\": \"a\", \"message\": \"What is the excess?\", \"tags\": [\"money\"], \"expect\": {\"clientActionNot\": {\"action\": \"navigate\"}}}\n\n\
                {\"name\": \"b\", \"history\": [{\"role\": \"user\", \"text\": \"Hello\"}]}\n";
    let path = suite_with(dir.path(), "bank.jsonl", bank, "");
    let suite = load(&path).unwrap().suite;
    assert_eq!(suite.cases.len(), 2);
    assert_eq!(suite.cases[0].tags, ["money"]);
    assert_eq!(
        suite.cases[0].expect.client_action_not.0,
        [json!({"action": "navigate"})]
    );
    assert!(suite.cases[1].history.is_some());
}

#[test]
fn bad_rows_name_the_file_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let at = |bank: &str, name: &str| {
        let path = suite_with(dir.path(), name, bank, "");
        error(&path)
    };
    let prefix = |name: &str| {
        format!(
            "invalid suite `{}`: field `casesFrom`: `banks/{name}`: ",
            dir.path().join("suite.yaml").display()
        )
    };
    assert_eq!(
        at("name,mesage\na,Hi\n", "typo.csv"),
        format!(
            "{}row 1, column `mesage`: unknown field; did you mean `message`?",
            prefix("typo.csv")
        )
    );
    assert_eq!(
        at("name,expect.answerContain\na,Hi\n", "typo2.csv"),
        format!(
            "{}row 1, column `expect.answerContain`: unknown field; did you mean `expect.answerContains`?",
            prefix("typo2.csv")
        )
    );
    assert_eq!(
        at(
            "name,message,expect.maxRounds\na,Hi,2\nb,Hi,many\n",
            "type.csv"
        ),
        format!(
            "{}row 3, column `expect.maxRounds`: invalid type: string \"many\", expected u32",
            prefix("type.csv")
        )
    );
    assert_eq!(
        at("name,message\na,Hi,extra\n", "cells.csv"),
        format!(
            "{}row 2: 3 cells where the header has 2",
            prefix("cells.csv")
        )
    );
    assert_eq!(
        at("name,message\na,Hi\na,Again\n", "dup.csv"),
        format!(
            "{}row 3, column `name`: `a` is used twice",
            prefix("dup.csv")
        )
    );
    assert_eq!(
        at("{\"name\": \"a\", \"mesage\": \"Hi\"}\n", "typo.jsonl"),
        format!(
            "{}row 1, column `mesage`: unknown field; did you mean `message`?",
            prefix("typo.jsonl")
        )
    );
    assert!(
        at(
            "{\"name\": \"a\", \"message\": \"Hi\"}\nnot json\n",
            "bad.jsonl"
        )
        .starts_with(&format!(
            "{}row 2: not a JSON object: ",
            prefix("bad.jsonl")
        ))
    );
    assert_eq!(
        at("message\nHi\n", "noname.csv"),
        format!(
            "{}row 1: the header needs a `name` column",
            prefix("noname.csv")
        )
    );
}

#[test]
fn an_inline_case_and_a_row_of_the_same_name_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = suite_with(
        dir.path(),
        "b.csv",
        "name,message\nsame,Hi\n",
        "cases:\n  - {name: same, message: Hi}\n",
    );
    assert!(error(&path).ends_with("`banks/b.csv`: row 2, column `name`: `same` is used twice"));
}

#[test]
fn a_missing_bank_is_named_and_eval_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("suite.yaml");
    std::fs::write(&path, "casesFrom: nowhere.csv\n").unwrap();
    let out = run_command(promptlab().args(["eval", "--list"]).arg(&path));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("field `casesFrom`: `nowhere.csv`: "),
        "{}",
        out.stderr
    );
}

#[test]
fn a_bank_runs_offline_and_its_tags_are_summarised() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ok.yaml"),
        "turns:\n  - text: The excess is £350.\n",
    )
    .unwrap();
    let bank = "name,message,script,tags,expect.answerContains\n\
                ok,What is the excess?,ok.yaml,money,£350\n\
                wrong,What is the excess?,ok.yaml,money|strict,£999\n";
    let path = suite_with(dir.path(), "bank.csv", bank, "");
    // `script:` cells are relative to the suite file, as inline ones are.
    let out = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", dir.path().join("runs"))
            .args([
                "eval",
                "--provider",
                "script",
                "--by",
                "tag",
                "--markdown-summary",
            ])
            .arg(dir.path().join("summary.md"))
            .arg(&path),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.contains("By tag:\n"), "{}", out.stdout);
    let line = |tag: &str| {
        out.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(tag))
            .unwrap_or_else(|| panic!("no {tag} line: {}", out.stdout))
            .to_string()
    };
    assert!(
        line("money").contains("1/2 passed   50.0%"),
        "{}",
        line("money")
    );
    assert!(
        line("strict").contains("0/1 passed    0.0%"),
        "{}",
        line("strict")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn the_readers_never_panic(text in "\\PC{0,200}", jsonl in any::<bool>()) {
        let _ = parse_cases(&text, jsonl);
    }

    #[test]
    fn csv_shaped_input_never_panics(
        header in prop::sample::subsequence(vec!["name", "message", "tags", "expect.toolCalled", "expect.maxRounds", "history", "claims"], 1..7),
        cells in prop::collection::vec("[a-z|{}\\[\\]\",0-9 \n]{0,12}", 0..30),
    ) {
        let mut text = header.join(",");
        text.push('\n');
        for (index, cell) in cells.iter().enumerate() {
            text.push_str(cell);
            text.push(if index % header.len() == header.len() - 1 { '\n' } else { ',' });
        }
        let _ = parse_cases(&text, false);
    }
}

/// Cells a spreadsheet makes hard: commas, quotes, newlines, `|` lists,
/// JSON, non-ASCII.
const HARD_CELLS: [(&str, &str); 4] = [
    ("comma", "Excess, deductible, or both?"),
    ("quotes", "She said \"not 2009\", then 'it was 2019'"),
    ("newline", "Line one\r\nLine two\nLine three"),
    ("unicode", "Café £350 — déjà vu ✓"),
];

#[test]
fn a_bank_written_by_pythons_csv_module_in_excel_dialect_with_a_bom_reads_back() {
    let Some(python) = support::references::python() else {
        return;
    };
    // Python's csv module writes as Excel does; `utf-8-sig` adds the BOM
    // Excel puts before "CSV UTF-8".
    let program = r#"
import csv, json, sys
rows = json.load(sys.stdin)
with open(sys.argv[1], "w", newline="", encoding="utf-8-sig") as f:
    w = csv.writer(f, dialect="excel")
    w.writerow(["name", "message", "tags", "expect.toolCalled"])
    for name, message in rows:
        w.writerow([name, message, "a|b", json.dumps({"name": "get_claim_section", "args": {"section": "policy"}})])
"#;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("banks")).unwrap();
    let bank = dir.path().join("banks/bank.csv");
    let rows = serde_json::to_vec(&HARD_CELLS).unwrap();
    let said = support::references::run_reference(
        &python,
        &["-c".as_ref(), program.as_ref(), bank.as_os_str()],
        &rows,
    );
    assert!(said.ok, "{}", said.stderr);
    assert!(
        std::fs::read(&bank).unwrap().starts_with(b"\xef\xbb\xbf"),
        "a BOM"
    );
    let path = dir.path().join("suite.yaml");
    std::fs::write(&path, "casesFrom: banks/bank.csv\n").unwrap();
    let suite = load(&path).unwrap().suite;
    assert_eq!(suite.cases.len(), HARD_CELLS.len());
    for (case, (name, message)) in suite.cases.iter().zip(HARD_CELLS) {
        assert_eq!(case.name, name);
        assert_eq!(case.message.as_deref(), Some(message));
        assert_eq!(case.tags, ["a", "b"]);
        assert_eq!(
            case.expect.tool_called.0,
            [ToolExpectation::WithArgs {
                name: "get_claim_section".into(),
                args: Some(json!({"section": "policy"}))
            }]
        );
    }
}

#[test]
fn tags_and_client_action_not_are_checked_like_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let write = |body: &str| {
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, body).unwrap();
        error(&path)
    };
    assert!(
        write("cases:\n  - {name: a, message: Hi, tags: [good, has space]}\n").ends_with(
            "field `cases[0].tags`: `has space`: use letters, digits, `-`, `_` and `.` only"
        )
    );
    assert!(
        write("cases:\n  - {name: a, message: Hi, expect: {clientActionNot: {panel: policy}}}\n")
            .ends_with("field `cases[0].expect.clientActionNot[0]`: needs an `action` (highlight_panel or navigate)")
    );
    assert!(write("cases:\n  - {name: a, message: Hi, tags: nope}\n").contains("cases[0].tags"));
}

#[test]
fn a_rule_a_row_breaks_is_said_by_its_row_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bank = "name,message,expect.toolCalled,capability\nok,Hi,,\nbad,Hi,get_claim_sectoin,\nworse,Hi,,nope\n";
    let path = suite_with(dir.path(), "rules.csv", bank, "");
    assert!(
        error(&path).ends_with(
            "field `casesFrom`: `banks/rules.csv`: row 3, column `expect.toolCalled`: unknown tool `get_claim_sectoin`; did you mean `get_claim_section`?"
        ),
        "{}",
        error(&path)
    );
    let bank = "name,message,capability\nok,Hi,\nworse,Hi,nope\n";
    let path = suite_with(dir.path(), "cap.csv", bank, "");
    assert!(
        error(&path)
            .ends_with("`banks/cap.csv`: row 3, column `capability`: unknown capability `nope`"),
        "{}",
        error(&path)
    );
}

/// A key given twice in a row's JSON would keep only its last value (serde's
/// "later wins"), silently dropping an expectation: it is refused, by the
/// documents' one rule, naming the row, the column and the key.
#[test]
fn a_key_given_twice_in_a_rows_json_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let at = |bank: &str, name: &str| {
        let path = suite_with(dir.path(), name, bank, "");
        error(&path)
    };
    let prefix = |name: &str| {
        format!(
            "invalid suite `{}`: field `casesFrom`: `banks/{name}`: ",
            dir.path().join("suite.yaml").display()
        )
    };
    let cases = [
        (
            "{\"name\":\"a\",\"message\":\"hi\",\"expect\":{\"answerContains\":\"zzz\",\"answerContains\":\"excess\"}}\n",
            "inner.jsonl",
            "row 1, column `expect`: duplicate mapping key: answerContains",
        ),
        (
            "{\"name\":\"a\",\"message\":\"hi\"}\n{\"name\":\"b\",\"message\":\"hi\",\"expect\":{\"noError\":true},\"expect\":{\"noError\":false}}\n",
            "outer.jsonl",
            "row 2: duplicate mapping key: expect",
        ),
        (
            "name,message,expect.toolCalled\na,hi,\"{\"\"name\"\":\"\"read_document\"\",\"\"name\"\":\"\"get_claim_section\"\"}\"\n",
            "tool.csv",
            "row 2, column `expect.toolCalled`: duplicate mapping key: name",
        ),
        (
            "name,message,claims\na,hi,\"{\"\"ids\"\":[\"\"CLM-HH-0001\"\"],\"\"ids\"\":[\"\"CLM-MTR-0002\"\"]}\"\n",
            "claims.csv",
            "row 2, column `claims`: duplicate mapping key: ids",
        ),
        (
            "name,message,expect.toolCalled\na,hi,\"read_document|{\"\"name\"\":\"\"get_schedule\"\",\"\"args\"\":{\"\"x\"\":1,\"\"x\"\":2}}\"\n",
            "item.csv",
            "row 2, column `expect.toolCalled`: duplicate mapping key: x",
        ),
    ];
    for (bank, name, said) in cases {
        assert_eq!(at(bank, name), format!("{}{said}", prefix(name)));
    }
}

/// `excess|` or `|` in a list cell is a slip: an empty item is refused
/// rather than dropped (a cell of `|` alone used to check nothing).
#[test]
fn an_empty_item_in_a_list_cell_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for cell in ["|", "excess|", "a||b", " | excess"] {
        let bank = format!("name,message,expect.answerContains\na,hi,{cell}\n");
        let path = suite_with(dir.path(), "list.csv", &bank, "");
        assert!(
            error(&path).ends_with(
                "`banks/list.csv`: row 2, column `expect.answerContains`: an empty item in the `|` list"
            ),
            "{cell}: {}",
            error(&path)
        );
    }
}

/// A blank text from a row is refused as an inline one is, by its row.
#[test]
fn a_blank_text_expectation_in_a_row_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let at = |bank: &str, name: &str| {
        let path = suite_with(dir.path(), name, bank, "");
        error(&path)
    };
    assert!(
        at(
            "{\"name\":\"a\",\"message\":\"hi\",\"expect\":{\"answerContains\":\"\"}}\n",
            "blank.jsonl"
        )
        .ends_with("`banks/blank.jsonl`: row 1, column `expect.answerContains`: the text is blank")
    );
    assert!(
        at(
            "name,message,expect.answerMatches\na,hi,\"[\"\"x\"\", \"\" \"\"]\"\n",
            "blank.csv"
        )
        .ends_with("`banks/blank.csv`: row 2, column `expect.answerMatches`: the pattern is blank")
    );
}

#[test]
fn eval_exits_2_on_a_duplicate_key_in_a_bank() {
    let dir = tempfile::tempdir().unwrap();
    let bank = "{\"name\":\"a\",\"message\":\"hi\",\"expect\":{\"answerContains\":\"zzz\",\"answerContains\":\"excess\"}}\n";
    let path = suite_with(dir.path(), "bank.jsonl", bank, "");
    let out = run_command(promptlab().args(["eval", "--list"]).arg(&path));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "`banks/bank.jsonl`: row 1, column `expect`: duplicate mapping key: answerContains"
        ),
        "{}",
        out.stderr
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Rows and cells built of repeated keys, `|` and blanks never panic.
    #[test]
    fn rows_with_repeated_keys_never_panic(
        keys in prop::collection::vec(prop::sample::select(vec!["name", "message", "expect", "answerContains", "ids", "x"]), 0..6),
        values in prop::collection::vec("[a-z|\" ]{0,6}", 6),
    ) {
        let object: Vec<String> = keys
            .iter()
            .zip(&values)
            .map(|(key, value)| format!("{key:?}: {value:?}"))
            .collect();
        let object = format!("{{{}}}", object.join(", "));
        let _ = parse_cases(&format!("{{\"name\": \"a\", \"expect\": {object}}}\n"), true);
        let cell = object.replace('"', "\"\"");
        for column in ["claims", "expect.toolCalled", "expect.answerContains"] {
            let _ = parse_cases(&format!("name,{column}\na,\"{cell}\"\nb,\"{}|\"\n", values[0]), false);
        }
    }
}

/// Issue 61: `casesFrom: .env` printed the file's first line, the
/// process's own key, as a column name. A header naming no case field is
/// named by position, and every message goes through the redaction of
/// the process's secrets (a known column beside the key's line quotes it).
#[test]
fn a_file_of_secrets_as_cases_is_named_never_quoted() {
    let key = "AIzaSy-issue61-dotenv-0123456789";
    let dir = tempfile::tempdir().unwrap();
    for (bank, expected) in [
        (
            format!("GEMINI_API_KEY={key}\nOTHER=1\n"),
            "row 1: the header names no case field (1 column(s), none of them one): not a cases CSV",
        ),
        (
            format!("name,{key}\na,b\n"),
            "row 1, column `[redacted]`: unknown field",
        ),
    ] {
        let path = suite_with(dir.path(), ".env", &bank, "");
        let out = run_command(
            promptlab()
                .env("GEMINI_API_KEY", key)
                .args(["eval", "--list"])
                .arg(&path),
        );
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains(expected), "{}", out.stderr);
        for piece in [key, &key[..16], &key[16..]] {
            assert!(!out.stderr.contains(piece), "{}", out.stderr);
            assert!(!out.stdout.contains(piece), "{}", out.stdout);
        }
    }
}
