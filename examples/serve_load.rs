//! A load generator for `promptlab serve` (see BENCHMARKS.md): `CLIENTS`
//! concurrent clients, each posting chat turns one after another until
//! `TURNS` have been asked for in all; every response is read to its end
//! and counted only if its last event is `done`. Prints turns per second
//! and time to first byte (p50/p95/p99) as seen by the client.
//!
//! `cargo run --release --example serve_load -- URL CLIENTS TURNS`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;

const BODY: &str =
    r#"{"claimId":"CLM-HH-0001","messages":[{"role":"user","text":"What is the excess?"}]}"#;

struct Turn {
    first_byte: Duration,
    done: bool,
}

async fn one_turn(client: &reqwest::Client, url: &str) -> Result<Turn, reqwest::Error> {
    let started = Instant::now();
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(BODY)
        .send()
        .await?;
    let mut body = response.bytes_stream();
    let mut first_byte = None;
    let mut tail = Vec::new();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        first_byte.get_or_insert_with(|| started.elapsed());
        tail.extend_from_slice(&chunk);
        let keep = tail.len().saturating_sub(4096);
        tail.drain(..keep);
    }
    let text = String::from_utf8_lossy(&tail);
    let last = text.trim_end().rsplit("\n\n").next().unwrap_or_default();
    Ok(Turn {
        first_byte: first_byte.unwrap_or_default(),
        done: last.contains(r#""type":"done""#),
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, clients, turns] = args.as_slice() else {
        eprintln!("usage: serve_load URL CLIENTS TURNS");
        std::process::exit(2);
    };
    let url = format!("{}/api/chat", url.trim_end_matches('/'));
    let clients: usize = clients.parse().expect("CLIENTS is a number");
    let turns: usize = turns.parse().expect("TURNS is a number");
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .expect("a client");
    let asked = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url, asked) = (client.clone(), url.clone(), asked.clone());
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            while asked.fetch_add(1, Ordering::SeqCst) < turns {
                seen.push(one_turn(&client, &url).await);
            }
            seen
        }));
    }
    let mut first_bytes = Vec::new();
    let (mut done, mut failed) = (0usize, 0usize);
    for task in tasks {
        for turn in task.await.expect("a client task") {
            match turn {
                Ok(turn) if turn.done => {
                    done += 1;
                    first_bytes.push(turn.first_byte);
                }
                _ => failed += 1,
            }
        }
    }
    let wall = started.elapsed();
    first_bytes.sort();
    println!(
        "clients={clients} turns={done} failed={failed} wall={:.2}s turns/s={:.0} ttfb p50={:.2}ms p95={:.2}ms p99={:.2}ms",
        wall.as_secs_f64(),
        done as f64 / wall.as_secs_f64(),
        percentile(&first_bytes, 0.50).as_secs_f64() * 1e3,
        percentile(&first_bytes, 0.95).as_secs_f64() * 1e3,
        percentile(&first_bytes, 0.99).as_secs_f64() * 1e3,
    );
}
