//! Model-graded verdicts (`docs/judging.md`): a rubric criterion judged on
//! one turn's answer and evidence, and which of two answers better meets a
//! criterion. A judge's reply is parsed strictly — a reply that is not the
//! JSON asked for is an error, never a pass and never a silent zero — and
//! every reply that parsed is cached by what was asked, so an unchanged
//! answer is never judged twice.
//!
//! The judge's prompts are its own (`prompts/judge/`), overridable, and never
//! part of a chat turn's fingerprint.

pub mod cache;
pub mod evidence;
pub mod model;
pub mod reply;
pub mod script;

use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use cache::JudgeCache;
pub use evidence::{Evidence, ToolEvidence};
pub use model::{JudgeModel, JudgeQuery, ProviderJudge, Question, RawReply, RetryNotices};

use crate::cost::{Cost, PriceTable};
use crate::digest::sha256_hex;
use crate::event::Usage;
use crate::prompts::thinking::ThinkingLevel;

/// The rubric judge's instructions as shipped (`judge.rubric`).
pub const DEFAULT_RUBRIC_PROMPT: &str = include_str!("../../prompts/judge/rubric.md");
/// The pairwise judge's instructions as shipped (`judge.pairwise`).
pub const DEFAULT_PAIRWISE_PROMPT: &str = include_str!("../../prompts/judge/pairwise.md");
/// The prompt ids a judge override file may set.
pub const JUDGE_PROMPT_IDS: [&str; 2] = ["judge.rubric", "judge.pairwise"];

/// How much of a reply a record keeps (the verdict itself is parsed whole).
const RECORDED_REPLY_CHARS: usize = 2_000;

/// Which judge model, at which thinking level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeSettings {
    pub model: String,
    pub thinking_level: ThinkingLevel,
}

/// The judge's instructions: the shipped defaults unless overridden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgePrompts {
    pub rubric: String,
    pub pairwise: String,
}

impl Default for JudgePrompts {
    fn default() -> JudgePrompts {
        JudgePrompts {
            rubric: DEFAULT_RUBRIC_PROMPT.to_string(),
            pairwise: DEFAULT_PAIRWISE_PROMPT.to_string(),
        }
    }
}

impl JudgePrompts {
    /// The defaults with `overrides` (prompt id → text) applied; an id that
    /// is not a judge prompt is refused by name.
    pub fn with_overrides<'a>(
        overrides: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<JudgePrompts, PromptError> {
        let mut prompts = JudgePrompts::default();
        for (id, text) in overrides {
            match id {
                "judge.rubric" => prompts.rubric = text.to_string(),
                "judge.pairwise" => prompts.pairwise = text.to_string(),
                other => return Err(PromptError::Unknown(other.to_string())),
            }
            if crate::text::is_js_blank(text) {
                return Err(PromptError::Blank(id.to_string()));
            }
        }
        Ok(prompts)
    }
}

/// A judge prompt override that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error(
        "`{}` is not a judge prompt (judge prompts: {})",
        crate::text::quote(.0),
        JUDGE_PROMPT_IDS.join(", ")
    )]
    Unknown(String),
    #[error("judge prompt `{0}` is blank")]
    Blank(String),
}

/// What kind of question a judge was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum JudgeKind {
    Rubric,
    Pairwise,
}

/// One judge call as recorded: enough to see what was asked of which model,
/// what it said and what it cost, and to find its cache entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JudgeCallRecord {
    pub kind: JudgeKind,
    /// `gemini` or `script`: who gave the verdict.
    #[serde(default)]
    pub provider: String,
    pub model: String,
    /// SHA-256 of the judge's instructions (its system prompt).
    pub prompt_sha256: String,
    /// The cache key: SHA-256 of everything the judge was given.
    pub key: String,
    /// The reply as the judge wrote it (cut at 2,000 characters).
    pub reply: String,
    /// Judge tokens, never added to the chat turn's; `null` counts, and
    /// `usageUnreported`, where the judge's server left them out.
    pub usage: Usage,
    /// What the call cost in USD; 0 from the cache; absent when the judge
    /// model has no price (unknown, never 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub latency_ms: u64,
    /// Answered from the cache: no call was made now.
    pub cached: bool,
}

/// One rubric criterion's verdict on one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RubricVerdict {
    pub criterion: String,
    /// The judge's `pass`; absent when the judge could not judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    #[serde(default)]
    pub reason: String,
    /// Why there is no verdict ("judge: …"): the turn's verdict is then an error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<JudgeCallRecord>,
}

/// Which of two answers a judge preferred, in one order of showing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Preference {
    First,
    Second,
    Tie,
}

/// One pairwise judgement (one order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PairwiseVerdict {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preference: Option<Preference>,
    #[serde(default)]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<JudgeCallRecord>,
}

