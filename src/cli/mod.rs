//! The command line: clap types and one module per subcommand. Nothing in
//! the library imports clap; each command turns its `*Args` into the
//! validated types the engine takes.

pub mod cache;
pub mod cases;
pub mod cases_from_runs;
pub mod chat;
pub mod claims;
pub mod compare;
pub mod context;
pub mod error;
pub mod eval;
pub mod evals;
pub mod evals_trend;
pub mod folders;
pub mod init;
pub mod judge;
pub mod judge_calibrate;
pub mod label;
pub mod model;
pub mod output;
pub mod prompt_tools;
pub mod prompts;
pub mod prompts_diff;
pub mod prompts_list;
pub mod replay;
pub mod report;
pub mod report_file;
pub mod review;
pub mod runs;
pub mod runs_show;
pub mod serve;
pub mod session;
pub mod session_input;
pub mod session_save;
pub mod shell;
pub mod signals;
pub mod suggest;
pub mod turn;

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};
use promptlab::cost::PriceTable;

use promptlab::claims::ClaimStore;
use promptlab::sink::{ColorChoice, set_color_choice};

use error::{CliError, Exit};

const ABOUT: &str = "Run a claims assistant's chat turns locally, with Prompt Lab overrides, \
streamed events and fingerprinted run logs.";

const AFTER_HELP: &str = "\
Exit codes: 0 ok · 1 the turn ended in an error event, or a check or an eval failed · 2 invalid input or usage · 130 cancelled (Ctrl-C) · 141 a chat turn or an eval cut short by a closed stdout · 143 terminated (SIGTERM, or SIGHUP unless under nohup).

Examples (Gemini needs GEMINI_API_KEY; --provider script --script FILE runs offline):
  promptlab chat --claim-id CLM-HH-0001 \"What is the excess?\"
  promptlab prompts show --claim-id CLM-HH-0001 --overrides overrides/plain-spoken.yaml
  promptlab eval suites/smoke.yaml --provider script --junit smoke.xml
  promptlab compare default overrides/plain-spoken.yaml --format markdown
  promptlab report runs/ --suite smoke -o smoke.html
  promptlab runs list --since 1d";

#[derive(Debug, Parser)]
#[command(
    name = "promptlab",
    version = env!("PROMPTLAB_LONG_VERSION"),
    about = ABOUT,
    after_help = AFTER_HELP
)]
pub struct Cli {
    #[command(flatten)]
    pub stores: StoreArgs,
    /// When to colour the output: auto colours a terminal unless NO_COLOR is set
    /// or TERM=dumb, and colours a pipe when CLICOLOR_FORCE is set.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub color: ColorArg,
    #[command(subcommand)]
    pub command: Command,
}

/// Where claims and run logs live.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The claim store: a folder of <id>.json|.yaml|.yml files.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "PROMPTLAB_CLAIMS_DIR",
        default_value = "claims"
    )]
    pub claims_dir: PathBuf,
    /// Where run logs are recorded and read: <DIR>/<fingerprint>/<time>-<turn id>.ndjson.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "PROMPTLAB_RUNS_DIR",
        default_value = "runs"
    )]
    pub runs_dir: PathBuf,
    /// Where cached model calls (`model/`, with --cache) and judge verdicts (`judge/`) are
    /// kept; see docs/cache.md.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "PROMPTLAB_CACHE_DIR",
        default_value = ".promptlab-cache"
    )]
    pub cache_dir: PathBuf,
    /// Model prices (USD per million tokens) to add to or replace the shipped tables
    /// (prices/gemini.yaml, prices/openai.yaml); see docs/cache.md.
    #[arg(long, global = true, value_name = "FILE", env = "PROMPTLAB_PRICES")]
    pub prices: Option<PathBuf>,
    /// Model rules (thinking levels or budgets, output caps, token fields) to add to or
    /// replace the shipped tables (models/gemini.yaml, models/openai.yaml); see docs/models.md.
    #[arg(long, global = true, value_name = "FILE", env = "PROMPTLAB_MODELS")]
    pub models: Option<PathBuf>,
    /// The tables `--prices` and `--models` make, read once at start-up and
    /// carried from here to whatever prices a call or fits a level.
    #[arg(skip)]
    pub tables: Tables,
}

/// The price table and the model table a command runs with.
#[derive(Debug, Clone)]
pub struct Tables {
    pub prices: std::sync::Arc<PriceTable>,
    pub models: std::sync::Arc<promptlab::models::ModelTable>,
}

impl Default for Tables {
    fn default() -> Tables {
        Tables {
            prices: PriceTable::shipped(),
            models: promptlab::models::ModelTable::shipped(),
        }
    }
}

/// `--color`: the clap face of `sink::ColorChoice`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

