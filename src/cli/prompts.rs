//! `promptlab prompts show|list|fingerprint|diff`: what the model will be
//! told (`list` is in `prompts_list.rs`, `diff` in `prompts_diff.rs`).

use std::io::Write;
use std::path::PathBuf;

use chrono::NaiveDate;
use clap::{Args, Subcommand};

use promptlab::chat::prompt_report::{FingerprintReport, ShownPrompt};
use promptlab::chat::{AssembledPrompt, assemble_prompt, prompt_settings};
use promptlab::claims::ClaimStore;
use promptlab::digest::sha256_hex;
use promptlab::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};

use super::context::{ClaimArgs, ContextArgs, PromptArgs, parse_today, today_or_local};
use super::error::{CliError, Exit};
use super::output::write_json;
use super::prompt_tools::{tool_declarations, write_tools};
use promptlab::sink::Style;
use promptlab::text::printable;

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Examples:\n  promptlab prompts show --claim-id CLM-HH-0001 --overrides overrides/plain-spoken.yaml\n  promptlab prompts list\n  promptlab prompts diff default overrides/plain-spoken.yaml --claim-id CLM-HH-0001\n  promptlab prompts fingerprint overrides/plain-spoken.yaml"
)]
pub enum PromptsCommand {
    /// Show the assembled system prompt, block by block, with where each came from.
    Show(ShowArgs),
    /// List the prompt ids, quick actions and brands built into this binary.
    List(ListArgs),
    /// Print the fingerprint of override files, and which overrides apply.
    Fingerprint(FingerprintArgs),
    /// Diff the assembled prompts of two override sets, block by block.
    Diff(DiffArgs),
}

#[derive(Debug, Args)]
#[command(
    after_help = "Every override of each set is listed; one whose block is not in this context names the flag that brings it in (`not in this context: add --capability summarise`).\n\nExamples:\n  promptlab prompts diff default overrides/plain-spoken.yaml --claim-id CLM-HH-0001\n  promptlab prompts diff default overrides/plain-spoken.yaml --claim-id CLM-HH-0001 --capability summarise\n  promptlab prompts diff overrides/plain-spoken.yaml overrides/strict-sources.json --claim-id CLM-HH-0001 --json"
)]
pub struct DiffArgs {
    /// The first override set: a file, a folder, or `default` for the code defaults.
    pub a: String,
    /// The second override set, the same kinds.
    pub b: String,
    #[command(flatten)]
    pub claim: ClaimArgs,
    #[command(flatten)]
    pub context: ContextArgs,
    /// The date the claim brief gives as today (default: the local date).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub today: Option<NaiveDate>,
    /// Print the blocks and their diffs as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab prompts show --claim-id CLM-HH-0001\n  promptlab prompts show --claim-id CLM-HH-0001 --capability summarise --overrides overrides/plain-spoken.yaml\n  promptlab prompts show --claim-id CLM-HH-0001 --raw > system-prompt.txt"
)]
pub struct ShowArgs {
    /// Also print the tool declarations the model receives with the prompt
    /// (name, description, parameter schema); `--json` always has them.
    #[arg(long)]
    pub tools: bool,
    #[command(flatten)]
    pub claim: ClaimArgs,
    #[command(flatten)]
    pub prompt: PromptArgs,
    /// The date the claim brief gives as today (default: the local date).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub today: Option<NaiveDate>,
    /// Print exactly the system instruction the model receives, nothing else.
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// Print the blocks, fingerprint and ignored overrides as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab prompts list\n  promptlab prompts list --json | jq ."
)]
pub struct ListArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab prompts fingerprint overrides/plain-spoken.yaml\n  promptlab prompts fingerprint overrides/ --json"
)]
pub struct FingerprintArgs {
    /// Override files or folders, merged in order (later wins per id).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: PromptsCommand, store: &ClaimStore) -> Result<Exit, CliError> {
    match command {
        PromptsCommand::Show(args) => show(args, store),
        PromptsCommand::List(args) => super::prompts_list::list(args),
        PromptsCommand::Fingerprint(args) => fingerprint_command(args),
        PromptsCommand::Diff(args) => super::prompts_diff::diff(args, store),
    }
}

