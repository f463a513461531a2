//! The progress feed of a running suite: what each turn tells the front
//! end as it goes (`EvalMessage`), over a bounded channel — a slow reader
//! holds the turns back instead of letting messages pile up — and the
//! observer sink that watches a turn for its verdict and feeds it
//! (`Watch`). Events go into the feed only when asked for (`Feed`); the
//! others are counted, never cloned.

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

/// How many messages the progress feed holds before a turn sending one
/// waits for its reader: a bound on memory when the reader (a terminal, a
/// pipe) is slower than the turns.
pub const FEED_CAPACITY: usize = 1_024;

/// Sends a message the feed must not lose, waiting for room: a slow
/// reader holds the sending turn back at this await, never the thread, so
/// the turns that have nothing to send go on. A closed feed (the run is
/// ending) takes nothing.
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
    /// The message a full feed had no room for: the turn waits to send it
    /// (`wait`) before its next output, so the feed keeps each turn's order
    /// and holds at most one message a turn beyond its capacity.
    held: Option<EvalMessage>,
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
            held: None,
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
        // The feed may have closed (the run is ending): nothing to tell.
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
        if let Err(TrySendError::Full(message)) = self.messages.try_send(message) {
            self.held = Some(message);
        }
        Ok(())
    }

    fn wait(&mut self) -> Option<BoxFuture<'_, std::io::Result<()>>> {
        let message = self.held.take()?;
        Some(Box::pin(async move {
            tell(self.messages, message).await;
            Ok(())
        }))
    }

    fn describe(&self) -> String {
        "the eval's observation".to_string()
    }
}
