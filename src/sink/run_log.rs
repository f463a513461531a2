//! The run-log recorder: writes one turn's NDJSON run log as the turn goes.
//!
//! The file is created under `<runs dir>/<fingerprint>/` with a `.partial`
//! suffix, flushed after every record (or, `batched`, whenever the turn
//! waits: `idle`) — text deltas held up to 50 ms to be one record
//! (`log_file`) — and renamed to its final name only
//! after the footer is written and synced (alone: `finish_with`; or handed
//! on written, `finish_written`, for the eval runner to sync with other
//! turns' logs) — so a killed process leaves a
//! file that is clearly partial, never one posing as complete. Names carry
//! the start time and the full turn id and are created with `create_new`,
//! so two turns never write the same file. No API key is ever part of any
//! record: the request record holds options, not credentials.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use std::sync::Arc;

use chrono::Utc;

use super::driver::{SinkRole, TurnSink};
pub use super::log_file::WrittenLog;
use super::log_file::{OpenLog, create_log_file};
use crate::chat::event::Usage;
use crate::chat::request::{ChatRequest, ClaimInput};
use crate::chat::service::{TurnOutput, TurnStart};
use crate::cost::{Cost, PriceTable};
use crate::runs::naming::log_paths;
use crate::runs::prompt_store::{PromptParts, StagedPrompt, StoredPromptNames, stage_prompt};
use crate::runs::record::{
    ClaimRecord, RequestRecord, RunFooter, RunHeader, RunLabels, RunRecord, RunStatus,
    SCHEMA_VERSION,
};

pub struct RunRecorder {
    runs_dir: PathBuf,
    prices: Arc<PriceTable>,
    request: RequestRecord,
    provider: String,
    model: String,
    claim: Option<ClaimRecord>,
    labels: Option<RunLabels>,
    replay_of: Option<String>,
    trace: Option<crate::runs::record::TraceRef>,
    /// Flush when the turn waits and at the footer only (`batched`).
    batched: bool,
    log: Option<OpenLog>,
    /// Why writing the log out failed when its turn waited: the next
    /// record, or the footer, fails with it (`idle`).
    idle_failure: Option<io::Error>,
    /// The prompt the header names, whose file is still to be stored
    /// before the header is written (`wait`, or the next record).
    unstored: Option<StagedPrompt>,
    /// The prompts the other turns of its eval stored (`sharing_prompts`).
    stored: Option<Arc<StoredPromptNames>>,
}

impl RunRecorder {
    /// A recorder for one turn of `request`; it opens its file when the
    /// turn starts, named by the prompt version the start carries.
    pub fn new(
        runs_dir: &Path,
        request: &ChatRequest,
        provider: &str,
        labels: Option<RunLabels>,
    ) -> RunRecorder {
        RunRecorder {
            runs_dir: runs_dir.to_path_buf(),
            prices: PriceTable::shipped(),
            request: RequestRecord::from_request(request),
            provider: provider.to_string(),
            model: request.model.clone(),
            claim: match &request.claim {
                // Known before the turn resolves it, so that a turn that runs
                // elsewhere (the `worker` provider) still names its claim.
                ClaimInput::Document(loaded) => Some(ClaimRecord {
                    id: loaded.claim.id.clone(),
                    sha256: loaded.sha256.clone(),
                    origin: loaded.origin.clone(),
                }),
                ClaimInput::Id(_) => None,
            },
            labels,
            replay_of: None,
            trace: None,
            batched: false,
            log: None,
            idle_failure: None,
            unstored: None,
            stored: None,
        }
    }

    /// Writes the log out whenever the turn waits (`idle`: for the model's
    /// next chunk, a judge, a reader) and at the footer instead of after
    /// every record: for a turn whose events nobody reads as they happen (an
    /// eval without `--format ndjson`), so that the rule "what a reader saw
    /// is in the run log" has no reader to keep it for. A one-call turn
    /// whose answer comes at once (a cache hit, a script, a local model)
    /// then writes its model call, `done` and footer in one write; a model
    /// that streams its answer over seconds, once for each pause. A crash
    /// still leaves a `.partial` file, as far as the turn's last wait (or
    /// the last 8 KiB written); the footer is still synced before the
    /// rename, so a complete name never holds a torn log.
    pub fn batched(mut self) -> RunRecorder {
        self.batched = true;
        self
    }

