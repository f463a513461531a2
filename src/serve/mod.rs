//! `promptlab serve`: the production chat API (SPEC §1, §2) on a local HTTP
//! server, wire-compatible with the Worker, so a browser or the front end
//! can run recorded, override-aware turns.
//!
//! - `POST /api/chat` (`chat.rs`): the request body (`body.rs`) checked before
//!   any event, then the turn as Server-Sent Events through the one driver;
//! - trust (`guard.rs`, before any route): the `Host`, and for writes the
//!   content type and `Origin`; CORS only for the origins given;
//! - limits: a body cap (413) and deadline (408), both here, at most
//!   `max_concurrent` turns (503 with `Retry-After`), open connections, the
//!   time to send a request's head and to take an answer (`listen.rs`);
//!   answers name files relative to their folders (`public.rs`);
//! - shutdown: cancelling `ServeState::shutdown` cancels every running turn
//!   (their logs are marked cancelled) and stops accepting connections.

pub mod api;
pub mod body;
pub mod chat;
pub mod diff;
pub mod evals;
pub mod guard;
pub mod listen;
pub mod overrides;
pub mod page;
pub mod public;
pub mod review;
pub mod transcript;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::chat::TurnContext;
use crate::provider::script::ScriptProvider;

pub use body::{BodyError, RequestDefaults, parse_chat_body};
pub use guard::{Trust, TrustError};
pub use listen::{ConnectionLimits, serve};
pub use public::PublicPaths;

/// Where the page saves override files unless `--overrides-dir` says.
pub const DEFAULT_OVERRIDES_DIR: &str = "overrides";

/// The largest request body taken; a larger one is a 413.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// How long a client has, in all, to send a request's body once its head is
/// in (the head has `listen::HEADER_READ_TIMEOUT`): 8 MiB takes well under
/// this on any link a browser on the same machine has. A total, not a gap
/// between chunks: a byte every few seconds would otherwise hold a
/// connection for as long as the client likes.
pub const BODY_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Where each turn's model answers come from.
pub enum TurnProvider {
    /// One provider for every turn (Gemini, a replay).
    Shared,
    /// A script started afresh for each turn, as each `chat` process and
    /// each eval turn starts it: every browser turn plays the script from
    /// its first model call.
    ScriptPerTurn(Arc<ScriptProvider>),
}

/// What every request handler shares.
pub struct ServeState {
    /// The shared context; its provider is used as is unless `provider`
    /// says to restart a script per turn.
    pub ctx: TurnContext,
    pub provider: TurnProvider,
    pub provider_name: &'static str,
    /// Where run logs go; `None`: turns are not recorded.
    pub runs_dir: Option<PathBuf>,
    pub defaults: RequestDefaults,
    /// One permit per running turn.
    pub turns: Arc<Semaphore>,
    /// One permit per core for the CPU-bound answers (word and prompt
    /// diffs, scans of the runs folder), apart from the turns' cap: a few
    /// costly requests must not take every core from the turns, or queue
    /// without bound. A request that finds none free gets a 503.
    pub cpu: Arc<Semaphore>,
    pub max_concurrent: usize,
    /// Cancelled on Ctrl-C / SIGTERM; every turn's token is its child.
    pub shutdown: CancellationToken,
    /// How answers name files.
    pub paths: PublicPaths,
    /// Where the page saves override files (`--overrides-dir`).
    pub overrides_dir: PathBuf,
    /// Each turn as a trace (`docs/telemetry.md`); `None`: off.
    pub tracing: Option<crate::telemetry::Tracing>,
    /// What run logs price calls by (`--prices` over the shipped table).
    pub prices: Arc<crate::cost::PriceTable>,
    /// The process's own secrets (`redact::process_redactor`), taken out
    /// of every error an answer carries, as the binary takes them out of
    /// every message it prints: a file of secrets named as a claim or an
    /// override file is never quoted back.
    pub secrets: crate::provider::transport::Redactor,
    /// `--provider replay`: the recorded turn every turn plays back, which
    /// each run log names (`replayOf`): a replay is no run of its own.
    pub replay_of: Option<String>,
}

impl ServeState {
    /// A state allowing `max_concurrent` turns at once (at least one).
    pub fn new(
        ctx: TurnContext,
        provider_name: &'static str,
        runs_dir: Option<PathBuf>,
        defaults: RequestDefaults,
        max_concurrent: usize,
    ) -> ServeState {
        let max_concurrent = max_concurrent.max(1);
        let paths = PublicPaths::new(ctx.store.dir(), runs_dir.as_deref());
        ServeState {
            paths,
            ctx,
            provider: TurnProvider::Shared,
            provider_name,
            runs_dir,
            defaults,
            turns: Arc::new(Semaphore::new(max_concurrent)),
            cpu: Arc::new(Semaphore::new(cpu_slots())),
            max_concurrent,
            shutdown: CancellationToken::new(),
            overrides_dir: PathBuf::from(DEFAULT_OVERRIDES_DIR),
            tracing: None,
            prices: crate::cost::PriceTable::shipped(),
            secrets: crate::provider::transport::Redactor::default(),
            replay_of: None,
        }
    }

