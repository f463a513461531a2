//! `promptlab eval SUITE`: run a suite over the claim corpus and give a
//! verdict — preflight checks, the planned matrix (`--list`), a progress
//! bar, a summary per variant, the failures, NDJSON for machines, JUnit and
//! Markdown for CI, shards and their merge, and resume.

mod by_tag;
mod eval_run;
mod list;
mod markdown;
mod preflight;
mod progress;
mod rescore;
mod settings;
mod summary;
mod summary_table;
mod variant_providers;
mod watch;

// Shared with the other commands that write a report file.
pub use preflight::writable;

use promptlab::telemetry::{Telemetry, Tracing};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{NaiveDate, Utc};
use clap::{Args, ValueEnum};

use promptlab::claims::ClaimStore;
use promptlab::eval::budget::Budget;
use promptlab::eval::matrix::ModelSettings;
use promptlab::eval::runner::resume;
use promptlab::eval::session::{self, Ended};
use promptlab::eval::{EvalPlan, RunLimits, Selection, Shard};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::cache::ModelCache;

use super::StoreArgs;
use super::context::{parse_today, today_or_local};
use super::error::{CliError, Exit};
use super::judge::{JudgeArgs, SuiteJudge};
use super::model::ModelArgs;
use promptlab::eval::outcome::EvalMode;
use settings::EvalSettings;
use watch::TurnSnapshot;

const AFTER_HELP: &str = "\
Exit codes: 0 every case met its threshold (by default: every turn passed), or every variant
reached --min-pass-rate · 1 a failure, an error, a lost run log, a failed report write or a
reached --max-cost · 2 invalid suite, flags or setup (checked before any turn runs: a missing
GEMINI_API_KEY, a missing folder, two variants with the same prompt version, …) · 130 Ctrl-C ·
141 stdout closed before the run ended (`| head`) · 143 SIGTERM.

Examples:
  promptlab eval suites/smoke.yaml --provider script
  promptlab eval suites/regression.yaml --list
  promptlab eval suites/regression.yaml --overrides my-edit.yaml --case 'excess*' -j 8
  promptlab eval suites/regression.yaml --shard auto --junit junit.xml
  promptlab eval suites/regression.yaml --report shard-1/ --report shard-2/ --markdown-summary summary.md
  promptlab eval suites/rubric.yaml --judge-provider script --judge-script suites/scripts/judge.yaml
  promptlab eval suites/rubric.yaml --rescore     # judge recorded turns again, no chat model call
  promptlab eval suites/smoke.yaml --watch --cache --max-cost 2   # re-run on each save, only what changed
  promptlab eval suites/regression.yaml --provider worker --endpoint https://staging.example.com -j 8 --max-concurrent 4 --runs-dir runs/staging
  promptlab compare runs/local runs/staging      # does the deployment answer like the harness? (docs/worker.md)
  OPENAI_BASE_URL=http://127.0.0.1:8000/v1 promptlab eval suites/regression.yaml --provider openai --model Qwen/Qwen3-8B
  promptlab eval suites/rubric.yaml --judge-provider openai --judge-model gpt-5-mini   # OPENAI_API_KEY or PROMPTLAB_JUDGE_API_KEY

