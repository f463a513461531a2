//! The terminal view of a turn: activity chips before the answer, the answer
//! streamed as it comes, a lookups trace, and a footer with the model,
//! usage, fingerprint, turn id, time to first token and total time.

use std::collections::HashMap;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use super::style::Style;
use crate::chat::event::{ChatEvent, ClientAction, Done};
use crate::claims::money::format_amount;
use crate::provider::gemini::NO_KEY_MESSAGE;
use crate::text::printable;

/// Shown under the missing-key error in this view only: the event's text is
/// fixed by the wire format, so the way forward is said here.
pub const NO_KEY_HINT: &str = "\
hint: set a Gemini API key for this shell:  export GEMINI_API_KEY=...
      or run offline with a scripted model:  --provider script --script FILE
      (promptlab init sets up a folder to try that in; the format: docs/scripts.md)";

struct Lookup {
    tool: String,
    label: String,
    ok: bool,
    result: String,
}

pub struct PrettyWriter<W: Write> {
    out: W,
    style: Style,
    started: Instant,
    first_text: Option<Duration>,
    /// Whether the cursor is mid-line in the answer.
    in_text: bool,
    labels: HashMap<String, String>,
    lookups: Vec<Lookup>,
    /// Timings from a recording, shown instead of the live clock's.
    recorded_timing: Option<(Option<Duration>, Duration)>,
}

impl<W: Write> PrettyWriter<W> {
    pub fn new(out: W, style: Style, started: Instant) -> PrettyWriter<W> {
        PrettyWriter {
            out,
            style,
            started,
            first_text: None,
            in_text: false,
            labels: HashMap::new(),
            lookups: Vec::new(),
            recorded_timing: None,
        }
    }

    /// Shows a recorded turn's time to first token and total time in the
    /// footer, for re-rendering a run log.
    pub fn with_recorded_timing(mut self, first_text: Option<Duration>, total: Duration) -> Self {
        self.recorded_timing = Some((first_text, total));
        self
    }

    pub fn write(&mut self, event: &ChatEvent) -> io::Result<()> {
        match event {
            ChatEvent::TextDelta { text } => {
                self.first_text
                    .get_or_insert_with(|| self.started.elapsed());
                let text = printable(text);
                self.in_text = !text.ends_with('\n');
                write!(self.out, "{text}")?;
            }
            ChatEvent::Activity { id, tool: _, label } => {
                self.end_line()?;
                let label = printable(label);
                writeln!(self.out, "{}", self.style.cyan(&format!("  ⟳ {label}")))?;
                self.labels.insert(id.clone(), label);
            }
            ChatEvent::ToolResult {
                id,
                tool,
                ok,
                result,
                ..
            } => {
                self.lookups.push(Lookup {
                    tool: tool.clone(),
                    label: self.labels.get(id).cloned().unwrap_or_default(),
                    ok: *ok,
                    result: printable(result),
                });
            }
            ChatEvent::ClientAction(action) => {
                self.end_line()?;
                let text = match action {
                    ClientAction::HighlightPanel { panel } => {
                        format!("  ↗ highlight panel: {}", printable(panel))
                    }
                    ClientAction::Navigate { to } => format!("  ↗ navigate to: {}", printable(to)),
                };
                writeln!(self.out, "{}", self.style.yellow(&text))?;
            }
            ChatEvent::Done(done) => {
                self.end_line()?;
                self.write_lookups()?;
                self.write_footer(done)?;
            }
            ChatEvent::Error { message } => {
                self.end_line()?;
                writeln!(
                    self.out,
                    "{}",
                    self.style.red(&format!("error: {}", printable(message)))
                )?;
                if message == NO_KEY_MESSAGE {
                    writeln!(self.out, "{}", self.style.dim(NO_KEY_HINT))?;
                }
            }
        }
        self.out.flush()
    }

    pub fn cancelled(&mut self) -> io::Result<()> {
        self.end_line()?;
        writeln!(self.out, "{}", self.style.yellow("(cancelled)"))?;
        self.out.flush()
    }

    fn end_line(&mut self) -> io::Result<()> {
        if self.in_text {
            writeln!(self.out)?;
            self.in_text = false;
        }
        Ok(())
    }

