//! What a Prompt Lab page needs besides the chat: the claims, one claim,
//! the prompt registry (ids, default texts, quick actions, brands), the
//! fingerprint of a set of overrides, recent runs, and thumbs votes.
//! Errors are `{"error": …}` with a status; no handler panics on input.
//! Files are named relative to the claims and runs folders (`PublicPaths`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::claims::row::ClaimRow;
use crate::claims::{ClaimStore, is_valid_claim_id};
use crate::prompts::brands::Brand;
use crate::prompts::capabilities::Capability;
use crate::prompts::overrides::IgnoredOverride;
use crate::prompts::{PromptRegistry, fingerprint, resolve_overrides};
use crate::runs::feedback::{FeedbackRecord, MAX_COMMENT_CHARS, Vote, append_feedback};
use crate::runs::row::RunRow;
use crate::runs::scan_runs;

use super::{ServeState, json_error};

/// `GET /api/claims`: a row per claim; files that do not load are named.
#[derive(Debug, Serialize)]
pub struct ClaimList {
    pub claims: Vec<ClaimRow>,
    pub problems: Vec<String>,
}

pub async fn claims(State(state): State<Arc<ServeState>>) -> Response {
    let store: ClaimStore = state.ctx.store.clone();
    let entries = match store.entries() {
        Ok(entries) => entries,
        Err(error) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
    let mut list = ClaimList {
        claims: Vec::new(),
        problems: Vec::new(),
    };
    for entry in &entries {
        match store.load_entry(entry) {
            Ok(loaded) => list.claims.push(ClaimRow::of(&loaded.claim)),
            Err(error) => list.problems.push(state.message(&error.to_string())),
        }
    }
    Json(list).into_response()
}

/// `GET /api/claims/{id}`: the claim document, or 404.
pub async fn claim(
    State(state): State<Arc<ServeState>>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let id = match segment(id) {
        Ok(id) => id,
        Err(response) => return *response,
    };
    let not_found = || json_error(StatusCode::NOT_FOUND, format!("Claim {id} not found."));
    if !is_valid_claim_id(&id) || state.ctx.store.locate(&id).is_none() {
        return not_found();
    }
    match state.ctx.store.load(&id) {
        Ok(loaded) => Json(loaded.claim).into_response(),
        Err(error) => state.error(StatusCode::UNPROCESSABLE_ENTITY, &error),
    }
}

/// `GET /api/prompts`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCatalog {
    /// Every prompt id with its code default.
    pub prompts: Vec<PromptDefault>,
    /// Quick actions with their labels and thinking levels.
    pub capabilities: Vec<Capability>,
    pub brands: BTreeMap<String, Brand>,
    pub default_brand: String,
}

#[derive(Debug, Serialize)]
pub struct PromptDefault {
    pub id: String,
    pub text: String,
}

pub async fn prompts(State(state): State<Arc<ServeState>>) -> Json<PromptCatalog> {
    Json(catalog(state.ctx.registry))
}

fn catalog(registry: &PromptRegistry) -> PromptCatalog {
    PromptCatalog {
        prompts: registry
            .prompt_ids()
            .map(|id| PromptDefault {
                id: id.to_string(),
                text: registry.default_text(id).unwrap_or_default().to_string(),
            })
            .collect(),
        capabilities: registry.capabilities().to_vec(),
        brands: registry
            .brand_names()
            .filter_map(|name| Some((name.to_string(), registry.brand(name)?.clone())))
            .collect(),
        default_brand: registry.default_brand().0.to_string(),
    }
}

/// `POST /api/fingerprint` `{overrides}`: the prompt version a chat with
/// these overrides would record, by the same usable rule.
#[derive(Debug, Serialize)]
pub struct FingerprintAnswer {
    pub fingerprint: String,
    pub applied: Vec<String>,
    pub ignored: Vec<IgnoredOverride>,
}

#[derive(Debug, Deserialize)]
struct FingerprintBody {
    #[serde(default)]
    overrides: BTreeMap<String, String>,
}

pub async fn fingerprint_of(
    State(state): State<Arc<ServeState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: FingerprintBody = match parse_json(body, &["overrides"]) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    let resolved = resolve_overrides(&body.overrides, state.ctx.registry);
    Json(FingerprintAnswer {
        fingerprint: fingerprint(&resolved.applied),
        applied: resolved.applied.into_keys().collect(),
        ignored: resolved.ignored,
    })
    .into_response()
}

/// `GET /api/runs?limit=N`: the newest runs first (default 50).
#[derive(Debug, Deserialize)]
pub struct RunsQuery {
    limit: Option<usize>,
}

