//! One recorded turn as a report shows it: where it sits (variant, claim,
//! case, sample), its verdict, its numbers, and its transcript the way the
//! production front end showed it — the user's message, the activity chips,
//! the answer, the lookups trace with full arguments and results, client
//! actions, the done footer or the error — plus the assembled prompt's blocks.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::chat::event::{ChatEvent, Usage};
use crate::chat::request::Role;
use crate::chat::system::BlockSource;
use crate::runs::record::Outcome;
use crate::runs::tally::TurnNumbers;
use crate::runs::{RunLog, RunStatus};

/// A tool call and what it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup {
    pub round: u32,
    pub tool: String,
    /// The arguments as compact JSON.
    pub args: String,
    /// `None` when no result was recorded (the turn stopped first).
    pub ok: Option<bool>,
    /// The full result the model read (from the next call's trace), else the
    /// event's first 400 characters.
    pub result: Arc<str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReportTurn {
    pub path: PathBuf,
    pub turn_id: String,
    pub started_at: DateTime<Utc>,
    pub suite: Option<String>,
    /// The prompt version: the eval variant, or `chat · <fingerprint>` for a
    /// chat turn — never an eval variant's name (those are labels without
    /// spaces), so chat turns are never counted into a variant.
    pub version: String,
    pub fingerprint: String,
    pub claim: String,
    /// The eval case, or the user's message (one line) for a chat turn.
    pub case: String,
    pub sample: u32,
    pub provider: String,
    pub model: String,
    /// `done`, `error`, `cancelled` or `partial`.
    pub status: String,
    /// The verdict recorded in the footer; `None` for chat turns.
    pub outcome: Option<Outcome>,
    pub failures: Vec<String>,
    pub usage: Usage,
    pub latency_ms: Option<u64>,
    pub first_token_ms: Option<u64>,
    /// What it adds to its version's numbers (`runs::view`, `runs::tally`).
    pub numbers: TurnNumbers,
    pub rounds: u32,
    /// The conversation sent: (role, text).
    pub messages: Vec<(String, String)>,
    /// Activity chips in order: (tool, label).
    pub chips: Vec<(String, String)>,
    pub answer: String,
    pub lookups: Vec<Lookup>,
    /// Client actions as compact JSON.
    pub client_actions: Vec<String>,
    /// The done footer's model, turn id, fingerprint and overridden ids.
    pub done: Option<String>,
    pub error: Option<String>,
    /// The assembled prompt: (id, source, text).
    pub blocks: Vec<(String, String, Arc<str>)>,
    /// A replay's: the recorded turn it replayed (never a run of its own).
    pub replay_of: Option<String>,
}

impl ReportTurn {
    /// `shared` holds one copy of each long text (prompt blocks, tool
    /// results) across the turns a reader builds: 10,000 turns repeat a
    /// few dozen claim briefs and results.
    pub fn from_log(log: &RunLog, shared: &mut SharedText) -> ReportTurn {
        let header = &log.header;
        let footer = log.footer.as_ref();
        let view = log.view();
        let verdict = view.verdict();
        let place = view.place();
        let labels = header.labels.as_ref();
        let messages: Vec<(String, String)> = header
            .request
            .messages
            .iter()
            .map(|m| (role_name(m.role).to_string(), m.text.clone()))
            .collect();
        let mut turn = ReportTurn {
            path: log.path.clone(),
            turn_id: header.turn_id.clone(),
            started_at: header.started_at,
            suite: labels.map(|l| l.suite.clone()),
            version: labels
                .map_or_else(|| chat_version(&header.fingerprint), |l| l.variant.clone()),
            fingerprint: header.fingerprint.clone(),
            claim: place.claim,
            case: place.case,
            sample: place.sample,
            provider: header.provider.clone(),
            model: header.model.clone(),
            status: view.state().as_str().to_string(),
            numbers: view.numbers(verdict.as_ref()),
            // A re-score (`eval --rescore`) stands over the verdict of the run.
            outcome: verdict.as_ref().map(|v| v.outcome),
            failures: verdict
                .as_ref()
                .map(|v| v.failures.clone())
                .unwrap_or_default(),
            usage: footer.map(|f| f.usage).unwrap_or_default(),
            latency_ms: footer.map(|f| f.total_ms),
            first_token_ms: footer.and_then(|f| f.time_to_first_token_ms),
            rounds: log.model_calls().count() as u32,
            messages,
            chips: Vec::new(),
            answer: String::new(),
            lookups: lookups(log, shared),
            client_actions: Vec::new(),
            done: None,
            error: footer.and_then(|f| f.error.clone()),
            blocks: match (&log.prompt, &log.prompt_missing) {
                (Some(p), _) => p
                    .blocks
                    .iter()
                    .map(|b| (b.id.clone(), source_name(&b.source), shared.get(&b.text)))
                    .collect(),
                // A log copied without its stored prompt says so in its place.
                (None, Some(why)) => {
                    vec![("prompt".into(), "not at hand".into(), shared.get(why))]
                }
                (None, None) => Vec::new(),
            },
            replay_of: view.replay_of().map(str::to_string),
        };
        turn.read_events(log);
        if footer.is_none() {
            turn.error
                .get_or_insert_with(|| "the run log is partial: the turn never finished".into());
        }
        turn
    }

