//! Naming recorded runs on the command line, by the one precedence rule
//! every command shares (`compare A B`, `runs list --fingerprint`): an
//! existing path (a file or folder) first; then an eval run (`ev-` and a
//! unique prefix of its 10 hex characters); then `last` / `last~N` (the
//! newest eval run of `--suite`, or the one N before it); then a prompt
//! fingerprint — `default`, all 12 hex characters, or a unique prefix of at
//! least 6 of a version recorded in the runs folder, as `runs show` takes a
//! turn-id prefix. An argument that could be several of these is an error
//! naming them; a prefix that matches several versions is an error listing
//! them; one that matches none says which recorded one is nearest.

use std::path::{Path, PathBuf};

use crate::prompts::fingerprint::looks_like_fingerprint;
use crate::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};

/// The shortest fingerprint prefix taken.
pub const MIN_PREFIX: usize = 6;
/// How eval run ids start (`ev-` and 10 lowercase hex characters).
pub const EVAL_RUN_PREFIX: &str = "ev-";
const EVAL_RUN_HEX: usize = 10;

/// What an argument naming recorded runs names, by the precedence rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// An existing file or folder.
    Path(PathBuf),
    /// An eval run id, or a prefix of one (`ev-3f9a`).
    EvalRun(String),
    /// `last` (0) or `last~N`: the newest eval run of a suite, or N before it.
    Last(u32),
    /// `default`, 12 hex characters, or a prefix of 6 or more.
    Fingerprint(String),
}

impl Side {
    fn kind(&self) -> &'static str {
        match self {
            Side::Path(_) => "an existing path",
            Side::EvalRun(_) => "an eval run id",
            Side::Last(_) => "`last~N` (an eval run of --suite)",
            Side::Fingerprint(_) => "a prompt fingerprint",
        }
    }
}

/// Whether `text` is a whole eval run id: `ev-` and 10 lowercase hex.
pub fn is_eval_run_id(text: &str) -> bool {
    text.strip_prefix(EVAL_RUN_PREFIX)
        .is_some_and(|hex| hex.len() == EVAL_RUN_HEX && is_lower_hex(hex))
}

