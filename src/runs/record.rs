//! The records of a run log (one NDJSON file per turn; `docs/run-logs.md`).
//!
//! Line 1 is always the `header`: small, so that `runs list` reads only it
//! and the last line. Logs of schema 3 name their prompt (the applied
//! override texts, the assembled blocks, the tool declarations), stored once
//! for every log that used it (`runs::prompt_store`); older ones have it
//! inline as a `prompt` record after the header. Then every `event` with its time
//! offset (text deltas, since schema 5, gathered into `text` records), a
//! `model_call` trace after each model call, a `notice` before each retry
//! of a failed try, and last the
//! `footer`. A file without a footer is partial.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::chat::event::{ChatEvent, Usage};
use crate::chat::request::{ChatMessage, ChatRequest, ClaimInput, Locale, ThinkingLevel};
use crate::chat::service::{ModelCallRecord, RemoteTurn};
use crate::chat::system::PromptBlock;
use crate::judge::RubricVerdict;
use crate::prompts::overrides::{IgnoredOverride, UnknownPlaceholder};
use crate::provider::RetryNotice;
use crate::tools::ToolDeclaration;

/// Bumped when a record changes. 2: eval turns name their eval run
/// (`labels.evalRun`). 3: the prompt is stored apart, named by the
/// header's `promptSha256`, instead of an inline `prompt` record. 4: a
/// replay names the turn it replayed (`replayOf`) and carries no eval
/// labels. 5: consecutive text deltas are one `text` record, and a
/// `model_call` leaves out the answer those hold (`textFromEvents`,
/// `runs::answer_text`). Older logs read as before: what they lack is
/// absent.
pub const SCHEMA_VERSION: u32 = 5;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum RunRecord {
    Header(Box<RunHeader>),
    Prompt(Box<PromptRecord>),
    Event {
        /// Milliseconds since the turn started.
        t: u64,
        event: ChatEvent,
    },
    /// Consecutive `text_delta` events, as one record (schema 5).
    Text(TextRecord),
    ModelCall {
        t: u64,
        call: Box<ModelCallRecord>,
        /// Present (schema 5) when the call's `text` is left out, being
        /// the text of its `text` records: where its provider state held
        /// that text, now null (`runs::answer_text`).
        #[serde(
            default,
            rename = "textFromEvents",
            skip_serializing_if = "Option::is_none"
        )]
        text_from_events: Option<Vec<String>>,
    },
    /// A failed try about to be retried (the model's or the deployment's).
    Notice {
        t: u64,
        notice: RetryNotice,
    },
    Footer(RunFooter),
}

/// Text deltas that came one after another, within 50 ms of the first
/// (`sink::log_file`), as one record: what the user saw as `deltas` pieces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextRecord {
    /// When the first delta came: milliseconds since the turn started.
    pub at_ms: u64,
    /// How many deltas it holds.
    pub deltas: u32,
    pub text: String,
}

impl TextRecord {
    /// Why the record cannot be what a recorder wrote: each delta it holds
    /// was text, so there is at least one, and no more than its characters.
    pub fn problem(&self) -> Option<TextProblem> {
        if self.deltas == 0 || self.text.is_empty() {
            return Some(TextProblem::Empty);
        }
        let chars = self.text.chars().count();
        (usize::try_from(self.deltas).unwrap_or(usize::MAX) > chars).then_some(
            TextProblem::MoreDeltasThanCharacters {
                deltas: self.deltas,
                chars,
            },
        )
    }
}

/// Why a `text` record cannot be what a recorder wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextProblem {
    #[error("a text record holds no delta")]
    Empty,
    #[error("a text record of {chars} characters cannot hold {deltas} deltas")]
    MoreDeltasThanCharacters { deltas: u32, chars: usize },
}

