//! JUnit XML for CI, valid against `junit-10.xsd` (the schema Jenkins'
//! xUnit plugin validates with; GitLab and GitHub read the same shape): one
//! testsuite per variant, one testcase per claim × case with its repeats
//! folded into a pass rate. A testcase that did not pass is a `<failure>`
//! when a sample failed its expectations, an `<error>` when samples only
//! errored (nothing could be judged), and `<skipped>` when none of its
//! samples ran; its `message` (what CI widgets headline) is the first unmet
//! expectation, and its body starts with that expectation and the sample's
//! run log (GitLab shows only the body), then the rest. The classname is
//! `promptlab.<suite>.<variant>`.
//!
//! Streamed, like every output at the end of a run: the counts come from
//! the folds the summary gathered, then each testcase is written as its
//! fold is read again from the spill in matrix order, one claim × case in
//! memory at a time.
//!
//! Written by the small typed writer in `junit/xml.rs`: `quick-junit` always
//! writes `skipped` and `timestamp` on `<testsuites>`, which that schema
//! does not allow.

mod samples;
mod xml;

use samples::CaseSamples;
pub use samples::MAX_SAMPLES_LISTED;

use std::io::Write;
use std::time::Duration;

use chrono::{DateTime, Utc};

use self::xml::{Counts, JunitWriter, Status, SuiteHead, TestCase};
use super::fold::{CaseFold, Folded};
use super::plan::EvalPlan;
use super::spill::SpillError;

/// How much of an answer a testcase's `<system-out>` carries.
pub const ANSWER_CHARS: usize = 2_000;

/// What the report needs beyond the folds and the results.
pub struct JunitContext {
    pub started_at: DateTime<Utc>,
    /// Why selected turns did not run: `cancelled`, `budget reached`.
    pub not_run_reason: &'static str,
    /// `I/N` when this run is one shard.
    pub shard: Option<String>,
    /// The rubric judge's calibration line, when the suite has criteria.
    pub judge_calibration: Option<String>,
}

/// Why the report was not written whole.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    #[error("{0}")]
    Write(#[from] std::io::Error),
    #[error(transparent)]
    Spill(#[from] SpillError),
}

/// What a testcase's fold makes it.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Passed,
    Failed,
    Errored,
    Skipped,
}

/// The one rule: skipped when none of its samples ran; passed when its
/// passes reach the case's threshold; else a failure when a sample failed
/// its expectations, an error when samples only errored.
fn kind(fold: &CaseFold) -> Kind {
    if fold.ran == 0 {
        Kind::Skipped
    } else if fold.passed >= fold.required {
        Kind::Passed
    } else if fold.failed > 0 {
        Kind::Failed
    } else {
        Kind::Errored
    }
}

/// Each variant's testsuite counts, gathered from the folds as the end of
/// the run reads them (they head the report, before its testcases).
#[derive(Default, Clone)]
pub struct SuiteCounts(Vec<Counts>);

impl SuiteCounts {
    pub fn new(variants: usize) -> SuiteCounts {
        SuiteCounts(vec![Counts::default(); variants])
    }

    pub fn add(&mut self, fold: &CaseFold) {
        let Some(counts) = self.0.get_mut(fold.variant) else {
            return;
        };
        counts.tests += 1;
        match kind(fold) {
            Kind::Passed => {}
            Kind::Failed => counts.failures += 1,
            Kind::Errored => counts.errors += 1,
            Kind::Skipped => counts.skipped += 1,
        }
        counts.time += Duration::from_millis(fold.time_ms);
    }

    fn total(&self) -> Counts {
        self.0.iter().fold(Counts::default(), |sum, c| Counts {
            tests: sum.tests + c.tests,
            failures: sum.failures + c.failures,
            errors: sum.errors + c.errors,
            skipped: sum.skipped + c.skipped,
            time: sum.time + c.time,
        })
    }
}

/// Writes the report to `out`: one testsuite per variant (`counts` theirs),
/// one testcase per fold, from the run's turns and folds in matrix order
/// (`fold::folds`): what a claim × case's testcase needs of its samples is
/// gathered as they come (`samples::CaseSamples`), never the samples.
pub fn write_junit(
    plan: &EvalPlan,
    counts: &SuiteCounts,
    folds: impl Iterator<Item = Result<Folded, SpillError>>,
    context: &JunitContext,
    out: impl Write,
) -> Result<(), JunitError> {
    let mut suites = Suites {
        writer: JunitWriter::start(out, &plan.suite.name, counts.total())?,
        plan,
        context,
        counts,
        open: None,
    };
    let mut ran = CaseSamples::default();
    for read in folds {
        match read? {
            Folded::Turn(result) => ran.add(&result),
            Folded::Case(fold) => {
                suites.open_to(fold.variant)?;
                let case = test_case(plan, &fold, &ran, context.not_run_reason);
                suites.writer.case(&case)?;
                ran = CaseSamples::default();
            }
        }
    }
    // Every variant has its testsuite, in order.
    if let Some(last) = plan.matrix.variants.len().checked_sub(1) {
        suites.open_to(last)?;
        suites.writer.end_suite()?;
    }
    suites.writer.finish()?;
    Ok(())
}

