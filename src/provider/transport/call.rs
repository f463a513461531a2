//! One streamed model call, whatever the protocol: sent with retries while
//! nothing was forwarded (each announced), its SSE body read under the
//! call's bounds, each item decoded by the protocol's `Decoder`, an error
//! before any output retried like a status, and a broken stream's usage
//! kept with its error. Gemini and the OpenAI adapter differ only in their
//! `Decoder` and `Protocol`.

use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use super::{
    BodyRead, CallBudget, CallLimits, Decision, Failure, Lane, Protocol, Sending, Slot, SseBody,
    Transport, Tries,
};
use crate::provider::sse::{MAX_EVENT_BYTES, SseItem};
use crate::provider::{CallSummary, ErrorKind, ModelEvent, ProviderError};

/// A protocol's reading of one response stream: its items into events,
/// and at the end, the call's summary or why it did not finish.
pub trait Decoder: Send + 'static {
    /// Takes one SSE item; returns what to forward at once.
    fn accept(&mut self, item: SseItem) -> Result<Vec<ModelEvent>, ProviderError>;

    /// The call's summary, or the error it ended in (with the usage it
    /// reported, when it reached the model).
    fn finish(self, retries: u32) -> Result<CallSummary, ProviderError>;
}

/// Everything one model call sends, moved into its stream.
pub struct Call {
    pub transport: Transport,
    pub protocol: Arc<dyn Protocol>,
    pub limits: CallLimits,
    pub url: reqwest::Url,
    pub headers: HeaderMap,
    pub body: bytes::Bytes,
    /// The model's lane in the transport's throttle: each try takes a slot.
    pub lane: Arc<Lane>,
}

impl Call {
    /// One try: a 2xx response, or why not.
    async fn send_once(&self) -> Result<reqwest::Response, Failure> {
        let request =
            self.transport
                .post(self.url.clone(), self.headers.clone(), self.body.clone());
        self.transport
            .send_once(request, self.protocol.as_ref())
            .await
    }
}

/// How reading a response's stream ended, when it did.
enum ReadEnd {
    /// The body ended: the call's summary follows.
    Finished,
    Fault(ProviderError),
    Cancelled,
}

/// One response body, read chunk by chunk into model events.
struct StreamReader<D> {
    /// The lane's slot this try holds until its stream ends.
    slot: Option<Slot>,
    body: SseBody,
    decoder: D,
    who: &'static str,
    /// Something of this call reached the caller: no retry from here on.
    forwarded: bool,
}

impl<D: Decoder> StreamReader<D> {
    fn new(
        call: &Call,
        (slot, response): (Option<Slot>, reqwest::Response),
        decoder: D,
        who: &'static str,
    ) -> Self {
        StreamReader {
            slot,
            body: call.transport.sse_body(response, MAX_EVENT_BYTES),
            decoder,
            who,
            forwarded: false,
        }
    }

    /// A fault before anything was forwarded, to be retried: the slot is
    /// given back for the wait, and the lane told of the failure.
    fn give_back(&mut self, lane: &Lane, fault: ProviderError) -> Failure {
        self.slot = None;
        let failure = Failure::from(fault);
        super::tell_lane(lane, &failure);
        failure
    }

    /// Reads the next chunk: the events it completes, then how the stream
    /// ended if it did. The call's budget stops a text past its bound.
    async fn next(
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
            let fault = match self.decoder.accept(item) {
                Ok(more) => match within_budget(more, budget, self.who, &mut events) {
                    Ok(()) => continue,
                    Err(fault) => fault,
                },
                Err(fault) => fault,
            };
            self.forwarded |= !events.is_empty();
            return (events, Some(ReadEnd::Fault(fault)));
        }
        self.forwarded |= !events.is_empty();
        (events, finished.then_some(ReadEnd::Finished))
    }
}

/// `more` events into `events` while the call's budget allows: a tool
/// call past the bound is never forwarded (so never run or shown), a text
/// delta is forwarded and then counted.
fn within_budget(
    more: Vec<ModelEvent>,
    budget: &mut CallBudget,
    who: &str,
    events: &mut Vec<ModelEvent>,
) -> Result<(), ProviderError> {
    for event in more {
        if let ModelEvent::ToolCall(_) = &event {
            budget.tool_calls(who, 1)?;
        }
        let text = match &event {
            ModelEvent::TextDelta(delta) => delta.len(),
            _ => 0,
        };
        events.push(event);
        budget.text(who, text)?;
    }
    Ok(())
}