    fn read_events(&mut self, log: &RunLog) {
        for event in log.events() {
            match event {
                ChatEvent::TextDelta { text } => self.answer.push_str(text),
                ChatEvent::Activity { tool, label, .. } => {
                    self.chips.push((tool.clone(), label.clone()))
                }
                ChatEvent::ClientAction(action) => self
                    .client_actions
                    .push(serde_json::to_string(action).unwrap_or_else(|_| format!("{action:?}"))),
                ChatEvent::Done(done) => {
                    let overridden = if done.prompts.overridden.is_empty() {
                        "none".to_string()
                    } else {
                        done.prompts.overridden.join(", ")
                    };
                    self.done = Some(format!(
                        "done · model {} · turn {} · prompts {} (overridden: {overridden})",
                        done.model, done.turn_id, done.prompts.fingerprint
                    ));
                }
                ChatEvent::Error { message } => self.error = Some(message.clone()),
                ChatEvent::ToolResult { .. } => {}
            }
        }
        if log
            .footer
            .as_ref()
            .is_some_and(|f| f.status == RunStatus::Cancelled)
        {
            self.error
                .get_or_insert_with(|| "the turn was cancelled".into());
        }
    }
}

/// The eval case, or for a chat turn its last question on one line, as
/// compare names it.
/// Every tool call with its full result: a call's result is in the next
/// model call's `toolResultsIn` (by call id, else by position); a turn that
/// stopped before then has only the event's cut result, or none.
fn lookups(log: &RunLog, shared: &mut SharedText) -> Vec<Lookup> {
    let calls: Vec<_> = log.model_calls().collect();
    let events: HashMap<&str, (bool, &str)> = log
        .events()
        .filter_map(|event| match event {
            ChatEvent::ToolResult { id, ok, result, .. } => {
                Some((id.as_str(), (*ok, result.as_str())))
            }
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let results_in = calls.get(index + 1).map(|next| &next.tool_results_in);
        for (position, tool_call) in call.tool_calls.iter().enumerate() {
            let full = results_in.and_then(|results| {
                results
                    .iter()
                    .find(|r| r.call_id.is_some() && r.call_id == tool_call.id)
                    .or_else(|| results.get(position).filter(|r| r.name == tool_call.name))
            });
            let cut = tool_call.id.as_deref().and_then(|id| events.get(id));
            let (ok, result) = match (full, cut) {
                (Some(full), _) => (Some(full.ok), shared.get(&full.content)),
                (None, Some((ok, text))) => (Some(*ok), shared.get(text)),
                (None, None) => (None, shared.get("")),
            };
            out.push(Lookup {
                round: call.round,
                tool: tool_call.name.clone(),
                args: compact(&tool_call.args),
                ok,
                result,
            });
        }
    }
    out
}

/// One copy of each text, handed out as shared references.
#[derive(Debug, Default)]
pub struct SharedText(HashSet<Arc<str>>);

impl SharedText {
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(kept) = self.0.get(text) {
            return kept.clone();
        }
        let kept: Arc<str> = Arc::from(text);
        self.0.insert(kept.clone());
        kept
    }
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn source_name(source: &BlockSource) -> String {
    match source {
        BlockSource::Default => "default",
        BlockSource::Override => "override",
        BlockSource::Built => "built",
    }
    .to_string()
}

/// The section a chat turn (no eval labels) is reported in.
pub fn chat_version(fingerprint: &str) -> String {
    format!("chat · {fingerprint}")
}
