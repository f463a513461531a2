//! People's verdicts on recorded turns (SPEC §15): one small immutable
//! file per label, `<log stem>.labels/<UTC time>-<uuid>.json`, so that two
//! reviewers never overwrite each other and an object store can hold them.
//! A later label by the same reviewer supersedes the earlier (both kept);
//! with several reviewers a turn's label is the majority of their current
//! ones, and a tie is disputed. The run log itself is never rewritten.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest note or correction kept, in bytes.
pub const MAX_LABEL_TEXT_BYTES: usize = 16 * 1024;
/// The largest label file read; a label is a few hundred bytes.
pub const MAX_LABEL_FILE_BYTES: u64 = 64 * 1024;
/// The most label files read beside one log (reviewers × relabels).
pub const MAX_LABELS_PER_TURN: usize = 1_000;

/// A person's pass or fail.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LabelVerdict {
    Pass,
    Fail,
}

impl LabelVerdict {
    pub fn passed(self) -> bool {
        self == LabelVerdict::Pass
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LabelVerdict::Pass => "pass",
            LabelVerdict::Fail => "fail",
        }
    }
}

impl std::str::FromStr for LabelVerdict {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "pass" => Ok(LabelVerdict::Pass),
            "fail" => Ok(LabelVerdict::Fail),
            other => Err(format!(
                "`{}` is not a verdict: pass or fail",
                crate::text::one_line(other, 40)
            )),
        }
    }
}

/// One label, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelRecord {
    pub turn_id: String,
    pub verdict: LabelVerdict,
    /// Per rubric criterion (its text as the suite gives it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub criteria: BTreeMap<String, LabelVerdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the answer should have said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<String>,
    pub reviewer: String,
    pub at: DateTime<Utc>,
}

/// `runs/<fp>/<time>-<id>.ndjson` → `runs/<fp>/<time>-<id>.labels/`.
pub fn labels_dir(log: &Path) -> PathBuf {
    super::naming::sidecar_path(log, "labels")
}

/// Writes `record` as a new file beside `log`, whole or not at all, synced
/// (a label is a person's work): the folder is made if missing, and a
/// link at its name or the file's is never followed.
pub fn write_label(log: &Path, record: &LabelRecord) -> io::Result<PathBuf> {
    let dir = labels_dir(log);
    let name = format!(
        "{}-{}.json",
        record.at.format("%Y%m%dT%H%M%S%.3fZ"),
        uuid::Uuid::new_v4()
    );
    let mut text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
    text.push('\n');
    crate::whole_file::create_record(&dir, &name, text.as_bytes())
        .map_err(|error| super::full_folder::explain(error, &dir))
}

/// The longest reviewer name taken.
pub const MAX_REVIEWER_CHARS: usize = 200;

/// A reviewer name that cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadReviewer {
    #[error("the reviewer's name is empty")]
    Empty,
    #[error("the reviewer's name is longer than {MAX_REVIEWER_CHARS} characters")]
    TooLong,
    #[error("the reviewer's name holds a control character (a newline, an escape)")]
    Control,
}

/// `name` trimmed, when it can name a reviewer: not empty, at most
/// `MAX_REVIEWER_CHARS` characters, no control characters (it is shown
/// on terminals and pages, one per line).
pub fn reviewer_name(name: &str) -> Result<String, BadReviewer> {
    let name = name.trim();
    match name {
        "" => Err(BadReviewer::Empty),
        _ if name.chars().count() > MAX_REVIEWER_CHARS => Err(BadReviewer::TooLong),
        _ if name.chars().any(char::is_control) => Err(BadReviewer::Control),
        _ => Ok(name.to_string()),
    }
}

/// The first of `given` criteria that is not among those the turn's judge
/// was asked about (`judged`): a label may name only those.
pub fn unjudged_criterion<'a>(
    judged: &[String],
    given: impl IntoIterator<Item = &'a String>,
) -> Option<&'a String> {
    given
        .into_iter()
        .find(|criterion| !judged.contains(criterion))
}

/// A label file beside a log that could not be read as one.
#[derive(Debug, thiserror::Error)]
#[error("the label `{path}` cannot be read: {why}")]
pub struct UnreadableLabel {
    pub path: String,
    pub why: String,
}

/// The labels beside `log` for turn `turn_id`, oldest first (by time, then
/// file name); none when there is no folder. A file that is not a label
/// of this turn (bad JSON, over the bound, a link, another turn's id) is
/// returned as unreadable, never counted.
pub fn read_labels(
    log: &Path,
    turn_id: &str,
) -> io::Result<(Vec<LabelRecord>, Vec<UnreadableLabel>)> {
    let dir = labels_dir(log);
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            let why = "a link or a file, not a folder of labels".to_string();
            let path = dir.display().to_string();
            return Ok((Vec::new(), vec![UnreadableLabel { path, why }]));
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(error) => return Err(error),
    }
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    names.sort();
    let mut unreadable = Vec::new();
    if names.len() > MAX_LABELS_PER_TURN {
        unreadable.push(UnreadableLabel {
            path: dir.display().to_string(),
            why: format!(
                "{} labels, more than the {MAX_LABELS_PER_TURN} read; the newest are left out",
                names.len()
            ),
        });
        names.truncate(MAX_LABELS_PER_TURN);
    }
    let mut labels = Vec::new();
    for path in names {
        match read_one(&path, turn_id) {
            Ok(label) => labels.push(label),
            Err(problem) => unreadable.push(problem),
        }
    }
    // File names begin with the time: a stable order for equal times.
    labels.sort_by_key(|label| label.at);
    Ok((labels, unreadable))
}

