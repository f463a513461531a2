//! `promptlab chat -i`: a session of turns, one per line, keeping the text
//! history between them as the browser does; `/` lines are commands to the
//! session (`/help`, `/reset`, `/overrides FILE`, `/claim ID`,
//! `/capability ID`, `/save FILE`), never sent to the model.

use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use promptlab::chat::{ChatMessage, ClaimInput, Role};
use promptlab::prompts::{OverrideSet, fingerprint, resolve_overrides};
use promptlab::sink::Style;
use promptlab::telemetry::Telemetry;
use promptlab::worker::TurnRunner;

use super::chat::{Lookup, TurnSettings, hint_after_error, report_recording};
use super::error::{CliError, Exit};
use super::session_input::{Line, SessionInput};
use super::session_save::{SavedTurn, save_new, transcript};
use super::suggest;
use super::turn::{KeepText, drive_turn, trace_for};

const SESSION_HELP: &str = "\
Type a message and press Enter; the answer streams, and the session keeps the text history.
  /help             this help
  /reset            forget the history: the next message starts a new conversation
  /overrides FILE   use the overrides in FILE (a file or folder) from the next turn on
  /overrides none   back to the code defaults
  /overrides        the overrides in use and their fingerprint
  /claim ID         talk about another claim (a new conversation: the history is cleared)
  /capability ID    run the next turns as that quick action (`promptlab prompts list`)
  /capability none  back to free chat
  /save FILE        write the session so far as Markdown (a new file; never overwrites)
  //text            send `/text` (a message that starts with /)
Ctrl-C stops an answer; Ctrl-D leaves. On a terminal, ↑/↓ and Ctrl-R recall earlier lines.";

/// What a line of the session asks for.
#[derive(Debug, PartialEq, Eq)]
enum Input<'a> {
    Message(&'a str),
    Command(&'a str),
    Blank,
}

/// `//text` is the message `/text`; any other `/…` is a command.
fn classify(line: &str) -> Input<'_> {
    if line.trim().is_empty() {
        return Input::Blank;
    }
    match line.trim_start().strip_prefix('/') {
        Some(rest) if rest.starts_with('/') => Input::Message(rest),
        Some(command) => Input::Command(command.trim()),
        None => Input::Message(line),
    }
}

/// The session's first line: what every turn will run with.
fn banner(ctx: Lookup<'_>, settings: &TurnSettings) -> String {
    let claim = claim_label(&settings.claim);
    let applied = resolve_overrides(&settings.prompt.overrides, ctx.registry);
    format!(
        "claim {claim} · capability {} · fingerprint {} · model {} ({}) · /help for commands",
        settings.prompt.capability.as_deref().unwrap_or("free chat"),
        fingerprint(&applied.applied),
        settings.model,
        settings.provider_name,
    )
}

/// What a session keeps besides its settings: the text history the model
/// is sent, and every turn for `/save`.
struct SessionState {
    history: Vec<ChatMessage>,
    saved: Vec<SavedTurn>,
    /// Turns run here (not on a deployment): a claim id must be in the store.
    local: bool,
    /// The session's id: every turn's `gen_ai.conversation.id` in traces.
    id: String,
}

/// A `/command` line of a session: answered on stderr, never sent to the
/// model; a mistake in it is reported and the session goes on.
fn session_command(
    command: &str,
    state: &mut SessionState,
    settings: &mut TurnSettings,
    ctx: Lookup<'_>,
    input: &SessionInput,
) {
    let (name, argument) = command
        .split_once(char::is_whitespace)
        .map_or((command, ""), |(name, rest)| (name, rest.trim()));
    match name {
        "help" => {
            promptlab::text::eprintln_or_drop!("{SESSION_HELP}");
            if let Some(path) = input.history_file() {
                promptlab::text::eprintln_or_drop!("History file: {}", path.display());
            }
        }
        "reset" => {
            state.history.clear();
            promptlab::text::eprintln_or_drop!("(history cleared)");
        }
        "overrides" => overrides_command(argument, settings, ctx),
        "claim" => claim_command(argument, state, settings, ctx),
        "capability" => capability_command(argument, settings, ctx),
        "save" => save_command(argument, state),
        other => promptlab::text::eprintln_or_drop!(
            "unknown command /{}: /help lists them (//text sends `/text`)",
            promptlab::text::quote(other)
        ),
    }
}

