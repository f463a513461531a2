//! The HTTP client the OTLP exporter sends through: reqwest's blocking
//! client (the batch processor exports on its own thread, outside any
//! runtime), no redirects, the export timeout over the whole exchange —
//! and at most `MAX_ANSWER_BYTES` of a receiver's answer read. The SDK's
//! own client reads the whole answer for up to the timeout on each export,
//! so a receiver streaming megabytes grew the process without bound
//! (1.4 GB in a 16 s eval, issue 61); an OTLP answer is a small
//! `ExportTraceServiceResponse`, and nothing of it is used but its status.

use std::io::Read;
use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// The most of a receiver's answer that is read; past it the connection
/// is dropped and the export counted as failed.
pub const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// The sentence a warning says when a receiver's answer runs past the
/// bound (`export::reason_of` looks for it).
pub const ANSWER_TOO_LARGE: &str =
    "the receiver's answer ran past 64 KiB; it was not read further and the connection was dropped";

/// reqwest's blocking client, answers read up to `MAX_ANSWER_BYTES`.
#[derive(Debug, Clone)]
pub struct BoundedClient {
    client: reqwest::blocking::Client,
}

impl BoundedClient {
    pub fn new(timeout: Duration) -> reqwest::Result<BoundedClient> {
        let client = reqwest::blocking::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()?;
        Ok(BoundedClient { client })
    }
}

/// A receiver's answer that ran past the bound. Its `Debug` is its
/// sentence: the exporter quotes a client's error with `{:?}`.
#[derive(thiserror::Error)]
#[error("{ANSWER_TOO_LARGE}")]
struct AnswerTooLarge;

impl std::fmt::Debug for AnswerTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(ANSWER_TOO_LARGE)
    }
}

#[async_trait::async_trait]
impl HttpClient for BoundedClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request: reqwest::blocking::Request = request.try_into()?;
        let mut response = self.client.execute(request)?.error_for_status()?;
        let headers = std::mem::take(response.headers_mut());
        let status = response.status();
        let mut body = Vec::new();
        // One byte past the bound tells an answer of exactly 64 KiB from a
        // longer one; dropping `response` then closes the connection.
        (&mut response)
            .take(MAX_ANSWER_BYTES + 1)
            .read_to_end(&mut body)?;
        if body.len() as u64 > MAX_ANSWER_BYTES {
            return Err(Box::new(AnswerTooLarge));
        }
        let mut answer = Response::builder().status(status).body(Bytes::from(body))?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}
