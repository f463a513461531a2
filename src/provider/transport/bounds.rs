//! The bounds on one model call (Gemini) or one deployment turn (worker):
//! at most `max_text_bytes` of streamed text, at most `MAX_STREAM_BYTES` of
//! body, at most `MAX_CALL_TOOL_CALLS` tool calls, and at most
//! `max_call_time` from the request to the last byte. The idle timeout
//! alone does not bound a stream that never stops sending; these do.
//! Checked above the SSE parser, which only frames events.

use std::time::Duration;

use crate::provider::{ErrorKind, ProviderError};

/// The most streamed text one call may produce.
pub const MAX_CALL_TEXT_BYTES: usize = 16 * 1024 * 1024;
/// The most body one call's stream may hold, text, framing and JSON included.
pub const MAX_STREAM_BYTES: u64 = 64 * 1024 * 1024;
/// The most tool calls one model reply may ask for. Each is run, shown
/// twice (`activity`, `tool_result`) and sent back in the next request, so
/// calls cost far more than their bytes: 100,000 calls in one 8 MB event
/// took 880 MB and a 44 MB next request. A reply asks for a handful.
pub const MAX_CALL_TOOL_CALLS: usize = 128;
/// `--max-call-time`'s default.
pub const DEFAULT_MAX_CALL_TIME: Duration = Duration::from_secs(600);

/// How long and how large one call may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    pub max_call_time: Duration,
    pub max_text_bytes: usize,
    pub max_stream_bytes: u64,
}

impl Default for CallLimits {
    fn default() -> CallLimits {
        CallLimits {
            max_call_time: DEFAULT_MAX_CALL_TIME,
            max_text_bytes: MAX_CALL_TEXT_BYTES,
            max_stream_bytes: MAX_STREAM_BYTES,
        }
    }
}

/// One call's use of its limits, from its start.
#[derive(Debug, Clone)]
pub struct CallBudget {
    limits: CallLimits,
    deadline: tokio::time::Instant,
    text: usize,
    received: u64,
    tool_calls: usize,
}

impl CallBudget {
    /// Starts the clock now.
    pub fn start(limits: CallLimits) -> CallBudget {
        CallBudget {
            limits,
            deadline: tokio::time::Instant::now() + limits.max_call_time,
            text: 0,
            received: 0,
            tool_calls: 0,
        }
    }

    /// When the call must have ended.
    pub fn deadline(&self) -> tokio::time::Instant {
        self.deadline
    }

    /// Moves the deadline on by `wait`: time the call spent waiting for a
    /// slot or out a rate limit, which `--max-call-time` does not bound.
    pub fn extend(&mut self, wait: std::time::Duration) {
        self.deadline = self.deadline.checked_add(wait).unwrap_or(self.deadline);
    }

    /// Counts `bytes` of body; `Err` names the bound passed.
    pub fn received(&mut self, who: &str, bytes: usize) -> Result<(), ProviderError> {
        self.received = self
            .received
            .saturating_add(u64::try_from(bytes).unwrap_or(u64::MAX));
        if self.received > self.limits.max_stream_bytes {
            return Err(too_large(format!(
                "{who}'s stream grew past {} without finishing; the call was stopped",
                mib(self.limits.max_stream_bytes)
            )));
        }
        Ok(())
    }

    /// Counts `bytes` of streamed text; `Err` names the bound passed.
    pub fn text(&mut self, who: &str, bytes: usize) -> Result<(), ProviderError> {
        self.text = self.text.saturating_add(bytes);
        if self.text > self.limits.max_text_bytes {
            return Err(too_large(format!(
                "{who}'s reply grew past {} of text in one call; the call was stopped",
                mib(self.limits.max_text_bytes as u64)
            )));
        }
        Ok(())
    }

    /// Counts `count` tool calls; `Err` names the bound passed.
    pub fn tool_calls(&mut self, who: &str, count: usize) -> Result<(), ProviderError> {
        self.tool_calls = self.tool_calls.saturating_add(count);
        if self.tool_calls > MAX_CALL_TOOL_CALLS {
            return Err(too_large(format!(
                "{who}'s reply asked for more than {MAX_CALL_TOOL_CALLS} tool calls in one call; \
                 the call was stopped"
            )));
        }
        Ok(())
    }

    /// The error when the deadline passes.
    pub fn timed_out(&self, who: &str) -> ProviderError {
        ProviderError::of(
            ErrorKind::TimedOut,
            format!(
                "{who}'s call took longer than {} (--max-call-time); the call was stopped",
                humantime::format_duration(self.limits.max_call_time)
            ),
        )
    }
}

fn too_large(message: String) -> ProviderError {
    ProviderError::of(ErrorKind::TooLarge, message)
}

fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{bytes} bytes")
    }
}

/// `--max-call-time` / `PROMPTLAB_MAX_CALL_TIME`: `90s`, `10m`, `1h 30m`,
/// or a plain number of seconds; above 0 and at most a day (the one rule
/// of every time flag, `text::parse_time_limit`).
pub fn parse_max_call_time(text: &str) -> Result<Duration, crate::text::BadDuration> {
    crate::text::parse_time_limit(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_body_bounds_say_which_was_passed() {
        let limits = CallLimits {
            max_text_bytes: 10,
            max_stream_bytes: 20,
            ..CallLimits::default()
        };
        let mut budget = CallBudget::start(limits);
        assert!(budget.text("Gemini", 10).is_ok());
        assert_eq!(
            budget.text("Gemini", 1).unwrap_err().message,
            "Gemini's reply grew past 10 bytes of text in one call; the call was stopped"
        );
        assert!(budget.received("Gemini", 20).is_ok());
        assert!(
            budget
                .received("Gemini", 1)
                .unwrap_err()
                .message
                .contains("stream grew past 20 bytes")
        );
        let default = CallBudget::start(CallLimits::default());
        assert_eq!(
            default.timed_out("Gemini").message,
            "Gemini's call took longer than 10m (--max-call-time); the call was stopped"
        );
    }

    #[test]
    fn call_times_parse_as_durations_or_seconds() {
        assert_eq!(parse_max_call_time("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_max_call_time("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_max_call_time("2.5"), Ok(Duration::from_millis(2500)));
        for bad in ["0", "-1", "soon", "", "2d", "NaN", "inf"] {
            assert!(parse_max_call_time(bad).is_err(), "{bad}");
        }
    }
}
