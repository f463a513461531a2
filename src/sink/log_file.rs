//! One run log's file as a turn writes it: `<runs dir>/<fingerprint>/`
//! `<name>.partial`, created exclusively; each record borrowed, not cloned,
//! into its line (the same JSON as `RunRecord`'s); consecutive text deltas
//! held and written as one `text` record, and a model call's answer left
//! out of its record (`runs::answer_text`), so that a streamed answer
//! costs the log its text, not its chunks; flushed after every
//! record, or only when the turn waits when `batched`
//! (`RunRecorder::idle`); the header written out
//! at once, when the turn's prompt is stored (`run_log::RunRecorder` keeps
//! it back until then); the footer written before the file is handed on
//! to be synced and renamed (`WrittenLog`): alone, or by the eval
//! runner's group commit (`eval::log_commit`).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::chat::event::{ChatEvent, Usage};
use crate::chat::service::ModelCallRecord;
use crate::chat::service::PreparedTurn;
use crate::cost::Cost;
use crate::runs::full_folder;
use crate::runs::record::{ClaimRecord, RunFooter, RunHeader, RunRecord, RunStatus, TextRecord};

/// The most time, in milliseconds, one `text` record spans: a delta that
/// comes this long after the record's first starts the next record. What
/// a kill can lose of an answer the user saw stream (checked as each delta
/// comes: no timer wakes the turn to write).
pub const MAX_TEXT_RECORD_SPAN_MS: u64 = 50;

/// A turn's log file being written, and what its footer will say.
pub(super) struct OpenLog {
    pub(super) partial_path: PathBuf,
    pub(super) final_path: PathBuf,
    pub(super) out: BufWriter<File>,
    /// Flushed when its turn waits and at the footer, not after every
    /// record.
    pub(super) batched: bool,
    pub(super) clock: Instant,
    /// Boxed: the open log is moved with its turn's future, through every
    /// one of its states, and the header is most of its size.
    pub(super) header: Box<RunHeader>,
    pub(super) header_written: bool,
    pub(super) first_text_ms: Option<u64>,
    pub(super) usage: Usage,
    pub(super) thinking_tokens: u64,
    /// What the turn's model calls cost (cache hits and scripts: nothing).
    pub(super) cost: Cost,
    pub(super) cached_calls: u32,
    pub(super) model_calls: u32,
    pub(super) status: Option<RunStatus>,
    pub(super) error: Option<String>,
    pub(super) server_fingerprint: Option<String>,
    pub(super) server_turn_id: Option<String>,
    /// Text deltas not yet written: one `text` record, written before the
    /// next record of any other kind (`MAX_TEXT_RECORD_SPAN_MS`).
    pub(super) held: Option<TextRecord>,
    /// The text of the model call in progress, as its `text` records hold
    /// it: left out of the call's record when it is all of its text.
    pub(super) streamed: String,
}

/// Creates the log's file exclusively, and its fingerprint folder only when
/// it is missing: the folder is there for every turn but the first of a
/// version, so checking it first would cost two system calls a turn.
/// A folder that takes no more names is named as the cause
/// (`full_folder`).
pub(super) fn create_log_file(partial_path: &Path) -> io::Result<File> {
    let create = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(partial_path)
    };
    let created = match create() {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if let Some(folder) = partial_path.parent() {
                std::fs::create_dir_all(folder)?;
            }
            create()
        }
        opened => opened,
    };
    created.map_err(|error| full_folder::explain(error, partial_path))
}

impl RunHeader {
    pub(super) fn fill_from(&mut self, prepared: &PreparedTurn) {
        self.claim = Some(ClaimRecord {
            id: prepared.claim_id.clone(),
            sha256: prepared.claim_sha256.clone(),
            origin: prepared.claim_origin.clone(),
        });
        self.thinking_level = Some(prepared.thinking_level);
        self.thinking_sent = Some(prepared.thinking_control);
        self.locale = Some(prepared.locale);
        self.brand = Some(prepared.brand.clone());
        self.system_sha256 = Some(prepared.system_sha256.clone());
        self.tools_sha256 = Some(prepared.tools_sha256.clone());
    }
}

/// A log whose footer is written, still `.partial` and not yet synced
/// (`RunRecorder::finish_written`).
#[derive(Debug)]
pub struct WrittenLog {
    file: File,
    partial_path: PathBuf,
    final_path: PathBuf,
}

impl WrittenLog {
    /// The name the log gets once it is complete.
    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// Syncs this log alone and gives it its final name.
    pub fn complete_alone(self) -> io::Result<PathBuf> {
        self.file.sync_all()?;
        crate::runs::naming::give_final_name(&self.partial_path, &self.final_path)?;
        Ok(self.final_path)
    }

    /// Closes the file, for a completion that syncs it with others: its
    /// `.partial` path and the name it gets once synced.
    pub fn into_paths(self) -> (PathBuf, PathBuf) {
        (self.partial_path, self.final_path)
    }
}

impl OpenLog {
    /// Writes the footer and closes the file, not yet synced or renamed.
    pub(super) fn written(mut self, footer: RunFooter) -> io::Result<WrittenLog> {
        if !self.header_written {
            self.write_header()?;
        }
        self.write(&FooterLine { footer: &footer })?;
        let file = self.out.into_inner().map_err(|error| error.into_error())?;
        Ok(WrittenLog {
            file,
            partial_path: self.partial_path,
            final_path: self.final_path,
        })
    }

