//! Flags that choose and configure the model provider (`chat`, `eval`,
//! `replay`).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use promptlab::chat::ThinkingLevel;
use promptlab::chat::request::DEFAULT_MODEL;
use std::time::Duration;

use promptlab::provider::ModelProvider;
use promptlab::provider::gemini::{GeminiConfig, GeminiProvider};
use promptlab::provider::replay::ReplayProvider;
use promptlab::provider::script::ScriptProvider;
use promptlab::runs::read_run_log;

use promptlab::chat::{ClaimInput, TurnContext};
use promptlab::claims::ClaimStore;
use promptlab::prompts::PromptRegistry;
use promptlab::worker::{Endpoint, TurnRunner, WorkerClient, WorkerConfig, WorkerError};

use super::error::CliError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderKind {
    /// Google's Gemini API (needs GEMINI_API_KEY).
    Gemini,
    /// A model scripted in a YAML file (--script).
    Script,
    /// The model turns of a recorded run log (--replay).
    Replay,
    /// The whole turn, run by a deployed chat API (--endpoint).
    Worker,
}

#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The model the turn asks for.
    #[arg(long, value_name = "NAME", env = "PROMPTLAB_MODEL", default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Thinking level when the quick action sets none: minimal, low, medium or high.
    #[arg(
        long,
        value_name = "LEVEL",
        env = "PROMPTLAB_THINKING_LEVEL",
        default_value = "low"
    )]
    pub thinking_level: ThinkingLevel,
    /// Where model answers come from.
    #[arg(long, value_enum, env = "PROMPTLAB_PROVIDER", default_value = "gemini")]
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
    /// Gemini and worker: seconds to wait for a connection.
    #[arg(
        long,
        value_name = "SECS",
        env = "PROMPTLAB_CONNECT_TIMEOUT",
        default_value_t = 10.0
    )]
    pub connect_timeout: f64,
    /// Gemini and worker: seconds to wait for the response to start, or for its next bytes.
    #[arg(
        long,
        value_name = "SECS",
        env = "PROMPTLAB_IDLE_TIMEOUT",
        default_value_t = 120.0
    )]
    pub idle_timeout: f64,
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
    /// The provider these flags choose.
    pub fn build_provider(&self) -> Result<BuiltProvider, CliError> {
        match self.provider {
            ProviderKind::Script => {
                let path = self
                    .script
                    .as_ref()
                    .ok_or_else(|| CliError::usage("--provider script needs --script FILE"))?;
                let provider: Arc<dyn ModelProvider> = Arc::new(ScriptProvider::load(path)?);
                Ok(provider.into())
            }
            ProviderKind::Gemini => {
                let config = GeminiConfig {
                    connect_timeout: seconds("--connect-timeout", self.connect_timeout)?,
                    idle_timeout: seconds("--idle-timeout", self.idle_timeout)?,
                    ..GeminiConfig::from_env()
                };
                let provider: Arc<dyn ModelProvider> = Arc::new(GeminiProvider::new(config)?);
                Ok(provider.into())
            }
            ProviderKind::Worker => Err(CliError::usage(
                "--provider worker runs the whole turn on a deployment, not through a model provider",
            )),
            ProviderKind::Replay => {
                let path = self
                    .replay
                    .as_ref()
                    .ok_or_else(|| CliError::usage("--provider replay needs --replay RUNLOG"))?;
                let log = read_run_log(path)?;
                let replay = Arc::new(promptlab::runs::replay::replay_provider(&log));
                Ok(BuiltProvider {
                    provider: replay.clone(),
                    replay: Some(replay),
                })
            }
        }
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
        config.connect_timeout = seconds("--connect-timeout", self.connect_timeout)?;
        config.idle_timeout = seconds("--idle-timeout", self.idle_timeout)?;
        if let Some(max) = max_concurrent {
            config.max_concurrent = usize::from(max);
        }
        Ok(WorkerClient::new(config, registry)?)
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
    ) -> Result<(TurnRunner, Option<Arc<ReplayProvider>>), CliError> {
        if self.provider == ProviderKind::Worker {
            if cache_dir.is_some() {
                eprintln!(
                    "warning: --cache has no effect with --provider worker: the deployment calls its model"
                );
            }
            return Ok((TurnRunner::Worker(self.build_worker(registry, None)?), None));
        }
        let built = self.build_provider()?;
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
            ClaimInput::Id(id) => Ok(ClaimInput::Document(Box::new(store.load(&id)?))),
            document => Ok(document),
        }
    }
}

/// A positive number of seconds.
fn seconds(flag: &str, value: f64) -> Result<Duration, CliError> {
    if value.is_finite() && value > 0.0 && value < 86_400.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(CliError::usage(format!(
            "{flag}: expected a number of seconds above 0, got {value}"
        )))
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
    if !enabled || provider.name() == "replay" {
        return provider;
    }
    let cache = promptlab::provider::cache::ModelCache::new(cache_dir.join("model"));
    Arc::new(promptlab::provider::cache::CachingProvider::new(
        provider, cache, 1,
    ))
}