    /// Shares `stored` with the other turns of an eval: a prompt one of
    /// them stored is not written again while its file is there.
    pub fn sharing_prompts(mut self, stored: Arc<StoredPromptNames>) -> RunRecorder {
        self.stored = Some(stored);
        self
    }

    /// Records the turn as a replay of the recorded turn `turn_id`
    /// (`replayOf`): a debugging re-run with canned model replies, which no
    /// reader may count as a run of that turn, so it carries no eval labels
    /// whatever it was built with.
    pub fn replaying(mut self, turn_id: String) -> RunRecorder {
        self.labels = None;
        self.replay_of = Some(turn_id);
        self
    }

    /// Records the turn's trace in the header (`docs/telemetry.md`).
    pub fn with_trace(mut self, trace: crate::runs::record::TraceRef) -> RunRecorder {
        self.trace = Some(trace);
        self
    }

    /// Prices the turn's calls with `prices` (`--prices`) instead of the
    /// shipped table.
    pub fn with_prices(mut self, prices: Arc<PriceTable>) -> RunRecorder {
        self.prices = prices;
        self
    }

    /// Leaves `waited` out of the turn's times (`t`, `totalMs`): a wait
    /// that was not the turn's own, such as for the reader of its progress.
    pub fn skip_time(&mut self, waited: std::time::Duration) {
        if let Some(log) = &mut self.log {
            log.clock += waited;
        }
    }

    /// The file being written, once the turn has started.
    pub fn path(&self) -> Option<&Path> {
        self.log.as_ref().map(|log| log.partial_path.as_path())
    }

    /// Records one output of the turn. A failed write (disk full, folder
    /// gone) removes the `.partial` file, so no half log is left behind
    /// looking like an abandoned turn; the error goes to the caller.
    pub fn record(&mut self, output: &TurnOutput) -> io::Result<()> {
        let result = self
            .write_pending()
            .and_then(|()| self.record_inner(output));
        self.kept_or_removed(result)
    }

    /// What must come before the next record or the footer: the failure to
    /// write the log out when the turn last waited (said once), else the
    /// new prompt the header names, stored, and the header.
    fn write_pending(&mut self) -> io::Result<()> {
        if let Some(failure) = self.idle_failure.take() {
            return Err(failure);
        }
        self.store_unstored_prompt()
    }

    /// `result`, after removing the `.partial` file when it is an error.
    fn kept_or_removed(&mut self, result: io::Result<()>) -> io::Result<()> {
        match (result, self.log.take()) {
            (Err(error), Some(log)) => {
                drop(log.out);
                let _ = std::fs::remove_file(&log.partial_path);
                Err(removed(&log.partial_path, error))
            }
            (result, log) => {
                self.log = log;
                result
            }
        }
    }

    fn record_inner(&mut self, output: &TurnOutput) -> io::Result<()> {
        match output {
            TurnOutput::Started(start) => {
                self.log = Some(self.open(start)?);
                Ok(())
            }
            TurnOutput::Prepared(prepared) => self.record_prepared(prepared),
            TurnOutput::Event(event) => self.open_log()?.event(event),
            TurnOutput::ModelCall(call) => {
                // A call that failed may still have been billed (an answer
                // cut at its token limit, a safety stop): unknown, not 0.
                let cost = match &call.summary {
                    Some(summary) if summary.partial => Cost::Unknown,
                    Some(summary) => self.prices.call_cost(
                        &self.provider,
                        !crate::provider::ProviderKind::named_costs_nothing(&self.provider),
                        &self.model,
                        summary.usage,
                        summary.thinking_tokens,
                        summary.cached,
                    ),
                    None if crate::provider::ProviderKind::named_costs_nothing(&self.provider) => {
                        Cost::ZERO
                    }
                    None => Cost::Unknown,
                };
                let log = self.open_log()?;
                log.model_calls += 1;
                // Summed per call, so that a turn ending in an error still
                // records what its completed calls cost.
                if let Some(summary) = &call.summary {
                    log.usage += summary.usage;
                    log.thinking_tokens =
                        log.thinking_tokens.saturating_add(summary.thinking_tokens);
                    log.cached_calls += u32::from(summary.cached);
                }
                log.cost = log.cost + cost;
                let t = log.elapsed_ms();
                log.model_call(t, call)
            }
            TurnOutput::Notice(notice) => {
                let log = self.open_log()?;
                let t = log.elapsed_ms();
                log.write(&RunRecord::Notice {
                    t,
                    notice: notice.clone(),
                })
            }
            TurnOutput::Cancelled => {
                self.open_log()?.status = Some(RunStatus::Cancelled);
                Ok(())
            }
        }
    }

