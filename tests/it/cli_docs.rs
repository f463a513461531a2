//! The README as a newcomer reads it: `docs/cli.md` is what `promptlab man
//! --markdown` prints today, every command is in the README's table and
//! links to its section there, and the README's example recipe runs as
//! written without writing into the checkout.
//!
//! `PROMPTLAB_UPDATE_DOCS=1 cargo test --test it cli_docs` rewrites docs/cli.md.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

fn generated_reference() -> String {
    let run = support::run(&["man", "--markdown"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.stdout
}

#[test]
fn docs_cli_md_is_the_current_help() {
    let generated = generated_reference();
    let path = support::repo_root().join("docs/cli.md");
    if std::env::var_os("PROMPTLAB_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/cli.md is out of date: run PROMPTLAB_UPDATE_DOCS=1 cargo test --test it cli_docs"
    );
}

/// `--help` names each variable and never a value: not an unset one as
/// `NAME=` (clap's way), not the value this shell holds — the same lines
/// docs/cli.md has.
#[test]
fn help_names_each_variable_without_a_value() {
    let mut command = support::promptlab();
    command
        .env("PROMPTLAB_MODEL", "a-model-of-this-shell")
        .env_remove("PROMPTLAB_RUNS_DIR")
        .args(["eval", "--help"]);
    let run = support::run_command(&mut command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("[env: PROMPTLAB_MODEL]\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("[env: PROMPTLAB_RUNS_DIR]\n"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("a-model-of-this-shell"),
        "{}",
        run.stdout
    );
    let with_value = regex::Regex::new(r"\[env: [A-Z_]+=").unwrap();
    assert!(!with_value.is_match(&run.stdout), "{}", run.stdout);
}

/// The section headings of docs/cli.md as GitHub makes anchors of them.
fn anchors(reference: &str) -> Vec<String> {
    reference
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .map(|title| title.replace(' ', "-"))
        .collect()
}

#[test]
fn every_command_is_one_short_readme_row_linking_to_its_reference() {
    let readme = std::fs::read_to_string(support::repo_root().join("README.md")).unwrap();
    let reference = generated_reference();
    let anchors = anchors(&reference);
    for anchor in &anchors {
        // A command with subcommands (`runs`) is covered by its children's
        // rows; a child may share its parent's row (`claims list|show|…`).
        let is_group = anchors.iter().any(|a| a.starts_with(&format!("{anchor}-")));
        if anchor == "promptlab" || is_group {
            continue;
        }
        let parent = anchor.rsplit_once('-').map(|(head, _)| head.to_string());
        let linked = |a: &str| readme.contains(&format!("(docs/cli.md#{a})"));
        assert!(
            linked(anchor)
                || parent
                    .as_deref()
                    .is_some_and(|p| p != "promptlab" && linked(p)),
            "README.md's command table does not link to docs/cli.md#{anchor}"
        );
    }
    let table: Vec<&str> = readme
        .lines()
        .skip_while(|line| !line.starts_with("| command | what it does |"))
        .take_while(|line| line.starts_with('|'))
        .collect();
    assert!(table.len() > 10, "the README has its command table");
    for row in table {
        assert!(
            row.chars().count() <= 260,
            "a README command row is {} characters long (at most 260): {row}",
            row.chars().count()
        );
        for target in row.split("](").skip(1) {
            let target = &target[..target.find(')').unwrap()];
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            assert!(
                support::repo_root().join(file).is_file(),
                "README links to {file}, which is not there"
            );
            if anchor.is_empty() {
                continue;
            }
            let sections = if file == "docs/cli.md" {
                anchors.clone()
            } else {
                heading_slugs(&std::fs::read_to_string(support::repo_root().join(file)).unwrap())
            };
            assert!(
                sections.iter().any(|a| a == anchor),
                "README links to {target}, which {file} has no section for"
            );
        }
    }
}

/// GitHub's anchors for a Markdown file's headings (lowercase, spaces to
/// `-`, punctuation dropped: enough for our headings).
fn heading_slugs(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .filter_map(|line| {
            line.trim_start_matches('#')
                .strip_prefix(' ')
                .filter(|_| line.starts_with('#'))
        })
        .map(|title| {
            title
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Every file under `dir` with the SHA-256 of its bytes.
fn tree_digest(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let digest = hex(&Sha256::digest(std::fs::read(&path).unwrap()));
                files.insert(path.display().to_string(), digest);
            }
        }
    }
    files
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The shell block the README marks `<!-- recipe:examples -->`.
fn recipe(readme: &str) -> String {
    marked(readme, "<!-- recipe:examples -->")
}

/// The shell block after `mark`.
fn marked(readme: &str, mark: &str) -> String {
    let after = readme
        .split_once(mark)
        .unwrap_or_else(|| panic!("the README marks {mark}"))
        .1;
    let block = after.split_once("```sh\n").unwrap().1;
    block.split_once("```").unwrap().0.to_string()
}

#[test]
fn the_readme_recipe_runs_as_written_and_leaves_the_checkout_alone() {
    let root = support::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let script = recipe(&readme);
    let before = tree_digest(&root.join("runs/examples"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_promptlab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(&root)
        .env("PATH", path)
        .env("NO_COLOR", "1");
    for (key, _) in std::env::vars() {
        if key.starts_with("PROMPTLAB_") || key.starts_with("GEMINI_") {
            command.env_remove(key);
        }
    }
    let run = support::run_command(&mut command);
    assert_eq!(
        run.code, 0,
        "the README recipe failed:\n{script}\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(run.stdout.contains("64011163"), "{}", run.stdout);
    assert_eq!(
        tree_digest(&root.join("runs/examples")),
        before,
        "the recipe wrote into runs/examples"
    );
}

/// The README's install steps after `cargo install` (the binary under test
/// stands in for it), run in a fresh home: the folders they write to are
/// made first, and the man page lands where `man` looks for a binary in
/// `~/.cargo/bin` (manpath(5): `<bin>/../share/man`).
#[test]
fn the_readme_install_steps_run_in_a_fresh_home() {
    let readme = std::fs::read_to_string(support::repo_root().join("README.md")).unwrap();
    let script = marked(&readme, "<!-- recipe:install -->");
    let (installed, steps) = script.split_once('\n').unwrap();
    assert_eq!(installed, "cargo install --locked --path .");
    let home = tempfile::tempdir().unwrap();
    let cargo_bin = home.path().join(".cargo/bin");
    std::fs::create_dir_all(&cargo_bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_promptlab"), cargo_bin.join("promptlab"))
        .unwrap();
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", steps])
        .env("HOME", home.path())
        .env("PATH", format!("{}:/usr/bin:/bin", cargo_bin.display()));
    let run = support::run_command(&mut command);
    assert_eq!(run.code, 0, "{steps}\n{}", run.stderr);
    let completions = home
        .path()
        .join(".local/share/bash-completion/completions/promptlab");
    assert!(std::fs::metadata(&completions).unwrap().len() > 0);
    let man = cargo_bin
        .parent()
        .unwrap()
        .join("share/man/man1/promptlab.1");
    assert!(man.is_file(), "the man page beside ~/.cargo/bin");
}
