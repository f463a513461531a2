//! `promptlab cases inject`: a prompt-injection suite generated from claims
//! in the store (`docs/injection.md`).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use promptlab::cases::render::{GeneratedFile, render};
use promptlab::cases::techniques::Technique;
use promptlab::cases::{InjectOptions, parse_techniques, plan_cases};
use promptlab::claims::ClaimStore;
use promptlab::claims::model::Claim;
use promptlab::whole_file::{Durability, Staged};

use super::error::{CliError, Exit};

#[derive(Debug, Subcommand)]
#[command(
    after_help = "Examples:\n  promptlab cases inject --claim CLM-HH-0001 --out-dir inj\n  promptlab --claims-dir inj/claims eval inj/suite.yaml --by tag\n  promptlab cases from-runs --labelled fail --to suites/regressions.jsonl"
)]
pub enum CasesCommand {
    /// Write a prompt-injection suite: derived claims with planted payloads, the suite, a README.
    Inject(InjectArgs),
    /// Append recorded turns (named, labelled fail, or voted down) as regression cases to a
    /// JSONL dataset a suite reads with casesFrom.
    FromRuns(super::cases_from_runs::FromRunsArgs),
}

#[derive(Debug, Args)]
#[command(
    after_help = "Techniques: plain, fake-frame, authority, confirm-cover, reveal-prompt, screen-hijack, encoded, other-language, addressed-note (docs/injection.md).\n\nExamples:\n  promptlab cases inject --claim CLM-HH-0001 --out-dir inj\n  promptlab cases inject --all --techniques plain,encoded --seed 7 --out-dir inj\n  promptlab --claims-dir inj/claims eval inj/suite.yaml --by tag"
)]
pub struct InjectArgs {
    /// A claim id in the store to derive cases from (repeatable).
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub claim: Vec<String>,
    /// Every claim in the store.
    #[arg(long)]
    pub all: bool,
    /// The folder to write: claims/, suite.yaml, README.md (and scripts/).
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
    /// Only these techniques, comma-separated (default: all).
    #[arg(long, value_name = "ID,…")]
    pub techniques: Option<String>,
    /// Picks the canaries and where each technique goes; the same seed gives the same files.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Add a rubric criterion to every case (needs a judge when the suite runs).
    #[arg(long)]
    pub judge: bool,
    /// Also write an obeying and a refusing scripted model per case (suite.obeying.yaml uses the first).
    #[arg(long)]
    pub with_scripts: bool,
}

pub fn run(command: CasesCommand, store: &ClaimStore, runs_dir: &Path) -> Result<Exit, CliError> {
    match command {
        CasesCommand::Inject(args) => inject(args, store),
        CasesCommand::FromRuns(args) => super::cases_from_runs::run(args, runs_dir),
    }
}

fn inject(args: InjectArgs, store: &ClaimStore) -> Result<Exit, CliError> {
    let techniques: Vec<&'static Technique> = match &args.techniques {
        Some(list) => parse_techniques(list)
            .map_err(|message| CliError::usage(format!("--techniques: {message}")))?,
        None => Vec::new(),
    };
    let claims = chosen_claims(&args, store)?;
    let options = InjectOptions {
        techniques: techniques.clone(),
        seed: args.seed,
        judge: args.judge,
        with_scripts: args.with_scripts,
    };
    let cases = plan_cases(&claims, &options).map_err(|e| CliError::usage(e.to_string()))?;
    let files = render(&cases, &options, &command_line(&args, &techniques));
    write_all(&args.out_dir, &files)?;
    let dir = args.out_dir.display();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "wrote {} {} from {} {} to {dir}\nrun: promptlab --claims-dir {dir}/claims eval {dir}/suite.yaml --by tag",
        cases.len(),
        super::output::plural(cases.len(), "case", "cases"),
        claims.len(),
        super::output::plural(claims.len(), "claim", "claims"),
    )?;
    Ok(Exit::Success)
}

