//! `promptlab init` end to end: set up an empty folder, then run the three
//! commands it prints, from that folder, exactly as printed (through `sh`),
//! with nothing from the repository around them.

use crate::support;

use std::path::Path;
use std::process::Command;

use support::run;

/// `sh -c command` in `dir`, with the built binary first on PATH and no
/// promptlab or Gemini settings inherited.
fn shell(dir: &Path, command: &str) -> support::Run {
    let bin = Path::new(env!("CARGO_BIN_EXE_promptlab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1");
    for (key, _) in std::env::vars() {
        if key.starts_with("PROMPTLAB_") || key.starts_with("GEMINI_") {
            sh.env_remove(key);
        }
    }
    support::run_command(&mut sh)
}

#[test]
fn init_sets_up_a_folder_whose_three_printed_commands_work_offline() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("lab");
    let out = run(&["init", target.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let commands: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("  "))
        .filter(|line| line.starts_with("promptlab "))
        .collect();
    assert_eq!(commands.len(), 3, "{}", out.stdout);
    for command in commands {
        let ran = shell(&target, command);
        assert_eq!(ran.code, 0, "{command}\n{}\n{}", ran.stdout, ran.stderr);
        assert!(!ran.stdout.is_empty(), "{command}");
    }
    // The chat turn and the eval recorded their runs inside the folder.
    assert!(target.join("runs").is_dir());
}

#[test]
fn init_never_overwrites_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suites/first.yaml");
    std::fs::create_dir_all(suite.parent().unwrap()).unwrap();
    std::fs::write(&suite, "mine").unwrap();
    let out = run(&["init", dir.path().to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("init would overwrite"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("first.yaml"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&suite).unwrap(), "mine");
    assert!(!dir.path().join("claims").exists());
}

#[test]
fn init_into_a_file_is_a_usage_error() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let out = run(&["init", file.path().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("init cannot write"), "{}", out.stderr);
}
