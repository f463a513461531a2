//! What a testcase needs of its samples, gathered one sample at a time as
//! the run's turns are read back, so that a case of 20,000 repeats is not
//! held whole until its fold comes: the first unmet expectation and run
//! log of its first failed (and first errored) sample, and the lines of
//! the first `MAX_SAMPLES_LISTED` samples that did not pass and of the
//! first `MAX_SAMPLES_LISTED` samples, with how many more there were.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::super::expect::Outcome;
use super::super::runner::TurnResult;
use super::ANSWER_CHARS;

/// Samples a testcase lists in its failure body and its `<system-out>`;
/// the rest are counted (their run logs have them).
pub const MAX_SAMPLES_LISTED: usize = 20;

/// The first sample of one outcome: its first unmet expectation (of the
/// first such sample that has one) and its run log.
#[derive(Debug, Default)]
struct First {
    problem: Option<String>,
    log: Option<Option<PathBuf>>,
}

#[derive(Debug, Default)]
pub struct CaseSamples {
    /// Of the failed samples, and of the errored ones.
    first: [First; 2],
    problems: Listed,
    out: Listed,
}

/// Lines of the first samples, and how many samples were left out.
#[derive(Debug, Default)]
struct Listed {
    text: String,
    listed: usize,
    more: usize,
}

impl Listed {
    fn add(&mut self, line: impl FnOnce(&mut String)) {
        if self.listed < MAX_SAMPLES_LISTED {
            line(&mut self.text);
            self.listed += 1;
        } else {
            self.more += 1;
        }
    }
}

impl CaseSamples {
    pub fn add(&mut self, sample: &TurnResult) {
        let outcome = sample.verdict.outcome;
        if let Some(slot) = match outcome {
            Outcome::Fail => Some(0),
            Outcome::Error => Some(1),
            Outcome::Pass => None,
        } {
            let first = &mut self.first[slot];
            first.log.get_or_insert_with(|| sample.run_log.clone());
            if first.problem.is_none() {
                first.problem = sample.verdict.failures.first().cloned();
            }
            self.problems.add(|text| {
                let _ = writeln!(
                    text,
                    "sample {} ({}):",
                    sample.spec.sample,
                    outcome.as_str()
                );
                for failure in &sample.verdict.failures {
                    let _ = writeln!(text, "  - {failure}");
                }
            });
        }
        self.out.add(|text| {
            let answer = &sample.observation.answer;
            let shown: String = answer.chars().take(ANSWER_CHARS).collect();
            let cut = if answer.chars().count() > ANSWER_CHARS {
                "…"
            } else {
                ""
            };
            let _ = write!(
                text,
                "sample {}: {}\nrun log: {}\nanswer: {shown}{cut}\n\n",
                sample.spec.sample,
                outcome.as_str(),
                log_name(sample.run_log.as_ref())
            );
        });
    }

    /// The first unmet expectation of the first failed sample (of the
    /// first errored one when none failed): what a CI widget headlines.
    pub fn first_problem(&self, failed: bool) -> Option<String> {
        self.first[usize::from(!failed)]
            .problem
            .as_deref()
            .map(|failure| crate::text::one_line(failure, crate::text::QUOTE_CHARS))
    }

    /// The run log of the first failed (or errored) sample.
    pub fn first_log(&self, failed: bool) -> String {
        log_name(
            self.first[usize::from(!failed)]
                .log
                .clone()
                .flatten()
                .as_ref(),
        )
    }

    /// Each listed sample that did not pass, and why.
    pub fn problems(&self) -> String {
        let mut text = self.problems.text.clone();
        if self.problems.more > 0 {
            let _ = writeln!(
                text,
                "… and {} more samples that did not pass (see their run logs)",
                self.problems.more
            );
        }
        text
    }

    /// Each listed sample's verdict, run log and answer.
    pub fn system_out(&self, not_run: usize, not_run_reason: &str) -> String {
        let mut text = self.out.text.clone();
        if self.out.more > 0 {
            let _ = writeln!(
                text,
                "… and {} more samples (see their run logs)\n",
                self.out.more
            );
        }
        if not_run > 0 {
            let _ = writeln!(text, "{not_run} samples not run: {not_run_reason}");
        }
        text
    }
}

fn log_name(log: Option<&PathBuf>) -> String {
    log.map_or("not written".to_string(), |p| p.display().to_string())
}
