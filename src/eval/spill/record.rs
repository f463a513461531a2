//! One line of the spill: a kept `TurnResult`, flat, as JSON (what is
//! absent or false left out), and back. A run log path that is not UTF-8
//! is kept as hexadecimal.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Damage;
use crate::eval::expect::{Observation, Outcome, Verdict};
use crate::eval::matrix::TurnSpec;
use crate::eval::runner::TurnResult;
use crate::event::Usage;
use crate::judge::RubricVerdict;

/// One line of the spill: a kept `TurnResult`, flat (what is absent or
/// false left out: ~0.5 KB a one-call turn).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Record {
    pub(super) index: usize,
    variant: usize,
    claim: String,
    case: usize,
    sample: u32,
    outcome: Outcome,
    failures: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    rubric: Vec<RubricVerdict>,
    answer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    cancelled: bool,
    rounds: u32,
    usage: Usage,
    latency_ms: u64,
    thinking_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
    cached_calls: u32,
    #[serde(default, skip_serializing_if = "is_false")]
    remote: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    eval_run: Option<String>,
    /// The run log's path, when it is UTF-8 …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_log: Option<String>,
    /// … else its bytes in hexadecimal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_log_hex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log_error: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    from_log: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

/// Only the index of a record, for the checking scan.
#[derive(Deserialize)]
pub(super) struct Head {
    pub(super) index: usize,
}

/// Of a record a pass has read whole already, what an eval run's history
/// keeps: its turn id and whether it was taken from a log (the rest of the
/// line is skipped, not decoded).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TurnIdOf<'a> {
    pub(super) index: usize,
    #[serde(borrow, default)]
    pub(super) turn_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    pub(super) from_log: bool,
}

impl Record {
    pub(super) fn of(result: TurnResult) -> Record {
        let TurnResult {
            spec,
            observation: seen,
            verdict,
            run_log,
            log_error,
            from_log,
        } = result;
        let (run_log, run_log_hex) = match run_log.map(PathBuf::into_os_string) {
            None => (None, None),
            Some(path) => match path.into_string() {
                Ok(text) => (Some(text), None),
                Err(raw) => {
                    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(raw.as_os_str());
                    (None, Some(data_encoding::HEXLOWER.encode(bytes)))
                }
            },
        };
        Record {
            index: spec.index,
            variant: spec.variant,
            claim: spec.claim_id,
            case: spec.case,
            sample: spec.sample,
            outcome: verdict.outcome,
            failures: verdict.failures,
            rubric: verdict.rubric,
            answer: seen.answer,
            error: seen.error,
            cancelled: seen.cancelled,
            rounds: seen.rounds,
            usage: seen.usage,
            latency_ms: seen.latency_ms,
            thinking_tokens: seen.thinking_tokens,
            cost_usd: seen.cost_usd,
            cached_calls: seen.cached_calls,
            remote: seen.remote,
            turn_id: seen.turn_id,
            eval_run: seen.eval_run,
            run_log,
            run_log_hex,
            log_error,
            from_log,
        }
    }

    pub(super) fn into_result(self) -> Result<TurnResult, Damage> {
        let run_log = match (self.run_log, self.run_log_hex) {
            (Some(text), None) => Some(PathBuf::from(text)),
            (None, Some(hex)) => {
                let bytes = data_encoding::HEXLOWER
                    .decode(hex.as_bytes())
                    .map_err(|_| Damage::NotHex)?;
                let os = <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes);
                Some(PathBuf::from(os))
            }
            (None, None) => None,
            (Some(_), Some(_)) => return Err(Damage::TwoPaths),
        };
        let observation = Observation {
            answer: self.answer,
            error: self.error,
            cancelled: self.cancelled,
            rounds: self.rounds,
            usage: self.usage,
            latency_ms: self.latency_ms,
            thinking_tokens: self.thinking_tokens,
            cost_usd: self.cost_usd,
            cached_calls: self.cached_calls,
            remote: self.remote,
            turn_id: self.turn_id,
            eval_run: self.eval_run,
            ..Observation::default()
        };
        let spec = TurnSpec {
            index: self.index,
            variant: self.variant,
            claim_id: self.claim,
            case: self.case,
            sample: self.sample,
        };
        let verdict = Verdict {
            outcome: self.outcome,
            failures: self.failures,
            rubric: self.rubric,
        };
        Ok(TurnResult {
            run_log,
            log_error: self.log_error,
            from_log: self.from_log,
            ..TurnResult::new(&spec, observation, verdict)
        })
    }
}
