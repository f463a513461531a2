//! The progress feed of a running suite: what each turn tells the front
//! end as it goes (`EvalMessage`), over a bounded channel, and the observer
//! sink that watches a turn for its verdict and feeds it (`Watch`). Events
//! go into the feed only when asked for (`Feed`); the others are counted,
//! never cloned.
//!
//! A reader slower than the turns holds them back where it costs no
//! verdict: a turn whose messages find the feed full keeps them, in order,
//! and lets its model call run on (a call parked on the feed would run out
//! its `--max-call-time`); it sends them once its calls are done, and takes
//! room for its `Finished` (and one warning) while it still holds its `-j`
//! slot — so a stalled reader stops new turns from starting, and what waits
//! is at most the feed's `FEED_CAPACITY` messages and `TURN_BACKLOG_BYTES`
//! (plus one message) for each of the `-j` running turns. Only past that
//! does a turn wait in the middle of a call (a stalled reader of a turn
//! streaming megabytes of events), and that wait, like the one for room
//! after its calls, is left out of the turn's recorded times.

use futures_util::future::BoxFuture;
use tokio::sync::mpsc::Sender;
use tokio::sync::mpsc::error::TrySendError;

use super::expect::Observation;
use super::matrix::TurnSpec;
use super::runner::TurnResult;
use crate::chat::event::ChatEvent;
use crate::chat::service::TurnOutput;
use crate::provider::RetryNotice;
use crate::sink::driver::{SinkRole, TurnSink};

/// Whether the progress feed wants every event of every turn (`--format
/// ndjson` writes them); events nobody asked for are not cloned into it,
/// only counted.
#[derive(Debug, Default)]
pub struct Feed {
    pub events: bool,
    skipped: std::sync::atomic::AtomicU64,
}

impl Feed {
    pub fn new(events: bool) -> Feed {
        Feed {
            events,
            ..Feed::default()
        }
    }

    /// Events left out of the feed because nobody asked for them.
    pub fn skipped(&self) -> u64 {
        self.skipped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// How many messages the progress feed holds: with the `-j` running turns'
/// backlogs, what a reader (a terminal, a pipe) slower than the turns lets
/// wait in memory.
pub const FEED_CAPACITY: usize = 1_024;

/// About how many bytes of messages a running turn keeps while the feed
/// is full before it waits for room even in the middle of a call: a long
/// answer's few thousand events are well under it; a turn streaming
/// megabytes of text to a stalled reader (`--format ndjson`) is not.
pub const TURN_BACKLOG_BYTES: usize = 1024 * 1024;

/// A message's size as the backlog counts it: the message itself, its
/// turn's claim id and its longest text (the smaller fields of an event
/// and the allocator's overhead are left out).
fn backlog_bytes(message: &EvalMessage) -> usize {
    let text = match message {
        EvalMessage::Event(spec, event) => {
            spec.claim_id.len()
                + match event {
                    ChatEvent::TextDelta { text } => text.len(),
                    ChatEvent::ToolResult { result, .. } => result.len(),
                    ChatEvent::Activity { label, .. } => label.len(),
                    ChatEvent::Error { message } => message.len(),
                    _ => 0,
                }
        }
        EvalMessage::Notice(spec, notice) => spec.claim_id.len() + notice.to_string().len(),
        EvalMessage::Warning(warning) => warning.len(),
        EvalMessage::Finished(_) => 0,
    };
    std::mem::size_of::<EvalMessage>() + text
}

/// Sends a message the feed must not lose, waiting for room: a slow
/// reader holds the sending turn back at this await, never the thread. A
/// closed feed (the run is ending) takes nothing.
pub(super) async fn tell(messages: &Sender<EvalMessage>, message: EvalMessage) {
    let _ = messages.send(message).await;
}

/// What a running suite reports as it goes.
#[derive(Debug, Clone)]
pub enum EvalMessage {
    Event(TurnSpec, ChatEvent),
    /// A running turn is retrying a failed try of its model or deployment.
    Notice(TurnSpec, RetryNotice),
    Finished(Box<TurnResult>),
    /// A problem that does not stop the suite.
    Warning(String),
}

/// What an eval watches of a running turn: the observation its verdict is
/// judged on, and the events it forwards to the progress feed.
pub(super) struct Watch<'a> {
    pub observation: Observation,
    /// The prompt version computed here, and the one `done` reported.
    pub fingerprints: (Option<String>, Option<String>),
    pub spec: &'a TurnSpec,
    pub messages: &'a Sender<EvalMessage>,
    pub feed: &'a Feed,
    /// Messages a full feed had no room for, oldest first; once there are
    /// any, later ones queue behind them, so each turn's order is kept.
    backlog: std::collections::VecDeque<EvalMessage>,
    /// Their size (`backlog_bytes`).
    backlog_size: usize,
    /// How long the turn waited for the feed in the middle of its calls.
    pub waited: std::time::Duration,
}

impl<'a> Watch<'a> {
    /// Watches the turn of `spec`, whose last user message is `message`.
    pub fn new(
        spec: &'a TurnSpec,
        message: String,
        messages: &'a Sender<EvalMessage>,
        feed: &'a Feed,
    ) -> Watch<'a> {
        Watch {
            observation: Observation {
                message,
                ..Observation::default()
            },
            fingerprints: (None, None),
            spec,
            messages,
            feed,
            backlog: std::collections::VecDeque::new(),
            backlog_size: 0,
            waited: std::time::Duration::ZERO,
        }
    }

