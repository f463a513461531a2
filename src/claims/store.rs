//! The local claim store: a folder of `<id>.json|.yaml|.yml` files.
//!
//! Ids are checked against the SPEC pattern before any path is built, so no
//! id (`../x`, `/etc/passwd`, `a/b`) can reach a file outside the store.

use std::path::{Path, PathBuf};

use super::ClaimError;
use super::load::{LoadedClaim, load_claim_file};

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
        load_claim_file(&path)
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
