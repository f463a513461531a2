//! `promptlab prompts diff A B`: the assembled prompts of two override sets,
//! block by block, as unified hunks; and every override of each set, with
//! those whose block is not in this context named with the flag that would
//! bring it in (an override is easy to forget when its block is not shown).

use std::io::Write;
use std::path::PathBuf;

use chrono::NaiveDate;

use promptlab::chat::block_context::{BlockCondition, block_condition};
use promptlab::chat::prompt_report::{
    BlockDiff, DiffSide, OverrideInContext, OverrideStatus, PromptDiff,
};
use promptlab::chat::{AssembledPrompt, PromptBlock, assemble_prompt, prompt_settings};
use promptlab::claims::{ClaimStore, LoadedClaim};
use promptlab::digest::sha256_hex;
use promptlab::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};
use promptlab::sink::{Style, printable};

use super::context::{ContextArgs, today_or_local};
use super::error::{CliError, Exit};
use super::output::{list_or_none, write_json};
use super::prompts::DiffArgs;

/// One side of `prompts diff`: its overrides, fingerprint and assembled prompt.
struct DiffSideOf {
    label: String,
    fingerprint: String,
    prompt: AssembledPrompt,
    overrides: Vec<OverrideInContext>,
}

fn diff_side(
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
    let options = context.options(overrides.prompts.clone());
    options.validate(registry)?;
    let resolved = resolve_overrides(&options.overrides, registry);
    for ignored in &resolved.ignored {
        let hint = super::suggest::prompt_id_suffix(&ignored.id, registry);
        eprintln!("warning: {spec}: {ignored}{hint}");
    }
    let settings = prompt_settings(&options, registry, &claim.claim)?;
    let prompt = assemble_prompt(&settings, &claim.claim, today);
    let overrides = overrides
        .prompts
        .keys()
        .map(|id| {
            let ignored = resolved.ignored.iter().find(|i| &i.id == id);
            override_in_context(id, ignored.map(|i| &i.reason), &prompt, context)
        })
        .collect();
    Ok(DiffSideOf {
        label: spec.to_string(),
        fingerprint: fingerprint(&resolved.applied),
        prompt,
        overrides,
    })
}

/// Where override `id` stands in this context: applied to a block of the
/// prompt, applied to a block this context leaves out, or ignored.
fn override_in_context(
    id: &str,
    ignored: Option<&promptlab::prompts::overrides::UnusableReason>,
    prompt: &AssembledPrompt,
    context: &ContextArgs,
) -> OverrideInContext {
    let registry = PromptRegistry::embedded();
    let (status, bring_in) = if ignored.is_some() {
        (OverrideStatus::Ignored, None)
    } else if prompt.blocks.iter().any(|block| block.id == id) {
        (OverrideStatus::InContext, None)
    } else {
        let flag = block_condition(id, registry).map(|condition| flag_for(&condition, context));
        (OverrideStatus::NotInContext, flag)
    };
    OverrideInContext {
        id: id.to_string(),
        status,
        bring_in,
        reason: ignored.cloned(),
    }
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
    let a = diff_side(&args.a, &args.context, &claim, today)?;
    let b = diff_side(&args.b, &args.context, &claim, today)?;
    // The same context gives both sides the same blocks; only their texts differ.
    let blocks: Vec<(&PromptBlock, &PromptBlock)> =
        a.prompt.blocks.iter().zip(&b.prompt.blocks).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &diff_report(&a, &b, &blocks))?;
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
        write!(out, "{}", unified(&x.id, &x.text, &y.text, style))?;
    }
    Ok(Exit::Success)
}

fn diff_report(
    a: &DiffSideOf,
    b: &DiffSideOf,
    blocks: &[(&PromptBlock, &PromptBlock)],
) -> PromptDiff {
    let side = |side: &DiffSideOf| DiffSide {
        label: side.label.clone(),
        fingerprint: side.fingerprint.clone(),
        system_sha256: sha256_hex(side.prompt.system_text()),
        overrides: side.overrides.clone(),
    };
    PromptDiff {
        a: side(a),
        b: side(b),
        blocks: blocks
            .iter()
            .map(|(x, y)| BlockDiff {
                id: x.id.clone(),
                changed: x.text != y.text,
                source_a: x.source,
                source_b: y.source,
                diff: (x.text != y.text).then(|| unified(&x.id, &x.text, &y.text, Style::plain())),
            })
            .collect(),
    }
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

/// A line diff with three lines of context, `-` and `+` coloured.
fn unified(id: &str, old: &str, new: &str, style: Style) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut text = format!("--- a/{id}\n+++ b/{id}\n");
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        text.push_str(&style.cyan(&hunk.header().to_string()));
        text.push('\n');
        for change in hunk.iter_changes() {
            let line = change.value().trim_end_matches('\n');
            let rendered = match change.tag() {
                similar::ChangeTag::Delete => style.red(&format!("-{line}")),
                similar::ChangeTag::Insert => style.green(&format!("+{line}")),
                similar::ChangeTag::Equal => format!(" {line}"),
            };
            text.push_str(&rendered);
            text.push('\n');
            if change.missing_newline() {
                text.push_str("\\ No newline at end of file\n");
            }
        }
    }
    text
}