/// `/claim ID`: later turns are about another claim, in a new conversation.
fn claim_command(id: &str, state: &mut SessionState, settings: &mut TurnSettings, ctx: Lookup<'_>) {
    if id.is_empty() {
        promptlab::text::eprintln_or_drop!("(claim {})", claim_label(&settings.claim));
        return;
    }
    if state.local && ctx.store.locate(id).is_none() {
        let hint = suggest::claim_id(id, ctx.store)
            .map(|hint| format!("; {hint}"))
            .unwrap_or_default();
        promptlab::text::eprintln_or_drop!(
            "error: no claim `{}` in the store{hint} (the claim is unchanged)",
            promptlab::text::quote(id)
        );
        return;
    }
    settings.claim = ClaimInput::Id(id.to_string());
    state.history.clear();
    promptlab::text::eprintln_or_drop!(
        "(claim {id}; history cleared: a new claim starts a new conversation)"
    );
}

/// `/capability ID|none`: the quick action later turns run as.
fn capability_command(id: &str, settings: &mut TurnSettings, ctx: Lookup<'_>) {
    match id {
        "" => {}
        "none" => settings.prompt.capability = None,
        id if ctx.registry.capability(id).is_some() => {
            settings.prompt.capability = Some(id.to_string());
        }
        unknown => {
            let hint = suggest::capability(unknown, ctx.registry)
                .map(|hint| format!("; {hint}"))
                .unwrap_or_default();
            promptlab::text::eprintln_or_drop!(
                "error: unknown capability `{}`{hint} (the capability is unchanged)",
                promptlab::text::quote(unknown)
            );
            return;
        }
    }
    promptlab::text::eprintln_or_drop!(
        "(capability {})",
        settings
            .prompt
            .capability
            .as_deref()
            .unwrap_or("none: free chat")
    );
}

/// `/save FILE`: the transcript so far, into a file that must be new.
fn save_command(path: &str, state: &SessionState) {
    if path.is_empty() {
        promptlab::text::eprintln_or_drop!("error: /save needs a file name: /save session.md");
        return;
    }
    match save_new(std::path::Path::new(path), &transcript(&state.saved)) {
        Ok(()) => {
            promptlab::text::eprintln_or_drop!("(saved {} turns to {path})", state.saved.len())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            promptlab::text::eprintln_or_drop!(
                "error: `{}` already exists (a file or a link): /save writes a new file only",
                promptlab::text::quote(path)
            )
        }
        Err(error) => promptlab::text::eprintln_or_drop!(
            "error: cannot save to `{}`: {error}",
            promptlab::text::quote(path)
        ),
    }
}

fn claim_label(claim: &ClaimInput) -> String {
    match claim {
        ClaimInput::Id(id) => id.clone(),
        ClaimInput::Document(loaded) => loaded.claim.id.clone(),
    }
}

/// `/overrides [FILE|none]`: shows, replaces or clears the overrides.
fn overrides_command(argument: &str, settings: &mut TurnSettings, ctx: Lookup<'_>) {
    match argument {
        "" => {}
        "none" => settings.prompt.overrides.clear(),
        path => match OverrideSet::load(&[PathBuf::from(path)]) {
            Ok(set) => settings.prompt.overrides = set.prompts,
            Err(error) => {
                promptlab::text::eprintln_or_drop!(
                    "error: {error} (the overrides in use are unchanged)"
                );
                return;
            }
        },
    }
    let resolved = resolve_overrides(&settings.prompt.overrides, ctx.registry);
    for ignored in &resolved.ignored {
        let hint = suggest::prompt_id_suffix(&ignored.id, ctx.registry);
        promptlab::text::eprintln_or_drop!("warning: {ignored}{hint}");
    }
    let applied: Vec<&str> = resolved.applied.keys().map(String::as_str).collect();
    promptlab::text::eprintln_or_drop!(
        "(fingerprint {} · overridden: {})",
        fingerprint(&resolved.applied),
        super::output::list_or_none(&applied)
    );
}

