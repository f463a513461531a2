//! How fast the SSE parser reads a large stream (BENCHMARKS.md): 64 MiB of
//! Gemini-like `data:` events in CRLF, fed in pieces of 16 KiB, 1 KiB and
//! 7 bytes, and one 16 MiB event (the cap) in 16 KiB pieces.
//! `cargo run --release --example sse_throughput`

use std::time::Instant;

use promptlab::provider::sse::SseParser;

fn read_all(stream: &[u8], piece: usize) -> usize {
    let mut parser = SseParser::new();
    let mut events = 0;
    for chunk in stream.chunks(piece) {
        parser.push(chunk);
        while let Some(_item) = parser.next_item().expect("the stream is well formed") {
            events += 1;
        }
    }
    events + usize::from(parser.finish().expect("well formed").is_some())
}

fn measure(name: &str, stream: &[u8], piece: usize) {
    let started = Instant::now();
    let events = read_all(stream, piece);
    let seconds = started.elapsed().as_secs_f64();
    let mib = stream.len() as f64 / (1024.0 * 1024.0);
    println!(
        "{name}, {piece}-byte pieces: {events} events, {:.0} MiB/s",
        mib / seconds
    );
}

fn main() {
    let event = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"{}\"}}]}}}}]}}\r\n\r\n",
        "The excess is £350. ".repeat(20)
    );
    let stream = event.repeat(64 * 1024 * 1024 / event.len());
    for piece in [16 * 1024, 1024, 7] {
        measure("64 MiB of 480-byte events", stream.as_bytes(), piece);
    }
    let big = format!("data: {}\r\n\r\n", "x".repeat(16 * 1024 * 1024 - 64));
    measure("one 16 MiB event", big.as_bytes(), 16 * 1024);
}
