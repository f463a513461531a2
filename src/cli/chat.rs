//! `promptlab chat [MESSAGE]`: one chat turn, or an interactive session with
//! `-i`, streamed to the terminal or as NDJSON / SSE.

use std::io::IsTerminal;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use clap::Args;
use tokio_util::sync::CancellationToken;

use promptlab::chat::request::PromptOptions;
use promptlab::chat::{ChatEvent, ChatMessage, ChatRequest, ClaimInput, Role};
use promptlab::claims::ClaimStore;
use promptlab::document::{DocumentFormat, parse_document};
use promptlab::prompts::PromptRegistry;
use promptlab::sink::run_log::RunRecorder;
use promptlab::sink::{OutputFormat, Style};
use promptlab::telemetry::Telemetry;
use promptlab::worker::TurnRunner;

use super::context::{ClaimArgs, PromptArgs, parse_today, today_or_local};
use super::error::{CliError, Exit};
use super::model::ModelArgs;
use super::signals::cancel_on_signals;
use super::suggest;
use super::turn::{KeepText, TurnRun, drive_turn, trace_for};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab chat --claim-id CLM-HH-0001 \"What is the excess?\"\n  promptlab chat --claim-id CLM-HH-0001 --provider script --script tests/data/scripts/excess.yaml \"What is the excess?\"\n  promptlab chat --claim-id CLM-HH-0001 --capability summarise --overrides overrides/plain-spoken.yaml\n  promptlab chat -i --claim-id CLM-HH-0001          # a session: /help, /overrides FILE, //text; Ctrl-D leaves\n  echo \"Has anything been paid?\" | promptlab chat --claim-id CLM-HH-0001 | jq .\n  promptlab chat --provider worker --endpoint https://staging.example.com --claim-id CLM-HH-0001 --send-claim \"What is the excess?\"  # the deployed API (docs/worker.md)\n  OPENAI_BASE_URL=http://127.0.0.1:11434/v1 promptlab chat --provider openai --model llama3.1:8b --claim-id CLM-HH-0001 \"What is the excess?\"  # Ollama, vLLM, llama.cpp, OpenAI (docs/providers.md)"
)]
pub struct ChatArgs {
    /// The user's message. Read from stdin when absent (and not -i).
    pub message: Option<String>,
    /// An interactive session that keeps text history between turns, like the
    /// browser: Ctrl-C stops the current answer, Ctrl-D leaves; /help lists
    /// its commands (/reset, /overrides FILE, /claim ID, /capability ID|none,
    /// /save FILE for a Markdown transcript, //text to send `/text`).
    ///
    /// On a terminal it opens with a banner (claim, capability, fingerprint,
    /// model) and reads lines with a line editor (arrows, Ctrl-R); the lines
    /// typed are kept in PROMPTLAB_HISTORY_FILE, else
    /// $XDG_STATE_HOME/promptlab/chat-history, else
    /// ~/.local/state/promptlab/chat-history (empty PROMPTLAB_HISTORY_FILE:
    /// none), except a line typed with a leading space. Piped input is read
    /// line by line as is. A turn that ends in an error makes the session
    /// exit 1.
    #[arg(short, long)]
    pub interactive: bool,
    #[command(flatten)]
    pub claim: ClaimArgs,
    #[command(flatten)]
    pub prompt: PromptArgs,
    /// Earlier conversation: a JSON array of {"role": "user"|"assistant", "text": ...}.
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// The date the claim brief gives as today (default: the local date).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub today: Option<NaiveDate>,
    /// Output: pretty (default on a terminal), ndjson (default when piped) or sse.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<OutputFormat>,
    /// Do not write a run log for this turn.
    #[arg(long)]
    pub no_record: bool,
    /// With OTEL_EXPORTER_OTLP_ENDPOINT set: make each turn's trace a child of this W3C
    /// traceparent (default: $TRACEPARENT); see docs/telemetry.md.
    #[arg(long, value_name = "TRACEPARENT")]
    pub trace_parent: Option<String>,
    /// Answer a model call made before with the same request from the model-call cache in
    /// --cache-dir (and cache the new ones); see docs/cache.md.
    #[arg(long)]
    pub cache: bool,
}

