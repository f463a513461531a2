//! Run sets: the runs of one side of a comparison, named by the one
//! precedence rule (`runs::version`): a folder of run logs or an override
//! file (by its fingerprint), an eval run (`ev-…`, `last~N` of `--suite`:
//! exactly its turns, found by the run index) or a fingerprint; their
//! prompt versions, and every run accounted for — counted, superseded by a
//! newer run of the same turn, left out by `--variant`, or unreadable.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::chat::event::Usage;
use crate::prompts::PromptRegistry;
use crate::runs::record::RecordedVerdict;
use crate::runs::store::RunLogError;
use crate::runs::{RunLog, RunLogReader};

use super::sides::{Resolved, resolve_spec};

/// Providers whose answers do not come from a model: a comparison of their
/// runs says nothing about how a prompt performs.
pub const OFFLINE_PROVIDERS: [&str; 2] = ["script", "replay"];

/// One recorded turn, as a comparison sees it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEntry {
    pub path: PathBuf,
    pub turn_id: String,
    pub started_at: DateTime<Utc>,
    /// The eval suite, for eval runs.
    pub suite: Option<String>,
    /// The suite's variant, for eval runs.
    pub variant: Option<String>,
    pub claim: String,
    /// The eval case, or the user's message for a chat turn.
    pub case: String,
    pub sample: u32,
    pub fingerprint: String,
    /// The prompt version it is compared as: its variant, or its fingerprint
    /// for a chat turn — with its model settings added when one set holds
    /// that version under several.
    pub version: String,
    /// The model the turn asked for and its default thinking level
    /// (`gemini-3.1-flash-lite · low`, `· high, forced`).
    pub model: String,
    /// `gemini`, `script` or `replay`.
    pub provider: String,
    /// `done`, `error`, `cancelled` or `partial`.
    pub status: String,
    pub verdict: Option<RecordedVerdict>,
    pub answer: String,
    pub tools: Vec<String>,
    pub usage: Usage,
    pub latency_ms: Option<u64>,
    /// What its model calls cost in USD; absent: unknown.
    pub cost_usd: Option<f64>,
    /// Model calls answered from the model-call cache: its latency says
    /// nothing and is left out.
    pub cached_calls: u32,
    /// Thumbs votes given in `promptlab serve`, shown beside verdicts.
    pub votes: Votes,
}

/// Thumbs votes on a run (`runs::feedback`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Votes {
    pub up: usize,
    pub down: usize,
}

impl Votes {
    /// The votes beside a run log. A vote is advisory: a feedback file that
    /// cannot be read counts as none.
    fn of(log: &std::path::Path) -> Votes {
        let records = crate::runs::feedback::read_feedback(log).unwrap_or_default();
        let count = |vote| records.iter().filter(|r| r.vote == vote).count();
        Votes {
            up: count(crate::runs::feedback::Vote::Up),
            down: count(crate::runs::feedback::Vote::Down),
        }
    }

    pub fn any(&self) -> bool {
        self.up + self.down > 0
    }
}

pub use crate::runs::view::{TurnKey, TurnPlace};

impl RunEntry {
    pub fn from_log(log: &RunLog) -> RunEntry {
        let header = &log.header;
        let place = log.view().place();
        let footer = log.footer.as_ref();
        let version = header
            .labels
            .as_ref()
            .map_or(header.fingerprint.clone(), |l| l.variant.clone());
        RunEntry {
            path: log.path.clone(),
            turn_id: header.turn_id.clone(),
            started_at: header.started_at,
            suite: place.suite,
            variant: header.labels.as_ref().map(|l| l.variant.clone()),
            claim: place.claim,
            case: place.case,
            sample: place.sample,
            fingerprint: header.fingerprint.clone(),
            version,
            model: crate::runs::content::model_setting(header),
            provider: header.provider.clone(),
            status: log.view().state().as_str().to_string(),
            // A re-score (`eval --rescore`) stands over the verdict of the run.
            verdict: log.view().verdict(),
            answer: log.answer(),
            tools: log.tools_called(),
            usage: footer.map(|f| f.usage).unwrap_or_default(),
            latency_ms: log.unqueued_ms(),
            cost_usd: footer.and_then(|f| f.cost(&header.provider)),
            cached_calls: footer.map_or(0, |f| f.cached_calls),
            votes: Votes::of(&log.path),
        }
    }