Rubric criteria, thresholds over repeats, re-scoring and the judge's flags: docs/judging.md. The
model-call cache, cost, --max-cost and --watch: docs/cache.md. Variants on Gemini and on
OpenAI-compatible models side by side (`provider`, `model`, `baseUrl` per variant): docs/providers.md.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalFormat {
    /// A progress bar, then a summary table and the failures.
    Pretty,
    /// Every event, every verdict, and a summary: one JSON object per line.
    Ndjson,
}

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct EvalArgs {
    /// The suite file (YAML); see docs/suites.md.
    pub suite: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Turns run at once (at least 1).
    #[arg(short = 'j', long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// --provider worker: at most N requests in flight at once, retries
    /// included (default: -j).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent: Option<u16>,
    /// Run only part I of N of the selected turns (1-based), so that N CI jobs share a
    /// suite; `auto` reads GitLab, CircleCI, Buildkite or Kubernetes Indexed Job variables.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// The eval run id to record (`ev-` + 10 hex), so that the shards of one CI run share
    /// one: e.g. `--eval-run ev-$(printf %010x "$GITHUB_RUN_ID")`. Default: a fresh id.
    #[arg(long, value_name = "ID")]
    pub eval_run: Option<String>,
    /// Only this variant (repeat for several).
    #[arg(long, value_name = "NAME")]
    pub variant: Vec<String>,
    /// Only cases with this name or matching this glob (repeat for several).
    #[arg(long, value_name = "NAME|GLOB")]
    pub case: Vec<String>,
    /// Only claims with this id or matching this glob (repeat for several).
    #[arg(long, value_name = "ID|GLOB")]
    pub claim: Vec<String>,
    /// Add a variant made of this override file (or folder), named after it, next to the
    /// suite's variants (repeat for several).
    #[arg(long, value_name = "FILE")]
    pub overrides: Vec<PathBuf>,
    /// After the summary, break the pass rates down by GROUP: `tag` gives each case tag's
    /// (the NDJSON summary always has them, as `tags`).
    #[arg(long, value_enum, value_name = "GROUP")]
    pub by: Option<by_tag::ByGroup>,
    /// Print the planned turns (variant, claim, case, sample; tags when a case has them) and run
    /// nothing.
    #[arg(long)]
    pub list: bool,
    /// Judge the turns already recorded (in --runs-dir, or the --report folders) against the
    /// suite's current expectations: no chat model call, only the judge for rubric criteria
    /// (cached when unchanged). New verdicts go beside each log as `<log>.verdict.json`.
    #[arg(long, conflicts_with_all = ["resume", "list"])]
    pub rescore: bool,
    /// Skip turns already recorded as done for the same prompt fingerprint, claim, case and sample.
    #[arg(long)]
    pub resume: bool,
    /// Run nothing: rebuild the summary, JUnit and exit code from the run logs in DIR (repeat for each shard's folder).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "shard"])]
    pub report: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "pretty")]
    pub format: EvalFormat,
    /// Print only the failures and the summary.
    #[arg(short, long)]
    pub quiet: bool,
    /// How many failing turns to list (the rest are counted).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub show_failures: usize,
    /// Write a JUnit XML report here.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the summary as Markdown here (e.g. "$GITHUB_STEP_SUMMARY").
    #[arg(long, value_name = "FILE")]
    pub markdown_summary: Option<PathBuf>,
    /// The share of a case's repeats on a claim that must pass, for cases that set no
    /// `passThreshold` or `minPasses` of their own: decides the exit code and JUnit.
    #[arg(long, value_name = "RATE", default_value_t = 1.0)]
    pub pass_threshold: f64,
    /// Exit 0 when every variant's pass rate is at least RATE (0 to 1), instead of only when
    /// every turn passed. Lost run logs still exit 1.
    #[arg(long, value_name = "RATE")]
    pub min_pass_rate: Option<f64>,
    /// Answer each model call that is unchanged since an earlier run (same request, same sample)
    /// from the model-call cache in --cache-dir, and cache the new ones; `cache: true` in the
    /// suite does the same. See docs/cache.md.
    #[arg(long, conflicts_with = "no_cache")]
    pub cache: bool,
    /// Call the model for every turn, even when the suite says `cache: true`.
    #[arg(long)]
    pub no_cache: bool,
    /// Run the suite, then again each time the suite, an override file, a script, its casesFrom
    /// bank or a selected claim file changes, saying which turns newly fail or pass and what the run cost. Pair
    /// with --cache so that only changed turns call the model. Ctrl-C stops.
    #[arg(long, conflicts_with_all = ["report", "rescore", "list", "resume", "shard"])]
    pub watch: bool,
    /// Stop starting turns once the run has spent AMOUNT US dollars (chat and judge calls, at
    /// the price table's rates; running turns finish). Exit 1 when it stopped anything. A call
    /// whose server reports no usage cannot be counted: warned before the run, said in the summary.
    #[arg(long, value_name = "AMOUNT", value_parser = parse_usd)]
    pub max_cost: Option<f64>,
    /// Unusable overrides in a variant (unknown id, blank, too long) exit 2 instead of warning.
    #[arg(long)]
    pub strict: bool,
    /// Exit 2 before any turn runs unless the suite's rubric judge is calibrated against
    /// people's labels (`judge.minKappa`, `judge.minLabels`; `promptlab judge calibrate`).
    #[arg(long)]
    pub require_calibrated_judge: bool,
    /// The date the claim brief gives as today, unless the suite pins one.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub today: Option<NaiveDate>,
    /// With OTEL_EXPORTER_OTLP_ENDPOINT set: make each turn's trace a child of this W3C
    /// traceparent (default: $TRACEPARENT), one trace for the whole job; see docs/telemetry.md.
    #[arg(long, value_name = "TRACEPARENT")]
    pub trace_parent: Option<String>,
    #[command(flatten)]
    pub judge: JudgeArgs,
}

