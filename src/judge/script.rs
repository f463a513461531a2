//! A scripted judge (`--judge-provider script --judge-script FILE`), for
//! offline runs and tests. Rules are tried in order; the first whose
//! conditions all hold gives the reply. A reply goes through the same
//! strict parsing as a model's, so a script can also play a judge that
//! misbehaves (`raw: "Sure!"`). See `docs/judging.md`.
//!
//! ```yaml
//! rubric:
//!   - criterion: promise payment        # the criterion contains this (any case)
//!     answerContains: "will be paid"    # the answer contains this (any case)
//!     reply: {pass: false, score: 0, reason: "promises payment"}
//!   - reply: {pass: true, score: 1, reason: "ok"}
//! pairwise:
//!   - criterion: excess
//!     prefer: "£350"                    # the answer containing this wins
//! ```

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::model::{JudgeModel, JudgeQuery, Question, RawReply};
use crate::document::{DocumentFormat, parse_document};
use crate::provider::ProviderError;
use crate::text::quote;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeScript {
    #[serde(default)]
    pub rubric: Vec<RubricRule>,
    #[serde(default)]
    pub pairwise: Vec<PairwiseRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RubricRule {
    #[serde(default)]
    pub criterion: Option<String>,
    #[serde(default)]
    pub answer_contains: Option<String>,
    #[serde(default)]
    pub answer_not_contains: Option<String>,
    /// The reply as JSON (sent as the judge's text)…
    #[serde(default)]
    pub reply: Option<Value>,
    /// …or as raw text.
    #[serde(default)]
    pub raw: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PairwiseRule {
    #[serde(default)]
    pub criterion: Option<String>,
    /// The answer containing this wins; both or neither is a tie.
    #[serde(default)]
    pub prefer: Option<String>,
    #[serde(default)]
    pub reply: Option<Value>,
    #[serde(default)]
    pub raw: Option<String>,
}

pub struct ScriptJudge {
    script: JudgeScript,
    origin: String,
    /// The script's text, hashed: an edited script is another judge.
    identity: String,
    calls: AtomicU64,
}

/// Why a judge script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptJudgeError {
    #[error("failed to read judge script `{origin}`: {source}")]
    Read {
        origin: String,
        source: std::io::Error,
    },
    #[error("invalid judge script `{origin}`: {problem}")]
    Invalid { origin: String, problem: String },
}

impl ScriptJudge {
    pub fn load(path: &Path) -> Result<ScriptJudge, ScriptJudgeError> {
        let origin = path.display().to_string();
        let text = match crate::input::read_input_text(path) {
            Ok(text) => text,
            Err(source) => return Err(ScriptJudgeError::Read { origin, source }),
        };
        let script: JudgeScript = match parse_document(&text, DocumentFormat::detect(path, &text)) {
            Ok(script) => script,
            Err(problem) => {
                let problem = problem.to_string();
                return Err(ScriptJudgeError::Invalid { origin, problem });
            }
        };
        let replies = script.rubric.iter().map(|r| (&r.reply, &r.raw));
        let pairwise = script.pairwise.iter().map(|r| (&r.reply, &r.raw));
        for (index, (reply, raw)) in replies.chain(pairwise).enumerate() {
            if reply.is_some() && raw.is_some() {
                let problem = format!("rule {} has both `reply` and `raw`", index + 1);
                return Err(ScriptJudgeError::Invalid { origin, problem });
            }
        }
        let mut judge = ScriptJudge::new(script, origin);
        judge.identity = format!("script:{}", crate::digest::sha256_hex(&text));
        Ok(judge)
    }

    pub fn new(script: JudgeScript, origin: String) -> ScriptJudge {
        let identity = format!("script:{origin}");
        ScriptJudge {
            script,
            origin,
            identity,
            calls: AtomicU64::new(0),
        }
    }

    /// How many questions were put to this judge (cache hits are not).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn reply(&self, question: &Question) -> Result<String, ProviderError> {
        match question {
            Question::Rubric { criterion, answer } => self
                .script
                .rubric
                .iter()
                .find(|rule| {
                    contains(criterion, rule.criterion.as_deref())
                        && contains(answer, rule.answer_contains.as_deref())
                        && rule
                            .answer_not_contains
                            .as_deref()
                            .is_none_or(|text| !contains(answer, Some(text)))
                })
                .map(|rule| text_of(&rule.reply, &rule.raw, "pass"))
                .ok_or_else(|| self.no_rule("rubric", criterion)),
            Question::Pairwise {
                criterion,
                first,
                second,
            } => {
                let rule = self
                    .script
                    .pairwise
                    .iter()
                    .find(|rule| contains(criterion, rule.criterion.as_deref()))
                    .ok_or_else(|| self.no_rule("pairwise", criterion))?;
                if let Some(prefer) = rule.prefer.as_deref() {
                    let winner = match (
                        contains(first, Some(prefer)),
                        contains(second, Some(prefer)),
                    ) {
                        (true, false) => "first",
                        (false, true) => "second",
                        _ => "tie",
                    };
                    let reason = format!("prefers the answer containing \"{prefer}\"");
                    return Ok(serde_json::json!({"winner": winner, "reason": reason}).to_string());
                }
                Ok(text_of(&rule.reply, &rule.raw, "winner"))
            }
        }
    }

    fn no_rule(&self, kind: &str, criterion: &str) -> ProviderError {
        ProviderError::new(format!(
            "judge script `{}` has no {kind} rule for criterion \"{}\"",
            self.origin,
            quote(criterion)
        ))
    }
}

fn contains(text: &str, needle: Option<&str>) -> bool {
    needle.is_none_or(|needle| text.to_lowercase().contains(&needle.to_lowercase()))
}

/// The rule's reply as the judge's text: its JSON, its raw text, or (with
/// neither) an object lacking the verdict field, which the parser refuses.
fn text_of(reply: &Option<Value>, raw: &Option<String>, field: &str) -> String {
    match (reply, raw) {
        (_, Some(raw)) => raw.clone(),
        (Some(reply), None) => reply.to_string(),
        (None, None) => format!("{{\"reason\": \"the script rule gives no `{field}`\"}}"),
    }
}

impl JudgeModel for ScriptJudge {
    fn kind(&self) -> crate::provider::ProviderKind {
        crate::provider::ProviderKind::Script
    }

    fn identity(&self) -> String {
        self.identity.clone()
    }

    fn check_ready(&self) -> Result<(), ProviderError> {
        Ok(())
    }

    fn ask<'a>(
        &'a self,
        query: &'a JudgeQuery,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<RawReply, ProviderError>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let reply = self.reply(&query.question);
        Box::pin(async move {
            reply.map(|text| RawReply {
                text,
                ..RawReply::default()
            })
        })
    }
}
