//! Override files from the Prompt Lab page, in `serve --overrides-dir`
//! (default `overrides/`): `GET /api/overrides` lists them with their
//! fingerprints, `GET /api/overrides/{name}` loads one into the editors,
//! `POST /api/overrides {name, overrides, replace?}` saves the usable ones
//! (201; 400 for a bad name or nothing usable, 409 when the file exists),
//! and `POST /api/overrides/yaml {overrides}` gives the same YAML for a
//! download without saving. Unusable overrides are never written and are
//! named in the answer. A saved file's fingerprint is computed by loading
//! it back as `--overrides FILE` and `prompts fingerprint FILE` load it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::api::parse_json;
use super::{ServeState, json_error};
use crate::prompts::override_file::{
    OverrideFileName, SaveError, list_override_files, render_override_file, save_override_file,
};
use crate::prompts::overrides::IgnoredOverride;
use crate::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};

/// One file of the folder, or why it does not load.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OverrideFileEntry {
    /// The file name, e.g. `plain-spoken.yaml`.
    pub file: String,
    pub fingerprint: Option<String>,
    /// The ids it overrides (usable ones).
    pub applied: Vec<String>,
    pub ignored: Vec<IgnoredOverride>,
    pub error: Option<String>,
}

/// A loaded file: its texts for the editors.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OverrideFileContents {
    pub file: String,
    pub fingerprint: String,
    pub overrides: BTreeMap<String, String>,
    pub ignored: Vec<IgnoredOverride>,
}

/// What a save (or a download) wrote.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedOverrides {
    /// The file name (absent for a download).
    pub file: Option<String>,
    pub fingerprint: String,
    pub saved: Vec<String>,
    /// Not written: unknown ids, blank or over-long texts.
    pub ignored: Vec<IgnoredOverride>,
    pub yaml: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveBody {
    name: String,
    overrides: BTreeMap<String, String>,
    #[serde(default)]
    replace: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlBody {
    overrides: BTreeMap<String, String>,
}

pub async fn list(State(state): State<Arc<ServeState>>) -> Response {
    let dir = state.overrides_dir.clone();
    let registry = state.ctx.registry;
    let listed = tokio::task::spawn_blocking(move || list_override_files(&dir)).await;
    let files = match listed {
        Ok(Ok(files)) => files,
        Ok(Err(error)) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
        Err(error) => return state.error(StatusCode::INTERNAL_SERVER_ERROR, &error),
    };
    let entries = files
        .into_iter()
        .map(|(file, loaded)| match loaded {
            Ok(set) => {
                let resolved = resolve_overrides(&set.prompts, registry);
                OverrideFileEntry {
                    file,
                    fingerprint: Some(fingerprint(&resolved.applied)),
                    applied: resolved.applied.into_keys().collect(),
                    ignored: resolved.ignored,
                    error: None,
                }
            }
            Err(error) => OverrideFileEntry {
                file,
                fingerprint: None,
                applied: Vec::new(),
                ignored: Vec::new(),
                error: Some(state.message(&error.to_string())),
            },
        })
        .collect::<Vec<_>>();
    Json(serde_json::json!({ "files": entries })).into_response()
}

/// `GET /api/overrides/{file}`: `file` is a name from the list.
pub async fn load(
    State(state): State<Arc<ServeState>>,
    file: Result<UrlPath<String>, PathRejection>,
) -> Response {
    let file = match super::api::segment(file) {
        Ok(file) => file,
        Err(response) => return *response,
    };
    let not_found = || {
        let message = format!("no override file `{}`", crate::text::quote(&file));
        json_error(StatusCode::NOT_FOUND, message)
    };
    let listed = list_override_files(&state.overrides_dir).unwrap_or_default();
    let Some((_, loaded)) = listed.into_iter().find(|(name, _)| *name == file) else {
        return not_found();
    };
    match loaded {
        Ok(set) => Json(contents(&file, set, state.ctx.registry)).into_response(),
        Err(error) => json_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            state.message(&error.to_string()),
        ),
    }
}

fn contents(file: &str, set: OverrideSet, registry: &PromptRegistry) -> OverrideFileContents {
    let resolved = resolve_overrides(&set.prompts, registry);
    OverrideFileContents {
        file: file.to_string(),
        fingerprint: fingerprint(&resolved.applied),
        overrides: set.prompts,
        ignored: resolved.ignored,
    }
}

pub async fn save(
    State(state): State<Arc<ServeState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: SaveBody = match parse_json(body, &["name", "overrides", "replace"]) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    let name = match OverrideFileName::parse(&body.name) {
        Ok(name) => name,
        Err(error) => return json_error(StatusCode::BAD_REQUEST, error.to_string()),
    };
    let resolved = resolve_overrides(&body.overrides, state.ctx.registry);
    if resolved.applied.is_empty() {
        return nothing_usable(&resolved.ignored);
    }
    let yaml = match render_override_file(&resolved.applied) {
        Ok(yaml) => yaml,
        Err(error) => return json_error(StatusCode::UNPROCESSABLE_ENTITY, error.to_string()),
    };
    let dir = state.overrides_dir.clone();
    let (written, yaml) = tokio::task::spawn_blocking(move || {
        let written = save_override_file(&dir, &name, &yaml, body.replace)
            .and_then(|path| read_back(&path).map(|set| (path, set)));
        (written, yaml)
    })
    .await
    .unwrap_or_else(|error| {
        (
            Err(SaveError::NotRoundTrip(error.to_string())),
            String::new(),
        )
    });
    match written {
        Ok((path, set)) => {
            let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
            let saved = SavedOverrides {
                file,
                fingerprint: fingerprint(
                    &resolve_overrides(&set.prompts, state.ctx.registry).applied,
                ),
                saved: set.prompts.into_keys().collect(),
                ignored: resolved.ignored,
                yaml,
            };
            (StatusCode::CREATED, Json(saved)).into_response()
        }
        Err(SaveError::Exists(file)) => json_error(
            StatusCode::CONFLICT,
            format!("`{file}` exists; send `replace: true` to overwrite it"),
        ),
        Err(error) => json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            state.message(&error.to_string()),
        ),
    }
}

/// The saved file as the reader loads it: the fingerprint is the file's.
fn read_back(path: &Path) -> Result<OverrideSet, SaveError> {
    OverrideSet::load(&[path.to_path_buf()])
        .map_err(|error| SaveError::NotRoundTrip(error.to_string()))
}

/// `POST /api/overrides/yaml`: the file a save would write, for a download.
pub async fn yaml(
    State(state): State<Arc<ServeState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body: YamlBody = match parse_json(body, &["overrides"]) {
        Ok(body) => body,
        Err(response) => return *response,
    };
    let resolved = resolve_overrides(&body.overrides, state.ctx.registry);
    if resolved.applied.is_empty() {
        return nothing_usable(&resolved.ignored);
    }
    match render_override_file(&resolved.applied) {
        Ok(yaml) => Json(SavedOverrides {
            file: None,
            fingerprint: fingerprint(&resolved.applied),
            saved: resolved.applied.into_keys().collect(),
            ignored: resolved.ignored,
            yaml,
        })
        .into_response(),
        Err(error) => json_error(StatusCode::UNPROCESSABLE_ENTITY, error.to_string()),
    }
}

fn nothing_usable(ignored: &[IgnoredOverride]) -> Response {
    let mut message = "overrides: nothing to save (no usable override)".to_string();
    if !ignored.is_empty() {
        let list = ignored.iter().map(ToString::to_string).collect::<Vec<_>>();
        message = format!("{message}: {}", list.join("; "));
    }
    json_error(StatusCode::BAD_REQUEST, message)
}
