//! Flags shared by the commands that assemble a prompt (`prompts show`,
//! `prompts diff`, `chat`): which claim, which prompt options, which day.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDate;
use clap::Args;

use promptlab::chat::{ClaimInput, Locale, PromptOptions};
use promptlab::claims::{ClaimStore, LoadedClaim, load_claim_file, parse_claim_bytes};
use promptlab::input::MAX_INPUT_BYTES;
use promptlab::prompts::overrides::ResolvedOverrides;
use promptlab::prompts::{OverrideSet, PromptRegistry, resolve_overrides};

use super::error::CliError;

/// Exactly one of a claim file or a claim id.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct ClaimArgs {
    /// A claim document (JSON or YAML); `-` reads it from stdin.
    #[arg(long, value_name = "FILE")]
    pub claim: Option<PathBuf>,
    /// A claim id, looked up in the claim store (`--claims-dir`).
    #[arg(long, value_name = "ID")]
    pub claim_id: Option<String>,
}

impl ClaimArgs {
    /// The claim as the engine takes it: a parsed document, or an id that
    /// the turn looks up (and reports as an `error` event if absent).
    pub fn into_input(self) -> Result<ClaimInput, CliError> {
        match (self.claim, self.claim_id) {
            (Some(path), _) => Ok(ClaimInput::Document(Arc::new(read_claim_file(&path)?))),
            (None, Some(id)) => Ok(ClaimInput::Id(id)),
            (None, None) => Err(CliError::usage("one of --claim or --claim-id is required")),
        }
    }

    /// The claim itself, looked up now.
    pub fn load(self, store: &ClaimStore) -> Result<LoadedClaim, CliError> {
        match self.into_input()? {
            ClaimInput::Document(claim) => Ok(Arc::unwrap_or_clone(claim)),
            ClaimInput::Id(id) => {
                super::folders::claims_folder(store)?;
                Ok(store.load(&id)?)
            }
        }
    }
}

/// Reads a claim file, or stdin for `-`.
pub fn read_claim_file(path: &Path) -> Result<LoadedClaim, CliError> {
    if path.as_os_str() == "-" {
        let bytes =
            promptlab::input::read_limited(std::io::stdin(), MAX_INPUT_BYTES).map_err(|error| {
                CliError::usage(format!("failed to read the claim from stdin: {error}"))
            })?;
        return Ok(parse_claim_bytes(&bytes, Path::new("<stdin>"))?);
    }
    Ok(load_claim_file(path)?)
}

/// What shapes the system prompt besides the claim and the overrides.
#[derive(Debug, Clone, Args)]
pub struct ContextArgs {
    /// A quick action (`promptlab prompts list` shows them); absent = free chat.
    #[arg(long, value_name = "ID")]
    pub capability: Option<String>,
    /// Brand that fills {{assistant}}, {{product}} and {{pronunciation}}.
    #[arg(long, value_name = "NAME")]
    pub brand: Option<String>,
    /// Spelling, dates and terminology; default from the claim's country.
    #[arg(long, value_name = "uk|us")]
    pub locale: Option<Locale>,
    /// Offer the screen tools (highlight_panel, open_document) and their block.
    #[arg(long)]
    pub screen_actions: bool,
    /// Add the spoken-style tail for answers read aloud.
    #[arg(long)]
    pub voice: bool,
}

impl ContextArgs {
    /// Prompt options with these overrides.
    pub fn options(&self, overrides: std::collections::BTreeMap<String, String>) -> PromptOptions {
        PromptOptions {
            capability: self.capability.clone(),
            locale: self.locale,
            brand: self.brand.clone(),
            screen_actions: self.screen_actions,
            voice: self.voice,
            overrides,
        }
    }
}

/// What shapes the system prompt besides the claim.
#[derive(Debug, Clone, Args)]
pub struct PromptArgs {
    #[command(flatten)]
    pub context: ContextArgs,
    /// A Prompt Lab override file or folder; repeat for several (later ones win per prompt id).
    #[arg(long, value_name = "PATH")]
    pub overrides: Vec<PathBuf>,
}

/// Prompt options with their overrides loaded and the usable rule applied.
pub struct LoadedPromptOptions {
    pub options: PromptOptions,
    pub overrides: OverrideSet,
    pub resolved: ResolvedOverrides,
}

impl PromptArgs {
    /// Loads override files and checks the brand; warns on stderr about
    /// every override that will not be applied.
    pub fn load(self, registry: &PromptRegistry) -> Result<LoadedPromptOptions, CliError> {
        let overrides = OverrideSet::load(&self.overrides)?;
        for shadowed in &overrides.shadowed {
            promptlab::text::eprintln_or_drop!(
                "warning: {}",
                promptlab::text::printable(&shadowed.to_string())
            );
        }
        let options = self.context.options(overrides.prompts.clone());
        options.validate(registry)?;
        let resolved = resolve_overrides(&options.overrides, registry);
        for ignored in &resolved.ignored {
            let source = overrides
                .sources
                .get(&ignored.id)
                .map(|file| format!(" (from `{file}`)"))
                .unwrap_or_default();
            let warning = format!(
                "warning: override `{}`{source} ignored: {}{}",
                ignored.id,
                ignored.reason,
                super::suggest::prompt_id_suffix(&ignored.id, registry)
            );
            promptlab::text::eprintln_or_drop!("{}", promptlab::text::printable(&warning));
        }
        for unknown in &resolved.unknown_placeholders {
            promptlab::text::eprintln_or_drop!("warning: {unknown}");
        }
        Ok(LoadedPromptOptions {
            options,
            overrides,
            resolved,
        })
    }
}

/// `--today YYYY-MM-DD`: pins the date the claim brief gives, so that
/// recorded runs are reproducible.
pub fn parse_today(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|_| format!("expected a date as YYYY-MM-DD, got `{text}`"))
}

/// The pinned date, or the local date.
pub fn today_or_local(today: Option<NaiveDate>) -> NaiveDate {
    today.unwrap_or_else(|| chrono::Local::now().date_naive())
}
