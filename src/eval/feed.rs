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
//! room for its `Finished` while it still holds its `-j` slot — so a
//! stalled reader stops new turns from starting, and what waits is at most
//! the feed's `FEED_CAPACITY` messages and `TURN_BACKLOG` for each of the
//! `-j` running turns (past which a turn does wait, even mid-call).

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

/// The messages a running turn keeps while the feed is full before it
/// waits for room even in the middle of a call: only a turn streaming
/// hundreds of events to a stalled reader (`--format ndjson`) gets there.
pub const TURN_BACKLOG: usize = 256;

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
        }
    }

    /// Sends what the turn kept while the feed was full, waiting for room:
    /// once its calls are done, before anything else it tells.
    pub async fn flush(&mut self) {
        while let Some(message) = self.backlog.pop_front() {
            if self.messages.send(message).await.is_err() {
                self.backlog.clear();
            }
        }
    }

    /// Sends, without waiting, as much of the backlog and then `message`
    /// as the feed has room for; keeps the rest. A closed feed (the run is
    /// ending) takes nothing.
    fn tell_or_keep(&mut self, message: EvalMessage) {
        self.backlog.push_back(message);
        while let Some(message) = self.backlog.pop_front() {
            match self.messages.try_send(message) {
                Ok(()) => {}
                Err(TrySendError::Full(message)) => {
                    self.backlog.push_front(message);
                    return;
                }
                Err(TrySendError::Closed(_)) => self.backlog.clear(),
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

    /// Past `TURN_BACKLOG` kept messages, the turn waits until it is back
    /// under it.
    fn wait(&mut self) -> Option<BoxFuture<'_, std::io::Result<()>>> {
        if self.backlog.len() <= TURN_BACKLOG {
            return None;
        }
        Some(Box::pin(async move {
            while self.backlog.len() > TURN_BACKLOG {
                let Some(message) = self.backlog.pop_front() else {
                    break;
                };
                if self.messages.send(message).await.is_err() {
                    self.backlog.clear();
                }
            }
            Ok(())
        }))
    }

    fn describe(&self) -> String {
        "the eval's observation".to_string()
    }
}
