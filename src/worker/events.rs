//! A deployment's response body, read back as the events of the turn: the
//! incremental SSE parser under a per-event and a per-stream cap, each
//! `data:` payload decoded as a `ChatEvent`. A hostile or broken server
//! can make the turn end in an error, never make it hang past the idle
//! timeout, buffer without bound, or panic.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use crate::event::ChatEvent;
use crate::provider::http::Redactor;
use crate::provider::sse::{SseItem, SseParser};

/// The most one event may hold. The largest real event is a `text_delta`
/// of one model chunk or an `error` message: far below this.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;
/// The most a whole turn's stream may hold: the bound every model client shares.
pub const MAX_STREAM_BYTES: u64 = crate::provider::http::bounds::MAX_STREAM_BYTES;

/// What reading the next event came to.
#[derive(Debug, PartialEq)]
pub enum Read {
    Event(ChatEvent),
    /// The stream broke a rule; the message says which, for an `error` event.
    Fault(String),
    Cancelled,
}

/// Turns body chunks into events, one at a time.
pub struct EventDecoder {
    parser: SseParser,
    /// Applied to each whole event before it is decoded or quoted.
    redactor: Redactor,
    ready: VecDeque<ChatEvent>,
    received: u64,
    events: u64,
}

impl Default for EventDecoder {
    fn default() -> EventDecoder {
        EventDecoder::new()
    }
}

impl EventDecoder {
    pub fn new() -> EventDecoder {
        EventDecoder::with_redactor(Redactor::default())
    }

    /// A decoder that takes `redactor`'s secrets out of every event.
    pub fn with_redactor(redactor: Redactor) -> EventDecoder {
        EventDecoder {
            parser: SseParser::with_max_event_bytes(MAX_EVENT_BYTES),
            redactor,
            ready: VecDeque::new(),
            received: 0,
            events: 0,
        }
    }

    /// Takes one chunk of the body; an `Err` is the fault that ends the turn.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.received = self
            .received
            .saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        if self.received > MAX_STREAM_BYTES {
            return Err(format!(
                "the deployment's stream grew past {} MiB without finishing the turn",
                MAX_STREAM_BYTES / (1024 * 1024)
            ));
        }
        self.parser.push(chunk);
        while let Some(item) = self.parser.next_item().map_err(malformed)? {
            self.accept(item)?;
        }
        Ok(())
    }

    /// At the end of the body: whatever complete event is left.
    pub fn finish(&mut self) -> Result<(), String> {
        if let Some(item) = self.parser.finish().map_err(malformed)? {
            self.accept(item)?;
        }
        Ok(())
    }

    pub fn next_event(&mut self) -> Option<ChatEvent> {
        self.ready.pop_front()
    }

    /// How many events were decoded so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    fn accept(&mut self, item: SseItem) -> Result<(), String> {
        let data = match item {
            SseItem::Data(data) => self.redactor.redact_owned(data),
            SseItem::Other(text) => {
                let text = self.redactor.redact_owned(text);
                return Err(format!(
                    "the deployment sent a line that is not part of an SSE event: {}",
                    crate::text::quote(&text)
                ));
            }
        };
        // An empty `data:` line is a keep-alive some proxies send.
        if data.trim().is_empty() {
            return Ok(());
        }
        let event = serde_json::from_str::<ChatEvent>(&data).map_err(|error| {
            format!(
                "the deployment sent an event that is not a chat event ({error}): {}",
                crate::text::quote(&data)
            )
        })?;
        self.events = self.events.saturating_add(1);
        self.ready.push_back(event);
        Ok(())
    }
}

fn malformed(error: crate::provider::sse::SseError) -> String {
    format!("the deployment sent a malformed event stream: {error}")
}

/// A response body being read as events.
pub struct EventReader {
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: EventDecoder,
    ended: bool,
    idle_timeout: Duration,
}

