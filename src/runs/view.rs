//! One view of a recorded turn: whatever read it — a listing's header and
//! footer (`RunSummary`) or the whole log (`RunLog`) — its state, its
//! standing verdict and its numbers come from here, by one rule each, for
//! `runs list`, `runs show`, `compare`, `report` and eval's merges.

use std::path::Path;

use super::record::{LogState, Outcome, RecordedVerdict, RunFooter, RunHeader, RunStatus};
use super::store::{RunLog, RunSummary};
use super::tally::TurnNumbers;

/// A recorded turn as every reader sees it.
#[derive(Debug, Clone, Copy)]
pub struct RunView<'a> {
    pub path: &'a Path,
    pub header: &'a RunHeader,
    pub footer: Option<&'a RunFooter>,
}

impl<'a> RunView<'a> {
    /// `done`, `error`, `cancelled`, or `partial`.
    pub fn state(&self) -> LogState {
        LogState::of(self.footer, self.path)
    }

    /// An eval turn's standing verdict: its re-score's, else its footer's
    /// (`runs::rescore`); none for a chat turn.
    pub fn verdict(&self) -> Option<RecordedVerdict> {
        self.header.labels.as_ref()?;
        super::rescore::standing_verdict(self.path, &self.header.turn_id, self.footer)
    }

    /// What the turn adds to its version's numbers (`runs::tally`), with
    /// `verdict` as `verdict()` gave it.
    pub fn numbers(&self, verdict: Option<&RecordedVerdict>) -> TurnNumbers {
        let outcome = verdict.map(|v| v.outcome);
        TurnNumbers {
            outcome,
            errored: match outcome {
                Some(outcome) => outcome == Outcome::Error,
                None => self.state() != LogState::Ended(RunStatus::Done),
            },
            usage: self.footer.map(|f| f.usage).unwrap_or_default(),
            latency_ms: self.footer.map(|f| f.total_ms),
            cached: self.footer.is_some_and(|f| f.cached_calls > 0),
        }
    }
}

impl RunSummary {
    pub fn view(&self) -> RunView<'_> {
        RunView {
            path: &self.path,
            header: &self.header,
            footer: self.footer.as_ref(),
        }
    }
}

impl RunLog {
    pub fn view(&self) -> RunView<'_> {
        RunView {
            path: &self.path,
            header: &self.header,
            footer: self.footer.as_ref(),
        }
    }
}
