//! A turn's row, built from the one view of a recorded turn
//! (`runs::view::RunView`): its place, state, standing verdict and numbers
//! come from there, never from a second reading of the records.

use std::path::Path;

use rusqlite::{Connection, params};

use crate::runs::view::RunView;

/// A run log's row in `turns`.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRow {
    /// Relative to the runs folder, `/`-separated.
    pub path: String,
    /// The folder it is in, relative to the runs folder (`""` for the
    /// runs folder itself).
    pub folder: String,
    pub turn_id: String,
    pub started_at: String,
    pub started_ns: i64,
    pub claim: String,
    pub fingerprint: String,
    pub variant: Option<String>,
    pub model: String,
    pub provider: String,
    pub status: String,
    pub suite: Option<String>,
    pub case: String,
    pub sample: u32,
    pub verdict: Option<String>,
    /// Unmet expectations, one a line.
    pub failures: Option<String>,
    pub errored: bool,
    /// Token counts; null where a server of the turn left one out.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    /// Model calls whose server left some count out.
    pub usage_unreported: u32,
    pub thinking_tokens: u64,
    pub cost_usd: Option<f64>,
    pub latency_ms: Option<u64>,
    pub cached: bool,
    pub eval_run: Option<String>,
    /// A re-score stands over the footer's verdict.
    pub rescored: bool,
    /// A replay's: the turn it replayed (it has no suite or eval run).
    pub replay_of: Option<String>,
    /// The case's tags as a JSON array (`["grounding"]`), which Datasette
    /// and sqlite-utils read as JSON; null for a turn without tags.
    pub tags: Option<String>,
    /// The model and thinking level asked for (`runs::content::model_setting`).
    pub model_setting: String,
    /// What `compare` pairs on, from the whole log (`runs::content`):
    /// null when only its header and footer could be read.
    pub body: Option<TurnBody>,
    /// The rubric judge's calls behind its verdict and their tokens, as
    /// JSON `[calls, usage]`; null without any.
    pub judge: Option<String>,
}

/// What a row keeps of a log's body: the answer's digest, the tools it
/// called (a JSON array) and its latency less the time queued.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnBody {
    pub answer_sha256: String,
    pub tools: String,
    pub unqueued_ms: Option<u64>,
}

impl TurnBody {
    pub fn of(log: &crate::runs::RunLog) -> TurnBody {
        TurnBody {
            answer_sha256: crate::runs::content::answer_digest(&log.answer()),
            tools: serde_json::to_string(&log.tools_called()).unwrap_or_default(),
            unqueued_ms: log.unqueued_ms(),
        }
    }
}

impl TurnRow {
    /// The row of the log `view` reads, its path taken relative to `root`.
    pub fn of(view: &RunView<'_>, root: &Path) -> TurnRow {
        let header = view.header;
        let place = view.place();
        let verdict = view.verdict();
        let numbers = view.numbers(verdict.as_ref());
        let footer = view.footer;
        let rescored =
            verdict.is_some() && footer.and_then(|f| f.verdict.as_ref()) != verdict.as_ref();
        let path = relative(view.path, root);
        TurnRow {
            folder: folder_of(&path).to_string(),
            path,
            turn_id: header.turn_id.clone(),
            started_at: header.started_at.to_rfc3339(),
            started_ns: nanos(header.started_at),
            claim: place.claim,
            fingerprint: header.fingerprint.clone(),
            variant: header.labels.as_ref().map(|l| l.variant.clone()),
            model: header.model.clone(),
            provider: header.provider.clone(),
            status: view.state().as_str().to_string(),
            suite: place.suite,
            case: place.case,
            sample: place.sample,
            verdict: verdict.as_ref().map(|v| v.outcome.as_str().to_string()),
            failures: verdict
                .as_ref()
                .filter(|v| !v.failures.is_empty())
                .map(|v| v.failures.join("\n")),
            errored: numbers.errored,
            input_tokens: numbers.usage.input_tokens,
            output_tokens: numbers.usage.output_tokens,
            cache_read_tokens: numbers.usage.cache_read_tokens,
            usage_unreported: numbers.usage.usage_unreported,
            thinking_tokens: footer.map_or(0, |f| f.thinking_tokens),
            cost_usd: footer.and_then(|f| f.cost(&header.provider)),
            latency_ms: numbers.latency_ms,
            cached: numbers.cached,
            eval_run: header.labels.as_ref().and_then(|l| l.eval_run.clone()),
            rescored,
            replay_of: view.replay_of().map(str::to_string),
            tags: header
                .labels
                .as_ref()
                .filter(|l| !l.tags.is_empty())
                .and_then(|l| serde_json::to_string(&l.tags).ok()),
            model_setting: crate::runs::content::model_setting(header),
            body: None,
            judge: verdict.as_ref().and_then(|v| {
                let spend = crate::judge::JudgeSpend::of_rubric(&v.rubric);
                (spend.calls > 0)
                    .then(|| serde_json::to_string(&(spend.calls, spend.usage)).ok())
                    .flatten()
            }),
        }
    }