    pub(super) fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Writes `record`, after the text held back (in the same write).
    pub(super) fn write(&mut self, record: &impl serde::Serialize) -> io::Result<()> {
        if let Some(held) = self.held.take() {
            self.put(&RunRecord::Text(held))?;
        }
        self.put(record)?;
        if self.batched {
            return Ok(());
        }
        self.out.flush()
    }

    /// `record`'s line into the buffer.
    fn put(&mut self, record: &impl serde::Serialize) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, record)?;
        self.out.write_all(b"\n")
    }

    /// Holds a text delta back, with those before it, as one record: it is
    /// written once a delta comes `MAX_TEXT_RECORD_SPAN_MS` after its first,
    /// or a record of another kind, or the footer.
    pub(super) fn hold(&mut self, t: u64, text: &str) -> io::Result<()> {
        self.streamed.push_str(text);
        if let Some(held) = &mut self.held
            && t.saturating_sub(held.at_ms) < MAX_TEXT_RECORD_SPAN_MS
        {
            held.text.push_str(text);
            held.deltas = held.deltas.saturating_add(1);
            return Ok(());
        }
        if let Some(held) = self.held.take() {
            self.write(&RunRecord::Text(held))?;
        }
        self.held = Some(TextRecord {
            at_ms: t,
            deltas: 1,
            text: text.to_string(),
        });
        Ok(())
    }

    /// A model call's record: without its text when its `text` records
    /// hold all of it (`runs::answer_text`), else whole. The record is
    /// then made as a JSON value first, copying the call (a bounded 16 MiB
    /// of text at most) once.
    pub(super) fn model_call(&mut self, t: u64, call: &ModelCallRecord) -> io::Result<()> {
        let streamed = std::mem::take(&mut self.streamed);
        // A call without text (tool calls only) says so in fewer bytes whole.
        if call.text.is_empty() || call.text != streamed {
            return self.write(&ModelCallLine {
                t,
                call,
                text_from_events: None,
            });
        }
        let (record, left_out) = crate::runs::answer_text::leave_out(call)?;
        self.write(&ModelCallLine {
            t,
            call: &record,
            text_from_events: Some(&left_out),
        })
    }

    pub(super) fn write_header(&mut self) -> io::Result<()> {
        self.header_written = true;
        let line = HeaderLine {
            header: &self.header,
        };
        serde_json::to_writer(&mut self.out, &line)?;
        self.out.write_all(b"\n")?;
        // The header is always written out at once: a listing sees the turn.
        self.out.flush()
    }

    pub(super) fn event(&mut self, event: &ChatEvent) -> io::Result<()> {
        if !self.header_written {
            self.write_header()?;
        }
        let t = self.elapsed_ms();
        match event {
            ChatEvent::TextDelta { text } => {
                self.first_text_ms.get_or_insert(t);
                return self.hold(t, text);
            }
            ChatEvent::Done(done) => {
                self.status = Some(RunStatus::Done);
                self.usage = done.usage;
                if self.header.remote.is_some() {
                    self.server_fingerprint = Some(done.prompts.fingerprint.clone());
                    self.server_turn_id = Some(done.turn_id.clone());
                }
            }
            ChatEvent::Error { message } => {
                self.status = Some(RunStatus::Error);
                self.error = Some(message.clone());
            }
            _ => {}
        }
        self.write(&EventLine { t, event })
    }
}

/// `RunRecord::Header` as written, borrowing the header: the same JSON.
#[derive(serde::Serialize)]
#[serde(tag = "record", rename = "header")]
pub(super) struct HeaderLine<'a> {
    #[serde(flatten)]
    pub(super) header: &'a RunHeader,
}

/// `RunRecord::Event` as written, borrowing the event: the same JSON.
#[derive(serde::Serialize)]
#[serde(tag = "record", rename = "event")]
pub(super) struct EventLine<'a> {
    pub(super) t: u64,
    pub(super) event: &'a ChatEvent,
}

/// `RunRecord::Footer` as written, borrowing the footer: the same JSON.
#[derive(serde::Serialize)]
#[serde(tag = "record", rename = "footer")]
pub(super) struct FooterLine<'a> {
    #[serde(flatten)]
    pub(super) footer: &'a RunFooter,
}

/// `RunRecord::ModelCall` as written, borrowing the call (or its record
/// without its text): the same JSON.
#[derive(serde::Serialize)]
#[serde(tag = "record", rename = "model_call")]
pub(super) struct ModelCallLine<'a, Call> {
    pub(super) t: u64,
    pub(super) call: &'a Call,
    #[serde(rename = "textFromEvents", skip_serializing_if = "Option::is_none")]
    pub(super) text_from_events: Option<&'a [String]>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::record::RunRecord;

    /// A log written before the lines borrowed their records.
    const OLD_LOG: &str = include_str!(
        "../../tests/data/old-runlog/20261201T140313.494Z-37789fc2-67d8-4956-8785-e5b2234112a3.ndjson"
    );

    #[test]
    fn the_borrowed_lines_write_what_the_records_wrote() {
        for line in OLD_LOG.lines() {
            let written = match serde_json::from_str::<RunRecord>(line).unwrap() {
                RunRecord::Header(header) => serde_json::to_string(&HeaderLine { header: &header }),
                RunRecord::Event { t, event } => {
                    serde_json::to_string(&EventLine { t, event: &event })
                }
                RunRecord::ModelCall { t, call, .. } => serde_json::to_string(&ModelCallLine {
                    t,
                    call: call.as_ref(),
                    text_from_events: None,
                }),
                RunRecord::Footer(footer) => serde_json::to_string(&FooterLine { footer: &footer }),
                _ => continue,
            };
            assert_eq!(written.unwrap(), line);
        }
    }
}
