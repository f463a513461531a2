//! Self-contained HTML reports (`docs/reports.md`): the recorded turns of
//! eval runs or chat sessions (`promptlab report`), and a comparison of two
//! prompt versions (`promptlab compare --format html`).
//!
//! One file, no network: the CSS and JavaScript are inlined and the data is
//! one embedded JSON block that the page renders lazily, so a 10,000-turn
//! report opens as fast as a smoke test. Every string from a claim, a model
//! or a file reaches the page as data and the DOM as text, never as markup.
//!
//! Layer: above runs, eval and compare; below the CLI. Nothing here prints.

pub mod compare;
pub mod load;
pub mod page;
pub mod strings;
pub mod summary;
pub mod turn;

use std::path::{Path, PathBuf};

pub use load::{LoadedRuns, load_runs};
pub use page::{compare_page, runs_page};
pub use summary::{VariantStats, summarize};
pub use turn::ReportTurn;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("runs folder `{0}` does not exist")]
    MissingFolder(String),
    #[error("`{0}` is not a folder of run logs")]
    NotAFolder(String),
    #[error("failed to read run logs in `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no run logs in {0}")]
    NoRunLogs(String),
    #[error("no run logs of suite `{suite}` in {dirs} (suites found: {found})")]
    NoSuiteRuns {
        suite: String,
        dirs: String,
        found: String,
    },
    #[error("none of the {count} run logs in {dirs} could be read; first: {first}")]
    AllUnreadable {
        count: usize,
        dirs: String,
        first: String,
    },
}

/// The folders, as a message names them: `` `a`, `b` ``.
pub fn list_dirs(dirs: &[PathBuf]) -> String {
    let quoted: Vec<String> = dirs.iter().map(|d| quote(d)).collect();
    quoted.join(", ")
}

fn quote(path: &Path) -> String {
    format!("`{}`", path.display())
}