/// A session: one turn per line of input, text history kept between turns.
pub async fn interactive(
    runner: &TurnRunner,
    ctx: Lookup<'_>,
    mut settings: TurnSettings,
    history: Vec<ChatMessage>,
    telemetry: &Telemetry,
) -> Result<Exit, CliError> {
    let current: Arc<Mutex<Option<CancellationToken>>> = Arc::new(Mutex::new(None));
    let on_signal = Arc::clone(&current);
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            match on_signal.lock().clone() {
                Some(token) => token.cancel(),
                None => promptlab::text::eprint_or_drop!(
                    "\n(Ctrl-D to leave)\n{}",
                    super::session_input::PROMPT
                ),
            }
        }
    });
    let terminated = on_terminate(Arc::clone(&current));
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stdin());
    if terminal {
        promptlab::text::eprintln_or_drop!("{}", Style::for_stdout().dim(&banner(ctx, &settings)));
    }
    let mut input = SessionInput::new(terminal);
    let mut pending = history.last().filter(|m| m.role == Role::User).is_some();
    let mut state = SessionState {
        history,
        saved: Vec::new(),
        local: matches!(runner, TurnRunner::Local(_)),
        id: uuid::Uuid::new_v4().to_string(),
    };
    let mut failed = false;
    loop {
        if !pending {
            let line = match input.next().await? {
                Line::Text(line) => line,
                Line::Interrupted => {
                    promptlab::text::eprintln_or_drop!("(Ctrl-D to leave)");
                    continue;
                }
                // A turn that ended in an error (a script out of turns, a
                // model failure) makes the whole session exit 1.
                Line::End => return Ok(if failed { Exit::Failure } else { Exit::Success }),
            };
            match classify(&line) {
                Input::Blank => continue,
                Input::Command(command) => {
                    input.remember(&line);
                    session_command(command, &mut state, &mut settings, ctx, &input);
                    continue;
                }
                Input::Message(message) => {
                    input.remember(&line);
                    state.history.push(ChatMessage::user(message));
                }
            }
        }
        pending = false;
        failed |= session_turn(runner, ctx, &settings, &mut state, &current, telemetry).await?
            == Exit::Failure;
        if terminated.is_cancelled() {
            return Ok(Exit::Terminated);
        }
        if terminal {
            promptlab::text::eprintln_or_drop!();
        }
    }
}

/// SIGTERM ends the session as it ends a one-shot chat: a turn in hand is
/// cancelled (its log recorded `cancelled`) and the session then exits 143
/// (the returned token tells the loop); at the prompt, with nothing to
/// record, it exits 143 at once.
fn on_terminate(current: Arc<Mutex<Option<CancellationToken>>>) -> CancellationToken {
    let terminated = CancellationToken::new();
    let seen = terminated.clone();
    tokio::spawn(async move {
        if super::signals::terminate().await.is_some() {
            seen.cancel();
            match current.lock().clone() {
                Some(turn) => turn.cancel(),
                None => std::process::exit(i32::from(super::error::exit_code::TERMINATED)),
            }
        }
    });
    terminated
}

/// Runs the turn the history's last message asks for; keeps its answer in
/// the history (a failed turn's message is taken back) and the turn for
/// `/save`.
async fn session_turn(
    runner: &TurnRunner,
    ctx: Lookup<'_>,
    settings: &TurnSettings,
    state: &mut SessionState,
    current: &Mutex<Option<CancellationToken>>,
    telemetry: &Telemetry,
) -> Result<Exit, CliError> {
    let request = settings.request(state.history.clone());
    if let Err(error) = request.validate(ctx.registry) {
        // The message is taken back, and the session's exit says a line
        // went unanswered (piped, nobody sees this line go by).
        let hint = match error {
            promptlab::chat::request::RequestError::TooManyMessages(_) => {
                "; the history is full: /reset starts a new conversation"
            }
            _ => "",
        };
        promptlab::text::eprintln_or_drop!("error: {error}{hint}");
        state.history.pop();
        return Ok(Exit::Failure);
    }
    let token = CancellationToken::new();
    *current.lock() = Some(token.clone());
    let recorder = settings.recorder(&request);
    let trace = trace_for(telemetry, runner, &request, Some(&state.id));
    let end = drive_turn(
        runner,
        request,
        settings.format,
        token,
        recorder,
        KeepText::Answer,
        trace,
    )
    .await;
    *current.lock() = None;
    let end = end?;
    report_recording(&end, settings.format);
    hint_after_error(&end, settings, ctx);
    state.saved.push(SavedTurn {
        claim: claim_label(&settings.claim),
        message: state
            .history
            .last()
            .map(|m| m.text.clone())
            .unwrap_or_default(),
        answer: end.answer.clone(),
        events: end.events.clone(),
        cancelled: end.exit == Exit::Cancelled,
    });
    match end.exit {
        Exit::Success => state.history.push(ChatMessage::assistant(end.answer)),
        Exit::Cancelled if !end.answer.trim().is_empty() => {
            state.history.push(ChatMessage::assistant(end.answer));
        }
        _ => {
            state.history.pop();
        }
    }
    Ok(end.exit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_double_slash_sends_the_line_from_its_second_slash() {
        assert_eq!(classify("//etc/passwd?"), Input::Message("/etc/passwd?"));
        assert_eq!(classify("/reset"), Input::Command("reset"));
        assert_eq!(
            classify("  /overrides x.yaml "),
            Input::Command("overrides x.yaml")
        );
        assert_eq!(
            classify("What is the excess?"),
            Input::Message("What is the excess?")
        );
        assert_eq!(classify("a/b"), Input::Message("a/b"));
        assert_eq!(classify("   "), Input::Blank);
        assert_eq!(classify("/"), Input::Command(""));
    }
}
