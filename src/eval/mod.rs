//! Eval suites: many turns over the claim corpus, for one or more prompt
//! versions, judged against expectations (SPEC §7; `docs/suites.md`).

pub mod expect;
pub mod matrix;
pub mod report;
pub mod runner;
pub mod suite;

pub use expect::{Observation, Outcome, Verdict, judge};
pub use matrix::{Matrix, Shard, TurnSpec, build_matrix};
pub use runner::{
    EvalMessage, EvalPlan, ProviderChoice, RunSettings, TurnKey, TurnResult, run_turns,
};
pub use suite::{LoadedSuite, Suite, SuiteError};
