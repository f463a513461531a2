//! `promptlab cases from-runs`: recorded turns — named, labelled fail, or
//! voted down — appended as regression cases to a JSONL dataset a suite
//! reads with `casesFrom` (`eval::promote`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{ArgGroup, Args, ValueEnum};

use promptlab::eval::promote::{Seeds, case_row, promoted_turns};
use promptlab::runs::feedback::{Vote, read_feedback};
use promptlab::runs::labels::{
    LabelRecord, LabelVerdict, TurnLabel, current_by_reviewer, read_labels, turn_label,
};
use promptlab::runs::store::run_log_paths;
use promptlab::runs::{find_run, read_run_log_checked};
use promptlab::sink::printable;

use super::error::{CliError, Exit};

pub const AFTER_HELP: &str = "\
Each turn becomes one line of FILE.jsonl (made when missing): the same question (its message, or
its whole history) of the same claim id, with its capability, locale, brand, screen actions,
voice and date as recorded, `tags: [from-review]` and `from: <turn id>`. The reviewer's label
seeds its expectation: the note as a rubric criterion when the turn was judged on a rubric, the
correction as answerContains with --expect-correction. A turn already in the file is not
appended again. A suite runs them with `casesFrom: FILE.jsonl` (docs/suites.md).

Exit codes: 0 appended (or nothing new) · 1 the file could not be written · 2 an unknown turn, a
turn still being recorded, a turn with no claim id, no turn selected.

Examples:
  promptlab cases from-runs --labelled fail --eval-run ev-3f2a --to regressions.jsonl
  promptlab cases from-runs --voted down --to regressions.jsonl
  promptlab cases from-runs 3f2a 9c1e --to regressions.jsonl --expect-correction";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
