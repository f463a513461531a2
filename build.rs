//! Embeds every file under `prompts/` into the binary, so that `promptlab`
//! runs from any folder with the code-default prompts it was built with.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
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
