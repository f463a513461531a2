//! The module graph follows the pipeline's layers: every `crate::` path in
//! the library reaches only into a lower layer, as the layer table in
//! `ARCHITECTURE.md` says. The table is written once, there; this test reads
//! it, so the two cannot drift apart. A failure names the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Module name → layer number, from the table between the `layers` markers.
fn layer_table() -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let start = text
        .find("<!-- layers:begin -->")
        .expect("ARCHITECTURE.md has a `<!-- layers:begin -->` marker");
    let end = text
        .find("<!-- layers:end -->")
        .expect("ARCHITECTURE.md has a `<!-- layers:end -->` marker");
    let mut layers = BTreeMap::new();
    let rows = text[start..end]
        .lines()
        .filter(|line| line.starts_with('|') && !line.starts_with("|---"))
        .skip(1);
    for (rank, row) in rows.enumerate() {
        let modules = row.split('|').nth(2).unwrap_or_default();
        for name in modules.split('`').skip(1).step_by(2) {
            let previous = layers.insert(name.to_string(), rank);
            assert!(previous.is_none(), "`{name}` is in two layers");
        }
    }
    assert!(layers.len() > 5, "the layer table was not read: {layers:?}");
    layers
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/chat/service.rs` → `chat`; `src/text.rs` → `text`.
fn top_module(relative: &Path) -> String {
    let first = relative.components().nth(1).unwrap();
    let name = first.as_os_str().to_str().unwrap();
    name.trim_end_matches(".rs").to_string()
}

/// Every `crate::<module>` a line names, outside comments.
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or_default();
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // Not `promptlab_crate::` or a longer identifier.
            *at == 0
                || !code.as_bytes()[at - 1].is_ascii_alphanumeric()
                    && code.as_bytes()[at - 1] != b'_'
        })
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            if rest.starts_with('{') {
                return "{".to_string();
            }
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn every_library_import_reaches_down_a_layer() {
    let layers = layer_table();
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    files.sort();
    let mut problems = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(repo()).unwrap();
        let own = top_module(relative);
        if matches!(own.as_str(), "main" | "lib" | "cli") {
            continue; // the binary: the top, free to use any layer
        }
        let Some(&own_rank) = layers.get(&own) else {
            problems.push(format!(
                "{}: module `{own}` is in no layer of ARCHITECTURE.md",
                relative.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for (number, line) in text.lines().enumerate() {
            for target in crate_paths(line) {
                if target.starts_with('{') {
                    problems.push(format!(
                        "{}:{}: `use crate::{{…}}` — name one module per path so layers can be checked",
                        relative.display(),
                        number + 1
                    ));
                    continue;
                }
                if target == own {
                    continue;
                }
                match layers.get(&target) {
                    Some(&rank) if rank < own_rank => {}
                    Some(_) => problems.push(format!(
                        "{}:{}: `{own}` imports `crate::{target}`, which is not in a lower layer",
                        relative.display(),
                        number + 1
                    )),
                    None => problems.push(format!(
                        "{}:{}: `crate::{target}` is in no layer of ARCHITECTURE.md",
                        relative.display(),
                        number + 1
                    )),
                }
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn clap_stays_in_the_binary() {
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    for path in files {
        let relative = path.strip_prefix(repo()).unwrap().to_path_buf();
        if matches!(top_module(&relative).as_str(), "cli" | "main") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            assert!(
                !code.contains("clap::"),
                "{}:{}: the library never uses clap",
                relative.display(),
                number + 1
            );
        }
    }
}

#[test]
fn the_checker_sees_an_upward_import() {
    // The test above must be able to fail: a line as a cycle would write it.
    assert_eq!(crate_paths("use crate::chat::event::Usage;"), ["chat"]);
    assert_eq!(
        crate_paths("    // use crate::chat::x;"),
        Vec::<String>::new()
    );
    assert_eq!(
        crate_paths("let x = crate::runs::naming::is_partial(p);"),
        ["runs"]
    );
    assert_eq!(crate_paths("use crate::{a, b};"), ["{"]);
    let layers = layer_table();
    assert!(layers["provider"] < layers["chat"]);
    assert!(layers["runs"] < layers["sink"]);
}

/// The error types of `Result<T, E>`s in a line whose `E` is a bare
/// `String` (a message where the caller needs a type it can act on).
fn string_errors(line: &str) -> usize {
    let code = line.split("//").next().unwrap_or_default();
    let mut found = 0;
    for (start, _) in code.match_indices("Result<") {
        let mut depth = 0;
        let mut args = vec![String::new()];
        for c in code[start + "Result<".len()..].chars() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' if depth == 0 => break,
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => {
                    args.push(String::new());
                    continue;
                }
                _ => {}
            }
            args.last_mut().unwrap().push(c);
        }
        if args.len() == 2 && args[1].trim() == "String" {
            found += 1;
        }
    }
    found
}

#[test]
fn library_errors_are_types_not_strings() {
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    let mut problems = Vec::new();
    for path in files {
        let relative = path.strip_prefix(repo()).unwrap().to_path_buf();
        if matches!(top_module(&relative).as_str(), "cli" | "main") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            if string_errors(line) > 0 {
                problems.push(format!(
                    "{}:{}: {}",
                    relative.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "a library error is a type (thiserror), not a String:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_sees_a_string_error() {
    assert_eq!(
        string_errors("fn f() -> Result<Vec<(u8, u16)>, String> {"),
        1
    );
    assert_eq!(string_errors("pick: Result<Result<String, String>, E>"), 1);
    assert_eq!(
        string_errors("fn f() -> rusqlite::Result<HashMap<String, String>>"),
        0
    );
    assert_eq!(string_errors("fn f() -> Result<String, Error>"), 0);
    assert_eq!(string_errors("// Result<(), String>"), 0);
}

/// Each function's length in lines, from its `fn` line to its closing brace
/// at the same indentation: `(line, length, signature)`.
fn function_lengths(text: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let signature = [
            "pub ",
            "pub(crate) ",
            "pub(super) ",
            "async ",
            "const ",
            "unsafe ",
        ]
        .iter()
        .fold(trimmed, |rest, prefix| {
            rest.strip_prefix(prefix).unwrap_or(rest)
        });
        let signature = signature.strip_prefix("async ").unwrap_or(signature);
        if !signature.starts_with("fn ") || line.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        if let Some(end) = lines[start + 1..].iter().position(|l| *l == close) {
            found.push((start + 1, end + 2, trimmed.to_string()));
        }
    }
    found
}

#[test]
fn every_function_is_under_80_lines() {
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    let mut problems = Vec::new();
    for path in files {
        let relative = path.strip_prefix(repo()).unwrap().to_path_buf();
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, length, signature) in function_lengths(&text) {
            if length > 80 {
                problems.push(format!(
                    "{}:{line}: {length} lines: {signature}",
                    relative.display()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "functions over 80 lines:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_measures_a_function() {
    let text = "fn short() {\n    1\n}\n\n    pub async fn inner(\n        x: u8,\n    ) {\n        x;\n    }\n";
    assert_eq!(
        function_lengths(text),
        [
            (1, 3, "fn short() {".to_string()),
            (5, 5, "pub async fn inner(".to_string())
        ]
    );
}

/// `(name, file)` of each bound constant `text` (the file `file`, under
/// `src/`) defines: `MAX_*`, `*_LIMIT`, `*_TIMEOUT`, outside its tests.
fn bound_constants(file: &str, text: &str) -> Vec<(String, String)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = Vec::new();
    for line in code.lines() {
        let Some((_, rest)) = line.split_once("const ") else {
            continue;
        };
        let name: String = (rest.chars())
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        let bound =
            name.starts_with("MAX_") || name.ends_with("_LIMIT") || name.ends_with("_TIMEOUT");
        if bound && rest[name.len()..].starts_with(':') {
            found.push((name, file.to_string()));
        }
    }
    found
}

/// `(name, file)` of each row of `docs/limits.md`'s tables.
fn listed_bounds(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line
                .split('|')
                .map(|cell| cell.trim().trim_matches('`'))
                .collect();
            (cells[1].to_string(), cells[2].to_string())
        })
        .collect()
}

