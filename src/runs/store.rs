//! Reading run logs: the quick summary of each file in a runs folder (its
//! first and last lines only, so that listing 10,000 logs stays fast), the
//! full log of one, and finding one by path or turn-id prefix.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::chat::event::ChatEvent;
use crate::chat::service::ModelCallRecord;
use crate::sink::run_log::PARTIAL_SUFFIX;

use super::record::{PromptRecord, RunFooter, RunHeader, RunRecord};

/// The longest header line we read.
const MAX_HEADER_BYTES: u64 = 1024 * 1024;
/// How far from the end the footer is looked for.
const FOOTER_WINDOW: u64 = 16 * 1024;

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
    #[error("no run log matches `{0}` (give a path, or a prefix of a turn id)")]
    NotFound(String),
    #[error("`{prefix}` matches {count} run logs; give more of the turn id")]
    Ambiguous { prefix: String, count: usize },
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
    pub prompt: Option<PromptRecord>,
    /// Events and model-call traces, in the order they happened.
    pub entries: Vec<LogEntry>,
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

fn is_run_log(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.ends_with(".ndjson") || name.ends_with(&format!(".ndjson{PARTIAL_SUFFIX}"))
}

/// Every run-log file under `dir` (one level of fingerprint folders, and
/// the folder itself), sorted by path.
pub fn run_log_paths(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(paths),
        Err(error) => return Err(error),
    };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path)? {
                let inner = inner?.path();
                if is_run_log(&inner) {
                    paths.push(inner);
                }
            }
        } else if is_run_log(&path) {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// Summaries of every run log under `dirs`; files that cannot be read are
/// returned as errors beside them, never dropped silently.
pub fn scan_runs(dirs: &[PathBuf]) -> io::Result<(Vec<RunSummary>, Vec<RunLogError>)> {
    let mut summaries = Vec::new();
    let mut problems = Vec::new();
    for dir in dirs {
        for path in run_log_paths(dir)? {
            match summarize(&path) {
                Ok(summary) => summaries.push(summary),
                Err(error) => problems.push(error),
            }
        }
    }
    Ok((summaries, problems))
}

/// The header (first line) and footer (last line) of one log.
pub fn summarize(path: &Path) -> Result<RunSummary, RunLogError> {
    let read_error = |source| RunLogError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut file = File::open(path).map_err(read_error)?;
    let mut first = String::new();
    BufReader::new((&mut file).take(MAX_HEADER_BYTES))
        .read_line(&mut first)
        .map_err(read_error)?;
    let header = match parse_line(path, 1, &first)? {
        RunRecord::Header(header) => *header,
        _ => return Err(invalid(path, 1, "the first line is not a header")),
    };
    let partial = path.to_string_lossy().ends_with(PARTIAL_SUFFIX);
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
    let length = file.metadata()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(FOOTER_WINDOW)))?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail)?;
    let tail = String::from_utf8_lossy(&tail);
    let last = tail
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    Ok(match serde_json::from_str::<RunRecord>(last) {
        Ok(RunRecord::Footer(footer)) => Some(footer),
        _ => None,
    })
}

/// Reads a whole run log. A partial log reads as far as it goes.
pub fn read_run_log(path: &Path) -> Result<RunLog, RunLogError> {
    let file = File::open(path).map_err(|source| RunLogError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let mut header = None;
    let mut log_prompt = None;
    let mut entries = Vec::new();
    let mut footer = None;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| RunLogError::Read {
            path: path.display().to_string(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(path, index + 1, &line) {
            Ok(RunRecord::Header(record)) => header = Some(*record),
            Ok(RunRecord::Prompt(record)) => log_prompt = Some(*record),
            Ok(RunRecord::Event { t, event }) => entries.push(LogEntry::Event(t, event)),
            Ok(RunRecord::ModelCall { call, .. }) => entries.push(LogEntry::ModelCall(call)),
            Ok(RunRecord::Footer(record)) => footer = Some(record),
            // A killed writer can leave half a last line.
            Err(_) if footer.is_none() && path.to_string_lossy().ends_with(PARTIAL_SUFFIX) => break,
            Err(error) => return Err(error),
        }
    }
    let header = header.ok_or_else(|| invalid(path, 1, "no header record"))?;
    Ok(RunLog {
        path: path.to_path_buf(),
        header,
        prompt: log_prompt,
        entries,
        footer,
    })
}

/// A run log named by its path, or by a prefix of its turn id.
pub fn find_run(dirs: &[PathBuf], spec: &str) -> Result<PathBuf, RunLogError> {
    let as_path = Path::new(spec);
    if as_path.is_file() {
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

/// `<time>-<turn id>.ndjson[.partial]` → the turn id.
fn turn_id_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?;
    let name = name.strip_suffix(PARTIAL_SUFFIX).unwrap_or(name);
    let stem = name.strip_suffix(".ndjson")?;
    stem.split_once('-').map(|(_, id)| id)
}

fn parse_line(path: &Path, line: usize, text: &str) -> Result<RunRecord, RunLogError> {
    serde_json::from_str(text).map_err(|error| invalid(path, line, &error.to_string()))
}

fn invalid(path: &Path, line: usize, message: &str) -> RunLogError {
    RunLogError::Invalid {
        path: path.display().to_string(),
        line,
        message: message.to_string(),
    }
}
