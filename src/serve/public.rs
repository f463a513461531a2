//! What API answers may say about files: names relative to the claims and
//! runs folders, never an absolute path or where a link points. A page (or
//! whoever reads its answers) learns nothing about the machine's layout.

use std::path::{Path, PathBuf};

use regex::Regex;

/// The folders answers are relative to.
#[derive(Debug, Clone, Default)]
pub struct PublicPaths {
    /// Each folder's prefixes as they may appear in a message (as given,
    /// absolute, canonical), longest first, each ending in `/`.
    prefixes: Vec<String>,
    runs_dir: Option<PathBuf>,
}

impl PublicPaths {
    pub fn new(claims_dir: &Path, runs_dir: Option<&Path>) -> PublicPaths {
        let mut paths = PublicPaths {
            prefixes: Vec::new(),
            runs_dir: runs_dir.map(Path::to_path_buf),
        };
        for dir in std::iter::once(claims_dir).chain(runs_dir) {
            paths = paths.and(dir);
        }
        paths
    }

    /// These paths with one more folder that answers name files relative to
    /// (the overrides folder).
    pub fn and(mut self, dir: &Path) -> PublicPaths {
        let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let canonical = dir.canonicalize().unwrap_or_else(|_| absolute.clone());
        for form in [dir.to_path_buf(), absolute, canonical] {
            let text = form.display().to_string();
            let text = text.trim_end_matches('/');
            if !text.is_empty() {
                self.prefixes.push(format!("{text}/"));
            }
        }
        self.prefixes
            .sort_by_key(|prefix| std::cmp::Reverse(prefix.len()));
        self.prefixes.dedup();
        self
    }

    /// `message` with the folders' prefixes taken off, and any other
    /// absolute path in backquotes (a link's target) left out.
    pub fn message(&self, message: &str) -> String {
        let mut text = message.to_string();
        for prefix in &self.prefixes {
            text = text.replace(prefix.as_str(), "");
        }
        outside_path()
            .replace_all(&text, "`(a path outside the folder)`")
            .into_owned()
    }

    /// A run log's path relative to the runs folder (its file name when it
    /// is not under it).
    pub fn run_path(&self, path: &Path) -> PathBuf {
        let relative = self
            .runs_dir
            .as_deref()
            .and_then(|dir| path.strip_prefix(dir).ok());
        match relative {
            Some(relative) => relative.to_path_buf(),
            None => PathBuf::from(path.file_name().unwrap_or_default()),
        }
    }
}

/// A backquoted absolute path (Unix or Windows).
fn outside_path() -> &'static Regex {
    static PATTERN: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    PATTERN.get_or_init(|| Regex::new(r"`(/|[A-Za-z]:\\)[^`]*`").expect("a valid pattern"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_prefixes_and_link_targets_are_left_out() {
        let paths = PublicPaths::new(Path::new("/srv/claims"), Some(Path::new("/srv/runs")));
        assert_eq!(
            paths.message("failed to read claim file `/srv/claims/a.json`: it is a link to `/etc/passwd`, outside"),
            "failed to read claim file `a.json`: it is a link to `(a path outside the folder)`, outside"
        );
        assert_eq!(
            paths.run_path(Path::new("/srv/runs/v1/x.ndjson")),
            Path::new("v1/x.ndjson")
        );
        assert_eq!(
            paths.run_path(Path::new("/elsewhere/x.ndjson")),
            Path::new("x.ndjson")
        );
    }
}
