//! Checks made before any turn runs (exit 2, nothing recorded): folders
//! that must exist, output files that must be writable, the model key or
//! the deployment's endpoint, and the variants' overrides.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use promptlab::claims::ClaimStore;
use promptlab::eval::runner::index_recorded;
use promptlab::eval::{EvalPlan, ProviderChoice};
use promptlab::provider::gemini::GeminiConfig;
use promptlab::provider::script::ScriptProvider;

use super::settings::EvalSettings;
use crate::cli::error::CliError;
use crate::cli::model::ProviderKind;

/// The claims folder, before the suite is read (the flags were checked by
/// `EvalSettings::from_args`).
pub fn check_store(store: &ClaimStore) -> Result<(), CliError> {
    crate::cli::folders::claims_folder(store)
}

/// The report's folder exists and takes a new file (checked by creating
/// and removing one), so a run never ends unable to write its report.
pub fn writable(flag: &str, path: &Path) -> Result<(), CliError> {
    use crate::cli::report_file::{Target, resolve};
    // Its own stdout or stderr is not opened to check it.
    let path = match resolve(path) {
        Ok(Target::Replace(file)) => file,
        Ok(Target::Own(_)) => return Ok(()),
        Err(problem) => {
            return Err(CliError::usage(format!(
                "{flag} `{}`: {problem}",
                path.display()
            )));
        }
    };
    let path = path.as_path();
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(CliError::usage(format!(
            "{flag} `{}`: the folder `{}` does not exist",
            path.display(),
            dir.display()
        )));
    }
    // A name of its own, created new (never a file or link already there),
    // and removed as it is dropped.
    match tempfile::Builder::new()
        .prefix(".promptlab-write-check-")
        .tempfile_in(dir)
    {
        Ok(_) => Ok(()),
        Err(error) => Err(CliError::usage(format!(
            "{flag} `{}`: cannot write in `{}`: {error}",
            path.display(),
            dir.display()
        ))),
    }
}

/// Unusable overrides, or applied ones with a placeholder no brand fills, in
/// any variant: a warning each, or exit 2 with `--strict`.
pub fn check_overrides(settings: &EvalSettings, plan: &EvalPlan) -> Result<(), CliError> {
    for shadowed in plan.shadowed_overrides() {
        promptlab::text::eprintln_or_drop!("warning: {}", promptlab::text::printable(&shadowed));
    }
    let problems = plan.override_warnings();
    if problems.is_empty() {
        return Ok(());
    }
    if settings.strict {
        return Err(CliError::usage(format!(
            "override problems (--strict):\n  {}",
            problems.join("\n  ")
        )));
    }
    for problem in problems {
        promptlab::text::eprintln_or_drop!(
            "warning: {}",
            promptlab::text::printable(&problem.to_string())
        );
    }
    Ok(())
}

/// Where the suite's turns get their model answers: a variant's own
/// provider (`provider`, `baseUrl` in the suite), else the run's. A provider
/// that cannot work (no key, no script, no recordings) stops the run before
/// it starts.
pub fn provider_choice(
    settings: &EvalSettings,
    plan: &EvalPlan,
) -> Result<ProviderChoice, CliError> {
    let variants = super::variant_providers::build(settings, plan)?;
    if variants.is_empty() {
        return run_choice(settings, plan);
    }
    if settings.model.provider == ProviderKind::Worker {
        return Err(CliError::usage(
            "--provider worker runs whole turns on a deployment: a variant's own `provider` cannot apply",
        ));
    }
    let run = match variants.values().next() {
        // Every variant has its own: the run's provider answers nothing.
        Some(any) if variants.len() == plan.matrix.variants.len() => {
            ProviderChoice::Shared(any.clone())
        }
        _ => run_choice(settings, plan)?,
    };
    Ok(ProviderChoice::PerVariant {
        run: Box::new(run),
        variants,
    })
}