pub fn run(args: EvalArgs, store: &ClaimStore, stores: &StoreArgs) -> Result<Exit, CliError> {
    // Before any runtime: the exporter starts its own thread and client.
    let telemetry = Telemetry::from_env(args.trace_parent.as_deref())
        .map_err(|error| CliError::usage(error.to_string()))?;
    let tracing = telemetry.tracing();
    let exit = EvalSettings::from_args(args, &stores.runs_dir, stores.tables.clone()).and_then(
        |settings| match &settings.mode {
            EvalMode::Watch => watch::run(&settings, store, stores, tracing.as_ref()),
            mode => {
                run_once(&settings, mode, store, stores, tracing.as_ref()).map(|(exit, _)| exit)
            }
        },
    );
    telemetry.finish();
    exit
}

/// One run of the suite: its exit, and each turn's outcome (for `--watch`
/// to say what changed).
fn run_once(
    settings: &EvalSettings,
    mode: &EvalMode,
    store: &ClaimStore,
    stores: &StoreArgs,
    tracing: Option<&Tracing>,
) -> Result<(Exit, Vec<TurnSnapshot>), CliError> {
    let runs_dir = stores.runs_dir.as_path();
    let started_at = Utc::now();
    preflight::check_store(store)?;
    let mut plan = plan(settings, store, settings.shard)?;
    preflight::check_overrides(settings, &plan)?;
    preflight::check_forced_levels(&plan, &settings.tables.models)?;
    if mode.runs_turns() {
        check_log_folders(&plan, runs_dir)?;
    }
    let calibration = match mode != &EvalMode::List && plan.has_rubric() {
        true => Some(gate_judge(settings, &mut plan, runs_dir)?),
        false => None,
    };
    let Some(mut ended) = run_mode(settings, mode, plan, (store, stores), tracing)? else {
        return Ok((Exit::Success, Vec::new()));
    };
    ended.judge = calibration;
    // Only `--watch` compares runs: no label per turn otherwise.
    let snapshot = match settings.mode == EvalMode::Watch {
        true => watch::snapshot(&ended.plan, &mut ended.spill)?,
        false => Vec::new(),
    };
    let exit = summary::finish(settings, mode, &mut ended, (started_at, runs_dir))?;
    for error in &ended.unreadable {
        let error = promptlab::text::printable(&error.to_string());
        promptlab::text::eprintln_or_drop!("error: --report: {error}");
    }
    Ok((ended.exit(exit), snapshot))
}

/// Runs the invocation's one mode; `--list` leaves nothing to summarise.
fn run_mode(
    settings: &EvalSettings,
    mode: &EvalMode,
    plan: EvalPlan,
    (store, stores): (&ClaimStore, &StoreArgs),
    tracing: Option<&Tracing>,
) -> Result<Option<Ended>, CliError> {
    let runs_dir = stores.runs_dir.as_path();
    // Merging logs (`--report`) reads the judge's recorded verdicts; running
    // turns or re-scoring them asks the judge.
    let judge = |plan: &EvalPlan| match plan.has_rubric() {
        true => build_judge(settings, plan, &stores.cache_dir).map(|judge| Some(Arc::new(judge))),
        false => Ok(None),
    };
    let ended = match mode {
        EvalMode::List => {
            list::print_list(&plan, settings.output.format)?;
            return Ok(None);
        }
        EvalMode::Rescore(dirs) => {
            let judge = judge(&plan)?;
            let jobs = usize::from(settings.jobs);
            let rescored = session::rescore(
                plan,
                (runs_dir, dirs),
                (judge.as_deref(), tracing),
                jobs,
                arm_signals,
            )?;
            if !settings.output.quiet {
                rescore::say(&rescored, dirs);
            }
            rescored.ended
        }
        EvalMode::Merge(dirs) => {
            // Folders given as arguments are read by scanning (docs/run-logs.md).
            let (ended, scanned) = session::merge(plan, runs_dir, dirs)?;
            promptlab::text::eprintln_or_drop!("{}", promptlab::index::scan_note(scanned));
            ended
        }
        EvalMode::Run { resume } => {
            let judge = judge(&plan)?;
            run_remaining(settings, *resume, (store, stores), plan, (judge, tracing))?
        }
        EvalMode::Watch => {
            let judge = judge(&plan)?;
            run_remaining(settings, false, (store, stores), plan, (judge, tracing))?
        }
    };
    Ok(Some(ended))
}

