//! Who answers a judge: a model provider (Gemini, over the same adapter as
//! chat turns: retries, timeouts, the key), or a script for offline runs.

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::digest::sha256_hex;
use crate::event::Usage;
use crate::prompts::thinking::ThinkingLevel;
use crate::provider::{
    AiMessage, ModelEvent, ModelProvider, ModelRequest, ProviderError, RetryNotice,
};

/// The most a judge may write. A verdict is a sentence or two, but a
/// thinking model's thoughts count against the same limit.
const JUDGE_MAX_OUTPUT_TOKENS: u32 = 16_384;
/// The most reply text kept; past this the reply is an error.
const MAX_REPLY_BYTES: usize = 64 * 1024;

/// One question to a judge.
#[derive(Debug, Clone)]
pub struct JudgeQuery {
    /// The judge's instructions.
    pub system: String,
    /// The rendered question: criterion, message, evidence, answer(s).
    pub user: String,
    pub schema: Value,
    pub model: String,
    pub thinking_level: ThinkingLevel,
    /// The same question, structured, for a scripted judge.
    pub question: Question,
    /// Where the call says that it retries (not part of the question).
    pub notices: Option<RetryNotices>,
}

/// Where a judge call says that its model failed a try and is retrying it:
/// eval gives each judged turn's notices to its progress view and NDJSON,
/// as the turn's own retries are, so a judge that retries says so.
#[derive(Clone)]
pub struct RetryNotices(Arc<dyn Fn(RetryNotice) + Send + Sync>);

impl RetryNotices {
    pub fn new(say: impl Fn(RetryNotice) + Send + Sync + 'static) -> RetryNotices {
        RetryNotices(Arc::new(say))
    }

    /// Says `notice`, naming the judge: `Gemini (judging) answered 503; …`.
    fn say(&self, mut notice: RetryNotice) {
        notice.who = format!("{} (judging)", notice.who);
        (self.0)(notice)
    }
}

impl std::fmt::Debug for RetryNotices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryNotices")
    }
}

impl JudgeQuery {
    /// SHA-256 of who judges (`identity`) and everything the judge is
    /// given: model, level, instructions, question and schema. The question holds the criterion, the answer and
    /// the evidence, so a change to any of them is a different key.
    pub fn cache_key(&self, identity: &str) -> String {
        let material = super::key_material(self, identity);
        sha256_hex(serde_json::to_vec(&material).unwrap_or_default())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    Rubric {
        criterion: String,
        answer: String,
    },
    Pairwise {
        criterion: String,
        first: String,
        second: String,
    },
}

/// A judge's reply before it is parsed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawReply {
    pub text: String,
    pub usage: Usage,
    /// Of `usage.output_tokens`, thinking.
    pub thinking_tokens: u64,
}

pub trait JudgeModel: Send + Sync {
    /// Which provider answers: `gemini`, or `script` for a scripted judge.
    fn kind(&self) -> crate::provider::ProviderKind;

    /// `gemini` or `script`.
    fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Who answers, for the cache key: the provider and its endpoint, or
    /// the script's content.
    fn identity(&self) -> String;

    fn check_ready(&self) -> Result<(), ProviderError>;

    fn ask<'a>(
        &'a self,
        query: &'a JudgeQuery,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<RawReply, ProviderError>>;

    /// Its server's throttle (SPEC §14), when it calls one.
    fn throttle(&self) -> Option<std::sync::Arc<crate::provider::transport::Throttle>> {
        None
    }
}

/// A judge answered by a model provider: one call, no tools, a JSON reply
/// in the query's schema.
pub struct ProviderJudge(pub Arc<dyn ModelProvider>);

impl JudgeModel for ProviderJudge {
    fn throttle(&self) -> Option<std::sync::Arc<crate::provider::transport::Throttle>> {
        self.0.throttle()
    }

    fn kind(&self) -> crate::provider::ProviderKind {
        self.0.kind()
    }

    fn identity(&self) -> String {
        self.0.identity()
    }

    fn check_ready(&self) -> Result<(), ProviderError> {
        self.0.check_ready()
    }

    fn ask<'a>(
        &'a self,
        query: &'a JudgeQuery,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<RawReply, ProviderError>> {
        Box::pin(async move {
            let models = self.0.models();
            let request = ModelRequest {
                model: query.model.clone(),
                system: query.system.as_str().into(),
                messages: vec![AiMessage::User {
                    text: query.user.clone(),
                }],
                tools: Vec::new().into(),
                // Fitted to the judge model as a chat turn's level is.
                thinking_level: models.fit(&query.model, query.thinking_level).sent,
                // A small model's own cap holds for its judging too.
                max_output_tokens: models.output_cap(&query.model, JUDGE_MAX_OUTPUT_TOKENS),
                response_schema: Some(query.schema.clone()),
            };
            let mut stream = self.0.stream_turn(request, cancel);
            let mut reply = RawReply::default();
            while let Some(item) = stream.next().await {
                match item? {
                    ModelEvent::TextDelta(text) => {
                        if reply.text.len() + text.len() > MAX_REPLY_BYTES {
                            return Err(ProviderError::new(format!(
                                "the judge's reply is longer than {} KiB",
                                MAX_REPLY_BYTES / 1024
                            )));
                        }
                        reply.text.push_str(&text);
                    }
                    ModelEvent::ToolCall(call) => {
                        return Err(ProviderError::new(format!(
                            "the judge called a tool (`{}`) instead of replying",
                            crate::text::quote(&call.name)
                        )));
                    }
                    ModelEvent::Retry(notice) => {
                        if let Some(notices) = &query.notices {
                            notices.say(notice);
                        }
                    }
                    ModelEvent::Done(summary) => {
                        reply.usage = summary.usage;
                        reply.thinking_tokens = summary.thinking_tokens;
                        return Ok(reply);
                    }
                }
            }
            Err(ProviderError::new(
                "the judge's reply ended before it was complete",
            ))
        })
    }
}
