//! `POST /api/chat`: a body checked before any event (400 naming the field),
//! then the turn streamed as Server-Sent Events through the one fan-out
//! driver. The response body is a `sink::EventWriter` in SSE format writing
//! into a channel, so its bytes are exactly `chat --format sse`'s; when the
//! client goes away the channel closes, the writer fails, and the driver
//! cancels the turn, which the run log records as cancelled.

use std::convert::Infallible;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio_util::sync::CancellationToken;

use crate::chat::{ChatEvent, ChatRequest, TurnOutput, run_chat_turn};
use crate::runs::RunStatus;
use crate::sink::driver::{SinkRole, TurnSink, drive};
use crate::sink::run_log::RunRecorder;
use crate::sink::{EventWriter, OutputFormat, Style};

use super::body::parse_chat_body;
use super::{ServeState, json_error};
use crate::telemetry::{TraceParent, TurnLabels};

/// How long a client is told to wait when every turn slot is taken.
pub const RETRY_AFTER_SECS: u64 = 1;

/// Frames queued for the response body before the writer holds on to what
/// it writes (coalescing it into the next frame) instead of queueing more.
const FRAMES_IN_FLIGHT: usize = 16;

/// What a client that does not read its stream can leave waiting in memory
/// before its turn is cancelled (the run log records it as cancelled).
pub const MAX_UNREAD_BYTES: usize = 4 << 20;

/// How long the end of a stream waits for a client that stopped reading.
const FINISH_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

pub async fn chat(
    State(state): State<Arc<ServeState>>,
    headers: axum::http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let bytes = match body {
        Ok(bytes) => bytes,
        Err(rejection) => return json_error(rejection.status(), rejection.body_text()),
    };
    let request = match parse_chat_body(&bytes, &state.defaults, state.ctx.registry) {
        Ok(request) => request,
        Err(error) => return json_error(StatusCode::BAD_REQUEST, error.to_string()),
    };
    let Ok(permit) = state.turns.clone().try_acquire_owned() else {
        let mut response = json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "busy: {} turns are running; try again shortly (serve --max-concurrent sets how many may)",
                state.max_concurrent
            ),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        return response;
    };
    // A caller's trace: the turn's trace becomes its child (a malformed
    // header is ignored, as the W3C rules say).
    let parent = headers
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .and_then(crate::telemetry::config::parse_trace_parent);
    let (sender, receiver) = mpsc::channel::<Bytes>(FRAMES_IN_FLIGHT);
    spawn_turn(state, request, sender, permit, parent);
    sse_response(receiver)
}

/// The streaming response: each frame is sent as soon as it is written.
fn sse_response(receiver: mpsc::Receiver<Bytes>) -> Response {
    let frames = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let frame = receiver.recv().await?;
        Some((Ok::<Bytes, Infallible>(frame), receiver))
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}

/// Runs the turn as an ordinary task (its sinks are `Send`); the permit is
/// held until the run log is complete.
fn spawn_turn(
    state: Arc<ServeState>,
    request: ChatRequest,
    sender: mpsc::Sender<Bytes>,
    permit: OwnedSemaphorePermit,
    parent: Option<TraceParent>,
) {
    let cancel = state.shutdown.child_token();
    tokio::spawn(async move {
        run_turn(state, request, sender, cancel, parent).await;
        drop(permit);
    });
}

async fn run_turn(
    state: Arc<ServeState>,
    request: ChatRequest,
    sender: mpsc::Sender<Bytes>,
    cancel: CancellationToken,
    parent: Option<TraceParent>,
) {
    let done = CancellationToken::new();
    watch_disconnect(sender.clone(), cancel.clone(), done.clone());
    let mut writer = PublicErrors {
        inner: EventWriter::new(
            OutputFormat::Sse,
            ChannelOut::new(sender),
            Style::plain(),
            Instant::now(),
        ),
        state: &state,
    };
    let recorder = state.runs_dir.as_ref().map(|dir| {
        let recorder = RunRecorder::new(dir, &request, state.provider_name, None)
            .with_prices(Arc::clone(&state.prices));
        match &state.replay_of {
            Some(turn_id) => recorder.replaying(turn_id.clone()),
            None => recorder,
        }
    });
    let mut trace = state.tracing.as_ref().map(|tracing| {
        tracing.turn(TurnLabels {
            provider: crate::telemetry::provider_name(state.provider_name),
            model: request.model.clone(),
            messages: TurnLabels::conversation(&request.messages),
            parent,
            ..TurnLabels::default()
        })
    });
    let turn = run_chat_turn(state.turn_context(), request, cancel.clone());
    let mut recorder = match &trace {
        Some(trace) => recorder.map(|recorder| recorder.with_trace(trace.ids())),
        None => recorder,
    };
    let delivery = {
        let mut sinks: Vec<&mut dyn TurnSink> = Vec::with_capacity(3);
        if let Some(recorder) = recorder.as_mut() {
            sinks.push(recorder);
        }
        if let Some(trace) = trace.as_mut() {
            sinks.push(trace);
        }
        sinks.push(&mut writer);
        drive(turn, &mut sinks, &cancel).await
    };
    // What the writer held back while the client was behind, now that
    // nothing more will be written.
    if let EventWriter::Sse(out) = writer.inner {
        out.finish().await;
    }
    warn_failures(&delivery.recorder_failures);
    let recorded = match recorder {
        Some(recorder) => finish_log(recorder).await,
        None => None,
    };
    if let Some(mut trace) = trace {
        if let Some(path) = &recorded {
            trace.set_run_log(path);
        }
        trace.end(None);
    }
    done.cancel();
}