    /// Writes the footer and gives the file its final name. `fallback` is the
    /// status when the turn stopped without a final event (the consumer gave
    /// up, e.g. on a closed pipe).
    pub fn finish(self, fallback: RunStatus) -> io::Result<Option<PathBuf>> {
        match self.draft_footer(fallback) {
            Some(footer) => self.finish_with(footer),
            None => Ok(None),
        }
    }

    /// The footer as it would be written now, without writing it: so that a
    /// caller can judge the turn on exactly the recorded numbers and add its
    /// verdict before `finish_with`.
    pub fn draft_footer(&self, fallback: RunStatus) -> Option<RunFooter> {
        let log = self.log.as_ref()?;
        Some(RunFooter {
            status: log.status.unwrap_or(fallback),
            ended_at: Utc::now(),
            total_ms: log.elapsed_ms(),
            time_to_first_token_ms: log.first_text_ms,
            usage: log.usage,
            thinking_tokens: log.thinking_tokens,
            cost_usd: log.cost.usd(),
            cached_calls: log.cached_calls,
            model_calls: log.model_calls,
            error: log.error.clone(),
            verdict: None,
            server_fingerprint: log.server_fingerprint.clone(),
            server_turn_id: log.server_turn_id.clone(),
        })
    }

    /// Writes `footer` and gives the file its final name.
    /// A failure on the way removes the `.partial` file.
    pub fn finish_with(mut self, footer: RunFooter) -> io::Result<Option<PathBuf>> {
        let pending = self.write_pending();
        self.kept_or_removed(pending)?;
        let Some(log) = self.log.take() else {
            return Ok(None);
        };
        let partial_path = log.partial_path.clone();
        let path = log
            .written(footer)
            .and_then(WrittenLog::complete_alone)
            .map_err(|error| {
                let _ = std::fs::remove_file(&partial_path);
                removed(&partial_path, error)
            })?;
        Ok(Some(path))
    }

    /// Writes `footer` and hands the log on still `.partial` and unsynced,
    /// for its caller to complete (`WrittenLog`). A failure
    /// on the way removes the `.partial` file.
    pub fn finish_written(mut self, footer: RunFooter) -> io::Result<Option<WrittenLog>> {
        let pending = self.write_pending();
        self.kept_or_removed(pending)?;
        let Some(log) = self.log.take() else {
            return Ok(None);
        };
        let partial_path = log.partial_path.clone();
        log.written(footer).map(Some).map_err(|error| {
            let _ = std::fs::remove_file(&partial_path);
            removed(&partial_path, error)
        })
    }

    fn open(&self, start: &TurnStart) -> io::Result<OpenLog> {
        let (turn_id, started_at) = (&start.turn_id, start.started_at);
        let (final_path, partial_path) =
            log_paths(&self.runs_dir, &start.fingerprint, turn_id, started_at);
        let file = create_log_file(&partial_path)?;
        Ok(OpenLog {
            partial_path,
            final_path,
            out: BufWriter::new(file),
            batched: self.batched,
            clock: Instant::now(),
            header: Box::new(RunHeader {
                schema: SCHEMA_VERSION,
                tool_version: env!("CARGO_PKG_VERSION").to_string(),
                turn_id: turn_id.to_string(),
                started_at,
                provider: self.provider.clone(),
                model: self.model.clone(),
                request: self.request.clone(),
                claim: self.claim.clone(),
                fingerprint: start.fingerprint.clone(),
                overridden: start.applied_overrides.keys().cloned().collect(),
                ignored_overrides: start.ignored_overrides.clone(),
                unknown_placeholders: start.unknown_placeholders.clone(),
                thinking_level: None,
                thinking_sent: None,
                locale: None,
                brand: None,
                system_sha256: None,
                tools_sha256: None,
                prompt_sha256: None,
                labels: self.labels.clone(),
                replay_of: self.replay_of.clone(),
                remote: start.remote.clone(),
                trace: self.trace.clone(),
            }),
            header_written: false,
            first_text_ms: None,
            usage: Usage::default(),
            thinking_tokens: 0,
            cost: Cost::ZERO,
            cached_calls: 0,
            model_calls: 0,
            status: None,
            error: None,
            server_fingerprint: None,
            server_turn_id: None,
            held: None,
            streamed: String::new(),
        })
    }