    /// The prompt version this run belongs to: its eval variant, or its
    /// fingerprint for a chat turn.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// What pairs it with the same turn of the other version.
    pub fn key(&self) -> TurnPlace {
        TurnPlace {
            suite: self.suite.clone(),
            claim: self.claim.clone(),
            case: self.case.clone(),
            sample: self.sample,
        }
    }

    pub fn is_offline(&self) -> bool {
        OFFLINE_PROVIDERS.contains(&self.provider.as_str())
    }
}

/// A run log that could not be read, by name, with why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnreadableLog {
    pub path: PathBuf,
    pub error: String,
}

/// A run that is not compared, and why.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetAside {
    pub run: RunEntry,
    pub reason: String,
}

/// The runs of one side of a comparison, and every run it did not count.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSet {
    /// As given on the command line.
    pub label: String,
    /// What it was taken to mean.
    pub source: String,
    /// The runs compared: one per version and turn.
    pub runs: Vec<RunEntry>,
    /// Older runs of a turn recorded again, and older prompt versions of a
    /// variant: named, not compared.
    pub superseded: Vec<SetAside>,
    /// Runs of variants `--variant` did not select.
    pub not_selected: Vec<SetAside>,
    /// Replays (`promptlab replay`): re-runs of a recorded turn with its
    /// recorded model replies, never a run of a prompt version of their own.
    pub replays: Vec<SetAside>,
    pub unreadable: Vec<UnreadableLog>,
    /// What its reader should be told once ("no index: scanning 12 logs").
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl RunSet {
    /// The prompt versions it holds, in name order.
    pub fn versions(&self) -> Vec<String> {
        let names: BTreeSet<&str> = self.runs.iter().map(RunEntry::version).collect();
        names.into_iter().map(str::to_string).collect()
    }

    /// The eval suites it holds (none for chat turns).
    pub fn suites(&self) -> BTreeSet<&str> {
        self.runs
            .iter()
            .filter_map(|r| r.suite.as_deref())
            .collect()
    }

    /// How many runs were made by a provider that does not call a model.
    pub fn offline_runs(&self) -> usize {
        self.runs.iter().filter(|run| run.is_offline()).count()
    }
}

/// Which runs a comparison looks at.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs of this eval suite.
    pub suite: Option<String>,
    /// Only these variants (by name); all when empty.
    pub variants: Vec<String>,
    /// Only runs that asked for this model.
    pub model: Option<String>,
    /// Only runs of this provider.
    pub provider: Option<String>,
}

