//! An eval's turns are ordinary tasks: with `-j 2`, two turns whose model
//! call takes a *blocking* step (as an fsync, a cache write or a log read
//! would) still run at the same time. Asserted on overlap, not wall time:
//! each turn's blocking step waits for the other to arrive, and records
//! whether it did — polled from one task, the first turn would wait alone.

use crate::support;

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use promptlab::eval::{
    EvalMessage, EvalPlan, Feed, Outcome, ProviderChoice, RunSettings, Selection,
};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::{
    CallSummary, ModelEvent, ModelProvider, ModelRequest, ModelStream, ProviderKind,
};
use support::plans;
use tokio_util::sync::CancellationToken;

/// Turns that have reached the blocking step, and whether each saw the
/// other there.
#[derive(Default)]
struct Rendezvous {
    state: Mutex<(usize, Vec<bool>)>,
    arrived: Condvar,
}

impl Rendezvous {
    /// Blocks the calling thread until `expected` turns are here, or gives
    /// up after a bound that only a serialised run ever reaches.
    fn meet(&self, expected: usize) {
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        self.arrived.notify_all();
        let (mut state, _) = self
            .arrived
            .wait_timeout_while(state, Duration::from_secs(10), |state| state.0 < expected)
            .unwrap();
        let met = state.0 >= expected;
        state.1.push(met);
    }
}

/// A model whose call blocks its thread at the rendezvous before answering.
struct Blocking(Arc<Rendezvous>);

impl ModelProvider for Blocking {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Script
    }

    fn stream_turn(&self, _: ModelRequest, _: CancellationToken) -> ModelStream {
        let rendezvous = Arc::clone(&self.0);
        Box::pin(async_stream::stream! {
            rendezvous.meet(2);
            yield Ok(ModelEvent::TextDelta("The excess is 250.".into()));
            yield Ok(ModelEvent::Done(CallSummary::default()));
        })
    }
}

fn plan(dir: &std::path::Path) -> EvalPlan {
    let yaml = "name: parallel\nclaims: {ids: [CLM-HH-0001]}\ncases:\n  - name: a\n    message: What is the excess?\n  - name: b\n    message: Is it covered?\n";
    plans::plan_of(dir, yaml, Selection::default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_with_a_blocking_step_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let rendezvous = Arc::new(Rendezvous::default());
    let settings = RunSettings {
        registry: PromptRegistry::embedded(),
        judge: None,
        limits: promptlab::eval::RunLimits::default(),
        model_cache: None,
        store: plans::claims(),
        runs_dir: dir.path().join("runs"),
        concurrency: 2,
        today: chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap(),
        provider: ProviderChoice::Shared(Arc::new(Blocking(Arc::clone(&rendezvous)))),
        feed: Feed::new(false),
        tracing: None,
        prices: promptlab::cost::PriceTable::shipped(),
    };
    let settings = Arc::new(settings);
    let (sender, mut receiver) = tokio::sync::mpsc::channel(promptlab::eval::runner::FEED_CAPACITY);
    let plan = Arc::new(plan(dir.path()));
    let mut spill = plans::run_into_spill(dir.path(), &plan, Arc::clone(&settings), sender).await;
    let results: Vec<_> = spill
        .in_matrix_order()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut fed = Vec::new();
    while let Ok(message) = receiver.try_recv() {
        fed.push(message);
    }
    assert!(
        fed.iter().all(|m| matches!(m, EvalMessage::Finished(_))),
        "no events were asked for, none fed: {fed:?}"
    );
    assert_eq!(fed.len(), 2);
    assert!(
        settings.feed.skipped() >= 4,
        "each turn's text and done, counted"
    );
    assert_eq!(results.len(), 2);
    for result in &results {
        assert_eq!(
            result.verdict.outcome,
            Outcome::Pass,
            "{:?}",
            result.verdict
        );
    }
    let met = rendezvous.state.lock().unwrap().1.clone();
    assert_eq!(
        met,
        [true, true],
        "each turn's blocking step saw the other turn running"
    );
}