    /// Stores the prompt the header names, then writes the header, here:
    /// for a caller that records without `wait`. The turn's clock does not
    /// count the prompt's sync, as it does not count the log's own.
    fn store_unstored_prompt(&mut self) -> io::Result<()> {
        let Some(prompt) = self.unstored.take() else {
            return Ok(());
        };
        let storing = Instant::now();
        let key = prompt.write()?;
        self.note_stored(key);
        self.header_after_prompt(storing.elapsed())
    }

    fn note_stored(&self, key: String) {
        if let Some(stored) = &self.stored {
            stored.add(key);
        }
    }

    fn header_after_prompt(&mut self, storing: std::time::Duration) -> io::Result<()> {
        let log = self.open_log()?;
        log.clock += storing;
        log.write_header()
    }

    /// Fills the header in from the prepared turn, naming its prompt, and
    /// leaves the prompt to be stored before the header is written
    /// (`wait`, off the turn's thread; or the next record), so that no log
    /// names a prompt that is not there. The turn's clock counts none of
    /// it, as it does not count the log's own writes.
    fn record_prepared(&mut self, prepared: &crate::chat::PreparedTurn) -> io::Result<()> {
        let staging = Instant::now();
        let prompt = stage_prompt(&self.runs_dir, &PromptParts::of_turn(prepared))?;
        let stored = self
            .stored
            .as_ref()
            .is_some_and(|stored| stored.has(&prompt));
        let log = self.open_log()?;
        log.clock += staging.elapsed();
        log.header.fill_from(prepared);
        log.header.prompt_sha256 = Some(prompt.key().to_string());
        if stored {
            return log.write_header();
        }
        self.unstored = Some(prompt);
        Ok(())
    }

    fn open_log(&mut self) -> io::Result<&mut OpenLog> {
        self.log
            .as_mut()
            .ok_or_else(|| io::Error::other("the turn's output did not start with Started"))
    }
}

impl TurnSink for RunRecorder {
    fn role(&self) -> SinkRole {
        SinkRole::Recorder
    }

    fn accept(&mut self, output: &TurnOutput) -> io::Result<()> {
        self.record(output)
    }

    /// The prompt the header names is stored on the blocking pool (it may
    /// sync a new file), not on the thread running the turn, which may run
    /// every turn of an eval; then the header is written.
    fn wait(&mut self) -> Option<futures_util::future::BoxFuture<'_, io::Result<()>>> {
        let prompt = self.unstored.take()?;
        Some(Box::pin(async move {
            let storing = Instant::now();
            let written = tokio::task::spawn_blocking(move || prompt.write()).await;
            let written = written.unwrap_or_else(|joined| Err(io::Error::other(joined)));
            let result = written.and_then(|key| {
                self.note_stored(key);
                self.header_after_prompt(storing.elapsed())
            });
            self.kept_or_removed(result)
        }))
    }

    /// A batched log is written out whenever its turn waits (for the
    /// model's next chunk, a judge, a reader): what a kill then loses is
    /// what the turn did since it last waited — work of microseconds, not a
    /// model call's. A write that fails is kept: the next record, or the
    /// footer, fails with it (the `.partial` is removed, the turn's log
    /// lost and said to be), as a failed write at a model call did.
    fn idle(&mut self) {
        let Some(log) = self.log.as_mut().filter(|log| log.batched) else {
            return;
        };
        if let Err(error) = log.out.flush() {
            self.idle_failure.get_or_insert(error);
        }
    }

    fn describe(&self) -> String {
        format!("the run log in `{}`", self.runs_dir.display())
    }
}

