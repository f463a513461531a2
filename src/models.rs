//! What each model accepts, as data (`models/gemini.yaml`,
//! `models/openai.yaml`, extendable with `--models FILE`): the thinking
//! control it takes — `thinkingLevel` with the levels it has, or
//! `thinkingBudget` with the tokens sent for each level; an OpenAI-compatible
//! model's `reasoningEffort` levels and `maxTokensField`; a small model's
//! `maxOutputTokens` —
//! and the one rule that fits an asked-for level to it, and the one that
//! caps its output. The chat loop, the judge, the eval preflight and the
//! Gemini wire format all go through here.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::document::{Shipped, parse_shipped, read_table_file};
use crate::prompts::thinking::ThinkingLevel;

/// The shipped tables, embedded at build time.
const EMBEDDED: [(&str, &str); 2] = [
    ("models/gemini.yaml", include_str!("../models/gemini.yaml")),
    ("models/openai.yaml", include_str!("../models/openai.yaml")),
];

/// The most tokens a `thinkingBudget` may name (Gemini's largest is 32,768).
const MAX_BUDGET: u32 = 1_000_000;

/// The most a model's `maxOutputTokens` may be: a turn's model call asks
/// for 8,000 (SPEC §1.5), and the table may only lower that.
pub const MAX_OUTPUT_CAP: u32 = 8000;

const ALL_LEVELS: [ThinkingLevel; 4] = [
    ThinkingLevel::Minimal,
    ThinkingLevel::Low,
    ThinkingLevel::Medium,
    ThinkingLevel::High,
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    pub models: BTreeMap<String, ModelRules>,
}

/// One model's rules.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelRules {
    /// Where the rules were taken from.
    pub source: String,
    /// When.
    pub date: String,
    /// The levels of `thinkingConfig.thinkingLevel` the model takes.
    #[serde(default)]
    pub thinking_level: Option<Vec<ThinkingLevel>>,
    /// Or: the model takes `thinkingConfig.thinkingBudget`, this many tokens per level.
    #[serde(default)]
    pub thinking_budget: Option<Budgets>,
    /// An OpenAI-compatible model: the levels of `reasoning_effort` it takes
    /// (a model without it is sent none).
    #[serde(default)]
    pub reasoning_effort: Option<Vec<ThinkingLevel>>,
    /// An OpenAI-compatible model or server: the field that caps the answer,
    /// `max_completion_tokens` (the default) or `max_tokens` (older vLLM,
    /// Ollama, llama.cpp).
    #[serde(default)]
    pub max_tokens_field: Option<TokenField>,
    /// At most this many output tokens per model call (1 to 8,000): a small
    /// local model runs on for minutes to 8,000 tokens, a cap keeps its
    /// turn to seconds (SPEC §1.5).
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
}

/// Which Chat Completions field carries the output cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenField {
    #[default]
    MaxCompletionTokens,
    MaxTokens,
}

/// The `thinkingBudget` sent for each level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    pub minimal: u32,
    pub low: u32,
    pub medium: u32,
    pub high: u32,
}

impl Budgets {
    fn of(self, level: ThinkingLevel) -> u32 {
        match level {
            ThinkingLevel::Minimal => self.minimal,
            ThinkingLevel::Low => self.low,
            ThinkingLevel::Medium => self.medium,
            ThinkingLevel::High => self.high,
        }
    }
}

/// What a Gemini request sends to control thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum GeminiThinking {
    /// `thinkingConfig.thinkingLevel`.
    Level(ThinkingLevel),
    /// `thinkingConfig.thinkingBudget`, in tokens.
    Budget(u32),
}

/// What a turn's requests sent to control thinking, as its run log's
/// header records it (`thinkingSent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ThinkingControl {
    /// Gemini's `thinkingConfig.thinkingLevel`.
    Level(ThinkingLevel),
    /// Gemini's `thinkingConfig.thinkingBudget`, in tokens.
    Budget(u32),
    /// Chat Completions' `reasoning_effort`.
    ReasoningEffort(ThinkingLevel),
    /// Nothing: an OpenAI-compatible model the table gives no levels.
    None,
}

impl From<GeminiThinking> for ThinkingControl {
    fn from(thinking: GeminiThinking) -> ThinkingControl {
        match thinking {
            GeminiThinking::Level(level) => ThinkingControl::Level(level),
            GeminiThinking::Budget(tokens) => ThinkingControl::Budget(tokens),
        }
    }
}

/// An asked-for level fitted to a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub asked: ThinkingLevel,
    pub sent: ThinkingLevel,
    /// A line said once per run: `note: …` when the level was changed,
    /// `warning: …` when the model's rules are unknown.
    pub note: Option<String>,
}

static SHIPPED: Shipped<ModelTable> = Shipped::new();

