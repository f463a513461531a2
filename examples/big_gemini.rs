//! A Gemini stand-in that streams a large reply, for the peak-memory
//! figures of BENCHMARKS.md ("Bounded model streams"): `endless` sends text
//! chunks until the client goes away; `MB` sends that many megabytes of
//! text in 64 KiB chunks, then finishes the reply with its usage.
//!
//! `cargo run --release --example big_gemini -- PORT endless|MB`
//! then `GEMINI_BASE_URL=http://127.0.0.1:PORT GEMINI_API_KEY=x-bench-key-123 promptlab chat …`

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;

const PIECE: usize = 64 * 1024;

fn chunk() -> Bytes {
    let text = "lorem ipsum ".repeat(PIECE / 12);
    let json = serde_json::json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]});
    Bytes::from(format!("data: {json}\r\n\r\n"))
}

const LAST: &str = concat!(
    r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"."}]},"finishReason":"STOP"}],"#,
    r#""usageMetadata":{"promptTokenCount":5200,"candidatesTokenCount":40,"totalTokenCount":5240},"modelVersion":"mock"}"#,
    "\r\n\r\n"
);

/// `None`: endless; else the number of chunks.
#[derive(Clone, Copy)]
struct Size(Option<usize>);

async fn answer(State(Size(chunks)): State<Size>) -> impl IntoResponse {
    let piece = chunk();
    let body = futures_util::stream::unfold(0usize, move |sent| {
        let piece = piece.clone();
        async move {
            match chunks {
                Some(n) if sent > n => None,
                Some(n) if sent == n => Some((
                    Ok::<Bytes, std::io::Error>(Bytes::from_static(LAST.as_bytes())),
                    sent + 1,
                )),
                _ => Some((Ok(piece), sent + 1)),
            }
        }
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body),
    )
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let size = match args.next().as_deref() {
        None | Some("endless") => Size(None),
        Some(mb) => Size(Some(
            mb.parse::<usize>().expect("MB or endless") * 1_000_000 / PIECE,
        )),
    };
    let app = Router::new()
        .route("/v1beta/models/{model}", post(answer))
        .with_state(size);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    println!("listening on http://{}", listener.local_addr().unwrap());
    axum::serve(listener, app).await.unwrap();
}
