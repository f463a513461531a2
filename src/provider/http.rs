//! The HTTP rules shared by the clients that stream from a server — Gemini
//! and a deployed chat API (`worker`) — each built once here: the client
//! and its no-redirect policy, safe URLs and transport errors (`client.rs`),
//! redaction of known secrets (`redact.rs`), the bounds on one call
//! (`bounds.rs`), how long the server asks us to wait, the backoff between
//! retries, and an error response's body read under a cap. The providers
//! issue grows this into the one shared transport (SPEC §10).

pub mod bounds;
pub mod client;
pub mod redact;

pub use bounds::{CallBudget, CallLimits};
pub use client::{client, error_chain, redirect_message, shown, shown_url};
pub use redact::{Redactor, Secret};

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::HeaderMap;

/// The most of an error response's body that is read.
pub const ERROR_BODY_LIMIT: usize = 64 * 1024;

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

/// At most `ERROR_BODY_LIMIT` bytes of an error response, each read
/// within `idle`; what does not arrive in time is left out. Redacted here,
/// before any message quotes and cuts it: a secret cut in half by a
/// 200-character excerpt would no longer be recognised.
pub async fn read_error_body(
    response: reqwest::Response,
    idle: Duration,
    redactor: &Redactor,
) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Ok(Some(Ok(bytes))) = tokio::time::timeout(idle, stream.next()).await {
        body.extend_from_slice(&bytes);
        if body.len() >= ERROR_BODY_LIMIT {
            body.truncate(ERROR_BODY_LIMIT);
            break;
        }
    }
    redactor
        .redact(&String::from_utf8_lossy(&body))
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

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