/// The run's own provider (`--provider`).
fn run_choice(settings: &EvalSettings, plan: &EvalPlan) -> Result<ProviderChoice, CliError> {
    match settings.model.provider {
        ProviderKind::Gemini => {
            if GeminiConfig::from_env().endpoint.api_key.is_none() {
                return Err(CliError::usage(
                    "GEMINI_API_KEY is not set: --provider gemini needs it (export GEMINI_API_KEY=…); \
                     to run offline, use --provider script --script FILE (or a `script` on each case)",
                ));
            }
            Ok(ProviderChoice::Shared(
                settings.model.build_provider(&settings.tables)?.provider,
            ))
        }
        ProviderKind::OpenAi => {
            let provider = settings.model.build_provider(&settings.tables)?.provider;
            provider
                .check_ready()
                .map_err(|error| CliError::usage(error.message))?;
            Ok(ProviderChoice::Shared(provider))
        }
        ProviderKind::Script => script_choice(settings, plan),
        ProviderKind::Worker => {
            let client = settings.model.build_worker(
                promptlab::prompts::PromptRegistry::embedded(),
                Some(settings.max_concurrent.unwrap_or(settings.jobs)),
            )?;
            for warning in unseen_on_the_wire(plan) {
                promptlab::text::eprintln_or_drop!(
                    "warning: {}",
                    promptlab::text::printable(&warning.to_string())
                );
            }
            Ok(ProviderChoice::Worker(Box::new(client)))
        }
        ProviderKind::Replay => {
            let dir = settings.model.replay.as_ref().ok_or_else(|| {
                CliError::usage(
                    "eval with --provider replay needs --replay DIR: a runs folder holding this suite's recordings",
                )
            })?;
            Ok(ProviderChoice::Replay {
                recordings: index_recorded(std::slice::from_ref(dir), plan, false)?,
                models: Arc::clone(&settings.tables.models),
            })
        }
    }
}

fn script_choice(settings: &EvalSettings, plan: &EvalPlan) -> Result<ProviderChoice, CliError> {
    let load = |path: &Path| {
        ScriptProvider::load(path)
            .map(|script| Arc::new(script.with_models(Arc::clone(&settings.tables.models))))
            .map_err(CliError::from)
    };
    let default = settings.model.script.as_deref().map(load).transpose()?;
    let mut by_case = HashMap::new();
    for (index, case) in plan.suite.suite.cases.iter().enumerate() {
        if let Some(script) = &case.script {
            by_case.insert(index, load(&plan.suite.base_dir().join(script))?);
        }
    }
    if default.is_none() && by_case.len() < plan.suite.suite.cases.len() {
        return Err(CliError::usage(
            "--provider script needs --script FILE, or a `script` on every case",
        ));
    }
    Ok(ProviderChoice::Script { default, by_case })
}

/// `--max-cost` needs a price for every model the run calls: a spend that
/// cannot be known cannot be kept under a limit.
pub fn check_prices(
    settings: &EvalSettings,
    plan: &EvalPlan,
    judge: Option<&promptlab::judge::Judge>,
) -> Result<(), CliError> {
    let prices = &settings.tables.prices;
    let mut models: Vec<(&str, &str)> = Vec::new();
    for variant in &plan.matrix.variants {
        let provider = variant.model.provider.unwrap_or(settings.model.provider);
        if provider.bills() && provider != ProviderKind::Worker {
            models.push((provider.name(), variant.model.model.as_str()));
        }
    }
    if let Some(judge) = judge.filter(|j| j.provider_kind().bills()) {
        models.push((judge.provider_kind().name(), &judge.settings().model));
    }
    match models
        .into_iter()
        .find(|(provider, model)| prices.get(provider, model).is_none())
        .map(|(_, model)| model)
    {
        Some(model) => Err(CliError::usage(format!(
            "--max-cost: model `{model}` has no price, so what the run spends cannot be known; \
             give its rates with --prices FILE (docs/cache.md)"
        ))),
        None => Ok(()),
    }
}

/// `--max-cost` counts what calls cost from the usage their servers report.
/// OpenAI's own API reports it when asked; another OpenAI-compatible
/// server need not (llama-cpp-python's never does), and a call it leaves
/// unreported has an unknown cost that no budget can count. Said before the
/// run, naming the servers, so that a budget that may not hold is known to
/// be one; the summary then says for how many calls it did not
/// (`Budget::unenforced_calls`).
pub fn warn_unmeasured_budget(
    settings: &EvalSettings,
    plan: &EvalPlan,
    judge: Option<&promptlab::judge::Judge>,
) {
    use promptlab::provider::openai::{DEFAULT_BASE_URL, OpenAiConfig};
    let from_env = OpenAiConfig::from_env().endpoint.base_url;
    let mut servers: Vec<String> = Vec::new();
    for variant in &plan.matrix.variants {
        let provider = variant.model.provider.unwrap_or(settings.model.provider);
        if provider == ProviderKind::OpenAi {
            servers.push(variant.model.base_url.clone().unwrap_or(from_env.clone()));
        }
    }
    if judge.is_some_and(|j| j.provider_kind() == ProviderKind::OpenAi) {
        let section = plan.suite.suite.judge.as_ref();
        servers.push(
            section
                .and_then(|s| s.base_url.clone())
                .unwrap_or(from_env.clone()),
        );
    }
    servers.retain(|url| url.trim_end_matches('/') != DEFAULT_BASE_URL);
    servers.sort();
    servers.dedup();
    if !servers.is_empty() {
        let shown: Vec<String> = servers
            .iter()
            .map(|url| promptlab::provider::transport::shown_url(url))
            .collect();
        let servers = if shown.len() == 1 {
            "server"
        } else {
            "servers"
        };
        promptlab::text::eprintln_or_drop!(
            "warning: --max-cost: the OpenAI-compatible {servers} at {} need not report usage; \
             a call without it has an unknown cost, so the budget cannot be enforced for it \
             (the summary says for how many calls)",
            shown.join(", ")
        );
    }
}

