//! Running the plan with live feedback: a progress bar on a terminal, a line
//! per finished turn otherwise, NDJSON records as they happen. Ctrl-C and
//! SIGTERM stop new turns and cancel running ones; a closed stdout (`| head`)
//! does the same.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio_util::sync::CancellationToken;

use promptlab::eval::report::{EvalRecord, TurnPlace, TurnRecord, turn_label};
use promptlab::eval::{EvalMessage, EvalPlan, RunSettings, TurnResult, run_turns};

use super::{EvalArgs, EvalFormat};
use crate::cli::error::{CliError, Exit};
use crate::cli::signals::cancel_on_signals;

/// How the turns' progress is shown.
struct Feedback<'a> {
    plan: &'a EvalPlan,
    ndjson: bool,
    quiet: bool,
    bar: Option<ProgressBar>,
    finished: usize,
    total: usize,
    /// Set when stdout is gone: the run is cancelled.
    stdout_closed: bool,
}

/// Runs the plan's remaining turns; returns their results and the exit a
/// signal (or a closed stdout) asked for.
pub fn run_with_progress(
    args: &EvalArgs,
    plan: &EvalPlan,
    settings: &RunSettings,
    already: usize,
) -> Result<(Vec<TurnResult>, Option<Exit>), CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    let total = plan.selected().count();
    let mut feedback = Feedback {
        plan,
        ndjson: args.format == EvalFormat::Ndjson,
        quiet: args.quiet,
        bar: (!args.quiet && std::io::stderr().is_terminal()).then(|| progress_bar(total, already)),
        finished: already,
        total,
        stdout_closed: false,
    };
    let cancel = CancellationToken::new();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let (results, stop) = runtime.block_on(async {
        let stop = cancel_on_signals(cancel.clone());
        let run = run_turns(plan, settings, cancel.clone(), sender);
        futures_util::pin_mut!(run);
        let mut stdout = std::io::stdout().lock();
        let results = loop {
            tokio::select! {
                results = &mut run => {
                    while let Ok(message) = receiver.try_recv() {
                        feedback.show(&message, &mut stdout, &cancel);
                    }
                    break results;
                }
                Some(message) = receiver.recv() => feedback.show(&message, &mut stdout, &cancel),
            }
        };
        (results, stop.exit())
    });
    if let Some(bar) = &feedback.bar {
        bar.finish_and_clear();
    }
    if feedback.stdout_closed {
        return Err(CliError::BrokenPipe);
    }
    Ok((results, stop))
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

impl Feedback<'_> {
    fn show(&mut self, message: &EvalMessage, out: &mut impl Write, cancel: &CancellationToken) {
        let written = match message {
            EvalMessage::Event(spec, event) if self.ndjson => {
                let record = EvalRecord::Event {
                    place: TurnPlace::of(self.plan, spec),
                    event,
                };
                write_record(out, &record)
            }
            EvalMessage::Event(..) => Ok(()),
            EvalMessage::Finished(result) => self.finished(result, out),
            EvalMessage::Warning(warning) => {
                let warning = promptlab::text::printable(&warning.to_string());
                match &self.bar {
                    Some(bar) => bar.println(format!("warning: {warning}")),
                    None => eprintln!("warning: {warning}"),
                }
                Ok(())
            }
        };
        if written.is_err() && !self.stdout_closed {
            self.stdout_closed = true;
            cancel.cancel();
        }
    }

    fn finished(&mut self, result: &TurnResult, out: &mut impl Write) -> std::io::Result<()> {
        self.finished += 1;
        if self.ndjson {
            write_record(out, &EvalRecord::Turn(TurnRecord::of(self.plan, result)))?;
        }
        let line = promptlab::text::printable(&format!(
            "{} {} ({:.2} s)",
            result.verdict.outcome.as_str(),
            turn_label(self.plan, result),
            result.observation.latency_ms as f64 / 1000.0
        ));
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.finished as u64);
                bar.set_message(line);
            }
            None if !self.ndjson && !self.quiet => eprintln!(
                "[{:>width$}/{}] {line}",
                self.finished,
                self.total,
                width = self.total.to_string().len()
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
