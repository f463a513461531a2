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
    let tagged = plan.suite.suite.cases.iter().any(|c| !c.tags.is_empty());
    if format == EvalFormat::Pretty {
        // The tags column only when a case has tags: untagged suites list
        // as they always did.
        let tags = if tagged { "\ttags" } else { "" };
        writeln!(out, "variant\tmodel\tclaim\tcase\tsample{tags}")?;
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
            EvalFormat::Pretty => {
                let tags = match tagged {
                    true => format!("\t{}", plan.suite.suite.cases[spec.case].tags.join(",")),
                    false => String::new(),
                };
                writeln!(
                    out,
                    "{}\t{model} · {level}\t{}\t{}\t{}{tags}",
                    place.variant, place.claim, place.case, place.sample
                )?
            }
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
