//! One view of a recorded turn: whatever read it — a listing's header and
//! footer (`RunSummary`) or the whole log (`RunLog`) — its state, its
//! standing verdict and its numbers come from here, by one rule each, for
//! `runs list`, `runs show`, `compare`, `report` and eval's merges.

use std::path::Path;

use super::record::{LogState, Outcome, RecordedVerdict, RunFooter, RunHeader, RunStatus};
use super::store::{RunLog, RunSummary};
use super::tally::TurnNumbers;

/// Where a recorded turn sits, whatever its prompt version: its eval
/// suite, claim, case and sample; a chat turn has no suite, its user message
/// (quoted, on one line) for a case and sample 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TurnPlace {
    pub suite: Option<String>,
    pub claim: String,
    pub case: String,
    pub sample: u32,
}

/// One turn of one prompt version — (suite, version, claim, case, sample),
/// the version being the eval variant — the one key by which resume and
/// merge find a recorded turn, the report keeps the newest run of each, and
/// `compare` pairs two versions (on the `place`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TurnKey {
    /// First, so that keys sort by version, then place.
    pub version: String,
    pub place: TurnPlace,
}

/// How much of a chat turn's message names its place.
const CASE_CHARS: usize = 60;

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

    /// Where the turn sits (see `TurnPlace`).
    pub fn place(&self) -> TurnPlace {
        let header = self.header;
        let claim = header.claim.as_ref().map_or_else(
            || header.request.claim_label().to_string(),
            |claim| claim.id.clone(),
        );
        match &header.labels {
            Some(labels) => TurnPlace {
                suite: Some(labels.suite.clone()),
                claim,
                case: labels.case.clone(),
                sample: labels.sample,
            },
            None => {
                let message = header
                    .request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == crate::chat::Role::User)
                    .map_or("", |m| m.text.as_str());
                TurnPlace {
                    suite: None,
                    claim,
                    case: format!("“{}”", crate::text::one_line(message, CASE_CHARS)),
                    sample: 0,
                }
            }
        }
    }

    /// The recorded turn this one replayed (`replayOf`, schema 4). A replay
    /// is a debugging re-run with canned model replies, not a run of any
    /// prompt version's turn: `compare` and `report` set it aside, and it
    /// has no labels, so it is never an eval turn.
    pub fn replay_of(&self) -> Option<&'a str> {
        self.header.replay_of.as_deref()
    }

    /// An eval turn's key (its variant the version); none for a chat turn.
    pub fn key(&self) -> Option<TurnKey> {
        let variant = self.header.labels.as_ref()?.variant.clone();
        Some(TurnKey {
            place: self.place(),
            version: variant,
        })
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
