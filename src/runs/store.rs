//! Reading run logs: the quick summary of each file in a runs folder (its
//! first and last lines only, so that listing 10,000 logs stays fast), the
//! full log of one, and finding one by path or turn-id prefix.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::chat::event::ChatEvent;
use crate::chat::service::ModelCallRecord;

use super::answer_text::put_back;
use super::naming::{finished_name, is_partial, is_run_log, turn_id_of};
use super::prompt_store::StoredPrompts;
use super::record::{PromptRecord, RunFooter, RunHeader, RunRecord};

/// The longest header or footer line read: the input cap. A header holds
/// the whole request (60 messages of 20,000 characters are over 1 MiB) and a
/// footer a provider's error message, so neither has a small fixed size;
/// this bound only keeps a hand-made file from exhausting memory.
const MAX_RECORD_BYTES: u64 = crate::input::MAX_INPUT_BYTES;
/// How much the footer search reads first, walking back from the end.
const TAIL_STEP: u64 = 16 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum RunLogError {
    #[error("failed to read run log `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("invalid run log `{path}`: line {line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
    /// Not read: a link out of the runs folder, or not a regular file.
    #[error("refused run log `{path}`: {reason}")]
    Refused { path: String, reason: String },
    #[error("no run log matches `{0}` (give a path, or a prefix of a turn id)")]
    NotFound(String),
    #[error("`{prefix}` matches {count} run logs; give more of the turn id")]
    Ambiguous { prefix: String, count: usize },
}

impl RunLogError {
    /// The file the error is about, where it is about one.
    pub fn path(&self) -> Option<&str> {
        match self {
            RunLogError::Read { path, .. }
            | RunLogError::Invalid { path, .. }
            | RunLogError::Refused { path, .. } => Some(path),
            RunLogError::NotFound(_) | RunLogError::Ambiguous { .. } => None,
        }
    }
}

/// One run log, as `runs list` sees it.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub path: PathBuf,
    /// Still being written, or abandoned by a process that died.
    pub partial: bool,
    pub header: RunHeader,
    pub footer: Option<RunFooter>,
}

/// A whole run log.
#[derive(Debug, Clone)]
pub struct RunLog {
    pub path: PathBuf,
    pub header: RunHeader,
    /// Inline (logs of schema 2 and older) or stored once beside the log's
    /// folder (`prompt_store`); shared between logs of one prompt.
    pub prompt: Option<std::sync::Arc<PromptRecord>>,
    /// Why the prompt the header names is not at hand (the log was copied
    /// without its runs folder's `prompts/`, or that file is damaged).
    pub prompt_missing: Option<String>,
    /// Events and model-call traces, in the order they happened.
    pub entries: Vec<LogEntry>,
    /// None for a `.partial`, whatever it holds (`LogState`).
    pub footer: Option<RunFooter>,
}

#[derive(Debug, Clone)]
pub enum LogEntry {
    /// An event and its time offset in milliseconds.
    Event(u64, ChatEvent),
    ModelCall(Box<ModelCallRecord>),
}

impl RunLog {
    pub fn events(&self) -> impl Iterator<Item = &ChatEvent> {
        self.entries.iter().filter_map(|entry| match entry {
            LogEntry::Event(_, event) => Some(event),
            LogEntry::ModelCall(_) => None,
        })
    }

    pub fn model_calls(&self) -> impl Iterator<Item = &ModelCallRecord> {
        self.entries.iter().filter_map(|entry| match entry {
            LogEntry::ModelCall(call) => Some(call.as_ref()),
            LogEntry::Event(..) => None,
        })
    }
}

/// The run logs of a runs folder, and the entries named like run logs that
/// were refused: a link that resolves outside the folder (to `/etc/shadow`,
/// `/proc/self/environ`), or anything that is not a regular file (a FIFO
/// would hang every reader), as the claim store refuses such links.
#[derive(Debug, Default)]
pub struct RunLogListing {
    /// Sorted by path.
    pub paths: Vec<PathBuf>,
    pub refused: Vec<RunLogError>,
}

