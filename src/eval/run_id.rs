//! Eval run ids: `ev-` + 10 lowercase hex characters, one per `eval`
//! invocation (or shared by the shards of one CI run with `--eval-run`).
//! The prefix keeps an id apart from a fingerprint (12 hex) and a turn id
//! (a UUID) wherever both are accepted.

/// What an eval run did: ran turns, merged shards' logs, or re-scored them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EvalRunKind {
    Run,
    Merge,
    Rescore,
}

const PREFIX: &str = "ev-";
const HEX_DIGITS: usize = 10;

/// A fresh id from 40 random bits (a UUID v4's).
pub fn new_eval_run_id() -> String {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{}", &hex[..HEX_DIGITS])
}

/// Whether `text` is an eval run id: `ev-` and 10 lowercase hex characters.
pub fn is_eval_run_id(text: &str) -> bool {
    text.strip_prefix(PREFIX).is_some_and(|hex| {
        hex.len() == HEX_DIGITS && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// `--eval-run ID`, checked: the id, or why it is not one.
pub fn parse_eval_run_id(text: &str) -> Result<String, NotAnEvalRunId> {
    if is_eval_run_id(text) {
        return Ok(text.to_string());
    }
    Err(NotAnEvalRunId {
        quoted: crate::text::quote(text),
        example: new_eval_run_id(),
    })
}

#[derive(Debug, thiserror::Error)]
#[error("`{quoted}` is not an eval run id: `ev-` and 10 lowercase hex characters, e.g. {example}")]
pub struct NotAnEvalRunId {
    quoted: String,
    example: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_have_the_form_and_others_are_refused() {
        let id = new_eval_run_id();
        assert!(is_eval_run_id(&id), "{id}");
        assert_ne!(id, new_eval_run_id());
        for bad in [
            "ev-",
            "ev-0123456789a",
            "ev-012345678",
            "ev-ABCDEF0123",
            "6ebc72c8dd76",
            "ex-0123456789",
        ] {
            assert!(parse_eval_run_id(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_eval_run_id("ev-0123456789").unwrap(), "ev-0123456789");
    }
}
