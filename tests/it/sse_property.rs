//! Property tests of the incremental SSE parser: random streams give the
//! events npm `eventsource-parser` reads from them (the differential test,
//! by node); however the bytes of a real stream are cut into pieces, it
//! yields the same events as when they arrive whole; and no input, however
//! hostile, makes it panic.

use crate::support;

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use promptlab::provider::sse::{SseItem, SseMessage, SseParser};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

fn parse(pieces: &[&[u8]]) -> Result<Vec<SseItem>, String> {
    let mut parser = SseParser::new();
    let mut items = Vec::new();
    for piece in pieces {
        parser.push(piece);
        while let Some(item) = parser.next_item().map_err(|e| e.to_string())? {
            items.push(item);
        }
    }
    items.extend(parser.finish().map_err(|e| e.to_string())?);
    Ok(items)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/data/gemini/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

const FIXTURES: [&str; 5] = [
    "fantasy__TestGoogleCommon__gemini-3-pro-preview__multi_tool_streaming.0.sse",
    "fantasy__TestGoogleCommon__gemini-3-pro-preview__tool_streaming.1.sse",
    "streaming-failure-error-mid-stream.txt",
    "streaming-success-thinking-reply-thought-summary.txt",
    "pydantic-ai__test_google_model_thinking_part_iter.0.sse",
];

/// Cuts `bytes` at the given fractions of its length.
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_chunking_of_a_real_stream_parses_the_same(which in 0..FIXTURES.len(), cuts in proptest::collection::vec(any::<usize>(), 0..60)) {
        let bytes = fixture(FIXTURES[which]);
        let whole = parse(&[&bytes]).unwrap();
        prop_assert!(!whole.is_empty());
        let pieces = cut(&bytes, cuts);
        prop_assert_eq!(parse(&pieces).unwrap(), whole);
    }

    #[test]
    fn chunks_split_inside_characters_and_separators_parse_the_same(text in "[a-zé€😀\\r\\n :{}\"]{0,200}", cuts in proptest::collection::vec(any::<usize>(), 0..40)) {
        let bytes = format!("data: {text}\r\n\r\ndata: £€\r\n\r\n{text}").into_bytes();
        let whole = parse(&[&bytes]);
        prop_assert_eq!(parse(&cut(&bytes, cuts)), whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000), cuts in proptest::collection::vec(any::<usize>(), 0..20)) {
        let _ = parse(&cut(&bytes, cuts));
    }
}

#[test]
fn one_byte_at_a_time_parses_the_same() {
    for name in FIXTURES {
        let bytes = fixture(name);
        let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse(&pieces).unwrap(), parse(&[&bytes]).unwrap(), "{name}");
    }
}

/// One line of a stream: every field the standard names, with and without
/// the space after the colon, comments, lines of no field, blank lines.
fn stream_line() -> impl Strategy<Value = String> {
    let value = || "[a-z0-9 :é€😀\u{feff}\\x00]{0,10}";
    prop_oneof![
        3 => value().prop_map(|v| format!("data:{v}")),
        2 => value().prop_map(|v| format!("data: {v}")),
        1 => Just("data".to_string()),
        1 => value().prop_map(|v| format!("event:{v}")),
        1 => value().prop_map(|v| format!("id: {v}")),
        1 => "[0-9]{0,9}".prop_map(|v| format!("retry: {v}")),
        1 => value().prop_map(|v| format!("retry:{v}")),
        1 => value().prop_map(|v| format!(":{v}")),
        1 => value(),
        4 => Just(String::new()),
    ]
}

/// A stream: perhaps a byte-order mark, lines ended by CR, LF or CRLF at
/// random, and a last LF. (`eventsource-parser` holds a CR that ends its
/// input, waiting to see whether a LF follows; the standard and this parser
/// take it as a line end at once, so a stream ending in CR would differ
/// only in that.)
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let ending = prop_oneof![Just("\n"), Just("\r"), Just("\r\n")];
    (
        any::<bool>(),
        proptest::collection::vec((stream_line(), ending), 0..24),
    )
        .prop_map(|(bom, lines)| {
            let mut text = String::from(if bom { "\u{feff}" } else { "" });
            for (line, ending) in lines {
                text.push_str(&line);
                text.push_str(ending);
            }
            text.push('\n');
            text.into_bytes()
        })
}

