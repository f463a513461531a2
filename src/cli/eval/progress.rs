//! Running the plan with live feedback: a progress bar on a terminal, a line
//! per finished turn otherwise, NDJSON records as they happen. Ctrl-C and
//! SIGTERM stop new turns and cancel running ones; a closed stdout (`| head`)
//! does the same.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use promptlab::eval::matrix::TurnSpec;
use promptlab::eval::report::{EvalRecord, TurnPlace, TurnRecord, spec_label, turn_label};
use promptlab::eval::session::Progress;
use promptlab::eval::spill::ResultStore;
use promptlab::eval::{EvalMessage, EvalPlan, Outcome, RunSettings, TurnResult};
use promptlab::provider::RetryNotice;
use std::io::{IsTerminal, Write};
use std::sync::Arc;

use super::EvalFormat;
use super::settings::EvalSettings;
use crate::cli::error::{CliError, Exit};

/// The running count shown beside the bar: verdicts so far, and the turn
/// times an ETA is estimated from (the most recent ones: a bound on memory
/// however long the suite).
#[derive(Debug, Default)]
struct Tally {
    passed: usize,
    failed: usize,
    errored: usize,
    recent_ms: std::collections::VecDeque<u64>,
}

/// How many recent turn times the ETA's median is taken over.
const RECENT_TURNS: usize = 256;

impl Tally {
    fn add(&mut self, result: &TurnResult) {
        match result.verdict.outcome {
            Outcome::Pass => self.passed += 1,
            Outcome::Fail => self.failed += 1,
            Outcome::Error => self.errored += 1,
        }
        if self.recent_ms.len() == RECENT_TURNS {
            self.recent_ms.pop_front();
        }
        self.recent_ms.push_back(result.observation.latency_ms);
    }

    /// `12 pass · 1 fail · 0 error · ETA 40s`: the ETA is the median turn
    /// time so far × the turns left ÷ the turns run at once.
    fn line(&self, remaining: usize, jobs: usize) -> String {
        let mut line = format!(
            "{} pass · {} fail · {} error",
            self.passed, self.failed, self.errored
        );
        let mut times: Vec<u64> = self.recent_ms.iter().copied().collect();
        times.sort_unstable();
        if let Some(median) = promptlab::stats::percentile(&times, 50)
            && remaining > 0
        {
            let rounds = remaining.div_ceil(jobs.max(1)) as u64;
            let eta = std::time::Duration::from_millis(median.saturating_mul(rounds));
            let eta = std::time::Duration::from_secs(eta.as_secs().max(1));
            line.push_str(&format!(" · ETA {}", humantime::format_duration(eta)));
        }
        line
    }
}

/// How the turns' progress is shown.
struct Feedback<'a> {
    plan: &'a EvalPlan,
    ndjson: bool,
    quiet: bool,
    bar: Option<ProgressBar>,
    finished: usize,
    /// Of the finished turns, those cancelled mid-way.
    cancelled: usize,
    total: usize,
    /// Set when stdout is gone: the run is cancelled.
    stdout_closed: bool,
    /// The bar's counts and times: kept only when there is a bar.
    tally: Tally,
    /// Turns run at once (`-j`), for the ETA.
    jobs: usize,
    /// The servers' throttles: a live limit under `-j` is shown.
    throttles: Vec<Arc<promptlab::provider::transport::Throttle>>,
}

/// Runs the plan's remaining turns into `spill` (which holds the resumed
/// ones already); returns the exit a signal (or a closed stdout) asked for.
pub fn run_with_progress(
    settings: &EvalSettings,
    plan: &Arc<EvalPlan>,
    run_settings: &Arc<RunSettings>,
    spill: &mut ResultStore,
) -> Result<Option<Exit>, CliError> {
    let already = spill.len();
    let total = plan.selected().count();
    let feedback = Feedback {
        plan,
        ndjson: settings.output.format == EvalFormat::Ndjson,
        quiet: settings.output.quiet,
        bar: (!settings.output.quiet && std::io::stderr().is_terminal())
            .then(|| progress_bar(total, already)),
        finished: already,
        cancelled: 0,
        total,
        stdout_closed: false,
        tally: Tally::default(),
        jobs: run_settings.concurrency,
        throttles: run_settings.limits.throttles.clone(),
    };
    if !settings.output.quiet {
        // Once per rate-limit episode, not per 429 (SPEC §14).
        for throttle in &feedback.throttles {
            let bar = feedback.bar.clone();
            throttle.announce_to(Arc::new(move |line| say(&bar, line)));
        }
    }
    let arm = super::arm_signals;
    let (stop, feedback) = promptlab::eval::session::run(plan, run_settings, spill, feedback, arm)?;
    if let Some(bar) = &feedback.bar {
        bar.finish_and_clear();
    }
    if feedback.stdout_closed {
        // Every finished turn was fed: those that ran to their end.
        let finished = (feedback.finished - already).saturating_sub(feedback.cancelled);
        let cancelled = total.saturating_sub(already).saturating_sub(finished);
        return Err(CliError::StdoutClosed { cancelled });
    }
    Ok(stop)
}