pub fn run(
    args: ChatArgs,
    store: &ClaimStore,
    stores: &super::StoreArgs,
) -> Result<Exit, CliError> {
    let runs_dir = stores.runs_dir.as_path();
    let registry = PromptRegistry::embedded();
    let claim_from_stdin = args
        .claim
        .claim
        .as_deref()
        .is_some_and(|p| p.as_os_str() == "-");
    let loaded = args.prompt.clone().load(registry)?;
    let claim = args.claim.clone().into_input()?;
    let mut messages = match &args.history {
        Some(path) => read_history(path)?,
        None => Vec::new(),
    };
    if let Some(message) = &args.message {
        messages.push(ChatMessage::user(message.clone()));
    } else if !args.interactive
        && let Some(message) = message_from_stdin(claim_from_stdin, &messages)?
    {
        messages.push(ChatMessage::user(message));
    }
    let format = args.format.unwrap_or_else(default_format);
    let cache = args.cache.then_some(stores.cache_dir.as_path());
    // Before the provider: a missing model is the first thing to fix.
    let model = args.model.model_name()?;
    let (runner, replay) = args
        .model
        .turn_runner(registry, store, cache, &stores.tables)?;
    let claim = args.model.claim_to_send(claim, store)?;
    // A local turn looks its claim id up here; a deployment, in its own store.
    if matches!(claim, ClaimInput::Id(_))
        && matches!(runner, promptlab::worker::TurnRunner::Local(_))
    {
        super::folders::claims_folder(store)?;
    }
    if !args.no_record {
        super::folders::runs_folder_writable(runs_dir)?;
    }
    let base = TurnSettings {
        record_in: (!args.no_record).then(|| runs_dir.to_path_buf()),
        prices: std::sync::Arc::clone(&stores.tables.prices),
        provider_name: runner.provider_name(),
        claim,
        prompt: loaded.options,
        model,
        thinking_level: args.model.thinking_level,
        today: today_or_local(args.today),
        format,
        replay_of: replay
            .as_ref()
            .and_then(|replay| replay.turn_id())
            .map(str::to_string),
    };
    let lookup = Lookup { registry, store };
    // Before the runtime: the exporter starts its own thread and client.
    let telemetry = Telemetry::from_env(args.trace_parent.as_deref())
        .map_err(|error| CliError::usage(error.to_string()))?;
    let exit = run_turns(&args, &runner, lookup, base, messages, &telemetry);
    telemetry.finish();
    let exit = exit?;
    if let Some(replay) = replay {
        for divergence in replay.divergences() {
            let line = format!(
                "replay: model call {}: {}",
                divergence.model_call, divergence.message
            );
            promptlab::text::eprintln_or_drop!("{}", promptlab::text::printable(&line));
        }
    }
    Ok(exit)
}

/// The turn, or the `-i` session's turns.
fn run_turns(
    args: &ChatArgs,
    runner: &TurnRunner,
    lookup: Lookup<'_>,
    base: TurnSettings,
    messages: Vec<ChatMessage>,
    telemetry: &Telemetry,
) -> Result<Exit, CliError> {
    let format = base.format;
    let runtime = tokio::runtime::Runtime::new()?;
    if args.interactive {
        return runtime.block_on(super::session::interactive(
            runner, lookup, base, messages, telemetry,
        ));
    }
    let request = base.request(messages);
    request.validate(lookup.registry)?;
    let cancel = CancellationToken::new();
    let recorder = base.recorder(&request);
    let trace = trace_for(telemetry, runner, &request, None);
    let (run, stop) = runtime.block_on(async {
        let stop = cancel_on_signals(cancel.clone());
        let run = drive_turn(
            runner,
            request,
            format,
            cancel,
            recorder,
            KeepText::None,
            trace,
        )
        .await;
        (run, stop.exit())
    });
    let run = run?;
    report_recording(&run, format);
    hint_after_error(&run, &base, lookup);
    Ok(match (run.exit, stop) {
        (Exit::Cancelled, Some(signal)) => signal,
        (exit, _) => exit,
    })
}

/// What the hints and the banner look things up in.
#[derive(Clone, Copy)]
pub struct Lookup<'a> {
    pub registry: &'static PromptRegistry,
    pub store: &'a ClaimStore,
}

/// pretty on a terminal, ndjson when piped.
pub fn default_format() -> OutputFormat {
    if std::io::stdout().is_terminal() {
        OutputFormat::Pretty
    } else {
        OutputFormat::Ndjson
    }
}

