//! Whether and where traces go, from the standard OpenTelemetry variables
//! (the OTLP exporter specification's names and defaults), read once:
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as given) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`); `OTEL_EXPORTER_OTLP_PROTOCOL`
//! (`http/protobuf`, the default, or `http/json`; gRPC is not built in);
//! `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values URL-decoded: a token —
//! never printed or recorded); `OTEL_SERVICE_NAME` (default `promptlab`);
//! `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_SDK_DISABLED=true` turns it all off;
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` adds prompts and
//! messages; `TRACEPARENT` (or `--trace-parent`) joins a parent trace.

use std::collections::BTreeMap;

/// What the exporter sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    HttpProtobuf,
    HttpJson,
}

/// A W3C `traceparent`: the trace and span every root span is a child of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub sampled: bool,
}

#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// The full traces URL, e.g. `http://localhost:4318/v1/traces`.
    pub endpoint: String,
    pub protocol: Protocol,
    /// Sent with every export; never shown.
    pub headers: BTreeMap<String, String>,
    pub service_name: String,
    pub resource: Vec<(String, String)>,
    pub capture_content: bool,
    pub parent: Option<TraceParent>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "OTEL_EXPORTER_OTLP_PROTOCOL: `{0}` is not supported; use http/protobuf (the default) or http/json"
    )]
    Protocol(String),
    #[error("{name}: `{value}` is not an http:// or https:// URL")]
    Endpoint { name: &'static str, value: String },
    #[error("OTEL_EXPORTER_OTLP_HEADERS: `{0}` is not key=value")]
    Header(String),
    /// Never with the value, which may be a token.
    #[error(
        "{name}: `{key}` is not a header, or its value decodes to what a header cannot hold (a line break or another control character)"
    )]
    HeaderText { name: &'static str, key: String },
    #[error("{0}: not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")]
    TraceParent(&'static str),
}

impl TraceConfig {
    /// The configuration `env` describes; `Ok(None)` when no endpoint is
    /// set (or the SDK is disabled): then tracing costs nothing.
    /// `trace_parent` is `--trace-parent`, which wins over `TRACEPARENT`.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        trace_parent: Option<&str>,
    ) -> Result<Option<TraceConfig>, ConfigError> {
        let set = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let endpoint = match (
            set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            set("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(url), _) => checked_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url)?,
            (None, Some(base)) => signal_url(&checked_url("OTEL_EXPORTER_OTLP_ENDPOINT", base)?),
            (None, None) => return Ok(None),
        };
        let protocol = match set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .as_deref()
            .map(str::trim)
        {
            None | Some("http/protobuf") => Protocol::HttpProtobuf,
            Some("http/json") => Protocol::HttpJson,
            Some(other) => return Err(ConfigError::Protocol(crate::text::quote(other))),
        };
        let mut headers = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            headers.extend(checked_headers(name, set(name).as_deref())?);
        }
        let parent = match trace_parent {
            Some(text) => {
                Some(parse_trace_parent(text).ok_or(ConfigError::TraceParent("--trace-parent"))?)
            }
            None => match set("TRACEPARENT") {
                Some(text) => {
                    Some(parse_trace_parent(&text).ok_or(ConfigError::TraceParent("TRACEPARENT"))?)
                }
                None => None,
            },
        };
        Ok(Some(TraceConfig {
            endpoint,
            protocol,
            headers: headers.into_iter().collect(),
            service_name: set("OTEL_SERVICE_NAME").unwrap_or_else(|| "promptlab".to_string()),
            resource: key_values(set("OTEL_RESOURCE_ATTRIBUTES").as_deref()).unwrap_or_default(),
            capture_content: set("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            parent,
        }))
    }

    /// The endpoint as messages show it: without userinfo or query.
    pub fn shown_endpoint(&self) -> String {
        crate::provider::transport::client::shown_url(&self.endpoint)
    }
}

fn checked_url(name: &'static str, value: String) -> Result<String, ConfigError> {
    let value = value.trim().to_string();
    match reqwest::Url::parse(&value) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(value),
        _ => Err(ConfigError::Endpoint {
            name,
            value: crate::provider::transport::client::shown_url(&crate::text::quote(&value)),
        }),
    }
}

/// The endpoint for traces under a base endpoint: `/v1/traces` added to
/// its path (the exporter specification's rule), its query kept after it.
fn signal_url(base: &str) -> String {
    match reqwest::Url::parse(base) {
        Ok(mut url) => {
            let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
            url.set_path(&path);
            url.to_string()
        }
        Err(_) => format!("{}/v1/traces", base.trim_end_matches('/')),
    }
}

/// A headers variable's pairs, each one a header an HTTP request can
/// carry: a header silently left out would send traces without their
/// credentials.
fn checked_headers(
    name: &'static str,
    text: Option<&str>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let pairs = key_values(text)?;
    for (key, value) in &pairs {
        let name_ok = reqwest::header::HeaderName::from_bytes(key.as_bytes()).is_ok();
        if !name_ok || reqwest::header::HeaderValue::from_str(value).is_err() {
            return Err(ConfigError::HeaderText {
                name,
                key: crate::text::quote(key),
            });
        }
    }
    Ok(pairs)
}

