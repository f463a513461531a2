//! A stand-in for Gemini's `streamGenerateContent` for benchmarks (see
//! BENCHMARKS.md): every request is answered, after `LATENCY_MS`, with one
//! streamed text reply and its usage, like a model that took that long. It
//! counts the requests it answered (`…:generateContent` gets the same reply
//! as one JSON body) and prints the count to stderr on each
//! `GET /count` and when stopped.
//!
//! `cargo run --release --example mock_gemini -- PORT LATENCY_MS`
//! then `GEMINI_BASE_URL=http://127.0.0.1:PORT GEMINI_API_KEY=x promptlab …`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};

const REPLY: &str = concat!(
    r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"The excess on this policy is recorded in its policy section."}]},"finishReason":"STOP"}],"#,
    r#""usageMetadata":{"promptTokenCount":5200,"candidatesTokenCount":40,"thoughtsTokenCount":20,"cachedContentTokenCount":3900,"totalTokenCount":5260},"modelVersion":"mock"}"#,
    "\r\n\r\n"
);

#[derive(Clone)]
struct Mock {
    latency: Duration,
    answered: Arc<AtomicUsize>,
}

/// The same reply, unstreamed, for `…:generateContent` (what promptfoo's
/// Google provider calls, for the side-by-side in BENCHMARKS.md).
const JSON_REPLY: &str = concat!(
    r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"The excess on this policy is recorded in its policy section."}]},"finishReason":"STOP"}],"#,
    r#""usageMetadata":{"promptTokenCount":5200,"candidatesTokenCount":40,"thoughtsTokenCount":20,"cachedContentTokenCount":3900,"totalTokenCount":5260},"modelVersion":"mock"}"#
);

async fn answer(
    State(mock): State<Mock>,
    axum::extract::Path(call): axum::extract::Path<String>,
) -> impl IntoResponse {
    tokio::time::sleep(mock.latency).await;
    mock.answered.fetch_add(1, Ordering::Relaxed);
    if call.ends_with(":generateContent") {
        ([(header::CONTENT_TYPE, "application/json")], JSON_REPLY)
    } else {
        ([(header::CONTENT_TYPE, "text/event-stream")], REPLY)
    }
}

async fn count(State(mock): State<Mock>) -> String {
    format!("{}\n", mock.answered.load(Ordering::Relaxed))
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let latency_ms: u64 = args.next().and_then(|l| l.parse().ok()).unwrap_or(200);
    let mock = Mock {
        latency: Duration::from_millis(latency_ms),
        answered: Arc::new(AtomicUsize::new(0)),
    };
    let app = Router::new()
        .route("/v1beta/models/{model}", post(answer))
        .route("/count", get(count))
        .with_state(mock.clone());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    println!("listening on http://{}", listener.local_addr().unwrap());
    let answered = mock.answered.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .unwrap();
    eprintln!("answered {} requests", answered.load(Ordering::Relaxed));
}
