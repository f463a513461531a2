//! An OpenAI-compatible stand-in that streams its answer as a real model
//! does, a token at a time, for `benches/streamed.sh` (BENCHMARKS.md, issue
//! #66): every `POST /v1/chat/completions` is answered with TOKENS content
//! deltas (words of about 9 bytes: 200 make 1.85 KB) paced at RATE a second
//! (0: all at once), then a finish reason, the usage chunk and `[DONE]`.
//!
//! `cargo run --release --example paced_openai -- PORT TOKENS RATE`
//! then `OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 promptlab chat --provider openai …`

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;

/// The words the answer is made of, in turn: about 9 bytes each.
const WORDS: [&str; 8] = [
    " excess",
    " recorded",
    " policy",
    " section",
    " £350",
    " claimant",
    " confirms",
    " buildings",
];

#[derive(Clone, Copy)]
struct Pace {
    tokens: usize,
    /// Tokens a second; 0 sends them all at once.
    rate: f64,
}

fn chunk(delta: &str) -> String {
    format!(
        "data: {{\"id\":\"p\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"stand-in\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
    )
}

fn end(tokens: usize) -> String {
    format!(
        concat!(
            "data: {{\"id\":\"p\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"stand-in\",\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n",
            "data: {{\"id\":\"p\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"stand-in\",\"choices\":[],\"usage\":{{\"prompt_tokens\":1500,\"completion_tokens\":{},\"total_tokens\":{}}}}}\n\n",
            "data: [DONE]\n\n"
        ),
        tokens,
        1500 + tokens
    )
}

async fn answer(State(pace): State<Pace>) -> impl IntoResponse {
    let body = async_stream::stream! {
        yield Ok::<_, Infallible>(chunk(r#"{"role":"assistant","content":""}"#));
        let gap = (pace.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / pace.rate));
        let mut ticks = gap.map(tokio::time::interval);
        for index in 0..pace.tokens {
            if let Some(ticks) = &mut ticks {
                ticks.tick().await;
            }
            let word = if index == 0 { "The" } else { WORDS[index % WORDS.len()] };
            yield Ok(chunk(&serde_json::json!({ "content": word }).to_string()));
        }
        yield Ok(end(pace.tokens));
    };
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body),
    )
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| -> f64 {
        args.get(i)
            .and_then(|text| text.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("usage: paced_openai PORT TOKENS RATE");
                std::process::exit(2)
            })
    };
    let pace = Pace {
        tokens: number(1) as usize,
        rate: number(2),
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", number(0) as u16))
        .await
        .expect("a free port");
    eprintln!("listening on http://{}", listener.local_addr().unwrap());
    let app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .with_state(pace);
    axum::serve(listener, app).await.unwrap();
}
