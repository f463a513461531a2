//! Eval suites: many turns over the claim corpus, for one or more prompt
//! versions, judged against expectations (SPEC §7; `docs/suites.md`).

pub mod budget;
pub mod calibration;
pub mod cases_from;
pub mod expect;
pub mod feed;
pub mod fold;
pub mod judging;
pub mod junit;
pub mod log_commit;
pub mod matrix;
pub mod outcome;
pub mod plan;
pub mod promote;
pub mod recorded;
pub mod report;
pub mod rescore;
pub mod review;
pub mod run_id;
pub mod run_settings;
pub mod runner;
pub mod session;
pub mod shapes;
pub mod shard;
pub mod spill;
pub mod suite;
pub mod tags;
pub mod totals;
pub mod trace;
mod turn_end;

pub use expect::{Observation, Outcome, Verdict, judge};
pub use matrix::{MAX_PLANNED_TURNS, Matrix, Shard, TurnSpec, build_matrix};
pub use plan::{EvalPlan, Selection, TurnKey};
pub use runner::{
    EvalMessage, Feed, ProviderChoice, RunLimits, RunSettings, TurnResult, run_turns,
};
pub use suite::{LoadedSuite, Suite, SuiteError};