/// Ctrl-C and SIGTERM cancel a session's work; at its end, which came.
fn arm_signals(cancel: tokio_util::sync::CancellationToken) -> impl Fn() -> Option<Exit> {
    let stop = crate::cli::signals::cancel_on_signals(cancel);
    move || stop.exit()
}

/// The folders the logs and prompts go in: one that cannot take a log (a
/// file in its place, a read-only mount) is found before the first paid
/// call, not after the last. One not made yet is the runs folder's to
/// make: checked with it.
fn check_log_folders(plan: &EvalPlan, runs_dir: &Path) -> Result<(), CliError> {
    let variants = plan.matrix.variants.iter();
    let folders = variants.map(|variant| runs_dir.join(&variant.fingerprint));
    let prompts = promptlab::runs::prompt_store::prompts_dir(runs_dir);
    crate::cli::folders::runs_folder_writable(runs_dir)?;
    for folder in folders.chain([prompts]) {
        if folder.symlink_metadata().is_ok() {
            crate::cli::folders::runs_folder_writable(&folder)?;
        }
    }
    Ok(())
}

/// Runs the plan's turns (those `--resume` finds done are read back, not
/// run again) under `--max-cost` and `-j`, into a spill of their own.
fn run_remaining(
    settings: &EvalSettings,
    resume_done: bool,
    (store, stores): (&ClaimStore, &StoreArgs),
    mut plan: EvalPlan,
    (judge, tracing): (Option<Arc<promptlab::judge::Judge>>, Option<&Tracing>),
) -> Result<Ended, CliError> {
    let runs_dir = stores.runs_dir.as_path();
    let provider = preflight::provider_choice(settings, &plan)?;
    preflight::say_thinking_notes(
        &plan,
        judge.as_deref(),
        settings.model.provider,
        &settings.tables.models,
    );
    let budget = settings.max_cost.map(|limit| Arc::new(Budget::new(limit)));
    if budget.is_some() {
        preflight::check_prices(settings, &plan, judge.as_deref())?;
        preflight::warn_unmeasured_budget(settings, &plan, judge.as_deref());
    }
    // The turns will run: their folder holds the spill too.
    std::fs::create_dir_all(runs_dir)?;
    let mut spill = session::new_spill(runs_dir, &plan)?;
    if resume_done {
        for warning in resume(&mut plan, runs_dir, &mut spill)? {
            promptlab::text::eprintln_or_drop!("warning: {warning}");
        }
        let done = spill.len();
        let remaining = plan.selected().count() - done;
        promptlab::text::eprintln_or_drop!("resume: {done} turns already done, {remaining} to run");
    }
    // Each server's throttle, the judge's too: a spent quota stops new
    // turns, and the eval run's record keeps their rate limits.
    let throttles = provider
        .throttles()
        .into_iter()
        .chain(judge.as_ref().and_then(|judge| judge.throttle()));
    let limits = RunLimits::new(budget, throttles.collect());
    let run_settings = Arc::new(promptlab::eval::RunSettings {
        registry: PromptRegistry::embedded(),
        judge,
        limits: limits.clone(),
        model_cache: (settings.cache.uses_cache(plan.suite.suite.cache))
            .then(|| ModelCache::new(stores.cache_dir.join("model"))),
        store: store.clone(),
        runs_dir: runs_dir.to_path_buf(),
        concurrency: usize::from(settings.jobs),
        today: today_or_local(settings.today),
        provider,
        // Only NDJSON writes a turn's events as they happen.
        feed: promptlab::eval::Feed::new(settings.output.format == EvalFormat::Ndjson),
        tracing: tracing.cloned(),
        prices: Arc::clone(&settings.tables.prices),
    });
    let plan = Arc::new(plan);
    let stop = progress::run_with_progress(settings, &plan, &run_settings, &mut spill)?;
    Ok(Ended {
        plan,
        spill,
        stop,
        limits,
        unreadable: Vec::new(),
        judge: None,
    })
}

