//! `promptlab replay RUNLOG`: re-run a recorded turn with its recorded model
//! responses, offline, and say where the new run diverges.

use std::sync::Arc;

use clap::Args;
use tokio_util::sync::CancellationToken;

use promptlab::chat::{ClaimInput, TurnContext};
use promptlab::claims::ClaimStore;
use promptlab::prompts::PromptRegistry;
use promptlab::runs::replay::{compare_events, request_from_log};
use promptlab::runs::{find_run, read_run_log};
use promptlab::sink::OutputFormat;
use promptlab::sink::run_log::RunRecorder;

use super::context::read_claim_file;
use super::error::{CliError, Exit};
use super::signals::cancel_on_signals;
use super::turn::{KeepText, drive_turn, trace_for};
use promptlab::telemetry::Telemetry;
use promptlab::worker::TurnRunner;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  promptlab replay 64011163\n  promptlab replay 64011163 --claim-id CLM-HH-0011 --no-record   # the same model replies, another claim"
)]
pub struct ReplayArgs {
    /// A run-log path, or a prefix of a turn id.
    pub run: String,
    /// Replay against this claim file instead of the recorded claim.
    #[arg(long, value_name = "FILE", conflicts_with = "claim_id")]
    pub claim: Option<std::path::PathBuf>,
    /// Replay against this claim id instead of the recorded claim.
    #[arg(long, value_name = "ID")]
    pub claim_id: Option<String>,
    /// Output: pretty, ndjson or sse (default: pretty on a terminal, ndjson when piped).
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<OutputFormat>,
    /// Do not record the replayed turn.
    #[arg(long)]
    pub no_record: bool,
    /// With OTEL_EXPORTER_OTLP_ENDPOINT set: make the turn's trace a child of this W3C
    /// traceparent (default: $TRACEPARENT); see docs/telemetry.md.
    #[arg(long, value_name = "TRACEPARENT")]
    pub trace_parent: Option<String>,
}

pub fn run(
    args: ReplayArgs,
    store: &ClaimStore,
    stores: &super::StoreArgs,
) -> Result<Exit, CliError> {
    let runs_dir = stores.runs_dir.as_path();
    let path = find_run(&[runs_dir.to_path_buf()], &args.run)?;
    let log = read_run_log(&path)?;
    if let Some(remote) = &log.header.remote {
        return Err(CliError::usage(format!(
            "`{}` ran on a deployment ({}): its model calls were not recorded here, so it cannot be replayed; run it again with --provider worker",
            path.display(),
            remote.endpoint
        )));
    }
    let claim = match (&args.claim, &args.claim_id) {
        (Some(file), _) => Some(ClaimInput::Document(Arc::new(read_claim_file(file)?))),
        (None, Some(id)) => Some(ClaimInput::Id(id.clone())),
        (None, None) => None,
    };
    let (request, warnings) = request_from_log(&log, store, claim)?;
    for warning in warnings {
        promptlab::text::eprintln_or_drop!("warning: {warning}");
    }
    let registry = PromptRegistry::embedded();
    request.validate(registry)?;
    let replay = promptlab::runs::replay::replay_provider(&log);
    let replay = Arc::new(replay.with_models(Arc::clone(&stores.tables.models)));
    let ctx = TurnContext {
        registry,
        store: store.clone(),
        provider: replay.clone(),
    };
    // A replay is recorded as one (`replayOf`), never under the recorded
    // turn's eval labels: it must not stand in for the judged turn.
    let recorder = (!args.no_record).then(|| {
        RunRecorder::new(runs_dir, &request, "replay", None)
            .replaying(log.header.turn_id.clone())
            .with_prices(Arc::clone(&stores.tables.prices))
    });
    let format = args.format.unwrap_or_else(super::chat::default_format);
    // Before the runtime: the exporter starts its own thread and client.
    let telemetry = Telemetry::from_env(args.trace_parent.as_deref())
        .map_err(|error| CliError::usage(error.to_string()))?;
    let runner = TurnRunner::Local(ctx);
    let trace = trace_for(&telemetry, &runner, &request, None);
    let runtime = tokio::runtime::Runtime::new()?;
    let cancel = CancellationToken::new();
    let (run, stop) = runtime.block_on(async move {
        let stop = cancel_on_signals(cancel.clone());
        let run = drive_turn(
            &runner,
            request,
            format,
            cancel,
            recorder,
            KeepText::Everything,
            trace,
        )
        .await;
        (run, stop.exit())
    });
    telemetry.finish();
    let run = run?;
    if run.exit == Exit::Cancelled {
        return Ok(stop.unwrap_or(Exit::Cancelled));
    }
    Ok(say_divergences(&log, &replay, &run.events, &path).unwrap_or(run.exit))
}

/// Says whether the replayed turn matches its recording; `Some(Failure)`
/// when it diverges (each difference said), `None` when it matches.
fn say_divergences(
    log: &promptlab::runs::RunLog,
    replay: &promptlab::provider::replay::ReplayProvider,
    events: &[promptlab::event::ChatEvent],
    path: &std::path::Path,
) -> Option<Exit> {
    let recorded: Vec<_> = log.events().cloned().collect();
    let mut differences: Vec<String> = replay
        .divergences()
        .into_iter()
        .map(|d| format!("model call {}: {}", d.model_call, d.message))
        .collect();
    differences.extend(compare_events(&recorded, events));
    if differences.is_empty() {
        promptlab::text::eprintln_or_drop!(
            "replay matches the recording: {} events, {} model calls ({})",
            recorded.len(),
            replay.recorded_calls(),
            path.display()
        );
        return None;
    }
    promptlab::text::eprintln_or_drop!("replay diverges from the recording {}:", path.display());
    for difference in differences {
        promptlab::text::eprintln_or_drop!("  {difference}");
    }
    Some(Exit::Failure)
}
