//! Driving one turn for a command: events to stdout in the chosen format
//! and, with a recorder, into a run log — through the library's one
//! fan-out driver (`promptlab::sink::driver`), whose rules decide what a
//! closed pipe or a failed recording means.

use std::path::PathBuf;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use promptlab::chat::{ChatEvent, ChatRequest, TurnOutput};
use promptlab::runs::RunStatus;
use promptlab::sink::driver::{SinkRole, TurnSink, drive};
use promptlab::sink::run_log::RunRecorder;
use promptlab::sink::{EventWriter, OutputFormat, Style};
use promptlab::telemetry::{Telemetry, TurnLabels, TurnTrace};
use promptlab::worker::TurnRunner;

use super::error::{CliError, Exit};

/// How much of the answer a command needs kept once it is on stdout: a long
/// answer is held again by every copy, so a one-off `chat` keeps none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepText {
    /// Nothing of the text (`chat`): the events other than `text_delta`.
    None,
    /// The answer, as the history of a session needs it (`chat -i`).
    Answer,
    /// The answer and every `text_delta`, for an event-by-event
    /// comparison (`replay`).
    Everything,
}

/// What a finished turn leaves behind.
pub struct TurnRun {
    pub exit: Exit,
    /// The answer text, as the browser would keep it (empty with
    /// `KeepText::None`).
    pub answer: String,
    /// The events (`text_delta`s only with `KeepText::Everything`).
    pub events: Vec<ChatEvent>,
    keep: KeepText,
    /// The run log, if one was written.
    pub recorded: Option<PathBuf>,
    /// The prompt version computed here (from `Started`).
    pub fingerprint: Option<String>,
}

impl TurnSink for TurnRun {
    fn role(&self) -> SinkRole {
        SinkRole::Observer
    }

    fn accept(&mut self, output: &TurnOutput) -> std::io::Result<()> {
        match output {
            TurnOutput::Event(event) => {
                match event {
                    ChatEvent::TextDelta { text } => {
                        if self.keep != KeepText::None {
                            self.answer.push_str(text);
                        }
                        if self.keep != KeepText::Everything {
                            return Ok(());
                        }
                    }
                    ChatEvent::Error { .. } => self.exit = Exit::Failure,
                    _ => {}
                }
                self.events.push(event.clone());
            }
            TurnOutput::Cancelled => self.exit = Exit::Cancelled,
            // Said on stderr in every format, as eval says them: stdout
            // keeps to the events, and a piped chat still shows a person
            // why it is waiting.
            TurnOutput::Notice(notice) => {
                promptlab::text::eprintln_or_drop!(
                    "{}",
                    promptlab::text::printable(&notice.to_string())
                );
            }
            TurnOutput::Started(start) => self.fingerprint = Some(start.fingerprint.clone()),
            TurnOutput::Prepared(prepared) => {
                if let Some(note) = &prepared.thinking_note {
                    say_once(note);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "the turn's summary".to_string()
    }
}

/// The trace of a turn of `request` on `runner`, when tracing is on.
pub fn trace_for(
    telemetry: &Telemetry,
    runner: &TurnRunner,
    request: &ChatRequest,
    conversation_id: Option<&str>,
) -> Option<TurnTrace> {
    telemetry.turn(TurnLabels {
        conversation_id: conversation_id.map(str::to_string),
        provider: promptlab::telemetry::provider_name(runner.provider_name()),
        model: request.model.clone(),
        messages: TurnLabels::conversation(&request.messages),
        parent: None,
    })
}

/// A note or warning about the model's thinking rules, to stderr once per
/// process (a `-i` session's turns do not repeat it).
fn say_once(note: &str) {
    static SAID: parking_lot::Mutex<std::collections::BTreeSet<String>> =
        parking_lot::Mutex::new(std::collections::BTreeSet::new());
    let mut said = SAID.lock();
    if said.insert(note.to_string()) {
        promptlab::text::eprintln_or_drop!("{}", promptlab::text::printable(note));
    }
}

/// Streams one turn to stdout and, with a recorder, into a run log.
pub async fn drive_turn(
    runner: &TurnRunner,
    request: ChatRequest,
    format: OutputFormat,
    cancel: CancellationToken,
    recorder: Option<RunRecorder>,
    keep: KeepText,
    mut trace: Option<TurnTrace>,
) -> Result<TurnRun, CliError> {
    // Unlocked (each write takes the lock): sinks are `Send`, and a lock
    // guard may not leave its thread.
    let mut writer = EventWriter::new(
        format,
        std::io::stdout(),
        Style::for_stdout(),
        Instant::now(),
    );
    let mut run = TurnRun {
        exit: Exit::Success,
        answer: String::new(),
        events: Vec::new(),
        recorded: None,
        fingerprint: None,
        keep,
    };
    let turn = runner.run(request, cancel.clone());
    // The run log names the trace its turn is exported as.
    let mut recorder = match &trace {
        Some(trace) => recorder.map(|recorder| recorder.with_trace(trace.ids())),
        None => recorder,
    };
    let delivery = {
        // Recorders first (see `drive`), then observers, then the writer.
        let mut sinks: Vec<&mut dyn TurnSink> = Vec::with_capacity(4);
        if let Some(recorder) = recorder.as_mut() {
            sinks.push(recorder);
        }
        sinks.push(&mut run);
        if let Some(trace) = trace.as_mut() {
            sinks.push(trace);
        }
        sinks.push(&mut writer);
        drive(turn, &mut sinks, &cancel).await
    };
    let cost = recorder
        .as_ref()
        .and_then(|recorder| recorder.draft_footer(RunStatus::Cancelled))
        .and_then(|footer| footer.cost_usd);
    if let Some(recorder) = recorder {
        run.recorded = finish_recording(recorder);
    }
    if let Some(mut trace) = trace {
        if let Some(path) = &run.recorded {
            trace.set_run_log(path);
        }
        trace.set_cost(cost);
        trace.end(None);
    }
    for failure in &delivery.recorder_failures {
        let failure = promptlab::text::printable(&failure.to_string());
        promptlab::text::eprintln_or_drop!("warning: could not record this run: {failure}");
    }
    if let Some(warning) = fingerprint_warning(runner, &run) {
        promptlab::text::eprintln_or_drop!(
            "warning: {}",
            promptlab::text::printable(&warning.to_string())
        );
    }
    match delivery.writer_error {
        // The reader went before the turn ended: its verdict was never reached.
        Some(_) if delivery.cancelled => Err(CliError::StdoutClosed { cancelled: 1 }),
        Some(error) => Err(error.into()),
        None => Ok(run),
    }
}

fn finish_recording(recorder: RunRecorder) -> Option<PathBuf> {
    match recorder.finish(RunStatus::Cancelled) {
        Ok(path) => path,
        Err(error) => {
            promptlab::text::eprintln_or_drop!("warning: could not complete the run log: {error}");
            None
        }
    }
}

/// A deployment that reported another prompt version than this checkout
/// computes: the comparison is still shown, but is not like for like.
fn fingerprint_warning(runner: &TurnRunner, run: &TurnRun) -> Option<String> {
    let TurnRunner::Worker(client) = runner else {
        return None;
    };
    let reported = run.events.iter().find_map(|event| match event {
        ChatEvent::Done(done) => Some(done.prompts.fingerprint.as_str()),
        _ => None,
    })?;
    client.fingerprint_warning(run.fingerprint.as_deref()?, reported)
}
