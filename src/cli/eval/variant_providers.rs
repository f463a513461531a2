//! The providers suite variants choose for themselves (`provider`,
//! `baseUrl`; docs/providers.md): each built once, through the one library
//! builder, with the run's `--connect-timeout`, `--idle-timeout` and
//! `--max-call-time`, and checked ready before
//! any turn runs.

use std::collections::HashMap;
use std::sync::Arc;

use promptlab::eval::plan::EvalPlan;
use promptlab::provider::ModelProvider;
use promptlab::provider::ProviderKind;
use promptlab::provider::build::ProviderSpec;
use promptlab::provider::endpoint::Endpoint;
use promptlab::provider::gemini::GeminiConfig;
use promptlab::provider::openai::OpenAiConfig;
use promptlab::provider::transport::HttpSettings;

use super::settings::EvalSettings;
use crate::cli::error::CliError;

/// Variant index → its own provider, for the variants that name one.
pub fn build(
    settings: &EvalSettings,
    plan: &EvalPlan,
) -> Result<HashMap<usize, Arc<dyn ModelProvider>>, CliError> {
    let mut built = HashMap::new();
    for (index, variant) in plan.matrix.variants.iter().enumerate() {
        let Some(kind) = variant.model.provider else {
            continue;
        };
        let model = &settings.model;
        let http = model.http(HttpSettings::default())?;
        let spec = match kind {
            ProviderKind::Gemini => ProviderSpec::Gemini(GeminiConfig {
                http,
                limits: model.limits(),
                ..GeminiConfig::from_env()
            }),
            ProviderKind::OpenAi => {
                let from_env = OpenAiConfig::from_env();
                ProviderSpec::OpenAi(OpenAiConfig {
                    http,
                    limits: model.limits(),
                    endpoint: Endpoint {
                        base_url: (variant.model.base_url.clone())
                            .unwrap_or(from_env.endpoint.base_url.clone()),
                        ..from_env.endpoint.clone()
                    },
                    ..from_env
                })
            }
            other => {
                return Err(CliError::usage(format!(
                    "variant `{}`: a variant's provider is gemini or openai, not {other}",
                    variant.name
                )));
            }
        };
        let provider = crate::cli::model::build_spec(spec, &settings.tables)?;
        provider.check_ready().map_err(|error| {
            CliError::usage(format!("variant `{}`: {}", variant.name, error.message))
        })?;
        built.insert(index, provider);
    }
    Ok(built)
}
