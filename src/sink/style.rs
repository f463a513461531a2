//! Terminal styling: ANSI colours by `--color auto|always|never` (auto:
//! `NO_COLOR` off, `CLICOLOR_FORCE` on, `TERM=dumb` off, else only when stdout
//! is a terminal; https://no-color.org, https://bixense.com/clicolors), plain
//! text otherwise. Control characters are kept from the terminal by
//! `text::printable` (re-exported as `sink::printable`).

use std::io::{self, IsTerminal};
use std::sync::OnceLock;

/// When to colour: the `--color` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Colour a terminal unless the environment says otherwise.
    #[default]
    Auto,
    Always,
    Never,
}

/// The colour environment variables `auto` reads.
#[derive(Debug, Clone, Default)]
pub struct ColorEnv {
    pub no_color: Option<String>,
    pub clicolor_force: Option<String>,
    pub term: Option<String>,
}

impl ColorEnv {
    pub fn from_process() -> ColorEnv {
        let read = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        ColorEnv {
            no_color: read("NO_COLOR"),
            clicolor_force: read("CLICOLOR_FORCE"),
            term: read("TERM"),
        }
    }
}

impl ColorChoice {
    /// Whether to colour, given the environment and whether the output is a
    /// terminal. An explicit `always` or `never` wins over the environment;
    /// under `auto`, `NO_COLOR` wins over `CLICOLOR_FORCE`, which wins over
    /// `TERM=dumb` and the terminal test.
    pub fn resolve(self, env: &ColorEnv, is_terminal: bool) -> bool {
        let set = |value: &Option<String>| value.as_deref().is_some_and(|v| !v.is_empty());
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto if set(&env.no_color) => false,
            ColorChoice::Auto
                if set(&env.clicolor_force) && env.clicolor_force.as_deref() != Some("0") =>
            {
                true
            }
            ColorChoice::Auto if env.term.as_deref() == Some("dumb") => false,
            ColorChoice::Auto => is_terminal,
        }
    }
}

static CHOICE: OnceLock<ColorChoice> = OnceLock::new();

/// Sets the process's colour choice once, from `--color`; later calls are
/// ignored. Without it, `Style::for_stdout` behaves as `auto`.
pub fn set_color_choice(choice: ColorChoice) {
    let _ = CHOICE.set(choice);
}

/// ANSI colours when wanted, plain text otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    enabled: bool,
}

impl Style {
    /// Colours for stdout by the process's `--color` choice (see the module).
    pub fn for_stdout() -> Style {
        let choice = CHOICE.get().copied().unwrap_or_default();
        Style {
            enabled: choice.resolve(&ColorEnv::from_process(), io::stdout().is_terminal()),
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

#[cfg(test)]
mod tests {
    use super::{ColorChoice, ColorEnv};

    fn env(no_color: Option<&str>, force: Option<&str>, term: Option<&str>) -> ColorEnv {
        ColorEnv {
            no_color: no_color.map(str::to_string),
            clicolor_force: force.map(str::to_string),
            term: term.map(str::to_string),
        }
    }

    #[test]
    fn auto_follows_the_terminal_when_nothing_is_set() {
        assert!(ColorChoice::Auto.resolve(&env(None, None, Some("xterm")), true));
        assert!(!ColorChoice::Auto.resolve(&env(None, None, Some("xterm")), false));
    }

    #[test]
    fn no_color_turns_auto_off_even_when_forced() {
        assert!(!ColorChoice::Auto.resolve(&env(Some("1"), Some("1"), None), true));
        // An empty NO_COLOR is unset, per no-color.org.
        assert!(ColorChoice::Auto.resolve(&env(Some(""), None, None), true));
    }

    #[test]
    fn clicolor_force_colours_a_pipe_unless_it_is_zero() {
        assert!(ColorChoice::Auto.resolve(&env(None, Some("1"), Some("dumb")), false));
        assert!(!ColorChoice::Auto.resolve(&env(None, Some("0"), None), false));
    }

    #[test]
    fn a_dumb_terminal_gets_no_colour() {
        assert!(!ColorChoice::Auto.resolve(&env(None, None, Some("dumb")), true));
    }

    #[test]
    fn always_and_never_win_over_the_environment() {
        assert!(ColorChoice::Always.resolve(&env(Some("1"), None, Some("dumb")), false));
        assert!(!ColorChoice::Never.resolve(&env(None, Some("1"), None), true));
    }
}
