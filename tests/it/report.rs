//! `promptlab report` and `compare --format html` from the command line:
//! the page's embedded data against the eval summary, hostile text kept
//! as data, and bad input refused with exit 2 and a precise message. The
//! pages themselves are opened in Chromium by `tests/it/report_browser.rs`.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::reports::{OK_SCRIPT, answer_script, embedded, record, report, suite};
use support::{promptlab, run_command, write};

const HOSTILE: &str = "</script><script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"><!-- <b>bold</b> & more";

fn html_of(path: &Path) -> String {
    std::fs::read_to_string(path).expect("the report was written")
}

#[test]
fn the_report_holds_every_turn_and_variant_in_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let summary = record(
        &suite(dir.path(), &answer_script("I could not find it.")),
        &runs,
    );
    let out = dir.path().join("report.html");
    report(&runs, &out);
    let html = html_of(&out);
    let data = embedded(&html);
    assert_eq!(
        data["turns"].as_array().unwrap().len(),
        summary["turns"].as_u64().unwrap() as usize
    );
    // The per-variant numbers are one function's (`runs::tally`) for both
    // the page and the eval; the mixed-folder test below checks them once.
    assert_eq!(data["variants"].as_array().unwrap().len(), 2);
    // One file: nothing fetched from anywhere.
    for needle in ["<link", " src=", "http://", "https://", "@import"] {
        assert!(!html.contains(needle), "the page refers to `{needle}`");
    }
    // The transcript is all there: lookups with full results, the prompt's blocks.
    let turn = data["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| !t["lk"].as_array().unwrap().is_empty())
        .unwrap();
    let s = data["s"].as_array().unwrap();
    let lookup = &turn["lk"][0];
    assert_eq!(s[lookup[1].as_u64().unwrap() as usize], "get_claim_section");
    assert!(
        s[lookup[4].as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .len()
            > 20
    );
    assert!(
        turn["b"].as_array().unwrap().len() >= 3,
        "the prompt blocks are embedded"
    );
}

#[test]
fn hostile_text_stays_data_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    record(&suite(dir.path(), &answer_script(HOSTILE)), &runs);
    let out = dir.path().join("report.html");
    report(&runs, &out);
    let html = html_of(&out);
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own two script elements close"
    );
    assert!(
        !html.contains("onerror=\""),
        "the model's markup is not in the page as markup"
    );
    assert!(!html.contains("<!-- <b>"));
    let data = embedded(&html);
    let strings: Vec<&str> = data["s"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        strings.contains(&HOSTILE),
        "the answer is kept exactly, as data"
    );
    // The claim's prompt-injection document is among the embedded blocks, also as data.
    assert!(strings.iter().any(|s| s.contains("CLM-PL-0005")));
}

#[test]
fn bad_input_exits_2_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let missing = dir.path().join("nope");
    let check = |args: &[&std::ffi::OsStr], wanted: &str| {
        let result = run_command(promptlab().arg("report").args(args));
        assert_eq!(result.code, 2, "{args:?}: {}", result.stderr);
        assert!(
            result.stderr.contains(wanted),
            "{args:?}: {}",
            result.stderr
        );
    };
    check(
        &[missing.as_os_str(), "-o".as_ref(), out.as_os_str()],
        "runs folder `",
    );
    check(
        &[missing.as_os_str(), "-o".as_ref(), out.as_os_str()],
        "does not exist",
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    check(
        &[empty.as_os_str(), "-o".as_ref(), out.as_os_str()],
        "no run logs in `",
    );
    let no_folder = dir.path().join("missing-folder/r.html");
    check(
        &[empty.as_os_str(), "-o".as_ref(), no_folder.as_os_str()],
        "the folder `",
    );
    let file = write(dir.path(), "file.txt", "x");
    check(
        &[file.as_os_str(), "-o".as_ref(), out.as_os_str()],
        "is not a folder of run logs",
    );
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    write(&broken, "20261130T000000.000Z-abc.ndjson", "{not json\n");
    check(
        &[broken.as_os_str(), "-o".as_ref(), out.as_os_str()],
        "20261130T000000.000Z-abc.ndjson",
    );
    assert!(!out.exists(), "nothing is written on bad input");
}

#[test]
fn unreadable_logs_are_named_and_the_rest_reported() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    record(&suite(dir.path(), OK_SCRIPT), &runs);
    let corrupt = write(
        &runs,
        "20261130T000000.000Z-dead.ndjson",
        "{\"record\":\"header\"\n",
    );
    let out = dir.path().join("report.html");
    let result = run_command(promptlab().arg("report").arg(&runs).arg("-o").arg(&out));
    assert_eq!(result.code, 0, "{}", result.stderr);
    assert!(
        result.stderr.contains(&corrupt.display().to_string()),
        "{}",
        result.stderr
    );
    let data = embedded(&html_of(&out));
    assert_eq!(data["unreadable"][0][0], corrupt.display().to_string());
    let wrong_suite = run_command(
        promptlab()
            .arg("report")
            .arg(&runs)
            .args(["--suite", "nope", "-o"])
            .arg(&out),
    );
    assert_eq!(wrong_suite.code, 2);
    assert!(
        wrong_suite.stderr.contains("no run logs of suite `nope`")
            && wrong_suite.stderr.contains("rpt"),
        "{}",
        wrong_suite.stderr
    );
}