    /// Saves override files in `dir` (answers name them relative to it).
    pub fn with_overrides_dir(mut self, dir: PathBuf) -> ServeState {
        self.paths = std::mem::take(&mut self.paths).and(&dir);
        self.overrides_dir = dir;
        self
    }

    /// An error message as an answer may carry it: files named relative to
    /// their folders, the process's secrets redacted.
    pub fn message(&self, text: &str) -> String {
        self.secrets.redact_owned(self.paths.message(text))
    }

    /// A slot for CPU-bound work, or the 503 that says to come back.
    pub fn cpu_slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, Box<Response>> {
        cpu_slot(&self.cpu)
    }

    /// The context one turn runs with.
    pub fn turn_context(&self) -> TurnContext {
        match &self.provider {
            TurnProvider::Shared => self.ctx.clone(),
            TurnProvider::ScriptPerTurn(script) => TurnContext {
                provider: Arc::new(script.restarted()),
                ..self.ctx.clone()
            },
        }
    }
}

/// Every route behind the trust checks, with the body cap and, when
/// origins are given, CORS.
pub fn router(state: Arc<ServeState>, trust: Arc<Trust>) -> Router {
    let router = Router::new()
        .route("/", get(page::page))
        .route("/assets/{name}", get(page::asset))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/chat", post(chat::chat))
        .route("/api/claims", get(api::claims))
        .route("/api/claims/{id}", get(api::claim))
        .route("/api/prompts", get(api::prompts))
        .route("/api/fingerprint", post(api::fingerprint_of))
        .route("/api/runs", get(api::runs))
        .route("/api/runs/{turn_id}", get(transcript::transcript))
        .route("/api/diff", post(diff::prompt_diff))
        .route("/api/word-diff", post(diff::word_diff))
        .route("/api/evals", get(evals::evals))
        .route("/api/evals/{id}", get(evals::eval_run))
        .route("/api/feedback", post(api::feedback))
        .route("/api/review", get(review::review))
        .route("/api/labels", post(review::label))
        .route("/api/overrides", get(overrides::list).post(overrides::save))
        .route("/api/overrides/yaml", post(overrides::yaml))
        .route("/api/overrides/{file}", get(overrides::load))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        // Every body is read here, whole, before any route sees it: 413 at
        // once for a declared length over the cap, 408 for one that does not
        // arrive in time, so no handler waits on a slow client.
        .layer(axum::middleware::from_fn(read_whole_body))
        .with_state(state);
    let router = if trust.cors_origins().is_empty() {
        router
    } else {
        // Validated origins (`Trust::new`) are header values.
        let origins = trust
            .cors_origins()
            .iter()
            .filter_map(|origin| HeaderValue::from_str(origin).ok())
            .collect::<Vec<_>>();
        router.layer(
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(origins))
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([header::CONTENT_TYPE]),
        )
    };
    // Outermost: nothing, CORS preflights included, runs before the checks.
    router.layer(from_fn_with_state(trust, guard::guard))
}

/// Reads the request's body in full, within `MAX_BODY_BYTES` and
/// `BODY_READ_TIMEOUT` in all, and hands the route the bytes. A body that
/// breaks either rule is answered here, and the connection closed; a body
/// too large is read on and dropped first (`drain`), so that its client is
/// there to be told.
async fn read_whole_body(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    let deadline = tokio::time::Instant::now() + BODY_READ_TIMEOUT;
    let (parts, body) = request.into_parts();
    let mut chunks = body.into_data_stream();
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        drain(&mut chunks, deadline).await;
        return body_refused(StatusCode::PAYLOAD_TOO_LARGE, body_too_large(declared));
    }
    // Sized at once where the head says (never past the bound): grown by
    // doubling, an 8 MiB body would take up to 16.
    let capacity = declared.map_or(0, |length| length.min(MAX_BODY_BYTES as u64) as usize);
    let mut received = Vec::with_capacity(capacity);
    let read = tokio::time::timeout_at(deadline, async {
        use futures_util::StreamExt;
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|_| BodyFault::Unreadable)?;
            if received.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(BodyFault::TooLarge);
            }
            received.extend_from_slice(&chunk);
        }
        Ok(())
    })
    .await;
    let (status, message) = match read {
        Ok(Ok(())) => {
            let request = axum::extract::Request::from_parts(parts, received.into());
            return next.run(request).await;
        }
        Ok(Err(BodyFault::TooLarge)) => {
            drain(&mut chunks, deadline).await;
            (StatusCode::PAYLOAD_TOO_LARGE, body_too_large(None))
        }
        Ok(Err(BodyFault::Unreadable)) => (
            StatusCode::BAD_REQUEST,
            "request body: it ended before its length or its chunked encoding is malformed"
                .to_string(),
        ),
        Err(_elapsed) => (
            StatusCode::REQUEST_TIMEOUT,
            body_too_slow(received.len(), declared),
        ),
    };
    body_refused(status, message)
}

