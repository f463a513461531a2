//! Terminal styling: ANSI colours when stdout is a terminal and `NO_COLOR`
//! is unset (https://no-color.org), plain text otherwise; and stripping
//! control characters from text we did not write.

use std::io::{self, IsTerminal};

/// ANSI colours when wanted, plain text otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    enabled: bool,
}

impl Style {
    /// Colours for stdout unless `NO_COLOR` is set or stdout is not a terminal.
    pub fn for_stdout() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        Style {
            enabled: !no_color && io::stdout().is_terminal(),
        }
    }

    pub fn plain() -> Style {
        Style { enabled: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }

    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
}

/// Removes control characters from text that came from a claim or a model,
/// keeping newlines and tabs, so that hostile text cannot move the cursor,
/// retitle the window or hide output.
pub fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}
