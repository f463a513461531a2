//! `GET /api/evals` and `GET /api/evals/{id}`: the runs folder's eval
//! history for the page, from the run index — JSON, files named relative
//! to the runs folder (`PublicPaths`), never an absolute path.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::index::RunIndex;
use crate::runs::version::is_eval_run_id;

use super::{ServeState, json_error};

/// The most eval runs one answer lists.
const MAX_LIMIT: usize = 500;

/// `GET /api/evals?suite=NAME&limit=N`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalsQuery {
    suite: Option<String>,
    limit: Option<usize>,
}

pub async fn evals(
    State(state): State<Arc<ServeState>>,
    query: Result<Query<EvalsQuery>, QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(query)) => query,
        Err(rejection) => return json_error(rejection.status(), rejection.body_text()),
    };
    let limit = query.limit.unwrap_or(50).min(MAX_LIMIT);
    let answer = with_index(&state, move |index| {
        index.eval_runs(query.suite.as_deref(), None, limit)
    })
    .await;
    match answer {
        Ok(Some(runs)) => Json(runs).into_response(),
        Ok(None) => Json(Vec::<()>::new()).into_response(),
        Err(response) => response,
    }
}

/// `GET /api/evals/{id}`: the run, its summary records and failures; 404
/// for an id not recorded (or not an id).
pub async fn eval_run(
    State(state): State<Arc<ServeState>>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match super::api::segment(id) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    let not_found = || {
        json_error(
            StatusCode::NOT_FOUND,
            format!("Eval run {} not found.", crate::text::quote(&id)),
        )
    };
    if !is_eval_run_id(&id) {
        return not_found();
    }
    let wanted = id.clone();
    match with_index(&state, move |index| index.detail(&wanted)).await {
        Ok(Some(Some(detail))) => {
            // Summary records may quote files (override warnings): named
            // relative to their folders, as every answer names them.
            let text = serde_json::to_string(&detail).unwrap_or_default();
            match serde_json::from_str::<serde_json::Value>(&state.message(&text)) {
                Ok(value) => Json(value).into_response(),
                Err(_) => Json(detail).into_response(),
            }
        }
        Ok(_) => not_found(),
        Err(response) => response,
    }
}

/// Runs `query` on the runs folder's index, off the async threads; `None`
/// when turns are not recorded.
async fn with_index<T: Send + 'static>(
    state: &ServeState,
    query: impl FnOnce(&RunIndex) -> Result<T, crate::index::IndexError> + Send + 'static,
) -> Result<Option<T>, Response> {
    let Some(dir) = state.runs_dir.clone() else {
        return Ok(None);
    };
    let slot = state.cpu_slot().map_err(|response| *response)?;
    let answered = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        let opened = RunIndex::open(&dir)?;
        query(&opened.index)
    })
    .await;
    let failed = |error: &dyn std::fmt::Display| {
        json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            state.message(&error.to_string()),
        )
    };
    match answered {
        Ok(Ok(value)) => Ok(Some(value)),
        Ok(Err(error)) => Err(failed(&error)),
        Err(error) => Err(failed(&error)),
    }
}
