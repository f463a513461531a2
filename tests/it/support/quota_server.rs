//! A stand-in model server with a provider's limits (SPEC §14), for the
//! rate-limit tests and `benches/quota.sh`: an OpenAI-compatible
//! `/v1/chat/completions` and Gemini's `…:streamGenerateContent`, each call
//! answered after `latency` with a short streamed text, while a token
//! bucket per second (and, optionally, per minute) allows it; beyond it, a
//! 429 with `Retry-After: 1` and the provider's own error body (OpenAI's
//! `rate_limit_exceeded`, Google's `RESOURCE_EXHAUSTED` with `RetryInfo`).
//! With `per_day`, the calls past that many get the provider's spent-quota
//! answer instead (`insufficient_quota`; a `QuotaFailure` naming a per-day
//! quota). It counts what it answered.
//!
//! Shared by the tests (`support::quota_server`) and the benchmark's
//! `examples/quota_server.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

/// What the stand-in allows.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How long each answered call takes.
    pub latency: Duration,
    /// Requests a second the bucket refills (and holds at most).
    pub per_second: f64,
    /// Requests a minute, if there is such a limit too.
    pub per_minute: Option<f64>,
    /// Requests answered in all before the quota is spent.
    pub per_day: Option<u64>,
}

/// What the stand-in did.
#[derive(Debug, Default)]
pub struct Counts {
    pub answered: AtomicU64,
    pub rate_limited: AtomicU64,
    pub quota_refused: AtomicU64,
    pub in_flight: AtomicU64,
    pub max_in_flight: AtomicU64,
    /// When the last request came, and the first quota refusal went, in
    /// ms after the server started (0: none yet).
    pub last_answer_ms: AtomicU64,
    pub first_quota_ms: AtomicU64,
}

/// A token bucket: `rate` a second, holding at most `burst`.
#[derive(Debug)]
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn new(rate: f64, burst: f64) -> Bucket {
        Bucket {
            rate,
            burst,
            tokens: burst,
            at: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.at = now;
    }
}

#[derive(Debug)]
struct Buckets {
    second: Bucket,
    minute: Option<Bucket>,
}

impl Buckets {
    /// Takes one token from each bucket, or none if any is empty.
    fn take(&mut self) -> bool {
        let now = Instant::now();
        self.second.refill(now);
        if let Some(minute) = &mut self.minute {
            minute.refill(now);
        }
        let room =
            self.second.tokens >= 1.0 && self.minute.as_ref().is_none_or(|m| m.tokens >= 1.0);
        if room {
            self.second.tokens -= 1.0;
            if let Some(minute) = &mut self.minute {
                minute.tokens -= 1.0;
            }
        }
        room
    }
}

#[derive(Clone)]
struct Stand {
    started: Instant,
    limits: Limits,
    buckets: Arc<Mutex<Buckets>>,
    counts: Arc<Counts>,
}

#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    OpenAi,
    /// OpenAI's, not streamed.
    OpenAiWhole,
    Gemini,
}

/// A running stand-in; stopped when dropped.
pub struct QuotaServer {
    pub base_url: String,
    pub counts: Arc<Counts>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl QuotaServer {
    /// Serves on `127.0.0.1:port` (0: any free port) on a thread of its own.
    pub fn start(port: u16, limits: Limits) -> QuotaServer {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("a free port");
        listener.set_nonblocking(true).unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let counts = Arc::new(Counts::default());
        let stand = Stand {
            started: Instant::now(),
            limits,
            buckets: Arc::new(Mutex::new(Buckets {
                second: Bucket::new(limits.per_second, limits.per_second.max(1.0)),
                minute: limits
                    .per_minute
                    .map(|rate| Bucket::new(rate / 60.0, rate.max(1.0))),
            })),
            counts: Arc::clone(&counts),
        };
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = Router::new()
                    .route("/v1/chat/completions", post(openai))
                    .route("/v1beta/models/{call}", post(gemini))
                    .route("/count", get(count))
                    .with_state(stand);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stop.await;
                    })
                    .await;
            });
        });
        QuotaServer {
            base_url,
            counts,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    pub fn answered(&self) -> u64 {
        self.counts.answered.load(Ordering::SeqCst)
    }

    pub fn rate_limited(&self) -> u64 {
        self.counts.rate_limited.load(Ordering::SeqCst)
    }

    pub fn quota_refused(&self) -> u64 {
        self.counts.quota_refused.load(Ordering::SeqCst)
    }
}

