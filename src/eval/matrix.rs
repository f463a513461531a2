//! The turns a suite runs: variants × claims × cases × repeats, in a fixed
//! order, and the deterministic part of it that one shard takes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::suite::{ClaimSelection, LoadedSuite, SuiteError};
use crate::claims::{ClaimStore, LoadedClaim, load_claim_file};
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
    let all = load_store(suite, store)?;
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

fn load_store(
    suite: &LoadedSuite,
    store: &ClaimStore,
) -> Result<BTreeMap<String, LoadedClaim>, SuiteError> {
    let rule = |message: String| SuiteError::Rule {
        path: suite.path.display().to_string(),
        field: "claims".into(),
        message,
    };
    let mut claims = BTreeMap::new();
    for entry in store.entries().map_err(|e| rule(e.to_string()))? {
        let loaded = load_claim_file(&entry.path).map_err(|e| rule(e.to_string()))?;
        claims.insert(entry.id, loaded);
    }
    Ok(claims)
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

/// `*` matches any run of characters, `?` any one.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

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
