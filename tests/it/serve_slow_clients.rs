//! `promptlab serve` against clients that would hold a connection for ever
//! (hostile-probe regressions), over raw TCP: a body sent a byte at a time
//! (each byte used to reset its timeout), a `Content-Length` over the cap
//! (it used to wait 10 s for a body it would refuse, then answer 400 in
//! axum's words), and a client that sends requests and never reads their
//! answers (hyper has no write timeout). Each is bounded by a deadline the
//! server keeps, checked by reading to EOF with a generous timeout, and the
//! connection cap is free again afterwards. Also the one documented
//! exception to JSON errors: a request head hyper refuses itself.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::repo_root;
use support::serve::Server;

/// The server's deadlines (docs/serve.md, "Limits").
const BODY_DEADLINE: Duration = Duration::from_secs(10);
const WRITE_STALL: Duration = Duration::from_secs(30);
/// Far beyond any deadline plus scheduling noise: a read that times out
/// here is a connection the server did not close.
const GENEROUS: Duration = Duration::from_secs(60);

fn start(max_connections: &str) -> Server {
    let script = repo_root().join("tests/data/scripts/excess.yaml");
    Server::start(&script, &["--max-connections", max_connections])
}

fn address(server: &Server) -> &str {
    server.url.strip_prefix("http://").unwrap()
}

/// The status and the body of a whole HTTP/1.1 answer.
fn parse_answer(answer: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok());
    (status.unwrap_or(0), body.to_string())
}

/// Reads until the server closes the connection; panics if it has not
/// within `GENEROUS`.
fn read_until_closed(tcp: &mut TcpStream) -> Vec<u8> {
    tcp.set_read_timeout(Some(GENEROUS)).unwrap();
    let mut answer = Vec::new();
    if let Err(error) = tcp.read_to_end(&mut answer) {
        panic!(
            "the server kept the connection open for {GENEROUS:?} ({error}); read so far: {:?}",
            String::from_utf8_lossy(&answer)
        );
    }
    answer
}

/// `GET /favicon.ico` on a fresh connection: 204, or 503 while the cap is full.
fn probe_status(server: &Server) -> u16 {
    let mut tcp = TcpStream::connect(address(server)).unwrap();
    let request = format!(
        "GET /favicon.ico HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
        address(server)
    );
    tcp.write_all(request.as_bytes()).unwrap();
    parse_answer(&read_until_closed(&mut tcp)).0
}

