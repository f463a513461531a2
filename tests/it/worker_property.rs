//! Property tests of the `worker` provider's input paths: a deployment's
//! event stream (any events, any framing, any chunking decode to the same
//! events; any bytes never panic), the endpoint (any text never panics, and
//! its password and query never reach the shown form), and the request body
//! (what the worker writes, `serve` reads back as the same request).

use promptlab::chat::wire::WireRequest;
use promptlab::chat::{ChatEvent, ChatMessage, ClaimInput, ClientAction, Locale};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::sse::SseParser;
use promptlab::serve::body::{RequestDefaults, parse_chat_body};
use promptlab::worker::Endpoint;
use promptlab::worker::events::{MAX_EVENT_BYTES, decode as decode_item};
use proptest::prelude::*;

/// The body as the worker reads it: framed by the SSE parser under the
/// worker's per-event cap, each item decoded as a chat event.
fn decode(pieces: &[&[u8]]) -> Result<Vec<ChatEvent>, String> {
    let mut parser = SseParser::with_max_event_bytes(MAX_EVENT_BYTES);
    let mut events = Vec::new();
    for piece in pieces {
        parser.push(piece);
        while let Some(item) = parser.next_item().map_err(|e| e.to_string())? {
            events.extend(decode_item(item).map_err(|e| e.message)?);
        }
    }
    if let Some(item) = parser.finish().map_err(|e| e.to_string())? {
        events.extend(decode_item(item).map_err(|e| e.message)?);
    }
    Ok(events)
}

/// Cuts `bytes` at the given offsets (modulo its length).
fn cut(bytes: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
    cuts.iter_mut().for_each(|c| *c %= bytes.len() + 1);
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    let mut start = 0;
    for end in cuts {
        pieces.push(&bytes[start..end]);
        start = end;
    }
    pieces.push(&bytes[start..]);
    pieces
}

fn event() -> impl Strategy<Value = ChatEvent> {
    let text = "[a-zé€😀 \\n\"\\\\{}:]{0,40}";
    prop_oneof![
        text.prop_map(|text| ChatEvent::TextDelta { text }),
        (text, "[a-z_]{1,20}").prop_map(|(label, tool)| ChatEvent::Activity {
            id: "call_1".into(),
            tool,
            label
        }),
        (text, any::<bool>()).prop_map(|(result, ok)| ChatEvent::ToolResult {
            id: "call_1".into(),
            tool: "get_schedule".into(),
            ok,
            result,
            truncated: !ok
        }),
        text.prop_map(|panel| ChatEvent::ClientAction(ClientAction::HighlightPanel { panel })),
        text.prop_map(|message| ChatEvent::Error { message }),
    ]
}

/// The events as a deployment might frame them: `\n\n` or `\r\n\r\n`,
/// with comments and keep-alives between them.
fn framed(events: &[ChatEvent], crlf: bool, comments: &[bool]) -> Vec<u8> {
    let end = if crlf { "\r\n\r\n" } else { "\n\n" };
    let mut body = String::new();
    for (index, event) in events.iter().enumerate() {
        if comments.get(index).copied().unwrap_or(false) {
            body.push_str(&format!(": keep-alive{end}data:{end}"));
        }
        body.push_str(&format!(
            "data: {}{end}",
            serde_json::to_string(event).unwrap()
        ));
    }
    body.into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_events_in_any_framing_and_chunking_decode_the_same(
        events in proptest::collection::vec(event(), 0..12),
        crlf in any::<bool>(),
        comments in proptest::collection::vec(any::<bool>(), 0..12),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let body = framed(&events, crlf, &comments);
        prop_assert_eq!(decode(&cut(&body, cuts)).unwrap(), events);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..2000),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let _ = decode(&cut(&bytes, cuts));
    }

    #[test]
    fn any_endpoint_text_never_panics(text in "\\PC{0,80}") {
        let _ = Endpoint::parse(&text).map(|endpoint| endpoint.shown().to_string());
    }

    #[test]
    fn passwords_and_queries_never_reach_the_shown_endpoint(
        user in "[a-z]{1,8}",
        password in "[A-Za-z0-9]{6,16}",
        query in "[A-Za-z0-9]{6,16}",
        path in "(/[a-z]{1,8}){0,3}",
    ) {
        let text = format!("https://{user}:{password}@staging.example.com{path}?token={query}#{query}");
        let endpoint = Endpoint::parse(&text).unwrap();
        prop_assert!(!endpoint.shown().contains(&password));
        prop_assert!(!endpoint.shown().contains(&query));
        let debug = format!("{:?}", endpoint);
        prop_assert!(!debug.contains(&password));
    }

    #[test]
    fn what_the_worker_writes_serve_reads_back_as_the_same_request(
        texts in proptest::collection::vec("[a-zé😀?][a-zé😀 ?]{0,39}", 1..6),
        screen_actions in any::<bool>(),
        voice in any::<bool>(),
        us in any::<bool>(),
        overrides in proptest::collection::btree_map("[a-z.]{1,12}", "\\PC{0,30}", 0..4),
    ) {
        let mut request = promptlab::chat::ChatRequest::new(
            ClaimInput::Id("CLM-HH-0001".into()),
            "placeholder",
            chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap(),
        );
        request.messages = texts
            .iter()
            .enumerate()
            .map(|(index, text)| if index.is_multiple_of(2) { ChatMessage::user(text) } else { ChatMessage::assistant(text) })
            .collect();
        if request.messages.len().is_multiple_of(2) {
            request.messages.push(ChatMessage::user("last"));
        }
        request.prompt.screen_actions = screen_actions;
        request.prompt.voice = voice;
        request.prompt.locale = Some(if us { Locale::Us } else { Locale::Uk });
        request.prompt.overrides = overrides;
        let body = serde_json::to_vec(&WireRequest::from_request(&request).unwrap()).unwrap();
        let read = parse_chat_body(&body, &RequestDefaults::default(), PromptRegistry::embedded());
        let read = match read {
            Ok(read) => read,
            Err(error) => return Err(TestCaseError::fail(format!("{error}"))),
        };
        prop_assert_eq!(read.messages, request.messages);
        // `PromptOptions` equality skips the overrides (they are not
        // serialized with it): compare them on their own.
        prop_assert_eq!(&read.prompt.overrides, &request.prompt.overrides);
        prop_assert_eq!(read.prompt, request.prompt.clone());
        prop_assert_eq!(read.model, request.model);
        prop_assert_eq!(read.thinking_level, request.thinking_level);
        prop_assert!(matches!(read.claim, ClaimInput::Id(ref id) if id == "CLM-HH-0001"));
    }
}

#[test]
fn a_claim_document_travels_whole() {
    let path = format!("{}/claims/CLM-HH-0001.json", env!("CARGO_MANIFEST_DIR"));
    let claim = promptlab::claims::load_claim_file(std::path::Path::new(&path)).unwrap();
    let mut request = promptlab::chat::ChatRequest::new(
        ClaimInput::Document(std::sync::Arc::new(claim.clone())),
        "What is the excess?",
        chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap(),
    );
    request.prompt.capability = Some("summarise".into());
    let body = serde_json::to_vec(&WireRequest::from_request(&request).unwrap()).unwrap();
    let read = parse_chat_body(
        &body,
        &RequestDefaults::default(),
        PromptRegistry::embedded(),
    )
    .unwrap();
    let ClaimInput::Document(sent) = read.claim else {
        panic!("a document was sent");
    };
    assert_eq!(
        serde_json::to_value(&sent.claim).unwrap(),
        serde_json::to_value(&claim.claim).unwrap()
    );
}
