//! The progress feed of an eval whose turns share one thread (`eval` runs
//! them on a current-thread runtime): a reader slower than the turns gets
//! every event of every turn, each turn's in order and before its
//! `Finished`, and a full feed never blocks the thread — here the reader is
//! a task on that same thread, so a turn blocking the thread on a full feed
//! would never be read (the run is then stopped by the watchdog and the
//! test fails). A reader that stops reading holds back the turns that have
//! not started, never a running model call, and lets no more turns finish
//! than the feed has room for.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use promptlab::chat::event::ChatEvent;
use promptlab::eval::{
    EvalMessage, EvalPlan, Feed, Outcome, ProviderChoice, RunSettings, Selection,
};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::{
    CallSummary, ModelEvent, ModelProvider, ModelRequest, ModelStream, ProviderKind,
};
use support::plans;
use tokio_util::sync::CancellationToken;

/// Pieces of text each turn's one model call streams.
const PIECES: usize = 40;

/// A model that streams `0 `, `1 `, … as separate pieces, giving the
/// thread up between them as a network read would; it counts the calls
/// started and those streamed to their end.
struct Counting {
    pieces: usize,
    started: Arc<AtomicUsize>,
    ended: Arc<AtomicUsize>,
}

impl Counting {
    fn new(pieces: usize) -> Counting {
        Counting {
            pieces,
            started: Arc::default(),
            ended: Arc::default(),
        }
    }
}

impl ModelProvider for Counting {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Script
    }

    fn stream_turn(&self, _: ModelRequest, _: CancellationToken) -> ModelStream {
        let (started, ended) = (Arc::clone(&self.started), Arc::clone(&self.ended));
        let pieces = self.pieces;
        Box::pin(async_stream::stream! {
            started.fetch_add(1, Ordering::SeqCst);
            for piece in 0..pieces {
                tokio::task::yield_now().await;
                yield Ok(ModelEvent::TextDelta(format!("{piece} ")));
            }
            ended.fetch_add(1, Ordering::SeqCst);
            yield Ok(ModelEvent::Done(CallSummary::default()));
        })
    }
}

fn plan(dir: &std::path::Path) -> EvalPlan {
    let yaml = "name: feed\nclaims: {ids: [CLM-HH-0001]}\nrepeats: 6\ncases:\n  - name: a\n    message: What is the excess?\n  - name: b\n    message: Is it covered?\n";
    plans::plan_of(dir, yaml, Selection::default())
}

fn settings(dir: &std::path::Path, provider: Counting, jobs: usize, events: bool) -> RunSettings {
    RunSettings {
        registry: PromptRegistry::embedded(),
        judge: None,
        limits: promptlab::eval::RunLimits::default(),
        model_cache: None,
        store: plans::claims(),
        runs_dir: dir.join("runs"),
        concurrency: jobs,
        today: chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap(),
        provider: ProviderChoice::Shared(Arc::new(provider)),
        feed: Feed::new(events),
        tracing: None,
        prices: promptlab::cost::PriceTable::shipped(),
    }
}

/// Runs the suite's 12 turns 8 at a time on one thread, with a feed of
/// `capacity` that a task on the same thread reads, yielding `slowness`
/// times between messages; gives what it read and the turns' verdicts.
fn run_on_one_thread(capacity: usize, slowness: usize) -> (Vec<EvalMessage>, Vec<Outcome>) {
    let dir = tempfile::tempdir().unwrap();
    let settings = Arc::new(settings(dir.path(), Counting::new(PIECES), 8, true));
    let plan = Arc::new(plan(dir.path()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (sender, mut receiver) = tokio::sync::mpsc::channel(capacity);
        let reader = tokio::spawn(async move {
            let mut read = Vec::new();
            while let Some(message) = receiver.recv().await {
                read.push(message);
                for _ in 0..slowness {
                    tokio::task::yield_now().await;
                }
            }
            read
        });
        let mut spill = plans::run_into_spill(dir.path(), &plan, settings, sender).await;
        let outcomes = spill
            .in_matrix_order()
            .unwrap()
            .map(|result| result.unwrap().verdict.outcome)
            .collect();
        (reader.await.unwrap(), outcomes)
    })
}

/// `run_on_one_thread` in a thread of its own, failed if it has not ended
/// within a bound no working run comes near (a thread blocked on the feed
/// never ends).
fn within_a_minute(capacity: usize, slowness: usize) -> (Vec<EvalMessage>, Vec<Outcome>) {
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(run_on_one_thread(capacity, slowness));
    });
    ended
        .recv_timeout(Duration::from_secs(60))
        .expect("the run never ended: a full feed blocked the thread its reader needs")
}

