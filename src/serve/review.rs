//! The page's Review view (SPEC §15): `GET /api/review` gives an eval
//! run's queue for a reviewer (`eval::review`), each turn as its
//! transcript with its rubric criteria and never the judge's verdict;
//! `POST /api/labels` records a label as `promptlab label` does and only
//! then says what the judge said, with the reviewer's running agreement.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::eval::calibration::Agreement;
use crate::eval::review::{
    DEFAULT_QUEUE_LENGTH, QueuedTurn, queue, queued_turns, reviewer_pairs, running_agreement,
};
use crate::index::RunIndex;
use crate::report::turn::{ReportTurn, SharedText};
use crate::runs::labels::{
    LabelRecord, LabelVerdict, MAX_LABEL_TEXT_BYTES, unjudged_criterion, write_label,
};

use super::transcript::Transcript;
use super::{ServeState, json_error};

/// The most turns one queue holds.
const MAX_QUEUE: usize = 500;

/// `GET /api/review?reviewer=NAME&evalRun=ID&variant=NAME&limit=N&seed=N`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewQuery {
    reviewer: String,
    eval_run: Option<String>,
    variant: Option<String>,
    limit: Option<usize>,
    seed: Option<u64>,
}

/// One turn of the queue: what the reviewer sees before deciding.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewTurn {
    #[serde(flatten)]
    transcript: Transcript,
    case: Option<String>,
    sample: Option<u32>,
    variant: Option<String>,
    criteria: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewQueue {
    eval_run: String,
    turns: Vec<ReviewTurn>,
    /// The reviewer's agreement with the judge on this run so far.
    agreement: Agreement,
}

pub async fn review(
    State(state): State<Arc<ServeState>>,
    query: Result<Query<ReviewQuery>, QueryRejection>,
) -> Response {
    let query = match query {
        Ok(Query(query)) => query,
        Err(rejection) => return json_error(rejection.status(), rejection.body_text()),
    };
    if let Err(refused) = check_reviewer(&query.reviewer) {
        return json_error(StatusCode::BAD_REQUEST, refused.to_string());
    }
    let Some(dir) = state.runs_dir.clone() else {
        return json_error(
            StatusCode::NOT_FOUND,
            "turns are not recorded (--no-record)".into(),
        );
    };
    let slot = match state.cpu_slot() {
        Ok(slot) => slot,
        Err(response) => return *response,
    };
    let reader = state.clone();
    let answered = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        build_queue(&reader, &dir, &query)
    })
    .await;
    match answered {
        Ok(Ok(queue)) => Json(queue).into_response(),
        Ok(Err(response)) => *response,
        Err(error) => state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    }
}

/// A field of a review request the server refuses (400).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

fn check_reviewer(reviewer: &str) -> Result<(), Refused> {
    crate::runs::labels::reviewer_name(reviewer)
        .map(drop)
        .map_err(|bad| Refused(format!("reviewer: {bad}")))
}

/// The eval run `wanted` names (its id or a unique prefix, as the CLI
/// takes it), else the newest.
fn eval_run_of(index: &RunIndex, wanted: Option<&str>) -> Result<Option<String>, Box<Response>> {
    let failed = |error: crate::index::IndexError| {
        Box::new(json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            error.to_string(),
        ))
    };
    match wanted {
        Some(prefix) => {
            let mut found = index.eval_run_ids(prefix).map_err(failed)?;
            Ok((found.len() == 1).then(|| found.remove(0)))
        }
        None => Ok(index
            .eval_runs(None, None, 1)
            .map_err(failed)?
            .into_iter()
            .next()
            .map(|run| run.id)),
    }
}

fn build_queue(
    state: &ServeState,
    dir: &std::path::Path,
    query: &ReviewQuery,
) -> Result<ReviewQueue, Box<Response>> {
    let failed = |error: &dyn std::fmt::Display| {
        Box::new(json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            state.message(&error.to_string()),
        ))
    };
    let index = RunIndex::open(dir).map_err(|e| failed(&e))?.index;
    let Some(eval_run) = eval_run_of(&index, query.eval_run.as_deref())? else {
        let message = match &query.eval_run {
            Some(id) => format!(
                "Eval run {} not found (or the prefix names several).",
                crate::text::quote(id)
            ),
            None => "No eval run is recorded here.".to_string(),
        };
        return Err(Box::new(json_error(StatusCode::NOT_FOUND, message)));
    };
    let members = index.member_paths(&eval_run).map_err(|e| failed(&e))?;
    let turns = queued_turns(members, query.variant.as_deref());
    let agreement =
        running_agreement(&reviewer_pairs(&turns, query.reviewer.trim()).map_err(|e| failed(&e))?);
    let limit = query.limit.unwrap_or(DEFAULT_QUEUE_LENGTH).min(MAX_QUEUE);
    let ordered = queue(turns, query.reviewer.trim(), query.seed.unwrap_or(1), limit)
        .map_err(|e| failed(&e))?;
    let turns = ordered
        .turns
        .iter()
        .filter_map(|turn| review_turn(state, turn))
        .collect();
    Ok(ReviewQueue {
        eval_run,
        turns,
        agreement,
    })
}

