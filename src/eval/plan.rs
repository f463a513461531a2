//! A suite ready to run: its matrix, which of its turns this run takes
//! (`--variant`, `--case`, `--claim` and `--shard`), which are already done
//! (`--resume`), and how each turn's request, labels and verdict are made.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::NaiveDate;

use super::expect::{Observation, Verdict, judge};
use super::matrix::{Matrix, ModelSettings, Shard, TurnSpec, glob_match};
use super::suite::{CaseSettings, Expectations, LoadedSuite, case_messages};
use crate::chat::request::{ChatRequest, ClaimInput, PromptOptions};
use crate::judge::RubricVerdict;
use crate::runs::RunHeader;
use crate::runs::record::RunLabels;

pub use crate::runs::view::TurnKey;
use crate::runs::view::TurnPlace;

/// Which turns of the matrix this run takes. Case and claim patterns are
/// globs (`*`, `?`); empty lists take everything.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub cases: Vec<String>,
    pub claims: Vec<String>,
    pub shard: Option<Shard>,
}

/// A literal `--case` or `--claim` value that names nothing in the suite.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{flag} `{value}`: suite `{suite}` has no such {what}{hint}",
    what = if *.flag == "--case" { "case" } else { "claim" },
    hint = .near.as_ref().map(|near| format!("; did you mean `{near}`?")).unwrap_or_default()
)]
pub struct UnknownSelection {
    pub flag: &'static str,
    pub value: String,
    pub suite: String,
    pub near: Option<String>,
}

/// A suite ready to run.
pub struct EvalPlan {
    pub suite: LoadedSuite,
    pub matrix: Matrix,
    pub selection: Selection,
    /// Matrix indexes already done (`--resume`): selected, not run again.
    pub done: HashSet<usize>,
    /// This invocation's eval run id (`ev-…`), recorded in every turn's
    /// run log: fresh, unless `--eval-run` gave the shards one to share.
    pub eval_run: String,
    /// Each case's settings over the suite's defaults, merged once: every
    /// turn's request and verdict read them (three merges a turn before).
    case_settings: Vec<CaseSettings>,
    /// Whether rubric expectations decide the exit code: not when the
    /// suite asks for a calibrated judge and its judge is not (SPEC §15).
    pub rubric_decides: bool,
}

impl EvalPlan {
    /// One line per ignored override and per unknown placeholder, by variant:
    /// what `--strict` refuses, and what the NDJSON summary's `warnings` keep.
    pub fn override_warnings(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for variant in &self.matrix.variants {
            for ignored in &variant.ignored {
                problems.push(format!("variant `{}`: {ignored}", variant.name));
            }
            for unknown in &variant.unknown_placeholders {
                problems.push(format!("variant `{}`: {unknown}", variant.name));
            }
        }
        problems
    }

    /// Prompts a later override file of a variant replaced an earlier
    /// one's: said at the start, never refused (layering may be meant).
    pub fn shadowed_overrides(&self) -> Vec<String> {
        let variants = self.matrix.variants.iter();
        variants
            .flat_map(|v| {
                v.shadowed
                    .iter()
                    .map(|s| format!("variant `{}`: {s}", v.name))
            })
            .collect()
    }

    pub fn new(suite: LoadedSuite, matrix: Matrix, selection: Selection) -> EvalPlan {
        let defaults = &suite.suite.defaults;
        let case_settings = suite
            .suite
            .cases
            .iter()
            .map(|case| case.settings(defaults))
            .collect();
        EvalPlan {
            case_settings,
            suite,
            matrix,
            selection,
            done: HashSet::new(),
            eval_run: super::run_id::new_eval_run_id(),
            rubric_decides: true,
        }
    }

    /// The outcome that counts toward the exit code: a turn that failed
    /// only its rubric criteria passes when the rubric does not decide.
    pub fn deciding_outcome(&self, verdict: &super::expect::Verdict) -> super::expect::Outcome {
        use super::expect::Outcome;
        let only_rubric = !verdict.failures.is_empty()
            && (verdict.failures.iter()).all(|line| super::expect::is_rubric_line(line));
        match verdict.outcome {
            Outcome::Fail if !self.rubric_decides && only_rubric => Outcome::Pass,
            outcome => outcome,
        }
    }

