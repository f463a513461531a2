//! What one `eval` invocation does, decided by one rule from its flags
//! (clap has already refused the combinations that conflict): every part of
//! `eval` asks for the mode instead of reading `--list`, `--report`,
//! `--rescore`, `--resume` and `--watch` itself.

use std::path::{Path, PathBuf};

use promptlab::eval::run_id::EvalRunKind;

use super::EvalArgs;

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

impl EvalArgs {
    /// This invocation's mode; `runs_dir` is where `--rescore` reads when
    /// no `--report` folder is given.
    pub fn mode(&self, runs_dir: &Path) -> EvalMode {
        if self.watch {
            EvalMode::Watch
        } else if self.list {
            EvalMode::List
        } else if self.rescore {
            EvalMode::Rescore(if self.report.is_empty() {
                vec![runs_dir.to_path_buf()]
            } else {
                self.report.clone()
            })
        } else if !self.report.is_empty() {
            EvalMode::Merge(self.report.clone())
        } else {
            EvalMode::Run {
                resume: self.resume,
            }
        }
    }
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
