//! `compare` of two eval runs, streamed from the run index (SPEC §9): both
//! sides' rows read in pairing-key order `(claim, case, sample, variant)`
//! and paired as they come, keeping only the counts, each side's fold, the
//! runs only in one side (counted, the first N listed) and the worst N
//! pairs (`fold::WorstKey`), whose logs are then read for their answers'
//! word diffs. Memory holds N pairs, whatever the runs hold; the figures
//! are those `compare` gives of the same runs read into memory.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::DateTime;

use crate::event::Usage;
use crate::index::RunIndex;
use crate::index::pairs::{Figure, Side, SideFact, SideRow, SideSelect, Standing};
use crate::judge::JudgeSpend;
use crate::runs::record::{Outcome, RecordedVerdict};

use super::fold::{self, FirstN, PairCounts, SideDistributions, SideFold, Worst, WorstKey};
use super::set::{CompareError, RunEntry, RunFilter, SetAside, Votes, empty_error};
use super::{
    Comparison, Distribution, Pair, RunsOf, SetAsideTotals, SideSummary, VersionPair, assemble,
    match_versions, side_warnings,
};

/// One side named as an eval run: as given, what it was taken to mean,
/// the run, and the variant `@VARIANT` chose.
#[derive(Debug, Clone)]
pub struct EvalRunSide {
    pub label: String,
    pub source: String,
    pub eval_run: String,
    pub variant: Option<String>,
}

/// Compares `a` and `b` by streaming when both name eval runs (`ev-…`,
/// `last~N`, with `@VARIANT` or not) of `runs_dir`, with the notes a
/// reader is told; `None` when either names something else, or when the
/// index lacks what pairing needs (the logs are then read).
pub fn compare_if_eval_runs(
    specs: [&str; 2],
    runs_dir: &Path,
    filter: &RunFilter,
    worst: usize,
) -> Result<Option<(Comparison, Vec<String>)>, CompareError> {
    let split = specs.map(super::set::split_variant);
    for (spec, _) in split {
        if !super::sides::names_eval_run(spec)? {
            return Ok(None);
        }
    }
    let opened = RunIndex::open(runs_dir)?;
    let mut notes = opened.notes;
    let mut named = Vec::new();
    for (spec, variant) in split {
        let picked =
            super::sides::eval_run_named(spec, runs_dir, &opened.index, filter, &mut notes)?;
        let Some(id) = picked else { return Ok(None) };
        let mut source = format!("eval run {id} in {}", runs_dir.display());
        if let Some(variant) = variant {
            source.push_str(&format!(", variant {variant}"));
        }
        named.push(EvalRunSide {
            label: variant.map_or(spec.to_string(), |v| format!("{spec}@{v}")),
            source,
            eval_run: id,
            variant: variant.map(str::to_string),
        });
    }
    let [a, b]: [EvalRunSide; 2] = named
        .try_into()
        .map_err(|_| CompareError::EvalRun("two sides are compared".to_string()))?;
    let found = compare_eval_runs(&opened.index, [a, b], filter, worst)?;
    Ok(found.map(|comparison| (comparison, notes)))
}

/// A side's prompt versions by (variant, model setting): a variant asked
/// of several models is one version per model (`set::name_model_versions`).
struct Versions(BTreeMap<(String, String), String>);

impl Versions {
    fn of(facts: &[SideFact]) -> Versions {
        let mut models: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let counted = facts
            .iter()
            .filter(|f| !matches!(f.standing, Standing::NotSelected | Standing::Replay));
        for fact in counted {
            let seen = models.entry(&fact.variant).or_default();
            if !seen.contains(&fact.model_setting.as_str()) {
                seen.push(&fact.model_setting);
            }
        }
        let mut names = BTreeMap::new();
        for fact in facts {
            let several = models
                .get(fact.variant.as_str())
                .is_some_and(|m| m.len() > 1);
            let name = if several {
                format!("{} ({})", fact.variant, fact.model_setting)
            } else {
                fact.variant.clone()
            };
            names.insert((fact.variant.clone(), fact.model_setting.clone()), name);
        }
        Versions(names)
    }

    fn of_row(&self, row: &SideRow) -> String {
        self.0
            .get(&(row.variant.clone(), row.model_setting.clone()))
            .cloned()
            .unwrap_or_else(|| row.variant.clone())
    }
}

/// What a side is read with: its name in the index, its versions.
struct Reading {
    side: Side,
    versions: Versions,
    runs_of: Vec<RunsOf>,
    totals: SetAsideTotals,
}

