//! The `promptlab` binary: parse arguments, run the command, map the outcome
//! to the documented exit code.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::error::CliError;
use promptlab::claims::ClaimStore;
use promptlab::prompts::PromptRegistry;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let store = ClaimStore::new(&cli.stores.claims_dir);
    let runs_dir = cli.stores.runs_dir.clone();
    match cli::run(cli) {
        Ok(exit) => exit.code(),
        Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(error @ CliError::StdoutClosed { .. }) => {
            // stderr may be closed too (`2>&-`): then say nothing.
            promptlab::text::eprintln_or_drop!("{error}");
            error.code()
        }
        Err(error) => {
            // Messages quote their input, which may hold control characters.
            let report = promptlab::text::printable(&error.report());
            promptlab::text::eprintln_or_drop!("error: {report}");
            let registry = PromptRegistry::embedded();
            if let Some(hint) = cli::suggest::for_error(&error, &store, &runs_dir, registry) {
                promptlab::text::eprintln_or_drop!("hint: {}", promptlab::text::printable(&hint));
            }
            error.code()
        }
    }
}
