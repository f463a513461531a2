//! How run logs are named, in one place: `<runs dir>/<fingerprint>/<UTC
//! time>-<turn id>.ndjson`, with a `.partial` suffix while being written.
//! The recorder creates these names; listing, finding and reading go by them.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, Utc};

/// The suffix of a run log still being written (or abandoned).
pub const PARTIAL_SUFFIX: &str = ".partial";

/// Gives a complete log its final name; a folder that takes no more names
/// is named as the cause (`full_folder`).
pub fn give_final_name(partial_path: &Path, final_path: &Path) -> std::io::Result<()> {
    std::fs::rename(partial_path, final_path)
        .map_err(|error| super::full_folder::explain(error, final_path))
}

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
        started_at.format_with_items(LOG_TIME.iter())
    );
    let partial = dir.join(format!("{name}{PARTIAL_SUFFIX}"));
    (dir.join(name), partial)
}

/// The UTC time a log's name starts with, parsed once: `format` would parse
/// the pattern again for every turn.
static LOG_TIME: LazyLock<Vec<Item<'static>>> =
    LazyLock::new(|| StrftimeItems::new("%Y%m%dT%H%M%S%.3fZ").collect());

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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_log_is_named_by_its_utc_start_to_the_millisecond_and_its_turn() {
        let started_at = Utc
            .with_ymd_and_hms(2026, 11, 30, 2, 27, 58)
            .unwrap()
            .checked_add_signed(chrono::TimeDelta::microseconds(416_907))
            .unwrap();
        let (done, partial) = log_paths(Path::new("runs"), "fp", "id-1", started_at);
        let name = "20261130T022758.416Z-id-1.ndjson";
        assert_eq!(done, Path::new("runs/fp").join(name));
        assert_eq!(
            partial,
            Path::new("runs/fp").join(format!("{name}.partial"))
        );
    }
}