/// What a set of judge calls came to: the calls (cache hits included), the
/// hits, the tokens of the calls made now, and their cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgeSpend {
    pub calls: usize,
    pub cached: usize,
    pub usage: Usage,
    pub cost: Cost,
}

impl Default for JudgeSpend {
    fn default() -> JudgeSpend {
        JudgeSpend {
            calls: 0,
            cached: 0,
            usage: Usage::default(),
            cost: Cost::ZERO,
        }
    }
}

impl JudgeSpend {
    pub fn of<'a>(calls: impl IntoIterator<Item = &'a JudgeCallRecord>) -> JudgeSpend {
        let mut spend = JudgeSpend::default();
        for call in calls {
            spend.calls += 1;
            spend.cost = spend.cost + Cost::from(call.cost_usd);
            if call.cached {
                spend.cached += 1;
            } else {
                spend.usage += call.usage;
            }
        }
        spend
    }

    /// The calls behind a turn's rubric verdicts.
    pub fn of_rubric(rubric: &[RubricVerdict]) -> JudgeSpend {
        JudgeSpend::of(rubric.iter().filter_map(|v| v.call.as_ref()))
    }
}

impl std::ops::AddAssign for JudgeSpend {
    fn add_assign(&mut self, other: JudgeSpend) {
        self.calls += other.calls;
        self.cached += other.cached;
        self.usage += other.usage;
        self.cost = self.cost + other.cost;
    }
}

/// A judge: a model, its settings and instructions, and its cache.
pub struct Judge {
    prices: Arc<PriceTable>,
    model: Arc<dyn JudgeModel>,
    settings: JudgeSettings,
    prompts: JudgePrompts,
    cache: Option<JudgeCache>,
    /// Where a call says that it retries, when its caller gives no place
    /// of its own (`rubric`'s `notices`).
    notices: Option<RetryNotices>,
}

impl Judge {
    /// Its model's throttle, when it calls a server.
    pub fn throttle(&self) -> Option<Arc<crate::provider::transport::Throttle>> {
        self.model.throttle()
    }

    pub fn new(
        model: Arc<dyn JudgeModel>,
        settings: JudgeSettings,
        prompts: JudgePrompts,
        cache: Option<JudgeCache>,
    ) -> Judge {
        Judge {
            prices: PriceTable::shipped(),
            model,
            settings,
            prompts,
            cache,
            notices: None,
        }
    }

    /// Says each retry of its calls through `notices` (unless a call gives
    /// its own place to say it).
    pub fn with_notices(mut self, notices: RetryNotices) -> Judge {
        self.notices = Some(notices);
        self
    }

    /// Prices its calls with `prices` (`--prices`) instead of the shipped table.
    pub fn with_prices(mut self, prices: Arc<PriceTable>) -> Judge {
        self.prices = prices;
        self
    }

    pub fn settings(&self) -> &JudgeSettings {
        &self.settings
    }