#[test]
fn every_bound_is_listed_with_why_in_one_place() {
    let listing = std::fs::read_to_string(repo().join("docs/limits.md")).unwrap();
    let listed = listed_bounds(&listing);
    assert!(listed.len() > 50, "docs/limits.md was not read: {listed:?}");
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    let mut problems = Vec::new();
    for path in &files {
        let file = path
            .strip_prefix(repo().join("src"))
            .unwrap()
            .to_str()
            .unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        for bound in bound_constants(file, &text) {
            if !listed.contains(&bound) {
                problems.push(format!(
                    "src/{}: `{}` has no row in docs/limits.md",
                    bound.1, bound.0
                ));
            }
        }
    }
    for (name, file) in &listed {
        let text = std::fs::read_to_string(repo().join("src").join(file)).unwrap_or_default();
        if !text.contains(&format!("const {name}:")) {
            problems.push(format!(
                "docs/limits.md: `{name}` is not defined in src/{file}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_bound_checker_sees_a_constant_and_a_row() {
    let text = "/// Why.\npub const MAX_THINGS: usize = 3;\nconst OTHER: u8 = 1;\n#[cfg(test)]\nconst MAX_X: u8 = 1;";
    assert_eq!(
        bound_constants("a.rs", text),
        [("MAX_THINGS".to_string(), "a.rs".to_string())]
    );
    let row = "| `MAX_THINGS` | `a.rs` | 3 | why |";
    assert_eq!(listed_bounds(row), bound_constants("a.rs", text));
}
