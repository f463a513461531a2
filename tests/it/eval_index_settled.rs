//! The run index has a row for every log an eval committed by the time
//! `run_turns` returns: logs synced and renamed in groups are noted in the
//! index after their turns are told (`sink::log_commit`), and the run
//! waits for the last group's note (`GroupCommit::settled`). Read straight
//! from the SQLite file while the runtime is still up, no reader having
//! caught up.

use crate::support;

use std::sync::Arc;

use promptlab::eval::{Feed, ProviderChoice, RunSettings, Selection};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::{
    CallSummary, ModelEvent, ModelProvider, ModelRequest, ModelStream, ProviderKind,
};
use support::plans;
use tokio_util::sync::CancellationToken;

/// A model that answers at once.
struct AtOnce;

impl ModelProvider for AtOnce {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Script
    }

    fn stream_turn(&self, _: ModelRequest, _: CancellationToken) -> ModelStream {
        Box::pin(async_stream::stream! {
            yield Ok(ModelEvent::TextDelta("The excess is 250.".into()));
            yield Ok(ModelEvent::Done(CallSummary::default()));
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_committed_log_has_its_row_when_the_run_returns() {
    let dir = tempfile::tempdir().unwrap();
    let runs_dir = dir.path().join("runs");
    std::fs::create_dir(&runs_dir).unwrap();
    // The first reader builds the index; writers keep one that exists.
    promptlab::index::RunIndex::open(&runs_dir).unwrap();
    let yaml = "name: settled\nrepeats: 150\nclaims: {ids: [CLM-HH-0001, CLM-MTR-0002]}\n\
                cases:\n  - name: a\n    message: What is the excess?\n";
    let plan = Arc::new(plans::plan_of(dir.path(), yaml, Selection::default()));
    let settings = Arc::new(RunSettings {
        registry: PromptRegistry::embedded(),
        judge: None,
        budget: None,
        model_cache: None,
        store: plans::claims(),
        runs_dir: runs_dir.clone(),
        concurrency: 16,
        today: chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
        provider: ProviderChoice::Shared(Arc::new(AtOnce)),
        // No events asked for: the logs are committed in groups.
        feed: Feed::new(false),
        tracing: None,
        prices: promptlab::cost::PriceTable::shipped(),
    });
    let (sender, mut receiver) = tokio::sync::mpsc::channel(promptlab::eval::runner::FEED_CAPACITY);
    let reading = tokio::spawn(async move { while receiver.recv().await.is_some() {} });
    let spill = plans::run_into_spill(dir.path(), &plan, settings, sender).await;
    let db = rusqlite::Connection::open(runs_dir.join("index.sqlite")).unwrap();
    let rows: i64 = db
        .query_row(
            "SELECT count(*) FROM turns WHERE status = 'done'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let logs = support::run_logs_under(&runs_dir).len();
    assert_eq!((spill.len(), logs), (300, 300));
    assert_eq!(rows, 300, "every log's row, none left to a reader");
    reading.await.unwrap();
}