/// The most of a refused body read and dropped before the answer.
const DRAIN_BYTES: usize = 16 * 1024 * 1024;

/// Reads what a refused body still sends and drops it, up to `DRAIN_BYTES`
/// and the body's deadline, while it comes without a pause of
/// `DRAIN_PAUSE`: closed on a client still sending, the connection resets
/// under it, and it never sees the 413. Past either bound the connection is
/// closed all the same.
async fn drain(chunks: &mut axum::body::BodyDataStream, deadline: tokio::time::Instant) {
    use futures_util::StreamExt;
    let mut dropped = 0;
    let _ = tokio::time::timeout_at(deadline, async {
        // A client that says more than it sends is not waited for long.
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout(DRAIN_PAUSE, chunks.next()).await {
            dropped += chunk.len();
            if dropped > DRAIN_BYTES {
                break;
            }
        }
    })
    .await;
}

/// How long a refused body may pause before the answer goes out anyway.
const DRAIN_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

/// Why a body was not read whole.
enum BodyFault {
    TooLarge,
    Unreadable,
}

fn body_too_large(declared: Option<u64>) -> String {
    let limit = MAX_BODY_BYTES >> 20;
    match declared {
        Some(length) => {
            format!("request body: Content-Length {length} is over the {limit} MiB limit")
        }
        None => format!("request body: over the {limit} MiB limit"),
    }
}

fn body_too_slow(received: usize, declared: Option<u64>) -> String {
    let of = declared
        .map(|length| format!(" of {length}"))
        .unwrap_or_default();
    format!(
        "request body: {received}{of} bytes arrived in {} s; a body must arrive in full within {} s of the request's head",
        BODY_READ_TIMEOUT.as_secs(),
        BODY_READ_TIMEOUT.as_secs()
    )
}

/// The JSON error for a body not read whole, saying the connection closes:
/// the rest of the body is never read, so it can carry no further request.
fn body_refused(status: StatusCode, message: String) -> Response {
    let mut response = json_error(status, message);
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

async fn not_found() -> Response {
    json_error(StatusCode::NOT_FOUND, "no such endpoint".to_string())
}

/// The body of every error response (the production Worker's shape); it
/// lives with the request's wire shape, which the `worker` provider reads too.
pub use crate::chat::wire::ErrorBody;

/// `{"error": message}` with `status`.
/// How many CPU-bound answers may be computed at once: one a core.
fn cpu_slots() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// How long a client is told to wait when every CPU slot is taken.
pub const CPU_BUSY_RETRY_AFTER_SECS: u64 = 1;

/// A permit of `cpu`, or a 503 with `Retry-After` when none is free: the
/// work is not queued, so a burst of costly requests costs each of them a
/// quick answer, not the server its cores.
pub fn cpu_slot(cpu: &Arc<Semaphore>) -> Result<tokio::sync::OwnedSemaphorePermit, Box<Response>> {
    cpu.clone().try_acquire_owned().map_err(|_| {
        let mut response = json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is busy computing other answers (diffs, scans); try again shortly"
                .to_string(),
        );
        response.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from(CPU_BUSY_RETRY_AFTER_SECS),
        );
        Box::new(response)
    })
}

pub fn json_error(status: StatusCode, message: String) -> Response {
    (status, axum::Json(ErrorBody { error: message })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 61: eight word diffs at once took 144 s of CPU. The CPU slots
    /// are not queued for: with every one taken, the answer is a 503 with
    /// `Retry-After`, and a slot given back is taken again.
    #[test]
    fn a_request_finding_every_cpu_slot_taken_is_told_to_retry() {
        let cpu = Arc::new(Semaphore::new(1));
        let held = cpu_slot(&cpu).expect("a free slot");
        let busy = cpu_slot(&cpu).expect_err("no slot left");
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            busy.headers().get(header::RETRY_AFTER).unwrap(),
            &HeaderValue::from(CPU_BUSY_RETRY_AFTER_SECS)
        );
        drop(held);
        assert!(cpu_slot(&cpu).is_ok());
    }
}