/// Compares two eval runs from `index`, listing the `worst` worst pairs
/// and the first `worst` runs only in each side; `None` when a member's
/// row lacks what pairing needs (its log's body could not be read when it
/// was indexed): the caller then reads the logs.
pub fn compare_eval_runs(
    index: &RunIndex,
    sides: [EvalRunSide; 2],
    filter: &RunFilter,
    worst: usize,
) -> Result<Option<Comparison>, CompareError> {
    let result = compare_selected(index, &sides, filter, worst);
    // The temporary tables go with the connection anyway; dropped at once
    // so that their pages are given back.
    index.forget_sides()?;
    result
}

fn compare_selected(
    index: &RunIndex,
    sides: &[EvalRunSide; 2],
    filter: &RunFilter,
    worst: usize,
) -> Result<Option<Comparison>, CompareError> {
    let a = select(index, Side::A, &sides[0], filter)?;
    let b = select(index, Side::B, &sides[1], filter)?;
    if index.side_body_unknown(Side::A)? + index.side_body_unknown(Side::B)? > 0 {
        return Ok(None);
    }
    let names = |reading: &Reading| -> Vec<String> {
        let mut names: Vec<String> = reading.runs_of.iter().map(|r| r.version.clone()).collect();
        names.dedup();
        names
    };
    let versions = match_versions(&names(&a), &names(&b))?;
    let warnings = side_warnings(&a.runs_of, &b.runs_of, &versions);
    let mut merge = Merge::new(index.root(), &versions, worst);
    index.read_sides(|a_rows, b_rows| merge.run(&a, &b, a_rows, b_rows))??;
    let Merge {
        folds,
        counts,
        worst: kept,
        only_in,
        ..
    } = merge;
    let [fold_a, fold_b] = folds;
    let [only_a, only_b] = only_in;
    let summaries = [
        summary(index, &a, &sides[0], fold_a, filter, worst)?,
        summary(index, &b, &sides[1], fold_b, filter, worst)?,
    ];
    let pairs = kept
        .into_sorted()
        .into_iter()
        .map(|(_, stub)| stub.read(index.root()))
        .collect();
    let only_in = [
        read_unpaired(only_a, index.root()),
        read_unpaired(only_b, index.root()),
    ];
    Ok(Some(assemble(
        summaries, versions, pairs, only_in, counts, warnings,
    )))
}

/// Selects one side's rows; its versions and what it set aside.
fn select(
    index: &RunIndex,
    side: Side,
    named: &EvalRunSide,
    filter: &RunFilter,
) -> Result<Reading, CompareError> {
    let variants = match &named.variant {
        Some(variant) => vec![variant.clone()],
        None => filter.variants.clone(),
    };
    let counted = index.select_side(
        side,
        &SideSelect {
            eval_run: &named.eval_run,
            suite: filter.suite.as_deref(),
            variants: &variants,
            model: filter.model.as_deref(),
            provider: filter.provider.as_deref(),
        },
    )?;
    let count = |standing| {
        counted
            .iter()
            .find(|(s, _)| *s == standing)
            .map_or(0, |(_, n)| *n)
    };
    if count(Standing::Run) == 0 {
        let mut filter = filter.clone();
        filter.variants = variants;
        return Err(empty_error(
            named.source.clone(),
            &filter,
            count(Standing::NotSelected) > 0,
            count(Standing::Replay),
        ));
    }
    let facts = index.side_facts(side)?;
    let versions = Versions::of(&facts);
    let mut runs_of: Vec<RunsOf> = facts
        .iter()
        .filter(|f| f.standing == Standing::Run)
        .map(|f| RunsOf {
            version: versions.0[&(f.variant.clone(), f.model_setting.clone())].clone(),
            provider: f.provider.clone(),
            model: f.model_setting.clone(),
            runs: f.rows,
        })
        .collect();
    runs_of.sort();
    Ok(Reading {
        side,
        versions,
        runs_of,
        totals: SetAsideTotals {
            superseded: count(Standing::SupersededVersion) + count(Standing::SupersededAgain),
            not_selected: count(Standing::NotSelected),
            replays: count(Standing::Replay),
        },
    })
}

/// A side's summary: its fold, its percentiles from SQL, and the first
/// `listed` runs it set aside of each kind.
fn summary(
    index: &RunIndex,
    reading: &Reading,
    named: &EvalRunSide,
    fold: SideFold,
    filter: &RunFilter,
    listed: usize,
) -> Result<SideSummary, CompareError> {
    let spread_of = |figure| -> Result<Distribution, CompareError> {
        let found = index.side_percentiles(reading.side, figure, &[50, 95])?;
        Ok(Distribution {
            median: found.first().copied().flatten(),
            p95: found.get(1).copied().flatten(),
        })
    };
    let spread = SideDistributions {
        input_tokens: spread_of(Figure::InputTokens)?,
        output_tokens: spread_of(Figure::OutputTokens)?,
        latency_ms: spread_of(Figure::Latency)?,
    };
    let mut summary = fold.finish(&named.label, &named.source, spread);
    let aside = |standing| -> Result<Vec<SetAside>, CompareError> {
        let rows = index.side_rows(reading.side, standing, listed)?;
        Ok(rows
            .iter()
            .map(|row| {
                let run = entry_of(row, index.root(), reading.versions.of_row(row));
                let reason = why_aside(standing, &run, filter);
                SetAside { run, reason }
            })
            .collect())
    };
    summary.superseded = aside(Standing::SupersededVersion)?;
    summary.superseded.extend(aside(Standing::SupersededAgain)?);
    summary.superseded.truncate(listed);
    summary.not_selected = aside(Standing::NotSelected)?;
    summary.replays = aside(Standing::Replay)?;
    summary.set_aside_totals = reading.totals;
    Ok(summary)
}

