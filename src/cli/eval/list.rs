//! `eval --list`: the planned turns, without running them.

use std::io::Write;

use promptlab::eval::EvalPlan;
use promptlab::eval::report::{EvalRecord, TurnPlace, shard_line};

use super::EvalFormat;
use super::progress::write_record;
use crate::cli::error::CliError;

/// `--list`: the planned turns, one a line (or NDJSON), and their count.
pub fn print_list(plan: &EvalPlan, format: EvalFormat) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    let mut count = 0usize;
    if format == EvalFormat::Pretty {
        writeln!(out, "variant\tmodel\tclaim\tcase\tsample\ttags")?;
    }
    for spec in plan.selected() {
        count += 1;
        let place = TurnPlace::of(plan, &spec);
        let settings = &plan.matrix.variants[spec.variant].model;
        let (model, level) = (&settings.model, settings.thinking_level.as_str());
        match format {
            EvalFormat::Ndjson => {
                let record = EvalRecord::Planned {
                    place,
                    model: model.clone(),
                    thinking_level: settings.thinking_level,
                    tags: plan.suite.suite.cases[spec.case].tags.clone(),
                };
                write_record(&mut out, &record)?;
            }
            EvalFormat::Pretty => writeln!(
                out,
                "{}\t{model} · {level}\t{}\t{}\t{}\t{}",
                place.variant,
                place.claim,
                place.case,
                place.sample,
                plan.suite.suite.cases[spec.case].tags.join(",")
            )?,
        }
    }
    if format == EvalFormat::Pretty {
        let shard = plan
            .selection
            .shard
            .map(|s| format!(" ({})", shard_line(s, count, plan.unsharded_count())))
            .unwrap_or_default();
        writeln!(out, "{count} turns planned{shard}; nothing was run")?;
    }
    Ok(())
}
