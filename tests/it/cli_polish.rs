//! Daily-use polish through the real binary: `--color` and the colour
//! environment, the first-run hint under the missing-key error, `--version`
//! with the commit, shell completions and man pages.

use crate::support;

use std::process::Command;

use support::{promptlab, repo_root, run, run_command};

const RED: &str = "\u{1b}[31m";

fn missing_key_turn(color: Option<&str>, env: &[(&str, &str)]) -> support::Run {
    let mut command = promptlab();
    command.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
    for (key, value) in env {
        command.env(key, value);
    }
    if let Some(color) = color {
        command.args(["--color", color]);
    }
    command.args([
        "chat",
        "--claim-id",
        "CLM-HH-0001",
        "--no-record",
        "--format",
        "pretty",
        "Is it covered?",
    ]);
    run_command(&mut command)
}

#[test]
fn the_pretty_view_hints_how_to_set_the_key_or_run_offline() {
    let out = missing_key_turn(Some("never"), &[]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("error: GEMINI_API_KEY is not configured on the API.\nhint: "),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("export GEMINI_API_KEY="));
    assert!(out.stdout.contains("--provider script --script FILE"));
}

#[test]
fn a_pipe_is_plain_by_default_and_coloured_when_forced() {
    assert!(!missing_key_turn(None, &[]).stdout.contains(RED));
    assert!(missing_key_turn(Some("always"), &[]).stdout.contains(RED));
    assert!(
        missing_key_turn(None, &[("CLICOLOR_FORCE", "1")])
            .stdout
            .contains(RED)
    );
}

#[test]
fn no_color_wins_over_clicolor_force_but_not_over_always() {
    let both = [("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")];
    assert!(!missing_key_turn(None, &both).stdout.contains(RED));
    assert!(missing_key_turn(Some("always"), &both).stdout.contains(RED));
}

#[test]
fn an_unknown_color_value_is_a_usage_error() {
    let out = missing_key_turn(Some("sometimes"), &[]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("possible values: auto, always, never"),
        "{}",
        out.stderr
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let out = run(&["--version"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("promptlab 0.1.0 ("),
        "{}",
        out.stdout
    );
    let head = Command::new("git")
        .args(["log", "-1", "--abbrev=12", "--format=%h"])
        .current_dir(repo_root())
        .output()
        .ok()
        .filter(|output| output.status.success());
    match head {
        Some(head) => {
            let head = String::from_utf8(head.stdout).unwrap();
            assert!(out.stdout.contains(head.trim()), "{} vs {head}", out.stdout);
        }
        None => assert!(out.stdout.contains("commit unknown"), "{}", out.stdout),
    }
}

#[test]
fn completions_are_written_for_every_shell_and_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for word in ["promptlab", "chat", "compare", "claims-dir", "color"] {
            assert!(out.stdout.contains(word), "{shell} lacks {word}");
        }
    }
}

#[test]
fn the_bash_completion_script_is_valid_bash() {
    let script = run(&["completions", "bash"]).stdout;
    let path =
        std::env::temp_dir().join(format!("promptlab-completion-{}.bash", std::process::id()));
    std::fs::write(&path, script).unwrap();
    let checked = Command::new("bash").arg("-n").arg(&path).output();
    std::fs::remove_file(&path).unwrap();
    if let Ok(checked) = checked {
        assert!(
            checked.status.success(),
            "{}",
            String::from_utf8_lossy(&checked.stderr)
        );
    }
}

#[test]
fn an_unknown_shell_is_a_usage_error_naming_the_shells() {
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("bash, zsh, fish, powershell, elvish"),
        "{}",
        out.stderr
    );
}