/// The shipped rules with `--models` files over them.
#[derive(Debug, Clone)]
pub struct ModelTable {
    models: BTreeMap<String, ModelRules>,
}

impl ModelTable {
    /// The shipped table, parsed once: what a command uses without `--models`.
    pub fn shipped() -> std::sync::Arc<ModelTable> {
        SHIPPED.get(ModelTable::embedded)
    }

    /// The shipped table.
    pub fn embedded() -> ModelTable {
        let mut models = BTreeMap::new();
        for (name, text) in EMBEDDED {
            let file: ModelFile = parse_shipped(name, text);
            models.extend(file.models);
        }
        ModelTable { models }
    }

    /// This table with `path`'s models added or replacing its own.
    pub fn with_file(mut self, path: &Path) -> Result<ModelTable, ModelFileError> {
        let file: ModelFile = read_table_file("--models", path).map_err(ModelFileError::Read)?;
        for (model, rules) in &file.models {
            rules.check().map_err(|problem| ModelFileError::Rules {
                path: path.display().to_string(),
                model: model.clone(),
                problem,
            })?;
        }
        self.models.extend(file.models);
        Ok(self)
    }

    pub fn get(&self, model: &str) -> Option<&ModelRules> {
        self.models
            .get(model.strip_prefix("models/").unwrap_or(model))
    }

    pub fn models(&self) -> impl Iterator<Item = (&str, &ModelRules)> {
        self.models.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// `asked` as `model` takes it: a level it lacks becomes the next one up
    /// that it has, else its highest; a model not in the table gets it as
    /// asked, with a note that its rules are unknown.
    pub fn fit(&self, model: &str, asked: ThinkingLevel) -> Fitted {
        let Some(rules) = self.get(model) else {
            return Fitted {
                asked,
                sent: asked,
                note: Some(format!(
                    "warning: model `{}` is not in the model table (models/gemini.yaml, --models): its thinking rules are unknown, so thinkingLevel {asked} is sent as asked",
                    crate::text::quote(model)
                )),
            };
        };
        let sent = rules.fit(asked);
        Fitted {
            asked,
            sent,
            note: (sent != asked).then(|| {
                format!(
                    "note: {model} takes {}: {asked} sent as {sent}",
                    rules.levels_text()
                )
            }),
        }
    }

    /// `asked` as an OpenAI-compatible `model` takes it (`reasoningEffort`):
    /// fitted as `fit` does when the table lists its levels; a model without
    /// levels is sent no effort, and one not in the table says so once.
    pub fn fit_effort(&self, model: &str, asked: ThinkingLevel) -> Fitted {
        match self.get(model) {
            Some(rules) if rules.reasoning_effort.is_some() => self.fit(model, asked),
            Some(_) => Fitted {
                asked,
                sent: asked,
                note: None,
            },
            None => Fitted {
                asked,
                sent: asked,
                note: Some(format!(
                    "warning: model `{}` is not in the model table (models/openai.yaml, --models): its reasoning rules are unknown, so no reasoning_effort is sent, and its answer is capped with max_completion_tokens",
                    crate::text::quote(model)
                )),
            },
        }
    }

    /// What goes on the wire for `sent` (already fitted) to `model`.
    pub fn control(&self, model: &str, sent: ThinkingLevel) -> GeminiThinking {
        match self.get(model).and_then(|rules| rules.thinking_budget) {
            Some(budgets) => GeminiThinking::Budget(budgets.of(sent)),
            None => GeminiThinking::Level(sent),
        }
    }

    /// What an OpenAI-compatible `model` is sent for `sent` (fitted), as a
    /// run log records it: its effort, or nothing when unlisted.
    pub fn effort_control(&self, model: &str, sent: ThinkingLevel) -> ThinkingControl {
        match self.reasoning_effort(model, sent) {
            Some(level) => ThinkingControl::ReasoningEffort(level),
            None => ThinkingControl::None,
        }
    }

    /// The `reasoning_effort` an OpenAI-compatible `model` is sent for
    /// `sent` (already fitted): none unless the table gives its levels.
    pub fn reasoning_effort(&self, model: &str, sent: ThinkingLevel) -> Option<ThinkingLevel> {
        let rules = self.get(model)?;
        rules.reasoning_effort.as_ref()?;
        Some(rules.fit(sent))
    }

    /// The field that caps an OpenAI-compatible `model`'s answer.
    pub fn token_field(&self, model: &str) -> TokenField {
        self.get(model)
            .and_then(|rules| rules.max_tokens_field)
            .unwrap_or_default()
    }

    /// The output cap a call to `model` is sent when it asks for `wanted`:
    /// the table's `maxOutputTokens` when lower, else `wanted`.
    pub fn output_cap(&self, model: &str, wanted: u32) -> u32 {
        self.get(model)
            .and_then(|rules| rules.max_output_tokens)
            .map_or(wanted, |cap| cap.min(wanted))
    }

    /// A level that must be sent as it is (`forceThinkingLevel`): refused,
    /// naming the levels the model takes, when the model lacks it.
    pub fn check_forced(&self, model: &str, level: ThinkingLevel) -> Result<(), NotTaken> {
        match self.get(model) {
            Some(rules) if rules.fit(level) != level => Err(NotTaken {
                model: model.to_string(),
                takes: rules.levels_text(),
                level,
            }),
            _ => Ok(()),
        }
    }
}

/// Why a `--models` file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelFileError {
    /// It could not be read or parsed (the message names the flag and file).
    #[error(transparent)]
    Read(#[from] crate::document::TableFileError),
    #[error("--models `{path}`: model `{}`: {problem}", crate::text::quote(.model))]
    Rules {
        path: String,
        model: String,
        problem: RulesProblem,
    },
}

/// What is wrong with one model's rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesProblem {
    #[error("give one of thinkingLevel, thinkingBudget or reasoningEffort")]
    Both,
    #[error(
        "needs thinkingLevel (the levels it takes) or thinkingBudget (tokens per level); an OpenAI-compatible model reasoningEffort, maxTokensField or maxOutputTokens"
    )]
    Neither,
    #[error("thinkingLevel or reasoningEffort lists no level")]
    NoLevel,
    #[error("a thinkingBudget is at most {MAX_BUDGET} tokens")]
    BudgetTooLarge,
    #[error("thinkingBudget must not fall from minimal to high")]
    BudgetFalls,
    #[error(
        "maxOutputTokens {0} is not between 1 and {MAX_OUTPUT_CAP} (it lowers a turn's cap of {MAX_OUTPUT_CAP}, never raises it)"
    )]
    OutputCap(u32),
}

