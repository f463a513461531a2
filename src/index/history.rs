//! Eval runs as the index answers them (`evals list|show|trend`, `GET
//! /api/evals`): SQL selects a run's own turns, whose rows store each
//! turn's numbers; per variant they are folded by the one tally
//! (`runs::tally`: pass rates over the judged turns, errors apart, exact
//! nearest-rank latency percentiles over the turns that finished
//! uncached) — never estimates; and its failures.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use rusqlite::OptionalExtension;
use serde::Serialize;

use super::{IndexError, RunIndex};
use crate::cost::Cost;
use crate::event::Usage;
use crate::runs::record::Outcome;
use crate::runs::tally::{TallyBuilder, TurnNumbers};

/// One eval run as `evals list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunRow {
    pub id: String,
    /// `run`, `merge` or `rescore`; `run` for one without a summary file.
    pub kind: String,
    pub suite: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// Its shards (`1/3, 2/3`), when it ran as shards.
    pub shard: Option<String>,
    /// Turns it counted, as indexed.
    pub turns: usize,
    /// `pass`, `fail`, `cancelled`, or `no summary` (it did not end: killed,
    /// or still running).
    pub status: String,
    /// What its turns' model calls cost, in USD; absent when any is unknown.
    pub cost_usd: Option<f64>,
    /// Model calls of its turns whose server left some usage out; absent
    /// when none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usage_unreported: u32,
    pub variants: Vec<VariantNumbers>,
    /// `index` (the turns' rows), or `summary` when a variant's numbers
    /// are its summary files' (they counted turns of it the index does not
    /// have: logs lost during the run or removed since, or a merge's turns
    /// in other folders).
    pub numbers_from: String,
}

/// One variant's numbers in one eval run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantNumbers {
    pub variant: String,
    pub turns: usize,
    pub judged: usize,
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    /// passed / judged.
    pub pass_rate: Option<f64>,
    pub latency_p50_ms: Option<u64>,
    pub latency_p95_ms: Option<u64>,
    /// Model calls of its turns whose server left some usage out (their
    /// cost, and so the variant's, is unknown); absent when none did.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub usage_unreported: u32,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// A turn of an eval run that did not pass.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailureRow {
    pub variant: Option<String>,
    pub claim: String,
    pub case: String,
    pub sample: u32,
    /// `fail`, `error`, or absent for a turn that never finished.
    pub verdict: Option<String>,
    pub failures: Vec<String>,
    /// Relative to the runs folder.
    pub path: String,
}

/// One eval run in full (`evals show --json`, `GET /api/evals/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunDetail {
    pub run: EvalRunRow,
    /// Its NDJSON `summary` records (one per shard), as `eval` printed them.
    pub summaries: Vec<serde_json::Value>,
    pub failures: Vec<FailureRow>,
}

/// The turns an eval run counted, one row per turn: those its summary
/// files list (its own and those it took from other runs' logs: resumed,
/// merged, re-scored). An id used again (`--eval-run` kept across a CI
/// re-run, `--resume` after a kill) labels the earlier attempt's logs too,
/// and its summary file is replaced by the later one's: the list, not the
/// label, says which turns count. Only a run that never wrote a summary
/// (killed) is known by the labels in its logs alone.
macro_rules! members {
    () => {
        "WITH listed AS (SELECT turn_id FROM eval_run_turns WHERE eval_run = ?1),
m AS (
    SELECT t.* FROM turns t WHERE t.eval_run = ?1 AND NOT EXISTS (SELECT 1 FROM listed)
    UNION ALL
    SELECT t.* FROM listed e JOIN turns t ON t.turn_id = e.turn_id
        WHERE t.path = (SELECT min(path) FROM turns u WHERE u.turn_id = e.turn_id)
)"
    };
}
pub(super) const MEMBERS: &str = members!();

/// The members of `MEMBERS` that may not have passed, found from the
/// failing rows up (so that a run of a million passing turns costs a few
/// index seeks, not a walk of its members): its own turns' rows whose
/// verdict is not `pass`, and the turns it took from other runs' logs
/// (`borrowed`; a listed turn not taken from a log carries this run's id in
/// its own log). Each is then the member row `MEMBERS` picks, whose verdict
/// is filtered again by the caller.
const FAILING_MEMBERS: &str =
    "WITH listed AS (SELECT turn_id FROM eval_run_turns WHERE eval_run = ?1),
