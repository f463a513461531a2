//! `promptlab label TURN --verdict pass|fail`: a person's verdict on a
//! recorded turn, kept beside its log as a file of its own
//! (`runs::labels`, SPEC §15).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use clap::Args;

use promptlab::runs::labels::{
    LabelRecord, LabelVerdict, MAX_LABEL_TEXT_BYTES, reviewer_name, unjudged_criterion, write_label,
};
use promptlab::runs::{find_run, read_run_log_checked};

use super::error::{CliError, Exit};

const AFTER_HELP: &str = "\
Each label is a new file, <log stem>.labels/<UTC time>-<uuid>.json, beside the run log: two
reviewers never overwrite each other; a reviewer's later label supersedes their earlier one (both
are kept). With several reviewers a turn's label is the majority of their current labels; a tie
is disputed. `promptlab judge calibrate` measures a judge against the labels.

Exit codes: 0 the label is written · 1 it could not be written · 2 an unknown or ambiguous turn, a
turn still being recorded (.partial), a criterion the turn was not judged on, a bad flag.

Examples:
  promptlab label 3f2a --verdict fail --note 'quotes the wrong excess'
  promptlab label 3f2a --verdict pass --criterion 'Cites the policy excess=pass' --reviewer ann
  promptlab label 3f2a --verdict fail --correction 'The excess is £250.'";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct LabelArgs {
    /// The turn: a prefix of its turn id, or its run log's path.
    pub turn: String,
    /// The person's verdict on the whole turn.
    #[arg(long, value_name = "pass|fail")]
    pub verdict: LabelVerdict,
    /// A verdict on one rubric criterion the turn was judged on (repeat for several).
    #[arg(long, value_name = "TEXT=pass|fail", value_parser = parse_criterion)]
    pub criterion: Vec<(String, LabelVerdict)>,
    /// Why: kept with the label.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// What the answer should have said.
    #[arg(long, value_name = "TEXT")]
    pub correction: Option<String>,
    /// Who labels (default: $PROMPTLAB_REVIEWER, else git's user.name, else the login name).
    #[arg(long, value_name = "NAME")]
    pub reviewer: Option<String>,
}

fn parse_criterion(text: &str) -> Result<(String, LabelVerdict), String> {
    let (criterion, verdict) = text
        .rsplit_once('=')
        .ok_or_else(|| "expected TEXT=pass or TEXT=fail".to_string())?;
    if criterion.trim().is_empty() {
        return Err("the criterion's text is empty".into());
    }
    Ok((criterion.to_string(), verdict.parse()?))
}

pub fn run(args: LabelArgs, runs_dir: &Path) -> Result<Exit, CliError> {
    let path = find_run(&[runs_dir.to_path_buf()], &args.turn)?;
    if promptlab::runs::naming::is_partial(&path) {
        return Err(CliError::usage(format!(
            "`{}` is still being recorded (or was cut short): only a finished turn can be labelled",
            path.display()
        )));
    }
    let log = read_run_log_checked(&path)?;
    let criteria = checked_criteria(&log, &path, args.criterion)?;
    for (flag, text) in [("--note", &args.note), ("--correction", &args.correction)] {
        if text
            .as_ref()
            .is_some_and(|t| t.len() > MAX_LABEL_TEXT_BYTES)
        {
            return Err(CliError::usage(format!(
                "{flag}: longer than {MAX_LABEL_TEXT_BYTES} bytes"
            )));
        }
    }
    let reviewer = reviewer_or_default(args.reviewer.as_deref())?;
    let record = LabelRecord {
        turn_id: log.header.turn_id.clone(),
        verdict: args.verdict,
        criteria,
        note: args.note,
        correction: args.correction,
        reviewer,
        at: chrono::Utc::now(),
    };
    let written = write_label(&path, &record)
        .map_err(|error| CliError::failed(format!("the label was not written: {error}")))?;
    writeln!(
        std::io::stdout(),
        "labelled turn {} {} by {}: {}",
        record.turn_id,
        record.verdict.as_str(),
        promptlab::text::printable(&record.reviewer),
        written.display()
    )?;
    Ok(Exit::Success)
}

/// Every `--criterion` names one the turn's judge was asked about.
fn checked_criteria(
    log: &promptlab::runs::RunLog,
    path: &Path,
    given: Vec<(String, LabelVerdict)>,
) -> Result<BTreeMap<String, LabelVerdict>, CliError> {
    if given.is_empty() {
        return Ok(BTreeMap::new());
    }
    let judged: Vec<String> = promptlab::runs::rescore::recorded_rubric(log, path)
        .map_err(|error| CliError::failed(error.to_string()))?
        .into_iter()
        .map(|verdict| verdict.criterion)
        .collect();
    let criteria: BTreeMap<String, LabelVerdict> = given.into_iter().collect();
    if let Some(criterion) = unjudged_criterion(&judged, criteria.keys()) {
        let known = match judged.is_empty() {
            true => "it has no rubric criteria".to_string(),
            false => format!("its criteria: {}", quoted(&judged)),
        };
        return Err(CliError::usage(format!(
            "--criterion `{}`: turn {} was not judged on it ({known})",
            promptlab::text::one_line(criterion, 80),
            log.header.turn_id
        )));
    }
    Ok(criteria)
}

fn quoted(criteria: &[String]) -> String {
    let quoted: Vec<String> = criteria
        .iter()
        .map(|c| format!("`{}`", promptlab::text::one_line(c, 80)))
        .collect();
    quoted.join(", ")
}

/// `--reviewer`, else the default (`default_reviewer`), checked.
pub fn reviewer_or_default(given: Option<&str>) -> Result<String, CliError> {
    match given {
        Some(name) => {
            reviewer_name(name).map_err(|bad| CliError::usage(format!("--reviewer: {bad}")))
        }
        None => default_reviewer(),
    }
}

/// $PROMPTLAB_REVIEWER, else git's `user.name`, else the login name.
fn default_reviewer() -> Result<String, CliError> {
    let from_env = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|value| value.trim().to_string())
            .filter(|value| !value.is_empty())
    };
    if let Ok(name) = std::env::var("PROMPTLAB_REVIEWER") {
        return reviewer_name(&name)
            .map_err(|bad| CliError::usage(format!("PROMPTLAB_REVIEWER: {bad}")));
    }
    if let Some(name) = git_user_name().and_then(|name| reviewer_name(&name).ok()) {
        return Ok(name);
    }
    from_env("USER")
        .or_else(|| from_env("LOGNAME"))
        .ok_or_else(|| {
            CliError::usage(
                "no reviewer: give --reviewer NAME, or set PROMPTLAB_REVIEWER or git's user.name",
            )
        })
}

/// `git config user.name`, when git is there and has one.
fn git_user_name() -> Option<String> {
    let output = std::process::Command::new("git")
        .args(["config", "user.name"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let name = String::from_utf8(output.stdout).ok()?;
    let name = name.trim();
    (output.status.success() && !name.is_empty() && name.len() <= 200).then(|| name.to_string())
}
