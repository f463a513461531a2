//! One Gemini response body, read into model events: the shared SSE body
//! reader (`provider::transport::body`) frames, bounds and redacts items;
//! the accumulator turns them into events; the call's budget stops a text
//! that grows past its bound.

use tokio_util::sync::CancellationToken;

use super::WHO;
use super::accumulate::{CallAccumulator, StreamFault};
use crate::provider::ModelEvent;
use crate::provider::sse::MAX_EVENT_BYTES;
use crate::provider::transport::{BodyRead, CallBudget, SseBody, Transport};

/// How reading a response's stream ended, when it did.
pub(super) enum ReadEnd {
    /// The body ended: the call's summary follows.
    Finished,
    Fault(StreamFault),
    Cancelled,
}

/// One response body, read chunk by chunk into model events.
pub(super) struct StreamReader {
    body: SseBody,
    pub(super) accumulator: CallAccumulator,
    /// Something of this call reached the caller: no retry from here on.
    pub(super) forwarded: bool,
}

impl StreamReader {
    pub(super) fn new(transport: &Transport, response: reqwest::Response) -> StreamReader {
        StreamReader {
            body: transport.sse_body(response, MAX_EVENT_BYTES),
            accumulator: CallAccumulator::new(),
            forwarded: false,
        }
    }

    /// Reads the next chunk: the events it completes, then how the stream
    /// ended if it did.
    pub(super) async fn next(
        &mut self,
        budget: &mut CallBudget,
        cancel: &CancellationToken,
    ) -> (Vec<ModelEvent>, Option<ReadEnd>) {
        let (items, finished) = match self.body.next(budget, cancel).await {
            Ok(BodyRead::Items(items)) => (items, false),
            Ok(BodyRead::Ended(items)) => (items, true),
            Ok(BodyRead::Cancelled) => return (Vec::new(), Some(ReadEnd::Cancelled)),
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
                        Err(fault) => fault,
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
