//! Recorded run logs: their records, reading and finding them.

pub mod answer_text;
pub mod content;
pub mod evidence;
pub mod feedback;
pub(crate) mod full_folder;
pub mod labels;
pub mod naming;
pub mod prompt_store;
pub mod record;
pub mod replay;
pub mod rescore;
pub mod row;
pub mod store;
pub mod tally;
pub mod version;
pub mod view;

pub use record::{RunFooter, RunHeader, RunLabels, RunRecord, RunStatus};
pub use store::{
    RunLog, RunLogError, RunLogReader, RunSummary, find_run, read_run_log, read_run_log_checked,
    scan_runs,
};
