//! `promptlab judge calibrate`: a suite's rubric judge measured against
//! the labels people gave its turns (`eval::calibration`, SPEC §15), kept
//! in `<runs>/calibrations/` for the eval gate.

use std::io::Write;
use std::path::Path;

use clap::{Args, Subcommand, ValueEnum};

use promptlab::eval::calibration::{
    Agreement, CalibrateError, CalibrationRecord, calibrate_runs, runs_of_one_judge,
    store_calibration,
};
use promptlab::sink::printable;

use super::error::{CliError, Exit};
use super::evals::{open_index, resolve_eval_run, suite_or_latest};

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Examples:\n  promptlab judge calibrate --suite rubric\n  promptlab judge calibrate ev-3f2a --format json | jq .kappa"
)]
pub enum JudgeCommand {
    /// Measure a suite's rubric judge against people's labels (Cohen's kappa with a 95%
    /// interval) and keep the calibration for the eval gate.
    Calibrate(CalibrateArgs),
}

const AFTER_HELP: &str = "\
Reads the turns of the eval runs named (default: every eval run of --suite, else of the newest
run's suite, judged by the same judge as the newest), pairs each turn's judge verdict with its
label (`promptlab label`; the majority of the reviewers' current labels, disputed turns left
out; turns whose other expectations failed left out), and reports raw agreement, Cohen's kappa
with its 95% interval, true-pass and true-fail rates, the confusion matrix, the same per rubric
criterion, and how many more labels would bring the interval's half-width under 0.1. The record
is kept in <runs>/calibrations/, bound to the judge's identity (provider, model, thinking level,
judge prompt, the suite's rubric criteria) and to the labels used: a suite whose `judge:` sets
minKappa trusts its judge's verdicts only while a calibration of that identity meets it.

Exit codes: 0 calibrated and kept · 1 it could not be kept · 2 no such eval run, nothing to
calibrate.

Examples:
  promptlab judge calibrate --suite rubric
  promptlab judge calibrate ev-3f2a --format json | jq .kappa";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct CalibrateArgs {
    /// Eval runs (`ev-…`, or a unique prefix) whose labelled turns to use.
    #[arg(value_name = "EVAL_RUN")]
    pub eval_runs: Vec<String>,
    /// The suite whose eval runs to use (default: the newest run's suite).
    #[arg(long, value_name = "NAME", conflicts_with = "eval_runs")]
    pub suite: Option<String>,
    #[arg(long, value_enum, default_value = "pretty")]
    pub format: CalibrateFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CalibrateFormat {
    Pretty,
    Json,
}

pub fn run(command: JudgeCommand, runs_dir: &Path) -> Result<Exit, CliError> {
    let JudgeCommand::Calibrate(args) = command;
    let index = open_index(runs_dir)?;
    let runs = match args.eval_runs.is_empty() {
        false => (args.eval_runs.iter())
            .map(|spec| resolve_eval_run(&index, spec))
            .collect::<Result<Vec<_>, _>>()?,
        true => match suite_or_latest(&index, args.suite.as_deref())? {
            Some(suite) => index.eval_runs_of(&suite).map_err(CliError::failed)?,
            None => Vec::new(),
        },
    };
    let named = !args.eval_runs.is_empty();
    let (identity, runs, notes) =
        runs_of_one_judge(&index, &runs, named).map_err(calibrate_error)?;
    for note in notes {
        promptlab::text::eprintln_or_drop!("note: {}", printable(&note));
    }
    let (record, problems) = calibrate_runs(&index, identity, runs).map_err(calibrate_error)?;
    for problem in problems {
        promptlab::text::eprintln_or_drop!("warning: skipped {}", printable(&problem));
    }
    // A calibration on no label is not kept: it would stand, newest, for
    // the judge and hide that an earlier one went stale.
    let nothing = record.overall.labels == 0 && record.criteria.values().all(|c| c.labels == 0);
    let kept =
        match nothing {
            true => None,
            false => Some(store_calibration(runs_dir, &record).map_err(|error| {
                CliError::failed(format!("the calibration was not kept: {error}"))
            })?),
        };
    let mut out = std::io::stdout().lock();
    match args.format {
        CalibrateFormat::Json => {
            let json = serde_json::to_string(&record).map_err(CliError::failed)?;
            writeln!(out, "{}", promptlab::text::json_for_terminal(json))?;
        }
        CalibrateFormat::Pretty => write_pretty(&mut out, &record)?,
    }
    match kept {
        Some(path) if args.format == CalibrateFormat::Pretty => {
            writeln!(out, "kept: {}", path.display())?;
        }
        Some(_) => {}
        None => {
            return Err(CliError::usage(format!(
                "nothing to calibrate: no turn of {} has both a judge verdict and an undisputed \
                 label; nothing kept. Label turns with `promptlab review` or `promptlab label`",
                record.eval_runs.join(", ")
            )));
        }
    }
    Ok(Exit::Success)
}

