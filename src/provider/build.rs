//! The one place a model provider is built from what a command asked for
//! (`chat`, `eval`, `serve` and the judge all come here): which kind, and
//! what that kind needs. Warnings (a secret too short to redact) come back
//! for the front end to say once.

use std::path::PathBuf;
use std::sync::Arc;

use super::gemini::{GeminiConfig, GeminiProvider};
use super::openai::{OpenAiConfig, OpenAiProvider};
use super::replay::ReplayProvider;
use super::script::{ScriptError, ScriptProvider};
use super::{ModelProvider, ProviderError, ProviderKind};
use crate::models::ModelTable;

/// A provider to build.
pub enum ProviderSpec {
    Gemini(GeminiConfig),
    /// An OpenAI-compatible Chat Completions server.
    OpenAi(OpenAiConfig),
    /// The YAML script of `--script`.
    Script(PathBuf),
    /// Replayed calls, already read from their run log (the run-log layer
    /// sits above this one).
    Replay(Arc<ReplayProvider>),
}

impl ProviderSpec {
    pub fn kind(&self) -> ProviderKind {
        match self {
            ProviderSpec::Gemini(_) => ProviderKind::Gemini,
            ProviderSpec::OpenAi(_) => ProviderKind::OpenAi,
            ProviderSpec::Script(_) => ProviderKind::Script,
            ProviderSpec::Replay(_) => ProviderKind::Replay,
        }
    }
}

/// A built provider and what its front end should warn about.
pub struct Built {
    pub provider: Arc<dyn ModelProvider>,
    pub warnings: Vec<String>,
}

/// Why a provider could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Script(#[from] ScriptError),
}

/// Builds `spec`, sending by `models` (`--models` over the shipped table);
/// a replay is built with its table by the run-log layer.
pub fn build(spec: ProviderSpec, models: Arc<ModelTable>) -> Result<Built, BuildError> {
    match spec {
        ProviderSpec::Gemini(config) => {
            let gemini = GeminiProvider::new(GeminiConfig { models, ..config })?;
            let warnings = gemini.unredactable().to_vec();
            Ok(Built {
                provider: Arc::new(gemini),
                warnings,
            })
        }
        ProviderSpec::OpenAi(config) => {
            let openai = OpenAiProvider::new(OpenAiConfig { models, ..config })?;
            let warnings = openai.unredactable().to_vec();
            Ok(Built {
                provider: Arc::new(openai),
                warnings,
            })
        }
        ProviderSpec::Script(path) => Ok(Built {
            provider: Arc::new(ScriptProvider::load(&path)?.with_models(models)),
            warnings: Vec::new(),
        }),
        ProviderSpec::Replay(replay) => Ok(Built {
            provider: replay,
            warnings: Vec::new(),
        }),
    }
}
