//! How run logs are named, in one place: `<runs dir>/<fingerprint>/<UTC
//! time>-<turn id>.ndjson`, with a `.partial` suffix while being written.
//! The recorder creates these names; listing, finding and reading go by them.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

/// The suffix of a run log still being written (or abandoned).
pub const PARTIAL_SUFFIX: &str = ".partial";

/// Where a turn's log goes: its final path, and the `.partial` path it is
/// written at until complete.
pub fn log_paths(
    runs_dir: &Path,
    fingerprint: &str,
    turn_id: &str,
    started_at: DateTime<Utc>,
) -> (PathBuf, PathBuf) {
    let dir = runs_dir.join(fingerprint);
    let name = format!(
        "{}-{turn_id}.ndjson",
        started_at.format("%Y%m%dT%H%M%S%.3fZ")
    );
    let partial = dir.join(format!("{name}{PARTIAL_SUFFIX}"));
    (dir.join(name), partial)
}

/// Still being written, or abandoned by a process that died.
pub fn is_partial(path: &Path) -> bool {
    path.to_string_lossy().ends_with(PARTIAL_SUFFIX)
}

/// A run log by its name, finished or partial.
pub fn is_run_log(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with(".ndjson") || name.ends_with(&format!(".ndjson{PARTIAL_SUFFIX}"))
}

/// A file kept beside a run log: `runs/<fp>/<time>-<id>.ndjson` (or its
/// `.partial`) → `runs/<fp>/<time>-<id>.<extension>` (`feedback.jsonl`,
/// `verdict.json`). Not `.ndjson`, so no run-log reader takes it for a log.
pub fn sidecar_path(log: &Path, extension: &str) -> PathBuf {
    let name = log
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    let stem = name.strip_suffix(PARTIAL_SUFFIX).unwrap_or(name);
    let stem = stem.strip_suffix(".ndjson").unwrap_or(stem);
    log.with_file_name(format!("{stem}.{extension}"))
}

/// `x.ndjson.partial` → `x.ndjson`.
pub fn finished_name(path: &Path) -> Option<PathBuf> {
    let name = path.to_str()?.strip_suffix(PARTIAL_SUFFIX)?;
    Some(PathBuf::from(name))
}

/// `<time>-<turn id>.ndjson[.partial]` → the turn id.
pub fn turn_id_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(PARTIAL_SUFFIX).unwrap_or(name);
    let stem = name.strip_suffix(".ndjson")?;
    stem.split_once('-').map(|(_, id)| id)
}
