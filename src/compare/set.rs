//! Run sets: the runs of one prompt version, named by a fingerprint, an
//! override file (by its fingerprint) or a folder of run logs; and their
//! pairing key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::chat::context::one_line;
use crate::chat::event::{ChatEvent, Usage};
use crate::chat::request::Role;
use crate::prompts::fingerprint::looks_like_fingerprint;
use crate::prompts::{OverrideSet, PromptRegistry, fingerprint, resolve_overrides};
use crate::runs::record::RecordedVerdict;
use crate::runs::store::run_log_paths;
use crate::runs::{RunLog, read_run_log};

/// One recorded turn, as a comparison sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    pub path: PathBuf,
    pub turn_id: String,
    pub started_at: DateTime<Utc>,
    pub claim: String,
    /// The eval case, or the user's message for a chat turn.
    pub case: String,
    pub sample: u32,
    pub fingerprint: String,
    /// `done`, `error`, `cancelled` or `partial`.
    pub status: String,
    pub verdict: Option<RecordedVerdict>,
    pub answer: String,
    pub tools: Vec<String>,
    pub usage: Usage,
    pub latency_ms: Option<u64>,
}

impl RunEntry {
    fn from_log(log: &RunLog) -> RunEntry {
        let header = &log.header;
        let (case, sample) = match &header.labels {
            Some(labels) => (labels.case.clone(), labels.sample),
            None => {
                let last_user = header
                    .request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User);
                (
                    format!(
                        "“{}”",
                        one_line(last_user.map_or("", |m| m.text.as_str()), 60)
                    ),
                    0,
                )
            }
        };
        let answer: String = log
            .events()
            .filter_map(|event| match event {
                ChatEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let footer = log.footer.as_ref();
        RunEntry {
            path: log.path.clone(),
            turn_id: header.turn_id.clone(),
            started_at: header.started_at,
            claim: header
                .claim
                .as_ref()
                .map(|c| c.id.clone())
                .unwrap_or_else(|| header.request.claim_label().to_string()),
            case,
            sample,
            fingerprint: header.fingerprint.clone(),
            status: footer.map_or("partial", |f| f.status.as_str()).to_string(),
            verdict: footer.and_then(|f| f.verdict.clone()),
            answer,
            tools: log
                .model_calls()
                .flat_map(|call| call.tool_calls.iter().map(|c| c.name.clone()))
                .collect(),
            usage: footer.map(|f| f.usage).unwrap_or_default(),
            latency_ms: footer.map(|f| f.total_ms),
        }
    }

    /// What pairs it with a run of the other version.
    pub fn key(&self) -> (String, String, u32) {
        (self.claim.clone(), self.case.clone(), self.sample)
    }
}

/// The runs of one side of a comparison.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSet {
    /// As given on the command line.
    pub label: String,
    /// What it was taken to mean.
    pub source: String,
    pub runs: Vec<RunEntry>,
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("`{0}` is not a prompt fingerprint, an override file or a folder of run logs")]
    Unknown(String),
    #[error("{0}")]
    Overrides(#[from] crate::prompts::overrides::OverrideError),
    #[error("failed to read run logs in `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no run logs for {0}")]
    Empty(String),
}

/// Resolves one side: a folder of run logs, an override file or folder of
/// overrides (by fingerprint), or a fingerprint — the last two looked up in
/// `runs_dir`. `suite` keeps only the runs of that eval suite.
pub fn load_set(
    spec: &str,
    runs_dir: &Path,
    suite: Option<&str>,
    registry: &PromptRegistry,
) -> Result<RunSet, CompareError> {
    let path = Path::new(spec);
    let holds_logs = |dir: &Path| run_log_paths(dir).is_ok_and(|paths| !paths.is_empty());
    let (source, files, wanted) = if path.is_dir() && holds_logs(path) {
        (format!("run logs in {}", path.display()), list(path)?, None)
    } else if path.is_file() || path.is_dir() {
        let set = OverrideSet::load(&[path.to_path_buf()])?;
        let fingerprint = fingerprint(&resolve_overrides(&set.prompts, registry).applied);
        (
            format!(
                "fingerprint {fingerprint} (of {spec}) in {}",
                runs_dir.display()
            ),
            list(runs_dir)?,
            Some(fingerprint),
        )
    } else if looks_like_fingerprint(spec) {
        (
            format!("fingerprint {spec} in {}", runs_dir.display()),
            list(runs_dir)?,
            Some(spec.to_string()),
        )
    } else {
        return Err(CompareError::Unknown(spec.to_string()));
    };
    let mut runs = Vec::new();
    for file in files {
        let Ok(log) = read_run_log(&file) else {
            continue;
        };
        let wanted_fingerprint = wanted
            .as_ref()
            .is_none_or(|fp| &log.header.fingerprint == fp);
        let wanted_suite =
            suite.is_none_or(|name| log.header.labels.as_ref().is_some_and(|l| l.suite == name));
        if wanted_fingerprint && wanted_suite {
            runs.push(RunEntry::from_log(&log));
        }
    }
    if runs.is_empty() {
        return Err(CompareError::Empty(source));
    }
    Ok(RunSet {
        label: spec.to_string(),
        source,
        runs: deduplicate(runs),
    })
}

fn list(dir: &Path) -> Result<Vec<PathBuf>, CompareError> {
    run_log_paths(dir).map_err(|source| CompareError::Read {
        path: dir.display().to_string(),
        source,
    })
}

/// One run per key: the newest of an eval key; chat turns on the same
/// claim and message become samples 1, 2, … in time order.
fn deduplicate(mut runs: Vec<RunEntry>) -> Vec<RunEntry> {
    runs.sort_by_key(|run| run.started_at);
    let mut chat_samples: BTreeMap<(String, String), u32> = BTreeMap::new();
    for run in runs.iter_mut().filter(|run| run.sample == 0) {
        let next = chat_samples
            .entry((run.claim.clone(), run.case.clone()))
            .or_insert(0);
        *next += 1;
        run.sample = *next;
    }
    let mut newest: BTreeMap<(String, String, u32), RunEntry> = BTreeMap::new();
    for run in runs {
        newest.insert(run.key(), run);
    }
    newest.into_values().collect()
}