/// Completes the run log; the footer's fsync and rename block, so off the
/// runtime's threads.
async fn finish_log(recorder: RunRecorder) -> Option<std::path::PathBuf> {
    let finished = tokio::task::spawn_blocking(move || recorder.finish(RunStatus::Cancelled))
        .await
        .unwrap_or_else(|joined| Err(io::Error::other(joined)));
    match finished {
        Ok(path) => path,
        Err(error) => {
            crate::text::eprintln_or_drop!("warning: could not complete the run log: {error}");
            None
        }
    }
}

/// The server is a front end: like `chat`, it says on stderr when a run
/// could not be recorded.
fn warn_failures(failures: &[String]) {
    for failure in failures {
        crate::text::eprintln_or_drop!("warning: could not record this run: {failure}");
    }
}

/// Cancels the turn as soon as the client has gone (the response body, and
/// with it the receiver, is dropped), without waiting for the next event.
fn watch_disconnect(
    sender: mpsc::Sender<Bytes>,
    cancel: CancellationToken,
    done: CancellationToken,
) {
    tokio::spawn(async move {
        tokio::select! {
            () = sender.closed() => cancel.cancel(),
            () = done.cancelled() => {}
        }
    });
}

/// The response's writer: an `error` event names files as every answer
/// must, relative to their folders (the run log keeps the message whole).
struct PublicErrors<'a, S> {
    inner: S,
    state: &'a ServeState,
}

impl<S: TurnSink> TurnSink for PublicErrors<'_, S> {
    fn role(&self) -> SinkRole {
        self.inner.role()
    }

    fn accept(&mut self, output: &TurnOutput) -> io::Result<()> {
        if let TurnOutput::Event(ChatEvent::Error { message }) = output {
            let public = self.state.message(message);
            if public != *message {
                let event = ChatEvent::Error { message: public };
                return self.inner.accept(&TurnOutput::Event(event));
            }
        }
        self.inner.accept(output)
    }

    fn wait(&mut self) -> Option<futures_util::future::BoxFuture<'_, io::Result<()>>> {
        self.inner.wait()
    }

    fn idle(&mut self) {
        self.inner.idle();
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// An `io::Write` that sends what is written, at each flush, as one frame
/// of the response body; a closed channel is a reader gone (`BrokenPipe`).
/// The channel is bounded: while the client is behind, flushed bytes wait
/// here and go as one frame when there is room, up to `MAX_UNREAD_BYTES`.
struct ChannelOut {
    sender: mpsc::Sender<Bytes>,
    pending: Vec<u8>,
    /// The client fell `MAX_UNREAD_BYTES` behind: nothing more is kept.
    abandoned: bool,
}

impl ChannelOut {
    fn new(sender: mpsc::Sender<Bytes>) -> ChannelOut {
        ChannelOut {
            sender,
            pending: Vec::new(),
            abandoned: false,
        }
    }

    /// Sends what is still held back, waiting (a while) for the client to
    /// read it.
    async fn finish(self) {
        if !self.pending.is_empty() {
            let send = self.sender.send(Bytes::from(self.pending));
            let _ = tokio::time::timeout(FINISH_WAIT, send).await;
        }
    }
}

fn client_gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the client has gone")
}

impl io::Write for ChannelOut {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.sender.is_closed() || self.abandoned {
            return Err(client_gone());
        }
        self.pending.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        match self.sender.try_reserve() {
            Ok(permit) => {
                permit.send(Bytes::from(std::mem::take(&mut self.pending)));
                Ok(())
            }
            Err(mpsc::error::TrySendError::Closed(())) => Err(client_gone()),
            Err(mpsc::error::TrySendError::Full(())) if self.pending.len() <= MAX_UNREAD_BYTES => {
                Ok(())
            }
            Err(mpsc::error::TrySendError::Full(())) => {
                // The turn is cancelled: what waits is dropped, not sent.
                self.pending = Vec::new();
                self.abandoned = true;
                Err(io::Error::other(format!(
                    "the client is not reading its stream ({} MiB waiting)",
                    MAX_UNREAD_BYTES >> 20
                )))
            }
        }
    }
}
