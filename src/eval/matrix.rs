//! The turns a suite runs: variants × claims × cases × repeats, in a fixed
//! order, expanded lazily (a suite may plan up to `MAX_PLANNED_TURNS`), and
//! the deterministic part of it that one shard takes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use super::shard::Shard;
use super::suite::{ClaimSelection, LoadedSuite, SuiteError};
use crate::chat::request::ThinkingLevel;
use crate::claims::{ClaimError, ClaimStore, LoadedClaim, SelectedClaims};
use crate::prompts::overrides::{IgnoredOverride, Shadowed, UnknownPlaceholder};
use crate::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};

/// A prompt version and model settings, ready to apply.
#[derive(Debug, Clone)]
pub struct PreparedVariant {
    pub name: String,
    /// Overrides as requested (before the usable rule).
    pub overrides: BTreeMap<String, String>,
    pub fingerprint: String,
    pub ignored: Vec<IgnoredOverride>,
    /// Applied overrides using a `{{name}}` no brand fills.
    pub unknown_placeholders: Vec<UnknownPlaceholder>,
    /// Prompts a later override file replaced (a folder of alternatives
    /// layered by mistake, or on purpose): said, never refused.
    pub shadowed: Vec<Shadowed>,
    pub model: ModelSettings,
}

/// What a variant asks the model for: with the prompt fingerprint, its
/// identity — two variants differing only here are different versions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelSettings {
    pub model: String,
    /// The default level; a quick action's own wins unless `forced`.
    pub thinking_level: ThinkingLevel,
    pub forced: bool,
    /// The variant's own provider (else the run's `--provider`) and, for an
    /// OpenAI-compatible one, its server.
    pub provider: Option<crate::provider::ProviderKind>,
    pub base_url: Option<String>,
}

impl ModelSettings {
    /// Whether a recorded turn of `provider` with these settings is one of
    /// this variant's (a variant without a provider of its own takes any).
    pub fn is_recorded(&self, recorded: &ModelSettings, provider: &str) -> bool {
        self.model == recorded.model
            && self.thinking_level == recorded.thinking_level
            && self.forced == recorded.forced
            && self.provider.is_none_or(|kind| kind.name() == provider)
    }
}

impl std::fmt::Display for ModelSettings {
    /// `gemini-3.1-flash-lite, thinking low` (`, forced` when it is);
    /// `gpt-5-mini (openai), thinking low` for a variant's own provider.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.model)?;
        if let Some(provider) = self.provider {
            write!(f, " ({provider})")?;
        }
        write!(f, ", thinking {}", self.thinking_level)?;
        if self.forced {
            f.write_str(" (forced)")?;
        }
        Ok(())
    }
}

/// One turn of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSpec {
    /// Position in the whole (unsharded) matrix.
    pub index: usize,
    pub variant: usize,
    pub claim_id: String,
    pub case: usize,
    /// 1-based.
    pub sample: u32,
}

/// The most turns one suite may plan (variants × claim-case pairs ×
/// repeats): checked before anything is allocated or run.
pub const MAX_PLANNED_TURNS: usize = 1_000_000;

#[derive(Debug, Clone)]
pub struct Matrix {
    pub variants: Vec<PreparedVariant>,
    /// Shared with every turn's request (`EvalPlan::request`), not copied.
    pub claims: BTreeMap<String, Arc<LoadedClaim>>,
    /// The claim ids of each case, in store order.
    pub case_claims: Vec<Vec<String>>,
    pub repeats: u32,
    /// How many turns the whole matrix holds.
    pub planned: usize,
    /// Claim files a glob or `all` matched but that could not be loaded.
    pub claim_warnings: Vec<String>,
}

impl Matrix {
    /// Every turn, in matrix order (variant, case, claim, sample), made as
    /// it is needed.
    pub fn turns(&self) -> impl Iterator<Item = TurnSpec> + '_ {
        let repeats = self.repeats;
        (0..self.variants.len())
            .flat_map(move |variant| {
                self.case_claims
                    .iter()
                    .enumerate()
                    .flat_map(move |(case, ids)| {
                        ids.iter().flat_map(move |claim_id| {
                            (1..=repeats).map(move |sample| (variant, case, claim_id, sample))
                        })
                    })
            })
            .enumerate()
            .map(|(index, (variant, case, claim_id, sample))| TurnSpec {
                index,
                variant,
                claim_id: claim_id.clone(),
                case,
                sample,
            })
    }
}

