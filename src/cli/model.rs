//! Flags that choose and configure the model provider (`chat`, `eval`,
//! `replay`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use promptlab::chat::ThinkingLevel;
use std::time::Duration;

use promptlab::provider::ModelProvider;
use promptlab::provider::build::{BuildError, ProviderSpec};
use promptlab::provider::gemini::GeminiConfig;
use promptlab::provider::openai::OpenAiConfig;
use promptlab::provider::replay::ReplayProvider;
use promptlab::provider::transport::CallLimits;
use promptlab::provider::transport::bounds::parse_max_call_time;
use promptlab::runs::read_run_log;
use promptlab::text::parse_time_limit;

use promptlab::chat::{ClaimInput, TurnContext};
use promptlab::claims::ClaimStore;
use promptlab::prompts::PromptRegistry;
use promptlab::worker::{Endpoint, TurnRunner, WorkerClient, WorkerConfig, WorkerError};

use super::Tables;
use super::error::CliError;
use promptlab::provider::transport::HttpSettings;

pub use promptlab::provider::ProviderKind;

/// `--provider`: the library's one list of providers, each with its help
/// line (clap's possible values), parsed into the library's kind.
fn provider_kinds() -> impl clap::builder::TypedValueParser<Value = ProviderKind> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        ProviderKind::ALL.map(|kind| PossibleValue::new(kind.name()).help(kind.help())),
    )
    .try_map(|name: String| name.parse::<ProviderKind>())
}

#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The model the turn asks for [default: gemini-3.1-flash-lite; with
    /// --provider openai, OPENAI_MODEL, else none].
    #[arg(long, value_name = "NAME", env = "PROMPTLAB_MODEL")]
    pub model: Option<String>,
    /// Thinking level when the quick action sets none: minimal, low, medium or high.
    #[arg(
        long,
        value_name = "LEVEL",
        env = "PROMPTLAB_THINKING_LEVEL",
        default_value = "low"
    )]
    pub thinking_level: ThinkingLevel,
    /// Where model answers come from.
    #[arg(
        long,
        value_parser = provider_kinds(),
        env = "PROMPTLAB_PROVIDER",
        default_value = "gemini"
    )]
    pub provider: ProviderKind,
    /// What `--provider replay` plays back: a run log (chat), or a runs folder holding the suite's recordings (eval).
    #[arg(long, value_name = "PATH")]
    pub replay: Option<PathBuf>,
    /// The YAML script for `--provider script`.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Worker: the deployment's chat API (a bare host means its /api/chat).
    /// A bearer token, if it needs one, comes from PROMPTLAB_ENDPOINT_TOKEN.
    #[arg(
        long,
        value_name = "URL",
        env = "PROMPTLAB_ENDPOINT",
        hide_env_values = true
    )]
    pub endpoint: Option<String>,
    /// Worker: send the claim document even when --claim-id names a local
    /// claim (by default an id is sent, for the deployment's own store).
    #[arg(long)]
    pub send_claim: bool,
    /// Gemini, OpenAI and worker: how long to wait for a connection: 10s, 500ms or seconds.
    #[arg(
        long,
        value_name = "DURATION",
        env = "PROMPTLAB_CONNECT_TIMEOUT",
        default_value = "10s",
        value_parser = parse_time_limit
    )]
    pub connect_timeout: Duration,
    /// Gemini, OpenAI and worker: how long to wait for the response to start, or for its next
    /// bytes: 2m, 30s or seconds.
    #[arg(
        long,
        value_name = "DURATION",
        env = "PROMPTLAB_IDLE_TIMEOUT",
        default_value = "120s",
        value_parser = parse_time_limit
    )]
    pub idle_timeout: Duration,
    /// Gemini, OpenAI (chat, eval, judge) and worker: the longest one model call or one deployment turn
    /// may take, request to last byte, however steadily it streams: 90s, 10m or seconds.
    #[arg(
        long,
        value_name = "DURATION",
        env = "PROMPTLAB_MAX_CALL_TIME",
        default_value = "10m",
        value_parser = parse_max_call_time
    )]
    pub max_call_time: Duration,
    /// Gemini and OpenAI: the most one rate-limited call (429) waits in all,
    /// retrying at the server's pace, before its turn errors: 10m, 90s or seconds.
    #[arg(
        long,
        value_name = "DURATION",
        env = "PROMPTLAB_MAX_RATE_WAIT",
        default_value = "10m",
        value_parser = parse_time_limit
    )]
    pub max_rate_wait: Duration,
    /// The most calls to one model at once, where its live limit starts:
    /// the command's own (eval's `-j`, serve's `--max-concurrent`).
    #[arg(skip)]
    pub max_concurrency: Option<usize>,
}

