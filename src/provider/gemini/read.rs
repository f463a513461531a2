//! One Gemini response body, read chunk by chunk into model events: the
//! SSE parser frames events, the accumulator turns chunks into events, and
//! the call's budget (`provider::http::bounds`) stops a body, a text or a
//! call that grows past its bound — above the parser, which only frames.

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::accumulate::{CallAccumulator, StreamFault};
use super::{Call, WHO};
use crate::provider::ModelEvent;
use crate::provider::http::CallBudget;
use crate::provider::sse::{SseItem, SseParser};

/// How reading a response's stream ended, when it did.
pub(super) enum ReadEnd {
    /// The body ended: the call's summary follows.
    Finished,
    Fault(StreamFault),
    Cancelled,
}

/// One response body, read chunk by chunk into model events.
pub(super) struct StreamReader {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    parser: SseParser,
    pub(super) accumulator: CallAccumulator,
    /// Something of this call reached the caller: no retry from here on.
    pub(super) forwarded: bool,
}

impl StreamReader {
    pub(super) fn new(response: reqwest::Response) -> StreamReader {
        StreamReader {
            body: response.bytes_stream().boxed(),
            parser: SseParser::new(),
            accumulator: CallAccumulator::new(),
            forwarded: false,
        }
    }

    /// Reads the next chunk: the events it completes, then how the stream
    /// ended if it did. The idle timeout bounds the wait for each chunk;
    /// `budget` bounds the call's body, text and time.
    pub(super) async fn next(
        &mut self,
        call: &Call,
        budget: &mut CallBudget,
        cancel: &CancellationToken,
    ) -> (Vec<ModelEvent>, Option<ReadEnd>) {
        let bound = |message| {
            (
                Vec::new(),
                Some(ReadEnd::Fault(StreamFault {
                    message,
                    retryable: false,
                })),
            )
        };
        let next = tokio::select! {
            _ = cancel.cancelled() => return (Vec::new(), Some(ReadEnd::Cancelled)),
            () = tokio::time::sleep_until(budget.deadline()) => return bound(budget.timed_out(WHO)),
            next = tokio::time::timeout(call.config.idle_timeout, self.body.next()) => next,
        };
        if let Ok(Some(Ok(bytes))) = &next
            && let Err(message) = budget.received(WHO, bytes.len())
        {
            return bound(message);
        }
        let (items, finished) = match next {
            Err(_) => (Err(call.idle_fault()), false),
            Ok(Some(Err(error))) => (
                Err(StreamFault {
                    message: format!(
                        "the connection to Gemini dropped mid-stream: {}",
                        crate::provider::http::error_chain(error)
                    ),
                    retryable: false,
                }),
                false,
            ),
            Ok(Some(Ok(bytes))) => {
                self.parser.push(&bytes);
                (drain(&mut self.parser, false), false)
            }
            Ok(None) => (drain(&mut self.parser, true), true),
        };
        let items = match items {
            // Whole events, so that no secret is split: redacted before the
            // accumulator quotes or cuts anything of them.
            Ok(items) => items.into_iter().map(|item| match item {
                SseItem::Data(data) => SseItem::Data(call.redactor.redact_owned(data)),
                SseItem::Other(text) => SseItem::Other(call.redactor.redact_owned(text)),
            }),
            Err(fault) => return (Vec::new(), Some(ReadEnd::Fault(fault))),
        };
        let mut events = Vec::new();
        for item in items {
            let fault = match self.accumulator.accept(item) {
                Ok(more) => {
                    let text: usize = more
                        .iter()
                        .map(|event| match event {
                            ModelEvent::TextDelta(text) => text.len(),
                            _ => 0,
                        })
                        .sum();
                    events.extend(more);
                    match budget.text(WHO, text) {
                        Ok(()) => continue,
                        Err(message) => StreamFault {
                            message,
                            retryable: false,
                        },
                    }
                }
                Err(fault) => fault,
            };
            self.forwarded |= !events.is_empty();
            return (events, Some(ReadEnd::Fault(fault)));
        }
        self.forwarded |= !events.is_empty();
        (events, finished.then_some(ReadEnd::Finished))
    }
}

fn drain(parser: &mut SseParser, at_end: bool) -> Result<Vec<SseItem>, StreamFault> {
    let malformed = |error| StreamFault {
        message: format!("Gemini sent a malformed stream: {error}"),
        retryable: false,
    };
    let mut items = Vec::new();
    while let Some(item) = parser.next_item().map_err(malformed)? {
        items.push(item);
    }
    if at_end {
        items.extend(parser.finish().map_err(malformed)?);
    }
    Ok(items)
}
