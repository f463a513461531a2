//! The one SSE body reader: a response's bytes framed by the incremental
//! parser (`provider::sse`) into items, each whole item redacted before a
//! protocol decodes or quotes it, under the idle timeout, the call's body
//! bound and deadline (`bounds.rs`), a per-event cap, and cancellation. A
//! hostile or broken server can end the call with an error, never make it
//! hang past the idle timeout, buffer without bound, or panic.

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use super::{CallBudget, Transport, error_chain};
use crate::provider::sse::{SseError, SseItem, SseParser};
use crate::provider::{ErrorKind, ProviderError};

/// What one read of the body came to.
#[derive(Debug, PartialEq)]
pub enum BodyRead {
    /// The items the latest bytes completed (perhaps none).
    Items(Vec<SseItem>),
    /// The body ended; the last items, including an event whose blank line
    /// never came.
    Ended(Vec<SseItem>),
    Cancelled,
}

/// One response body being read as SSE items.
pub struct SseBody {
    transport: Transport,
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    parser: SseParser,
}

impl SseBody {
    pub(super) fn new(
        transport: Transport,
        response: reqwest::Response,
        max_event_bytes: usize,
    ) -> SseBody {
        SseBody {
            transport,
            body: response.bytes_stream().boxed(),
            parser: SseParser::with_max_event_bytes(max_event_bytes),
        }
    }

    /// Reads the next chunk and returns the items it completes. The idle
    /// timeout bounds the wait for each chunk, so comments and keep-alives
    /// keep a slow stream alive and silence ends it; `budget` bounds the
    /// call's body and time.
    pub async fn next(
        &mut self,
        budget: &mut CallBudget,
        cancel: &CancellationToken,
    ) -> Result<BodyRead, ProviderError> {
        let who = self.transport.peer.name;
        let idle = self.transport.idle_timeout;
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Ok(BodyRead::Cancelled),
            () = tokio::time::sleep_until(budget.deadline()) => return Err(budget.timed_out(who)),
            next = tokio::time::timeout(idle, self.body.next()) => next,
        };
        match next {
            Err(_) => Err(self.transport.stalled()),
            Ok(Some(Err(error))) => Err(ProviderError::of(
                ErrorKind::Dropped,
                format!(
                    "the connection to {who} dropped mid-stream: {}",
                    error_chain(error)
                ),
            )),
            Ok(Some(Ok(bytes))) => {
                budget.received(who, bytes.len())?;
                self.parser.push(&bytes);
                Ok(BodyRead::Items(self.drain(false)?))
            }
            Ok(None) => Ok(BodyRead::Ended(self.drain(true)?)),
        }
    }

    /// The complete items in the parser, redacted; at the end, the rest.
    fn drain(&mut self, at_end: bool) -> Result<Vec<SseItem>, ProviderError> {
        let mut items = Vec::new();
        while let Some(item) = self.parser.next_item().map_err(|e| self.malformed(e))? {
            items.push(item);
        }
        if at_end {
            items.extend(self.parser.finish().map_err(|e| self.malformed(e))?);
        }
        let redactor = &self.transport.redactor;
        // Whole events, so that no secret is split: redacted before the
        // protocol quotes or cuts anything of them.
        Ok(items
            .into_iter()
            .map(|item| match item {
                SseItem::Data(data) => SseItem::Data(redactor.redact_owned(data)),
                SseItem::Other(text) => SseItem::Other(redactor.redact_owned(text)),
            })
            .collect())
    }

    fn malformed(&self, error: SseError) -> ProviderError {
        let kind = match error {
            SseError::TooLarge(_) => ErrorKind::TooLarge,
            SseError::NotUtf8 => ErrorKind::Malformed,
        };
        let who = self.transport.peer.name;
        ProviderError::of(
            kind,
            format!("{who} sent a malformed event stream: {error}"),
        )
    }
}