/// What this parser says of the pieces, as `sse-events.mjs` writes it
/// (`Other` is this parser's addition: the reference reports those lines as
/// unknown fields).
fn ours(pieces: &[&[u8]]) -> Value {
    let mut parser = SseParser::new();
    let mut said = Vec::new();
    for piece in pieces {
        parser.push(piece);
        while let Some(message) = parser.next_message().expect("valid UTF-8 streams parse") {
            match message {
                SseMessage::Event(e) => said
                    .push(json!({"type": "event", "event": e.event, "id": e.id, "data": e.data})),
                SseMessage::Retry(retry) => said.push(json!({"type": "retry", "retry": retry})),
                SseMessage::Other(_) => {}
            }
        }
    }
    Value::Array(said)
}

/// `.ci/references/sse-events.mjs` under node, one stream per line.
struct Reference {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Reference {
    fn start(script: &std::path::Path) -> Reference {
        let mut child = Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs");
        let input = child.stdin.take().expect("piped");
        let output = BufReader::new(child.stdout.take().expect("piped"));
        Reference {
            child,
            input,
            output,
        }
    }

    fn events(&mut self, pieces: &[&[u8]]) -> Value {
        let chunks: Vec<String> = pieces
            .iter()
            .map(|piece| data_encoding::BASE64.encode(piece))
            .collect();
        writeln!(self.input, "{}", json!(chunks)).expect("node reads");
        let mut line = String::new();
        self.output.read_line(&mut line).expect("node answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("node said {line:?}: {e}"))
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn random_streams_give_the_events_eventsource_parser_reads() {
    let Some(script) = support::references::node_script("sse-events.mjs", "eventsource-parser")
    else {
        return;
    };
    let reference = RefCell::new(Reference::start(&script));
    let cuts = proptest::collection::vec(any::<usize>(), 0..12);
    let mut runner = TestRunner::new(Config::with_cases(400));
    runner
        .run(&(stream(), cuts), |(bytes, cuts)| {
            let pieces = cut(&bytes, cuts);
            let theirs = reference.borrow_mut().events(&pieces);
            prop_assert_eq!(
                ours(&pieces),
                theirs,
                "stream {:?}",
                String::from_utf8_lossy(&bytes)
            );
            Ok(())
        })
        .unwrap();
}

#[test]
fn random_text_gives_the_events_eventsource_parser_reads() {
    // No grammar: any mix of field names, colons, spaces, line ends and BOMs.
    let Some(script) = support::references::node_script("sse-events.mjs", "eventsource-parser")
    else {
        return;
    };
    let reference = RefCell::new(Reference::start(&script));
    let text = "(data|event|id|retry|[a-z0-9: é\u{feff}\\x00\r\n]){0,80}";
    let cuts = proptest::collection::vec(any::<usize>(), 0..12);
    let mut runner = TestRunner::new(Config::with_cases(400));
    runner
        .run(&(text, cuts), |(text, cuts)| {
            let bytes = format!("{text}\n").into_bytes();
            let pieces = cut(&bytes, cuts);
            let theirs = reference.borrow_mut().events(&pieces);
            prop_assert_eq!(ours(&pieces), theirs, "stream {:?}", text);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_differential_test_can_fail() {
    // The two bugs of issue #27, as the reference reads them.
    let Some(script) = support::references::node_script("sse-events.mjs", "eventsource-parser")
    else {
        return;
    };
    let mut reference = Reference::start(&script);
    let two = reference.events(&[b"data: a\n\r\ndata: b\n\n"]);
    assert_eq!(two.as_array().map(Vec::len), Some(2), "{two}");
    assert_eq!(ours(&[b"data: a\n\r\ndata: b\n\n"]), two);
    let pieces: [&[u8]; 2] = [b"data: a\r\n\n", b"data: b\n\n"];
    assert_eq!(ours(&pieces[..1]), reference.events(&pieces[..1]));
    assert_ne!(ours(&pieces), json!([]));
}