    /// `gemini` or `script`.
    pub fn provider_name(&self) -> &'static str {
        self.model.name()
    }

    /// Which provider judges.
    pub fn provider_kind(&self) -> crate::provider::ProviderKind {
        self.model.kind()
    }

    /// Whether the judge can be called at all (its key, its script).
    pub fn check_ready(&self) -> Result<(), crate::provider::ProviderError> {
        self.model
            .check_ready()
            .map_err(|e| e.map_message(|message| format!("judge: {message}")))
    }

    /// Judges `criterion` on one turn.
    pub async fn rubric(
        &self,
        criterion: &str,
        evidence: &Evidence,
        cancel: &CancellationToken,
        notices: Option<&RetryNotices>,
    ) -> RubricVerdict {
        let query = JudgeQuery {
            system: self.prompts.rubric.clone(),
            user: evidence::render_rubric(criterion, evidence),
            schema: reply::rubric_schema(),
            model: self.settings.model.clone(),
            thinking_level: self.settings.thinking_level,
            question: Question::Rubric {
                criterion: criterion.to_string(),
                answer: evidence.answer.clone(),
            },
            notices: notices.or(self.notices.as_ref()).cloned(),
        };
        let mut verdict = RubricVerdict {
            criterion: criterion.to_string(),
            pass: None,
            score: None,
            reason: String::new(),
            error: None,
            call: None,
        };
        match self
            .ask(JudgeKind::Rubric, &query, reply::parse_rubric, cancel)
            .await
        {
            Ok((reply, call)) => {
                verdict.pass = Some(reply.pass);
                verdict.score = reply.score;
                verdict.reason = reply.reason;
                verdict.call = Some(call);
            }
            Err((error, call)) => {
                verdict.error = Some(error);
                verdict.call = call;
            }
        }
        verdict
    }

    /// Asks which of `first` and `second` better meets `criterion`, shown in
    /// that order (the caller asks again the other way round).
    pub async fn pairwise(
        &self,
        criterion: &str,
        first: &Evidence,
        second: &Evidence,
        cancel: &CancellationToken,
    ) -> PairwiseVerdict {
        let query = JudgeQuery {
            system: self.prompts.pairwise.clone(),
            user: evidence::render_pairwise(criterion, first, second),
            schema: reply::pairwise_schema(),
            model: self.settings.model.clone(),
            thinking_level: self.settings.thinking_level,
            question: Question::Pairwise {
                criterion: criterion.to_string(),
                first: first.answer.clone(),
                second: second.answer.clone(),
            },
            notices: self.notices.clone(),
        };
        match self
            .ask(JudgeKind::Pairwise, &query, reply::parse_pairwise, cancel)
            .await
        {
            Ok((reply, call)) => PairwiseVerdict {
                preference: Some(reply.winner),
                reason: reply.reason,
                error: None,
                call: Some(call),
            },
            Err((error, call)) => PairwiseVerdict {
                preference: None,
                reason: String::new(),
                error: Some(error),
                call,
            },
        }
    }

    /// The cached reply to `query`, or the model's; parsed by `parse`. Only
    /// a reply that parsed is cached, so a malformed one is asked again next
    /// time rather than remembered.
    async fn ask<T>(
        &self,
        kind: JudgeKind,
        query: &JudgeQuery,
        parse: fn(&str) -> Result<T, reply::ReplyError>,
        cancel: &CancellationToken,
    ) -> Result<(T, JudgeCallRecord), (String, Option<JudgeCallRecord>)> {
        // Who judges is part of the key: a scripted verdict is never
        // served as a model's, nor one endpoint's as another's.
        let key = query.cache_key(&self.model.identity());
        let provider = self.model.name();
        let record = |reply: &str, usage, thinking, latency_ms, cached| JudgeCallRecord {
            kind,
            provider: provider.to_string(),
            model: query.model.clone(),
            prompt_sha256: sha256_hex(&query.system),
            key: key.clone(),
            reply: cut_chars(reply, RECORDED_REPLY_CHARS),
            usage,
            cost_usd: self
                .prices
                .call_cost(
                    self.model.kind().name(),
                    self.model.kind().bills(),
                    &query.model,
                    usage,
                    thinking,
                    cached,
                )
                .usd(),
            latency_ms,
            cached,
        };
        if let Some(hit) = self.cache.as_ref().and_then(|cache| cache.get(&key))
            && let Ok(parsed) = parse(&hit.reply)
        {
            return Ok((parsed, record(&hit.reply, hit.usage, 0, 0, true)));
        }
        let clock = Instant::now();
        let raw = match self.model.ask(query, cancel.clone()).await {
            Ok(raw) => raw,
            Err(error) => {
                let latency_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
                let call = failed_call(&record, &error, latency_ms, self.model.kind().bills());
                return Err((format!("judge: {error}"), Some(call)));
            }
        };
        let latency_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        let call = record(&raw.text, raw.usage, raw.thinking_tokens, latency_ms, false);
        match parse(&raw.text) {
            Ok(parsed) => {
                if let Some(cache) = &self.cache {
                    // A cache that cannot be written costs a later call, not this verdict.
                    let _ = cache.put(&key, &query.model, &raw.text, raw.usage).await;
                }
                Ok((parsed, call))
            }
            Err(error) => Err((format!("judge: {error}"), Some(call))),
        }
    }
}

/// The record of a judge call that failed. One that stopped early with its
/// usage (a reply cut at its token limit) is billed on it — unless a bound
/// cut it short (`partial`): its tokens, cost unknown. Without usage, a
/// billing provider's cost is unknown, never a guessed 0.
fn failed_call(
    record: &dyn Fn(&str, Usage, u64, u64, bool) -> JudgeCallRecord,
    error: &crate::provider::ProviderError,
    latency_ms: u64,
    bills: bool,
) -> JudgeCallRecord {
    let (usage, thinking, unknown) = match &error.summary {
        Some(summary) => (summary.usage, summary.thinking_tokens, summary.partial),
        None => (Usage::default(), 0, bills),
    };
    let mut call = record("", usage, thinking, latency_ms, false);
    if unknown {
        call.cost_usd = None;
    }
    call
}

/// `text` cut to `max` characters, marked with `…` when cut.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The JSON a query to the judge `identity` is keyed by.
pub fn key_material(query: &JudgeQuery, identity: &str) -> Value {
    serde_json::json!({
        "judge": identity,
        "model": query.model,
        "thinkingLevel": query.thinking_level.as_str(),
        "system": query.system,
        "user": query.user,
        "schema": query.schema,
    })
}