/// One model call as a stream: sent (with retries while nothing was
/// forwarded, each announced), read, and ended by its budget's deadline if
/// it runs long. `decoder` makes a fresh decoder for each try.
pub fn call_stream<D: Decoder>(
    prepared: Result<Call, ProviderError>,
    decoder: fn() -> D,
    cancel: CancellationToken,
) -> impl Stream<Item = Result<ModelEvent, ProviderError>> {
    async_stream::stream! {
        let call = match prepared {
            Ok(call) => call,
            Err(error) => {
                yield Err(error);
                return;
            }
        };
        let who = call.transport.peer.name;
        let mut budget = CallBudget::start(call.limits);
        let mut tries = Tries::default();
        'attempts: loop {
            let mut sent = None;
            {
                let lane = Some(Arc::clone(&call.lane));
                let sending =
                    call.transport.send_with_retries(&mut budget, &cancel, tries, lane, || call.send_once());
                futures_util::pin_mut!(sending);
                while let Some(step) = sending.next().await {
                    match step {
                        Sending::Notice(notice) => yield Ok(ModelEvent::Retry(notice)),
                        Sending::Sent(result, made) => {
                            tries = made;
                            sent = Some(result);
                        }
                    }
                }
            }
            let response = match sent {
                Some(Ok(response)) => response,
                Some(Err(error)) => {
                    yield Err(error);
                    return;
                }
                None => return,
            };
            let mut reader = StreamReader::new(&call, response, decoder(), who);
            loop {
                let (events, end) = reader.next(&mut budget, &cancel).await;
                for event in events {
                    yield Ok(event);
                }
                let fault = match end {
                    None => continue,
                    Some(ReadEnd::Cancelled) => return,
                    Some(ReadEnd::Finished) => {
                        yield finish(reader.decoder, tries).map(ModelEvent::Done);
                        return;
                    }
                    Some(ReadEnd::Fault(fault)) => fault,
                };
                // Retried only while nothing of this call was shown.
                let fault = if reader.forwarded {
                    fault
                } else {
                    match call.transport.policy.decide(who, tries, reader.give_back(&call.lane, fault)) {
                        Decision::Retry { wait, notice } => {
                            let (next, rate_limited) = (tries.after(&notice, wait), notice.rate_limited);
                            yield Ok(ModelEvent::Retry(notice));
                            if let Err(error) = call.transport.pause(wait, rate_limited, Some(&call.lane), &mut budget, &cancel).await {
                                yield Err(error);
                                return;
                            }
                            tries = next;
                            continue 'attempts;
                        }
                        Decision::GiveUp(error) => error,
                    }
                };
                yield Err(cut_short(fault, reader.decoder, tries));
                return;
            }
        }
    }
}

/// The call's summary, with the time it queued for a slot.
fn finish<D: Decoder>(decoder: D, tries: Tries) -> Result<CallSummary, ProviderError> {
    decoder.finish(tries.retries).map(|mut summary| {
        summary.queued_ms = u64::try_from(tries.queued.as_millis()).unwrap_or(u64::MAX);
        summary
    })
}

/// A call's stream that broke: the usage it reported before it was cut
/// stays with the error; what was billed is unknown (`partial`).
fn cut_short<D: Decoder>(fault: ProviderError, decoder: D, tries: Tries) -> ProviderError {
    let partial = match finish(decoder, tries) {
        Ok(summary) => Some(summary),
        Err(end) => end.summary.map(|summary| *summary),
    };
    // A call stopped at a bound keeps its usage, not what passed the bound:
    // the provider's state is the reply's parts, every tool call past the
    // 128th or every byte of an oversized text among them, and it would go
    // whole into the run log.
    let past_a_bound = fault.kind == ErrorKind::TooLarge;
    fault.with_summary(partial.map(|mut summary| {
        summary.partial = true;
        if past_a_bound {
            summary.provider_state = None;
        }
        summary
    }))
}