fn review_turn(state: &ServeState, turn: &QueuedTurn) -> Option<ReviewTurn> {
    let log = crate::runs::read_run_log_checked(&turn.path).ok()?;
    let criteria = crate::runs::rescore::current_verdict(&log, &turn.path)
        .map(|verdict| verdict.rubric.into_iter().map(|r| r.criterion).collect())
        .unwrap_or_default();
    let labels = log.header.labels.clone();
    let report = ReportTurn::from_log(&log, &mut SharedText::default());
    Some(ReviewTurn {
        transcript: super::transcript::of(state, report, Vec::new()),
        case: labels.as_ref().map(|l| l.case.clone()),
        sample: labels.as_ref().map(|l| l.sample),
        variant: turn.variant.clone(),
        criteria,
    })
}

/// `POST /api/labels`
/// `{turnId, verdict, reviewer, criteria?, note?, correction?, evalRun?}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LabelBody {
    turn_id: String,
    verdict: LabelVerdict,
    reviewer: String,
    #[serde(default)]
    criteria: BTreeMap<String, LabelVerdict>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    correction: Option<String>,
    #[serde(default)]
    eval_run: Option<String>,
}

const LABEL_FIELDS: [&str; 7] = [
    "turnId",
    "verdict",
    "reviewer",
    "criteria",
    "note",
    "correction",
    "evalRun",
];

/// What a recorded label answers: the label, then what the judge said,
/// and the reviewer's agreement with it on the eval run so far.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Labelled {
    label: LabelRecord,
    judge: Option<LabelVerdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agreement: Option<Agreement>,
}

pub async fn label(
    State(state): State<Arc<ServeState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: LabelBody = match super::api::parse_json(body, &LABEL_FIELDS) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    if let Err(refused) = check_label_body(&body) {
        return json_error(StatusCode::BAD_REQUEST, refused.to_string());
    }
    let Some(dir) = state.runs_dir.clone() else {
        return json_error(
            StatusCode::NOT_FOUND,
            "turns are not recorded (--no-record)".into(),
        );
    };
    let writer = state.clone();
    match tokio::task::spawn_blocking(move || record_label(&writer, &dir, body)).await {
        Ok(response) => response,
        Err(error) => state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    }
}

fn check_label_body(body: &LabelBody) -> Result<(), Refused> {
    check_reviewer(&body.reviewer)?;
    for (field, text) in [("note", &body.note), ("correction", &body.correction)] {
        if text
            .as_ref()
            .is_some_and(|t| t.len() > MAX_LABEL_TEXT_BYTES)
        {
            return Err(Refused(format!(
                "{field}: at most {MAX_LABEL_TEXT_BYTES} bytes are allowed"
            )));
        }
    }
    Ok(())
}

fn record_label(state: &ServeState, dir: &std::path::Path, body: LabelBody) -> Response {
    let not_found = || {
        let message = format!(
            "turnId: no recorded turn `{}`",
            crate::text::quote(&body.turn_id)
        );
        json_error(StatusCode::NOT_FOUND, message)
    };
    let path: PathBuf = match super::api::recorded_turn(dir, &body.turn_id) {
        Ok(Some(path)) => path,
        Ok(None) => return not_found(),
        Err(error) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
    if crate::runs::naming::is_partial(&path) {
        let message = "turnId: the turn is still being recorded (or was cut short)".to_string();
        return json_error(StatusCode::CONFLICT, message);
    }
    let log = match crate::runs::read_run_log_checked(&path) {
        Ok(log) => log,
        Err(error) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
    let verdict = crate::runs::rescore::current_verdict(&log, &path);
    let judged: Vec<String> = (verdict.iter())
        .flat_map(|v| v.rubric.iter().map(|r| r.criterion.clone()))
        .collect();
    if let Some(criterion) = unjudged_criterion(&judged, body.criteria.keys()) {
        let message = format!(
            "criteria: the turn was not judged on `{}`",
            crate::text::one_line(criterion, 80)
        );
        return json_error(StatusCode::BAD_REQUEST, message);
    }
    let record = LabelRecord {
        turn_id: log.header.turn_id.clone(),
        verdict: body.verdict,
        criteria: body.criteria,
        note: body.note.filter(|n| !n.trim().is_empty()),
        correction: body.correction.filter(|c| !c.trim().is_empty()),
        reviewer: body.reviewer.trim().to_string(),
        at: chrono::Utc::now(),
    };
    if let Err(error) = write_label(&path, &record) {
        return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error);
    }
    let agreement = body
        .eval_run
        .and_then(|id| run_agreement(dir, &id, &record.reviewer));
    let judge = crate::eval::calibration::judge_verdict(verdict.as_ref());
    let answer = Labelled {
        label: record,
        judge,
        agreement,
    };
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// The reviewer's agreement with the judge over eval run `id`'s turns;
/// none for an eval run not recorded.
fn run_agreement(dir: &std::path::Path, id: &str, reviewer: &str) -> Option<Agreement> {
    let index = RunIndex::open(dir).ok()?.index;
    let id = eval_run_of(&index, Some(id)).ok()??;
    let members = index.member_paths(&id).ok()?;
    let pairs = reviewer_pairs(&queued_turns(members, None), reviewer).ok()?;
    Some(running_agreement(&pairs))
}