/// A line on stderr, above the bar on a terminal. Progress that cannot be
/// written (stderr closed or full) is not worth stopping the run for.
fn say(bar: &Option<ProgressBar>, line: String) {
    match bar {
        Some(bar) => bar.println(line),
        None => promptlab::text::eprintln_or_drop!("{line}"),
    }
}

fn progress_bar(total: usize, already: usize) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} turns · {elapsed} · {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_position(already as u64);
    bar
}

impl Progress for Feedback<'_> {
    fn show(&mut self, message: &EvalMessage) -> bool {
        let written = self.show_on(message, &mut std::io::stdout().lock());
        if written.is_err() {
            self.stdout_closed = true;
        }
        !self.stdout_closed
    }

    fn gathers(&self) -> bool {
        !self.ndjson
    }
}

impl Feedback<'_> {
    fn show_on(&mut self, message: &EvalMessage, out: &mut impl Write) -> std::io::Result<()> {
        match message {
            EvalMessage::Event(spec, event) if self.ndjson => {
                let record = EvalRecord::Event {
                    place: TurnPlace::of(self.plan, spec),
                    event,
                };
                write_record(out, &record)
            }
            EvalMessage::Event(..) => Ok(()),
            EvalMessage::Notice(spec, notice) => self.notice(spec, notice, out),
            EvalMessage::Finished(result) => self.finished(result, out),
            EvalMessage::Warning(warning) => {
                let warning = promptlab::text::printable(&warning.to_string());
                say(&self.bar, format!("warning: {warning}"));
                Ok(())
            }
        }
    }

    /// A retry: an NDJSON `notice` record, and a line on stderr (above the
    /// bar on a terminal) unless `--quiet`.
    fn notice(
        &self,
        spec: &TurnSpec,
        notice: &RetryNotice,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        if self.ndjson {
            let place = TurnPlace::of(self.plan, spec);
            write_record(out, &EvalRecord::Notice { place, notice })?;
        }
        // A 429's retries are said once per episode, by the throttle.
        if self.quiet || notice.rate_limited {
            return Ok(());
        }
        let line =
            promptlab::text::printable(&format!("{}: {notice}", spec_label(self.plan, spec)));
        say(&self.bar, line);
        Ok(())
    }

    /// ` · concurrency 9/32 · rate-limited` while a server's live limit is
    /// under the ceiling; nothing otherwise.
    fn throttled(&self) -> String {
        let lowest = self.throttles.iter().filter_map(|t| t.lowest());
        match lowest.min_by_key(|live| live.limit) {
            Some(live) => format!(
                " · concurrency {}/{} · rate-limited",
                live.limit, live.ceiling
            ),
            None => String::new(),
        }
    }

    fn finished(&mut self, result: &TurnResult, out: &mut impl Write) -> std::io::Result<()> {
        self.finished += 1;
        self.cancelled += usize::from(result.observation.cancelled);
        if self.ndjson {
            write_record(out, &EvalRecord::Turn(TurnRecord::of(self.plan, result)))?;
        }
        // Formatted only for a bar or a line that shows it: `-q` and
        // NDJSON runs format nothing a turn.
        let line = || {
            promptlab::text::printable(&format!(
                "{} {} ({:.2} s)",
                result.verdict.outcome.as_str(),
                turn_label(self.plan, result),
                result.observation.latency_ms as f64 / 1000.0
            ))
        };
        match &self.bar {
            Some(bar) => {
                self.tally.add(result);
                bar.set_position(self.finished as u64);
                let remaining = self.total.saturating_sub(self.finished);
                bar.set_message(format!(
                    "{}{} · {}",
                    self.tally.line(remaining, self.jobs),
                    self.throttled(),
                    line()
                ));
            }
            None if !self.ndjson && !self.quiet => say(
                &self.bar,
                format!(
                    "[{:>width$}/{}] {}{}",
                    self.finished,
                    self.total,
                    line(),
                    self.throttled(),
                    width = self.total.to_string().len()
                ),
            ),
            None => {}
        }
        Ok(())
    }
}

pub fn write_record(out: &mut impl Write, record: &EvalRecord) -> std::io::Result<()> {
    let line = serde_json::to_string(record).map_err(std::io::Error::other)?;
    writeln!(out, "{}", promptlab::text::json_for_terminal(line))?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::Tally;

    fn tally(passed: usize, failed: usize, errored: usize, times: &[u64]) -> Tally {
        Tally {
            passed,
            failed,
            errored,
            recent_ms: times.iter().copied().collect(),
        }
    }

    #[test]
    fn the_tally_counts_verdicts_and_estimates_from_the_median_and_jobs() {
        // Median 2 s; 10 turns left at 4 at once: 3 rounds, 6 s.
        let line = tally(5, 2, 1, &[1_000, 2_000, 2_000, 9_000, 2_500]).line(10, 4);
        assert_eq!(line, "5 pass · 2 fail · 1 error · ETA 6s");
        assert_eq!(
            tally(1, 0, 0, &[400]).line(0, 1),
            "1 pass · 0 fail · 0 error"
        );
        assert_eq!(tally(0, 0, 0, &[]).line(5, 1), "0 pass · 0 fail · 0 error");
        // Never "0s" while turns remain.
        assert_eq!(
            tally(1, 0, 0, &[10]).line(1, 8),
            "1 pass · 0 fail · 0 error · ETA 1s"
        );
    }
}
