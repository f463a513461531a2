//! `promptlab eval SUITE`: run a suite over the claim corpus and give a
//! verdict — a progress bar, a summary per variant, the failures, NDJSON for
//! machines, JUnit for CI, shards and their merge, and resume.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDate;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use promptlab::claims::ClaimStore;
use promptlab::eval::report::{in_matrix_order, junit_xml, summarize, turn_label};
use promptlab::eval::runner::{index_recorded, missing_result, result_from_log};
use promptlab::eval::{
    EvalMessage, EvalPlan, LoadedSuite, Outcome, ProviderChoice, RunSettings, Shard, TurnResult,
    build_matrix, run_turns,
};
use promptlab::prompts::PromptRegistry;
use promptlab::provider::script::ScriptProvider;
use promptlab::sink::Style;

use super::context::{parse_today, today_or_local};
use super::error::{CliError, Exit};
use super::model::{ModelArgs, ProviderKind};
use super::output::new_table;

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The suite file (YAML); see docs/suites.md.
    pub suite: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Turns run at once.
    #[arg(short = 'j', long, value_name = "N", default_value_t = 4)]
    pub jobs: usize,
    /// Run only part I of N of the matrix (1-based), so that N CI jobs share a suite.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Skip turns already recorded as done for the same prompt fingerprint, claim, case and sample.
    #[arg(long)]
    pub resume: bool,
    /// Run nothing: rebuild the summary, JUnit and exit code from the run logs in DIR (repeat for each shard's folder).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "shard"])]
    pub report: Vec<PathBuf>,
    /// pretty (a summary table) or ndjson (every event, every verdict, a summary).
    #[arg(long, value_name = "FORMAT", default_value = "pretty", value_parser = ["pretty", "ndjson"])]
    pub format: String,
    /// Write a JUnit XML report here.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// The share of a case's repeats that must pass for its JUnit testcase to pass.
    #[arg(long, value_name = "RATE", default_value_t = 1.0)]
    pub pass_threshold: f64,
    /// The date the claim brief gives as today, unless the suite pins one.
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub today: Option<NaiveDate>,
}

pub fn run(args: EvalArgs, store: &ClaimStore, runs_dir: &Path) -> Result<Exit, CliError> {
    if !(0.0..=1.0).contains(&args.pass_threshold) {
        return Err(CliError::invalid(
            "--pass-threshold must be between 0 and 1",
        ));
    }
    let registry = PromptRegistry::embedded();
    let suite = LoadedSuite::load(&args.suite, registry).map_err(CliError::invalid)?;
    let matrix = build_matrix(&suite, store, registry).map_err(CliError::invalid)?;
    for warning in &matrix.claim_warnings {
        eprintln!("warning: {warning}");
    }
    let mut plan = EvalPlan {
        turns: matrix.turns.clone(),
        suite,
        matrix,
    };
    if let Some(shard) = args.shard {
        plan.turns.retain(|spec| shard.takes(spec));
    }
    let mut results = Vec::new();
    if !args.report.is_empty() {
        let recorded = index_recorded(&args.report, &plan.suite.name, false)?;
        for spec in &plan.turns {
            results.push(match recorded.get(&plan.key(spec)) {
                Some(path) => result_from_log(&plan, spec, path),
                None => missing_result(spec),
            });
        }
        return finish(&args, &plan, results, false);
    }
    if args.resume {
        let done = index_recorded(&[runs_dir.to_path_buf()], &plan.suite.name, true)?;
        let mut remaining = Vec::new();
        for spec in std::mem::take(&mut plan.turns) {
            match done.get(&plan.key(&spec)) {
                Some(path) => results.push(result_from_log(&plan, &spec, path)),
                None => remaining.push(spec),
            }
        }
        plan.turns = remaining;
        eprintln!(
            "resume: {} turns already done, {} to run",
            results.len(),
            plan.turns.len()
        );
    }
    let settings = RunSettings {
        registry,
        store: store.clone(),
        runs_dir: runs_dir.to_path_buf(),
        concurrency: args.jobs.max(1),
        model: args.model.model.clone(),
        thinking_level: args.model.thinking_level,
        today: today_or_local(args.today),
        provider: provider_choice(&args, &plan)?,
    };
    let (ran, cancelled) = run_with_progress(&args, &plan, &settings, results.len())?;
    results.extend(ran);
    finish(&args, &plan, results, cancelled)
}

