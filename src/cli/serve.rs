//! `promptlab serve`: the chat API and the Prompt Lab page on a local HTTP
//! server (`promptlab::serve`). The first line on stdout is
//! `listening on http://HOST:PORT`; Ctrl-C or SIGTERM stops accepting,
//! cancels running turns (their logs are marked cancelled) and exits 0.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use chrono::NaiveDate;
use clap::Args;

use promptlab::chat::TurnContext;
use promptlab::claims::ClaimStore;
use promptlab::prompts::PromptRegistry;
use promptlab::provider::script::ScriptProvider;
use promptlab::serve::{ConnectionLimits, RequestDefaults, ServeState, Trust, TurnProvider};

use super::context::parse_today;
use super::error::{CliError, Exit};
use super::model::{ModelArgs, ProviderKind};

const AFTER_HELP: &str = "\
Examples:
  promptlab serve --provider script --script tests/data/scripts/excess.yaml
  promptlab serve --port 0 --max-concurrent 16      # a free port, named on stdout
  promptlab serve --host 0.0.0.0 --allowed-host lab.internal   # docs/serve.md: Security
  curl -N localhost:8787/api/chat -H 'content-type: application/json' \\
    -d '{\"claimId\":\"CLM-HH-0001\",\"messages\":[{\"role\":\"user\",\"text\":\"What is the excess?\"}]}'";

#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct ServeArgs {
    /// The address to listen on. Anything but a loopback address exposes
    /// the API (and your model key's quota) to the network; see docs/serve.md, "Security".
    #[arg(long, value_name = "IP", default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Also answer requests whose Host header names NAME (any port); repeatable. Without it only
    /// localhost, 127.0.0.1, [::1] and the address bound are answered (DNS-rebinding defence).
    #[arg(long, value_name = "NAME")]
    pub allowed_host: Vec<String>,
    /// The port; 0 picks a free one (the first line on stdout names it).
    #[arg(long, value_name = "PORT", default_value_t = 8787)]
    pub port: u16,
    /// At most this many turns at once (and calls to one model); more get 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub max_concurrent: u16,
    /// Allow browser calls, reads and posts, from this origin: scheme://host[:port], e.g.
    /// http://localhost:5173; repeatable; `*` is refused. CORS is off without it.
    #[arg(long, value_name = "ORIGIN")]
    pub cors_origin: Vec<String>,
    /// At most this many open connections; one more gets 503 and is closed.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_connections: u16,
    #[command(flatten)]
    pub model: ModelArgs,
    /// The date the claim brief gives as today (default: the local date).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_today)]
    pub today: Option<NaiveDate>,
    /// Do not write run logs.
    #[arg(long)]
    pub no_record: bool,
    /// Where the page's "Save" writes override files (NAME.yaml), relative to the current folder;
    /// created on the first save. Load them with --overrides DIR/NAME.yaml.
    #[arg(long, value_name = "DIR", default_value = promptlab::serve::DEFAULT_OVERRIDES_DIR)]
    pub overrides_dir: std::path::PathBuf,
    /// Answer a model call made before with the same request from the model-call cache in
    /// --cache-dir (and cache the new ones); see docs/cache.md.
    #[arg(long)]
    pub cache: bool,
    /// With OTEL_EXPORTER_OTLP_ENDPOINT set: make each turn's trace a child of this W3C
    /// traceparent (default: $TRACEPARENT; a request's own `traceparent` header wins).
    #[arg(long, value_name = "TRACEPARENT")]
    pub trace_parent: Option<String>,
}

