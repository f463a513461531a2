//! Where finished spans go: the OpenTelemetry SDK's batch processor (its
//! own thread, a queue of 2,048 spans, a 5 s export timeout) in front of the
//! OTLP HTTP exporter (protobuf or JSON) over a reqwest client that follows
//! no redirect, so the headers' token never leaves the endpoint's origin,
//! and reads at most 64 KiB of an answer (`client.rs`).
//! A receiver that is down costs a turn nothing: spans wait in the queue
//! and an export that fails prints one warning per process, naming the
//! endpoint without userinfo or query and never a header. At exit the queue
//! is flushed for at most 3 s; what was not exported is counted and said.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};

use super::config::{Protocol, TraceConfig};
use crate::provider::transport::redact::{Redactor, Secret};

/// The queue in front of the exporter; a span beyond it is dropped, counted.
pub const MAX_QUEUED_SPANS: usize = 2_048;
/// How long one export may take.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the exit waits for the queue to drain.
pub const FLUSH_AT_EXIT: Duration = Duration::from_secs(3);

/// Spans offered, exported and failed, and the one warning.
#[derive(Debug, Default)]
pub struct ExportStats {
    pub offered: AtomicU64,
    pub exported: AtomicU64,
    pub failed: AtomicU64,
    warned: AtomicBool,
}

/// The exporter with the warning said once and the counts kept.
#[derive(Debug)]
struct CountingExporter {
    inner: opentelemetry_otlp::SpanExporter,
    stats: Arc<ExportStats>,
    shown_endpoint: String,
    redactor: Arc<Redactor>,
}

impl SpanExporter for CountingExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let count = batch.len() as u64;
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => self.stats.exported.fetch_add(count, Ordering::Relaxed),
            Err(error) => {
                if !self.stats.warned.swap(true, Ordering::Relaxed) {
                    let reason = self.redactor.redact_owned(reason_of(&error.to_string()));
                    crate::text::eprintln_or_drop!(
                        "warning: traces not exported: {}: {reason}",
                        self.shown_endpoint
                    );
                }
                self.stats.failed.fetch_add(count, Ordering::Relaxed)
            }
        };
        result
    }

    fn shutdown_with_timeout(&mut self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The last, most specific part of an export error, lower-cased as the
/// operating system says it (`connection refused`), without any URL.
fn reason_of(text: &str) -> String {
    if text.contains(super::client::ANSWER_TOO_LARGE) {
        return super::client::ANSWER_TOO_LARGE.to_string();
    }
    let lower = text.to_ascii_lowercase();
    for known in [
        "connection refused",
        "timed out",
        "dns error",
        "connection reset",
    ] {
        if lower.contains(known) {
            return known.to_string();
        }
    }
    // The exporter words a status in Rust's debug form
    // (`reqwest::Error { kind: Status(500, None), … }`) or its own
    // (`Status Code: 307, Response: b""`): the number is what matters.
    let status = regex::Regex::new(r"Status(?:\(| Code: )(\d{3})")
        .ok()
        .and_then(|pattern| pattern.captures(text))
        .and_then(|found| found[1].parse::<u16>().ok());
    match status {
        Some(code @ 300..=399) => {
            format!("the receiver answered {code}: redirects are not followed")
        }
        Some(code) => format!("the receiver answered {code}"),
        None => {
            let without_urls = regex::Regex::new(r#"https?://[^\s"']+"#)
                .map(|pattern| pattern.replace_all(text, "(the endpoint)").into_owned())
                .unwrap_or_default();
            crate::text::quote(&without_urls)
        }
    }
}

/// A running exporter: its provider (which owns the batch thread) and counts.
pub struct Export {
    pub provider: SdkTracerProvider,
    pub stats: Arc<ExportStats>,
}

#[derive(Debug, thiserror::Error)]
#[error("traces: {0}")]
pub struct ExportSetupError(String);

pub fn start(config: &TraceConfig) -> Result<Export, ExportSetupError> {
    let client = super::client::BoundedClient::new(EXPORT_TIMEOUT)
        .map_err(|error| ExportSetupError(error.to_string()))?;
    let protocol = match config.protocol {
        Protocol::HttpProtobuf => opentelemetry_otlp::Protocol::HttpBinary,
        Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
    };
    let headers: HashMap<String, String> = config.headers.clone().into_iter().collect();
    let inner = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_endpoint(config.endpoint.clone())
        .with_protocol(protocol)
        .with_timeout(EXPORT_TIMEOUT)
        .with_headers(headers)
        .build()
        .map_err(|error| ExportSetupError(reason_of(&error.to_string())))?;
    let secrets: Vec<String> = config.headers.values().cloned().collect();
    let (redactor, _short) = Redactor::new(secrets.iter().map(|value| Secret {
        name: "OTEL_EXPORTER_OTLP_HEADERS",
        value,
    }));
    let stats = Arc::new(ExportStats::default());
    let exporter = CountingExporter {
        inner,
        stats: stats.clone(),
        shown_endpoint: config.shown_endpoint(),
        redactor: Arc::new(redactor),
    };
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(MAX_QUEUED_SPANS)
        .with_scheduled_delay(Duration::from_millis(500))
        .build();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batch)
        .build();
    let mut resource = Resource::builder_empty().with_service_name(config.service_name.clone());
    resource = resource.with_attributes(
        config
            .resource
            .iter()
            .map(|(key, value)| KeyValue::new(key.clone(), value.clone())),
    );
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource.build())
        .build();
    Ok(Export { provider, stats })
}

impl Export {
    /// Flushes (at most `FLUSH_AT_EXIT`) and says what was not exported.
    pub fn finish(self) {
        let _ = self.provider.shutdown_with_timeout(FLUSH_AT_EXIT);
        let offered = self.stats.offered.load(Ordering::Relaxed);
        let exported = self.stats.exported.load(Ordering::Relaxed);
        let failed = self.stats.failed.load(Ordering::Relaxed);
        let dropped = offered.saturating_sub(exported + failed);
        if failed + dropped > 0 {
            crate::text::eprintln_or_drop!(
                "note: {} of {offered} spans not exported ({failed} failed, {dropped} dropped: queue full or not flushed within {} s)",
                failed + dropped,
                FLUSH_AT_EXIT.as_secs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::reason_of;

    /// The exporter's own texts, as opentelemetry-otlp 0.31 writes them.
    #[test]
    fn an_export_failure_is_said_in_a_few_words_without_urls() {
        for (text, reason) in [
            (
                r#"Operation failed: reqwest::Error { kind: Status(500, None), url: "http://u:pw@127.0.0.1:1/v1/traces" }"#,
                "the receiver answered 500",
            ),
            (
                r#"HTTP export failed. Url: http://127.0.0.1:1/v1/traces, Status Code: 307, Response: b"""#,
                "the receiver answered 307: redirects are not followed",
            ),
            (
                "error sending request: Connection refused (os error 111)",
                "connection refused",
            ),
            (
                r#"unexpected: "http://u:pw@h/x" went away"#,
                r#"unexpected: "(the endpoint)" went away"#,
            ),
        ] {
            assert_eq!(reason_of(text), reason, "{text}");
        }
    }
}
