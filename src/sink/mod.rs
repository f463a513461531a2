//! Sinks: what consumes a turn's events. Each takes `ChatEvent`s and never
//! reaches back into the engine; the choice is a plain enum, as ripgrep picks
//! its printer.

pub mod driver;
mod log_file;
pub mod pretty;
pub mod run_log;
pub mod style;

use std::io::{self, Write};
use std::time::Instant;

use crate::chat::event::ChatEvent;

use crate::text::json_for_terminal;
pub use crate::text::printable;
pub use pretty::PrettyWriter;
pub use style::{ColorChoice, Style, set_color_choice};

/// How events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// For people: chips, streamed answer, lookups, a footer.
    Pretty,
    /// One JSON event per line, flushed per event.
    Ndjson,
    /// `data: <event json>` frames separated by a blank line.
    Sse,
}

/// A format that is not pretty, ndjson or sse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown format `{}` (expected pretty, ndjson or sse)",
    crate::text::quote(.0)
)]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for OutputFormat {
    type Err = UnknownFormat;
    fn from_str(text: &str) -> Result<OutputFormat, UnknownFormat> {
        match text {
            "pretty" => Ok(OutputFormat::Pretty),
            "ndjson" => Ok(OutputFormat::Ndjson),
            "sse" => Ok(OutputFormat::Sse),
            other => Err(UnknownFormat(other.to_string())),
        }
    }
}

pub enum EventWriter<W: Write> {
    Pretty(PrettyWriter<W>),
    Ndjson(W),
    Sse(W),
}

impl<W: Write> EventWriter<W> {
    pub fn new(format: OutputFormat, out: W, style: Style, started: Instant) -> EventWriter<W> {
        match format {
            OutputFormat::Pretty => EventWriter::Pretty(PrettyWriter::new(out, style, started)),
            OutputFormat::Ndjson => EventWriter::Ndjson(out),
            OutputFormat::Sse => EventWriter::Sse(out),
        }
    }

    /// Writes one event and flushes, so that a reader sees it at once.
    pub fn write(&mut self, event: &ChatEvent) -> io::Result<()> {
        match self {
            EventWriter::Pretty(pretty) => pretty.write(event),
            // C1 controls escaped: NDJSON and SSE reach terminals too.
            EventWriter::Ndjson(out) => {
                writeln!(out, "{}", json_for_terminal(event.to_json()))?;
                out.flush()
            }
            EventWriter::Sse(out) => {
                write!(out, "data: {}\n\n", json_for_terminal(event.to_json()))?;
                out.flush()
            }
        }
    }

    /// The turn was cancelled: machine formats stop as they are; the
    /// terminal gets a note.
    pub fn cancelled(&mut self) -> io::Result<()> {
        match self {
            EventWriter::Pretty(pretty) => pretty.cancelled(),
            EventWriter::Ndjson(out) | EventWriter::Sse(out) => out.flush(),
        }
    }
}

impl<W: Write + Send> driver::TurnSink for EventWriter<W> {
    fn role(&self) -> driver::SinkRole {
        driver::SinkRole::Writer
    }

    fn accept(&mut self, output: &crate::chat::TurnOutput) -> io::Result<()> {
        match output {
            crate::chat::TurnOutput::Event(event) => self.write(event),
            crate::chat::TurnOutput::Cancelled => self.cancelled(),
            _ => Ok(()),
        }
    }

    fn describe(&self) -> String {
        "the output".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_frames_and_ndjson_lines() {
        let event = ChatEvent::TextDelta {
            text: "a\nb".into(),
        };
        let mut sse = EventWriter::new(
            OutputFormat::Sse,
            Vec::new(),
            Style::plain(),
            Instant::now(),
        );
        sse.write(&event).unwrap();
        let EventWriter::Sse(bytes) = sse else {
            unreachable!()
        };
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "data: {\"type\":\"text_delta\",\"text\":\"a\\nb\"}\n\n"
        );
        let mut ndjson = EventWriter::new(
            OutputFormat::Ndjson,
            Vec::new(),
            Style::plain(),
            Instant::now(),
        );
        ndjson.write(&event).unwrap();
        ndjson.write(&event).unwrap();
        let EventWriter::Ndjson(bytes) = ndjson else {
            unreachable!()
        };
        assert_eq!(String::from_utf8(bytes).unwrap().lines().count(), 2);
    }
}
