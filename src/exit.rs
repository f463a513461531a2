//! The documented exit codes (SPEC §5; named as cargo-nextest names its
//! codes), and how a command that ran to its end finished: the library's
//! rules (an eval's exit rule, `eval::outcome`) decide an `Exit`, the binary
//! turns it into the process's status.

use std::process::ExitCode;

/// The documented exit codes.
pub mod exit_code {
    /// It worked; every check passed.
    pub const OK: u8 = 0;
    /// The work ran and failed: an `error` event, an eval failure or error,
    /// a lost run log, a compare gate, a report not written.
    pub const FAILURE: u8 = 1;
    /// Invalid input or usage: nothing was done.
    pub const USAGE: u8 = 2;
    /// Ctrl-C.
    pub const INTERRUPTED: u8 = 130;
    /// SIGTERM, handled like Ctrl-C.
    pub const TERMINATED: u8 = 143;
    /// A chat turn or an eval cut short because its stdout was closed: the
    /// shell's SIGPIPE status, which `set -o pipefail` counts as a failure.
    pub const STDOUT_CLOSED: u8 = 141;
}

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
    /// The number, for machine-readable summaries.
    pub fn number(self) -> u8 {
        match self {
            Exit::Success => exit_code::OK,
            Exit::Failure => exit_code::FAILURE,
            Exit::Cancelled => exit_code::INTERRUPTED,
            Exit::Terminated => exit_code::TERMINATED,
        }
    }

    pub fn code(self) -> ExitCode {
        ExitCode::from(self.number())
    }
}