/// The chosen provider, and the replay provider's own handle when it is one
/// (to read its divergences after the turn).
pub struct BuiltProvider {
    pub provider: Arc<dyn ModelProvider>,
    pub replay: Option<Arc<ReplayProvider>>,
}

impl From<Arc<dyn ModelProvider>> for BuiltProvider {
    fn from(provider: Arc<dyn ModelProvider>) -> BuiltProvider {
        BuiltProvider {
            provider,
            replay: None,
        }
    }
}

impl ModelArgs {
    /// The model the turn asks for: `--model`, else the provider's default
    /// (`OPENAI_MODEL` for `--provider openai`); exit 2 when there is none.
    pub fn model_name(&self) -> Result<String, CliError> {
        if let Some(model) = self.model.as_deref().filter(|m| !m.trim().is_empty()) {
            return Ok(model.to_string());
        }
        let openai_model = std::env::var("OPENAI_MODEL").ok();
        promptlab::chat::request::default_model(self.provider, openai_model.as_deref()).ok_or_else(
            || {
                CliError::usage(format!(
                    "--provider {} needs --model NAME (or OPENAI_MODEL): an OpenAI-compatible \
                     server has no default model",
                    self.provider.name()
                ))
            },
        )
    }

    /// The provider these flags choose.
    pub fn build_provider(&self, tables: &Tables) -> Result<BuiltProvider, CliError> {
        let mut replay = None;
        let spec = match self.provider {
            ProviderKind::Script => ProviderSpec::Script(
                self.script
                    .clone()
                    .ok_or_else(|| CliError::usage("--provider script needs --script FILE"))?,
            ),
            ProviderKind::Gemini => ProviderSpec::Gemini(GeminiConfig {
                http: self.http(HttpSettings::default())?,
                limits: self.limits(),
                ..GeminiConfig::from_env()
            }),
            ProviderKind::OpenAi => ProviderSpec::OpenAi(OpenAiConfig {
                http: self.http(HttpSettings::default())?,
                limits: self.limits(),
                ..OpenAiConfig::from_env()
            }),
            ProviderKind::Worker => {
                return Err(CliError::usage(
                    "--provider worker runs the whole turn on a deployment, not through a model provider",
                ));
            }
            ProviderKind::Replay => {
                let path = self
                    .replay
                    .as_ref()
                    .ok_or_else(|| CliError::usage("--provider replay needs --replay RUNLOG"))?;
                let log = read_run_log(path)?;
                let provider = promptlab::runs::replay::replay_provider(&log)
                    .with_models(Arc::clone(&tables.models));
                let provider = Arc::new(provider);
                replay = Some(Arc::clone(&provider));
                ProviderSpec::Replay(provider)
            }
        };
        let built = build_spec(spec, tables)?;
        Ok(BuiltProvider {
            provider: built,
            replay,
        })
    }
}

impl ModelArgs {
    /// The deployment client `--provider worker` runs turns with, at most
    /// `max_concurrent` requests in flight (`None`: the client's default).
    pub fn build_worker(
        &self,
        registry: &'static PromptRegistry,
        max_concurrent: Option<u16>,
    ) -> Result<WorkerClient, CliError> {
        let text = self
            .endpoint
            .as_deref()
            .filter(|text| !text.trim().is_empty())
            .ok_or_else(|| {
                CliError::usage(
                    "--provider worker needs --endpoint URL (or PROMPTLAB_ENDPOINT): the deployment's chat API",
                )
            })?;
        let mut config = WorkerConfig::new(Endpoint::parse(text).map_err(WorkerError::from)?);
        config.token = std::env::var("PROMPTLAB_ENDPOINT_TOKEN")
            .ok()
            .filter(|token| !token.trim().is_empty());
        config.http = self.http(config.http)?;
        config.limits = self.limits();
        if let Some(max) = max_concurrent {
            config.max_concurrent = usize::from(max);
        }
        let client = WorkerClient::new(config, registry)?;
        warn_unredactable(client.unredactable());
        Ok(client)
    }

    /// `base` with `--connect-timeout`, `--idle-timeout`, `--max-rate-wait`
    /// and the command's concurrency over it.
    pub fn http(&self, base: HttpSettings) -> Result<HttpSettings, CliError> {
        Ok(HttpSettings {
            connect_timeout: self.connect_timeout,
            idle_timeout: self.idle_timeout,
            idle_timeout_flag: Some("--idle-timeout"),
            max_rate_wait: self.max_rate_wait,
            max_concurrency: self.max_concurrency.unwrap_or(base.max_concurrency),
            ..base
        })
    }