    fn write_lookups(&mut self) -> io::Result<()> {
        if self.lookups.is_empty() {
            return Ok(());
        }
        writeln!(self.out, "\n{}", self.style.dim("Lookups:"))?;
        for lookup in &self.lookups {
            let mark = if lookup.ok {
                self.style.green("✓")
            } else {
                self.style.red("✗")
            };
            let preview: String = lookup
                .result
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let preview: String = preview.chars().take(100).collect();
            let what = if lookup.label.is_empty() {
                &lookup.tool
            } else {
                &lookup.label
            };
            writeln!(
                self.out,
                "  {mark} {} {}",
                what,
                self.style.dim(&format!("— {preview}"))
            )?;
        }
        Ok(())
    }

    fn write_footer(&mut self, done: &Done) -> io::Result<()> {
        let count = |n: Option<u64>| match n {
            Some(n) => format_amount(n.into()).trim_end_matches(".00").to_string(),
            None => "–".to_string(),
        };
        let usage = &done.usage;
        let (first_text, total) = self
            .recorded_timing
            .unwrap_or((self.first_text, self.started.elapsed()));
        let first = first_text.map_or_else(
            || "no text".to_string(),
            |d| format!("first token {:.2} s", d.as_secs_f64()),
        );
        let footer = format!(
            "{} · {} in / {} out / {} cache-read{} · prompts {} · turn {} · {} · total {:.2} s",
            done.model,
            count(usage.input_tokens),
            count(usage.output_tokens),
            count(usage.cache_read_tokens),
            usage
                .unreported_note()
                .map(|note| format!(" ({note})"))
                .unwrap_or_default(),
            done.prompts.fingerprint,
            done.turn_id,
            first,
            total.as_secs_f64(),
        );
        writeln!(self.out, "\n{}", self.style.dim(&footer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::event::{PromptsUsed, Usage};

    fn render(message: &str) -> String {
        let mut writer = PrettyWriter::new(Vec::new(), Style::plain(), Instant::now());
        let event = ChatEvent::Error {
            message: message.into(),
        };
        writer.write(&event).unwrap();
        String::from_utf8(writer.out).unwrap()
    }

    #[test]
    fn the_missing_key_error_gets_a_hint_and_other_errors_do_not() {
        let shown = render(NO_KEY_MESSAGE);
        assert!(shown.starts_with("error: GEMINI_API_KEY is not configured on the API.\n"));
        assert!(shown.contains("export GEMINI_API_KEY="), "{shown}");
        assert!(shown.contains("--provider script --script FILE"), "{shown}");
        assert_eq!(
            render("The model timed out."),
            "error: The model timed out.\n"
        );
    }

    #[test]
    fn chips_come_before_the_answer_and_the_footer_names_the_turn() {
        let mut writer = PrettyWriter::new(Vec::new(), Style::plain(), Instant::now());
        let events = [
            ChatEvent::Activity {
                id: "c1".into(),
                tool: "get_claim_section".into(),
                label: "Reading the policy section".into(),
            },
            ChatEvent::ToolResult {
                id: "c1".into(),
                tool: "get_claim_section".into(),
                ok: true,
                result: "{\n  \"number\": \"P-1\"\n}".into(),
                truncated: false,
            },
            ChatEvent::TextDelta {
                text: "The excess is \u{1b}[2J£350.".into(),
            },
            ChatEvent::Done(Done {
                model: "m".into(),
                usage: Usage::known(5210, 12, 0),
                turn_id: "t-1".into(),
                prompts: PromptsUsed {
                    fingerprint: "default".into(),
                    overridden: vec![],
                },
            }),
        ];
        for event in &events {
            writer.write(event).unwrap();
        }
        let text = String::from_utf8(writer.out).unwrap();
        assert!(text.starts_with("  ⟳ Reading the policy section\nThe excess is [2J£350.\n\nLookups:\n  ✓ Reading the policy section — { \"number\": \"P-1\" }\n"), "{text}");
        assert!(
            text.contains(
                "m · 5,210 in / 12 out / 0 cache-read · prompts default · turn t-1 · first token"
            ),
            "{text}"
        );
    }
}
