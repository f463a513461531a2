//! Errors that reach the user, typed from the module that raised them up to
//! here, and the one rule that turns each into a documented exit code
//! (SPEC §5; named as cargo-nextest names its codes).

use std::io;
use std::process::ExitCode;

use promptlab::chat::PromptSetupError;
use promptlab::chat::request::RequestError;
use promptlab::claims::ClaimError;
use promptlab::compare::CompareError;
use promptlab::eval::SuiteError;
use promptlab::prompts::overrides::OverrideError;
use promptlab::provider::ProviderError;
use promptlab::provider::script::ScriptError;
use promptlab::report::ReportError;
use promptlab::runs::replay::ReplayRequestError;
use promptlab::runs::store::RunLogError;
use promptlab::worker::WorkerError;

pub use promptlab::exit::{Exit, exit_code};

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error(transparent)]
    Overrides(#[from] OverrideError),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error(transparent)]
    PromptSetup(#[from] PromptSetupError),
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error(transparent)]
    Script(#[from] ScriptError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    RunLog(#[from] RunLogError),
    #[error(transparent)]
    Replay(#[from] ReplayRequestError),
    #[error(transparent)]
    Compare(#[from] CompareError),
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    Worker(#[from] WorkerError),
    /// A flag or an input the command itself found wrong: exit 2.
    #[error("{0}")]
    Usage(String),
    /// The command could not do its work: exit 1.
    #[error("{0}")]
    Failed(String),
    /// stdout was closed under us (`| head`) while a listing was printed:
    /// exit quietly with 0, as ripgrep does.
    #[error("broken pipe")]
    BrokenPipe,
    /// stdout was closed while turns ran, so their verdict was never
    /// reached: exit 141, saying so in one line where stderr is open.
    #[error("stdout closed: {} cancelled", turns_phrase(*cancelled))]
    StdoutClosed { cancelled: usize },
    #[error(transparent)]
    Io(io::Error),
}

impl CliError {
    pub fn usage(message: impl ToString) -> Self {
        CliError::Usage(message.to_string())
    }

    pub fn failed(message: impl ToString) -> Self {
        CliError::Failed(message.to_string())
    }

    /// The one rule: what each kind of error means as an exit code.
    pub fn exit_code(&self) -> u8 {
        use exit_code::{FAILURE, OK, USAGE};
        match self {
            CliError::BrokenPipe => OK,
            CliError::StdoutClosed { .. } => exit_code::STDOUT_CLOSED,
            CliError::Usage(_)
            | CliError::Request(_)
            | CliError::Overrides(OverrideError::Invalid { .. } | OverrideError::EmptyFolder(_))
            | CliError::Suite(SuiteError::Invalid { .. } | SuiteError::Rule { .. })
            | CliError::Script(ScriptError::Invalid { .. })
            | CliError::PromptSetup(PromptSetupError::UnknownBrand(_))
            | CliError::Claim(ClaimError::Invalid { .. })
            | CliError::RunLog(
                RunLogError::Invalid { .. }
                | RunLogError::Refused { .. }
                | RunLogError::NotFound(_)
                | RunLogError::Ambiguous { .. },
            )
            | CliError::Compare(_)
            | CliError::Worker(WorkerError::Endpoint(_) | WorkerError::Token(_)) => USAGE,
            CliError::Report(ReportError::Read { source, .. }) => io_exit(source),
            CliError::Report(_) => USAGE,
            // Reading what the user named: a path that is not there, a
            // folder, a file over the bound or not UTF-8 is bad input; any
            // other failure to read is a failure to do the work.
            CliError::Claim(ClaimError::Read { source, .. } | ClaimError::Store { source, .. })
            | CliError::Overrides(OverrideError::Read { source, .. })
            | CliError::Suite(SuiteError::Read { source, .. })
            | CliError::Script(ScriptError::Read { source, .. })
            | CliError::RunLog(RunLogError::Read { source, .. }) => io_exit(source),
            CliError::Claim(ClaimError::NotFound(_))
            | CliError::PromptSetup(PromptSetupError::UnknownCapability(_))
            | CliError::Provider(_)
            | CliError::Worker(WorkerError::Client(_))
            | CliError::Replay(_)
            | CliError::Failed(_)
            | CliError::Io(_) => FAILURE,
        }
    }

    pub fn code(&self) -> ExitCode {
        ExitCode::from(self.exit_code())
    }

    /// The message and its causes, each said once: a cause whose text the
    /// message already carries is not repeated.
    pub fn report(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            if !text.contains(&cause_text) {
                text.push_str(&format!("\n  caused by: {cause_text}"));
            }
            source = cause.source();
        }
        text
    }
}

fn turns_phrase(count: usize) -> String {
    match count {
        1 => "1 turn".to_string(),
        n => format!("{n} turns"),
    }
}

fn io_exit(error: &io::Error) -> u8 {
    use io::ErrorKind::{
        FileTooLarge, InvalidData, InvalidInput, IsADirectory, NotADirectory, NotFound,
    };
    match error.kind() {
        // What was named is not there, or not a file of text within the
        // input bound (a FIFO, a device: `InvalidInput`): the input is
        // wrong, not the machine.
        NotFound | IsADirectory | NotADirectory | FileTooLarge | InvalidData | InvalidInput => {
            exit_code::USAGE
        }
        _ => exit_code::FAILURE,
    }
}

/// What printing a verdict's output came to, with stdout closed under it
/// (`| head`, `| true`) taken as the end of the output, never of the
/// verdict: the caller goes on and exits by its verdict, so a failed eval,
/// check or gate is never an exit 0 because nobody read its table.
pub fn unless_stdout_closed(printed: Result<(), CliError>) -> Result<(), CliError> {
    match printed {
        Err(CliError::BrokenPipe) => Ok(()),
        other => other,
    }
}

impl From<promptlab::eval::session::SessionError> for CliError {
    fn from(error: promptlab::eval::session::SessionError) -> Self {
        use promptlab::eval::session::SessionError;
        match error {
            SessionError::Suite(error) => CliError::Suite(error),
            SessionError::Usage(message) => CliError::Usage(message),
            SessionError::Failed(message) => CliError::Failed(message),
            SessionError::Io(error) => CliError::from(error),
        }
    }
}

impl From<io::Error> for CliError {
    fn from(error: io::Error) -> Self {
        if error.kind() == io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Io(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_error_has_its_exit_code() {
        let missing = io::Error::from(io::ErrorKind::NotFound);
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        let read = |source| RunLogError::Read {
            path: "x.ndjson".into(),
            source,
        };
        assert_eq!(CliError::from(read(missing)).exit_code(), exit_code::USAGE);
        assert_eq!(CliError::from(read(denied)).exit_code(), exit_code::FAILURE);
        for kind in [
            io::ErrorKind::IsADirectory,
            io::ErrorKind::FileTooLarge,
            io::ErrorKind::InvalidData,
        ] {
            let error = CliError::from(read(io::Error::from(kind)));
            assert_eq!(error.exit_code(), exit_code::USAGE, "{kind:?}");
        }
        let not_found = CliError::from(ClaimError::NotFound("X".into()));
        assert_eq!(not_found.exit_code(), exit_code::FAILURE);
        assert_eq!(CliError::usage("--x").exit_code(), exit_code::USAGE);
        assert_eq!(CliError::BrokenPipe.exit_code(), exit_code::OK);
        let closed = CliError::StdoutClosed { cancelled: 4 };
        assert_eq!(closed.exit_code(), exit_code::STDOUT_CLOSED);
        assert_eq!(closed.to_string(), "stdout closed: 4 turns cancelled");
        let endpoint = promptlab::worker::Endpoint::parse("ftp://x").unwrap_err();
        assert_eq!(
            CliError::from(WorkerError::from(endpoint)).exit_code(),
            exit_code::USAGE
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let error = CliError::from(RunLogError::Read {
            path: "x.ndjson".into(),
            source: io::Error::other("disk on fire"),
        });
        let report = error.report();
        assert_eq!(report.matches("disk on fire").count(), 1, "{report}");
    }
}
