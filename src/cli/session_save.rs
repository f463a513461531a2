//! `/save FILE` in `chat -i`: the session so far as Markdown — each turn's
//! message, the lookups it made, its answer, and its footer (model, tokens,
//! fingerprint, turn id) or its error. Model and claim text is escaped for
//! Markdown line by line (`promptlab::markdown`), so an answer cannot inject
//! HTML or hide the rest of the file. The file must be new: an existing file
//! or a link at its name is refused, never overwritten or followed.

use std::io::Write;
use std::path::Path;

use promptlab::chat::ChatEvent;
use promptlab::event::count_or_dash;
use promptlab::markdown;

/// One turn of the session as the transcript keeps it.
#[derive(Debug, Clone)]
pub struct SavedTurn {
    pub claim: String,
    pub message: String,
    pub answer: String,
    /// Its events other than `text_delta` (the answer is `answer`).
    pub events: Vec<ChatEvent>,
    pub cancelled: bool,
}

/// The longest line of model or user text kept in the transcript.
const MAX_LINE: usize = 20_000;

/// The transcript as Markdown.
pub fn transcript(turns: &[SavedTurn]) -> String {
    let mut out = String::from("# promptlab chat session\n");
    for (number, turn) in turns.iter().enumerate() {
        out.push_str(&format!(
            "\n## Turn {} · {}\n\n**You:** {}\n",
            number + 1,
            markdown::inline(&turn.claim, 200),
            paragraph(&turn.message)
        ));
        let lookups: Vec<String> = turn
            .events
            .iter()
            .filter_map(|event| match event {
                ChatEvent::Activity { tool, label, .. } => Some(format!(
                    "- {} ({})",
                    markdown::inline(label, 200),
                    markdown::code(tool, 100)
                )),
                _ => None,
            })
            .collect();
        if !lookups.is_empty() {
            out.push_str(&format!("\nLookups:\n\n{}\n", lookups.join("\n")));
        }
        out.push_str(&format!("\n**Assistant:** {}\n", paragraph(&turn.answer)));
        out.push_str(&format!("\n{}\n", footer(turn)));
    }
    out
}

/// Text of several lines, each escaped; blank lines kept as paragraph breaks.
fn paragraph(text: &str) -> String {
    text.lines()
        .map(|line| markdown::inline(line, MAX_LINE))
        .collect::<Vec<_>>()
        .join("  \n")
}

fn footer(turn: &SavedTurn) -> String {
    let end = turn.events.iter().rev().find_map(|event| match event {
        ChatEvent::Done(done) => Some(format!(
            "_{} · {} in / {} out ({} cache read){} · fingerprint {} · turn {}_",
            markdown::inline(&done.model, 100),
            count_or_dash(done.usage.input_tokens),
            count_or_dash(done.usage.output_tokens),
            count_or_dash(done.usage.cache_read_tokens),
            done.usage
                .unreported_note()
                .map(|note| format!(" ({note})"))
                .unwrap_or_default(),
            markdown::inline(&done.prompts.fingerprint, 20),
            markdown::inline(&done.turn_id, 40)
        )),
        ChatEvent::Error { message } => {
            Some(format!("_error: {}_", markdown::inline(message, 400)))
        }
        _ => None,
    });
    match end {
        Some(end) => end,
        None if turn.cancelled => "_stopped (Ctrl-C)_".to_string(),
        None => "_no end recorded_".to_string(),
    }
}

/// Writes `text` to a new file at `path`: refused when anything (a file, a
/// link) is already there.
pub fn save_new(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}