fn why_aside(standing: Standing, run: &RunEntry, filter: &RunFilter) -> String {
    match standing {
        Standing::SupersededVersion => format!(
            "variant `{}` was recorded again with a newer prompt version; this run has {}",
            run.variant.as_deref().unwrap_or_default(),
            run.fingerprint
        ),
        Standing::SupersededAgain => "the same turn was recorded again later".to_string(),
        Standing::Replay => "a replay of a recorded turn: not a run of its own".to_string(),
        Standing::NotSelected | Standing::Run => filter.model_refuses(run).unwrap_or_else(|| {
            format!(
                "variant `{}` not selected by --variant",
                run.variant.as_deref().unwrap_or_default()
            )
        }),
    }
}

/// A pair while the stream runs: its rows and what was read of them.
struct PairStub {
    a: (SideRow, String),
    b: (SideRow, String),
    change: super::VerdictChange,
    answer_changed: bool,
    tools_changed: bool,
}

impl PairStub {
    /// The pair with its runs read from their logs (their answers, votes
    /// and failures), or from their rows when a log cannot be read now.
    fn read(self, root: &Path) -> Pair {
        let (a, b) = (read_entry(&self.a, root), read_entry(&self.b, root));
        let mut pair = super::pair(a, b);
        pair.change = self.change;
        pair.answer_changed = self.answer_changed;
        pair.tools_changed = self.tools_changed;
        pair
    }
}

fn read_entry((row, version): &(SideRow, String), root: &Path) -> RunEntry {
    let read = crate::runs::read_run_log(&root.join(&row.path));
    let mut entry = match read {
        Ok(log) => RunEntry::from_log(&log),
        Err(_) => entry_of(row, root, version.clone()),
    };
    entry.version = version.clone();
    entry
}

fn read_unpaired(rows: FirstN<(SideRow, String)>, root: &Path) -> FirstN<RunEntry> {
    rows.map(|row| read_entry(&row, root))
}

/// A run as its row tells it: no answer (pairs are told by its digest),
/// no votes (read with its log when it is listed).
fn entry_of(row: &SideRow, root: &Path, version: String) -> RunEntry {
    RunEntry {
        path: root.join(&row.path),
        turn_id: row.turn_id.clone(),
        started_at: DateTime::from_timestamp_nanos(row.started_ns),
        suite: row.suite.clone(),
        variant: Some(row.variant.clone()),
        claim: row.claim.clone(),
        case: row.case.clone(),
        sample: row.sample,
        fingerprint: row.fingerprint.clone(),
        version,
        model: row.model_setting.clone(),
        provider: row.provider.clone(),
        status: row.status.clone(),
        verdict: row.verdict.as_deref().map(|verdict| RecordedVerdict {
            outcome: outcome_of(verdict),
            failures: row
                .failures
                .as_deref()
                .map(|text| text.lines().map(str::to_string).collect())
                .unwrap_or_default(),
            rubric: Vec::new(),
        }),
        answer: String::new(),
        tools: row
            .tools
            .as_deref()
            .and_then(|tools| serde_json::from_str(tools).ok())
            .unwrap_or_default(),
        usage: row.usage,
        latency_ms: row.unqueued_ms,
        cost_usd: row.cost_usd,
        cached_calls: u32::from(row.cached),
        votes: Votes::default(),
    }
}

fn outcome_of(verdict: &str) -> Outcome {
    match verdict {
        "pass" => Outcome::Pass,
        "fail" => Outcome::Fail,
        _ => Outcome::Error,
    }
}

/// The judge calls a row's verdict rests on (`index::rows`' `judge`).
fn judge_of(row: &SideRow) -> JudgeSpend {
    let stored = row
        .judge
        .as_deref()
        .and_then(|text| serde_json::from_str::<(usize, Usage)>(text).ok());
    match stored {
        Some((calls, usage)) => JudgeSpend {
            calls,
            usage,
            ..JudgeSpend::default()
        },
        None => JudgeSpend::default(),
    }
}