/// Builds the matrix; `defaults` are the model settings of variants that set
/// none (the command line's `--model` and `--thinking-level`).
pub fn build_matrix(
    suite: &LoadedSuite,
    store: &ClaimStore,
    registry: &PromptRegistry,
    defaults: &ModelSettings,
) -> Result<Matrix, SuiteError> {
    let variants = prepare_variants(suite, registry, defaults)?;
    check_size(suite, variants.len(), suite.suite.cases.len())?;
    let mut claims = BTreeMap::new();
    let mut case_claims: Vec<Vec<String>> = Vec::new();
    let SelectedClaims {
        claims: all,
        warnings,
    } = load_store(suite, store)?;
    // Shared, not copied, by every case that selects a claim.
    let all: BTreeMap<String, Arc<LoadedClaim>> = all
        .into_iter()
        .map(|(id, loaded)| (id, Arc::new(loaded)))
        .collect();
    for (index, case) in suite.suite.cases.iter().enumerate() {
        let (selection, field) = match &case.claims {
            Some(selection) => (selection, format!("cases[{index}].claims")),
            None => (&suite.suite.claims, "claims".to_string()),
        };
        let chosen = select(selection, &all, &field, suite)?;
        for id in &chosen {
            claims
                .entry(id.clone())
                .or_insert_with(|| Arc::clone(&all[id]));
        }
        case_claims.push(chosen);
    }
    let pairs: usize = case_claims.iter().map(Vec::len).sum();
    let planned = check_size(suite, variants.len(), pairs)?;
    Ok(Matrix {
        variants,
        claims,
        case_claims,
        repeats: suite.repeats(),
        planned,
        claim_warnings: warnings,
    })
}

/// variants × `pairs` × repeats, refused past `MAX_PLANNED_TURNS` — called
/// with the case count before claims are read (a bound) and with the
/// claim-case pairs after.
fn check_size(suite: &LoadedSuite, variants: usize, pairs: usize) -> Result<usize, SuiteError> {
    let repeats = usize::try_from(suite.repeats()).unwrap_or(usize::MAX);
    variants
        .checked_mul(pairs)
        .and_then(|n| n.checked_mul(repeats))
        .filter(|planned| *planned <= MAX_PLANNED_TURNS)
        .ok_or_else(|| SuiteError::Rule {
            path: suite.path.display().to_string(),
            field: "repeats".into(),
            message: format!(
                "the suite plans more than {MAX_PLANNED_TURNS} turns ({variants} variants × {pairs} × {repeats} repeats); split it"
            ),
        })
}

fn prepare_variants(
    suite: &LoadedSuite,
    registry: &PromptRegistry,
    defaults: &ModelSettings,
) -> Result<Vec<PreparedVariant>, SuiteError> {
    if suite.suite.variants.is_empty() {
        return Ok(vec![PreparedVariant {
            name: "default".to_string(),
            overrides: BTreeMap::new(),
            fingerprint: fingerprint(&BTreeMap::new()),
            ignored: Vec::new(),
            unknown_placeholders: Vec::new(),
            shadowed: Vec::new(),
            model: defaults.clone(),
        }]);
    }
    let mut prepared = Vec::new();
    for (index, variant) in suite.suite.variants.iter().enumerate() {
        let paths: Vec<PathBuf> = variant
            .overrides
            .iter()
            .map(|p| suite.base_dir().join(p))
            .collect();
        let set = OverrideSet::load(&paths).map_err(|error| SuiteError::Rule {
            path: suite.path.display().to_string(),
            field: format!("variants[{index}].overrides"),
            message: error.to_string(),
        })?;
        let shadowed = set.shadowed;
        let mut overrides = set.prompts;
        overrides.extend(variant.prompts.clone());
        let resolved = resolve_overrides(&overrides, registry);
        let fingerprint = fingerprint(&resolved.applied);
        let model = ModelSettings {
            model: variant
                .model
                .clone()
                .unwrap_or_else(|| defaults.model.clone()),
            thinking_level: variant.thinking_level.unwrap_or(defaults.thinking_level),
            forced: variant.force_thinking_level,
            provider: variant.provider,
            base_url: variant.base_url.clone(),
        };
        if let Some(twin) = prepared
            .iter()
            .find(|p: &&PreparedVariant| p.fingerprint == fingerprint && p.model == model)
        {
            return Err(SuiteError::Rule {
                path: suite.path.display().to_string(),
                field: format!("variants[{index}]"),
                message: format!(
                    "variant `{}` is the same prompt version and model as `{}` (fingerprint {fingerprint}, {model}){}",
                    variant.name,
                    twin.name,
                    ignored_hint(&resolved.ignored)
                ),
            });
        }
        prepared.push(PreparedVariant {
            name: variant.name.clone(),
            fingerprint,
            ignored: resolved.ignored,
            unknown_placeholders: resolved.unknown_placeholders,
            shadowed,
            overrides,
            model,
        });
    }
    Ok(prepared)
}