own AS (
    SELECT turn_id, path FROM turns WHERE eval_run = ?1 AND verdict < 'pass'
    UNION ALL SELECT turn_id, path FROM turns WHERE eval_run = ?1 AND verdict > 'pass'
    UNION ALL SELECT turn_id, path FROM turns WHERE eval_run = ?1 AND verdict IS NULL
),
candidates AS (
    SELECT turn_id FROM own
    UNION SELECT turn_id FROM eval_run_turns INDEXED BY eval_run_turns_borrowed
        WHERE eval_run = ?1 AND borrowed
),
m AS (
    SELECT t.* FROM own o JOIN turns t ON t.path = o.path WHERE NOT EXISTS (SELECT 1 FROM listed)
    UNION ALL
    SELECT t.* FROM candidates c JOIN eval_run_turns e ON e.eval_run = ?1 AND e.turn_id = c.turn_id
        JOIN turns t ON t.turn_id = c.turn_id
        WHERE t.path = (SELECT min(path) FROM turns u WHERE u.turn_id = c.turn_id)
)";

/// Each member's numbers, as its row stores them (`rows::TurnRow`: the
/// one view's `TurnNumbers`) and its cost, by variant: what the tally folds.
const MEMBER_NUMBERS: &str = concat!(
    members!(),
    "
SELECT coalesce(variant, ''), verdict, errored, input_tokens, output_tokens, cache_read_tokens,
    usage_unreported, latency_ms, cached, cost_usd
FROM m ORDER BY 1"
);

impl RunIndex {
    /// The newest `limit` eval runs (of `suite`, since `since`), newest first.
    pub fn eval_runs(
        &self,
        suite: Option<&str>,
        since: Option<DateTime<Utc>>,
        limit: usize,
    ) -> Result<Vec<EvalRunRow>, IndexError> {
        let since = since.map(super::rows::nanos);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let ids = self.strings(
            "SELECT id FROM eval_runs WHERE (?1 IS NULL OR suite = ?1)
             AND (?2 IS NULL OR started_ns >= ?2) ORDER BY started_ns DESC, id LIMIT ?3",
            &[&suite, &since, &limit],
        )?;
        ids.iter()
            .filter_map(|id| self.eval_run(id).transpose())
            .collect()
    }

    /// One eval run by its whole id.
    pub fn eval_run(&self, id: &str) -> Result<Option<EvalRunRow>, IndexError> {
        let db = self.lock();
        let span = db
            .query_row(
                "SELECT suite, started_ns, ended_ns FROM eval_runs WHERE id = ?1",
                [id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.error(e))?;
        let Some((suite, started, ended)) = span else {
            return Ok(None);
        };
        let summaries = summaries(&db, id).map_err(|e| self.error(e))?;
        drop(db);
        let (counted, numbers_from) = numbers_of(self.stored_variants(id)?, &summaries);
        let turns = counted
            .iter()
            .fold(0, |sum: usize, (v, _)| sum.saturating_add(v.turns));
        let cost_usd = counted
            .iter()
            .try_fold(0.0, |sum, (_, cost)| cost.map(|cost| sum + cost));
        let usage_unreported = counted
            .iter()
            .fold(0, |sum: u32, (v, _)| sum.saturating_add(v.usage_unreported));
        let variants: Vec<VariantNumbers> = counted.into_iter().map(|(v, _)| v).collect();
        let time = |ns: i64| DateTime::from_timestamp_nanos(ns);
        Ok(Some(EvalRunRow {
            id: id.to_string(),
            kind: summaries.first().map_or("run".into(), |s| s.kind.clone()),
            suite,
            started_at: time(started),
            ended_at: time(ended),
            shard: {
                let shards: Vec<&str> = summaries
                    .iter()
                    .filter_map(|s| s.shard.as_deref())
                    .collect();
                (!shards.is_empty()).then(|| shards.join(", "))
            },
            turns,
            status: status_of(&summaries),
            cost_usd,
            usage_unreported,
            variants,
            numbers_from: numbers_from.to_string(),
        }))
    }

    /// An eval run's numbers per variant, by name, and their cost (absent
    /// when any turn's is unknown): its members' rows, each variant's
    /// folded by the one tally (`runs::tally`), its costs summed by the one
    /// cost rule (`cost::Cost`).
    pub fn variants(&self, id: &str) -> Result<Vec<(VariantNumbers, Option<f64>)>, IndexError> {
        let db = self.lock();
        let mut statement = db
            .prepare_cached(MEMBER_NUMBERS)
            .map_err(|e| self.error(e))?;
        let mut rows = statement.query([id]).map_err(|e| self.error(e))?;
        let mut counted: Vec<(String, TallyBuilder, Cost)> = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.error(e))? {
            let (variant, numbers, cost) = member_numbers(row).map_err(|e| self.error(e))?;
            match counted.last_mut() {
                Some((last, tally, sum)) if *last == variant => {
                    tally.add(numbers);
                    *sum = *sum + cost;
                }
                _ => {
                    let mut tally = TallyBuilder::default();
                    tally.add(numbers);
                    counted.push((variant, tally, cost));
                }
            }
        }
        let numbers = counted.into_iter().map(|(variant, tally, cost)| {
            let tally = tally.finish();
            let numbers = VariantNumbers {
                variant,
                turns: tally.turns,
                judged: tally.judged,
                passed: tally.passed,
                failed: tally.failed,
                errors: tally.errors,
                pass_rate: tally.pass_rate,
                latency_p50_ms: tally.latency_p50_ms,
                latency_p95_ms: tally.latency_p95_ms,
                usage_unreported: tally.usage.usage_unreported,
            };
            (numbers, cost.usd())
        });
        Ok(numbers.collect())
    }