impl From<ColorArg> for ColorChoice {
    fn from(arg: ColorArg) -> ColorChoice {
        match arg {
            ColorArg::Auto => ColorChoice::Auto,
            ColorArg::Always => ColorChoice::Always,
            ColorArg::Never => ColorChoice::Never,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one chat turn (or an interactive session with -i) and stream its events.
    Chat(Box<chat::ChatArgs>),
    /// Inspect prompts: the assembled system prompt, ids, fingerprints.
    #[command(subcommand)]
    Prompts(prompts::PromptsCommand),
    /// Inspect the claim store: list, show, brief, validate.
    #[command(subcommand)]
    Claims(claims::ClaimsCommand),
    /// Generate cases: a prompt-injection suite planted in claims from the store.
    #[command(subcommand)]
    Cases(cases::CasesCommand),
    /// Run an eval suite over the claim corpus and give a verdict.
    Eval(Box<eval::EvalArgs>),
    /// Recorded eval runs: list, show, trend (from the run index).
    #[command(subcommand)]
    Evals(evals::EvalsCommand),
    /// Compare two prompt versions on their recorded runs.
    Compare(compare::CompareArgs),
    /// Recorded run logs: list, show, and reindex (rebuild the run index).
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Rubric judges: calibrate one against people's labels.
    #[command(subcommand)]
    Judge(judge_calibrate::JudgeCommand),
    /// Label an eval run's turns in the terminal, one at a time, blind to the judge.
    Review(review::ReviewArgs),
    /// Record a person's verdict on a recorded turn (for judge calibration and review).
    Label(label::LabelArgs),
    /// Re-run a recorded turn with its recorded model responses and report where it diverges.
    Replay(replay::ReplayArgs),
    /// Write one self-contained HTML report of recorded runs (eval runs or chat turns).
    Report(report::ReportArgs),
    /// Set up a folder to try promptlab offline: a claim, overrides, a scripted model, a suite.
    Init(init::InitArgs),
    /// Print a shell completion script: bash, zsh, fish, powershell or elvish.
    Completions(shell::CompletionsArgs),
    /// Print the manual page (roff), or write one per subcommand with --out-dir.
    Man(shell::ManArgs),
    /// Serve the chat API (POST /api/chat, streamed as SSE) and the Prompt Lab page on localhost.
    Serve(Box<serve::ServeArgs>),
    /// The model-call and judge caches: stats, clear, prune.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
}

impl Cli {
    /// The command line, parsed as `Cli::parse` does, with `--help` naming
    /// each variable and never a value: clap shows an unset one as
    /// `[env: NAME=]`, as if set to nothing, and a set one as what this
    /// shell holds (docs/cli.md is made the same way).
    pub fn parse_args() -> Cli {
        let command = shell::without_env_values(Cli::command());
        let mut matches = command.get_matches();
        <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut matches)
            .unwrap_or_else(|error| error.format(&mut Cli::command()).exit())
    }
}

pub fn run(mut cli: Cli) -> Result<Exit, CliError> {
    set_color_choice(cli.color.into());
    if let Some(path) = &cli.stores.prices {
        let table = PriceTable::embedded()
            .with_file(path)
            .map_err(CliError::usage)?;
        cli.stores.tables.prices = std::sync::Arc::new(table);
    }
    if let Some(path) = &cli.stores.models {
        let table = promptlab::models::ModelTable::embedded()
            .with_file(path)
            .map_err(CliError::usage)?;
        cli.stores.tables.models = std::sync::Arc::new(table);
    }
    let store = ClaimStore::new(&cli.stores.claims_dir);
    match cli.command {
        Command::Chat(args) => chat::run(*args, &store, &cli.stores),
        Command::Prompts(command) => prompts::run(command, &store),
        Command::Claims(command) => claims::run(command, &store),
        Command::Cases(command) => cases::run(command, &store, &cli.stores.runs_dir),
        Command::Eval(args) => eval::run(*args, &store, &cli.stores),
        Command::Evals(command) => evals::run(command, &cli.stores.runs_dir),
        Command::Compare(args) => compare::run(args, &cli.stores),
        Command::Runs(command) => runs::run(command, &cli.stores.runs_dir),
        Command::Judge(command) => judge_calibrate::run(command, &cli.stores.runs_dir),
        Command::Review(args) => review::run(args, &cli.stores.runs_dir),
        Command::Label(args) => label::run(args, &cli.stores.runs_dir),
        Command::Replay(args) => replay::run(args, &store, &cli.stores),
        Command::Report(args) => report::run(args, &cli.stores.runs_dir),
        Command::Init(args) => init::run(args),
        Command::Completions(args) => shell::completions(args, Cli::command()),
        Command::Man(args) => shell::man(args, Cli::command()),
        Command::Serve(args) => serve::run(*args, &store, &cli.stores),
        Command::Cache(command) => cache::run(command, &cli.stores.cache_dir),
    }
}