    /// The bounds on one model call or deployment turn.
    pub fn limits(&self) -> CallLimits {
        CallLimits {
            max_call_time: self.max_call_time,
            ..CallLimits::default()
        }
    }

    /// Where the turns run: the engine with the chosen model provider, or a
    /// deployment (`--provider worker`); and the replay provider's own handle.
    /// With `cache_dir` (`--cache`), unchanged model calls come from the
    /// model-call cache; a deployment's turns (`worker`) are never cached.
    pub fn turn_runner(
        &self,
        registry: &'static PromptRegistry,
        store: &ClaimStore,
        cache_dir: Option<&std::path::Path>,
        tables: &Tables,
    ) -> Result<(TurnRunner, Option<Arc<ReplayProvider>>), CliError> {
        if self.provider == ProviderKind::Worker {
            if cache_dir.is_some() {
                promptlab::text::eprintln_or_drop!(
                    "warning: --cache has no effect with --provider worker: the deployment calls its model"
                );
            }
            return Ok((
                TurnRunner::Worker(Box::new(self.build_worker(registry, None)?)),
                None,
            ));
        }
        let built = self.build_provider(tables)?;
        let provider = match cache_dir {
            Some(dir) => with_cache(built.provider, true, dir),
            None => built.provider,
        };
        let ctx = TurnContext {
            registry,
            store: store.clone(),
            provider,
        };
        Ok((TurnRunner::Local(ctx), built.replay))
    }

    /// `--send-claim`: the claim a local id names, loaded here and sent as a
    /// document, so that a deployment without this claim store can run it.
    pub fn claim_to_send(
        &self,
        claim: ClaimInput,
        store: &ClaimStore,
    ) -> Result<ClaimInput, CliError> {
        if !self.send_claim {
            return Ok(claim);
        }
        if self.provider != ProviderKind::Worker {
            return Err(CliError::usage(
                "--send-claim is for --provider worker (a local turn always reads the claim itself)",
            ));
        }
        match claim {
            ClaimInput::Id(id) => Ok(ClaimInput::Document(Arc::new(store.load(&id)?))),
            document => Ok(document),
        }
    }
}

/// The bounds on one call for a command without model flags (`compare
/// --judge`): `PROMPTLAB_MAX_CALL_TIME`, else the default.
pub fn limits_from_env() -> Result<CallLimits, CliError> {
    let mut limits = CallLimits::default();
    if let Some(text) = std::env::var("PROMPTLAB_MAX_CALL_TIME")
        .ok()
        .filter(|text| !text.trim().is_empty())
    {
        limits.max_call_time = parse_max_call_time(&text)
            .map_err(|error| CliError::usage(format!("PROMPTLAB_MAX_CALL_TIME: {error}")))?;
    }
    Ok(limits)
}

/// Builds `spec` (the one library builder) with the run's model table, and
/// says its warnings once.
pub fn build_spec(spec: ProviderSpec, tables: &Tables) -> Result<Arc<dyn ModelProvider>, CliError> {
    let models = Arc::clone(&tables.models);
    let built = promptlab::provider::build::build(spec, models).map_err(|error| match error {
        BuildError::Provider(error) => CliError::from(error),
        BuildError::Script(error) => CliError::from(error),
    })?;
    warn_unredactable(&built.warnings);
    Ok(built.provider)
}

/// Says once per process that a secret is too short to redact (the chat
/// model and the judge may share a key).
pub fn warn_unredactable(warnings: &[String]) {
    static SAID: parking_lot::Mutex<std::collections::BTreeSet<String>> =
        parking_lot::Mutex::new(std::collections::BTreeSet::new());
    for warning in warnings {
        let first = SAID.lock().insert(warning.clone());
        if first {
            promptlab::text::eprintln_or_drop!("{warning}");
        }
    }
}

/// `--cache` on `chat` and `serve`: `provider` answering unchanged calls
/// from the model-call cache under `cache_dir` (`docs/cache.md`). A replay
/// is recorded already and is never wrapped.
pub fn with_cache(
    provider: Arc<dyn ModelProvider>,
    enabled: bool,
    cache_dir: &std::path::Path,
) -> Arc<dyn ModelProvider> {
    if !enabled || provider.kind() == ProviderKind::Replay {
        return provider;
    }
    let cache = promptlab::provider::cache::ModelCache::new(cache_dir.join("model"));
    Arc::new(promptlab::provider::cache::CachingProvider::new(
        provider, cache, 1,
    ))
}
