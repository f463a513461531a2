//! The folders a command needs, checked before it does anything (exit 2):
//! the claim store a claim id is looked up in, and the runs folder turns are
//! recorded into — so that a missing store is not reported as a missing
//! claim, and an unwritable runs folder is not found after every paid turn.

use std::path::Path;

use promptlab::claims::ClaimStore;

use super::error::CliError;

/// The claim store exists (a claim id is looked up in it).
pub fn claims_folder(store: &ClaimStore) -> Result<(), CliError> {
    if store.dir().is_dir() {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "the claim store `{}` is not a folder: run where the claims/ folder is, or point \
         --claims-dir (or PROMPTLAB_CLAIMS_DIR) at one",
        store.dir().display()
    )))
}

/// Run logs can be written under `runs_dir`: it, or the nearest folder
/// above it that exists (where it would be created), takes a new file —
/// checked by creating and removing one.
pub fn runs_folder_writable(runs_dir: &Path) -> Result<(), CliError> {
    let refused = |why: String| {
        CliError::usage(format!(
            "cannot record run logs in `{}` (--runs-dir, PROMPTLAB_RUNS_DIR): {why}; \
             nothing was run",
            runs_dir.display()
        ))
    };
    let mut existing = runs_dir;
    while !existing.exists() {
        // A link to nothing: no folder can be made under its name.
        if let Ok(target) = std::fs::read_link(existing) {
            return Err(refused(format!(
                "`{}` is a link to `{}`, which does not exist",
                existing.display(),
                target.display()
            )));
        }
        match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
            _ => {
                existing = Path::new(".");
                break;
            }
        }
    }
    if !existing.is_dir() {
        return Err(refused(format!("`{}` is not a folder", existing.display())));
    }
    // Named afresh, and removed as it is dropped: another process's probe,
    // or one a killed run left, is never in the way.
    match tempfile::Builder::new()
        .prefix(".promptlab-write-check-")
        .tempfile_in(existing)
    {
        Ok(_) => Ok(()),
        Err(error) => Err(refused(format!(
            "`{}` does not take new files: {error}",
            existing.display()
        ))),
    }
}
