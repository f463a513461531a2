//! CLI errors and the documented exit codes (SPEC §5): 0 ok; 1 the turn
//! ended in an `error` event or an eval had failures; 2 invalid input or
//! usage; 130 cancelled (Ctrl-C); 143 terminated (SIGTERM).

use std::io;
use std::process::ExitCode;

use promptlab::chat::PromptSetupError;
use promptlab::chat::request::RequestError;
use promptlab::claims::ClaimError;
use promptlab::prompts::overrides::OverrideError;

/// How a command that ran to its end finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Success,
    /// The work ran and failed: an `error` event, invalid claims, eval failures.
    Failure,
    /// Ctrl-C.
    Cancelled,
    /// SIGTERM: stopped like Ctrl-C.
    Terminated,
}

impl Exit {
    pub fn code(self) -> ExitCode {
        match self {
            Exit::Success => ExitCode::SUCCESS,
            Exit::Failure => ExitCode::from(1),
            Exit::Cancelled => ExitCode::from(130),
            Exit::Terminated => ExitCode::from(143),
        }
    }

    /// The number, for machine-readable summaries.
    pub fn number(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failure => 1,
            Exit::Cancelled => 130,
            Exit::Terminated => 143,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Invalid input or usage: exit 2.
    #[error("{0}")]
    Invalid(String),
    /// The command could not do its work: exit 1.
    #[error("{0}")]
    Failed(String),
    /// stdout was closed under us (`| head`): exit quietly, as ripgrep does.
    #[error("broken pipe")]
    BrokenPipe,
    #[error("{0}")]
    Io(io::Error),
}

impl CliError {
    pub fn code(&self) -> ExitCode {
        match self {
            CliError::Invalid(_) => ExitCode::from(2),
            CliError::Failed(_) | CliError::Io(_) => ExitCode::from(1),
            CliError::BrokenPipe => ExitCode::SUCCESS,
        }
    }

    pub fn invalid(message: impl ToString) -> Self {
        CliError::Invalid(message.to_string())
    }

    pub fn failed(message: impl ToString) -> Self {
        CliError::Failed(message.to_string())
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

impl From<ClaimError> for CliError {
    fn from(error: ClaimError) -> Self {
        match error {
            ClaimError::NotFound(_) => CliError::failed(error),
            _ => CliError::invalid(error),
        }
    }
}

impl From<OverrideError> for CliError {
    fn from(error: OverrideError) -> Self {
        CliError::invalid(error)
    }
}

impl From<RequestError> for CliError {
    fn from(error: RequestError) -> Self {
        CliError::invalid(error)
    }
}

impl From<PromptSetupError> for CliError {
    fn from(error: PromptSetupError) -> Self {
        match error {
            PromptSetupError::UnknownCapability(_) => CliError::failed(error),
            PromptSetupError::UnknownBrand(_) => CliError::invalid(error),
        }
    }
}
