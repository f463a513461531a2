//! The rate-limited stand-in of `tests/it/support/quota_server.rs`, as a
//! program for `benches/quota.sh` (BENCHMARKS.md): an OpenAI-compatible and
//! a Gemini endpoint answering each call after LATENCY_MS while a token
//! bucket of RPS requests a second allows it, else 429 with
//! `Retry-After: 1`; with PER_DAY, the calls past that many get the
//! provider's spent-quota answer. `GET /count` says what it did.
//!
//! `cargo run --release --example quota_server -- PORT LATENCY_MS RPS [PER_DAY]`
//! then `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 promptlab eval … --provider openai`

// The tests' accessors (`answered`, `rate_limited`, …) go unused here: the
// program reports through `GET /count`.
#[allow(dead_code)]
#[path = "../tests/it/support/quota_server.rs"]
mod quota_server;

use std::time::Duration;

use quota_server::{Limits, QuotaServer};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, name: &str| -> f64 {
        args.get(i)
            .and_then(|text| text.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("usage: quota_server PORT LATENCY_MS RPS [PER_DAY] ({name} missing or not a number)");
                std::process::exit(2)
            })
    };
    let port = number(0, "PORT") as u16;
    let limits = Limits {
        latency: Duration::from_millis(number(1, "LATENCY_MS") as u64),
        per_second: number(2, "RPS"),
        per_minute: None,
        per_day: args.get(3).map(|_| number(3, "PER_DAY") as u64),
    };
    let server = QuotaServer::start(port, limits);
    eprintln!("listening on {} ({limits:?})", server.base_url);
    // Serves until killed; the counts are at GET /count.
    loop {
        std::thread::park();
    }
}