/// Why a variant may have come out the same as another.
fn ignored_hint(ignored: &[IgnoredOverride]) -> String {
    if ignored.is_empty() {
        return String::new();
    }
    let list: Vec<String> = ignored
        .iter()
        .map(|i| format!("`{}` ({})", i.id, i.reason))
        .collect();
    format!("; its ignored overrides: {}", list.join(", "))
}

fn load_store(suite: &LoadedSuite, store: &ClaimStore) -> Result<SelectedClaims, SuiteError> {
    let rule = |message: String| SuiteError::Rule {
        path: suite.path.display().to_string(),
        field: "claims".into(),
        message,
    };
    // Only the claims some case's selection names are opened
    // (crate::claims::store::ClaimStore::load_selected).
    let selections = suite
        .suite
        .cases
        .iter()
        .map(|case| case.claims.as_ref().unwrap_or(&suite.suite.claims));
    let (mut ids, mut globs, mut all) = (Vec::new(), Vec::new(), false);
    for selection in selections {
        ids.extend(selection.ids.iter().cloned());
        globs.extend(selection.globs.iter().cloned());
        all |= selection.all || (selection.ids.is_empty() && selection.globs.is_empty());
    }
    store
        .load_selected(&ids, &globs, all)
        .map_err(|error| match error {
            ClaimError::NotFound(id) => rule(format!("claim `{id}` is not in the claim store")),
            error => rule(error.to_string()),
        })
}

fn select(
    selection: &ClaimSelection,
    all: &BTreeMap<String, Arc<LoadedClaim>>,
    field: &str,
    suite: &LoadedSuite,
) -> Result<Vec<String>, SuiteError> {
    let rule = |message: String| SuiteError::Rule {
        path: suite.path.display().to_string(),
        field: field.to_string(),
        message,
    };
    for id in &selection.ids {
        if !all.contains_key(id) {
            return Err(rule(format!("claim `{id}` is not in the claim store")));
        }
    }
    let everything = selection.all || (selection.ids.is_empty() && selection.globs.is_empty());
    let contains = |value: &str, wanted: &Option<String>| {
        wanted
            .as_ref()
            .is_none_or(|wanted| value.to_lowercase().contains(&wanted.to_lowercase()))
    };
    let chosen: Vec<String> = all
        .iter()
        .filter(|(id, _)| {
            everything
                || selection.ids.contains(id)
                || selection.globs.iter().any(|glob| glob_match(glob, id))
        })
        .filter(|(_, loaded)| {
            let claim = &loaded.claim;
            selection.country.as_ref().is_none_or(|c| {
                claim
                    .country
                    .as_deref()
                    .is_some_and(|own| own.eq_ignore_ascii_case(c))
            }) && contains(&claim.line_of_business, &selection.line_of_business)
                && contains(&claim.status, &selection.status)
        })
        .map(|(id, _)| id.clone())
        .collect();
    if chosen.is_empty() {
        return Err(rule("no claim in the store matches this selection".into()));
    }
    Ok(chosen)
}

pub use crate::claims::store::glob_match;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob_match("CLM-HH-*", "CLM-HH-0001"));
        assert!(glob_match("*-00?1", "CLM-HH-0011"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("CLM-HH-*", "CLM-MTR-0002"));
        assert!(!glob_match("CLM-?", "CLM-12"));
    }
}