fn is_lower_hex(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Every kind `spec` could name, in precedence order.
pub fn side_kinds(spec: &str) -> Vec<Side> {
    let mut kinds = Vec::new();
    if !spec.is_empty() && Path::new(spec).exists() {
        kinds.push(Side::Path(PathBuf::from(spec)));
    }
    if let Some(hex) = spec.strip_prefix(EVAL_RUN_PREFIX)
        && (1..=EVAL_RUN_HEX).contains(&hex.len())
        && is_lower_hex(hex)
    {
        kinds.push(Side::EvalRun(spec.to_string()));
    }
    if spec == "last" {
        kinds.push(Side::Last(0));
    } else if let Some(back) = spec.strip_prefix("last~")
        && !back.is_empty()
        && back.bytes().all(|b| b.is_ascii_digit())
        && let Ok(back) = back.parse()
    {
        kinds.push(Side::Last(back));
    }
    if looks_like_fingerprint(spec) || is_prefix(spec) {
        kinds.push(Side::Fingerprint(spec.to_string()));
    }
    kinds
}

/// The one kind `spec` names; `None` when it names none, an error when it
/// could be several (`./NAME` then names the path alone).
pub fn parse_side(spec: &str) -> Result<Option<Side>, VersionError> {
    let mut kinds = side_kinds(spec);
    match kinds.len() {
        0 => Ok(None),
        1 => Ok(kinds.pop()),
        _ => Err(VersionError::SeveralKinds {
            spec: crate::text::quote(spec),
            kinds: kinds.iter().map(|kind| kind.kind().to_string()).collect(),
        }),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    #[error("`{spec}` could name {}; write `./{spec}` for the path", .kinds.join(" or "))]
    SeveralKinds { spec: String, kinds: Vec<String> },
    #[error(transparent)]
    Overrides(#[from] crate::prompts::overrides::OverrideError),
    #[error("`{prefix}` matches {} recorded prompt versions: {}; give more of it", .matches.len(), .matches.join(", "))]
    Ambiguous {
        prefix: String,
        matches: Vec<String>,
    },
    #[error("no prompt version recorded in `{runs_dir}` starts with `{prefix}`{hint}")]
    NoMatch {
        prefix: String,
        runs_dir: String,
        hint: String,
    },
}

/// The fingerprint `spec` names, or `None` when it is neither a path nor a
/// fingerprint (nor a prefix of one).
pub fn fingerprint_for(
    spec: &str,
    runs_dir: &Path,
    registry: &PromptRegistry,
) -> Result<Option<String>, VersionError> {
    match parse_side(spec)? {
        Some(Side::Path(path)) => {
            let set = OverrideSet::load(&[path])?;
            return Ok(Some(fingerprint(
                &resolve_overrides(&set.prompts, registry).applied,
            )));
        }
        Some(Side::Fingerprint(_)) => {}
        _ => return Ok(None),
    }
    if looks_like_fingerprint(spec) {
        return Ok(Some(spec.to_string()));
    }
    let recorded = recorded_fingerprints(runs_dir);
    let matches: Vec<String> = recorded
        .iter()
        .filter(|fp| fp.starts_with(spec))
        .cloned()
        .collect();
    match matches.len() {
        1 => Ok(matches.into_iter().next()),
        0 => {
            let starts: Vec<&str> = recorded.iter().map(|fp| &fp[..spec.len()]).collect();
            let hint = crate::text::closest(spec, starts.iter().copied())
                .and_then(|start| recorded.iter().find(|fp| fp.starts_with(start)))
                .map(|near| format!("; did you mean `{near}`?"))
                .unwrap_or_default();
            Err(VersionError::NoMatch {
                prefix: spec.to_string(),
                runs_dir: runs_dir.display().to_string(),
                hint,
            })
        }
        _ => Err(VersionError::Ambiguous {
            prefix: spec.to_string(),
            matches,
        }),
    }
}

/// 6 to 11 lowercase hex characters: shorter than a whole fingerprint.
fn is_prefix(spec: &str) -> bool {
    (MIN_PREFIX..12).contains(&spec.len()) && is_lower_hex(spec)
}

/// The 12-hex prompt versions recorded in `runs_dir`: its fingerprint
/// folders, sorted.
fn recorded_fingerprints(runs_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(runs_dir) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.len() == 12 && looks_like_fingerprint(name))
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_with(versions: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for version in versions {
            std::fs::create_dir(dir.path().join(version)).unwrap();
        }
        dir
    }

    #[test]
    fn a_unique_prefix_names_its_version_and_others_are_errors_naming_the_matches() {
        let runs = runs_with(&["6ebc72c8dd76", "6ebc72f00000", "a1b2c3d4e5f6", "default"]);
        let registry = PromptRegistry::embedded();
        let of = |spec: &str| fingerprint_for(spec, runs.path(), registry);
        assert_eq!(of("a1b2c3").unwrap().as_deref(), Some("a1b2c3d4e5f6"));
        assert_eq!(of("default").unwrap().as_deref(), Some("default"));
        assert_eq!(of("ffffffffffff").unwrap().as_deref(), Some("ffffffffffff"));
        assert_eq!(of("6ebc72c").unwrap().as_deref(), Some("6ebc72c8dd76"));
        assert_eq!(
            of("6ebc72").unwrap_err().to_string(),
            "`6ebc72` matches 2 recorded prompt versions: 6ebc72c8dd76, 6ebc72f00000; give more of it"
        );
        let none = of("a1b2c4").unwrap_err().to_string();
        assert!(none.contains("did you mean `a1b2c3d4e5f6`?"), "{none}");
        assert_eq!(of("abc").unwrap(), None, "too short to be a prefix");
        assert_eq!(of("not-hex-at-all").unwrap(), None);
    }

    #[test]
    fn each_kind_of_side_is_told_apart() {
        assert_eq!(
            parse_side("ev-3f9a").unwrap(),
            Some(Side::EvalRun("ev-3f9a".into()))
        );
        assert_eq!(parse_side("last").unwrap(), Some(Side::Last(0)));
        assert_eq!(parse_side("last~12").unwrap(), Some(Side::Last(12)));
        assert_eq!(
            parse_side("6ebc72").unwrap(),
            Some(Side::Fingerprint("6ebc72".into()))
        );
        assert_eq!(
            parse_side("default").unwrap(),
            Some(Side::Fingerprint("default".into()))
        );
        for none in [
            "",
            "ev-",
            "ev-0123456789a",
            "ev-ABC",
            "last~",
            "last~-1",
            "last~1x",
            "abc",
            "~",
        ] {
            assert_eq!(parse_side(none).unwrap(), None, "{none:?}");
        }
        assert_eq!(parse_side("last~99999999999999999999").unwrap(), None);
        // (An existing path named like another kind: tests/it/eval_history.rs,
        // which runs the binary in a folder holding a file `last`.)
        let here = std::env::current_dir().unwrap().join("Cargo.toml");
        assert_eq!(
            parse_side(here.to_str().unwrap()).unwrap(),
            Some(Side::Path(here))
        );
        assert!(is_eval_run_id("ev-0123456789") && !is_eval_run_id("ev-012345678"));
    }

    proptest::proptest! {
        #[test]
        fn side_parsing_never_panics(spec in "(ev-|last~|\\./)?[0-9a-fA-Z~é\\x00-\\x1f/.-]{0,16}") {
            let registry = PromptRegistry::embedded();
            let _ = parse_side(&spec);
            let _ = side_kinds(&spec);
            let _ = fingerprint_for(&spec, Path::new("/nonexistent-runs"), registry);
        }
    }
}