fn show(args: ShowArgs, store: &ClaimStore) -> Result<Exit, CliError> {
    let registry = PromptRegistry::embedded();
    let loaded = args.prompt.load(registry)?;
    let claim = args.claim.load(store)?;
    let settings = prompt_settings(&loaded.options, registry, &claim.claim)?;
    let prompt = assemble_prompt(&settings, &claim.claim, today_or_local(args.today));
    let system = prompt.system_text();
    let fingerprint = fingerprint(&loaded.resolved.applied);
    let overridden: Vec<&String> = loaded.resolved.applied.keys().collect();
    let mut out = std::io::stdout().lock();
    if args.raw {
        out.write_all(system.as_bytes())?;
    } else if args.json {
        let shown = ShownPrompt {
            claim_id: claim.claim.id.clone(),
            blocks: prompt.blocks.clone(),
            fingerprint: fingerprint.clone(),
            overridden: overridden.iter().map(|id| id.to_string()).collect(),
            ignored: loaded.resolved.ignored.clone(),
            system_sha256: sha256_hex(&system),
            characters: system.chars().count(),
            tools: tool_declarations(&loaded.options),
        };
        write_json(&mut out, &shown)?;
    } else {
        write_blocks(&mut out, &prompt, &loaded.overrides, Style::for_stdout())?;
        let overridden = if overridden.is_empty() {
            "none".to_string()
        } else {
            overridden
                .iter()
                .map(|id| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(
            out,
            "{}",
            Style::for_stdout().dim(&format!(
                "fingerprint {fingerprint} · overridden: {overridden} · {} blocks · {} characters · sha256 {}",
                prompt.blocks.len(),
                system.chars().count(),
                &sha256_hex(&system)[..12]
            ))
        )?;
        if args.tools {
            let tools = tool_declarations(&loaded.options);
            write_tools(&mut out, &tools, Style::for_stdout())?;
        }
    }
    out.flush()?;
    Ok(Exit::Success)
}

/// One header per block naming its position, id and source, then its text.
pub fn write_blocks(
    out: &mut impl Write,
    prompt: &AssembledPrompt,
    overrides: &OverrideSet,
    style: Style,
) -> std::io::Result<()> {
    for (index, block) in prompt.blocks.iter().enumerate() {
        let mut source = block.source.as_str().to_string();
        if let Some(file) = overrides
            .sources
            .get(&block.id)
            .filter(|_| source == "override")
        {
            source = format!("override from {file}");
        }
        let header = format!("── {} · {} · {source} ", index + 1, block.id);
        writeln!(out, "{}", style.cyan(&style.bold(&header)))?;
        // The text holds claim values and override files.
        writeln!(out, "{}\n", printable(&block.text))?;
    }
    Ok(())
}

fn fingerprint_command(args: FingerprintArgs) -> Result<Exit, CliError> {
    let registry = PromptRegistry::embedded();
    let set = OverrideSet::load(&args.paths)?;
    let resolved = resolve_overrides(&set.prompts, registry);
    let fingerprint = fingerprint(&resolved.applied);
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = FingerprintReport {
            fingerprint: fingerprint.clone(),
            applied: resolved.applied.keys().cloned().collect(),
            ignored: resolved.ignored.clone(),
            files: set.files.clone(),
        };
        write_json(&mut out, &report)?;
        return Ok(Exit::Success);
    }
    writeln!(out, "{fingerprint}")?;
    for id in resolved.applied.keys() {
        writeln!(out, "applied  {}", printable(id))?;
    }
    for ignored in &resolved.ignored {
        let hint = super::suggest::prompt_id_suffix(&ignored.id, PromptRegistry::embedded());
        let line = format!("ignored  {}: {}{hint}", ignored.id, ignored.reason);
        writeln!(out, "{}", printable(&line))?;
    }
    Ok(Exit::Success)
}