impl RunFilter {
    /// Why `run` is left out by `--model` or `--provider`, if it is.
    pub(crate) fn model_refuses(&self, run: &RunEntry) -> Option<String> {
        let model = run.model.split(" · ").next().unwrap_or_default();
        if let Some(wanted) = self.model.as_ref().filter(|wanted| *wanted != model) {
            return Some(format!("model `{model}`, not `{wanted}` (--model)"));
        }
        let provider = &run.provider;
        self.provider
            .as_ref()
            .filter(|wanted| *wanted != provider)
            .map(|wanted| format!("provider `{provider}`, not `{wanted}` (--provider)"))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(
        "`{0}` is not a folder of run logs, an override file, an eval run (`ev-…`), `last`/`last~N` or a prompt fingerprint"
    )]
    Unknown(String),
    #[error("{0}")]
    EvalRun(String),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
    #[error("{0}")]
    Version(#[from] crate::runs::version::VersionError),
    #[error("failed to read run logs in `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no run logs for {0}")]
    Empty(String),
    #[error("{0}")]
    Unpairable(String),
}

/// Resolves one side: a folder of run logs, an override file or folder of
/// overrides (by fingerprint), or a fingerprint — the last two looked up in
/// `runs_dir`.
pub fn load_set(
    spec: &str,
    runs_dir: &Path,
    filter: &RunFilter,
    registry: &PromptRegistry,
) -> Result<RunSet, CompareError> {
    let (spec, side_variant) = split_variant(spec);
    let mut filter = filter.clone();
    if let Some(variant) = side_variant {
        filter.variants = vec![variant.to_string()];
    }
    let filter = &filter;
    let Resolved {
        mut source,
        files,
        wanted,
        notes,
    } = resolve_spec(spec, runs_dir, registry, filter)?;
    if let Some(variant) = side_variant {
        source.push_str(&format!(", variant {variant}"));
    }
    let mut set = RunSet {
        label: match side_variant {
            Some(variant) => format!("{spec}@{variant}"),
            None => spec.to_string(),
        },
        source: source.clone(),
        runs: Vec::new(),
        superseded: Vec::new(),
        not_selected: Vec::new(),
        replays: Vec::new(),
        unreadable: Vec::new(),
        notes,
    };
    for refused in files.refused {
        if let RunLogError::Refused { path, reason } = refused {
            set.unreadable.push(UnreadableLog {
                path: PathBuf::from(path),
                error: reason,
            });
        }
    }
    let found = read_wanted(files.paths, wanted.as_ref(), filter, &mut set.unreadable);
    for (run, replayed) in found {
        if let Some(turn) = replayed {
            let reason = format!("a replay of turn {turn}: not a run of its own");
            set.replays.push(SetAside { run, reason });
        } else if let Some(reason) = filter.model_refuses(&run) {
            set.not_selected.push(SetAside { run, reason });
        } else if filter.variants.is_empty() || filter.variants.iter().any(|v| v == run.version()) {
            set.runs.push(run);
        } else {
            let reason = format!("variant `{}` not selected by --variant", run.version());
            set.not_selected.push(SetAside { run, reason });
        }
    }
    if set.runs.is_empty() {
        return Err(empty_error(
            source,
            filter,
            !set.not_selected.is_empty(),
            set.replays.len(),
        ));
    }
    name_model_versions(&mut set.runs);
    set.runs = keep_newest_version(std::mem::take(&mut set.runs), &mut set.superseded);
    set.runs = deduplicate(std::mem::take(&mut set.runs), &mut set.superseded);
    Ok(set)
}

/// A side with no run to compare: only replays, or none its filters kept
/// (`selected_out`: some were left out by them).
pub(crate) fn empty_error(
    source: String,
    filter: &RunFilter,
    selected_out: bool,
    replays: usize,
) -> CompareError {
    if !selected_out {
        return CompareError::Empty(match replays {
            0 => source,
            n => format!("{source} (only {n} replays, which are not runs of their own)"),
        });
    }
    let mut chosen: Vec<String> = Vec::new();
    if !filter.variants.is_empty() {
        chosen.push(format!("--variant {}", filter.variants.join(", ")));
    }
    chosen.extend(filter.model.iter().map(|m| format!("--model {m}")));
    chosen.extend(filter.provider.iter().map(|p| format!("--provider {p}")));
    CompareError::Empty(format!("{source} with {}", chosen.join(" ")))
}

/// The logs among `paths` of the `wanted` fingerprint and `--suite`, each
/// with the turn it replays when it is a replay; each that cannot be read
/// goes to `unreadable`.
fn read_wanted(
    paths: Vec<PathBuf>,
    wanted: Option<&String>,
    filter: &RunFilter,
    unreadable: &mut Vec<UnreadableLog>,
) -> Vec<(RunEntry, Option<String>)> {
    let (mut found, mut reader) = (Vec::new(), RunLogReader::default());
    for file in paths {
        let log = match reader.read(&file) {
            Ok(log) => log,
            Err(error) => {
                unreadable.push(UnreadableLog {
                    path: file,
                    error: error.to_string(),
                });
                continue;
            }
        };
        let wanted_fingerprint = wanted.is_none_or(|fp| &log.header.fingerprint == fp);
        let wanted_suite = filter
            .suite
            .as_deref()
            .is_none_or(|name| log.header.labels.as_ref().is_some_and(|l| l.suite == name));
        if wanted_fingerprint && wanted_suite {
            let replayed = log.view().replay_of().map(str::to_string);
            found.push((RunEntry::from_log(&log), replayed));
        }
    }
    found
}

/// `SPEC@VARIANT` names one variant of a side (`runs/models@lite-low`), so
/// that two variants of one eval run can be compared; a path that exists
/// as written is never split.
pub(crate) fn split_variant(spec: &str) -> (&str, Option<&str>) {
    if Path::new(spec).exists() {
        return (spec, None);
    }
    match spec.rsplit_once('@') {
        Some((base, variant))
            if !base.is_empty()
                && !variant.is_empty()
                && variant
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) =>
        {
            (base, Some(variant))
        }
        _ => (spec, None),
    }
}