/// Probes until the answer is `wanted`, or panics at `deadline`.
fn wait_for_status(server: &Server, wanted: u16, deadline: Instant) -> Instant {
    loop {
        let status = probe_status(server);
        if status == wanted {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "still {status}, not {wanted}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The head of a JSON POST to `/api/fingerprint` with `Content-Length: length`.
fn post_head(server: &Server, length: usize) -> String {
    format!(
        "POST /api/fingerprint HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n",
        address(server)
    )
}

/// Regression: with the per-chunk timeout, a byte every second kept the
/// body (and the connection, and a place under the cap) for as long as the
/// client went on; now the whole body has 10 s, then a JSON 408 and close.
#[test]
fn a_body_sent_a_byte_at_a_time_gets_408_at_its_deadline_and_frees_the_connection() {
    let server = start("2");
    let started = Instant::now();
    let mut dripping: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut tcp = TcpStream::connect(address(&server)).unwrap();
            tcp.write_all(post_head(&server, 1000).as_bytes()).unwrap();
            tcp
        })
        .collect();
    for tcp in &dripping {
        let mut writer = tcp.try_clone().unwrap();
        // Drips for longer than the test waits; stops when the server closes.
        std::thread::spawn(move || {
            for _ in 0..90 {
                if writer.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        });
    }
    wait_for_status(&server, 503, started + BODY_DEADLINE);
    let expected = regex::Regex::new(r"^request body: \d+ of 1000 bytes arrived in 10 s; a body must arrive in full within 10 s of the request's head$").unwrap();
    for tcp in &mut dripping {
        let (status, body) = parse_answer(&read_until_closed(tcp));
        let elapsed = started.elapsed();
        assert_eq!(status, 408, "{body}");
        let error: serde_json::Value = serde_json::from_str(&body).expect("a JSON error");
        let message = error["error"].as_str().unwrap();
        assert!(expected.is_match(message), "{message}");
        assert!(elapsed >= BODY_DEADLINE, "cut off early: {elapsed:?}");
    }
    // The server closes the socket a moment before it counts it closed.
    wait_for_status(&server, 204, Instant::now() + Duration::from_secs(5));
}

/// Regression: a declared length over 8 MiB waited 10 s for the body, then
/// got 400 "Failed to buffer the request body: …"; it is refused from the
/// head, at once.
#[test]
fn a_content_length_over_8_mib_is_413_from_the_head_at_once() {
    let server = start("4");
    let mut tcp = TcpStream::connect(address(&server)).unwrap();
    let request = post_head(&server, 9 * 1024 * 1024) + "{}";
    tcp.write_all(request.as_bytes()).unwrap();
    let started = Instant::now();
    let (status, body) = parse_answer(&read_until_closed(&mut tcp));
    assert_eq!(status, 413, "{body}");
    assert_eq!(
        body,
        r#"{"error":"request body: Content-Length 9437184 is over the 8 MiB limit"}"#
    );
    assert!(
        started.elapsed() < BODY_DEADLINE / 2,
        "not at once: {:?}",
        started.elapsed()
    );
    // The cap itself is not refused.
    let mut tcp = TcpStream::connect(address(&server)).unwrap();
    let overrides = r#"{"overrides":{}}"#;
    let request =
        post_head(&server, overrides.len()).replace("\r\n\r\n", "\r\nconnection: close\r\n\r\n");
    tcp.write_all(format!("{request}{overrides}").as_bytes())
        .unwrap();
    assert_eq!(parse_answer(&read_until_closed(&mut tcp)).0, 200);
}

/// Regression: a client that pipelines requests and never reads held its
/// connection (and a place under the cap) for ever once its socket was
/// full; now a write that waits 30 s closes it.
#[test]
fn a_client_that_never_reads_its_answers_is_closed_after_the_write_stall_timeout() {
    let server = start("1");
    let mut stalled = TcpStream::connect(address(&server)).unwrap();
    // About 48 MB of answers (12 KB each), far more than loopback buffers hold.
    let request = format!(
        "GET /api/prompts HTTP/1.1\r\nhost: {}\r\n\r\n",
        address(&server)
    );
    // Once the server stops reading, this write waits; what it sent is enough.
    stalled
        .set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let _ = stalled.write_all(request.repeat(4000).as_bytes());
    let started = Instant::now();
    let held = wait_for_status(&server, 503, started + GENEROUS);
    let freed = wait_for_status(&server, 204, started + WRITE_STALL + GENEROUS);
    assert!(
        freed - held >= WRITE_STALL / 2,
        "freed before its socket could have stalled that long: {:?}",
        freed - held
    );
    // Whatever it reads now, the server has closed it.
    let mut received = 0usize;
    let mut buffer = vec![0u8; 1 << 20];
    stalled.set_read_timeout(Some(GENEROUS)).unwrap();
    loop {
        match stalled.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => received += n,
        }
    }
    assert!(
        received < 4000 * 12_000,
        "it was cut off, not served: {received} bytes"
    );
}

/// The documented exception (docs/serve.md, "Limits"): hyper answers a
/// head it cannot parse before any of our code runs, with an empty body.
#[test]
fn a_head_too_large_is_hypers_431_with_no_body_as_documented() {
    let server = start("4");
    let big_header = format!(
        "GET /api/claims HTTP/1.1\r\nhost: {}\r\nx-big: {}\r\n\r\n",
        address(&server),
        "a".repeat(1_000_000)
    );
    let many_headers = format!(
        "GET /api/claims HTTP/1.1\r\nhost: {}\r\n{}\r\n",
        address(&server),
        (0..5000)
            .map(|i| format!("x-h{i}: 1\r\n"))
            .collect::<String>()
    );
    for request in [big_header, many_headers] {
        let mut tcp = TcpStream::connect(address(&server)).unwrap();
        // The server answers and closes before it has read all of it, so
        // the write may fail and the close may be a reset after the answer.
        let _ = tcp.write_all(request.as_bytes());
        tcp.set_read_timeout(Some(GENEROUS)).unwrap();
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(n @ 1..) = tcp.read(&mut buffer) {
            answer.extend_from_slice(&buffer[..n]);
        }
        assert_eq!(parse_answer(&answer), (431, String::new()));
    }
}