/// A log's timestamp, as chrono's own `Serialize` writes it (the same
/// `write_rfc3339`: RFC 3339, `Z`, as many digits of a second as it needs),
/// but made in a string first: chrono's way, through serde_json's escaping
/// formatter a piece at a time, cost ~2,800 instructions a timestamp.
fn timestamp<S: serde::Serializer>(at: &DateTime<Utc>, to: S) -> Result<S::Ok, S::Error> {
    to.serialize_str(&at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunHeader {
    pub schema: u32,
    pub tool_version: String,
    pub turn_id: String,
    #[serde(serialize_with = "timestamp")]
    pub started_at: DateTime<Utc>,
    /// `gemini`, `script`, `replay` or `worker`.
    pub provider: String,
    /// The model the turn asked for.
    pub model: String,
    pub request: RequestRecord,
    /// The claim as resolved; absent when it could not be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<ClaimRecord>,
    /// `default` or 12 hex characters.
    pub fingerprint: String,
    /// Applied override ids (their texts are in the `prompt` record).
    pub overridden: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_overrides: Vec<IgnoredOverride>,
    /// Applied overrides using a `{{name}}` no brand fills (they reach the
    /// model as written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_placeholders: Vec<UnknownPlaceholder>,
    /// The level asked for (a quick action's own, or the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    /// What the model was sent for it (models/gemini.yaml): `{"level": …}`
    /// (a level it lacks goes up) or `{"budget": tokens}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_sent: Option<crate::models::ThinkingControl>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<Locale>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_sha256: Option<String>,
    /// The turn's prompt record, stored once under
    /// `<runs dir>/prompts/<promptSha256>.json` (SHA-256 of its bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_sha256: Option<String>,
    /// Where an eval run put this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<RunLabels>,
    /// A replay (`promptlab replay`, `chat --provider replay`): the id of
    /// the recorded turn whose model calls it played back. A replay is
    /// never a run of that turn — it has no `labels`, and no reader counts
    /// it among a prompt version's runs (schema 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// A `worker` turn: the deployment it ran on and what was sent there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteTurn>,
    /// The turn's trace, when it was exported (`docs/telemetry.md`): what a
    /// later re-score links its span to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRef>,
}

/// A trace and its root span, as lowercase hex (W3C trace context).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceRef {
    pub trace_id: String,
    pub span_id: String,
}

/// Every request option, as given (before the claim is resolved).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_file: Option<String>,
    pub messages: Vec<ChatMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<Locale>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand: Option<String>,
    pub screen_actions: bool,
    pub voice: bool,
    /// The deployment default thinking level.
    pub thinking_level: ThinkingLevel,
    /// The default level won even over a quick action's own (an eval variant's `forceThinkingLevel`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force_thinking_level: bool,
    pub today: NaiveDate,
}

impl RequestRecord {
    pub fn from_request(request: &ChatRequest) -> RequestRecord {
        let (claim_id, claim_file) = match &request.claim {
            ClaimInput::Id(id) => (Some(id.clone()), None),
            ClaimInput::Document(claim) => (None, Some(claim.origin.clone())),
        };
        RequestRecord {
            claim_id,
            claim_file,
            messages: request.messages.clone(),
            capability: request.prompt.capability.clone(),
            locale: request.prompt.locale,
            brand: request.prompt.brand.clone(),
            screen_actions: request.prompt.screen_actions,
            voice: request.prompt.voice,
            thinking_level: request.thinking_level,
            force_thinking_level: request.force_thinking_level,
            today: request.today,
        }
    }

    /// The claim as a user would name it: its id, or its file.
    pub fn claim_label(&self) -> &str {
        self.claim_id
            .as_deref()
            .or(self.claim_file.as_deref())
            .unwrap_or("?")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRecord {
    pub id: String,
    /// SHA-256 of the claim document's bytes.
    pub sha256: String,
    pub origin: String,
}

/// An eval turn's place in its suite's matrix.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunLabels {
    pub suite: String,
    pub variant: String,
    pub case: String,
    pub sample: u32,
    /// The eval run (`ev-…`) that recorded the turn; absent in logs of
    /// schema 1, written before eval runs had ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_run: Option<String>,
    /// The case's tags, as the suite gives them: recorded so that the run
    /// index can break verdicts down by tag without the suite at hand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// A turn's assembled prompt: the inline `prompt` record of logs of schema
/// 2 and older, and the stored `<runs dir>/prompts/<sha256>.json` of newer
/// ones (`runs::prompt_store`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptRecord {
    /// The applied overrides, id → text as written (before branding).
    pub applied_overrides: BTreeMap<String, String>,
    /// The system prompt, block by block in block order, with where each came from.
    pub blocks: Vec<PromptBlock>,
    /// The tool declarations as offered.
    pub tools: Vec<ToolDeclaration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Done,
    Error,
    Cancelled,
}

/// How a recorded turn stands, the one rule every reader uses: its footer's
/// status, or `partial` — still being written, or abandoned by a process
/// that died — when it has no footer or still has its `.partial` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogState {
    Ended(RunStatus),
    Partial,
}