/// A version recorded under several model settings is several versions:
/// each gets its model in its name, so a model change is never mixed with
/// (or mistaken for) a prompt change.
fn name_model_versions(runs: &mut [RunEntry]) {
    let mut models: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for run in runs.iter() {
        models
            .entry(run.version.clone())
            .or_default()
            .insert(run.model.clone());
    }
    for run in runs.iter_mut() {
        if models.get(&run.version).is_some_and(|set| set.len() > 1) {
            run.version = format!("{} ({})", run.version, run.model);
        }
    }
}

/// A variant recorded under several prompt versions (the suite changed
/// between runs): the version recorded last counts; the older runs are set
/// aside by name, never mixed in.
fn keep_newest_version(runs: Vec<RunEntry>, set_aside: &mut Vec<SetAside>) -> Vec<RunEntry> {
    let mut newest: BTreeMap<String, (DateTime<Utc>, String)> = BTreeMap::new();
    for run in runs.iter().filter(|run| run.variant.is_some()) {
        let entry = newest
            .entry(run.version().to_string())
            .or_insert((run.started_at, run.fingerprint.clone()));
        if run.started_at > entry.0 {
            *entry = (run.started_at, run.fingerprint.clone());
        }
    }
    let mut kept = Vec::new();
    for run in runs {
        match newest.get(run.version()) {
            Some((_, fingerprint)) if run.variant.is_some() && &run.fingerprint != fingerprint => {
                let reason = format!(
                    "variant `{}` was recorded again with fingerprint {fingerprint}; this run has {}",
                    run.version(),
                    run.fingerprint
                );
                set_aside.push(SetAside { run, reason });
            }
            _ => kept.push(run),
        }
    }
    kept
}

/// One run per version and turn: the newest of an eval turn recorded more
/// than once (the others set aside by name); chat turns on the same claim
/// and message become samples 1, 2, … in time order.
fn deduplicate(mut runs: Vec<RunEntry>, set_aside: &mut Vec<SetAside>) -> Vec<RunEntry> {
    runs.sort_by(|a, b| (a.started_at, &a.path).cmp(&(b.started_at, &b.path)));
    let mut chat_samples: BTreeMap<(String, String, String), u32> = BTreeMap::new();
    for run in runs.iter_mut().filter(|run| run.sample == 0) {
        let next = chat_samples
            .entry((
                run.version().to_string(),
                run.claim.clone(),
                run.case.clone(),
            ))
            .or_insert(0);
        *next += 1;
        run.sample = *next;
    }
    let mut newest: BTreeMap<TurnKey, RunEntry> = BTreeMap::new();
    for run in runs {
        let slot = TurnKey {
            place: run.key(),
            version: run.version().to_string(),
        };
        if let Some(older) = newest.insert(slot, run) {
            let reason = "the same turn was recorded again later".to_string();
            set_aside.push(SetAside { run: older, reason });
        }
    }
    newest.into_values().collect()
}