    /// The turns of an eval run that did not pass, in place order.
    pub fn failures(&self, id: &str) -> Result<Vec<FailureRow>, IndexError> {
        let db = self.lock();
        let sql = format!(
            "{FAILING_MEMBERS} SELECT variant, claim, \"case\", sample, verdict, failures, path
             FROM m WHERE verdict IS NOT 'pass' ORDER BY variant, claim, \"case\", sample, path"
        );
        db.prepare(&sql)
            .and_then(|mut statement| {
                statement
                    .query_map([id], |row| {
                        let failures: Option<String> = row.get(5)?;
                        Ok(FailureRow {
                            variant: row.get(0)?,
                            claim: row.get(1)?,
                            case: row.get(2)?,
                            sample: row.get(3)?,
                            verdict: row.get(4)?,
                            failures: failures
                                .map(|text| text.lines().map(str::to_string).collect())
                                .unwrap_or_default(),
                            path: row.get(6)?,
                        })
                    })?
                    .collect()
            })
            .map_err(|e| self.error(e))
    }

    /// The logs of an eval run's turns.
    pub fn member_paths(&self, id: &str) -> Result<Vec<PathBuf>, IndexError> {
        let paths = self.strings(
            &format!("{MEMBERS} SELECT path FROM m ORDER BY path"),
            &[&id],
        )?;
        Ok(paths.into_iter().map(|path| self.root.join(path)).collect())
    }

    /// One eval run by its whole id, with its summaries and failures.
    pub fn detail(&self, id: &str) -> Result<Option<EvalRunDetail>, IndexError> {
        let Some(run) = self.eval_run(id)? else {
            return Ok(None);
        };
        Ok(Some(EvalRunDetail {
            summaries: self.summary_records(id)?,
            failures: self.failures(id)?,
            run,
        }))
    }

    /// The summary records of an eval run's summary files, as written.
    pub fn summary_records(&self, id: &str) -> Result<Vec<serde_json::Value>, IndexError> {
        let db = self.lock();
        let found = summaries(&db, id).map_err(|e| self.error(e))?;
        Ok(found.into_iter().map(|s| s.summary).collect())
    }
}

/// A member row of `MEMBER_NUMBERS`: its variant, its numbers as the
/// tally takes them, and its cost.
fn member_numbers(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, TurnNumbers, Cost)> {
    let count = |at| {
        row.get::<_, Option<i64>>(at)
            .map(|n| n.and_then(|n| u64::try_from(n).ok()))
    };
    let outcome = match row.get::<_, Option<String>>(1)?.as_deref() {
        Some("pass") => Some(Outcome::Pass),
        Some("fail") => Some(Outcome::Fail),
        Some(_) => Some(Outcome::Error),
        None => None,
    };
    let numbers = TurnNumbers {
        outcome,
        errored: row.get(2)?,
        usage: Usage {
            input_tokens: count(3)?,
            output_tokens: count(4)?,
            cache_read_tokens: count(5)?,
            usage_unreported: row.get(6)?,
        },
        latency_ms: count(7)?,
        cached: row.get(8)?,
    };
    Ok((
        row.get(0)?,
        numbers,
        Cost::from(row.get::<_, Option<f64>>(9)?),
    ))
}

