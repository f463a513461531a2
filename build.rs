//! Embeds every file under `prompts/` into the binary, so that `promptlab`
//! runs from any folder with the code-default prompts it was built with; and
//! names the git commit it was built from for `--version` (a source tarball
//! without git says so instead of failing the build).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    embed_prompts();
    let version = env!("CARGO_PKG_VERSION");
    let commit = git_commit().unwrap_or_else(|| "commit unknown: built without git".to_string());
    println!("cargo:rustc-env=PROMPTLAB_LONG_VERSION={version} ({commit})");
}

/// `git` with `args` in the source tree; `None` when git is absent, this is
/// not a repository, or git fails.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(manifest_dir())
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// "<12-hex commit> <commit date>", rebuilt when HEAD moves. `PROMPTLAB_COMMIT`
/// names it for builds from a tarball.
fn git_commit() -> Option<String> {
    println!("cargo:rerun-if-env-changed=PROMPTLAB_COMMIT");
    if let Ok(commit) = std::env::var("PROMPTLAB_COMMIT") {
        return Some(commit);
    }
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.extend(git(&["rev-parse", "--git-path", &head_ref]));
    }
    let root = manifest_dir();
    for path in watched.iter().map(|path| root.join(path)) {
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    git(&["log", "-1", "--abbrev=12", "--format=%h %cs"])
}

/// The source tree, read when the script runs: `env!` would bake in the
/// folder the script was compiled in, and cargo reuses a compiled build
/// script for another checkout sharing the target folder (a `git worktree`).
fn manifest_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
}

fn embed_prompts() {
    let dir = manifest_dir().join("prompts");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the prompts/ folder is part of the source tree")
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".md") || name.ends_with(".yaml"))
        .collect();
    names.sort();
    let mut code = String::from("pub static EMBEDDED_PROMPT_FILES: &[(&str, &str)] = &[\n");
    for name in &names {
        let path = dir.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            code,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .expect("writing to a String cannot fail");
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("embedded_prompts.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