/// Where the suite's turns get their model answers.
fn provider_choice(args: &EvalArgs, plan: &EvalPlan) -> Result<ProviderChoice, CliError> {
    match args.model.provider {
        ProviderKind::Gemini => Ok(ProviderChoice::Shared(
            args.model.build_provider()?.provider,
        )),
        ProviderKind::Script => {
            let load = |path: &Path| {
                ScriptProvider::load(path)
                    .map(Arc::new)
                    .map_err(CliError::invalid)
            };
            let default = args.model.script.as_deref().map(load).transpose()?;
            let mut by_case = HashMap::new();
            for (index, case) in plan.suite.suite.cases.iter().enumerate() {
                if let Some(script) = &case.script {
                    by_case.insert(index, load(&plan.suite.base_dir().join(script))?);
                }
            }
            if default.is_none() && by_case.len() < plan.suite.suite.cases.len() {
                return Err(CliError::invalid(
                    "--provider script needs --script FILE, or a `script` on every case",
                ));
            }
            Ok(ProviderChoice::Script { default, by_case })
        }
        ProviderKind::Replay => {
            let dir = args
                .model
                .replay
                .as_ref()
                .filter(|path| path.is_dir())
                .ok_or_else(|| CliError::invalid("eval with --provider replay needs --replay DIR: a runs folder holding this suite's recordings"))?;
            Ok(ProviderChoice::Replay(index_recorded(
                std::slice::from_ref(dir),
                &plan.suite.name,
                false,
            )?))
        }
    }
}

/// Runs the plan, showing progress; returns the results and whether Ctrl-C stopped it.
fn run_with_progress(
    args: &EvalArgs,
    plan: &EvalPlan,
    settings: &RunSettings,
    already: usize,
) -> Result<(Vec<TurnResult>, bool), CliError> {
    let runtime = tokio::runtime::Runtime::new()?;
    let total = plan.turns.len() + already;
    let ndjson = args.format == "ndjson";
    let progress = (std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} turns · {elapsed} · {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_position(already as u64);
        bar
    });
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let results = runtime.block_on(async {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                on_signal.cancel();
            }
        });
        let run = run_turns(plan, settings, cancel.clone(), sender);
        futures_util::pin_mut!(run);
        let mut finished = already;
        let mut stdout = std::io::stdout().lock();
        loop {
            tokio::select! {
                results = &mut run => {
                    while let Ok(message) = receiver.try_recv() {
                        report_message(plan, &message, ndjson, &progress, &mut finished, total, &mut stdout);
                    }
                    break results;
                }
                Some(message) = receiver.recv() => {
                    report_message(plan, &message, ndjson, &progress, &mut finished, total, &mut stdout);
                }
            }
        }
    });
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    Ok((results, cancel.is_cancelled()))
}

fn report_message(
    plan: &EvalPlan,
    message: &EvalMessage,
    ndjson: bool,
    progress: &Option<ProgressBar>,
    finished: &mut usize,
    total: usize,
    out: &mut impl Write,
) {
    match message {
        EvalMessage::Event(spec, event) if ndjson => {
            let labels = plan.labels(spec);
            let line = json!({"kind": "event", "variant": labels.variant, "claim": spec.claim_id, "case": labels.case, "sample": spec.sample, "event": event});
            let _ = writeln!(out, "{line}");
        }
        EvalMessage::Finished(result) => {
            *finished += 1;
            if ndjson {
                let _ = writeln!(out, "{}", turn_json(plan, result));
            }
            let line = format!(
                "{} {} ({:.2} s)",
                result.verdict.outcome.as_str(),
                turn_label(plan, result),
                result.observation.latency_ms as f64 / 1000.0
            );
            match progress {
                Some(bar) => {
                    bar.set_position(*finished as u64);
                    bar.set_message(line);
                }
                None if !ndjson => eprintln!(
                    "[{finished:>width$}/{total}] {line}",
                    width = total.to_string().len()
                ),
                None => {}
            }
        }
        EvalMessage::Warning(warning) => match progress {
            Some(bar) => bar.println(format!("warning: {warning}")),
            None => eprintln!("warning: {warning}"),
        },
        EvalMessage::Event(..) => {}
    }
    let _ = out.flush();
}

fn turn_json(plan: &EvalPlan, result: &TurnResult) -> serde_json::Value {
    let labels = plan.labels(&result.spec);
    json!({
        "kind": "turn",
        "variant": labels.variant,
        "fingerprint": plan.matrix.variants[result.spec.variant].fingerprint,
        "claim": result.spec.claim_id,
        "case": labels.case,
        "sample": result.spec.sample,
        "verdict": result.verdict.outcome,
        "failures": result.verdict.failures,
        "usage": result.observation.usage,
        "rounds": result.observation.rounds,
        "latencyMs": result.observation.latency_ms,
        "runLog": result.run_log,
        "fromLog": result.from_log,
    })
}