impl EventReader {
    pub fn new(
        response: reqwest::Response,
        idle_timeout: Duration,
        redactor: Redactor,
    ) -> EventReader {
        EventReader {
            body: response.bytes_stream().boxed(),
            decoder: EventDecoder::with_redactor(redactor),
            ended: false,
            idle_timeout,
        }
    }

    /// The next event, or why there is none. The idle timeout bounds each
    /// wait for bytes, so comments and keep-alives keep a slow turn alive
    /// and silence ends it.
    pub async fn next(&mut self, cancel: &CancellationToken) -> Read {
        loop {
            if let Some(event) = self.decoder.next_event() {
                return Read::Event(event);
            }
            if self.ended {
                return Read::Fault(format!(
                    "the deployment's stream ended before the turn finished \
                     (no `done` or `error` event after {} events)",
                    self.decoder.events()
                ));
            }
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Read::Cancelled,
                next = tokio::time::timeout(self.idle_timeout, self.body.next()) => next,
            };
            let pushed = match next {
                Err(_) => {
                    return Read::Fault(format!(
                        "the deployment's stream stalled: nothing arrived for {} s (--idle-timeout)",
                        self.idle_timeout.as_secs_f64()
                    ));
                }
                Ok(Some(Err(error))) => {
                    return Read::Fault(format!(
                        "the connection to the deployment dropped mid-stream: {}",
                        crate::provider::http::error_chain(error)
                    ));
                }
                Ok(Some(Ok(chunk))) => self.decoder.push(&chunk),
                Ok(None) => {
                    self.ended = true;
                    self.decoder.finish()
                }
            };
            if let Err(message) = pushed {
                return Read::Fault(message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(pieces: &[&[u8]]) -> (Vec<ChatEvent>, Option<String>) {
        let mut decoder = EventDecoder::new();
        let mut events = Vec::new();
        for piece in pieces {
            if let Err(fault) = decoder.push(piece) {
                return (events, Some(fault));
            }
            events.extend(std::iter::from_fn(|| decoder.next_event()));
        }
        let fault = decoder.finish().err();
        events.extend(std::iter::from_fn(|| decoder.next_event()));
        (events, fault)
    }

    #[test]
    fn comments_and_keep_alives_are_skipped() {
        let (events, fault) = decode(&[
            b": keep-alive\n\n",
            b"event: message\ndata: {\"type\":\"text_delta\",",
            b"\"text\":\"hi\"}\n\n:\n\n",
        ]);
        assert_eq!(fault, None);
        assert_eq!(events, [ChatEvent::TextDelta { text: "hi".into() }]);
    }

    #[test]
    fn a_payload_that_is_not_an_event_is_named_and_quoted() {
        let (_, fault) = decode(&[b"data: {\"type\":\"surprise\"}\n\n"]);
        let fault = fault.unwrap();
        assert!(fault.contains("not a chat event"), "{fault}");
        assert!(fault.contains("surprise"), "{fault}");
        let (_, fault) = decode(&[b"<html>login</html>\n\n"]);
        assert!(fault.unwrap().contains("not part of an SSE event"));
    }

    #[test]
    fn an_endless_event_is_refused_at_the_cap() {
        let mut decoder = EventDecoder::new();
        let chunk = vec![b'a'; 64 * 1024];
        let mut fault = None;
        for _ in 0..(MAX_EVENT_BYTES / chunk.len() + 2) {
            if let Err(error) = decoder.push(&chunk) {
                fault = Some(error);
                break;
            }
        }
        assert!(fault.unwrap().contains("grew past"));
    }

    #[test]
    fn an_endless_stream_of_small_events_is_refused_at_the_cap() {
        let mut decoder = EventDecoder::new();
        let frame = b": keep-alive padding padding padding padding padding\n\n".repeat(1000);
        let mut pushed: u64 = 0;
        let fault = loop {
            if let Err(fault) = decoder.push(&frame) {
                break fault;
            }
            pushed += frame.len() as u64;
            assert!(pushed <= MAX_STREAM_BYTES, "the cap must hold");
        };
        assert!(fault.contains("MiB"), "{fault}");
    }
}
