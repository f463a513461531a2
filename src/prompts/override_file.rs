//! Writing override files (the Prompt Lab page's "Save" and "Download"):
//! the YAML that `OverrideSet::load` reads back to the same texts, byte for
//! byte, a file name rule, and a save that is whole or absent and never
//! writes through a link. The reader (`overrides.rs`) stays the one
//! definition of the format: every rendered file is read back by it before
//! it is offered, so a text the writer cannot carry is an error, not a
//! silently different prompt.

use std::collections::BTreeMap;
use std::fmt;

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::overrides::{OverrideError, OverrideSet, parse_override_file};
use crate::document::DocumentFormat;
use crate::whole_file::{Durability, Staged};

/// The longest file name taken, without its `.yaml`.
pub const MAX_NAME_CHARS: usize = 64;

/// A saved file's name: 1–64 of `[A-Za-z0-9._-]`, not starting with a dot
/// (so never a hidden file, `.` or `..`, and never a path) or a `-` (never
/// an option to the next command given it), and no Windows device name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideFileName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("name: give a file name (1-{MAX_NAME_CHARS} of A-Z a-z 0-9 . _ -)")]
    Empty,
    #[error("name: at most {MAX_NAME_CHARS} characters, got {0}")]
    TooLong(usize),
    #[error("name: `{0}` is not allowed; use only A-Z a-z 0-9 . _ -")]
    Character(char),
    #[error("name: must not start with a dot")]
    Dot,
    #[error("name: must not start with `-`: a command given the file would read it as an option")]
    Dash,
    #[error(
        "name: `{0}` names a device on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9), whatever follows its dot"
    )]
    Reserved(String),
}

/// Windows' reserved device names: a file `NUL.yaml` (or `nul.v2.yaml`)
/// cannot be made or opened there as a file, so a saved set under that
/// name could never be shared with a colleague on Windows.
fn windows_reserved(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).to_ascii_uppercase();
    let numbered = |prefix: &str| {
        stem.strip_prefix(prefix)
            .is_some_and(|digit| digit.len() == 1 && matches!(digit.as_bytes()[0], b'1'..=b'9'))
    };
    matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL") || numbered("COM") || numbered("LPT")
}

impl OverrideFileName {
    pub fn parse(name: &str) -> Result<OverrideFileName, NameError> {
        let length = name.chars().count();
        if length == 0 {
            return Err(NameError::Empty);
        }
        if length > MAX_NAME_CHARS {
            return Err(NameError::TooLong(length));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return Err(NameError::Character(bad));
        }
        if name.starts_with('.') {
            return Err(NameError::Dot);
        }
        if name.starts_with('-') {
            return Err(NameError::Dash);
        }
        if windows_reserved(name) {
            return Err(NameError::Reserved(name.to_string()));
        }
        Ok(OverrideFileName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `NAME.yaml`.
    pub fn file_name(&self) -> String {
        format!("{}.yaml", self.0)
    }
}

impl fmt::Display for OverrideFileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Serialize)]
struct FileShape<'a> {
    prompts: BTreeMap<&'a str, &'a str>,
}

/// Why overrides could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error("`{0}` exists; send `replace: true` to overwrite it")]
    Exists(String),
    #[error("a text could not be written as YAML that reads back the same: {0}")]
    NotRoundTrip(String),
    #[error("could not write `{path}`: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The override file for `prompts`, as YAML that `OverrideSet::load` reads
/// back to exactly these texts (checked here, by reading it back).
pub fn render_override_file(prompts: &BTreeMap<String, String>) -> Result<String, SaveError> {
    let shape = FileShape {
        prompts: prompts
            .iter()
            .map(|(id, text)| (id.as_str(), text.as_str()))
            .collect(),
    };
    let yaml = serde_saphyr::to_string(&shape)
        .map_err(|error| SaveError::NotRoundTrip(error.to_string()))?;
    let read_back = parse_override_file(&yaml, DocumentFormat::Yaml)
        .map_err(|problem| SaveError::NotRoundTrip(problem.to_string()))?;
    if read_back.prompts != *prompts {
        let id = prompts
            .iter()
            .find(|(id, text)| read_back.prompts.get(*id) != Some(text))
            .map(|(id, _)| id.clone())
            .unwrap_or_default();
        return Err(SaveError::NotRoundTrip(format!("the text of `{id}`")));
    }
    Ok(yaml)
}

/// Writes `yaml` as `dir/NAME.yaml`, whole or not at all, synced
/// (`whole_file`: a temporary created exclusively, so a planted link is
/// never followed) — refused when the name exists unless `replace`, in
/// which case it is renamed over it (replacing a link, not writing through
/// it). Creates `dir` when missing.
pub fn save_override_file(
    dir: &Path,
    name: &OverrideFileName,
    yaml: &str,
    replace: bool,
) -> Result<PathBuf, SaveError> {
    let target = dir.join(name.file_name());
    let io_error = |path: &Path| {
        let path = path.display().to_string();
        move |source| SaveError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let staged =
        Staged::write_in(dir, |out| out.write_all(yaml.as_bytes())).map_err(io_error(dir))?;
    let placed = match replace {
        true => staged.replace(&target, Durability::Synced),
        false => staged.create(&target, Durability::Synced),
    };
    match placed {
        Ok(()) => Ok(target),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(SaveError::Exists(name.file_name()))
        }
        Err(source) => Err(io_error(&target)(source)),
    }
}

/// The override files in `dir` (`.yaml`, `.yml`, `.json`, in name order),
/// each loaded as `--overrides FILE` would load it. A missing folder has none.
pub fn list_override_files(
    dir: &Path,
) -> std::io::Result<Vec<(String, Result<OverrideSet, OverrideError>)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.'))
        .filter(|name| {
            [".yaml", ".yml", ".json"]
                .iter()
                .any(|ext| name.ends_with(ext))
        })
        .collect();
    names.sort();
    Ok(names
        .into_iter()
        .map(|name| {
            let loaded = OverrideSet::load(&[dir.join(&name)]);
            (name, loaded)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rule() {
        assert!(OverrideFileName::parse("plain-spoken_v2.1").is_ok());
        assert_eq!(OverrideFileName::parse(""), Err(NameError::Empty));
        assert_eq!(OverrideFileName::parse(".hidden"), Err(NameError::Dot));
        assert_eq!(OverrideFileName::parse(".."), Err(NameError::Dot));
        assert_eq!(
            OverrideFileName::parse("a/b"),
            Err(NameError::Character('/'))
        );
        assert_eq!(
            OverrideFileName::parse(&"x".repeat(65)),
            Err(NameError::TooLong(65))
        );
        assert!(OverrideFileName::parse(&"x".repeat(64)).is_ok());
        assert_eq!(OverrideFileName::parse("-rf"), Err(NameError::Dash));
        for reserved in ["CON", "nul", "Aux.v2", "COM1", "lpt9.x"] {
            assert_eq!(
                OverrideFileName::parse(reserved),
                Err(NameError::Reserved(reserved.to_string()))
            );
        }
        for fine in ["CONSOLE", "com10", "COM0", "nully", "a-rf", "prn_v2"] {
            assert!(OverrideFileName::parse(fine).is_ok(), "{fine}");
        }
    }
}
