//! The one retry policy every model and deployment client follows (SPEC
//! §10, §14): only what `ErrorKind::retryable` says (a refused connection,
//! 429 and the 5xx the protocol names), and only while nothing of the call
//! has been shown. A rate-limited call (429) keeps trying while its waits
//! add up to at most `max_rate_wait`, each wait the server's (`Retry-After`,
//! Google's `RetryInfo`, OpenAI's `x-ratelimit-reset-*`) plus jitter, so
//! that waiters do not return together; any other failure gets at most
//! `max_attempts` tries, exponential backoff with jitter between them. An
//! exhausted quota is never retried. Each retry is announced as a
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
    /// The most a rate-limited call waits in all (`--max-rate-wait`).
    pub max_rate_wait: Duration,
    /// A call that was retried and still failed says how many tries it
    /// made (`… (after 3 tries)`). The worker's messages do (its docs
    /// promise it); Gemini's end in Google's own words, as its fixture
    /// tests pin them.
    pub count_tries: bool,
}

/// The tries a call has made so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tries {
    /// Retries made, whatever their cause.
    pub retries: u32,
    /// Of them, the retries of a 429.
    pub rate_limited: u32,
    /// What the call has waited in all before its 429 retries.
    pub rate_waited: Duration,
    /// What the call has waited for a slot under its model's live limit.
    pub queued: Duration,
}

impl Tries {
    /// These tries and the retry `decision` makes.
    pub fn after(self, notice: &RetryNotice, wait: Duration) -> Tries {
        let rate_limited = notice.rate_limited;
        Tries {
            retries: self.retries + 1,
            rate_limited: self.rate_limited + u32::from(rate_limited),
            rate_waited: if rate_limited {
                self.rate_waited.saturating_add(wait)
            } else {
                self.rate_waited
            },
            queued: self.queued,
        }
    }
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
    /// A 429: retried while the call's waits stay under `--max-rate-wait`,
    /// not counted against `of`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rate_limited: bool,
}

impl std::fmt::Display for RetryNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(code) => write!(f, "{} answered {code}", self.who)?,
            None => write!(f, "could not reach {}", self.who)?,
        }
        let wait = Duration::from_millis(self.wait_ms).as_secs_f64();
        if self.rate_limited {
            write!(f, "; rate-limited, retrying in {wait:.1} s")
        } else {
            write!(
                f,
                "; retrying ({} of {}) in {wait:.1} s",
                self.attempt, self.of
            )
        }
    }
}

impl RetryPolicy {
    /// After `tries`, what to do about `failure`. A call that was retried
    /// and still fails says how many tries it made.
    pub fn decide(&self, who: &str, tries: Tries, failure: Failure) -> Decision {
        let tried = tries.retries.saturating_add(1);
        let Failure { error, retry_after } = failure;
        let after_tries = |error: ProviderError| match tried {
            1 => error,
            _ if !self.count_tries => error,
            _ => error.map_message(|message| format!("{message} (after {tried} tries)")),
        };
        let status = match error.kind {
            ErrorKind::Status { code, .. } => Some(code),
            _ => None,
        };
        let rate_limited = status == Some(429) && error.retryable();
        if !error.retryable() || (!rate_limited && tried >= self.max_attempts) {
            return Decision::GiveUp(after_tries(error));
        }
        let (wait, cap) = match rate_limited {
            true => (
                retry_after.unwrap_or_else(|| backoff_delay(self.backoff, tries.rate_limited + 1)),
                self.max_rate_wait.saturating_sub(tries.rate_waited),
            ),
            false => (
                retry_after.unwrap_or_else(|| backoff_delay(self.backoff, tried)),
                self.max_retry_wait,
            ),
        };
        if wait > cap {
            let refused = match rate_limited && tries.rate_limited > 0 {
                true => rate_wait_spent(who, tries, self.max_rate_wait),
                false => too_long_to_wait(who, wait, cap),
            };
            return Decision::GiveUp(
                after_tries(error).map_message(|m| format!("{m} ({refused})")),
            );
        }
        // The server's wait is the earliest a retry may come; jitter only
        // lengthens it. A backoff has its own.
        let wait = match retry_after {
            Some(asked) => jittered(asked).min(cap),
            None => wait,
        };
        let notice = RetryNotice {
            who: who.to_string(),
            status,
            attempt: tried + 1,
            of: self.max_attempts,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            error: error.message,
            rate_limited,
        };
        Decision::Retry { wait, notice }
    }
}

/// Why a rate-limited call stops: it has waited all `--max-rate-wait` allows.
fn rate_wait_spent(who: &str, tries: Tries, cap: Duration) -> String {
    format!(
        "rate-limited by {who}: waited {:.1} s over {} tries, and the next wait would pass the {} allowed (--max-rate-wait)",
        tries.rate_waited.as_secs_f64(),
        tries.retries + 1,
        humantime::format_duration(cap),
    )
}

/// `asked` lengthened by a random share of itself (at most half, at least
/// up to 0.5 s, at most 5 s), so that the calls one burst of 429s stopped
/// do not all come back in the same instant.
pub fn jittered(asked: Duration) -> Duration {
    let spread = (asked / 2).clamp(Duration::from_millis(500), Duration::from_secs(5));
    asked.saturating_add(spread.mul_f64(fastrand::f64()))
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

/// The wait a server asks for in its headers: `Retry-After` (seconds, or
/// an HTTP date), else the longer of OpenAI's `x-ratelimit-reset-requests`
/// and `x-ratelimit-reset-tokens` (Go durations: `6m0s`, `1s`, `20ms`).
/// A huge number saturates (the caller refuses waits over its own limit);
/// a negative or unreadable one is ignored.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(value) = header(reqwest::header::RETRY_AFTER.as_str()) {
        return retry_after_value(value);
    }
    ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"]
        .into_iter()
        .filter_map(|name| go_duration(header(name)?))
        .max()
}