#[test]
fn man_prints_a_roff_page_and_writes_one_per_subcommand() {
    let out = run(&["man"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(".TH promptlab 1"), "{}", out.stdout);
    assert!(out.stdout.contains("completions"));
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    let out = run(&["man", "--out-dir", pages.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for page in ["promptlab.1", "promptlab-chat.1", "promptlab-runs-list.1"] {
        let text = std::fs::read_to_string(pages.join(page)).unwrap();
        assert!(text.starts_with(".ie"), "{page}");
    }
}

#[test]
fn man_into_a_file_that_is_not_a_folder_is_a_usage_error() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let out = run(&["man", "--out-dir", file.path().to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("cannot write man pages into"),
        "{}",
        out.stderr
    );
}

/// Every subcommand, as the man pages name them: `promptlab-runs-list.1` is
/// `promptlab runs list`.
fn every_subcommand() -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["man", "--out-dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut commands: Vec<Vec<String>> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let words = name
                .strip_prefix("promptlab-")?
                .strip_suffix(".1")?
                .to_string();
            Some(words.split('-').map(str::to_string).collect())
        })
        .collect();
    commands.sort();
    commands
}

/// The ways to read a man page's words as a command line: a subcommand's
/// own name may hold a `-` (`cases-from-runs` is `cases from-runs`), so
/// each place between two words is a space or a `-`.
fn readings(words: &[String]) -> Vec<Vec<String>> {
    let mut readings = vec![vec![words[0].clone()]];
    for word in &words[1..] {
        let mut next = Vec::new();
        for reading in &readings {
            let mut spaced = reading.clone();
            spaced.push(word.clone());
            let mut joined = reading.clone();
            let last = joined.last_mut().expect("a word");
            last.push('-');
            last.push_str(word);
            next.extend([spaced, joined]);
        }
        readings = next;
    }
    readings
}

#[test]
fn every_subcommand_help_shows_examples() {
    let commands = every_subcommand();
    assert!(commands.len() >= 20, "{commands:?}");
    for words in commands {
        let out = readings(&words)
            .into_iter()
            .map(|mut args| {
                args.push("--help".into());
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                (run(&args), args.join(" "))
            })
            .find(|(out, _)| out.code == 0);
        let Some((out, args)) = out else {
            panic!("{words:?}: no reading of the man page's name is a command");
        };
        assert!(
            out.stdout.contains("Examples:\n  promptlab "),
            "{args:?} has no examples"
        );
    }
}

#[test]
fn prompts_show_tools_lists_the_declarations_the_model_receives() {
    let base = [
        "prompts",
        "show",
        "--claim-id",
        "CLM-HH-0001",
        "--today",
        "2026-11-30",
    ];
    let plain = run(&base);
    assert!(!plain.stdout.contains("── tools"), "{}", plain.stdout);
    let tools = run(&[&base[..], &["--tools"]].concat());
    assert_eq!(tools.code, 0, "{}", tools.stderr);
    assert!(tools.stdout.contains("── tools (4)"), "{}", tools.stdout);
    assert!(tools.stdout.contains("get_claim_section: "));
    assert!(!tools.stdout.contains("highlight_panel"));
    let screen = run(&[&base[..], &["--tools", "--screen-actions"]].concat());
    assert!(
        screen.stdout.contains("highlight_panel: "),
        "{}",
        screen.stdout
    );
    let json = run(&[&base[..], &["--json"]].concat());
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let names: Vec<&str> = value["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "get_claim_section",
            "search_claim_file",
            "read_document",
            "get_schedule"
        ]
    );
    assert!(value["tools"][0]["parameters"]["type"] == "object");
}

/// The text of block `id` in `prompts show --json`, with these extra args.
fn block_text(id: &str, extra: &[&str]) -> String {
    let base = [
        "prompts",
        "show",
        "--claim-id",
        "CLM-HH-0001",
        "--today",
        "2026-11-30",
        "--json",
    ];
    let out = run(&[&base[..], extra].concat());
    let value: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let blocks = value["blocks"].as_array().unwrap();
    let block = blocks.iter().find(|b| b["id"] == id).unwrap();
    block["text"].as_str().unwrap().to_string()
}

#[test]
fn prompts_diff_prints_unified_hunks_that_patch_applies() {
    let out = run(&[
        "prompts",
        "diff",
        "default",
        "overrides/plain-spoken.yaml",
        "--claim-id",
        "CLM-HH-0001",
        "--today",
        "2026-11-30",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let start = out
        .stdout
        .find("--- a/system.base\n")
        .expect("a file header");
    let rest = &out.stdout[start..];
    let end = rest.find("\n── ").map_or(rest.len(), |i| i + 1);
    let hunks = &rest[..end];
    let header = regex::Regex::new(r"(?m)^@@ -\d+(,\d+)? \+\d+(,\d+)? @@$").unwrap();
    assert!(header.is_match(hunks), "{hunks}");
    let Ok(_) = Command::new("patch").arg("--version").output() else {
        return; // no patch(1) here: the header check above still holds
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("system.base"),
        block_text("system.base", &[]),
    )
    .unwrap();
    std::fs::write(dir.path().join("d.patch"), hunks).unwrap();
    let patched = Command::new("patch")
        .args(["-p1", "-i", "d.patch"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        patched.status.success(),
        "{}",
        String::from_utf8_lossy(&patched.stdout)
    );
    let after = std::fs::read_to_string(dir.path().join("system.base")).unwrap();
    let want = block_text(
        "system.base",
        &["--overrides", "overrides/plain-spoken.yaml"],
    );
    assert_eq!(after, want);
}
