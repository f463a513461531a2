//! `RunRow`: one recorded turn as `runs list` shows it — the same row for
//! the table and for `--json`.

use std::path::PathBuf;

use chrono::{DateTime, Local, Utc};
use serde::Serialize;

use super::record::{Outcome, RunLabels};
use super::store::RunSummary;
use crate::chat::Role;
use crate::event::Usage;
use crate::prompts::thinking::ThinkingLevel;
use crate::text::one_line;

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunRow {
    pub path: PathBuf,
    pub turn_id: String,
    pub started_at: DateTime<Utc>,
    pub claim: Option<String>,
    pub capability: Option<String>,
    pub fingerprint: String,
    pub model: String,
    /// The level the model was called with (a quick action's own, or the default).
    pub thinking_level: Option<ThinkingLevel>,
    pub provider: String,
    /// `done`, `error`, `cancelled` or `partial`.
    pub status: String,
    pub usage: Option<Usage>,
    /// What its model calls cost in USD; absent: unknown (or partial).
    pub cost_usd: Option<f64>,
    /// Model calls answered from the model-call cache.
    pub cached_calls: u32,
    pub total_ms: Option<u64>,
    pub time_to_first_token_ms: Option<u64>,
    pub labels: Option<RunLabels>,
    /// A replay's: the id of the recorded turn it replayed. A replay is no
    /// run of that turn (it has no labels, no verdict).
    pub replay_of: Option<String>,
    /// An eval turn's standing verdict (its re-score's, else its footer's).
    pub verdict: Option<Outcome>,
    /// Its unmet expectations, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// The last user message on one line, cut to `MESSAGE_PREVIEW_CHARS`
    /// characters with `…`; absent when the request has none.
    pub message_preview: Option<String>,
}

/// How much of the user's message a row carries: enough to recognise the
/// turn, not the message itself (`runs show` has that).
pub const MESSAGE_PREVIEW_CHARS: usize = 80;

/// `done`, `error` or `cancelled` from the footer; `partial` without one.
pub fn status_of(summary: &RunSummary) -> &'static str {
    summary.view().state().as_str()
}

impl RunRow {
    pub fn of(run: &RunSummary) -> RunRow {
        let header = &run.header;
        let footer = run.footer.as_ref();
        let verdict = run.view().verdict();
        RunRow {
            path: run.path.clone(),
            turn_id: header.turn_id.clone(),
            started_at: header.started_at,
            claim: header
                .claim
                .as_ref()
                .map(|c| c.id.clone())
                .or_else(|| header.request.claim_id.clone()),
            capability: header.request.capability.clone(),
            fingerprint: header.fingerprint.clone(),
            model: header.model.clone(),
            thinking_level: header.thinking_level,
            provider: header.provider.clone(),
            status: status_of(run).to_string(),
            usage: footer.map(|f| f.usage),
            cost_usd: footer.and_then(|f| f.cost(&header.provider)),
            cached_calls: footer.map_or(0, |f| f.cached_calls),
            total_ms: footer.map(|f| f.total_ms),
            time_to_first_token_ms: footer.and_then(|f| f.time_to_first_token_ms),
            labels: header.labels.clone(),
            replay_of: header.replay_of.clone(),
            verdict: verdict.as_ref().map(|v| v.outcome),
            failures: verdict.map(|v| v.failures).unwrap_or_default(),
            message_preview: header
                .request
                .messages
                .iter()
                .rev()
                .find(|message| message.role == Role::User)
                .map(|message| one_line(&message.text, MESSAGE_PREVIEW_CHARS)),
        }
    }

    /// The table's cells, in the order of `TABLE_HEADER`.
    pub fn cells(&self, claim_label: &str) -> [String; 14] {
        let model = match self.thinking_level {
            Some(level) => format!("{} · {level}", self.model),
            None => self.model.clone(),
        };
        [
            self.started_at
                .with_timezone(&Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string(),
            short_id(&self.turn_id),
            claim_label.to_string(),
            match (&self.labels, &self.replay_of) {
                (Some(l), _) => format!("{} · {} #{}", l.suite, l.case, l.sample),
                (None, Some(turn)) => format!("replay of {}", short_id(turn)),
                (None, None) => String::new(),
            },
            self.message_preview.clone().unwrap_or_default(),
            self.capability.clone().unwrap_or_default(),
            self.fingerprint.clone(),
            model,
            self.provider.clone(),
            self.status.clone(),
            self.verdict
                .map(|v| v.as_str().to_string())
                .unwrap_or_default(),
            self.usage.map(|u| u.in_out()).unwrap_or_default(),
            match (self.usage, self.cost_usd) {
                // No footer: the turn never finished.
                (None, _) => String::new(),
                (Some(_), cost) => {
                    let cost = crate::cost::Cost::from(cost).display();
                    if self.cached_calls > 0 {
                        format!("{cost} (cached)")
                    } else {
                        cost
                    }
                }
            },
            self.total_ms
                .map(|ms| format!("{:.2} s", ms as f64 / 1000.0))
                .unwrap_or_default(),
        ]
    }
}

/// A turn id as the table shows it: its first 8 characters, enough for
/// `runs show`.
fn short_id(turn_id: &str) -> String {
    turn_id.chars().take(8).collect()
}

pub const TABLE_HEADER: [&str; 14] = [
    "when",
    "turn",
    "claim",
    "suite · case",
    "message",
    "capability",
    "fingerprint",
    "model",
    "provider",
    "status",
    "verdict",
    "tokens in/out",
    "cost",
    "latency",
];