    /// Adds the row, replacing any of the same path.
    pub fn upsert(&self, db: &Connection) -> rusqlite::Result<()> {
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        db.prepare_cached(
            "INSERT OR REPLACE INTO turns (path, folder, turn_id, started_at, started_ns, claim, fingerprint,
             variant, model, provider, status, suite, \"case\", sample, verdict, failures, errored,
             input_tokens, output_tokens, cache_read_tokens, usage_unreported, thinking_tokens,
             cost_usd, latency_ms, cached, eval_run, rescored, replay_of, tags, model_setting,
             answer_sha256, tools, unqueued_ms, judge)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34)",
        )?
        .execute(params![
            self.path,
            self.folder,
            self.turn_id,
            self.started_at,
            self.started_ns,
            self.claim,
            self.fingerprint,
            self.variant,
            self.model,
            self.provider,
            self.status,
            self.suite,
            self.case,
            self.sample,
            self.verdict,
            self.failures,
            self.errored,
            self.input_tokens.map(count),
            self.output_tokens.map(count),
            self.cache_read_tokens.map(count),
            self.usage_unreported,
            count(self.thinking_tokens),
            self.cost_usd,
            self.latency_ms.map(count),
            self.cached,
            self.eval_run,
            self.rescored,
            self.replay_of,
            self.tags,
            self.model_setting,
            self.body.as_ref().map(|b| &b.answer_sha256),
            self.body.as_ref().map(|b| &b.tools),
            self.body.as_ref().and_then(|b| b.unqueued_ms).map(count),
            self.judge,
        ])?;
        if let (Some(eval_run), Some(suite)) = (&self.eval_run, &self.suite) {
            let ended = self.started_ns.saturating_add(
                i64::try_from(self.latency_ms.unwrap_or(0))
                    .unwrap_or(0)
                    .saturating_mul(1_000_000),
            );
            note_eval_run(db, eval_run, suite, self.started_ns, ended)?;
        }
        // The runs that counted this turn from its log (a merge, a
        // re-score) count it again.
        db.prepare_cached(
            "UPDATE eval_runs SET numbers_stale = 1
             WHERE id IN (SELECT eval_run FROM eval_run_turns WHERE turn_id = ?1)",
        )?
        .execute([&self.turn_id])?;
        Ok(())
    }
}

/// Widens an eval run's span to take in `[started_ns, ended_ns]`, and
/// marks its numbers to be folded again (`numbers::refresh`).
pub fn note_eval_run(
    db: &Connection,
    id: &str,
    suite: &str,
    started_ns: i64,
    ended_ns: i64,
) -> rusqlite::Result<()> {
    db.prepare_cached(
        "INSERT INTO eval_runs (id, suite, started_ns, ended_ns) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET started_ns = min(started_ns, excluded.started_ns),
         ended_ns = max(ended_ns, excluded.ended_ns), numbers_stale = 1",
    )?
    .execute(params![id, suite, started_ns, ended_ns])?;
    Ok(())
}

/// `path` relative to `root`, `/`-separated (the runs folder's own name
/// never appears in a row, so a copied folder keeps its index meaningful).
pub fn relative(path: &Path, root: &Path) -> String {
    let inside = path.strip_prefix(root).unwrap_or(path);
    inside
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// `fp/x.ndjson` → `fp`; `x.ndjson` → `""`.
pub fn folder_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// Nanoseconds since 1970, clamped to what an `i64` holds (years 1677 to
/// 2262), so that a time outside them still sorts and compares rightly.
pub fn nanos(time: chrono::DateTime<chrono::Utc>) -> i64 {
    time.timestamp_nanos_opt()
        .unwrap_or(if time.timestamp() > 0 {
            i64::MAX
        } else {
            i64::MIN
        })
}