/// Every run-log file under `dir` (one level of fingerprint folders, and
/// the folder itself), sorted by path; refused entries left out (see
/// `list_run_logs` for them).
pub fn run_log_paths(dir: &Path) -> io::Result<Vec<PathBuf>> {
    list_run_logs(dir).map(|listing| listing.paths)
}

/// Every run-log file under `dir`, with the entries refused and why.
/// Errors name the folder that could not be read.
pub fn list_run_logs(dir: &Path) -> io::Result<RunLogListing> {
    let mut listing = RunLogListing::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(listing),
        Err(error) => return Err(naming(dir, error)),
    };
    // Links are resolved against the folder's real place.
    let root = dir.canonicalize().map_err(|error| naming(dir, error))?;
    for entry in entries {
        let entry = entry.map_err(|error| naming(dir, error))?;
        let path = entry.path();
        // A fingerprint folder is a real folder: a link to one is not followed.
        // The stored prompts are not logs.
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            if entry.file_name() == super::prompt_store::PROMPTS_FOLDER {
                continue;
            }
            for inner in std::fs::read_dir(&path).map_err(|error| naming(&path, error))? {
                let inner = inner.map_err(|error| naming(&path, error))?.path();
                if is_run_log(&inner) {
                    listing.admit(inner, &root);
                }
            }
        } else if is_run_log(&path) {
            listing.admit(path, &root);
        }
    }
    listing.paths.sort();
    Ok(listing)
}

impl RunLogListing {
    fn admit(&mut self, path: PathBuf, root: &Path) {
        match refusal(&path, root) {
            None => self.paths.push(path),
            Some(reason) => self.refused.push(RunLogError::Refused {
                path: path.display().to_string(),
                reason,
            }),
        }
    }
}

/// Why `path`, named like a run log in a runs folder whose real place is
/// `root`, is not read as one (a link out of it, not a regular file), or
/// `None` when it may be: the listing's rule, for readers that list a
/// folder themselves (the run index).
pub fn refused(path: &Path, root: &Path) -> Option<RunLogError> {
    refusal(path, root).map(|reason| RunLogError::Refused {
        path: path.display().to_string(),
        reason,
    })
}

/// Why a listed entry is not read as a run log, or `None` when it may be.
fn refusal(path: &Path, root: &Path) -> Option<String> {
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return None; // gone since listing: the reader reports it
    };
    if link.file_type().is_symlink() {
        let Ok(target) = path.canonicalize() else {
            return Some("it is a link to nothing".to_string());
        };
        if !target.starts_with(root) {
            return Some(format!(
                "it is a link to `{}`, outside the runs folder",
                target.display()
            ));
        }
    }
    not_a_regular_file(path)
}

/// Opening anything but a regular file can block (a FIFO) or never end (a
/// device): readers refuse it up front, also when named directly.
fn not_a_regular_file(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let what = match crate::input::special_kind(&meta) {
        Some(kind) => kind,
        None if meta.is_dir() => "a folder",
        None => return None,
    };
    Some(format!("it is {what}, not a regular file"))
}