/// What the suite's `judge:` section says, for the judge flags to build on.
fn suite_judge(plan: &EvalPlan) -> SuiteJudge {
    let section = plan.suite.suite.judge.clone().unwrap_or_default();
    SuiteJudge {
        provider: section.provider,
        base_url: section.base_url,
        model: section.model,
        thinking_level: section.thinking_level,
        prompts: section.prompts,
    }
}

/// The rubric judge's calibration at the start (SPEC §15): whether its
/// verdicts decide the exit code, or, with --require-calibrated-judge,
/// whether the run may start at all. Named without a client: a merge of
/// shards needs no key.
fn gate_judge(
    settings: &EvalSettings,
    plan: &mut EvalPlan,
    runs_dir: &Path,
) -> Result<promptlab::eval::calibration::JudgeCalibration, CliError> {
    let chosen = settings.judge.choose(&suite_judge(plan))?;
    let identity = promptlab::eval::calibration::JudgeIdentity::new(
        plan,
        chosen.provider_name(),
        &chosen.settings,
        &chosen.prompts,
    );
    let require = settings.require_calibrated_judge;
    Ok(session::gate_judge(plan, runs_dir, identity, require)?)
}

/// The judge of the suite's rubric criteria; warns when it is also a
/// variant's chat model (a model grading its own answers).
fn build_judge(
    settings: &EvalSettings,
    plan: &EvalPlan,
    cache_dir: &Path,
) -> Result<promptlab::judge::Judge, CliError> {
    let mut judge = settings.judge.build(
        &suite_judge(plan),
        cache_dir,
        settings.model.limits(),
        &settings.tables,
    )?;
    if !settings.output.quiet {
        // Said by `--rescore`; a running turn's judge tells its own notices.
        judge = judge.with_notices(crate::cli::judge::notices_on_stderr());
    }
    let model = &judge.settings().model;
    if !settings.output.quiet
        && let Some(variant) = plan
            .matrix
            .variants
            .iter()
            .find(|v| &v.model.model == model)
    {
        promptlab::text::eprintln_or_drop!(
            "warning: the judge model is the chat model of variant `{}` ({model}): a model judging \
             its own answers tends to favour them; choose another with --judge-model or the \
             suite's `judge.model`",
            variant.name
        );
    }
    Ok(judge)
}

/// `--max-cost 5`, `5.00` or `$5`: US dollars, more than 0.
fn parse_usd(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let amount: f64 = trimmed
        .strip_prefix('$')
        .unwrap_or(trimmed)
        .parse()
        .map_err(|_| format!("`{text}` is not an amount of US dollars (e.g. 5 or 0.50)"))?;
    if amount.is_finite() && amount > 0.0 {
        Ok(amount)
    } else {
        Err(format!("`{text}`: the budget must be more than 0"))
    }
}

/// The suite with `--overrides` variants added and `--variant` applied, its
/// matrix, and the turns `--case`, `--claim` and `--shard` select.
fn plan(
    settings: &EvalSettings,
    store: &ClaimStore,
    shard: Option<Shard>,
) -> Result<EvalPlan, CliError> {
    let suite = session::load_suite(&settings.suite, &settings.overrides, &settings.variants)?;
    // A suite whose every variant names its model needs no default.
    let default_model = match settings.model.model_name() {
        Ok(model) => model,
        Err(_) if session::every_variant_names_its_model(&suite) => String::new(),
        Err(error) => return Err(error),
    };
    let defaults = ModelSettings {
        model: default_model,
        thinking_level: settings.model.thinking_level,
        forced: false,
        provider: None,
        base_url: None,
    };
    let selection = Selection {
        cases: settings.cases.clone(),
        claims: settings.claims.clone(),
        shard,
    };
    // The shards of one CI run share the id `--eval-run` names.
    let eval_run = settings.eval_run.clone();
    let (plan, warnings) = session::plan(suite, store, &defaults, (selection, eval_run))?;
    for warning in &warnings {
        promptlab::text::eprintln_or_drop!("warning: {warning}");
    }
    Ok(plan)
}
