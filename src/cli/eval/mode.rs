//! What one `eval` invocation does (decided from its flags by
//! `EvalSettings::from_args`): every part of `eval` asks for the mode
//! instead of reading `--list`, `--report`, `--rescore`, `--resume` and
//! `--watch` itself.

use std::path::PathBuf;

use promptlab::eval::run_id::EvalRunKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalMode {
    /// `--list`: plan the turns and print them; nothing runs.
    List,
    /// Run the turns; with `--resume`, those already done are read back.
    Run { resume: bool },
    /// `--report DIR…`: merge the turns recorded there; nothing runs.
    Merge(Vec<PathBuf>),
    /// `--rescore`: judge recorded turns again (under `--report` folders,
    /// else the runs folder), no chat model call.
    Rescore(Vec<PathBuf>),
    /// `--watch`: run, then again on each change.
    Watch,
}

impl EvalMode {
    /// How the eval run is recorded: `run`, `merge` or `rescore`.
    pub fn run_kind(&self) -> EvalRunKind {
        match self {
            EvalMode::Rescore(_) => EvalRunKind::Rescore,
            EvalMode::Merge(_) => EvalRunKind::Merge,
            EvalMode::List | EvalMode::Run { .. } | EvalMode::Watch => EvalRunKind::Run,
        }
    }

    /// Whether some turns are judged from their logs rather than streamed
    /// while they ran (merged, resumed, re-scored).
    pub fn reads_logs(&self) -> bool {
        matches!(
            self,
            EvalMode::Merge(_) | EvalMode::Rescore(_) | EvalMode::Run { resume: true }
        )
    }

    /// Whether this invocation runs turns (and so writes run logs).
    pub fn runs_turns(&self) -> bool {
        matches!(self, EvalMode::Run { .. } | EvalMode::Watch)
    }
}
