//! `GET /api/runs/{turnId}`: one recorded turn as the front end showed it
//! — the question, activity chips, the answer, the lookups with their
//! results, client actions, the done footer or the error — with its numbers
//! and the votes beside it. Read with the HTML report's reading of a log
//! (`report::turn::ReportTurn`), so the page and the report cannot
//! disagree; found through the run index, its path relative to the runs
//! folder.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::{ServeState, json_error};
use crate::event::Usage;
use crate::report::turn::{ReportTurn, SharedText};
use crate::runs::feedback::{FeedbackRecord, read_feedback};
use crate::runs::read_run_log;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Transcript {
    pub turn_id: String,
    pub path: String,
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub claim: String,
    pub fingerprint: String,
    pub provider: String,
    pub model: String,
    /// `done`, `error`, `cancelled` or `partial`.
    pub status: String,
    pub messages: Vec<Message>,
    pub chips: Vec<String>,
    pub answer: String,
    pub lookups: Vec<Lookup>,
    pub client_actions: Vec<String>,
    /// The done footer as the front end words it.
    pub done: Option<String>,
    pub error: Option<String>,
    pub usage: Usage,
    pub latency_ms: Option<u64>,
    pub votes: Vec<FeedbackRecord>,
}

#[derive(Debug, Serialize)]
pub struct Message {
    pub role: String,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct Lookup {
    pub tool: String,
    pub args: String,
    pub ok: Option<bool>,
    pub result: String,
}

pub async fn transcript(
    State(state): State<Arc<ServeState>>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match super::api::segment(id) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    let not_found = |id: &str| {
        let message = format!("no recorded turn `{}`", crate::text::quote(id));
        json_error(StatusCode::NOT_FOUND, message)
    };
    // A turn id names a log; it is never read as a path.
    let plausible =
        !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    let Some(dir) = state.runs_dir.clone().filter(|_| plausible) else {
        return not_found(&id);
    };
    let slot = match state.cpu_slot() {
        Ok(slot) => slot,
        Err(response) => return *response,
    };
    let reader = state.clone();
    let wanted = id.clone();
    let found = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let found = super::api::recorded_turn(&dir, &wanted).map_err(std::io::Error::other)?;
        let Some(path) = found else {
            return Ok(None);
        };
        let log = read_run_log(&path).map_err(std::io::Error::other)?;
        let votes = read_feedback(&path).unwrap_or_default();
        let turn = ReportTurn::from_log(&log, &mut SharedText::default());
        Ok::<_, std::io::Error>(Some(of(&reader, turn, votes)))
    })
    .await;
    match found {
        Ok(Ok(Some(transcript))) => Json(transcript).into_response(),
        Ok(Ok(None)) => not_found(&id),
        Ok(Err(error)) => state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
        Err(error) => state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    }
}

pub(super) fn of(state: &ServeState, turn: ReportTurn, votes: Vec<FeedbackRecord>) -> Transcript {
    Transcript {
        path: state.paths.run_path(&turn.path).display().to_string(),
        turn_id: turn.turn_id,
        started_at: turn.started_at,
        claim: turn.claim,
        fingerprint: turn.fingerprint,
        provider: turn.provider,
        model: turn.model,
        status: turn.status,
        messages: turn
            .messages
            .into_iter()
            .map(|(role, text)| Message { role, text })
            .collect(),
        chips: turn.chips.into_iter().map(|(_, label)| label).collect(),
        answer: turn.answer,
        lookups: turn
            .lookups
            .into_iter()
            .map(|lookup| Lookup {
                tool: lookup.tool,
                args: lookup.args,
                ok: lookup.ok,
                result: lookup.result.to_string(),
            })
            .collect(),
        client_actions: turn.client_actions,
        done: turn.done,
        error: turn.error.map(|error| state.message(&error)),
        usage: turn.usage,
        latency_ms: turn.latency_ms,
        votes,
    }
}