/// The testsuites being written, one variant's open at a time.
struct Suites<'a, W: Write> {
    writer: JunitWriter<W>,
    plan: &'a EvalPlan,
    context: &'a JunitContext,
    counts: &'a SuiteCounts,
    open: Option<usize>,
}

impl<W: Write> Suites<'_, W> {
    /// Closes the open testsuite and opens each up to variant `to`'s.
    fn open_to(&mut self, to: usize) -> std::io::Result<()> {
        while self.open.is_none_or(|open| open < to) {
            if self.open.is_some() {
                self.writer.end_suite()?;
            }
            let next = self.open.map_or(0, |open| open + 1);
            let counts = self.counts.0.get(next).copied().unwrap_or_default();
            let head = suite_head(self.plan, self.context, next, counts);
            self.writer.start_suite(&head)?;
            self.open = Some(next);
        }
        Ok(())
    }
}

/// The testsuite of variant `index`: its name, counts and properties.
fn suite_head(plan: &EvalPlan, context: &JunitContext, index: usize, counts: Counts) -> SuiteHead {
    let variant = &plan.matrix.variants[index];
    let mut properties = vec![
        ("eval-run", plan.eval_run.clone()),
        ("fingerprint", variant.fingerprint.to_string()),
        ("model", variant.model.model.to_string()),
        (
            "thinking-level",
            variant.model.thinking_level.as_str().to_string(),
        ),
    ];
    if variant.model.forced {
        properties.push(("force-thinking-level", "true".to_string()));
    }
    // A variant's own provider (docs/providers.md); else the run's.
    if let Some(provider) = variant.model.provider {
        properties.push(("provider", provider.name().to_string()));
    }
    if let Some(shard) = &context.shard {
        properties.push(("shard", shard.clone()));
    }
    if let Some(line) = &context.judge_calibration {
        properties.push(("judge-calibration", line.clone()));
    }
    for ignored in &variant.ignored {
        properties.push(("ignored-override", ignored.to_string()));
    }
    SuiteHead {
        name: format!("{} / {}", plan.suite.name, variant.name),
        timestamp: context.started_at,
        properties: properties
            .into_iter()
            .map(|(name, value)| (name.to_string(), value))
            .collect(),
        counts,
    }
}

/// A claim × case, named `claim · case`, with the samples that ran.
fn test_case(
    plan: &EvalPlan,
    fold: &CaseFold,
    ran: &CaseSamples,
    not_run_reason: &str,
) -> TestCase {
    let name = format!(
        "{} · {}",
        fold.claim, plan.suite.suite.cases[fold.case].name
    );
    // Prefixed so that no source file is named like it: reporters that map
    // a classname to a file (mikepenz/action-junit-report) matched
    // `default` to `default.*` files.
    let classname = format!(
        "promptlab.{}.{}",
        plan.suite.name, plan.matrix.variants[fold.variant].name
    );
    let not_run = (fold.samples - fold.ran) as usize;
    let status = match kind(fold) {
        Kind::Skipped => Status::Skipped {
            message: format!("not run: {not_run_reason}"),
        },
        Kind::Passed => Status::Passed,
        kind => {
            let counts = format!(
                "{} of {} samples passed (pass rate {:.0}%); {} needed (threshold: {})",
                fold.passed,
                fold.ran,
                f64::from(fold.passed) * 100.0 / f64::from(fold.ran),
                fold.required,
                fold.threshold.describe()
            );
            let failed = kind == Kind::Failed;
            let message = ran.first_problem(failed).unwrap_or_else(|| counts.clone());
            // GitLab shows the body, not `message`: the expectation and
            // where to look come first.
            let body = format!(
                "{message}\nrun log: {}\n{counts}\n{}",
                ran.first_log(failed),
                ran.problems()
            );
            match failed {
                true => Status::Failed { message, body },
                false => Status::Errored { message, body },
            }
        }
    };
    TestCase {
        name,
        classname,
        time: Duration::from_millis(fold.time_ms),
        status,
        system_out: ran.system_out(not_run, not_run_reason),
    }
}