/// A forced level the model does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{model} takes {takes}, not {level}")]
pub struct NotTaken {
    model: String,
    takes: String,
    level: ThinkingLevel,
}

impl ModelRules {
    /// The levels this model takes, lowest first.
    pub fn levels(&self) -> Vec<ThinkingLevel> {
        match self
            .thinking_level
            .as_ref()
            .or(self.reasoning_effort.as_ref())
        {
            Some(levels) => ALL_LEVELS
                .into_iter()
                .filter(|level| levels.contains(level))
                .collect(),
            None => ALL_LEVELS.to_vec(),
        }
    }

    fn fit(&self, asked: ThinkingLevel) -> ThinkingLevel {
        let levels = self.levels();
        levels
            .iter()
            .copied()
            .find(|level| rank(*level) >= rank(asked))
            .or_else(|| levels.last().copied())
            .unwrap_or(asked)
    }

    /// `low or high`, `low, medium or high`.
    fn levels_text(&self) -> String {
        let names: Vec<&str> = self
            .levels()
            .into_iter()
            .map(ThinkingLevel::as_str)
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            Some((last, _)) => format!("only {last}"),
            None => "no level".to_string(),
        }
    }

    fn check(&self) -> Result<(), RulesProblem> {
        if let Some(cap) = self.max_output_tokens
            && !(1..=MAX_OUTPUT_CAP).contains(&cap)
        {
            return Err(RulesProblem::OutputCap(cap));
        }
        if let Some(levels) = &self.reasoning_effort {
            return match (&self.thinking_level, &self.thinking_budget) {
                (None, None) if levels.is_empty() => Err(RulesProblem::NoLevel),
                (None, None) => Ok(()),
                _ => Err(RulesProblem::Both),
            };
        }
        // An OpenAI-compatible model with no reasoning says only how its
        // output is capped.
        if (self.max_tokens_field.is_some() || self.max_output_tokens.is_some())
            && self.thinking_level.is_none()
            && self.thinking_budget.is_none()
        {
            return Ok(());
        }
        match (&self.thinking_level, &self.thinking_budget) {
            (Some(_), Some(_)) => Err(RulesProblem::Both),
            (None, None) => Err(RulesProblem::Neither),
            (Some(levels), None) if levels.is_empty() => Err(RulesProblem::NoLevel),
            (Some(_), None) => Ok(()),
            (None, Some(budgets)) => {
                let all = ALL_LEVELS.map(|level| budgets.of(level));
                if all.iter().any(|budget| *budget > MAX_BUDGET) {
                    return Err(RulesProblem::BudgetTooLarge);
                }
                if all.windows(2).any(|pair| pair[0] > pair[1]) {
                    return Err(RulesProblem::BudgetFalls);
                }
                Ok(())
            }
        }
    }
}

fn rank(level: ThinkingLevel) -> usize {
    ALL_LEVELS
        .iter()
        .position(|l| *l == level)
        .unwrap_or(ALL_LEVELS.len())
}

#[cfg(test)]
mod tests;
