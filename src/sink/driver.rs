//! One driver delivers a turn to every sink, with one set of rules
//! (nextest's reporter fan-out is the model):
//!
//! - a **writer** (terminal, NDJSON, SSE, an HTTP response) whose reader has
//!   gone — a closed pipe, a closed connection — cancels the turn: nobody is
//!   reading, so the model call stops; the turn still runs to its
//!   `Cancelled` end so that recorders note it;
//! - a **recorder** (the run log) that fails is warned about, counted and
//!   dropped; the turn goes on, since its answer is still being shown;
//! - an **observer** (an eval's verdict inputs, a progress feed) is not
//!   expected to fail; one that does is dropped as a recorder is.
//!
//! What a sink cannot do in its synchronous `accept` it leaves to `wait`,
//! which `drive` awaits before the turn's next output. Before the turn
//! waits for anything — its next output not ready yet (the model, a tool),
//! or a sink's `wait` — every other sink is told it is `idle`, so that one
//! that buffers (an eval's run log) writes out what it holds.
//!
//! `chat`, `replay`, `eval` and `serve` all deliver their turns through
//! `drive`.

use std::io;

use futures_util::future::BoxFuture;
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

    /// What the last output left this sink to wait for, which `accept`
    /// cannot await: a progress feed whose reader is behind, a file to be
    /// synced. The turn awaits it before its next output, so the thread
    /// running the turn is never blocked on it. An error is handled as
    /// `accept`'s is.
    fn wait(&mut self) -> Option<BoxFuture<'_, io::Result<()>>> {
        None
    }

    /// The turn is about to wait: a sink that buffers its outputs writes
    /// them out now, so that a process killed while the turn waits leaves
    /// them behind. Best effort: what cannot be written stays buffered, and
    /// the sink's next write or its end says why.
    fn idle(&mut self) {}

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

impl Delivery {
    /// Applies the rules above to a sink that failed.
    fn failed(&mut self, sink: &dyn TurnSink, error: io::Error, cancel: &CancellationToken) {
        match sink.role() {
            SinkRole::Writer => {
                cancel.cancel();
                self.writer_error.get_or_insert(error);
            }
            // An observer that reports an error is dropped like a recorder.
            SinkRole::Recorder | SinkRole::Observer => self
                .recorder_failures
                .push(format!("{}: {error}", sink.describe())),
        }
    }
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
    loop {
        let next = turn.next();
        let Some(output) = ready_or_idle(next, || idle(sinks, &active)).await else {
            break;
        };
        if matches!(output, TurnOutput::Cancelled) {
            delivery.cancelled = true;
        }
        for (sink, active) in sinks.iter_mut().zip(active.iter_mut()) {
            if !*active {
                continue;
            }
            if let Err(error) = sink.accept(&output) {
                *active = false;
                delivery.failed(&**sink, error, cancel);
            }
        }
        // Every sink has this output before any is waited for: the run log
        // has it even while a sink's wait holds the turn back.
        for at in 0..sinks.len() {
            if !active[at] {
                continue;
            }
            let (before, rest) = sinks.split_at_mut(at);
            let (sink, after) = rest.split_first_mut().expect("`at` is in range");
            let Some(waiting) = sink.wait() else {
                continue;
            };
            let others = || {
                idle(before, &active[..at]);
                idle(after, &active[at + 1..]);
            };
            if let Err(error) = ready_or_idle(waiting, others).await {
                active[at] = false;
                delivery.failed(&**sink, error, cancel);
            }
        }
    }
    delivery
}

/// `waiting`'s output, with `idle` (telling the sinks that buffer to write
/// out: `TurnSink::idle`) run once, after its first `Pending`: polled once
/// per wake-up, as `waiting` alone would be, never twice in a row.
pub async fn ready_or_idle<F: std::future::Future>(waiting: F, idle: impl FnOnce()) -> F::Output {
    futures_util::pin_mut!(waiting);
    let mut idle = Some(idle);
    std::future::poll_fn(|context| {
        let polled = waiting.as_mut().poll(context);
        if polled.is_pending()
            && let Some(idle) = idle.take()
        {
            idle();
        }
        polled
    })
    .await
}