    /// Sends what the turn kept while the feed was full, waiting for room:
    /// once its calls are done, before anything else it tells.
    pub async fn flush(&mut self) {
        self.send_until(0).await;
    }

    /// Sends the oldest kept messages, waiting for room, until at most
    /// `size` bytes of them are left.
    async fn send_until(&mut self, size: usize) {
        while self.backlog_size > size {
            let Some(message) = self.backlog.pop_front() else {
                break;
            };
            self.backlog_size -= backlog_bytes(&message);
            if self.messages.send(message).await.is_err() {
                self.backlog.clear();
                self.backlog_size = 0;
            }
        }
    }

    /// Sends, without waiting, as much of the backlog and then `message`
    /// as the feed has room for; keeps the rest. A closed feed (the run is
    /// ending) takes nothing.
    fn tell_or_keep(&mut self, message: EvalMessage) {
        // The usual case, a feed with room and nothing kept: no bookkeeping.
        let message = if self.backlog.is_empty() {
            match self.messages.try_send(message) {
                Err(TrySendError::Full(message)) => message,
                Ok(()) | Err(TrySendError::Closed(_)) => return,
            }
        } else {
            message
        };
        self.backlog_size += backlog_bytes(&message);
        self.backlog.push_back(message);
        while let Some(message) = self.backlog.pop_front() {
            let size = backlog_bytes(&message);
            match self.messages.try_send(message) {
                Ok(()) => self.backlog_size -= size,
                Err(TrySendError::Full(message)) => {
                    self.backlog.push_front(message);
                    return;
                }
                Err(TrySendError::Closed(_)) => {
                    self.backlog.clear();
                    self.backlog_size = 0;
                }
            }
        }
    }
}

impl TurnSink for Watch<'_> {
    fn role(&self) -> SinkRole {
        SinkRole::Observer
    }

    fn accept(&mut self, output: &TurnOutput) -> std::io::Result<()> {
        self.observation.observe(output);
        match output {
            TurnOutput::Started(start) => self.fingerprints.0 = Some(start.fingerprint.clone()),
            TurnOutput::Event(ChatEvent::Done(done)) => {
                self.fingerprints.1 = Some(done.prompts.fingerprint.clone());
            }
            _ => {}
        }
        let message = match output {
            TurnOutput::Event(_) if !self.feed.events => {
                let skipped = &self.feed.skipped;
                skipped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Ok(());
            }
            TurnOutput::Event(event) => EvalMessage::Event(self.spec.clone(), event.clone()),
            TurnOutput::Notice(notice) => EvalMessage::Notice(self.spec.clone(), notice.clone()),
            _ => return Ok(()),
        };
        self.tell_or_keep(message);
        Ok(())
    }

    /// Past `TURN_BACKLOG_BYTES` kept, the turn waits until it is back
    /// under them.
    fn wait(&mut self) -> Option<BoxFuture<'_, std::io::Result<()>>> {
        if self.backlog_size <= TURN_BACKLOG_BYTES {
            return None;
        }
        Some(Box::pin(async move {
            let waiting = std::time::Instant::now();
            self.send_until(TURN_BACKLOG_BYTES).await;
            self.waited += waiting.elapsed();
            Ok(())
        }))
    }

    fn describe(&self) -> String {
        "the eval's observation".to_string()
    }
}
