//! `promptlab evals trend [--suite NAME]`: each variant's pass rate across
//! the suite's newest eval runs, oldest first, as a terminal sparkline (and
//! JSON), from the run index.

use std::io::Write;

use promptlab::index::RunIndex;
use promptlab::index::history::{Trend, TrendLine, TrendRun};
use promptlab::sink::printable;

use super::error::{CliError, Exit};
use super::evals::{TrendArgs, local_time, rate};
use super::output::write_json;

pub fn trend(index: &RunIndex, args: &TrendArgs) -> Result<Exit, CliError> {
    let Some(suite) = super::evals::suite_or_latest(index, args.suite.as_deref())? else {
        writeln!(
            std::io::stdout().lock(),
            "no eval runs recorded in `{}`",
            index.root().display()
        )?;
        return Ok(Exit::Success);
    };
    let mut runs = index
        .eval_runs(Some(&suite), None, args.last as usize)
        .map_err(CliError::failed)?;
    runs.reverse();
    let mut names: Vec<String> = runs
        .iter()
        .flat_map(|run| run.variants.iter().map(|v| v.variant.clone()))
        .collect();
    names.sort();
    names.dedup();
    let variants = names
        .into_iter()
        .map(|variant| {
            let pass_rates: Vec<Option<f64>> = runs
                .iter()
                .map(|run| {
                    run.variants
                        .iter()
                        .find(|v| v.variant == variant)
                        .and_then(|v| v.pass_rate)
                })
                .collect();
            TrendLine {
                sparkline: sparkline(&pass_rates),
                variant,
                pass_rates,
            }
        })
        .collect();
    let trend = Trend {
        suite,
        runs: runs
            .iter()
            .map(|run| TrendRun {
                id: run.id.clone(),
                started_at: run.started_at,
            })
            .collect(),
        variants,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &trend)?;
        return Ok(Exit::Success);
    }
    write_trend(&mut out, &trend)?;
    Ok(Exit::Success)
}

/// The title line, then a line per variant: its sparkline, first → last.
fn write_trend(out: &mut impl Write, trend: &Trend) -> Result<(), CliError> {
    let (Some(first), Some(last)) = (trend.runs.first(), trend.runs.last()) else {
        writeln!(
            out,
            "no eval runs of suite {} recorded",
            printable(&trend.suite)
        )?;
        return Ok(());
    };
    writeln!(
        out,
        "{} · {} eval runs, {} ({}) → {} ({})",
        printable(&trend.suite),
        trend.runs.len(),
        local_time(first.started_at),
        first.id,
        local_time(last.started_at),
        last.id
    )?;
    let width = trend
        .variants
        .iter()
        .map(|v| v.variant.chars().count())
        .max()
        .unwrap_or(0);
    for line in &trend.variants {
        let known: Vec<f64> = line.pass_rates.iter().flatten().copied().collect();
        let ends = match (known.first(), known.last()) {
            (Some(first), Some(last)) => format!("{} → {}", rate(Some(*first)), rate(Some(*last))),
            _ => "–".to_string(),
        };
        writeln!(
            out,
            "{:width$}  {}  {ends}",
            printable(&line.variant),
            line.sparkline
        )?;
    }
    Ok(())
}

/// One block per run, its height the pass rate (0 % `▁` … 100 % `█`); a
/// space where the run had no verdict for the variant.
pub fn sparkline(rates: &[Option<f64>]) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    rates
        .iter()
        .map(|rate| match rate {
            Some(rate) if rate.is_finite() => {
                let level = (rate.clamp(0.0, 1.0) * 7.0).round() as usize;
                BLOCKS[level.min(7)]
            }
            _ => ' ',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sparkline_runs_from_the_lowest_block_to_the_highest() {
        assert_eq!(sparkline(&[Some(0.0), Some(0.5), None, Some(1.0)]), "▁▅ █");
        assert_eq!(sparkline(&[Some(f64::NAN), Some(7.0)]), " █");
    }
}
