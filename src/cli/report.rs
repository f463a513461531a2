//! `promptlab report [DIR…] [-o FILE] [--open]`: one self-contained HTML file of the
//! recorded turns in run-log folders — eval runs or chat turns — to open
//! anywhere, attach to a CI run, or send to a reviewer.

use std::path::{Path, PathBuf};

use chrono::Utc;
use clap::Args;

use promptlab::report::{load_runs, runs_page};

use super::error::{CliError, Exit};
use super::eval::writable;
use super::report_file::write_whole;

const AFTER_HELP: &str = "\
The page holds, per variant: turns, pass rate with its 95% interval, errors, tokens, cache-read
share and latency p50/p95; a claims × cases matrix coloured by verdict (repeats folded) whose cells
open their turns; every turn's transcript as the assistant showed it (message, activity chips,
answer, lookups with arguments and results, client actions, the done footer, failures, run-log
path) and its assembled prompt on demand; failures first; filters and a search box. No network:
the CSS, the script and the data are inside the file.

The newest run of each turn counts (suite, variant, claim, case, sample); older runs are counted as
superseded. Replays (`promptlab replay`) are not runs of their own: they are left out and counted.
Unreadable run logs are named on the page and on stderr.

Without -o the page is report.html in the current folder. --open opens it with $BROWSER (a
command, its arguments split on spaces; the first of a colon-separated list), else the system's
opener (xdg-open, or open on macOS).

Examples:
  promptlab eval suites/smoke.yaml --provider script; promptlab report --open
  promptlab report -o smoke.html
  promptlab report runs/base --suite regression -o regression.html
  promptlab report shard1 shard2 shard3 -o all-shards.html";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct ReportArgs {
    /// Folders of run logs (default: --runs-dir).
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Only runs of this eval suite.
    #[arg(long, value_name = "NAME")]
    pub suite: Option<String>,
    /// The HTML file to write; its folder must exist.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
    /// Open the page when it is written: with $BROWSER, else xdg-open (open
    /// on macOS).
    #[arg(long)]
    pub open: bool,
    /// The page's title (default: the suite, or "chat turns").
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

pub fn run(args: ReportArgs, runs_dir: &Path) -> Result<Exit, CliError> {
    writable("--output", &args.output)?;
    let dirs = if args.dirs.is_empty() {
        vec![runs_dir.to_path_buf()]
    } else {
        // Folders given as arguments are read by scanning, said once.
        let logs: usize = args
            .dirs
            .iter()
            .map(|dir| promptlab::runs::store::run_log_paths(dir).map_or(0, |p| p.len()))
            .sum();
        promptlab::text::eprintln_or_drop!("{}", promptlab::index::scan_note(logs));
        args.dirs.clone()
    };
    let runs = load_runs(&dirs, args.suite.as_deref())?;
    for (path, why) in &runs.unreadable {
        promptlab::text::eprintln_or_drop!(
            "warning: run log `{}` could not be read: {why}",
            path.display()
        );
    }
    let title = args.title.clone().unwrap_or_else(|| {
        let suites: std::collections::BTreeSet<&str> = runs
            .turns
            .iter()
            .filter_map(|t| t.suite.as_deref())
            .collect();
        match suites.into_iter().collect::<Vec<_>>().as_slice() {
            [] => "promptlab report: chat turns".to_string(),
            names => format!("promptlab report: suite {}", names.join(", ")),
        }
    });
    let page = runs_page(&runs, &title, Utc::now());
    write_page(&args.output, &page)?;
    promptlab::text::eprintln_or_drop!(
        "wrote {}: {} {}, {} bytes",
        args.output.display(),
        runs.turns.len(),
        super::output::plural(runs.turns.len(), "turn", "turns"),
        page.len()
    );
    if args.open {
        open_in_browser(&args.output)?;
    }
    Ok(Exit::Success)
}

/// Starts the user's browser on `page` and leaves it running.
fn open_in_browser(page: &Path) -> Result<(), CliError> {
    let (program, mut arguments) = opener().ok_or_else(|| {
        CliError::failed(format!(
            "wrote `{}` but found nothing to open it with: set BROWSER (e.g. BROWSER=firefox)",
            page.display()
        ))
    })?;
    arguments.push(page.as_os_str().to_owned());
    std::process::Command::new(&program)
        .args(&arguments)
        .stdin(std::process::Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|error| {
            CliError::failed(format!(
                "wrote `{}` but could not start `{}` to open it: {error}",
                page.display(),
                program.to_string_lossy()
            ))
        })
}

/// What opens a page: `$BROWSER` (the first of a `:`-separated list, its
/// words split on spaces), else the system's opener if it is on PATH.
fn opener() -> Option<(std::ffi::OsString, Vec<std::ffi::OsString>)> {
    if let Some(browser) = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
    {
        let first = browser.split(':').find(|b| !b.trim().is_empty())?;
        let mut words = first.split_whitespace().map(std::ffi::OsString::from);
        return Some((words.next()?, words.collect()));
    }
    let system = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(system).is_file()));
    on_path.then(|| (system.into(), Vec::new()))
}

/// Writes the page whole or not at all; a failure exits 1 naming the file.
pub fn write_page(path: &Path, page: &str) -> Result<(), CliError> {
    write_whole(path, page)
        .map_err(|error| CliError::failed(format!("failed to write `{}`: {error}", path.display())))
}