/// The merge of both sides' rows, group by group (one claim, case and
/// sample: a row of each version at most, after superseded runs went).
struct Merge<'a> {
    root: &'a Path,
    versions: &'a [VersionPair],
    folds: [SideFold; 2],
    counts: PairCounts,
    worst: Worst<PairStub>,
    only_in: [FirstN<(SideRow, String)>; 2],
}

type Place = (String, String, u32);

fn place_of(row: &SideRow) -> Place {
    (row.claim.clone(), row.case.clone(), row.sample)
}

impl<'a> Merge<'a> {
    fn new(root: &'a Path, versions: &'a [VersionPair], keep: usize) -> Merge<'a> {
        Merge {
            root,
            versions,
            folds: [SideFold::new(), SideFold::new()],
            counts: PairCounts::default(),
            worst: Worst::new(keep),
            only_in: [FirstN::new(keep), FirstN::new(keep)],
        }
    }

    fn run(
        &mut self,
        a: &Reading,
        b: &Reading,
        a_rows: &mut dyn Iterator<Item = Result<SideRow, crate::index::IndexError>>,
        b_rows: &mut dyn Iterator<Item = Result<SideRow, crate::index::IndexError>>,
    ) -> Result<(), CompareError> {
        let mut next_a = a_rows.next().transpose()?;
        let mut next_b = b_rows.next().transpose()?;
        while next_a.is_some() || next_b.is_some() {
            let place = match (&next_a, &next_b) {
                (Some(x), Some(y)) => place_of(x).min(place_of(y)),
                (Some(x), None) | (None, Some(x)) => place_of(x),
                (None, None) => break,
            };
            let group_a = take_group(&mut next_a, a_rows, &place, &a.versions)?;
            let group_b = take_group(&mut next_b, b_rows, &place, &b.versions)?;
            self.pair_group(group_a, group_b);
        }
        Ok(())
    }

    /// Pairs one place's rows by version; the rest are only in their side.
    fn pair_group(&mut self, group_a: Vec<(SideRow, String)>, mut group_b: Vec<(SideRow, String)>) {
        for (side, group) in [(0, &group_a), (1, &group_b)] {
            for (row, version) in group {
                let entry = entry_of(row, self.root, version.clone());
                self.folds[side].add(&entry, judge_of(row));
            }
        }
        for a in group_a {
            let partner = self
                .versions
                .iter()
                .find(|v| v.a == a.1)
                .and_then(|v| group_b.iter().position(|b| b.1 == v.b));
            match partner {
                Some(at) => {
                    let b = group_b.remove(at);
                    self.add_pair(a, b);
                }
                None => self.only_in[0].offer(a),
            }
        }
        for b in group_b {
            self.only_in[1].offer(b);
        }
    }

    fn add_pair(&mut self, a: (SideRow, String), b: (SideRow, String)) {
        let outcome = |row: &SideRow| row.verdict.as_deref().map(outcome_of);
        let change = fold::change_of(outcome(&a.0), outcome(&b.0));
        let answer_changed = a.0.answer_sha256 != b.0.answer_sha256;
        let tools_changed = a.0.tools != b.0.tools;
        self.counts.add(change, answer_changed || tools_changed);
        let version = if a.1 == b.1 {
            a.1.clone()
        } else {
            format!("{} ↔ {}", a.1, b.1)
        };
        let key = WorstKey {
            rank: fold::rank(change, answer_changed || tools_changed),
            latency_increase: std::cmp::Reverse(fold::increase(a.0.unqueued_ms, b.0.unqueued_ms)),
            token_increase: std::cmp::Reverse(fold::increase(
                fold::tokens(&a.0.usage),
                fold::tokens(&b.0.usage),
            )),
            version,
            claim: a.0.claim.clone(),
            case: a.0.case.clone(),
            sample: a.0.sample,
        };
        let stub = PairStub {
            a,
            b,
            change,
            answer_changed,
            tools_changed,
        };
        self.worst.offer(key, stub);
    }
}

/// The rows at `place` (each with its version), taken from the front of
/// a side's stream.
fn take_group(
    next: &mut Option<SideRow>,
    rows: &mut dyn Iterator<Item = Result<SideRow, crate::index::IndexError>>,
    place: &Place,
    versions: &Versions,
) -> Result<Vec<(SideRow, String)>, CompareError> {
    let mut group = Vec::new();
    let at_place =
        |row: &SideRow| row.claim == place.0 && row.case == place.1 && row.sample == place.2;
    while next.as_ref().is_some_and(at_place) {
        if let Some(row) = next.take() {
            let version = versions.of_row(&row);
            group.push((row, version));
        }
        *next = rows.next().transpose()?;
    }
    Ok(group)
}