#[test]
fn compare_writes_an_html_page_of_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("A"), dir.path().join("B"));
    record(
        &suite(dir.path(), &answer_script("The excess is £350.")),
        &a,
    );
    record(
        &suite(dir.path(), &answer_script("I could not find it.")),
        &b,
    );
    let out = dir.path().join("compare.html");
    let result = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--format", "html", "-o"])
            .arg(&out),
    );
    assert_eq!(result.code, 0, "{}", result.stderr);
    let data = embedded(&html_of(&out));
    let json = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--format", "json"]),
    );
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    for key in [
        "conclusion",
        "pValue",
        "passToFail",
        "failToPass",
        "errored",
        "judgedPairs",
    ] {
        assert_eq!(data[key], json[key], "{key}");
    }
    assert_eq!(
        data["pairs"].as_array().unwrap().len(),
        json["pairs"].as_array().unwrap().len()
    );
    let first = &data["pairs"][0];
    assert_eq!(first["ch"], "pass_to_fail");
    assert!(
        !first["diff"].as_array().unwrap().is_empty(),
        "a changed answer carries its diff"
    );

    let no_output = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--format", "html"]),
    );
    assert_eq!(no_output.code, 2);
    assert!(no_output.stderr.contains("-o FILE"), "{}", no_output.stderr);
    let bad_folder = run_command(
        promptlab()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--format", "html", "-o"])
            .arg(dir.path().join("x/y.html")),
    );
    assert_eq!(bad_folder.code, 2);
    assert!(
        bad_folder.stderr.contains("does not exist"),
        "{}",
        bad_folder.stderr
    );
}

#[test]
fn a_turn_recorded_again_counts_once_and_the_older_run_is_superseded() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let suite_file = suite(dir.path(), OK_SCRIPT);
    let first = record(&suite_file, &runs);
    record(&suite_file, &runs);
    let out = dir.path().join("report.html");
    report(&runs, &out);
    let data = embedded(&html_of(&out));
    assert_eq!(
        data["turns"].as_array().unwrap().len() as u64,
        first["turns"].as_u64().unwrap()
    );
    assert_eq!(data["superseded"], first["turns"]);
}

#[test]
fn chat_turns_are_reported_by_fingerprint_without_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let script = write(dir.path(), "ok.yaml", OK_SCRIPT);
    for question in ["What is the excess?", "Who handles it?"] {
        let chat = run_command(
            promptlab()
                .env("PROMPTLAB_RUNS_DIR", &runs)
                .args([
                    "chat",
                    "--claim-id",
                    "CLM-HH-0001",
                    "--provider",
                    "script",
                    "--format",
                    "ndjson",
                    "--script",
                ])
                .arg(&script)
                .arg(question),
        );
        assert_eq!(chat.code, 0, "{}", chat.stderr);
    }
    let out = dir.path().join("report.html");
    report(&runs, &out);
    let data = embedded(&html_of(&out));
    assert_eq!(data["variants"][0]["variant"], "chat · default");
    assert_eq!(data["variants"][0]["turns"], 2);
    assert_eq!(data["variants"][0]["judged"], 0);
    assert_eq!(data["variants"][0]["passRate"], Value::Null);
    assert!(
        data["turns"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["o"] == 3),
        "no verdict"
    );
    assert_eq!(
        data["cases"],
        serde_json::json!(["“What is the excess?”", "“Who handles it?”"])
    );
}

#[test]
fn chat_turns_beside_an_eval_keep_their_own_section_and_the_eval_its_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let summary = record(
        &suite(dir.path(), &answer_script("I could not find it.")),
        &runs,
    );
    let script = write(dir.path(), "chat.yaml", OK_SCRIPT);
    let chat = run_command(
        promptlab()
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["chat", "--claim-id", "CLM-HH-0001", "--provider", "script"])
            .args(["--format", "ndjson", "--script"])
            .arg(&script)
            .arg("A chat question?"),
    );
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    let out = dir.path().join("report.html");
    report(&runs, &out);
    let data = embedded(&html_of(&out));
    let variants = data["variants"].as_array().unwrap();
    let eval_default = summary["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["variant"] == "default")
        .unwrap();
    let page_default = variants.iter().find(|v| v["variant"] == "default").unwrap();
    for key in ["turns", "passed", "errors", "passRate", "passRateInterval"] {
        assert_eq!(
            page_default[key], eval_default[key],
            "{key}: the chat turn is not counted in"
        );
    }
    let chat_section = variants
        .iter()
        .find(|v| v["variant"] == "chat · default")
        .expect("the chat turn has its own section");
    assert_eq!(chat_section["turns"], 1);
    assert_eq!(chat_section["passRate"], Value::Null);
}

#[test]
fn without_o_the_page_is_report_html_here_and_open_starts_browser_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let runs = support::repo_root().join("runs/examples");
    let here = dir.path().join("here");
    std::fs::create_dir(&here).unwrap();
    let opened = dir.path().join("opened.txt");
    let stub = write(
        dir.path(),
        "browser.sh",
        &format!("#!/bin/sh\necho \"$@\" > {}\n", opened.display()),
    );
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&stub)
        .status()
        .unwrap();
    let out = run_command(
        promptlab()
            .current_dir(&here)
            .env("BROWSER", format!("{} --new-tab", stub.display()))
            .arg("report")
            .arg(&runs)
            .arg("--open"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("wrote report.html"), "{}", out.stderr);
    assert!(html_of(&here.join("report.html")).contains("64011163"));
    // The stub runs on its own: wait for what it wrote, with a deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let args = loop {
        if let Ok(text) = std::fs::read_to_string(&opened)
            && !text.is_empty()
        {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the browser was not started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(args.trim(), "--new-tab report.html");
    // No browser at all: the page is still written, and it says what to set.
    let none = run_command(
        promptlab()
            .current_dir(&here)
            .env_remove("BROWSER")
            .env("PATH", "/nonexistent")
            .arg("report")
            .arg(&runs)
            .arg("--open"),
    );
    assert_eq!(none.code, 1, "{}", none.stderr);
    assert!(none.stderr.contains("set BROWSER"), "{}", none.stderr);
}