pub fn run(
    mut args: ServeArgs,
    store: &ClaimStore,
    stores: &super::StoreArgs,
) -> Result<Exit, CliError> {
    let runs_dir = stores.runs_dir.as_path();
    let trust = Trust::new(args.host, &args.allowed_host, &args.cors_origin)
        .map_err(|error| CliError::usage(error.to_string()))?;
    let registry = PromptRegistry::embedded();
    // `--max-concurrent` is each model's ceiling of calls at once (SPEC §14).
    args.model.max_concurrency = Some(usize::from(args.max_concurrent));
    let default_model = args.model.model_name()?;
    let mut built = args.model.build_provider(&stores.tables)?;
    built.provider = super::model::with_cache(built.provider, args.cache, &stores.cache_dir);
    let ctx = TurnContext {
        registry,
        store: store.clone(),
        provider: built.provider.clone(),
    };
    let defaults = RequestDefaults {
        model: default_model,
        thinking_level: args.model.thinking_level,
        today: args.today,
    };
    // Before the runtime: the exporter starts its own thread and client.
    let telemetry = promptlab::telemetry::Telemetry::from_env(args.trace_parent.as_deref())
        .map_err(|error| CliError::usage(error.to_string()))?;
    let mut state = ServeState::new(
        ctx,
        built.provider.name(),
        (!args.no_record).then(|| runs_dir.to_path_buf()),
        defaults,
        usize::from(args.max_concurrent),
    )
    .with_overrides_dir(args.overrides_dir.clone());
    if let (ProviderKind::Script, Some(path)) = (args.model.provider, &args.model.script) {
        let script = ScriptProvider::load(path)?.with_models(Arc::clone(&stores.tables.models));
        state.provider = TurnProvider::ScriptPerTurn(Arc::new(script));
    }
    state.replay_of = built
        .replay
        .as_ref()
        .and_then(|replay| replay.turn_id())
        .map(str::to_string);
    state.tracing = telemetry.tracing();
    state.prices = Arc::clone(&stores.tables.prices);
    state.secrets =
        promptlab::provider::transport::redact::process_redactor(|name| std::env::var(name).ok());
    let state = Arc::new(state);
    let router = promptlab::serve::router(state.clone(), Arc::new(trust));
    let limits = ConnectionLimits {
        max_connections: usize::from(args.max_connections),
        ..ConnectionLimits::default()
    };
    let address = SocketAddr::new(args.host, args.port);
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| CliError::failed(format!("cannot listen on {address}: {error}")))?;
        let bound = listener.local_addr()?;
        stop_on_signals(state.shutdown.clone())?;
        announce(bound, &args.allowed_host)?;
        promptlab::serve::serve(listener, router, state.shutdown.clone(), limits).await?;
        Ok::<(), CliError>(())
    })?;
    // Each turn is a task, dropped here at its next await; the blocking
    // pool's work in hand (a run log being synced and named, a prompt
    // being stored) gets up to 10 s to finish.
    runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    telemetry.finish();
    Ok(Exit::Success)
}

/// The first line on stdout, then a warning on stderr when the address is
/// not loopback, and which names are answered when it is a wildcard.
fn announce(bound: SocketAddr, allowed_hosts: &[String]) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on http://{bound}")?;
    stdout.flush()?;
    if !bound.ip().is_loopback() {
        promptlab::text::eprintln_or_drop!(
            "warning: listening on {}, not a loopback address: anyone who can reach it can run turns on your model key",
            bound.ip()
        );
    }
    if bound.ip().is_unspecified() {
        let mut names = vec!["localhost", "127.0.0.1", "[::1]"];
        names.extend(allowed_hosts.iter().map(String::as_str));
        promptlab::text::eprintln_or_drop!(
            "note: {} is every address, not a name: only requests for Host {} are answered (add names with --allowed-host)",
            bound.ip(),
            names.join(", ")
        );
    }
    Ok(())
}

/// Ctrl-C, SIGTERM and SIGHUP (`signals::hangup`) cancel `shutdown`. The handlers are registered before
/// this returns (unlike a task that registers on its first poll), so a
/// signal sent as soon as the address is announced is not lost.
#[cfg(unix)]
fn stop_on_signals(shutdown: tokio_util::sync::CancellationToken) -> Result<(), CliError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = super::signals::hangup();
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = super::signals::recv_or_never(&mut hangup) => {}
        }
        shutdown.cancel();
    });
    Ok(())
}

#[cfg(not(unix))]
fn stop_on_signals(shutdown: tokio_util::sync::CancellationToken) -> Result<(), CliError> {
    let _stop = super::signals::cancel_on_signals(shutdown);
    Ok(())
}