/// The claims named, or every one in the store, in id order.
fn chosen_claims(args: &InjectArgs, store: &ClaimStore) -> Result<Vec<Claim>, CliError> {
    let ids: Vec<String> = if args.all {
        store.entries()?.into_iter().map(|entry| entry.id).collect()
    } else {
        let mut ids = args.claim.clone();
        ids.sort();
        ids.dedup();
        ids
    };
    ids.iter()
        .map(|id| Ok(store.load(id)?.claim))
        .collect::<Result<_, CliError>>()
}

/// Every file written beside its place first, then all renamed into it: a
/// failure (a full disk, a folder where a file goes) leaves the folder as
/// it was, never a new suite beside the claims of an older run.
fn write_all(out_dir: &Path, files: &[GeneratedFile]) -> Result<(), CliError> {
    check_folder(out_dir)?;
    for file in files {
        let path = out_dir.join(&file.path);
        if path.symlink_metadata().is_ok_and(|meta| !meta.is_file()) {
            return Err(CliError::failed(format!(
                "cannot write `{}`: something other than a file is there",
                path.display()
            )));
        }
        // Read only to tell whose it is: a README of one's own in the
        // folder is refused, never replaced without a word.
        let existing = promptlab::input::read_input_text(&path).ok();
        if existing.is_some_and(|text| !promptlab::cases::render::replaces(&file.path, &text)) {
            return Err(CliError::failed(format!(
                "cannot write `{}`: a file not written by `cases inject` is there, and it would be \
                 replaced (move it, or choose another --out-dir)",
                path.display()
            )));
        }
    }
    // Every file staged before any is put in place; a staged file not put
    // in place is removed when dropped.
    let staged = files
        .iter()
        .map(|file| {
            let path = out_dir.join(&file.path);
            Ok((stage(&path, &file.text)?, path))
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    staged.into_iter().try_for_each(|(staged, path)| {
        staged
            .replace(&path, Durability::Unsynced)
            .map_err(|e| CliError::failed(format!("cannot write `{}`: {e}", path.display())))
    })
}

/// The output folder, or the links that lead to it, is a folder or not
/// there yet: a link to nothing would make `create_dir_all` say only
/// `File exists`, naming neither the link nor where it leads.
fn check_folder(out_dir: &Path) -> Result<(), CliError> {
    let mut folder = Some(out_dir);
    while let Some(path) = folder {
        let is_link = path.symlink_metadata().is_ok_and(|meta| meta.is_symlink());
        if is_link && std::fs::metadata(path).is_err() {
            let target = std::fs::read_link(path).unwrap_or_default();
            return Err(CliError::failed(format!(
                "cannot write into `{}`: it is a symbolic link to `{}`, which is not there",
                path.display(),
                target.display()
            )));
        }
        folder = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty());
    }
    Ok(())
}

/// `text` in a new temporary beside `path` (its folder made if need be),
/// staged by the report files' one rule (`report_file::stage`).
fn stage(path: &Path, text: &str) -> Result<Staged, CliError> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| CliError::failed(format!("cannot create `{}`: {e}", parent.display())))?;
    super::report_file::stage(path, |out| {
        out.write_all(text.as_bytes()).map_err(|e| e.to_string())
    })
    .map_err(|e| CliError::failed(format!("cannot write `{}`: {e}", path.display())))
}

/// The command that made the folder, as the suite and README record it.
fn command_line(args: &InjectArgs, techniques: &[&Technique]) -> String {
    let mut words = vec!["promptlab cases inject".to_string()];
    if args.all {
        words.push("--all".into());
    }
    let mut ids = args.claim.clone();
    ids.sort();
    ids.dedup();
    words.extend(ids.iter().map(|id| format!("--claim {id}")));
    if !techniques.is_empty() {
        let ids: Vec<&str> = techniques.iter().map(|t| t.id).collect();
        words.push(format!("--techniques {}", ids.join(",")));
    }
    words.push(format!("--seed {}", args.seed));
    if args.judge {
        words.push("--judge".into());
    }
    if args.with_scripts {
        words.push("--with-scripts".into());
    }
    words.push(format!("--out-dir {}", args.out_dir.display()));
    words.join(" ")
}