/// The error of a failed write, naming the log that was removed for it.
fn removed(partial_path: &Path, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!(
            "{error} (writing `{}`, which was removed)",
            partial_path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::event::ChatEvent;

    fn started() -> TurnOutput {
        TurnOutput::Started(Box::new(TurnStart {
            turn_id: "00000000-0000-4000-8000-000000000000".into(),
            started_at: Utc::now(),
            fingerprint: "default".into(),
            applied_overrides: Default::default(),
            ignored_overrides: Vec::new(),
            unknown_placeholders: Vec::new(),
            remote: None,
        }))
    }

    /// An event written as it comes (text deltas are held: below).
    fn text(text: &str) -> TurnOutput {
        TurnOutput::Event(ChatEvent::Activity {
            id: "c1".into(),
            tool: "get_claim_section".into(),
            label: text.into(),
        })
    }

    /// A batched log whose write fails while its turn waits: not a silent
    /// loss — its next record fails with that error and its `.partial` goes.
    #[test]
    fn a_write_that_fails_while_the_turn_waits_fails_the_next_record() {
        let runs = tempfile::tempdir().unwrap();
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        let request = ChatRequest::new(ClaimInput::Id("CLM-HH-0001".into()), "q", today);
        let mut recorder = RunRecorder::new(runs.path(), &request, "script", None).batched();
        recorder.record(&started()).unwrap();
        recorder.record(&text("kept back")).unwrap();
        let partial = recorder.path().unwrap().to_path_buf();
        let held = std::fs::read_to_string(&partial).unwrap();
        assert!(!held.contains("kept back"), "batched: {held}");
        // The file under the buffer now refuses writes (read-only handle).
        let log = recorder.log.as_mut().unwrap();
        *log.out.get_mut() = std::fs::File::open(&partial).unwrap();
        recorder.idle();
        let error = recorder.record(&text("more")).unwrap_err().to_string();
        assert!(error.contains("which was removed"), "{error}");
        assert!(!partial.exists(), "the .partial was left behind");
    }

    #[test]
    fn a_batched_log_is_written_out_when_its_turn_waits() {
        let runs = tempfile::tempdir().unwrap();
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        let request = ChatRequest::new(ClaimInput::Id("CLM-HH-0001".into()), "q", today);
        for batched in [false, true] {
            let recorder = RunRecorder::new(runs.path(), &request, "script", None);
            let mut recorder = if batched {
                recorder.batched()
            } else {
                recorder
            };
            recorder.record(&started()).unwrap();
            recorder.record(&text("said")).unwrap();
            let partial = recorder.path().unwrap().to_path_buf();
            let on_disk = || std::fs::read_to_string(&partial).unwrap().contains("said");
            assert_eq!(on_disk(), !batched, "batched: {batched}");
            recorder.idle();
            assert!(on_disk(), "batched: {batched}");
            std::fs::remove_file(&partial).unwrap();
        }
    }

    fn lines_of(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// Deltas within 50 ms of a record's first join it; the one at 50 ms
    /// starts the next, and any other record writes what is held first.
    /// (Times are given, not waited for: `hold` takes the delta's time.)
    #[test]
    fn text_deltas_are_held_as_one_record_for_50_ms() {
        let runs = tempfile::tempdir().unwrap();
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        let request = ChatRequest::new(ClaimInput::Id("CLM-HH-0001".into()), "q", today);
        let mut recorder = RunRecorder::new(runs.path(), &request, "script", None);
        recorder.record(&started()).unwrap();
        let partial = recorder.path().unwrap().to_path_buf();
        let log = recorder.log.as_mut().unwrap();
        log.write_header().unwrap();
        for (t, text) in [
            (100, "The "),
            (120, "excess "),
            (149, "is "),
            (150, "£350"),
            (420, "."),
        ] {
            log.hold(t, text).unwrap();
        }
        let written = lines_of(&partial);
        assert_eq!(written.len(), 3, "the header and two records: {written:?}");
        assert_eq!(
            written[1],
            serde_json::json!({"record": "text", "atMs": 100, "deltas": 3, "text": "The excess is "})
        );
        assert_eq!(
            written[2],
            serde_json::json!({"record": "text", "atMs": 150, "deltas": 1, "text": "£350"})
        );
        recorder.record(&TurnOutput::Cancelled).unwrap();
        let path = recorder.finish(RunStatus::Done).unwrap().unwrap();
        let written = lines_of(&path);
        assert_eq!(
            written[3],
            serde_json::json!({"record": "text", "atMs": 420, "deltas": 1, "text": "."})
        );
        assert_eq!(written[4]["record"], "footer");
    }
}
