//! Where an interactive session's lines come from. On a terminal, a line
//! editor (`rustyline`: arrows, Ctrl-R, history kept in a file between
//! sessions); piped (scripts, tests), stdin read line by line with no
//! terminal handling, so that what is piped in is exactly what is sent.

use std::path::PathBuf;

use rustyline::DefaultEditor;
use rustyline::config::{Behavior, Config};
use rustyline::error::ReadlineError;
use tokio::io::{AsyncBufReadExt, BufReader, Stdin};

use super::error::CliError;

/// The prompt before each line a person types.
pub const PROMPT: &str = "› ";

/// How many lines the history file keeps.
const HISTORY_LINES: usize = 1000;

/// One read from the session's input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Text(String),
    /// Ctrl-C at the prompt: nothing to stop, so the session goes on.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    End,
}

pub enum SessionInput {
    /// `None` only while a line is being read on the blocking pool.
    Editor {
        editor: Option<DefaultEditor>,
        history_file: Option<PathBuf>,
    },
    /// `prompting`: a terminal the line editor could not take, where a
    /// bare prompt still says the session is waiting.
    Piped {
        reader: BufReader<Stdin>,
        prompting: bool,
    },
}

impl SessionInput {
    /// The line editor on a terminal, else stdin line by line.
    pub fn new(terminal: bool) -> SessionInput {
        if terminal && let Some(editor) = new_editor() {
            let history_file = history_file().and_then(usable_history);
            let mut editor = editor;
            if let Some(path) = &history_file {
                // No history yet, or an unreadable one: start empty.
                let _ = editor.load_history(path);
            }
            return SessionInput::Editor {
                editor: Some(editor),
                history_file,
            };
        }
        SessionInput::Piped {
            reader: BufReader::new(tokio::io::stdin()),
            prompting: terminal,
        }
    }

    pub async fn next(&mut self) -> Result<Line, CliError> {
        match self {
            SessionInput::Piped { reader, prompting } => {
                if *prompting {
                    promptlab::text::eprint_or_drop!("{PROMPT}");
                }
                Ok(match next_line(reader).await? {
                    Some(text) => Line::Text(text),
                    None => Line::End,
                })
            }
            SessionInput::Editor { editor, .. } => {
                let mut taken = editor
                    .take()
                    .ok_or_else(|| CliError::failed("the line editor is in use"))?;
                // `readline` blocks on the terminal; the runtime's other tasks
                // (the Ctrl-C listener) go on meanwhile.
                let (taken, read) = tokio::task::spawn_blocking(move || {
                    let read = taken.readline(PROMPT);
                    (taken, read)
                })
                .await
                .map_err(|error| CliError::failed(format!("the line editor failed: {error}")))?;
                *editor = Some(taken);
                match read {
                    Ok(text) => Ok(Line::Text(text)),
                    Err(ReadlineError::Interrupted) => Ok(Line::Interrupted),
                    Err(ReadlineError::Eof) => Ok(Line::End),
                    Err(error) => Err(CliError::usage(format!(
                        "failed to read the terminal: {error}"
                    ))),
                }
            }
        }
    }

    /// Keeps `line` in the editor's history and its file. A history file
    /// that cannot be written is warned about once, then left alone: the
    /// session matters more than its history.
    pub fn remember(&mut self, line: &str) {
        let SessionInput::Editor {
            editor: Some(editor),
            history_file,
        } = self
        else {
            return;
        };
        let _ = editor.add_history_entry(line);
        if let Some(path) = history_file.as_ref() {
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            if let Err(error) = editor.append_history(path) {
                promptlab::text::eprintln_or_drop!(
                    "warning: the session's history is not saved to {}: {error}",
                    path.display()
                );
                *history_file = None;
            }
        }
    }

    /// The history file in use, if any (for `/help`).
    pub fn history_file(&self) -> Option<&PathBuf> {
        match self {
            SessionInput::Editor { history_file, .. } => history_file.as_ref(),
            SessionInput::Piped { .. } => None,
        }
    }
}

/// A line editor that talks to the terminal even when stdout is piped
/// (`chat -i | tee`), so the prompt never lands in the output.
fn new_editor() -> Option<DefaultEditor> {
    let config = Config::builder()
        .behavior(Behavior::PreferTerm)
        .auto_add_history(false)
        .history_ignore_dups(true)
        .ok()?
        .history_ignore_space(true)
        .max_history_size(HISTORY_LINES)
        .ok()?
        .build();
    DefaultEditor::with_config(config).ok()
}

/// The most history file a session reads: the editor keeps 1,000 lines,
/// and reads the whole file to find them.
const MAX_HISTORY_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// `path` if the session may read and append to it: none there yet, or a
/// regular file within the bound. Anything else (`/dev/zero`, a FIFO, a
/// folder, a file of gigabytes) is said once and left alone: the editor
/// would read it to its end, without a bound.
fn usable_history(path: PathBuf) -> Option<PathBuf> {
    let problem = match std::fs::metadata(&path) {
        Err(_) => return Some(path),
        Ok(meta) if !meta.is_file() => "it is not a regular file".to_string(),
        Ok(meta) if meta.len() > MAX_HISTORY_FILE_BYTES => format!(
            "it is larger than {} MiB",
            MAX_HISTORY_FILE_BYTES / (1024 * 1024)
        ),
        Ok(_) => return Some(path),
    };
    promptlab::text::eprintln_or_drop!(
        "warning: the session's history file {} is not used: {problem}",
        path.display()
    );
    None
}

/// `$XDG_STATE_HOME/promptlab/chat-history`, else
/// `~/.local/state/promptlab/chat-history` (the XDG default); none when
/// neither variable is set. `PROMPTLAB_HISTORY_FILE` names another file, or
/// turns the file off when empty.
pub fn history_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PROMPTLAB_HISTORY_FILE") {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("promptlab").join("chat-history"))
}

/// The longest stdin line an interactive session reads: far above the
/// longest message a request may carry (20,000 UTF-16 code units are at most
/// 60,000 bytes of UTF-8), so only a runaway input (`< /dev/zero`) reaches it.
const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One line of stdin without its newline; `None` at the end. A line over
/// `MAX_LINE_BYTES` ends the session with an error instead of filling memory.
async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> Result<Option<String>, CliError> {
    let mut line = Vec::new();
    loop {
        let buffer = reader
            .fill_buf()
            .await
            .map_err(|error| CliError::usage(format!("failed to read stdin: {error}")))?;
        if buffer.is_empty() {
            break;
        }
        let newline = buffer.iter().position(|b| *b == b'\n');
        let take = newline.map_or(buffer.len(), |at| at + 1);
        line.extend_from_slice(&buffer[..take]);
        reader.consume(take);
        if line.len() > MAX_LINE_BYTES {
            return Err(CliError::usage(format!(
                "a line of stdin is longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        if newline.is_some() {
            break;
        }
    }
    if line.is_empty() {
        return Ok(None);
    }
    let text = promptlab::input::utf8(line)
        .map_err(|error| CliError::usage(format!("failed to read stdin: {error}")))?;
    Ok(Some(text.trim_end_matches(['\n', '\r']).to_string()))
}
