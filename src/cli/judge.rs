//! Flags that choose the judge of rubric criteria (`eval`) and of pairwise
//! comparisons (`compare --judge`), and the judge they build.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use promptlab::chat::ThinkingLevel;
use promptlab::document::{DocumentFormat, parse_document};
use promptlab::judge::script::ScriptJudge;
use promptlab::judge::{Judge, JudgeCache, JudgeModel, JudgePrompts, JudgeSettings, ProviderJudge};
use promptlab::provider::ProviderKind;
use promptlab::provider::build::ProviderSpec;
use promptlab::provider::gemini::GeminiConfig;
use promptlab::provider::openai::OpenAiConfig;
use promptlab::provider::transport::CallLimits;

use super::error::CliError;

/// The judge model when neither a flag nor the suite names one.
pub const DEFAULT_JUDGE_MODEL: &str = "gemini-3.1-pro-preview";
/// The judge's thinking level when neither a flag nor the suite sets one.
pub const DEFAULT_JUDGE_THINKING_LEVEL: ThinkingLevel = ThinkingLevel::Medium;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JudgeProviderKind {
    /// Gemini with a JSON reply schema (needs GEMINI_API_KEY).
    Gemini,
    /// An OpenAI-compatible server with a strict JSON schema reply
    /// (PROMPTLAB_JUDGE_API_KEY, else OPENAI_API_KEY; OPENAI_BASE_URL).
    Openai,
    /// Verdicts scripted in a YAML file (--judge-script), for offline runs.
    Script,
}

#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Judge")]
pub struct JudgeArgs {
    /// The judge model [default: the suite's `judge.model`, else gemini-3.1-pro-preview].
    #[arg(long, value_name = "NAME", env = "PROMPTLAB_JUDGE_MODEL")]
    pub judge_model: Option<String>,
    /// The judge's thinking level [default: the suite's, else medium].
    #[arg(long, value_name = "LEVEL", env = "PROMPTLAB_JUDGE_THINKING_LEVEL")]
    pub judge_thinking_level: Option<ThinkingLevel>,
    /// Who judges: Gemini, an OpenAI-compatible server, or a script of verdicts
    /// (--judge-script) for offline runs [default: the suite's `judge.provider`, else gemini].
    #[arg(
        long,
        value_enum,
        value_name = "PROVIDER",
        env = "PROMPTLAB_JUDGE_PROVIDER"
    )]
    pub judge_provider: Option<JudgeProviderKind>,
    /// The YAML script of verdicts for --judge-provider script (docs/judging.md).
    #[arg(long, value_name = "FILE")]
    pub judge_script: Option<PathBuf>,
    /// Replace the judge's instructions: a YAML/JSON file of prompt id → text
    /// (`judge.rubric`, `judge.pairwise`). Never part of a chat fingerprint.
    #[arg(long, value_name = "FILE")]
    pub judge_prompts: Option<PathBuf>,
    /// Ask the judge again even when an identical question has a cached verdict.
    #[arg(long)]
    pub no_judge_cache: bool,
}

/// Who judges and with what, before any client is made: enough to name
/// the judge (its calibration identity) without a key.
pub struct ChosenJudge {
    pub provider: JudgeProviderKind,
    pub settings: JudgeSettings,
    pub prompts: JudgePrompts,
}

impl ChosenJudge {
    /// `gemini`, `openai` or `script`, as the judge's calls record it.
    pub fn provider_name(&self) -> &'static str {
        match self.provider {
            JudgeProviderKind::Gemini => "gemini",
            JudgeProviderKind::Openai => "openai",
            JudgeProviderKind::Script => "script",
        }
    }
}

/// What a suite says about its judge (nothing, for `compare`).
#[derive(Debug, Clone, Default)]
pub struct SuiteJudge {
    /// `judge.provider`: gemini or openai.
    pub provider: Option<ProviderKind>,
    /// `judge.baseUrl`: an OpenAI-compatible judge's server.
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub thinking_level: Option<ThinkingLevel>,
    pub prompts: BTreeMap<String, String>,
}