/// On a terminal, say where the run log went.
pub fn report_recording(run: &TurnRun, format: OutputFormat) {
    if let (Some(path), OutputFormat::Pretty) = (&run.recorded, format) {
        promptlab::text::eprintln_or_drop!(
            "{}",
            Style::for_stdout().dim(&format!("recorded {}", path.display()))
        );
    }
}

/// In the pretty view, under a turn that ended in an error because the claim
/// id or the capability is unknown, the nearest known one.
pub fn hint_after_error(run: &TurnRun, settings: &TurnSettings, ctx: Lookup<'_>) {
    let errored = matches!(run.events.last(), Some(ChatEvent::Error { .. }));
    if settings.format != OutputFormat::Pretty || !errored {
        return;
    }
    let claim_hint = match &settings.claim {
        ClaimInput::Id(id) if ctx.store.locate(id).is_none() => suggest::claim_id(id, ctx.store),
        _ => None,
    };
    let capability_hint = settings
        .prompt
        .capability
        .as_deref()
        .filter(|id| ctx.registry.capability(id).is_none())
        .and_then(|id| suggest::capability(id, ctx.registry));
    for hint in claim_hint.into_iter().chain(capability_hint) {
        // After the turn's own error: a stdout that cannot take the hint
        // loses only the hint.
        let _ = writeln!(
            std::io::stdout(),
            "{}",
            Style::for_stdout().dim(&format!("hint: {hint}"))
        );
    }
}

/// What every turn of a session shares.
pub struct TurnSettings {
    /// Where run logs go; `None` with --no-record.
    pub record_in: Option<PathBuf>,
    /// What the run logs price calls by (`--prices`).
    pub prices: std::sync::Arc<promptlab::cost::PriceTable>,
    pub provider_name: &'static str,
    pub claim: ClaimInput,
    /// The session's `/overrides FILE` replaces `prompt.overrides`.
    pub prompt: PromptOptions,
    pub model: String,
    pub thinking_level: promptlab::chat::ThinkingLevel,
    pub today: NaiveDate,
    pub format: OutputFormat,
    /// `--provider replay`: the recorded turn whose model calls every turn
    /// plays back, which each run log names (`replayOf`).
    pub replay_of: Option<String>,
}

impl TurnSettings {
    pub fn request(&self, messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            claim: self.claim.clone(),
            messages,
            prompt: self.prompt.clone(),
            model: self.model.clone(),
            thinking_level: self.thinking_level,
            force_thinking_level: false,
            today: self.today,
        }
    }

    pub fn recorder(&self, request: &ChatRequest) -> Option<RunRecorder> {
        self.record_in.as_ref().map(|dir| {
            let recorder = RunRecorder::new(dir, request, self.provider_name, None)
                .with_prices(std::sync::Arc::clone(&self.prices));
            match &self.replay_of {
                Some(turn_id) => recorder.replaying(turn_id.clone()),
                None => recorder,
            }
        })
    }
}

/// `--history FILE`: a JSON (or YAML) array of `{role, text}`.
fn read_history(path: &Path) -> Result<Vec<ChatMessage>, CliError> {
    let text = promptlab::input::read_input_text(path).map_err(|error| {
        CliError::usage(format!(
            "failed to read history file `{}`: {error}",
            path.display()
        ))
    })?;
    parse_document(&text, DocumentFormat::detect(path, &text)).map_err(|problem| {
        CliError::usage(format!(
            "invalid history file `{}`: {problem}",
            path.display()
        ))
    })
}

/// The message when none is given: stdin if it is piped and not empty; else
/// `None` when the history ends with a user message, which is then the one
/// to answer; else a usage error.
fn message_from_stdin(
    claim_from_stdin: bool,
    history: &[ChatMessage],
) -> Result<Option<String>, CliError> {
    let history_asks = history.last().is_some_and(|m| m.role == Role::User);
    let stdin = std::io::stdin();
    if claim_from_stdin || stdin.is_terminal() {
        if history_asks {
            return Ok(None);
        }
        return Err(CliError::usage(
            "no message: give it as an argument (promptlab chat \"...\"), pipe it on stdin, or end --history with a user message",
        ));
    }
    let message = promptlab::input::read_limited(stdin.lock(), promptlab::input::MAX_INPUT_BYTES)
        .and_then(promptlab::input::utf8)
        .map_err(|error| {
            CliError::usage(format!("failed to read the message from stdin: {error}"))
        })?;
    if history_asks && message.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(message.trim_end_matches(['\n', '\r']).to_string()))
}