/// Each turn's texts in the order read, whether its `Done` came last, and
/// whether `Finished` came after it.
fn per_turn(read: &[EvalMessage]) -> BTreeMap<usize, (Vec<String>, bool, bool)> {
    let mut turns: BTreeMap<usize, (Vec<String>, bool, bool)> = BTreeMap::new();
    for message in read {
        match message {
            EvalMessage::Event(spec, ChatEvent::TextDelta { text }) => {
                let turn = turns.entry(spec.index).or_default();
                assert!(!turn.1 && !turn.2, "text after the end: {message:?}");
                turn.0.push(text.clone());
            }
            EvalMessage::Event(spec, ChatEvent::Done(_)) => {
                turns.entry(spec.index).or_default().1 = true;
            }
            EvalMessage::Finished(result) => {
                let turn = turns.entry(result.spec.index).or_default();
                assert!(turn.1, "finished before its done: {message:?}");
                turn.2 = true;
            }
            _ => {}
        }
    }
    turns
}

fn assert_complete(read: &[EvalMessage], outcomes: &[Outcome]) {
    assert_eq!(outcomes, [Outcome::Pass; 12]);
    let turns = per_turn(read);
    assert_eq!(turns.len(), 12, "every turn was fed");
    let expected: Vec<String> = (0..PIECES).map(|piece| format!("{piece} ")).collect();
    for (index, (texts, done, finished)) in &turns {
        assert_eq!(texts, &expected, "turn {index}'s texts, all and in order");
        assert!(*done && *finished, "turn {index} ended in the feed");
    }
}

#[test]
fn a_slow_reader_on_the_turns_thread_gets_every_event_in_order() {
    // A feed of one message: nearly every send finds it full.
    let (read, outcomes) = within_a_minute(1, 3);
    assert_complete(&read, &outcomes);
}

#[test]
fn a_reader_that_keeps_up_gets_the_same() {
    let (read, outcomes) = within_a_minute(1_024, 0);
    assert_complete(&read, &outcomes);
}

/// Runs the 12 turns `jobs` at a time on one thread with paused time and a
/// feed of `capacity` whose reader is away until every task is idle (a
/// sleep on paused time ends only then); gives the calls started and ended
/// by then, and what the reader read once back.
fn with_the_reader_away(
    capacity: usize,
    jobs: usize,
    (events, pieces): (bool, usize),
) -> (usize, usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let provider = Counting::new(pieces);
    let (started, ended) = (Arc::clone(&provider.started), Arc::clone(&provider.ended));
    let settings = Arc::new(settings(dir.path(), provider, jobs, events));
    let plan = Arc::new(plan(dir.path()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let (sender, mut receiver) = tokio::sync::mpsc::channel(capacity);
        let reader = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3_600)).await;
            let away = (started.load(Ordering::SeqCst), ended.load(Ordering::SeqCst));
            let mut read = 0;
            while receiver.recv().await.is_some() {
                read += 1;
            }
            (away, read)
        });
        plans::run_into_spill(dir.path(), &plan, settings, sender).await;
        let ((started, ended), read) = reader.await.unwrap();
        (started, ended, read)
    })
}

#[test]
fn a_reader_that_is_away_holds_back_new_turns_not_running_calls() {
    // Each turn's 40 pieces overflow a feed of 4: its call still streams
    // to the end, and only the -j turns running when the feed filled do.
    let (started, ended, read) = with_the_reader_away(4, 2, (true, PIECES));
    assert_eq!(started, ended, "no call was left parked mid-stream");
    assert_eq!(started, 2, "no turn started while the reader was away");
    assert_eq!(
        read,
        12 * (PIECES + 2),
        "then every event and Finished was read"
    );
}

#[test]
fn a_reader_that_is_away_lets_no_more_turns_finish_than_the_feed_holds() {
    // Only `Finished` goes into the feed, and each turn takes room for two
    // (its warning, should its log's commit fail, is the other): three
    // finish into a feed of 4, and the two turns after those wait for room
    // with their slots held.
    let (started, ended, read) = with_the_reader_away(4, 2, (false, PIECES));
    assert_eq!((started, ended), (5, 5));
    assert_eq!(read, 12);
}

#[test]
fn a_turn_of_a_thousand_events_is_not_held_mid_call_either() {
    // A long answer: 1,000 pieces, far more than the feed holds, far less
    // than a turn may keep (`TURN_BACKLOG_BYTES`).
    let (started, ended, read) = with_the_reader_away(4, 2, (true, 1_000));
    assert_eq!((started, ended), (2, 2));
    assert_eq!(read, 12 * (1_000 + 2));
}