struct SummaryRow {
    kind: String,
    shard: Option<String>,
    status: String,
    summary: serde_json::Value,
}

fn summaries(db: &rusqlite::Connection, id: &str) -> rusqlite::Result<Vec<SummaryRow>> {
    db.prepare_cached(
        "SELECT kind, shard, status, summary FROM eval_summaries WHERE eval_run = ?1 ORDER BY shard, file",
    )?
    .query_map([id], |row| {
        let text: String = row.get(3)?;
        Ok(SummaryRow {
            kind: row.get(0)?,
            shard: row.get(1)?,
            status: row.get(2)?,
            summary: serde_json::from_str(&text).unwrap_or_default(),
        })
    })?
    .collect()
}

/// `no summary` without a summary file; else the worst of its files'.
fn status_of(summaries: &[SummaryRow]) -> String {
    for worst in ["cancelled", "fail", "pass"] {
        if summaries.iter().any(|s| s.status == worst) {
            return worst.to_string();
        }
    }
    "no summary".to_string()
}

type Counted = Vec<(VariantNumbers, Option<f64>)>;

/// An eval run's numbers and where they come from: each variant's from its
/// turns' rows (`index`), so that a re-score stands over the verdict a turn
/// was given — unless the run's summary files counted turns of that variant
/// the index has no log for (logs lost during the run to a full disk,
/// removed since, or, for a merge, in other folders): that variant's are
/// then the files' (`summary`), as rows alone would leave those turns out
/// of its pass rate.
fn numbers_of(indexed: Counted, summaries: &[SummaryRow]) -> (Counted, &'static str) {
    let Some(files) = summed_summaries(summaries) else {
        return (indexed, "index");
    };
    let mut from = "index";
    let mut numbers = indexed;
    for (filed, cost) in files {
        let counted = numbers.iter_mut().find(|(v, _)| v.variant == filed.variant);
        match counted {
            Some(counted) if counted.0.turns >= filed.turns => {}
            Some(counted) => (*counted, from) = ((filed, cost), "summary"),
            None => {
                numbers.push((filed, cost));
                from = "summary";
            }
        }
    }
    (numbers, from)
}

/// The per-variant numbers of an eval run's summary files: a merge's alone
/// (it counts every shard's turns, whose own files may be here too), else
/// its shards' added up by variant — a variant's latency percentiles only
/// when one file holds it (percentiles do not add up); none without a file
/// with variants.
fn summed_summaries(summaries: &[SummaryRow]) -> Option<Counted> {
    let merge = summaries.iter().find(|s| s.kind == "merge");
    let files = merge.map_or(summaries, std::slice::from_ref);
    let mut summed: Counted = Vec::new();
    for (numbers, cost) in files.iter().flat_map(|s| variants_in_summary(&s.summary)) {
        let Some((total, total_cost)) = summed
            .iter_mut()
            .find(|(v, _)| v.variant == numbers.variant)
        else {
            summed.push((numbers, cost));
            continue;
        };
        // Saturating: a summary file is read as found, whatever it says.
        total.turns = total.turns.saturating_add(numbers.turns);
        total.judged = total.judged.saturating_add(numbers.judged);
        total.passed = total.passed.saturating_add(numbers.passed);
        total.failed = total.failed.saturating_add(numbers.failed);
        total.errors = total.errors.saturating_add(numbers.errors);
        total.usage_unreported = total
            .usage_unreported
            .saturating_add(numbers.usage_unreported);
        total.pass_rate = (total.judged > 0).then(|| total.passed as f64 / total.judged as f64);
        (total.latency_p50_ms, total.latency_p95_ms) = (None, None);
        *total_cost = total_cost.zip(cost).map(|(a, b)| a + b);
    }
    (!summed.is_empty()).then_some(summed)
}

/// A summary record's per-variant numbers and costs (absent when unknown).
fn variants_in_summary(summary: &serde_json::Value) -> Counted {
    let Some(variants) = summary.get("variants").and_then(|v| v.as_array()) else {
        return Vec::new();
    };
    let count = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(serde_json::Value::as_u64)
            .map_or(0, |n| n as usize)
    };
    variants
        .iter()
        .map(|v| {
            let (passed, failed) = (count(v, "passed"), count(v, "failed"));
            let judged = count(v, "turns");
            let numbers = VariantNumbers {
                variant: v
                    .get("variant")
                    .and_then(|n| n.as_str())
                    .unwrap_or("")
                    .to_string(),
                turns: count(v, "turns"),
                judged,
                passed,
                failed,
                errors: count(v, "errors"),
                pass_rate: (judged > 0).then(|| passed as f64 / judged as f64),
                latency_p50_ms: v.get("latencyP50Ms").and_then(serde_json::Value::as_u64),
                latency_p95_ms: v.get("latencyP95Ms").and_then(serde_json::Value::as_u64),
                usage_unreported: v
                    .get("usageUnreported")
                    .and_then(serde_json::Value::as_u64)
                    .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            };
            (
                numbers,
                v.get("costUsd").and_then(serde_json::Value::as_f64),
            )
        })
        .collect()
}

