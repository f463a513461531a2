//! A deployment's response body, read back as the events of the turn: the
//! shared SSE body reader (`provider::transport::body`: idle timeout, the
//! per-event and per-stream caps, redaction, cancellation) and this
//! protocol's one conversion, each `data:` payload decoded as a `ChatEvent`.

use std::collections::VecDeque;

use tokio_util::sync::CancellationToken;

use crate::event::ChatEvent;
use crate::provider::sse::SseItem;
use crate::provider::transport::{BodyRead, CallBudget, SseBody};
use crate::provider::{ErrorKind, ProviderError};

/// The most one event may hold. The largest real event is a `text_delta`
/// of one model chunk or an `error` message: far below this.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;
/// The most a whole turn's stream may hold: the bound every model client shares.
pub const MAX_STREAM_BYTES: u64 = crate::provider::transport::bounds::MAX_STREAM_BYTES;

/// What reading the next event came to.
#[derive(Debug, PartialEq)]
pub enum Read {
    Event(ChatEvent),
    /// The stream broke a rule; the message says which, for an `error` event.
    Fault(ProviderError),
    Cancelled,
}

/// One SSE item as a chat event: `None` for a keep-alive (an empty `data:`
/// line some proxies send); an error for anything that is not an event.
pub fn decode(item: SseItem) -> Result<Option<ChatEvent>, ProviderError> {
    let malformed = |message| ProviderError::of(ErrorKind::Malformed, message);
    let data = match item {
        SseItem::Data(data) => data,
        SseItem::Other(text) => {
            return Err(malformed(format!(
                "the deployment sent a line that is not part of an SSE event: {}",
                crate::text::quote(&text)
            )));
        }
    };
    if data.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str::<ChatEvent>(&data)
        .map(Some)
        .map_err(|error| {
            malformed(format!(
                "the deployment sent an event that is not a chat event ({error}): {}",
                crate::text::quote(&data)
            ))
        })
}

/// A response body being read as events.
pub struct EventReader {
    body: SseBody,
    ready: VecDeque<ChatEvent>,
    ended: bool,
    events: u64,
}

impl EventReader {
    pub fn new(body: SseBody) -> EventReader {
        EventReader {
            body,
            ready: VecDeque::new(),
            ended: false,
            events: 0,
        }
    }

    /// The next event, or why there is none.
    pub async fn next(&mut self, budget: &mut CallBudget, cancel: &CancellationToken) -> Read {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Read::Event(event);
            }
            if self.ended {
                return Read::Fault(ProviderError::of(
                    ErrorKind::Dropped,
                    format!(
                        "the deployment's stream ended before the turn finished \
                         (no `done` or `error` event after {} events)",
                        self.events
                    ),
                ));
            }
            let items = match self.body.next(budget, cancel).await {
                Ok(BodyRead::Items(items)) => items,
                Ok(BodyRead::Ended(items)) => {
                    self.ended = true;
                    items
                }
                Ok(BodyRead::Cancelled) => return Read::Cancelled,
                Err(fault) => return Read::Fault(fault),
            };
            for item in items {
                match decode(item) {
                    Ok(Some(event)) => {
                        self.events = self.events.saturating_add(1);
                        self.ready.push_back(event);
                    }
                    Ok(None) => {}
                    Err(fault) => return Read::Fault(fault),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::sse::SseParser;

    fn decode_all(pieces: &[&[u8]]) -> (Vec<ChatEvent>, Option<String>) {
        let mut parser = SseParser::with_max_event_bytes(MAX_EVENT_BYTES);
        let mut events = Vec::new();
        let mut take = |item| match decode(item) {
            Ok(event) => {
                events.extend(event);
                None
            }
            Err(fault) => Some(fault.message),
        };
        for piece in pieces {
            parser.push(piece);
            while let Some(item) = parser.next_item().unwrap() {
                if let Some(fault) = take(item) {
                    return (events, Some(fault));
                }
            }
        }
        let fault = parser.finish().unwrap().and_then(&mut take);
        (events, fault)
    }

    #[test]
    fn comments_and_keep_alives_are_skipped() {
        let (events, fault) = decode_all(&[
            b": keep-alive\n\n",
            b"event: message\ndata: {\"type\":\"text_delta\",",
            b"\"text\":\"hi\"}\n\n:\n\ndata:\n\n",
        ]);
        assert_eq!(fault, None);
        assert_eq!(events, [ChatEvent::TextDelta { text: "hi".into() }]);
    }

    #[test]
    fn a_payload_that_is_not_an_event_is_named_and_quoted() {
        let (_, fault) = decode_all(&[b"data: {\"type\":\"surprise\"}\n\n"]);
        let fault = fault.unwrap();
        assert!(fault.contains("not a chat event"), "{fault}");
        assert!(fault.contains("surprise"), "{fault}");
        let (_, fault) = decode_all(&[b"<html>login</html>\n\n"]);
        assert!(fault.unwrap().contains("not part of an SSE event"));
    }
}
