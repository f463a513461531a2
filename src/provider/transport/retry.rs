//! The one retry policy every model and deployment client follows: at most
//! `max_attempts` tries, the server's `Retry-After` (or Google's
//! `RetryInfo`) when it gives one and it is within `max_retry_wait`, else
//! exponential backoff with jitter; only what `ErrorKind::retryable` says
//! (a refused connection, 429 and the 5xx the protocol names), and only
//! while nothing of the call has been shown. Each retry is announced as a
//! `RetryNotice` before its wait, so a retrying model says so.

use std::time::Duration;

use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::provider::{ErrorKind, ProviderError};

/// How many tries and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries per call, the first included.
    pub max_attempts: u32,
    /// The first retry's delay before jitter; doubled for each further one.
    pub backoff: Duration,
    /// A server asking for a longer wait than this is not retried.
    pub max_retry_wait: Duration,
    /// A call that was retried and still failed says how many tries it
    /// made (`… (after 3 tries)`). The worker's messages do (its docs
    /// promise it); Gemini's end in Google's own words, as its fixture
    /// tests pin them.
    pub count_tries: bool,
}

/// One failed try, and the wait its server asked for.
#[derive(Debug)]
pub struct Failure {
    pub error: ProviderError,
    pub retry_after: Option<Duration>,
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Failure {
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// What follows a failed try.
#[derive(Debug)]
pub enum Decision {
    /// Wait `wait`, then try again; `notice` says so.
    Retry { wait: Duration, notice: RetryNotice },
    /// The call ends in this error.
    GiveUp(ProviderError),
}

/// A retry about to happen, for the terminal, the run log and eval's
/// NDJSON: `Gemini answered 503; retrying (2 of 3) in 1.2 s`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryNotice {
    /// Who failed: `Gemini`, `the deployment`; `Gemini (judging)` when it is
    /// the judge's model, retrying for the turn it judges.
    pub who: String,
    /// The HTTP status of the failed try; none for a refused connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The try about to be made, the first counted as 1.
    pub attempt: u32,
    /// The most tries there will be.
    pub of: u32,
    /// The wait before it, in milliseconds.
    pub wait_ms: u64,
    /// The failure retried, as its error would have said it.
    pub error: String,
}

impl std::fmt::Display for RetryNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(code) => write!(f, "{} answered {code}", self.who)?,
            None => write!(f, "could not reach {}", self.who)?,
        }
        write!(
            f,
            "; retrying ({} of {}) in {:.1} s",
            self.attempt,
            self.of,
            Duration::from_millis(self.wait_ms).as_secs_f64()
        )
    }
}

impl RetryPolicy {
    /// After `retries` retries, what to do about `failure` (the try just
    /// made was try `retries + 1`). A call that was retried and still
    /// fails says how many tries it made.
    pub fn decide(&self, who: &str, retries: u32, failure: Failure) -> Decision {
        let tried = retries.saturating_add(1);
        let Failure { error, retry_after } = failure;
        let after_tries = |error: ProviderError| match tried {
            1 => error,
            _ if !self.count_tries => error,
            _ => error.map_message(|message| format!("{message} (after {tried} tries)")),
        };
        if !error.retryable() || tried >= self.max_attempts {
            return Decision::GiveUp(after_tries(error));
        }
        let wait = match retry_after {
            Some(delay) if delay > self.max_retry_wait => {
                let refused = too_long_to_wait(who, delay, self.max_retry_wait);
                return Decision::GiveUp(
                    after_tries(error).map_message(|m| format!("{m} ({refused})")),
                );
            }
            Some(delay) => delay,
            None => backoff_delay(self.backoff, tried),
        };
        let status = match error.kind {
            ErrorKind::Status { code, .. } => Some(code),
            _ => None,
        };
        let notice = RetryNotice {
            who: who.to_string(),
            status,
            attempt: tried + 1,
            of: self.max_attempts,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            error: error.message,
        };
        Decision::Retry { wait, notice }
    }
}

/// Waits `delay` unless the call is cancelled first.
pub async fn wait(delay: Duration, cancel: &CancellationToken) -> Result<(), ProviderError> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(cancelled()),
        _ = tokio::time::sleep(delay) => Ok(()),
    }
}

/// The error of a cancelled call (the turn ends in `Cancelled`, not in it).
pub fn cancelled() -> ProviderError {
    ProviderError::of(ErrorKind::Cancelled, "cancelled")
}