impl JudgeArgs {
    /// The provider, model, thinking level and prompts these flags (over
    /// the suite's `judge:`) choose; bad prompts or an OpenAI judge with no
    /// model are usage errors.
    pub fn choose(&self, suite: &SuiteJudge) -> Result<ChosenJudge, CliError> {
        let provider = self.judge_provider.unwrap_or(match suite.provider {
            Some(ProviderKind::OpenAi) => JudgeProviderKind::Openai,
            _ => JudgeProviderKind::Gemini,
        });
        let model = self
            .judge_model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .or_else(|| suite.model.clone());
        if provider == JudgeProviderKind::Openai && model.is_none() {
            return Err(CliError::usage(
                "--judge-provider openai needs a judge model: --judge-model NAME (or the suite's judge.model)",
            ));
        }
        let settings = JudgeSettings {
            model: model.unwrap_or_else(|| DEFAULT_JUDGE_MODEL.to_string()),
            thinking_level: self
                .judge_thinking_level
                .or(suite.thinking_level)
                .unwrap_or(DEFAULT_JUDGE_THINKING_LEVEL),
        };
        let mut overrides = suite.prompts.clone();
        if let Some(path) = &self.judge_prompts {
            overrides.extend(read_judge_prompts(path)?);
        }
        let prompts = JudgePrompts::with_overrides(
            overrides
                .iter()
                .map(|(id, text)| (id.as_str(), text.as_str())),
        )
        .map_err(|e| CliError::usage(format!("judge prompts: {e}")))?;
        Ok(ChosenJudge {
            provider,
            settings,
            prompts,
        })
    }

    /// The judge these flags (over the suite's `judge:`) choose. Fails, as
    /// a usage error, when it cannot work: no key, no script, bad prompts.
    /// `limits` bound each judge call as they bound the chat model's.
    pub fn build(
        &self,
        suite: &SuiteJudge,
        cache_dir: &Path,
        limits: CallLimits,
        tables: &crate::cli::Tables,
    ) -> Result<Judge, CliError> {
        let ChosenJudge {
            provider,
            settings,
            prompts,
        } = self.choose(suite)?;
        let model: Arc<dyn JudgeModel> = match provider {
            JudgeProviderKind::Script => {
                let path = self.judge_script.as_ref().ok_or_else(|| {
                    CliError::usage("--judge-provider script needs --judge-script FILE")
                })?;
                Arc::new(ScriptJudge::load(path).map_err(CliError::usage)?)
            }
            JudgeProviderKind::Gemini => {
                let config = GeminiConfig {
                    limits,
                    ..GeminiConfig::from_env()
                };
                if config.endpoint.api_key.is_none() {
                    return Err(CliError::usage(
                        "GEMINI_API_KEY is not set: the judge (--judge-provider gemini) needs it \
                         (export GEMINI_API_KEY=…); to judge offline, use --judge-provider script \
                         --judge-script FILE",
                    ));
                }
                let gemini = super::model::build_spec(ProviderSpec::Gemini(config), tables)?;
                Arc::new(ProviderJudge(gemini))
            }
            JudgeProviderKind::Openai => {
                let config = OpenAiConfig {
                    limits,
                    ..OpenAiConfig::judge_from_env(suite.base_url.as_deref())
                };
                let openai = super::model::build_spec(ProviderSpec::OpenAi(config), tables)?;
                openai.check_ready().map_err(|error| {
                    CliError::usage(format!(
                        "the judge (--judge-provider openai): {}; PROMPTLAB_JUDGE_API_KEY gives the judge a key of its own",
                        error.message
                    ))
                })?;
                Arc::new(ProviderJudge(openai))
            }
        };
        let cache = (!self.no_judge_cache).then(|| JudgeCache::new(cache_dir.join("judge")));
        Ok(Judge::new(model, settings, prompts, cache).with_prices(Arc::clone(&tables.prices)))
    }
}

/// A judge's retries said on stderr, for the commands whose judge calls
/// are not a turn's (`eval --rescore`, `compare --judge`):
/// `Gemini (judging) answered 503; retrying (2 of 3) in 1.2 s`.
pub fn notices_on_stderr() -> promptlab::judge::RetryNotices {
    promptlab::judge::RetryNotices::new(|notice| {
        promptlab::text::eprintln_or_drop!("{}", promptlab::text::printable(&notice.to_string()));
    })
}

/// `prompts:` of an override-style file, or a plain map of id → text.
fn read_judge_prompts(path: &Path) -> Result<BTreeMap<String, String>, CliError> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum File {
        Wrapped { prompts: BTreeMap<String, String> },
        Plain(BTreeMap<String, String>),
    }
    let text = promptlab::input::read_input_text(path)
        .map_err(|e| CliError::usage(format!("--judge-prompts `{}`: {e}", path.display())))?;
    let file: File = parse_document(&text, DocumentFormat::detect(path, &text)).map_err(|p| {
        CliError::usage(format!(
            "--judge-prompts `{}`: {p} (expected prompt id → text, e.g. `judge.rubric: |`)",
            path.display()
        ))
    })?;
    Ok(match file {
        File::Wrapped { prompts } | File::Plain(prompts) => prompts,
    })
}
