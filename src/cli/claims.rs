//! `promptlab claims list|show|brief|validate`: the claim store.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use clap::{Args, Subcommand};

use promptlab::chat::build_claim_brief;
use promptlab::claims::row::{ClaimRow, TABLE_HEADER};
use promptlab::claims::sections::{section, section_names};
use promptlab::claims::store::StoreEntry;
use promptlab::claims::{ClaimError, ClaimStore, LoadedClaim, load_claim_file};

use super::context::{parse_today, today_or_local};
use super::error::{CliError, Exit};
use super::output::{plural, write_hidden, write_json};
use promptlab::table::{Fit, fit_table, terminal_width};

/// id, line of business, status, country, claimant, incident, schedule, docs,
/// risk flags: the status, the claimant and the risk flags are cut short
/// first; then the counts and the country go.
const TABLE_FITS: [Fit; 9] = [
    Fit::Keep,
    Fit::Free,
    Fit::Free,
    Fit::Drop(3),
    Fit::Free,
    Fit::Keep,
    Fit::Drop(2),
    Fit::Drop(1),
    Fit::Free,
];
use promptlab::sink::{Style, printable};

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Examples:\n  promptlab claims list\n  promptlab claims show CLM-HH-0001 --section policy\n  promptlab claims brief CLM-HH-0001\n  promptlab claims validate"
)]
pub enum ClaimsCommand {
    /// List the claims in the store as a table.
    List(ListArgs),
    /// Show a claim (or one section of it) as JSON.
    Show(ShowArgs),
    /// Print the claim brief that goes into the system prompt.
    Brief(BriefArgs),
    /// Check claim files; every claim in the store when no path is given.
    Validate(ValidateArgs),
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab claims list\n  promptlab claims list --json | jq '.[].id'"
)]
pub struct ListArgs {
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab claims show CLM-HH-0001\n  promptlab claims show CLM-HH-0001 --section financials"
)]
pub struct ShowArgs {
    /// A claim id in the store, or a path to a claim file.
    pub claim: String,
    /// Show one section, as `get_claim_section` returns it.
    #[arg(long, value_name = "NAME")]
    pub section: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  promptlab claims brief CLM-HH-0001")]
pub struct BriefArgs {
    /// A claim id in the store, or a path to a claim file.
    pub claim: String,
    /// The date the brief gives as today (default: the local date).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub today: Option<NaiveDate>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab claims validate\n  promptlab claims validate my-claim.yaml"
)]
pub struct ValidateArgs {
    /// Claim files to check (default: every claim in the store).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

pub fn run(command: ClaimsCommand, store: &ClaimStore) -> Result<Exit, CliError> {
    match command {
        ClaimsCommand::List(args) => list(args, store),
        ClaimsCommand::Show(args) => show(args, store),
        ClaimsCommand::Brief(args) => brief(args, store),
        ClaimsCommand::Validate(args) => validate(args, store),
    }
}

/// A claim named on the command line: an id in the store, else a file path.
fn resolve(claim: &str, store: &ClaimStore) -> Result<LoadedClaim, CliError> {
    if store.locate(claim).is_some() {
        return Ok(store.load(claim)?);
    }
    let path = Path::new(claim);
    if path.is_file() {
        return Ok(load_claim_file(path)?);
    }
    Err(ClaimError::NotFound(claim.to_string()).into())
}

fn list(args: ListArgs, store: &ClaimStore) -> Result<Exit, CliError> {
    let mut claims = Vec::new();
    let mut invalid = 0;
    for entry in store.entries()? {
        match store.load_entry(&entry) {
            Ok(loaded) => claims.push(loaded.claim),
            Err(error) => {
                invalid += 1;
                promptlab::text::eprintln_or_drop!(
                    "warning: skipped {}",
                    printable(&error.to_string())
                );
            }
        }
    }
    let rows: Vec<ClaimRow> = claims.iter().map(ClaimRow::of).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &rows)?;
        return Ok(Exit::Success);
    }
    let cells: Vec<[String; 9]> = rows
        .iter()
        .map(|row| row.cells().map(|cell| printable(&cell)))
        .collect();
    let fitted = fit_table(TABLE_HEADER, TABLE_FITS, &cells, terminal_width());
    writeln!(out, "{fitted}")?;
    write_hidden(&mut out, &fitted.hidden, "--json")?;
    let summary = match invalid {
        0 => format!(
            "{} {} in {}",
            claims.len(),
            plural(claims.len(), "claim", "claims"),
            store.dir().display()
        ),
        n => format!(
            "{} {} in {} ({n} invalid, skipped)",
            claims.len(),
            plural(claims.len(), "claim", "claims"),
            store.dir().display()
        ),
    };
    writeln!(out, "{}", Style::for_stdout().dim(&summary))?;
    Ok(Exit::Success)
}

fn show(args: ShowArgs, store: &ClaimStore) -> Result<Exit, CliError> {
    let loaded = resolve(&args.claim, store)?;
    let value = match &args.section {
        Some(name) => section(&loaded.claim, name).ok_or_else(|| {
            CliError::usage(format!(
                "claim {} has no section `{name}` (it has: {})",
                loaded.claim.id,
                section_names(&loaded.claim).join(", ")
            ))
        })?,
        None => serde_json::to_value(&loaded.claim).unwrap_or_default(),
    };
    let mut out = std::io::stdout().lock();
    write_json(&mut out, &value)?;
    Ok(Exit::Success)
}

fn brief(args: BriefArgs, store: &ClaimStore) -> Result<Exit, CliError> {
    let loaded = resolve(&args.claim, store)?;
    let brief = build_claim_brief(&loaded.claim, today_or_local(args.today));
    writeln!(std::io::stdout().lock(), "{}", printable(&brief))?;
    Ok(Exit::Success)
}

fn validate(args: ValidateArgs, store: &ClaimStore) -> Result<Exit, CliError> {
    // From the store, each file goes through the store's own checks (its id
    // is its file name; no link out of the store).
    let entries: Vec<(PathBuf, Option<StoreEntry>)> = if args.paths.is_empty() {
        store
            .entries()?
            .into_iter()
            .map(|entry| (entry.path.clone(), Some(entry)))
            .collect()
    } else {
        args.paths.into_iter().map(|path| (path, None)).collect()
    };
    let mut invalid = 0;
    let mut seen_ids = std::collections::BTreeMap::new();
    for (path, entry) in &entries {
        let loaded = match entry {
            Some(entry) => store.load_entry(entry),
            None => load_claim_file(path),
        };
        let problem = match loaded {
            Err(error) => Some(error.to_string()),
            Ok(loaded) => seen_ids
                .insert(loaded.claim.id.clone(), path.display().to_string())
                .map(|other| {
                    format!(
                        "invalid claim `{}`: field `id`: `{}` is also the id of `{other}`",
                        path.display(),
                        printable(&loaded.claim.id)
                    )
                }),
        };
        if let Some(problem) = problem {
            invalid += 1;
            // Every claim is still checked when nobody reads the list.
            let printed = writeln!(std::io::stdout(), "{}", printable(&problem));
            crate::cli::error::unless_stdout_closed(printed.map_err(CliError::from))?;
        }
    }
    let style = Style::for_stdout();
    if invalid == 0 {
        promptlab::text::eprintln_or_drop!(
            "{}",
            style.green(&format!("{} claims valid", entries.len()))
        );
        Ok(Exit::Success)
    } else {
        promptlab::text::eprintln_or_drop!(
            "{}",
            style.red(&format!("{invalid} of {} claims invalid", entries.len()))
        );
        Ok(Exit::Failure)
    }
}
