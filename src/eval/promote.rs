//! Recorded turns promoted to regression cases (`cases from-runs`, SPEC
//! §15): each turn becomes one JSONL row a suite reads with `casesFrom` —
//! the same question of the same claim, with the capability and options
//! it was asked with, tagged `from-review` and naming the turn it came
//! from, its expectation seeded from the reviewer's label.

use serde_json::{Map, Value, json};

use crate::runs::RunLog;
use crate::runs::labels::LabelRecord;

/// The tag every promoted case carries.
pub const FROM_REVIEW: &str = "from-review";

/// Why a turn cannot become a case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromoteError {
    /// The turn's claim has no id on record (it could not be resolved):
    /// a case names its claim by id.
    #[error("turn {0} recorded no claim id: a case names its claim by id")]
    NoClaimId(String),
    /// The recorded request has no user message to ask again.
    #[error("turn {0} recorded no user message to ask again")]
    NoMessage(String),
}

/// What seeds a promoted case's expectation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seeds {
    /// The correction as `answerContains` (`--expect-correction`).
    pub expect_correction: bool,
}

/// The case row for the turn in `log`, its expectation seeded from
/// `label` (the reviewer's current label, when there is one): the note as
/// a rubric criterion when the turn was judged on a rubric, the
/// correction as `answerContains` when `seeds` asks for it.
pub fn case_row(
    log: &RunLog,
    label: Option<&LabelRecord>,
    seeds: Seeds,
) -> Result<Value, PromoteError> {
    let header = &log.header;
    let request = &header.request;
    let turn_id = header.turn_id.clone();
    // An eval turn sends the claim it loaded from the store as a document:
    // the id the log resolved names it.
    let claim = (request.claim_id.clone())
        .or_else(|| header.claim.as_ref().map(|claim| claim.id.clone()))
        .ok_or_else(|| PromoteError::NoClaimId(turn_id.clone()))?;
    let asks = request
        .messages
        .last()
        .is_some_and(|m| m.role == crate::chat::request::Role::User && !m.text.trim().is_empty());
    if !asks {
        return Err(PromoteError::NoMessage(turn_id));
    }
    let mut case = Map::new();
    case.insert(
        "name".into(),
        json!(format!(
            "{FROM_REVIEW}-{}",
            &turn_id[..turn_id.len().min(13)]
        )),
    );
    case.insert("from".into(), json!(turn_id));
    match request.messages.as_slice() {
        [only] => case.insert("message".into(), json!(only.text)),
        all => case.insert("history".into(), json!(all)),
    };
    case.insert("claims".into(), json!({"ids": [claim]}));
    case.insert("tags".into(), json!([FROM_REVIEW]));
    if let Some(capability) = &request.capability {
        case.insert("capability".into(), json!(capability));
    }
    if let Some(locale) = &request.locale {
        case.insert("locale".into(), json!(locale));
    }
    if let Some(brand) = &request.brand {
        case.insert("brand".into(), json!(brand));
    }
    case.insert("screenActions".into(), json!(request.screen_actions));
    case.insert("voice".into(), json!(request.voice));
    case.insert("today".into(), json!(request.today));
    let expect = expectation(log, label, seeds);
    if !expect.is_empty() {
        case.insert("expect".into(), Value::Object(expect));
    }
    Ok(Value::Object(case))
}

/// The expectation a label seeds.
fn expectation(log: &RunLog, label: Option<&LabelRecord>, seeds: Seeds) -> Map<String, Value> {
    let mut expect = Map::new();
    let Some(label) = label else {
        return expect;
    };
    let judged_on_rubric = log
        .footer
        .as_ref()
        .and_then(|footer| footer.verdict.as_ref())
        .is_some_and(|verdict| !verdict.rubric.is_empty());
    let note = label
        .note
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    if let (true, Some(note)) = (judged_on_rubric, note) {
        expect.insert("rubric".into(), json!([note]));
    }
    let correction = (label.correction.as_deref())
        .map(str::trim)
        .filter(|c| !c.is_empty());
    if let (true, Some(correction)) = (seeds.expect_correction, correction) {
        expect.insert("answerContains".into(), json!([correction]));
    }
    expect
}

/// The turn ids the rows of a JSONL dataset came `from`: a turn already
/// there is not appended again. Lines that are not JSON objects are left
/// to the suite's reader to report.
pub fn promoted_turns(dataset: &str) -> std::collections::BTreeSet<String> {
    dataset
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|row| row.get("from")?.as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::promoted_turns;

    proptest::proptest! {
        /// Whatever a dataset holds, the turns it came from are read
        /// without panicking: only a JSON object's string `from` counts.
        #[test]
        fn any_dataset_text_reads_without_panicking(text in "\\PC{0,300}", from in "[a-f0-9-]{1,20}") {
            // A `from` that is not a string (a number, a list) names no turn.
            let dataset = format!("{text}\n{{\"from\":\"{from}\",\"name\":\"x\"}}\n{{\"from\":[\"q\"]}}\n");
            let turns = promoted_turns(&dataset);
            proptest::prop_assert!(turns.contains(&from));
            proptest::prop_assert!(!turns.contains("q"));
        }
    }
}