fn read_one(path: &Path, turn_id: &str) -> Result<LabelRecord, UnreadableLabel> {
    let unreadable = |why: String| UnreadableLabel {
        path: path.display().to_string(),
        why,
    };
    let meta = std::fs::symlink_metadata(path).map_err(|error| unreadable(error.to_string()))?;
    if !meta.is_file() {
        return Err(unreadable("not a regular file".into()));
    }
    if meta.len() > MAX_LABEL_FILE_BYTES {
        return Err(unreadable(format!(
            "{} bytes, over the {MAX_LABEL_FILE_BYTES}-byte bound",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|error| unreadable(error.to_string()))?;
    let label: LabelRecord =
        serde_json::from_str(&text).map_err(|error| unreadable(error.to_string()))?;
    if label.turn_id != turn_id {
        return Err(unreadable(format!(
            "it labels turn {}, not {turn_id}",
            crate::text::one_line(&label.turn_id, 40)
        )));
    }
    Ok(label)
}

/// A turn's label after every reviewer has had their say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnLabel {
    /// The majority of the reviewers' current labels.
    Agreed(LabelVerdict),
    /// As many say pass as fail.
    Disputed,
}

impl TurnLabel {
    /// The verdict, unless disputed.
    pub fn verdict(self) -> Option<LabelVerdict> {
        match self {
            TurnLabel::Agreed(verdict) => Some(verdict),
            TurnLabel::Disputed => None,
        }
    }
}

/// Each reviewer's newest label (`labels` oldest first).
pub fn current_by_reviewer(labels: &[LabelRecord]) -> BTreeMap<&str, &LabelRecord> {
    let mut current = BTreeMap::new();
    for label in labels {
        current.insert(label.reviewer.as_str(), label);
    }
    current
}

/// The majority of `verdicts`; `None` when there are none.
pub fn majority(verdicts: impl IntoIterator<Item = LabelVerdict>) -> Option<TurnLabel> {
    let (mut pass, mut fail) = (0usize, 0usize);
    for verdict in verdicts {
        match verdict {
            LabelVerdict::Pass => pass += 1,
            LabelVerdict::Fail => fail += 1,
        }
    }
    match (pass + fail, pass.cmp(&fail)) {
        (0, _) => None,
        (_, std::cmp::Ordering::Greater) => Some(TurnLabel::Agreed(LabelVerdict::Pass)),
        (_, std::cmp::Ordering::Less) => Some(TurnLabel::Agreed(LabelVerdict::Fail)),
        (_, std::cmp::Ordering::Equal) => Some(TurnLabel::Disputed),
    }
}

/// The turn's label: the majority of each reviewer's newest; `None`
/// without labels.
pub fn turn_label(labels: &[LabelRecord]) -> Option<TurnLabel> {
    majority(current_by_reviewer(labels).values().map(|l| l.verdict))
}

/// One criterion's label: the majority of the reviewers' newest labels
/// that judge it.
pub fn criterion_label(labels: &[LabelRecord], criterion: &str) -> Option<TurnLabel> {
    let current = current_by_reviewer(labels);
    majority(
        current
            .values()
            .filter_map(|label| label.criteria.get(criterion).copied()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(reviewer: &str, verdict: LabelVerdict, second: u32) -> LabelRecord {
        use chrono::TimeZone;
        LabelRecord {
            turn_id: "t".into(),
            verdict,
            criteria: BTreeMap::new(),
            note: None,
            correction: None,
            reviewer: reviewer.into(),
            at: Utc.with_ymd_and_hms(2026, 12, 6, 9, 0, second).unwrap(),
        }
    }

    #[test]
    fn a_reviewer_s_later_label_supersedes_and_a_tie_is_disputed() {
        use LabelVerdict::{Fail, Pass};
        let relabelled = [label("ann", Pass, 1), label("ann", Fail, 2)];
        assert_eq!(turn_label(&relabelled), Some(TurnLabel::Agreed(Fail)));
        let tie = [label("ann", Pass, 1), label("bob", Fail, 2)];
        assert_eq!(turn_label(&tie), Some(TurnLabel::Disputed));
        let two_to_one = [
            label("ann", Pass, 1),
            label("bob", Fail, 2),
            label("cy", Pass, 3),
        ];
        assert_eq!(turn_label(&two_to_one), Some(TurnLabel::Agreed(Pass)));
        assert_eq!(turn_label(&[]), None);
    }

    proptest::proptest! {
        /// Whatever a label file holds, reading it is a label of this turn
        /// or a reason, never a panic; only what parses as one is counted.
        #[test]
        fn any_bytes_in_a_label_file_read_without_panicking(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("20261206T090000.000Z-t.ndjson");
            std::fs::create_dir(labels_dir(&log)).unwrap();
            std::fs::write(labels_dir(&log).join("a.json"), &bytes).unwrap();
            let (labels, unreadable) = read_labels(&log, "t").unwrap();
            proptest::prop_assert_eq!(labels.len() + unreadable.len(), 1);
            if let Some(label) = labels.first() {
                let parsed: LabelRecord = serde_json::from_slice(&bytes).unwrap();
                proptest::prop_assert_eq!(label, &parsed);
            }
        }
    }
}
