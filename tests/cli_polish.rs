//! Daily-use polish through the real binary: `--color` and the colour
//! environment, the first-run hint under the missing-key error.

mod support;

use support::{promptlab, run_command};

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