impl LogState {
    pub fn of(footer: Option<&RunFooter>, path: &std::path::Path) -> LogState {
        match footer {
            Some(footer) if !super::naming::is_partial(path) => LogState::Ended(footer.status),
            _ => LogState::Partial,
        }
    }

    /// `done`, `error`, `cancelled` or `partial`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogState::Ended(status) => status.as_str(),
            LogState::Partial => "partial",
        }
    }
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Done => "done",
            RunStatus::Error => "error",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunFooter {
    pub status: RunStatus,
    #[serde(serialize_with = "timestamp")]
    pub ended_at: DateTime<Utc>,
    pub total_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token_ms: Option<u64>,
    pub usage: Usage,
    /// Of `usage.outputTokens`, the model's thinking.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub thinking_tokens: u64,
    /// What the turn's model calls cost, in USD (`prices/gemini.yaml`);
    /// absent when a call's model has no price: unknown, never 0. Judge
    /// calls are not included (they are in the verdict's records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Model calls answered from the model-call cache (`--cache`).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub cached_calls: u32,
    pub model_calls: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// An eval turn's verdict, judged on exactly these numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<RecordedVerdict>,
    /// A `worker` turn: the fingerprint the deployment reported in `done`,
    /// next to the header's, which this checkout computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_fingerprint: Option<String>,
    /// A `worker` turn: the deployment's own id for the turn (from `done`),
    /// to find it in the deployment's logs; this log's `turnId` is ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_turn_id: Option<String>,
}

impl RunFooter {
    /// What the turn cost, in USD: the recorded figure, or — for a log from
    /// before prices were recorded — 0 for a script or a replay, which call
    /// no model; otherwise unknown.
    pub fn cost(&self, provider: &str) -> Option<f64> {
        self.cost_usd
            .or_else(|| crate::provider::ProviderKind::named_costs_nothing(provider).then_some(0.0))
    }
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

fn is_zero_u32(count: &u32) -> bool {
    *count == 0
}

/// How a judged turn came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
    /// The turn did not finish normally (an error, a cancellation, no run).
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Error => "error",
        }
    }
}

/// A verdict as recorded in a run log's footer (or a re-score beside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecordedVerdict {
    pub outcome: Outcome,
    /// One line per unmet expectation.
    pub failures: Vec<String>,
    /// Each rubric criterion's verdict, with its judge call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rubric: Vec<RubricVerdict>,
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;

    /// chrono's own `Serialize` is the reference: a log's timestamps are
    /// what it would write, to the byte.
    fn both_ways(at: chrono::DateTime<chrono::Utc>) -> (String, String) {
        let mut ours = serde_json::Serializer::new(Vec::new());
        super::timestamp(&at, &mut ours).unwrap();
        let ours = String::from_utf8(ours.into_inner()).unwrap();
        (ours, serde_json::to_string(&at).unwrap())
    }

    #[test]
    fn a_timestamp_is_written_as_chrono_writes_it_at_every_precision() {
        let second = chrono::Utc.with_ymd_and_hms(2026, 12, 3, 17, 5, 9).unwrap();
        let last = chrono::Utc
            .with_ymd_and_hms(2016, 12, 31, 23, 59, 59)
            .unwrap();
        // No fraction; milli-, micro- and nanoseconds; a leap second (which
        // chrono allows only in the last second of a minute).
        let cases = [
            (second, 0),
            (second, 120_000_000),
            (second, 120_500_000),
            (second, 120_500_001),
            (last, 1_000_000_001),
        ];
        for (whole, nanos) in cases {
            let at = chrono::DateTime::from_timestamp(whole.timestamp(), nanos).unwrap();
            let (ours, chrono) = both_ways(at);
            assert_eq!(ours, chrono);
        }
    }

    proptest! {
        #[test]
        fn any_timestamp_is_written_as_chrono_writes_it(
            seconds in -62_135_596_800i64..253_402_300_799,
            nanos in 0u32..2_000_000_000,
        ) {
            if let Some(at) = chrono::DateTime::from_timestamp(seconds, nanos) {
                let (ours, chrono) = both_ways(at);
                prop_assert_eq!(ours, chrono);
            }
        }
    }
}
