//! Driving one turn for a command: events to stdout in the chosen format,
//! every output to the run-log recorder, Ctrl-C and closed pipes handled.

use std::path::PathBuf;
use std::time::Instant;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use promptlab::chat::{ChatEvent, ChatRequest, TurnContext, TurnOutput, run_chat_turn};
use promptlab::runs::RunStatus;
use promptlab::sink::run_log::RunRecorder;
use promptlab::sink::{EventWriter, OutputFormat, Style};

use super::error::{CliError, Exit};

/// What a finished turn leaves behind.
pub struct TurnRun {
    pub exit: Exit,
    /// The answer text, as the browser would keep it.
    pub answer: String,
    pub events: Vec<ChatEvent>,
    /// The run log, if one was written.
    pub recorded: Option<PathBuf>,
}

/// Streams one turn to stdout and, with a recorder, into a run log.
pub async fn drive_turn(
    ctx: TurnContext,
    request: ChatRequest,
    format: OutputFormat,
    cancel: CancellationToken,
    mut recorder: Option<RunRecorder>,
) -> Result<TurnRun, CliError> {
    let stdout = std::io::stdout();
    let mut writer = EventWriter::new(format, stdout.lock(), Style::for_stdout(), Instant::now());
    let turn = run_chat_turn(ctx, request, cancel.clone());
    futures_util::pin_mut!(turn);
    let mut run = TurnRun {
        exit: Exit::Success,
        answer: String::new(),
        events: Vec::new(),
        recorded: None,
    };
    let mut write_error = None;
    while let Some(output) = turn.next().await {
        record(&mut recorder, &output);
        match output {
            TurnOutput::Event(event) => {
                match &event {
                    ChatEvent::TextDelta { text } => run.answer.push_str(text),
                    ChatEvent::Error { .. } => run.exit = Exit::Failure,
                    _ => {}
                }
                if let Err(error) = writer.write(&event) {
                    // The reader has gone (a closed pipe): stop the model too.
                    cancel.cancel();
                    write_error = Some(error);
                    break;
                }
                run.events.push(event);
            }
            TurnOutput::Cancelled => {
                run.exit = Exit::Cancelled;
                writer.cancelled()?;
            }
            TurnOutput::Started { .. } | TurnOutput::Prepared(_) | TurnOutput::ModelCall(_) => {}
        }
    }
    if let Some(recorder) = recorder {
        run.recorded = finish_recording(recorder);
    }
    match write_error {
        Some(error) => Err(error.into()),
        None => Ok(run),
    }
}

/// Feeds the recorder; on the first failure, warns once and stops recording
/// (the turn itself goes on; the recorder removes its `.partial` file and
/// its error names it).
fn record(recorder: &mut Option<RunRecorder>, output: &TurnOutput) {
    if let Some(active) = recorder
        && let Err(error) = active.record(output)
    {
        eprintln!("warning: could not record this run: {error}");
        *recorder = None;
    }
}

fn finish_recording(recorder: RunRecorder) -> Option<PathBuf> {
    match recorder.finish(RunStatus::Cancelled) {
        Ok(path) => path,
        Err(error) => {
            eprintln!("warning: could not complete the run log: {error}");
            None
        }
    }
}
