//! The page's diffs, computed here with the code the commands use, never
//! re-written in the page:
//! - `POST /api/diff` — the chat body's claim and options with the page's
//!   overrides (no messages needed): the default prompt against the
//!   overridden one block by block, as `prompts diff default FILE --json`
//!   reports it (`chat::prompt_diff`), with what would bring a left-out
//!   block in worded as the page's choices;
//! - `POST /api/word-diff {a, b}` — two answers as the word segments the
//!   HTML compare report shows (`report::compare::word_segments`), searched
//!   for at most `WORD_DIFF_TIME`.
//!
//! Both take one of the server's CPU slots (`ServeState::cpu_slot`) or
//! answer 503 with `Retry-After`.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::api::parse_json;
use super::body::parse_chat_body;
use super::{ServeState, json_error};
use crate::chat::block_context::BlockCondition;
use crate::chat::prompt_diff::{diff_report, diff_side};
use crate::chat::{ChatRequest, ClaimInput};

/// The longest answer `word-diff` takes, per side (characters).
pub const MAX_WORD_DIFF_CHARS: usize = 200_000;

pub async fn prompt_diff(
    State(state): State<Arc<ServeState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return json_error(rejection.status(), rejection.body_text()),
    };
    let request = match diff_request(&state, &body) {
        Ok(request) => request,
        Err(response) => return *response,
    };
    let slot = match state.cpu_slot() {
        Ok(slot) => slot,
        Err(response) => return *response,
    };
    let worker = state.clone();
    let answered = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        diff_answer(&worker, &request)
    })
    .await;
    answered.unwrap_or_else(|error| state.error(StatusCode::INTERNAL_SERVER_ERROR, &error))
}

/// The body read as `POST /api/chat` reads it; `messages` may be left
/// out, since nothing is asked.
fn diff_request(state: &ServeState, body: &[u8]) -> Result<ChatRequest, Box<Response>> {
    let bad = |message: String| Box::new(json_error(StatusCode::BAD_REQUEST, message));
    let mut value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|error| bad(format!("body: {}", crate::text::quote(&error.to_string()))))?;
    // Before the value is written again, which would keep one of the two.
    super::body::refuse_duplicate_keys(body, super::body::FIELDS)
        .map_err(|error| bad(error.to_string()))?;
    let Some(object) = value.as_object_mut() else {
        return Err(bad("body: expected a JSON object".to_string()));
    };
    object
        .entry("messages")
        .or_insert_with(|| serde_json::json!([{"role": "user", "text": "(prompt diff)"}]));
    let bytes = serde_json::to_vec(&value).map_err(|error| bad(error.to_string()))?;
    parse_chat_body(&bytes, &state.defaults, state.ctx.registry)
        .map_err(|error| bad(state.message(&error.to_string())))
}

fn diff_answer(state: &ServeState, request: &ChatRequest) -> Response {
    let claim = match &request.claim {
        ClaimInput::Document(loaded) => (**loaded).clone(),
        ClaimInput::Id(id) => match state.ctx.store.load(id) {
            Ok(loaded) => loaded,
            Err(error) => return state.error(StatusCode::NOT_FOUND, &error),
        },
    };
    let registry = state.ctx.registry;
    let overridden = request.prompt.clone();
    let default = crate::chat::PromptOptions {
        overrides: Default::default(),
        ..overridden.clone()
    };
    let sides = diff_side(
        "default",
        &default,
        registry,
        &claim.claim,
        request.today,
        &page_choice,
    )
    .and_then(|a| {
        let b = diff_side(
            "the editors",
            &overridden,
            registry,
            &claim.claim,
            request.today,
            &page_choice,
        )?;
        Ok((a, b))
    });
    match sides {
        Ok((a, b)) => Json(diff_report(&a, &b)).into_response(),
        Err(error) => state.error(StatusCode::BAD_REQUEST, &error),
    }
}

/// What brings a block in, as the page's controls name it.
fn page_choice(condition: &BlockCondition) -> String {
    match condition {
        BlockCondition::Always => "always in the prompt".to_string(),
        BlockCondition::ScreenActions => "tick “screen actions”".to_string(),
        BlockCondition::Voice => "tick “voice”".to_string(),
        BlockCondition::Locale(locale) => {
            let name = serde_json::to_value(locale)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("choose locale “{name}”")
        }
        BlockCondition::Capability(id) => format!("choose the quick action “{id}”"),
        BlockCondition::FreeChat => "choose “free chat”".to_string(),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WordDiffBody {
    a: String,
    b: String,
}

pub async fn word_diff(
    State(state): State<Arc<ServeState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: WordDiffBody = match parse_json(body, &["a", "b"]) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    for (field, text) in [("a", &body.a), ("b", &body.b)] {
        let chars = text.chars().count();
        if chars > MAX_WORD_DIFF_CHARS {
            let message = format!(
                "{field}: at most {MAX_WORD_DIFF_CHARS} characters are compared, got {chars}"
            );
            return json_error(StatusCode::PAYLOAD_TOO_LARGE, message);
        }
    }
    let slot = match state.cpu_slot() {
        Ok(slot) => slot,
        Err(response) => return *response,
    };
    let deadline = std::time::Instant::now() + crate::report::compare::WORD_DIFF_TIME;
    let segments = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        crate::report::compare::word_segments(&body.a, &body.b, deadline)
    })
    .await;
    match segments {
        Ok(segments) => Json(serde_json::json!({ "segments": segments })).into_response(),
        Err(error) => state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    }
}