/// Summary, failures, JUnit and the exit code.
fn finish(
    args: &EvalArgs,
    plan: &EvalPlan,
    mut results: Vec<TurnResult>,
    cancelled: bool,
) -> Result<Exit, CliError> {
    in_matrix_order(&mut results);
    let summaries = summarize(plan, &results);
    let bad = results
        .iter()
        .filter(|r| r.verdict.outcome != Outcome::Pass)
        .count();
    let exit = match (cancelled, bad) {
        (true, _) => Exit::Cancelled,
        (false, 0) => Exit::Success,
        (false, _) => Exit::Failure,
    };
    if let Some(path) = &args.junit {
        write_atomically(path, &junit_xml(plan, &results, args.pass_threshold))?;
    }
    let mut out = std::io::stdout().lock();
    if args.format == "ndjson" {
        if !args.report.is_empty() || args.resume {
            for result in results.iter().filter(|r| r.from_log) {
                writeln!(out, "{}", turn_json(plan, result))?;
            }
        }
        let line = json!({
            "kind": "summary",
            "suite": plan.suite.name,
            "turns": results.len(),
            "planned": plan.turns.len(),
            "cancelled": cancelled,
            "variants": summaries,
            "exit": match exit { Exit::Success => 0, Exit::Failure => 1, Exit::Cancelled => 130 },
        });
        writeln!(out, "{line}")?;
        return Ok(exit);
    }
    let style = Style::for_stdout();
    let mut table = new_table([
        "variant",
        "fingerprint",
        "turns",
        "passed",
        "failed",
        "errors",
        "pass rate",
        "tokens in/out",
        "cache read",
        "latency p50/p95",
    ]);
    for s in &summaries {
        let seconds = |ms: Option<u64>| {
            ms.map_or("–".to_string(), |ms| {
                format!("{:.2} s", ms as f64 / 1000.0)
            })
        };
        table.add_row([
            s.variant.clone(),
            s.fingerprint.clone(),
            s.turns.to_string(),
            s.passed.to_string(),
            s.failed.to_string(),
            s.errors.to_string(),
            format!("{:.1}%", s.pass_rate * 100.0),
            format!("{}/{}", s.input_tokens, s.output_tokens),
            format!("{:.1}%", s.cache_read_share * 100.0),
            format!(
                "{} / {}",
                seconds(s.latency_p50_ms),
                seconds(s.latency_p95_ms)
            ),
        ]);
    }
    writeln!(
        out,
        "{}\n{table}",
        style.bold(&format!("Suite {}", plan.suite.name))
    )?;
    let failing: Vec<&TurnResult> = results
        .iter()
        .filter(|r| r.verdict.outcome != Outcome::Pass)
        .collect();
    if !failing.is_empty() {
        writeln!(out, "\n{}", style.bold("Failures:"))?;
        for result in failing {
            let mark = match result.verdict.outcome {
                Outcome::Error => style.red("error"),
                _ => style.red("fail"),
            };
            writeln!(out, "{mark} {}", turn_label(plan, result))?;
            for failure in &result.verdict.failures {
                writeln!(out, "    - {failure}")?;
            }
            if let Some(path) = &result.run_log {
                writeln!(
                    out,
                    "    {}",
                    style.dim(&format!("run log: {}", path.display()))
                )?;
            }
        }
    }
    let passed = results.len() - bad;
    let mut tail = format!(
        "{} turns: {passed} passed, {bad} failed or errored",
        results.len()
    );
    if cancelled {
        tail.push_str(&format!(
            " · cancelled with {} of {} turns not run",
            plan.turns.len() + results.iter().filter(|r| r.from_log).count() - results.len(),
            plan.turns.len()
        ));
    }
    if let Some(path) = &args.junit {
        tail.push_str(&format!(" · JUnit written to {}", path.display()));
    }
    writeln!(
        out,
        "\n{}",
        if bad == 0 && !cancelled {
            style.green(&tail)
        } else {
            style.red(&tail)
        }
    )?;
    Ok(exit)
}

/// Writes a whole file or nothing: a temporary beside it, then a rename.
fn write_atomically(path: &Path, contents: &str) -> Result<(), CliError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temporary = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("report"),
        std::process::id()
    ));
    let fail = |error: std::io::Error| {
        CliError::failed(format!("failed to write `{}`: {error}", path.display()))
    };
    std::fs::write(&temporary, contents).map_err(fail)?;
    std::fs::rename(&temporary, path).map_err(fail)
}