fn calibrate_error(error: CalibrateError) -> CliError {
    match error {
        CalibrateError::Nothing(message) => CliError::usage(message),
        error => CliError::failed(error.to_string()),
    }
}

fn write_pretty(out: &mut impl Write, record: &CalibrationRecord) -> std::io::Result<()> {
    let judge = &record.judge;
    writeln!(
        out,
        "judge {} ({}, thinking {}) of suite {} · identity {} · eval runs {}",
        printable(&judge.model),
        judge.provider,
        judge.thinking_level,
        printable(&judge.suite),
        judge.digest(),
        record.eval_runs.join(", ")
    )?;
    let left_out: Vec<String> = (record.left_out.iter())
        .map(|(why, count)| format!("{count} {why}"))
        .collect();
    let left_out = match left_out.is_empty() {
        true => String::new(),
        false => format!(" (left out: {})", left_out.join(", ")),
    };
    writeln!(out, "labelled turns: {}{left_out}", record.overall.labels)?;
    writeln!(out, "{}", agreement_line(&record.overall))?;
    let [[pp, pf], [fp, ff]] = record.overall.confusion;
    writeln!(out, "              judge pass  judge fail")?;
    writeln!(out, "  label pass  {pp:>10}  {pf:>10}")?;
    writeln!(out, "  label fail  {fp:>10}  {ff:>10}")?;
    if let Some(more) = record.overall.labels_needed.filter(|more| *more > 0) {
        writeln!(
            out,
            "{more} more labels (in the same proportions) would bring the interval within ±0.10"
        )?;
    }
    for (criterion, agreement) in &record.criteria {
        writeln!(
            out,
            "criterion \"{}\": {} labels · {}",
            printable(&promptlab::text::one_line(criterion, 80)),
            agreement.labels,
            agreement_line(agreement)
        )?;
    }
    for pair in &record.reviewers {
        let kappa = pair
            .kappa
            .map_or("kappa undefined".to_string(), |k| format!("kappa {k:.2}"));
        writeln!(
            out,
            "reviewers {} × {}: {kappa} on {} shared turns",
            printable(&pair.reviewers.0),
            printable(&pair.reviewers.1),
            pair.shared
        )?;
    }
    Ok(())
}

/// `agreement 88.1% · kappa 0.71 [0.48, 0.94] · true pass 90.0% · true fail 80.0%`
fn agreement_line(agreement: &Agreement) -> String {
    let percent =
        |share: Option<f64>| share.map_or("—".to_string(), |s| format!("{:.1}%", s * 100.0));
    let kappa = match (agreement.kappa, agreement.kappa_interval) {
        (Some(kappa), Some((low, high))) => format!("kappa {kappa:.2} [{low:.2}, {high:.2}]"),
        (Some(kappa), None) => format!(
            "kappa {kappa:.2} (no interval: {})",
            agreement.interval_null.as_deref().unwrap_or("undefined")
        ),
        (None, _) => format!(
            "kappa undefined: {}",
            agreement.kappa_null.as_deref().unwrap_or("no labels")
        ),
    };
    format!(
        "agreement {} · {kappa} · true pass {} · true fail {}",
        percent(agreement.agreement),
        percent(agreement.true_pass_rate),
        percent(agreement.true_fail_rate)
    )
}
