//! The `promptlab` binary: parse arguments, run the command, map the outcome
//! to the documented exit code.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::error::CliError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(exit) => exit.code(),
        Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", error.report());
            error.code()
        }
    }
}