/// Opens a run log for reading, refusing what is not a regular file.
fn open_log(path: &Path) -> Result<File, RunLogError> {
    if let Some(reason) = not_a_regular_file(path) {
        return Err(RunLogError::Refused {
            path: path.display().to_string(),
            reason,
        });
    }
    File::open(path).map_err(|source| RunLogError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// An io error whose message names the runs folder it is about.
fn naming(dir: &Path, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("runs folder `{}`: {error}", dir.display()),
    )
}

/// Summaries of every run log under `dirs`; files that cannot be read are
/// returned as errors beside them, never dropped silently.
pub fn scan_runs(dirs: &[PathBuf]) -> io::Result<(Vec<RunSummary>, Vec<RunLogError>)> {
    let mut summaries: Vec<RunSummary> = Vec::new();
    let mut problems = Vec::new();
    // A log renamed while listing can be seen under both names; it is
    // summarized under its final one, once.
    let mut seen = std::collections::HashSet::new();
    for dir in dirs {
        let listing = list_run_logs(dir)?;
        problems.extend(listing.refused);
        for path in listing.paths {
            match summarize(&path) {
                Ok(summary) if seen.insert(summary.path.clone()) => summaries.push(summary),
                Ok(_) => {}
                Err(error) => problems.push(error),
            }
        }
    }
    Ok((summaries, problems))
}

/// The header (first line) and footer (last line) of one log. A `.partial`
/// that a writer renames to its final name while we list is read under
/// that name, so a finishing turn is never dropped from a listing.
pub fn summarize(path: &Path) -> Result<RunSummary, RunLogError> {
    let result = summarize_at(path);
    if let Err(RunLogError::Read { source, .. }) = &result
        && source.kind() == io::ErrorKind::NotFound
        && let Some(finished) = finished_name(path)
    {
        return summarize_at(&finished);
    }
    result
}

fn summarize_at(path: &Path) -> Result<RunSummary, RunLogError> {
    let read_error = |source| RunLogError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut file = open_log(path)?;
    let mut first = Vec::new();
    BufReader::new((&mut file).take(MAX_RECORD_BYTES))
        .read_until(b'\n', &mut first)
        .map_err(read_error)?;
    let first = String::from_utf8(first)
        .map_err(|_| invalid(path, 1, "the header line is not UTF-8 text"))?;
    let header = match parse_line(path, 1, &first)? {
        RunRecord::Header(header) => *header,
        _ => return Err(invalid(path, 1, "the first line is not a header")),
    };
    let partial = is_partial(path);
    let footer = if partial {
        None
    } else {
        last_footer(&mut file).map_err(read_error)?
    };
    Ok(RunSummary {
        path: path.to_path_buf(),
        partial,
        header,
        footer,
    })
}

fn last_footer(file: &mut File) -> io::Result<Option<RunFooter>> {
    let last = last_line(file, MAX_RECORD_BYTES)?;
    let Some(last) = last else { return Ok(None) };
    Ok(match serde_json::from_slice::<RunRecord>(&last) {
        Ok(RunRecord::Footer(footer)) => Some(footer),
        _ => None,
    })
}

/// The last non-blank line of a file, however long: reads backwards from
/// the end until the newline before it, each step twice the last, so that
/// a long line costs linear time. `None` for an empty file or a last line
/// longer than `limit`.
pub fn last_line(file: &mut File, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let length = file.metadata()?.len();
    let mut end = length;
    let mut step = TAIL_STEP;
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let content = trim_trailing_blank(&tail);
        if let Some(newline) = content.iter().rposition(|b| *b == b'\n') {
            return Ok(Some(content[newline + 1..].to_vec()));
        }
        if end == 0 {
            return Ok((!content.is_empty()).then(|| content.to_vec()));
        }
        if tail.len() as u64 > limit {
            return Ok(None);
        }
        let start = end.saturating_sub(step);
        let mut chunk = vec![0; usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        end = start;
        step = step.saturating_mul(2);
    }
}

/// `bytes` without trailing whitespace-only lines.
fn trim_trailing_blank(bytes: &[u8]) -> &[u8] {
    let mut end = bytes.len();
    while end > 0 && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    &bytes[..end]
}

/// Reads a whole run log. A partial log reads as far as it goes.
pub fn read_run_log(path: &Path) -> Result<RunLog, RunLogError> {
    RunLogReader::default().read(path)
}

/// Reads a whole run log, refusing it if any line is unreadable (corrupt
/// JSON, invalid UTF-8), even the cut last line of a `.partial`. For
/// callers that must not trust a damaged log, such as `eval --resume`
/// deciding whether a turn is done.
pub fn read_run_log_checked(path: &Path) -> Result<RunLog, RunLogError> {
    RunLogReader::default().read_checked(path)
}

/// A reader of many logs: the stored prompts they name are read once each
/// (a report of 10,000 logs of a few prompt versions reads a few prompt
/// files), and shared between the logs that name them.
#[derive(Default)]
pub struct RunLogReader {
    prompts: StoredPrompts,
}

impl RunLogReader {
    /// `read_run_log`.
    pub fn read(&mut self, path: &Path) -> Result<RunLog, RunLogError> {
        read_log(path, false, &mut self.prompts)
    }

    /// `read_run_log_checked`.
    pub fn read_checked(&mut self, path: &Path) -> Result<RunLog, RunLogError> {
        read_log(path, true, &mut self.prompts)
    }
}

fn read_log(path: &Path, strict: bool, prompts: &mut StoredPrompts) -> Result<RunLog, RunLogError> {
    let read_error = |source| RunLogError::Read {
        path: path.display().to_string(),
        source,
    };
    let file = open_log(path)?;
    let partial = is_partial(path);
    // Bounded like every input: `--replay /dev/zero` is refused, not read
    // into memory forever.
    let mut consumed: u64 = 0;
    let (mut header, mut prompt, mut footer) = (None, None, None);
    let mut entries = Entries::default();
    for (index, line) in BufReader::new(file.take(MAX_RECORD_BYTES.saturating_add(1)))
        .split(b'\n')
        .enumerate()
    {
        let line = line.map_err(read_error)?;
        consumed = consumed.saturating_add(line.len() as u64 + 1);
        if consumed > MAX_RECORD_BYTES {
            let message = "the log is larger than the 256 MiB limit for input files";
            return Err(invalid(path, index + 1, message));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let record = parse_bytes(path, index + 1, &line).and_then(|record| {
            entries
                .take(record)
                .map_err(|damaged| invalid(path, index + 1, &damaged.to_string()))
        });
        match record {
            Ok(None) => {}
            Ok(Some(RunRecord::Header(record))) => header = Some(*record),
            Ok(Some(RunRecord::Prompt(record))) => prompt = Some(std::sync::Arc::new(*record)),
            // A `.partial` is never complete, whatever it holds: a footer
            // written but not yet synced and renamed (a group commit cut
            // short) is no verdict, as `summarize` does not read it either.
            Ok(Some(RunRecord::Footer(_))) if partial => {}
            Ok(Some(RunRecord::Footer(record))) => footer = Some(record),
            // Retry notices are for a reader of the file; nothing replays them.
            Ok(Some(_)) => {}
            // A killed writer can leave half a last line.
            Err(_) if !strict && partial && footer.is_none() => break,
            Err(error) => return Err(error),
        }
    }
    let header = header.ok_or_else(|| invalid(path, 1, "no header record"))?;
    let mut prompt_missing = None;
    if let (None, Some(key)) = (&prompt, &header.prompt_sha256) {
        match prompts.load(path, key) {
            Ok(stored) => prompt = Some(stored),
            Err(why) => prompt_missing = Some(why.to_string()),
        }
    }
    Ok(RunLog {
        path: path.to_path_buf(),
        header,
        prompt,
        prompt_missing,
        entries: entries.entries,
        footer,
    })
}

/// Why a record read cannot be what a recorder wrote.
#[derive(Debug, thiserror::Error)]
enum Damaged {
    #[error(transparent)]
    Text(#[from] super::record::TextProblem),
    #[error(transparent)]
    LeftOut(#[from] super::answer_text::LeftOutError),
}

/// A log's events and model calls as they are read, with the text of the
/// call in progress: what a `model_call` that left its text out
/// (`textFromEvents`) gets back (`answer_text`).
#[derive(Default)]
struct Entries {
    entries: Vec<LogEntry>,
    streamed: String,
}

impl Entries {
    /// Takes in an event, text or model call, and gives back every other
    /// record; why a record cannot be what a recorder wrote is an error.
    fn take(&mut self, record: RunRecord) -> Result<Option<RunRecord>, Damaged> {
        match record {
            RunRecord::Event { t, event } => self.event(t, event),
            RunRecord::Text(text) => {
                if let Some(problem) = text.problem() {
                    return Err(problem.into());
                }
                self.event(text.at_ms, ChatEvent::TextDelta { text: text.text });
            }
            RunRecord::ModelCall {
                mut call,
                text_from_events,
                ..
            } => {
                let streamed = std::mem::take(&mut self.streamed);
                if let Some(left_out) = text_from_events {
                    put_back(&mut call, streamed, &left_out)?;
                }
                self.entries.push(LogEntry::ModelCall(call));
            }
            other => return Ok(Some(other)),
        }
        Ok(None)
    }

    fn event(&mut self, t: u64, event: ChatEvent) {
        if let ChatEvent::TextDelta { text } = &event {
            self.streamed.push_str(text);
        }
        self.entries.push(LogEntry::Event(t, event));
    }
}

/// A run log named by its path, or by a prefix of its turn id.
pub fn find_run(dirs: &[PathBuf], spec: &str) -> Result<PathBuf, RunLogError> {
    let as_path = Path::new(spec);
    // Anything there but a folder is the run named: a FIFO or a device is
    // then refused by the reader, by name, rather than "not found".
    if std::fs::metadata(as_path).is_ok_and(|meta| !meta.is_dir()) {
        return Ok(as_path.to_path_buf());
    }
    let valid_prefix = !spec.is_empty() && spec.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if !valid_prefix {
        return Err(RunLogError::NotFound(spec.to_string()));
    }
    let mut matches = Vec::new();
    for dir in dirs {
        let paths = run_log_paths(dir).map_err(|source| RunLogError::Read {
            path: dir.display().to_string(),
            source,
        })?;
        matches.extend(
            paths
                .into_iter()
                .filter(|path| turn_id_of(path).is_some_and(|id| id.starts_with(spec))),
        );
    }
    match matches.len() {
        0 => Err(RunLogError::NotFound(spec.to_string())),
        1 => Ok(matches.remove(0)),
        count => Err(RunLogError::Ambiguous {
            prefix: spec.to_string(),
            count,
        }),
    }
}

/// One line of a log, which must be UTF-8 JSON.
fn parse_bytes(path: &Path, line: usize, bytes: &[u8]) -> Result<RunRecord, RunLogError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| invalid(path, line, "the line is not UTF-8 text"))?;
    parse_line(path, line, text)
}

fn parse_line(path: &Path, line: usize, text: &str) -> Result<RunRecord, RunLogError> {
    serde_json::from_str(text).map_err(|error| invalid(path, line, &error.to_string()))
}

fn invalid(path: &Path, line: usize, message: &str) -> RunLogError {
    RunLogError::Invalid {
        path: path.display().to_string(),
        line,
        message: crate::text::quote(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_of(content: &[u8], limit: u64) -> Option<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.ndjson");
        std::fs::write(&path, content).unwrap();
        last_line(&mut File::open(&path).unwrap(), limit).unwrap()
    }

    #[test]
    fn the_last_line_is_found_whatever_its_length() {
        assert_eq!(last_of(b"", 100), None);
        assert_eq!(last_of(b"only", 100).as_deref(), Some(&b"only"[..]));
        assert_eq!(last_of(b"a\nb\n\n \n", 100).as_deref(), Some(&b"b"[..]));
        // Longer than several read steps.
        let long = "x".repeat(5 * TAIL_STEP as usize + 3);
        let content = format!("header\n{long}\n");
        assert_eq!(
            last_of(content.as_bytes(), u64::MAX),
            Some(long.into_bytes())
        );
        // Past the limit: given up on, not read whole.
        assert_eq!(last_of(content.as_bytes(), 1000), None);
    }
}