/// `evals trend --json`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trend {
    pub suite: String,
    /// Oldest first.
    pub runs: Vec<TrendRun>,
    pub variants: Vec<TrendLine>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrendRun {
    pub id: String,
    pub started_at: DateTime<Utc>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrendLine {
    pub variant: String,
    /// One per run, oldest first; absent where the run had no verdict for it.
    pub pass_rates: Vec<Option<f64>>,
    pub sparkline: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(variant: &str, turns: usize, passed: usize) -> VariantNumbers {
        VariantNumbers {
            variant: variant.into(),
            turns,
            judged: turns,
            passed,
            failed: turns - passed,
            errors: 0,
            pass_rate: (turns > 0).then(|| passed as f64 / turns as f64),
            latency_p50_ms: Some(5),
            latency_p95_ms: Some(9),
            usage_unreported: 0,
        }
    }

    fn file(kind: &str, variants: &[(&str, usize, usize)]) -> SummaryRow {
        let variants: Vec<serde_json::Value> = variants
            .iter()
            .map(|(name, turns, passed)| {
                serde_json::json!({"variant": name, "turns": turns, "passed": passed,
                    "failed": turns - passed, "errors": 0, "latencyP50Ms": 7, "costUsd": 0.5})
            })
            .collect();
        SummaryRow {
            kind: kind.into(),
            shard: None,
            status: "fail".into(),
            summary: serde_json::json!({ "variants": variants }),
        }
    }

    /// Only a variant whose turns the index lacks takes its files' numbers:
    /// the other keeps its rows' (and their re-scores).
    #[test]
    fn a_variant_with_turns_missing_from_the_index_takes_its_summary_s_numbers() {
        let indexed = vec![
            (numbers("a", 4, 4), Some(1.0)),
            (numbers("b", 2, 2), Some(0.5)),
        ];
        let shards = [
            file("run", &[("a", 2, 1), ("b", 2, 1)]),
            file("run", &[("a", 2, 1), ("b", 2, 1)]),
        ];
        let (counted, from) = numbers_of(indexed.clone(), &shards);
        assert_eq!(from, "summary");
        assert_eq!(
            counted[0], indexed[0],
            "a's rows stand: the index has all 4"
        );
        let b = &counted[1].0;
        assert_eq!((b.turns, b.passed, b.pass_rate), (4, 2, Some(0.5)));
        assert_eq!(
            b.latency_p50_ms, None,
            "percentiles of two files do not add up"
        );
        assert_eq!(counted[1].1, Some(1.0));
        let (_, from) = numbers_of(indexed.clone(), &[file("run", &[("a", 4, 2), ("b", 2, 1)])]);
        assert_eq!(from, "index", "nothing missing: the rows stand");
    }

    /// Counts a hand-edited file puts at the top of the range add up
    /// without overflowing.
    #[test]
    fn huge_counts_in_summary_files_saturate() {
        let huge = usize::MAX / 2 + 1;
        let files = [
            file("run", &[("a", huge, 0)]),
            file("run", &[("a", huge, 0)]),
        ];
        let (counted, _) = numbers_of(Vec::new(), &files);
        assert_eq!(counted[0].0.turns, usize::MAX);
    }

    /// A merge's file counts every shard's turns: it alone is taken, not
    /// added to the shards' own files in the same folder.
    #[test]
    fn a_merge_s_summary_is_not_added_to_its_shards() {
        let files = [
            file("run", &[("a", 2, 1)]),
            file("merge", &[("a", 4, 3)]),
            file("run", &[("a", 2, 2)]),
        ];
        let (counted, from) = numbers_of(Vec::new(), &files);
        assert_eq!(from, "summary");
        let a = &counted[0].0;
        assert_eq!((a.turns, a.passed, a.latency_p50_ms), (4, 3, Some(7)));
    }
}
