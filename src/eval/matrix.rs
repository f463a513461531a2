//! The turns a suite runs: variants × claims × cases × repeats, in a fixed
//! order, and the deterministic part of it that one shard takes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::suite::{ClaimSelection, LoadedSuite, SuiteError};
use crate::claims::{ClaimError, ClaimStore, LoadedClaim, SelectedClaims};
use crate::prompts::overrides::IgnoredOverride;
use crate::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};

/// A prompt version, ready to apply.
#[derive(Debug, Clone)]
pub struct PreparedVariant {
    pub name: String,
    /// Overrides as requested (before the usable rule).
    pub overrides: BTreeMap<String, String>,
    pub fingerprint: String,
    pub ignored: Vec<IgnoredOverride>,
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

#[derive(Debug, Clone)]
pub struct Matrix {
    pub variants: Vec<PreparedVariant>,
    pub claims: BTreeMap<String, LoadedClaim>,
    pub turns: Vec<TurnSpec>,
    /// Claim files a glob or `all` matched but that could not be loaded.
    pub claim_warnings: Vec<String>,
}

/// `I/N`: this machine's part of the matrix (1-based I).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;
    fn from_str(text: &str) -> Result<Shard, String> {
        let parse = || {
            let (index, count) = text.split_once('/')?;
            let shard = Shard {
                index: index.trim().parse().ok()?,
                count: count.trim().parse().ok()?,
            };
            (shard.count >= 1 && (1..=shard.count).contains(&shard.index)).then_some(shard)
        };
        parse().ok_or_else(|| format!("expected I/N with 1 ≤ I ≤ N (e.g. 2/4), got `{text}`"))
    }
}

impl Shard {
    /// Round-robin over the matrix order, so every shard gets a fair mix.
    pub fn takes(&self, spec: &TurnSpec) -> bool {
        spec.index % self.count == self.index - 1
    }
}

pub fn build_matrix(
    suite: &LoadedSuite,
    store: &ClaimStore,
    registry: &PromptRegistry,
) -> Result<Matrix, SuiteError> {
    let variants = prepare_variants(suite, registry)?;
    let mut claims = BTreeMap::new();
    let mut case_claims: Vec<Vec<String>> = Vec::new();
    let SelectedClaims {
        claims: all,
        warnings,
    } = load_store(suite, store)?;
    for (index, case) in suite.suite.cases.iter().enumerate() {
        let (selection, field) = match &case.claims {
            Some(selection) => (selection, format!("cases[{index}].claims")),
            None => (&suite.suite.claims, "claims".to_string()),
        };
        let chosen = select(selection, &all, &field, suite)?;
        for id in &chosen {
            claims.insert(id.clone(), all[id].clone());
        }
        case_claims.push(chosen);
    }
    let mut turns = Vec::new();
    for variant in 0..variants.len() {
        for (case, ids) in case_claims.iter().enumerate() {
            for claim_id in ids {
                for sample in 1..=suite.repeats() {
                    turns.push(TurnSpec {
                        index: turns.len(),
                        variant,
                        claim_id: claim_id.clone(),
                        case,
                        sample,
                    });
                }
            }
        }
    }
    Ok(Matrix {
        variants,
        claims,
        turns,
        claim_warnings: warnings,
    })
}

fn prepare_variants(
    suite: &LoadedSuite,
    registry: &PromptRegistry,
) -> Result<Vec<PreparedVariant>, SuiteError> {
    if suite.suite.variants.is_empty() {
        return Ok(vec![PreparedVariant {
            name: "default".to_string(),
            overrides: BTreeMap::new(),
            fingerprint: fingerprint(&BTreeMap::new()),
            ignored: Vec::new(),
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
        let mut overrides = set.prompts;
        overrides.extend(variant.prompts.clone());
        let resolved = resolve_overrides(&overrides, registry);
        prepared.push(PreparedVariant {
            name: variant.name.clone(),
            fingerprint: fingerprint(&resolved.applied),
            ignored: resolved.ignored,
            overrides,
        });
    }
    Ok(prepared)
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
    all: &BTreeMap<String, LoadedClaim>,
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

    #[test]
    fn shards_split_the_matrix_without_overlap() {
        let specs: Vec<TurnSpec> = (0..10)
            .map(|index| TurnSpec {
                index,
                variant: 0,
                claim_id: "c".into(),
                case: 0,
                sample: 1,
            })
            .collect();
        let shards: Vec<Shard> = ["1/3", "2/3", "3/3"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        for spec in &specs {
            assert_eq!(shards.iter().filter(|shard| shard.takes(spec)).count(), 1);
        }
        assert!("0/3".parse::<Shard>().is_err());
        assert!("4/3".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
    }
}