/// `k=v,k2=v2` (the W3C baggage form the OTLP variables use), values
/// percent-decoded.
fn key_values(text: Option<&str>) -> Result<Vec<(String, String)>, ConfigError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let mut pairs = Vec::new();
    for item in text
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let Some((key, value)) = item.split_once('=') else {
            // Only the key is quoted: the value may be a token.
            let key = item.split(':').next().unwrap_or_default();
            return Err(ConfigError::Header(crate::text::quote(key)));
        };
        let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
        pairs.push((key.trim().to_string(), value.into_owned()));
    }
    Ok(pairs)
}

/// `00-<trace id>-<span id>-<flags>`, lowercase hex, ids not all zero.
pub fn parse_trace_parent(text: &str) -> Option<TraceParent> {
    let parts: Vec<&str> = text.trim().split('-').collect();
    let [version, trace, span, flags] = parts.as_slice() else {
        return None;
    };
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !(hex(version, 2) && *version != "ff" && hex(trace, 32) && hex(span, 16) && hex(flags, 2)) {
        return None;
    }
    let mut trace_id = [0u8; 16];
    let mut span_id = [0u8; 8];
    data_encoding::HEXLOWER
        .decode_mut(trace.as_bytes(), &mut trace_id)
        .ok()?;
    data_encoding::HEXLOWER
        .decode_mut(span.as_bytes(), &mut span_id)
        .ok()?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(TraceParent {
        trace_id,
        span_id,
        sampled: flags & 1 == 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<TraceConfig>, ConfigError> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TraceConfig::from_env(&|name| vars.get(name).cloned(), None)
    }

    #[test]
    fn off_without_an_endpoint_and_the_spec_defaults_otherwise() {
        assert!(config(&[]).unwrap().is_none());
        assert!(
            config(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:4318"),
                ("OTEL_SDK_DISABLED", "true")
            ])
            .unwrap()
            .is_none()
        );
        let on = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(on.endpoint, "http://x:4318/v1/traces");
        assert_eq!(on.protocol, Protocol::HttpProtobuf);
        assert_eq!(on.service_name, "promptlab");
        let traces = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://y/custom"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20s3cret, x-team = lab",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(traces.endpoint, "http://y/custom");
        assert_eq!(traces.protocol, Protocol::HttpJson);
        assert_eq!(traces.headers["Authorization"], "Bearer s3cret");
        assert_eq!(traces.headers["x-team"], "lab");
    }

    #[test]
    fn bad_values_are_errors_that_never_show_a_header_value() {
        let grpc = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert_eq!(
            grpc.unwrap_err().to_string(),
            "OTEL_EXPORTER_OTLP_PROTOCOL: `grpc` is not supported; use http/protobuf (the default) or http/json"
        );
        let header = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "Authorization:Bearer s3cret"),
        ]);
        let message = header.unwrap_err().to_string();
        assert!(!message.contains("s3cret"), "{message}");
        assert!(config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")]).is_err());
    }

    #[test]
    fn a_header_that_decodes_to_what_no_request_can_carry_is_refused() {
        for (variable, headers, key) in [
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%0aBAD-s3cret",
                "Authorization",
            ),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "a=1,Authorization=x%0d%0aX-Injected: 1",
                "Authorization",
            ),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                "Authorization=s3cret%00z",
                "Authorization",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "=s3cret", ""),
            ("OTEL_EXPORTER_OTLP_HEADERS", "bad key=s3cret", "bad key"),
        ] {
            let refused = config(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
                (variable, headers),
            ]);
            let message = refused.unwrap_err().to_string();
            assert_eq!(
                message,
                format!(
                    "{variable}: `{key}` is not a header, or its value decodes to what a header \
                     cannot hold (a line break or another control character)"
                )
            );
        }
        let fine = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20tok%2Fen",
            ),
        ]);
        let headers = fine.unwrap().unwrap().headers;
        assert_eq!(headers["Authorization"], "Bearer tok/en");
    }

    #[test]
    fn the_signal_path_goes_on_the_path_before_a_query() {
        for (base, traces) in [
            ("http://x:4318/base?x=1", "http://x:4318/base/v1/traces?x=1"),
            ("http://x:4318/base/", "http://x:4318/base/v1/traces"),
            ("https://x", "https://x/v1/traces"),
        ] {
            let on = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", base)])
                .unwrap()
                .unwrap();
            assert_eq!(on.endpoint, traces, "{base}");
        }
    }

    #[test]
    fn trace_parents_follow_the_w3c_form() {
        let parent =
            parse_trace_parent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(
            parent.span_id,
            [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert!(parent.sampled);
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "",
        ] {
            assert!(parse_trace_parent(bad).is_none(), "{bad}");
        }
    }
}