/// Why a retry is not attempted. The delay is the server's and may be
/// absurd (`1e20s` saturates to `Duration::MAX`): say "over a day" rather
/// than print a 20-digit number of seconds.
fn too_long_to_wait(who: &str, delay: Duration, cap: Duration) -> String {
    let asked = if delay > Duration::from_secs(86_400) {
        "over a day".to_string()
    } else {
        format!("{:.1} s", delay.as_secs_f64())
    };
    format!(
        "{who} asked to wait {asked} before retrying, longer than the {} s allowed",
        cap.as_secs()
    )
}

/// `Retry-After`: seconds, or an HTTP date. A huge number saturates (the
/// caller refuses waits over its own limit); a negative one is ignored.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<f64>() {
        if seconds.is_nan() || seconds < 0.0 {
            return None;
        }
        return Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    (when.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .ok()
}

/// The wait before retry `attempt`: `base × 2^(attempt−1)`, times a random
/// factor in [0.5, 1.5) so that clients retrying together spread out.
pub fn backoff_delay(base: Duration, attempt: u32) -> Duration {
    let exponential = base.saturating_mul(1 << attempt.saturating_sub(1).min(10));
    exponential.mul_f64(0.5 + fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    const POLICY: RetryPolicy = RetryPolicy {
        max_attempts: 3,
        backoff: Duration::from_millis(100),
        max_retry_wait: Duration::from_secs(60),
        count_tries: true,
    };

    fn status(code: u16, retryable: bool) -> Failure {
        ProviderError::of(
            ErrorKind::Status { code, retryable },
            format!("HTTP {code}"),
        )
        .into()
    }

    #[test]
    fn backoff_grows_and_jitters_within_bounds() {
        for attempt in 1..=3 {
            let delay = backoff_delay(Duration::from_secs(1), attempt);
            let base = f64::from(1u32 << (attempt - 1));
            assert!(
                delay.as_secs_f64() >= base * 0.5 && delay.as_secs_f64() < base * 1.5,
                "{delay:?}"
            );
        }
    }

    #[test]
    fn retryable_failures_retry_until_the_last_try_which_says_how_many() {
        let Decision::Retry { notice, .. } = POLICY.decide("Gemini", 0, status(503, true)) else {
            panic!("a 503 is retried");
        };
        assert_eq!(
            (notice.attempt, notice.of, notice.status),
            (2, 3, Some(503))
        );
        assert!(
            notice
                .to_string()
                .starts_with("Gemini answered 503; retrying (2 of 3) in ")
        );
        match POLICY.decide("Gemini", 2, status(503, true)) {
            Decision::GiveUp(error) => assert_eq!(error.message, "HTTP 503 (after 3 tries)"),
            other => panic!("{other:?}"),
        }
        match POLICY.decide("Gemini", 0, status(400, false)) {
            Decision::GiveUp(error) => assert_eq!(error.message, "HTTP 400"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_refused_connection_is_retried_and_said_so() {
        let refused = ProviderError::of(ErrorKind::Unreachable, "could not reach").into();
        let Decision::Retry { notice, .. } = POLICY.decide("the deployment", 1, refused) else {
            panic!("a refused connection is retried");
        };
        assert!(
            notice
                .to_string()
                .starts_with("could not reach the deployment; retrying (3 of 3) in "),
            "{notice}"
        );
    }

    #[test]
    fn a_wait_past_the_ceiling_is_refused_and_named() {
        let failure = Failure {
            retry_after: Some(Duration::MAX),
            ..status(429, true)
        };
        match POLICY.decide("Gemini", 0, failure) {
            Decision::GiveUp(error) => assert_eq!(
                error.message,
                "HTTP 429 (Gemini asked to wait over a day before retrying, longer than the 60 s allowed)"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_and_saturates() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                reqwest::header::RETRY_AFTER,
                HeaderValue::from_str(value).unwrap(),
            );
            retry_after(&headers)
        };
        assert_eq!(with("2"), Some(Duration::from_secs(2)));
        assert_eq!(with("1e20"), Some(Duration::MAX));
        assert_eq!(with("-1"), None);
        assert_eq!(
            with("Wed, 21 Oct 2015 07:28:00 GMT"),
            None,
            "a date in the past"
        );
        assert!(with("Wed, 21 Oct 2099 07:28:00 GMT").is_some());
        assert_eq!(with("soon"), None);
    }
}