/// Expectations a deployment's stream cannot show: tool arguments (only a
/// tool's name is on the wire, in its `activity`) and model rounds. Said
/// once, before the run, so that a pass is not mistaken for a full check.
fn unseen_on_the_wire(plan: &EvalPlan) -> Vec<String> {
    let suite = &plan.suite.suite;
    let (mut with_args, mut rounds) = (Vec::new(), Vec::new());
    for case in &suite.cases {
        let expect = case.settings(&suite.defaults).expect;
        let tools = expect.tool_called.0.iter().chain(&expect.tool_not_called.0);
        if tools.into_iter().any(|tool| tool.args().is_some()) {
            with_args.push(case.name.as_str());
        }
        if expect.max_rounds.is_some() {
            rounds.push(case.name.as_str());
        }
    }
    let mut warnings = Vec::new();
    if !with_args.is_empty() {
        warnings.push(format!(
            "--provider worker: tool arguments are not on the wire, so tool expectations are matched by name alone in: {}",
            with_args.join(", ")
        ));
    }
    if !rounds.is_empty() {
        warnings.push(format!(
            "--provider worker: model rounds are not on the wire, so maxRounds is not checked in: {}",
            rounds.join(", ")
        ));
    }
    warnings
}

/// A variant that forces a thinking level its model lacks (models/gemini.yaml)
/// would get a 400 on every turn: refused before any turn runs.
pub fn check_forced_levels(
    plan: &EvalPlan,
    models: &promptlab::models::ModelTable,
) -> Result<(), CliError> {
    for variant in &plan.matrix.variants {
        let settings = &variant.model;
        if settings.forced {
            models
                .check_forced(&settings.model, settings.thinking_level)
                .map_err(|refused| {
                    CliError::usage(format!(
                        "variant `{}`: forceThinkingLevel: {refused}",
                        variant.name
                    ))
                })?;
        }
    }
    Ok(())
}

/// Each level the run sends other than asked (a model that lacks it), and
/// each model whose rules are unknown, said once before the run.
pub fn say_thinking_notes(
    plan: &EvalPlan,
    judge: Option<&promptlab::judge::Judge>,
    provider: ProviderKind,
    models: &promptlab::models::ModelTable,
) {
    let args_openai = provider == ProviderKind::OpenAi;
    let registry = promptlab::prompts::PromptRegistry::embedded();
    let suite = &plan.suite.suite;
    let mut notes = std::collections::BTreeSet::new();
    for variant in &plan.matrix.variants {
        let settings = &variant.model;
        for case in &suite.cases {
            let own = case
                .settings(&suite.defaults)
                .capability
                .and_then(|id| registry.capability(&id).and_then(|c| c.thinking_level));
            let asked = promptlab::chat::service::asked_thinking_level(
                own,
                settings.thinking_level,
                settings.forced,
            );
            let openai = settings
                .provider
                .map_or(args_openai, |p| p == ProviderKind::OpenAi);
            let fitted = if openai {
                models.fit_effort(&settings.model, asked)
            } else {
                models.fit(&settings.model, asked)
            };
            notes.extend(fitted.note);
        }
    }
    if let Some(judge) = judge {
        let settings = judge.settings();
        match judge.provider_kind() {
            ProviderKind::Gemini => {
                notes.extend(models.fit(&settings.model, settings.thinking_level).note)
            }
            ProviderKind::OpenAi => notes.extend(
                models
                    .fit_effort(&settings.model, settings.thinking_level)
                    .note,
            ),
            _ => {}
        }
    }
    for note in notes {
        promptlab::text::eprintln_or_drop!("{}", promptlab::text::printable(&note));
    }
}
