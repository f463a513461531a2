//! One driver delivers a turn to every sink, with one set of rules
//! (nextest's reporter fan-out is the model):
//!
//! - a **writer** (terminal, NDJSON, SSE, an HTTP response) whose reader has
//!   gone — a closed pipe, a closed connection — cancels the turn: nobody is
//!   reading, so the model call stops; the turn still runs to its
//!   `Cancelled` end so that recorders note it;
//! - a **recorder** (the run log) that fails is warned about, counted and
//!   dropped; the turn goes on, since its answer is still being shown;
//! - an **observer** (an eval's verdict inputs, a progress feed) cannot fail.
//!
//! `chat`, `replay` and `eval` all deliver their turns through `drive`.

use std::io;

use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::chat::TurnOutput;

/// What a sink is, which decides what its failure means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkRole {
    Writer,
    Recorder,
    Observer,
}

/// Something that consumes a turn's outputs. `Send`, so that a turn and
/// its sinks can run as a task of their own (`tokio::spawn`: an eval's
/// `-j` turns, each `serve` request).
pub trait TurnSink: Send {
    fn role(&self) -> SinkRole;

    /// Takes one output. An error is handled by the sink's role.
    fn accept(&mut self, output: &TurnOutput) -> io::Result<()>;

    /// Names the sink in a warning (e.g. the run log's path).
    fn describe(&self) -> String;
}

/// How delivery went.
#[derive(Debug, Default)]
pub struct Delivery {
    /// The turn ended with `Cancelled` (a signal, or a writer gone).
    pub cancelled: bool,
    /// The first writer error: its reader has gone.
    pub writer_error: Option<io::Error>,
    /// One line per recorder that failed and was dropped.
    pub recorder_failures: Vec<String>,
}

/// Delivers every output of `turn` to every sink that is still taking them,
/// in the order the sinks are given, applying the rules above. Give
/// recorders first: then whatever a reader has seen is already in the run
/// log when the process is killed. `cancel` is the turn's own token.
pub async fn drive(
    turn: impl Stream<Item = TurnOutput>,
    sinks: &mut [&mut dyn TurnSink],
    cancel: &CancellationToken,
) -> Delivery {
    let mut delivery = Delivery::default();
    let mut active = vec![true; sinks.len()];
    futures_util::pin_mut!(turn);
    while let Some(output) = turn.next().await {
        if matches!(output, TurnOutput::Cancelled) {
            delivery.cancelled = true;
        }
        for (sink, active) in sinks.iter_mut().zip(active.iter_mut()) {
            if !*active {
                continue;
            }
            let Err(error) = sink.accept(&output) else {
                continue;
            };
            *active = false;
            match sink.role() {
                SinkRole::Writer => {
                    cancel.cancel();
                    delivery.writer_error.get_or_insert(error);
                }
                SinkRole::Recorder => delivery
                    .recorder_failures
                    .push(format!("{}: {error}", sink.describe())),
                // An observer that reports an error is dropped like a recorder.
                SinkRole::Observer => delivery
                    .recorder_failures
                    .push(format!("{}: {error}", sink.describe())),
            }
        }
    }
    delivery
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ChatEvent;

    struct Probe {
        role: SinkRole,
        fail_at: Option<usize>,
        seen: usize,
    }

    impl TurnSink for Probe {
        fn role(&self) -> SinkRole {
            self.role
        }
        fn accept(&mut self, _: &TurnOutput) -> io::Result<()> {
            self.seen += 1;
            match self.fail_at {
                Some(at) if self.seen == at => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
                _ => Ok(()),
            }
        }
        fn describe(&self) -> String {
            format!("{:?}", self.role)
        }
    }

    fn text(n: usize) -> Vec<TurnOutput> {
        (0..n)
            .map(|i| {
                TurnOutput::Event(ChatEvent::TextDelta {
                    text: i.to_string(),
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn a_failed_recorder_is_dropped_and_the_turn_goes_on() {
        let mut recorder = Probe {
            role: SinkRole::Recorder,
            fail_at: Some(2),
            seen: 0,
        };
        let mut writer = Probe {
            role: SinkRole::Writer,
            fail_at: None,
            seen: 0,
        };
        let cancel = CancellationToken::new();
        let stream = futures_util::stream::iter(text(5));
        let delivery = drive(stream, &mut [&mut recorder, &mut writer], &cancel).await;
        assert_eq!((recorder.seen, writer.seen), (2, 5));
        assert_eq!(delivery.recorder_failures.len(), 1);
        assert!(!cancel.is_cancelled());
    }

    #[tokio::test]
    async fn a_writer_whose_reader_is_gone_cancels_the_turn() {
        let mut writer = Probe {
            role: SinkRole::Writer,
            fail_at: Some(1),
            seen: 0,
        };
        let mut recorder = Probe {
            role: SinkRole::Recorder,
            fail_at: None,
            seen: 0,
        };
        let cancel = CancellationToken::new();
        let mut outputs = text(3);
        outputs.push(TurnOutput::Cancelled);
        let stream = futures_util::stream::iter(outputs);
        let delivery = drive(stream, &mut [&mut writer, &mut recorder], &cancel).await;
        assert!(cancel.is_cancelled());
        assert!(delivery.writer_error.is_some());
        assert!(delivery.cancelled);
        assert_eq!(
            (writer.seen, recorder.seen),
            (1, 4),
            "the recorder still sees the end"
        );
    }
}