/// A Go `time.Duration` as OpenAI writes it: `1h2m3.5s`, `6m0s`, `20ms`.
pub fn go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() || rest.len() > 64 {
        return None;
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let part = Duration::try_from_secs_f64(number * seconds_per).unwrap_or(Duration::MAX);
        total = total.saturating_add(part);
    }
    Some(total)
}

/// `Retry-After`'s value: seconds, or an HTTP date.
fn retry_after_value(value: &str) -> Option<Duration> {
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
        max_rate_wait: Duration::from_secs(60),
        count_tries: true,
    };

    fn after(retries: u32) -> Tries {
        Tries {
            retries,
            ..Tries::default()
        }
    }

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
        let Decision::Retry { notice, .. } = POLICY.decide("Gemini", after(0), status(503, true))
        else {
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
        match POLICY.decide("Gemini", after(2), status(503, true)) {
            Decision::GiveUp(error) => assert_eq!(error.message, "HTTP 503 (after 3 tries)"),
            other => panic!("{other:?}"),
        }
        match POLICY.decide("Gemini", after(0), status(400, false)) {
            Decision::GiveUp(error) => assert_eq!(error.message, "HTTP 400"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_refused_connection_is_retried_and_said_so() {
        let refused = ProviderError::of(ErrorKind::Unreachable, "could not reach").into();
        let Decision::Retry { notice, .. } = POLICY.decide("the deployment", after(1), refused)
        else {
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
        match POLICY.decide("Gemini", after(0), failure) {
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
    #[test]
    fn a_rate_limited_call_retries_past_the_try_count_until_its_waits_are_spent() {
        let limited = |after: u64| Failure {
            retry_after: Some(Duration::from_secs(after)),
            ..status(429, true)
        };
        let mut tries = Tries::default();
        for _ in 0..5 {
            match POLICY.decide("Gemini", tries, limited(5)) {
                Decision::Retry { wait, notice } => {
                    assert!(notice.rate_limited, "{notice:?}");
                    assert!(
                        wait >= Duration::from_secs(5) && wait < Duration::from_millis(7_500),
                        "the server's wait plus at most half again: {wait:?}"
                    );
                    assert!(
                        notice
                            .to_string()
                            .starts_with("Gemini answered 429; rate-limited, retrying in "),
                        "{notice}"
                    );
                    tries = tries.after(&notice, wait);
                }
                other => panic!("a 429 within the wait budget is retried: {other:?}"),
            }
        }
        assert_eq!(
            (tries.retries, tries.rate_limited),
            (5, 5),
            "more than the 3 tries of other failures"
        );
        // 25–37.5 s waited; 40 s more would pass the 60 s allowed.
        match POLICY.decide("Gemini", tries, limited(40)) {
            Decision::GiveUp(error) => {
                assert!(
                    error
                        .message
                        .starts_with("HTTP 429 (after 6 tries) (rate-limited by Gemini: waited "),
                    "{}",
                    error.message
                );
                assert!(error.message.ends_with("over 6 tries, and the next wait would pass the 1m allowed (--max-rate-wait))"), "{}", error.message);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_exhausted_quota_is_never_retried() {
        let quota = ProviderError::of(ErrorKind::Quota { code: 429 }, "quota").into();
        assert!(matches!(
            POLICY.decide("Gemini", after(0), quota),
            Decision::GiveUp(_)
        ));
    }

    #[test]
    fn jitter_only_lengthens_the_servers_wait_within_its_bounds() {
        for asked in [
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(60),
        ] {
            let spread = (asked / 2).clamp(Duration::from_millis(500), Duration::from_secs(5));
            let waits: Vec<Duration> = (0..200).map(|_| jittered(asked)).collect();
            assert!(
                waits.iter().all(|w| *w >= asked && *w < asked + spread),
                "{asked:?}"
            );
            // Spread out, not one value: the point of jitter.
            let distinct: std::collections::BTreeSet<_> = waits.iter().collect();
            assert!(distinct.len() > 100, "{asked:?}");
        }
    }

    #[test]
    fn openai_reset_headers_are_go_durations_and_the_longer_wins() {
        let with = |pairs: &[(&'static str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, HeaderValue::from_str(value).unwrap());
            }
            retry_after(&headers)
        };
        assert_eq!(
            with(&[
                ("x-ratelimit-reset-requests", "6m0s"),
                ("x-ratelimit-reset-tokens", "1s")
            ]),
            Some(Duration::from_secs(360))
        );
        assert_eq!(
            with(&[("x-ratelimit-reset-tokens", "20ms")]),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            with(&[("x-ratelimit-reset-tokens", "1h2m3.5s")]),
            Some(Duration::from_millis(3_723_500))
        );
        assert_eq!(with(&[("x-ratelimit-reset-tokens", "soon")]), None);
        assert_eq!(
            with(&[("retry-after", "2"), ("x-ratelimit-reset-requests", "6m0s")]),
            Some(Duration::from_secs(2)),
            "Retry-After is the server's own answer"
        );
    }
}