pub async fn runs(
    State(state): State<Arc<ServeState>>,
    query: Result<Query<RunsQuery>, QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(query)) => query,
        Err(rejection) => return json_error(rejection.status(), rejection.body_text()),
    };
    let Some(dir) = state.runs_dir.clone() else {
        return Json(Vec::<RunRow>::new()).into_response();
    };
    let slot = match state.cpu_slot() {
        Ok(slot) => slot,
        Err(response) => return *response,
    };
    let scanned = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        scan_runs(&[dir])
    })
    .await;
    let (mut runs, _problems) = match scanned {
        Ok(Ok(found)) => found,
        Ok(Err(error)) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
        Err(error) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
    runs.sort_by_key(|run| std::cmp::Reverse(run.header.started_at));
    runs.truncate(query.limit.unwrap_or(50));
    let rows = runs
        .iter()
        .map(|run| {
            let mut row = RunRow::of(run);
            row.path = state.paths.run_path(&row.path);
            row
        })
        .collect::<Vec<_>>();
    Json(rows).into_response()
}

/// `POST /api/feedback` `{turnId, vote: "up"|"down", comment?}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FeedbackBody {
    turn_id: String,
    vote: Vote,
    #[serde(default)]
    comment: Option<String>,
}

pub async fn feedback(
    State(state): State<Arc<ServeState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: FeedbackBody = match parse_json(body, &["turnId", "vote", "comment"]) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    if body
        .comment
        .as_deref()
        .is_some_and(|c| crate::text::utf16_len(c) > MAX_COMMENT_CHARS)
    {
        let message = format!("comment: at most {MAX_COMMENT_CHARS} characters are allowed");
        return json_error(StatusCode::BAD_REQUEST, message);
    }
    let Some(dir) = state.runs_dir.clone() else {
        return json_error(
            StatusCode::NOT_FOUND,
            "turns are not recorded (--no-record)".into(),
        );
    };
    let record = FeedbackRecord {
        turn_id: body.turn_id,
        vote: body.vote,
        comment: body.comment,
        at: chrono::Utc::now(),
    };
    let voting = state.clone();
    match tokio::task::spawn_blocking(move || record_vote(&voting, &dir, &record)).await {
        Ok(response) => response,
        Err(error) => state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    }
}

fn record_vote(state: &ServeState, dir: &std::path::Path, record: &FeedbackRecord) -> Response {
    let log = match recorded_turn(dir, &record.turn_id) {
        Ok(Some(log)) => log,
        Ok(None) => {
            let message = format!(
                "turnId: no recorded turn `{}`",
                crate::text::quote(&record.turn_id)
            );
            return json_error(StatusCode::NOT_FOUND, message);
        }
        Err(error) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
    match append_feedback(&log, record) {
        Ok(_) => (StatusCode::CREATED, Json(record.clone())).into_response(),
        Err(error) => state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    }
}

/// The run log of turn `turn_id` in the runs folder, from the run index
/// (one indexed lookup, not a scan of every log per request). Blocking.
pub(super) fn recorded_turn(
    dir: &std::path::Path,
    turn_id: &str,
) -> Result<Option<std::path::PathBuf>, crate::index::IndexError> {
    crate::index::RunIndex::open(dir)?.index.turn_path(turn_id)
}

/// A path segment, or the JSON answer that rejects it.
pub(super) fn segment(
    segment: Result<Path<String>, PathRejection>,
) -> Result<String, Box<Response>> {
    segment
        .map(|Path(text)| text)
        .map_err(|rejection| Box::new(json_error(rejection.status(), rejection.body_text())))
}

impl ServeState {
    /// `{"error": …}` for an error that may name files: relative to their folders.
    pub(super) fn error(&self, status: StatusCode, error: &dyn std::fmt::Display) -> Response {
        json_error(status, self.message(&error.to_string()))
    }
}

/// A JSON body, or the response that rejects it (413, or 400 naming the field).
pub(super) fn parse_json<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    fields: &[&str],
) -> Result<T, Box<Response>> {
    let bytes =
        body.map_err(|rejection| Box::new(json_error(rejection.status(), rejection.body_text())))?;
    let mut deserializer = serde_json::Deserializer::from_slice(&bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let message = super::body::json_problem(&error, fields);
        Box::new(json_error(StatusCode::BAD_REQUEST, message))
    })?;
    super::body::refuse_duplicate_keys(&bytes, fields)
        .map_err(|error| Box::new(json_error(StatusCode::BAD_REQUEST, error.to_string())))?;
    Ok(value)
}
