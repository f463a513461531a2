//! Naming a prompt version on the command line, by the one precedence rule
//! every command shares (`compare A B`, `runs list --fingerprint`): a path
//! first (an override file or folder, by its fingerprint), then a
//! fingerprint — `default`, all 12 hex characters, or a unique prefix of at
//! least 6 of a version recorded in the runs folder, as `runs show` takes a
//! turn-id prefix. A prefix that matches several versions is an error
//! listing them; one that matches none says which recorded one is nearest.

use std::path::Path;

use crate::prompts::fingerprint::looks_like_fingerprint;
use crate::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};

/// The shortest fingerprint prefix taken.
pub const MIN_PREFIX: usize = 6;

#[derive(Debug, thiserror::Error)]
pub enum VersionError {
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
    let path = Path::new(spec);
    if path.is_file() || path.is_dir() {
        let set = OverrideSet::load(&[path.to_path_buf()])?;
        return Ok(Some(fingerprint(
            &resolve_overrides(&set.prompts, registry).applied,
        )));
    }
    if looks_like_fingerprint(spec) {
        return Ok(Some(spec.to_string()));
    }
    if !is_prefix(spec) {
        return Ok(None);
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
    (MIN_PREFIX..12).contains(&spec.len())
        && spec.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
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
}
