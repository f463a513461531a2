//! The local claim store: a folder of `<id>.json|.yaml|.yml` files.
//!
//! Ids are checked against the SPEC pattern before any path is built, so no
//! id (`../x`, `/etc/passwd`, `a/b`) can reach a file outside the store, and
//! a symlink in the store that resolves outside it is refused. A file's
//! `id` must be its file name, so that the id a suite or a run log names is
//! the claim it gets.
//!
//! Claim ids (also documented in `docs/claims.md`): 1 to 128 characters of
//! `A–Z a–z 0–9 . _ -`, the first a letter or digit
//! (`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, SPEC §1.1). So an id is never
//! empty, never a path, and holds no control or other characters that a
//! terminal would interpret when it is echoed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ClaimError;
use super::load::{DocumentProblem, LoadedClaim, load_claim_file};

/// Extensions a claim file may have, in lookup order.
pub const CLAIM_EXTENSIONS: [&str; 3] = ["json", "yaml", "yml"];

#[derive(Debug, Clone)]
pub struct ClaimStore {
    dir: PathBuf,
}

/// One file in the store, before it is parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreEntry {
    pub id: String,
    pub path: PathBuf,
}

/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`
pub fn is_valid_claim_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl ClaimStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ClaimStore { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding claim `id`, if the id is valid and the file exists.
    pub fn locate(&self, id: &str) -> Option<PathBuf> {
        if !is_valid_claim_id(id) {
            return None;
        }
        CLAIM_EXTENSIONS
            .iter()
            .map(|ext| self.dir.join(format!("{id}.{ext}")))
            .find(|path| path.is_file())
    }

    /// Loads claim `id`: `Claim <id> not found.` when it is not in the store.
    pub fn load(&self, id: &str) -> Result<LoadedClaim, ClaimError> {
        let path = self
            .locate(id)
            .ok_or_else(|| ClaimError::NotFound(id.to_string()))?;
        self.load_entry(&StoreEntry {
            id: id.to_string(),
            path,
        })
    }

    /// Loads one store file: refused if it resolves outside the store, or
    /// if the `id` inside differs from the file name.
    pub fn load_entry(&self, entry: &StoreEntry) -> Result<LoadedClaim, ClaimError> {
        self.check_inside(&entry.path)?;
        let loaded = load_claim_file(&entry.path)?;
        if loaded.claim.id != entry.id {
            return Err(ClaimError::Invalid {
                origin: entry.path.display().to_string(),
                problem: DocumentProblem {
                    field: Some("id".into()),
                    line: None,
                    column: None,
                    message: format!(
                        "the file is named for `{}` but the claim's id is `{}`",
                        entry.id,
                        crate::text::quote(&loaded.claim.id).escape_debug()
                    ),
                },
            });
        }
        Ok(loaded)
    }

    /// A store file must resolve (through any symlinks) to a file inside
    /// the store folder: a link to `/etc/passwd` is not a claim.
    fn check_inside(&self, path: &Path) -> Result<(), ClaimError> {
        let read_error = |source| ClaimError::Read {
            path: path.display().to_string(),
            source,
        };
        let store = self.dir.canonicalize().map_err(read_error)?;
        let target = path.canonicalize().map_err(read_error)?;
        if target.starts_with(&store) {
            return Ok(());
        }
        Err(ClaimError::Read {
            path: path.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "it is a link to `{}`, outside the claim store",
                    target.display()
                ),
            ),
        })
    }

    /// Loads only the claims a selection names, opening no other file:
    /// `ids` exactly (each must be in the store and valid, else an error),
    /// and every file whose name matches one of `globs` (or every file, with
    /// `all`). A file matched only by a glob or `all` that cannot be loaded
    /// is skipped with a warning naming it, so that one broken claim does
    /// not stop a whole eval.
    pub fn load_selected(
        &self,
        ids: &[String],
        globs: &[String],
        all: bool,
    ) -> Result<SelectedClaims, ClaimError> {
        let mut selected = SelectedClaims::default();
        for id in ids {
            let loaded = self.load(id)?;
            selected.claims.insert(id.clone(), loaded);
        }
        if !all && globs.is_empty() {
            return Ok(selected);
        }
        for entry in self.entries()? {
            let wanted = all || globs.iter().any(|glob| glob_match(glob, &entry.id));
            if !wanted || selected.claims.contains_key(&entry.id) {
                continue;
            }
            match self.load_entry(&entry) {
                Ok(loaded) => {
                    selected.claims.insert(entry.id, loaded);
                }
                Err(error) => selected.warnings.push(format!("skipped a claim: {error}")),
            }
        }
        Ok(selected)
    }

    /// Every claim file in the store, sorted by id.
    pub fn entries(&self) -> Result<Vec<StoreEntry>, ClaimError> {
        let read_error = |source| ClaimError::Store {
            path: self.dir.display().to_string(),
            source,
        };
        let mut entries = Vec::new();
        for item in std::fs::read_dir(&self.dir).map_err(read_error)? {
            let path = item.map_err(read_error)?.path();
            let (Some(stem), Some(ext)) = (
                path.file_stem().and_then(|s| s.to_str()),
                path.extension().and_then(|s| s.to_str()),
            ) else {
                continue;
            };
            if CLAIM_EXTENSIONS.contains(&ext) && is_valid_claim_id(stem) && path.is_file() {
                entries.push(StoreEntry {
                    id: stem.to_string(),
                    path,
                });
            }
        }
        entries.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.path.cmp(&b.path)));
        Ok(entries)
    }
}

/// The claims a selection named, and why any matching file was skipped.
#[derive(Debug, Clone, Default)]
pub struct SelectedClaims {
    pub claims: BTreeMap<String, LoadedClaim>,
    /// One line per skipped file, naming it.
    pub warnings: Vec<String>,
}

/// `*` matches any run of characters, `?` any one.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_spec_pattern() {
        for good in ["a", "CLM-2024-0001", "x.y_z-1", &"a".repeat(128)] {
            assert!(is_valid_claim_id(good), "{good}");
        }
        for bad in [
            "",
            "../x",
            "..",
            ".hidden",
            "-x",
            "a/b",
            "a\\b",
            "a b",
            "é",
            &"a".repeat(129),
        ] {
            assert!(!is_valid_claim_id(bad), "{bad}");
        }
    }

    const CLAIM: &str = r#"{"id": "ID", "lineOfBusiness": "Household", "status": "open",
        "policy": {"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
        "incident": {"date": "2024-03-02", "description": "Leak"}}"#;

    fn store_with(files: &[(&str, &str)]) -> (tempfile::TempDir, ClaimStore) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let store = ClaimStore::new(dir.path());
        (dir, store)
    }

    fn claim(id: &str) -> String {
        CLAIM.replace("\"ID\"", &format!("\"{id}\""))
    }

    #[test]
    fn a_selection_opens_only_the_files_it_names() {
        // Regression: one invalid file in the store failed every eval.
        let (_dir, store) = store_with(&[
            ("A-1.json", &claim("A-1")),
            ("A-2.json", &claim("A-2")),
            ("B-1.json", "{ not json"),
            ("A-9.json", "also broken"),
        ]);
        let picked = store.load_selected(&["A-1".into()], &[], false).unwrap();
        assert_eq!(picked.claims.keys().collect::<Vec<_>>(), ["A-1"]);
        assert!(picked.warnings.is_empty());

        let globbed = store.load_selected(&[], &["A-*".into()], false).unwrap();
        assert_eq!(globbed.claims.keys().collect::<Vec<_>>(), ["A-1", "A-2"]);
        assert_eq!(globbed.warnings.len(), 1);
        assert!(
            globbed.warnings[0].contains("A-9.json"),
            "{:?}",
            globbed.warnings
        );

        let error = store
            .load_selected(&["B-1".into()], &[], false)
            .unwrap_err();
        assert!(error.to_string().contains("B-1.json"), "{error}");
    }

    #[test]
    fn an_id_that_differs_from_the_file_name_is_an_error_naming_both() {
        let (_dir, store) = store_with(&[("A-1.json", &claim("OTHER"))]);
        let error = store.load("A-1").unwrap_err().to_string();
        assert!(error.contains("OTHER") && error.contains("A-1"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_store_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.json");
        std::fs::write(&secret, claim("LEAK")).unwrap();
        let (dir, store) = store_with(&[("IN.json", &claim("IN"))]);
        std::os::unix::fs::symlink(&secret, dir.path().join("LEAK.json")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("IN.json"), dir.path().join("ALIAS.json"))
            .unwrap();
        let error = store.load("LEAK").unwrap_err().to_string();
        assert!(error.contains("outside the claim store"), "{error}");
        // A link inside the store is fine (its id must still match its name).
        assert!(
            store
                .load("ALIAS")
                .unwrap_err()
                .to_string()
                .contains("named for `ALIAS`")
        );
    }

    #[test]
    fn traversal_never_leaves_the_store() {
        let root = tempfile::tempdir().unwrap();
        let store_dir = root.path().join("claims");
        std::fs::create_dir(&store_dir).unwrap();
        // A perfectly valid claim, one level above the store.
        std::fs::write(root.path().join("outside.json"), "{}").unwrap();
        let store = ClaimStore::new(&store_dir);
        for id in [
            "../outside",
            "..%2foutside",
            "/etc/passwd",
            "claims/../outside",
        ] {
            match store.load(id) {
                Err(ClaimError::NotFound(reported)) => assert_eq!(reported, id),
                other => panic!("{id}: expected not found, got {other:?}"),
            }
        }
    }
}