impl Drop for QuotaServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn openai(State(stand): State<Stand>, body: axum::body::Bytes) -> Response {
    // Clients that do not stream (OpenAI's Python SDK as inspect_ai calls
    // it, promptfoo) get one JSON completion.
    let streams = serde_json::from_slice::<serde_json::Value>(&body)
        .is_ok_and(|request| request["stream"] == true);
    let dialect = match streams {
        true => Dialect::OpenAi,
        false => Dialect::OpenAiWhole,
    };
    answer(stand, dialect).await
}

async fn gemini(State(stand): State<Stand>) -> Response {
    answer(stand, Dialect::Gemini).await
}

async fn count(State(stand): State<Stand>) -> String {
    let c = &stand.counts;
    format!(
        "answered {} rate_limited {} quota_refused {} max_in_flight {} first_quota_ms {} last_request_ms {}\n",
        c.answered.load(Ordering::SeqCst),
        c.rate_limited.load(Ordering::SeqCst),
        c.quota_refused.load(Ordering::SeqCst),
        c.max_in_flight.load(Ordering::SeqCst),
        c.first_quota_ms.load(Ordering::SeqCst),
        c.last_answer_ms.load(Ordering::SeqCst),
    )
}

async fn answer(stand: Stand, dialect: Dialect) -> Response {
    let counts = &stand.counts;
    let now_ms = (stand.started.elapsed().as_millis() as u64).max(1);
    counts.last_answer_ms.store(now_ms, Ordering::SeqCst);
    if let Some(per_day) = stand.limits.per_day
        && counts.answered.load(Ordering::SeqCst) >= per_day
    {
        counts.quota_refused.fetch_add(1, Ordering::SeqCst);
        let _ =
            counts
                .first_quota_ms
                .compare_exchange(0, now_ms, Ordering::SeqCst, Ordering::SeqCst);
        return refused(dialect, true);
    }
    let room = stand.buckets.lock().unwrap().take();
    if !room {
        counts.rate_limited.fetch_add(1, Ordering::SeqCst);
        return refused(dialect, false);
    }
    let now = counts.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    counts.max_in_flight.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(stand.limits.latency).await;
    counts.in_flight.fetch_sub(1, Ordering::SeqCst);
    counts.answered.fetch_add(1, Ordering::SeqCst);
    let body = match dialect {
        Dialect::OpenAi => concat!(
            r#"data: {"id":"q","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"The excess is recorded in the policy section."},"finish_reason":null}]}"#,
            "\n\n",
            r#"data: {"id":"q","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":12,"total_tokens":912}}"#,
            "\n\ndata: [DONE]\n\n"
        ),
        Dialect::Gemini => concat!(
            r#"data: {"candidates":[{"content":{"role":"model","parts":[{"text":"The excess is recorded in the policy section."}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":900,"candidatesTokenCount":12,"totalTokenCount":912},"modelVersion":"stand-in"}"#,
            "\r\n\r\n"
        ),
        Dialect::OpenAiWhole => {
            let whole = r#"{"id":"q","object":"chat.completion","created":0,"model":"stand-in","choices":[{"index":0,"message":{"role":"assistant","content":"The excess is recorded in the policy section."},"finish_reason":"stop"}],"usage":{"prompt_tokens":900,"completion_tokens":12,"total_tokens":912}}"#;
            return ([(header::CONTENT_TYPE, "application/json")], whole).into_response();
        }
    };
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

/// The provider's own 429: a rate (with `Retry-After: 1`), or a spent quota.
fn refused(dialect: Dialect, quota: bool) -> Response {
    let openai = matches!(dialect, Dialect::OpenAi | Dialect::OpenAiWhole);
    let body = match (openai, quota) {
        (true, false) => {
            r#"{"error":{"message":"Rate limit reached for requests. Please try again in 1s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#
        }
        (true, true) => {
            r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#
        }
        (false, false) => {
            r#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1s"}]}}"#
        }
        (false, true) => {
            r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]}]}}"#
        }
    };
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    if !quota {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    response
}
