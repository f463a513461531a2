//! Thumbs votes on a recorded turn (the seed ties them to `turnId`), kept
//! beside its run log in `<log stem>.feedback.jsonl`: one JSON record a
//! line, appended. The run log itself is never rewritten, and the `.jsonl`
//! name keeps the file out of every run-log reader (`naming::is_run_log`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest comment kept, in characters (UTF-16 code units, as counted
/// in production).
pub const MAX_COMMENT_CHARS: usize = 4_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Vote {
    Up,
    Down,
}

/// One vote, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackRecord {
    pub turn_id: String,
    pub vote: Vote,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    pub at: DateTime<Utc>,
}

/// `runs/<fp>/<time>-<id>.ndjson` → `runs/<fp>/<time>-<id>.feedback.jsonl`.
pub fn feedback_path(log: &Path) -> PathBuf {
    super::naming::sidecar_path(log, "feedback.jsonl")
}

/// Appends `record` beside `log` (one `write` of one line). A link planted
/// at the sidecar's name is never followed: the open fails instead.
pub fn append_feedback(log: &Path, record: &FeedbackRecord) -> io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = feedback_path(log);
    let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|error| super::full_folder::explain(refused_link(&path, error), &path))?;
    file.write_all(&line)?;
    Ok(path)
}

/// O_NOFOLLOW on a link fails with ELOOP: say what was there.
fn refused_link(path: &Path, error: io::Error) -> io::Error {
    if error.raw_os_error() == Some(libc::ELOOP) {
        return io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{}` is a link: sidecar files are never written through one",
                path.display()
            ),
        );
    }
    error
}

/// The votes recorded beside `log`, oldest first; none when there is no
/// file. Lines that do not parse are skipped (a vote is advisory).
pub fn read_feedback(log: &Path) -> io::Result<Vec<FeedbackRecord>> {
    let text = match std::fs::read_to_string(feedback_path(log)) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_go_beside_the_log_and_are_not_run_logs() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("20250101T000000.000Z-abc.ndjson");
        let path = feedback_path(&log);
        assert_eq!(
            path.file_name().unwrap(),
            "20250101T000000.000Z-abc.feedback.jsonl"
        );
        assert!(!super::super::naming::is_run_log(&path));
        assert_eq!(
            feedback_path(&dir.path().join("x.ndjson.partial")),
            dir.path().join("x.feedback.jsonl")
        );
        assert!(read_feedback(&log).unwrap().is_empty());
        let record = FeedbackRecord {
            turn_id: "abc".into(),
            vote: Vote::Down,
            comment: Some("wrong amount".into()),
            at: Utc::now(),
        };
        append_feedback(&log, &record).unwrap();
        append_feedback(&log, &record).unwrap();
        assert_eq!(read_feedback(&log).unwrap(), vec![record.clone(), record]);
    }
}