    /// The turns this run takes (this shard's, after the filters), done or not.
    pub fn selected(&self) -> impl Iterator<Item = TurnSpec> + '_ {
        self.filtered(self.selection.shard)
    }

    fn filtered(&self, shard: Option<Shard>) -> impl Iterator<Item = TurnSpec> + '_ {
        self.matrix
            .turns()
            .filter(move |spec| self.wanted(spec))
            .enumerate()
            .filter(move |(position, _)| shard.is_none_or(|s| s.takes(*position)))
            .map(|(_, spec)| spec)
    }

    /// The `--case` and `--claim` filters (the same for every variant).
    fn wanted(&self, spec: &TurnSpec) -> bool {
        let wanted = |patterns: &[String], value: &str| {
            patterns.is_empty() || patterns.iter().any(|p| glob_match(p, value))
        };
        wanted(
            &self.selection.cases,
            &self.suite.suite.cases[spec.case].name,
        ) && wanted(&self.selection.claims, &spec.claim_id)
    }

    /// Every literal `--case` and `--claim` value (one without `*` or `?`)
    /// must name a case of the suite and a claim it runs on, as `--variant`
    /// must name a variant: else a misspelt name beside a good one would
    /// be dropped without a word and the run would look complete. A glob
    /// that matches nothing stays a filter, not an error.
    pub fn check_selection(&self) -> Result<(), UnknownSelection> {
        let cases: Vec<&str> = self
            .suite
            .suite
            .cases
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        let claims: Vec<&str> = self.matrix.claims.keys().map(String::as_str).collect();
        for (flag, values, known) in [
            ("--case", &self.selection.cases, &cases),
            ("--claim", &self.selection.claims, &claims),
        ] {
            let is_glob = |value: &String| value.contains(['*', '?']);
            if let Some(value) = values
                .iter()
                .find(|value| !is_glob(value) && !known.contains(&value.as_str()))
            {
                return Err(UnknownSelection {
                    flag,
                    value: crate::text::quote(value),
                    suite: self.suite.name.clone(),
                    near: crate::text::closest(value, known.iter().copied()).map(str::to_string),
                });
            }
        }
        Ok(())
    }

    /// The selected turns still to run, variants taken in turn (the first
    /// turn of each variant, then the second of each, …), so that a run
    /// stopped part-way (`--max-cost`) has run every variant about equally.
    /// The same turns as `to_run`, each with its own matrix index and shard
    /// position: only the order differs.
    pub fn to_run_round_robin(&self) -> impl Iterator<Item = TurnSpec> + '_ {
        let variants = self.matrix.variants.len().max(1);
        let per_variant = self.matrix.planned / variants;
        // The filters do not depend on the variant, so variant 0's selected
        // turns say which turns every variant has; a turn's shard position
        // is its variant's offset plus its place among them.
        let selected_per_variant = self
            .matrix
            .turns()
            .take(per_variant)
            .filter(|spec| self.wanted(spec))
            .count();
        let shard = self.selection.shard;
        self.matrix
            .turns()
            .take(per_variant)
            .filter(move |spec| self.wanted(spec))
            .enumerate()
            .flat_map(move |(place, first)| {
                (0..variants).filter_map(move |variant| {
                    let position = variant * selected_per_variant + place;
                    let spec = TurnSpec {
                        index: variant * per_variant + first.index,
                        variant,
                        ..first.clone()
                    };
                    shard.is_none_or(|s| s.takes(position)).then_some(spec)
                })
            })
            .filter(|spec| !self.done.contains(&spec.index))
    }

    /// How many turns the filters select before sharding: the whole that a
    /// shard is part of.
    pub fn unsharded_count(&self) -> usize {
        self.filtered(None).count()
    }

    /// The selected turns still to run.
    pub fn to_run(&self) -> impl Iterator<Item = TurnSpec> + '_ {
        self.selected()
            .filter(|spec| !self.done.contains(&spec.index))
    }

    /// The turn's key: the one `runs::view` reads off a recorded turn.
    pub fn key(&self, spec: &TurnSpec) -> TurnKey {
        TurnKey {
            place: TurnPlace {
                suite: Some(self.suite.name.clone()),
                claim: spec.claim_id.clone(),
                case: self.suite.suite.cases[spec.case].name.clone(),
                sample: spec.sample,
            },
            version: self.matrix.variants[spec.variant].name.clone(),
        }
    }

    /// Whether a recorded turn of one of this plan's variants was recorded
    /// as that variant is now — the same prompt fingerprint and model
    /// settings — so that resume and merge never take a turn of an older
    /// version (or another model) for a turn of this one.
    pub fn is_current_version(&self, header: &RunHeader) -> bool {
        let Some(labels) = &header.labels else {
            return false;
        };
        let recorded = ModelSettings {
            model: header.model.clone(),
            thinking_level: header.request.thinking_level,
            forced: header.request.force_thinking_level,
            provider: None,
            base_url: None,
        };
        self.matrix
            .variants
            .iter()
            .find(|variant| variant.name == labels.variant)
            .is_some_and(|variant| {
                variant.fingerprint == header.fingerprint
                    && variant.model.is_recorded(&recorded, &header.provider)
            })
    }
    pub fn labels(&self, spec: &TurnSpec) -> RunLabels {
        RunLabels {
            suite: self.suite.name.clone(),
            variant: self.matrix.variants[spec.variant].name.clone(),
            case: self.suite.suite.cases[spec.case].name.clone(),
            sample: spec.sample,
            eval_run: Some(self.eval_run.clone()),
            tags: self.suite.suite.cases[spec.case].tags.clone(),
        }
    }

    /// The chat request of one turn, with its variant's model settings.
    pub fn request(&self, spec: &TurnSpec, today: NaiveDate) -> ChatRequest {
        let case = &self.suite.suite.cases[spec.case];
        let model = &self.matrix.variants[spec.variant].model;
        let settings = self.settings(spec.case);
        ChatRequest {
            claim: ClaimInput::Document(Arc::clone(&self.matrix.claims[&spec.claim_id])),
            messages: case_messages(case),
            prompt: PromptOptions {
                capability: settings.capability.clone(),
                locale: settings.locale,
                brand: settings.brand.clone(),
                screen_actions: settings.screen_actions.unwrap_or(false),
                voice: settings.voice.unwrap_or(false),
                overrides: self.matrix.variants[spec.variant].overrides.clone(),
            },
            model: model.model.clone(),
            thinking_level: model.thinking_level,
            force_thinking_level: model.forced,
            today: settings.today.unwrap_or(today),
        }
    }

    /// This turn's expectations: its case's over the suite's defaults.
    pub fn expectations(&self, spec: &TurnSpec) -> &Expectations {
        &self.settings(spec.case).expect
    }

    /// Case `case`'s settings over the suite's defaults.
    pub fn settings(&self, case: usize) -> &CaseSettings {
        &self.case_settings[case]
    }

    /// Judges an observation against this turn's expectations, with the
    /// judge's verdicts on its rubric criteria.
    pub fn judge(&self, spec: &TurnSpec, seen: &Observation, rubric: &[RubricVerdict]) -> Verdict {
        judge(self.expectations(spec), seen, rubric)
    }

    /// Whether any selected case has rubric criteria (and so needs a judge).
    /// Every rubric criterion of the suite's cases (what a judge's
    /// identity covers), in case order, repeats included.
    pub fn rubric_criteria(&self) -> Vec<String> {
        (self.case_settings.iter())
            .flat_map(|settings| settings.expect.rubric.0.iter().cloned())
            .collect()
    }

    pub fn has_rubric(&self) -> bool {
        self.case_settings
            .iter()
            .any(|settings| !settings.expect.rubric.0.is_empty())
    }
}