/// Tells every active sink of `sinks` that the turn is about to wait.
fn idle(sinks: &mut [&mut dyn TurnSink], active: &[bool]) {
    for (sink, _) in sinks.iter_mut().zip(active).filter(|(_, active)| **active) {
        sink.idle();
    }
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

    /// What a sink was given, in order: `accept`s by the output's number,
    /// and each `idle`.
    #[derive(Default)]
    struct Steps {
        steps: Vec<String>,
        /// Its `wait` is not ready at first, once per output.
        waits_once: bool,
    }

    impl TurnSink for Steps {
        fn role(&self) -> SinkRole {
            SinkRole::Recorder
        }
        fn accept(&mut self, output: &TurnOutput) -> io::Result<()> {
            if let TurnOutput::Event(ChatEvent::TextDelta { text }) = output {
                self.steps.push(text.clone());
            }
            Ok(())
        }
        fn wait(&mut self) -> Option<BoxFuture<'_, io::Result<()>>> {
            self.waits_once.then(|| {
                Box::pin(async {
                    tokio::task::yield_now().await;
                    Ok(())
                }) as BoxFuture<'_, io::Result<()>>
            })
        }
        fn idle(&mut self) {
            self.steps.push("idle".to_string());
        }
        fn describe(&self) -> String {
            "steps".to_string()
        }
    }

    /// Three outputs; the second not ready at once when `pause` (the turn
    /// waits for it, as for a model's next chunk).
    fn paused(pause: bool) -> impl Stream<Item = TurnOutput> {
        futures_util::stream::iter(text(3)).then(move |output| async move {
            let second =
                matches!(&output, TurnOutput::Event(ChatEvent::TextDelta { text }) if text == "1");
            if pause && second {
                tokio::task::yield_now().await;
            }
            output
        })
    }

    /// Polled as the future alone would be — once, then once per wake-up,
    /// never twice in a row — and `idle` once, however often it pends.
    #[tokio::test]
    async fn ready_or_idle_polls_once_per_wake_and_idles_once() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        use std::task::{Poll, Waker};
        let woken = Arc::new(AtomicUsize::new(0));
        let waker: Arc<parking_lot::Mutex<Option<Waker>>> = Arc::default();
        let (polls, idles) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let waiting = std::future::poll_fn(|context| {
            polls.fetch_add(1, SeqCst);
            if woken.load(SeqCst) == 2 {
                return Poll::Ready("answer");
            }
            *waker.lock() = Some(context.waker().clone());
            Poll::Pending
        });
        // Another task wakes it twice; nothing else does.
        let (woken_by, waker_of) = (Arc::clone(&woken), Arc::clone(&waker));
        tokio::spawn(async move {
            for _ in 0..2 {
                tokio::task::yield_now().await;
                woken_by.fetch_add(1, SeqCst);
                waker_of.lock().take().expect("polled before").wake();
            }
        });
        let answer = ready_or_idle(waiting, || {
            idles.fetch_add(1, SeqCst);
        })
        .await;
        assert_eq!(
            (answer, polls.load(SeqCst), idles.load(SeqCst)),
            ("answer", 3, 1)
        );
    }

    #[tokio::test]
    async fn sinks_are_told_idle_only_before_the_turn_waits() {
        let cancel = CancellationToken::new();
        let mut ready = Steps::default();
        drive(paused(false), &mut [&mut ready], &cancel).await;
        assert_eq!(ready.steps, ["0", "1", "2"], "nothing waited for");
        let mut waiting = Steps::default();
        drive(paused(true), &mut [&mut waiting], &cancel).await;
        assert_eq!(waiting.steps, ["0", "idle", "1", "2"]);
    }

    #[tokio::test]
    async fn a_sink_that_waits_leaves_the_others_idle_first() {
        let cancel = CancellationToken::new();
        let mut waits = Steps {
            waits_once: true,
            ..Steps::default()
        };
        let mut other = Steps::default();
        drive(paused(false), &mut [&mut waits, &mut other], &cancel).await;
        assert_eq!(waits.steps, ["0", "1", "2"], "not told while it waits");
        assert_eq!(other.steps, ["0", "idle", "1", "idle", "2", "idle"]);
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
