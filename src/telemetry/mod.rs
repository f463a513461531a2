//! Turns as OpenTelemetry traces (OTLP over HTTP, the GenAI semantic
//! conventions; `docs/telemetry.md`). Off unless the standard variables
//! name an endpoint (`config.rs`); then every turn is one trace built by
//! an observer sink (`turn.rs`) and handed to the SDK's batch exporter
//! (`export.rs`), which never slows a turn and is flushed at exit, over an
//! HTTP client that reads at most 64 KiB of an answer (`client.rs`).

pub mod attributes;
pub mod client;
pub mod config;
pub mod content;
pub mod export;
pub mod turn;

use std::sync::Arc;

use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::trace::SdkTracer;

pub use config::{ConfigError, TraceConfig, TraceParent};
pub use turn::{TurnLabels, TurnTrace, Verdict};

/// What every turn's trace shares.
pub(crate) struct Shared {
    tracer: SdkTracer,
    stats: Arc<export::ExportStats>,
    capture_content: bool,
    parent: Option<TraceParent>,
}

/// Tracing for a process: off (costs nothing), or an exporter.
#[derive(Default)]
pub struct Telemetry {
    on: Option<(Arc<Shared>, export::Export)>,
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Export(#[from] export::ExportSetupError),
}

impl Telemetry {
    /// Tracing as the process environment says; `trace_parent` is
    /// `--trace-parent`. Must be called outside an async context (the
    /// exporter's blocking HTTP client starts its own runtime thread).
    pub fn from_env(trace_parent: Option<&str>) -> Result<Telemetry, TelemetryError> {
        let config = TraceConfig::from_env(&|name| std::env::var(name).ok(), trace_parent)?;
        match config {
            Some(config) => Telemetry::start(&config),
            None => Ok(Telemetry::default()),
        }
    }

    pub fn start(config: &TraceConfig) -> Result<Telemetry, TelemetryError> {
        let export = export::start(config)?;
        let tracer = export.provider.tracer("promptlab");
        let shared = Shared {
            tracer,
            stats: export.stats.clone(),
            capture_content: config.capture_content,
            parent: config.parent,
        };
        Ok(Telemetry {
            on: Some((Arc::new(shared), export)),
        })
    }

    pub fn is_on(&self) -> bool {
        self.on.is_some()
    }

    /// A sink that traces one turn; `None` when tracing is off.
    pub fn turn(&self, labels: TurnLabels) -> Option<TurnTrace> {
        self.tracing().map(|tracing| tracing.turn(labels))
    }

    /// A handle that starts turn traces from any task; `None` when off.
    pub fn tracing(&self) -> Option<Tracing> {
        let (shared, _) = self.on.as_ref()?;
        Some(Tracing(shared.clone()))
    }

    /// Flushes what is queued (at most 3 s) and says what was not exported.
    pub fn finish(self) {
        if let Some((_, export)) = self.on {
            export.finish();
        }
    }
}

/// Starts turn traces; cheap to clone, shared by concurrent turns.
#[derive(Clone)]
pub struct Tracing(Arc<Shared>);

impl Tracing {
    pub fn turn(&self, labels: TurnLabels) -> TurnTrace {
        TurnTrace::new(self.0.clone(), labels)
    }

    /// `eval --rescore`: one span for a recorded turn judged again, with
    /// the new verdict; `run_log` names the turn, and `original` (the log's
    /// `trace`, when it was exported) becomes the span's link.
    pub fn rescored(
        &self,
        case: &str,
        run_log: &std::path::Path,
        verdict: &Verdict,
        original: Option<&crate::runs::record::TraceRef>,
    ) {
        use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer};
        use opentelemetry::{Context, KeyValue};
        let now = std::time::SystemTime::now();
        let links = original.and_then(link_to).into_iter().collect();
        let span = self
            .0
            .tracer
            .span_builder(format!("evaluate {case}"))
            .with_kind(SpanKind::Internal)
            .with_links(links)
            .with_start_time(now)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "evaluate"),
                KeyValue::new("promptlab.run_log", run_log.display().to_string()),
                KeyValue::new("promptlab.rescore", true),
            ])
            .start(&self.0.tracer);
        let cx = Context::new().with_span(span);
        attributes::add_verdict(&cx.span(), verdict, now);
        cx.span().end_with_timestamp(now);
        self.0
            .stats
            .offered
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A link to a recorded turn's root span; `None` for ids that are not hex.
fn link_to(trace: &crate::runs::record::TraceRef) -> Option<opentelemetry::trace::Link> {
    use opentelemetry::trace::{Link, SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    let trace_id = TraceId::from_hex(&trace.trace_id).ok()?;
    let span_id = SpanId::from_hex(&trace.span_id).ok()?;
    let context = SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    );
    Some(Link::with_context(context))
}

/// `gen_ai.provider.name` for a provider's name (the conventions' values
/// where there is one).
pub fn provider_name(provider: &str) -> String {
    match provider {
        "gemini" => "gcp.gemini".to_string(),
        // Chat Completions, whoever serves it (OpenAI, vLLM, Ollama, …).
        "openai" => "openai".to_string(),
        other => format!("promptlab.{other}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn providers_take_the_conventions_names_where_there_are_some() {
        assert_eq!(super::provider_name("gemini"), "gcp.gemini");
        assert_eq!(super::provider_name("openai"), "openai");
        assert_eq!(super::provider_name("script"), "promptlab.script");
    }
}
