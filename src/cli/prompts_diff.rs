//! `promptlab prompts diff A B`: the assembled prompts of two override sets,
//! block by block, as unified hunks; and every override of each set, with
//! those whose block is not in this context named with the flag that would
//! bring it in (an override is easy to forget when its block is not shown).

use std::io::Write;
use std::path::PathBuf;

use chrono::NaiveDate;

use promptlab::chat::PromptBlock;
use promptlab::chat::block_context::BlockCondition;
use promptlab::chat::prompt_diff::{DiffSideOf, diff_report, diff_side, unified_diff};
use promptlab::chat::prompt_report::{OverrideInContext, OverrideStatus};
use promptlab::claims::{ClaimStore, LoadedClaim};
use promptlab::prompts::{OverrideSet, PromptRegistry};
use promptlab::sink::{Style, printable};

use super::context::{ContextArgs, today_or_local};
use super::error::{CliError, Exit};
use super::output::{list_or_none, write_json};
use super::prompts::DiffArgs;

/// One side of `prompts diff`: `default`, or override files.
fn side(
    spec: &str,
    context: &ContextArgs,
    claim: &LoadedClaim,
    today: NaiveDate,
) -> Result<DiffSideOf, CliError> {
    let registry = PromptRegistry::embedded();
    let overrides = if spec == "default" {
        OverrideSet::default()
    } else {
        OverrideSet::load(&[PathBuf::from(spec)])?
    };
    let options = context.options(overrides.prompts);
    options.validate(registry)?;
    let flag = |condition: &BlockCondition| flag_for(condition, context);
    let side = diff_side(spec, &options, registry, &claim.claim, today, &flag)?;
    for ignored in &side.ignored {
        let hint = super::suggest::prompt_id_suffix(&ignored.id, registry);
        promptlab::text::eprintln_or_drop!("warning: {spec}: {ignored}{hint}");
    }
    Ok(side)
}

/// The flag that meets `condition`, said as the change to this command.
fn flag_for(condition: &BlockCondition, context: &ContextArgs) -> String {
    match condition {
        BlockCondition::Always => "always in the prompt".to_string(),
        BlockCondition::ScreenActions => "add --screen-actions".to_string(),
        BlockCondition::Voice => "add --voice".to_string(),
        BlockCondition::Locale(locale) => {
            let verb = if context.locale.is_some() {
                "use"
            } else {
                "add"
            };
            format!("{verb} --locale {locale}")
        }
        BlockCondition::Capability(id) => {
            let verb = if context.capability.is_some() {
                "use"
            } else {
                "add"
            };
            format!("{verb} --capability {id}")
        }
        BlockCondition::FreeChat => "drop --capability (free chat)".to_string(),
    }
}

pub fn diff(args: DiffArgs, store: &ClaimStore) -> Result<Exit, CliError> {
    let claim = args.claim.load(store)?;
    let today = today_or_local(args.today);
    let a = side(&args.a, &args.context, &claim, today)?;
    let b = side(&args.b, &args.context, &claim, today)?;
    // The same context gives both sides the same blocks; only their texts differ.
    let blocks: Vec<(&PromptBlock, &PromptBlock)> =
        a.prompt.blocks.iter().zip(&b.prompt.blocks).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &diff_report(&a, &b))?;
        return Ok(Exit::Success);
    }
    let style = Style::for_stdout();
    let ids = |changed: bool| -> Vec<&str> {
        blocks
            .iter()
            .filter(|(x, y)| (x.text != y.text) == changed)
            .map(|(x, _)| x.id.as_str())
            .collect()
    };
    writeln!(out, "A: {} (fingerprint {})", a.label, a.fingerprint)?;
    writeln!(out, "B: {} (fingerprint {})", b.label, b.fingerprint)?;
    write_overrides(&mut out, "A", &a.overrides, style)?;
    write_overrides(&mut out, "B", &b.overrides, style)?;
    writeln!(out, "changed: {}", list_or_none(&ids(true)))?;
    writeln!(out, "unchanged: {}", list_or_none(&ids(false)))?;
    for (x, y) in blocks.iter().filter(|(x, y)| x.text != y.text) {
        let header = format!(
            "── {} ({} → {}) ",
            x.id,
            x.source.as_str(),
            y.source.as_str()
        );
        writeln!(out, "\n{}", style.cyan(&style.bold(&header)))?;
        write!(
            out,
            "{}",
            coloured(&unified_diff(&x.id, &x.text, &y.text), style)
        )?;
    }
    Ok(Exit::Success)
}

/// `overrides in B (2):` and a line per override: in this context, not in
/// it and what would bring it in, or ignored and why.
fn write_overrides(
    out: &mut impl Write,
    side: &str,
    overrides: &[OverrideInContext],
    style: Style,
) -> std::io::Result<()> {
    if overrides.is_empty() {
        return writeln!(out, "overrides in {side}: none");
    }
    writeln!(out, "overrides in {side} ({}):", overrides.len())?;
    let width = overrides
        .iter()
        .map(|o| o.id.chars().count())
        .max()
        .unwrap_or(0);
    for entry in overrides {
        let id = printable(&entry.id);
        let line = match (&entry.status, &entry.bring_in, &entry.reason) {
            (OverrideStatus::InContext, ..) => format!("  {id:width$}  in this context"),
            (OverrideStatus::NotInContext, Some(flag), _) => {
                style.yellow(&format!("  {id:width$}  not in this context: {flag}"))
            }
            (OverrideStatus::NotInContext, None, _) => {
                style.yellow(&format!("  {id:width$}  not in this context"))
            }
            (OverrideStatus::Ignored, _, reason) => {
                let reason = reason.as_ref().map(|r| r.to_string()).unwrap_or_default();
                let hint = super::suggest::prompt_id_suffix(&entry.id, PromptRegistry::embedded());
                style.red(&format!("  {id:width$}  ignored: {reason}{hint}"))
            }
        };
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// `unified_diff`'s lines coloured by their first character: `-` red,
/// `+` green, `@@` cyan (the two header lines stay plain).
fn coloured(diff: &str, style: Style) -> String {
    let mut text = String::with_capacity(diff.len());
    for (index, line) in diff.lines().enumerate() {
        let rendered = match line.as_bytes().first() {
            _ if index < 2 => line.to_string(),
            Some(b'-') => style.red(line),
            Some(b'+') => style.green(line),
            Some(b'@') => style.cyan(line),
            _ => line.to_string(),
        };
        text.push_str(&rendered);
        text.push('\n');
    }
    text
}
