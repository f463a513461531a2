//! Property tests of the incremental SSE parser: however the bytes of a real
//! stream are cut into pieces, it yields the same events as when they arrive
//! whole; and no input, however hostile, makes it panic.

use promptlab::provider::sse::{SseItem, SseParser};
use proptest::prelude::*;

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