#[command(group(ArgGroup::new("which").required(true).args(["turns", "labelled", "voted"])))]
pub struct FromRunsArgs {
    /// Turns to promote: prefixes of turn ids, or run log paths.
    #[arg(value_name = "TURN")]
    pub turns: Vec<String>,
    /// Every turn whose label (the reviewers' majority) is this.
    #[arg(long, value_name = "fail|pass")]
    pub labelled: Option<LabelVerdict>,
    /// Every turn whose newest vote is this.
    #[arg(long, value_enum, value_name = "down|up")]
    pub voted: Option<VoteChoice>,
    /// Only turns of this eval run (`ev-…` or a unique prefix).
    #[arg(long, value_name = "ID")]
    pub eval_run: Option<String>,
    /// The JSONL dataset to append to.
    #[arg(long, value_name = "FILE.jsonl")]
    pub to: PathBuf,
    /// Expect the label's correction in the answer (`answerContains`).
    #[arg(long)]
    pub expect_correction: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VoteChoice {
    Down,
    Up,
}

pub fn run(args: FromRunsArgs, runs_dir: &Path) -> Result<Exit, CliError> {
    let mut selected = select(&args, runs_dir)?;
    // A turn named twice is one case.
    let mut seen = std::collections::HashSet::new();
    selected.retain(|(path, _)| seen.insert(path.clone()));
    if selected.is_empty() {
        return Err(CliError::usage(match (&args.labelled, &args.voted) {
            (Some(verdict), _) => format!("no turn here is labelled {}", verdict.as_str()),
            _ => "no turn here has that vote".to_string(),
        }));
    }
    let existing = match args.to.exists() {
        true => promptlab::input::read_input_text(&args.to)
            .map_err(|error| CliError::failed(format!("`{}`: {error}", args.to.display())))?,
        false => String::new(),
    };
    // A file the suite could not read is not appended to.
    promptlab::eval::cases_from::parse_cases(&existing, true).map_err(|problem| {
        CliError::usage(format!(
            "`{}` is not a JSONL dataset casesFrom reads ({problem}); nothing appended",
            args.to.display()
        ))
    })?;
    let already = promoted_turns(&existing);
    let seeds = Seeds {
        expect_correction: args.expect_correction,
    };
    let mut lines = String::new();
    let (mut added, mut skipped) = (0usize, 0usize);
    for (path, label) in selected {
        let log = read_run_log_checked(&path)?;
        if already.contains(&log.header.turn_id) {
            skipped += 1;
            continue;
        }
        let row = case_row(&log, label.as_ref(), seeds).map_err(CliError::usage)?;
        lines.push_str(&row.to_string());
        lines.push('\n');
        added += 1;
    }
    // The file as it will be is checked as the suite's reader reads it.
    let whole = format!("{existing}\n{lines}");
    promptlab::eval::cases_from::parse_cases(&whole, true)
        .map_err(|problem| CliError::failed(format!("a promoted case is not valid: {problem}")))?;
    if added > 0 {
        append(&args.to, &existing, &lines)?;
    }
    writeln!(
        std::io::stdout(),
        "appended {added} case{} to {} ({skipped} already there)",
        if added == 1 { "" } else { "s" },
        args.to.display()
    )?;
    Ok(Exit::Success)
}

/// The turns chosen, each with the label that seeds its case.
fn select(
    args: &FromRunsArgs,
    runs_dir: &Path,
) -> Result<Vec<(PathBuf, Option<LabelRecord>)>, CliError> {
    if !args.turns.is_empty() {
        let mut chosen = Vec::new();
        for turn in &args.turns {
            let path = find_run(&[runs_dir.to_path_buf()], turn)?;
            if promptlab::runs::naming::is_partial(&path) {
                return Err(CliError::usage(format!(
                    "`{}` is still being recorded (or was cut short): only a finished turn becomes a case",
                    path.display()
                )));
            }
            let label = seeding_label(&path, None)?;
            chosen.push((path, label));
        }
        return Ok(chosen);
    }
    let mut chosen = Vec::new();
    for path in candidates(args, runs_dir)? {
        if let Some(verdict) = args.labelled {
            if std::fs::symlink_metadata(promptlab::runs::labels::labels_dir(&path)).is_err() {
                continue;
            }
            if let Some(label) = seeding_label(&path, Some(verdict))? {
                chosen.push((path, Some(label)));
            }
        } else if let Some(vote) = args.voted {
            let wanted = match vote {
                VoteChoice::Down => Vote::Down,
                VoteChoice::Up => Vote::Up,
            };
            let votes = read_feedback(&path).unwrap_or_default();
            if votes.last().is_some_and(|newest| newest.vote == wanted) {
                let label = seeding_label(&path, None)?;
                chosen.push((path, label));
            }
        }
    }
    Ok(chosen)
}

/// The finished logs to look through: an eval run's, else the folder's.
fn candidates(args: &FromRunsArgs, runs_dir: &Path) -> Result<Vec<PathBuf>, CliError> {
    let paths = match &args.eval_run {
        Some(spec) => {
            let index = super::evals::open_index(runs_dir)?;
            let id = super::evals::resolve_eval_run(&index, spec)?;
            index.member_paths(&id).map_err(CliError::failed)?
        }
        None => run_log_paths(runs_dir)?,
    };
    Ok(paths
        .into_iter()
        .filter(|path| !promptlab::runs::naming::is_partial(path))
        .collect())
}

/// The newest of the reviewers' current labels that agrees with the
/// turn's label — which must be `wanted` when given (a disputed turn has
/// none); `None` when the turn has no label (or not that one).
fn seeding_label(
    path: &Path,
    wanted: Option<LabelVerdict>,
) -> Result<Option<LabelRecord>, CliError> {
    let turn_id = promptlab::runs::naming::turn_id_of(path).unwrap_or_default();
    let (labels, unreadable) = read_labels(path, turn_id)?;
    for problem in unreadable {
        promptlab::text::eprintln_or_drop!("warning: skipped {}", printable(&problem.to_string()));
    }
    let Some(TurnLabel::Agreed(verdict)) = turn_label(&labels) else {
        return Ok(None);
    };
    if wanted.is_some_and(|wanted| wanted != verdict) {
        return Ok(None);
    }
    let current = current_by_reviewer(&labels);
    let newest = (current.values())
        .filter(|label| label.verdict == verdict)
        .max_by_key(|label| label.at);
    Ok(newest.map(|label| (*label).clone()))
}

/// Appends `lines` to the dataset in one write, after a newline if its
/// last line has none. A file that cannot be written is an error, and
/// nothing of it changes.
fn append(path: &Path, existing: &str, lines: &str) -> Result<(), CliError> {
    let cannot = |error: std::io::Error| {
        CliError::failed(format!("cannot append to `{}`: {error}", path.display()))
    };
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(cannot)?;
    let mut text = String::new();
    if !existing.is_empty() && !existing.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(lines);
    file.write_all(text.as_bytes()).map_err(cannot)?;
    file.sync_all().map_err(cannot)?;
    Ok(())
}
