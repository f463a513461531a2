//! A failed model call as a type the caller can act on: what went wrong
//! (`ErrorKind`: not ready, an HTTP status and whether it may be retried,
//! a redirect, a stall, a malformed or oversized stream, cancellation …)
//! and the message the `error` event carries, which is the spec's text
//! where the spec fixes one (`GEMINI_API_KEY is not configured on the API.`).

use super::CallSummary;

/// What kind of failure ended a model call (or a deployment's turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The provider cannot be called at all (no key).
    NotReady,
    /// Our side cannot send this request (a bad model name, a header value).
    Invalid,
    /// No connection was made: nothing reached the server.
    Unreachable,
    /// The server answered with an error status, or streamed an error
    /// object carrying one (Google's `{"error": {"code": 503, …}}`).
    Status { code: u16, retryable: bool },
    /// A quota is spent (a daily or billing limit: Gemini's
    /// `RESOURCE_EXHAUSTED` naming a per-day or billing quota, OpenAI's
    /// `insufficient_quota`): not a rate, so never retried, and an eval
    /// stops starting turns (SPEC §14).
    Quota { code: u16 },
    /// A 3xx answer: redirects are never followed.
    Redirected,
    /// Nothing arrived within the idle timeout.
    Stalled,
    /// The call passed its `--max-call-time`.
    TimedOut,
    /// The connection dropped mid-stream, or the stream ended too soon.
    Dropped,
    /// The stream broke its format (SSE framing, JSON, the event shapes).
    Malformed,
    /// A text, body or event bound was passed.
    TooLarge,
    /// The caller cancelled the call.
    Cancelled,
    /// Anything else (a scripted or replayed model's own failure).
    Other,
}

impl ErrorKind {
    /// Whether trying again could succeed, as long as nothing of the call
    /// has been shown: a refused connection (nothing reached the server),
    /// a status or model error that says so.
    pub fn retryable(self) -> bool {
        match self {
            ErrorKind::Unreachable => true,
            ErrorKind::Status { retryable, .. } => retryable,
            _ => false,
        }
    }
}

/// A failed model call. The message becomes the `error` event's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub kind: ErrorKind,
    pub message: String,
    /// A call that reached the model and stopped early (its token limit, a
    /// safety stop) was still billed: its usage, so that it is counted.
    pub summary: Option<Box<CallSummary>>,
}

impl ProviderError {
    /// A failure of no particular kind (`ErrorKind::Other`).
    pub fn new(message: impl Into<String>) -> ProviderError {
        ProviderError::of(ErrorKind::Other, message)
    }

    pub fn of(kind: ErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError {
            kind,
            message: message.into(),
            summary: None,
        }
    }

    /// This error, with the usage of the call that ended in it.
    pub fn with_summary(mut self, summary: Option<CallSummary>) -> ProviderError {
        self.summary = summary.map(Box::new);
        self
    }

    /// The same failure, its message changed by `edit` (redaction, a
    /// suffix saying why it was not retried).
    pub fn map_message(mut self, edit: impl FnOnce(String) -> String) -> ProviderError {
        self.message = edit(self.message);
        self
    }

    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refusals_and_retryable_answers_retry() {
        assert!(ErrorKind::Unreachable.retryable());
        assert!(
            ErrorKind::Status {
                code: 503,
                retryable: true
            }
            .retryable()
        );
        for kind in [
            ErrorKind::Status {
                code: 400,
                retryable: false,
            },
            ErrorKind::Stalled,
            ErrorKind::Redirected,
            ErrorKind::Cancelled,
            ErrorKind::Dropped,
        ] {
            assert!(!kind.retryable(), "{kind:?}");
        }
        assert_eq!(
            ProviderError::of(ErrorKind::NotReady, "x").to_string(),
            "x",
            "Display is the message alone"
        );
    }
}
