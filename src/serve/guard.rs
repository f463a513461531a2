//! What `serve` trusts, checked before any route on every method (SPEC §13):
//!
//! - **Host**: a page whose name rebinds to 127.0.0.1 is same-origin to the
//!   browser, so CORS never protects the API; only a `Host` naming this
//!   machine's loopback, the address bound, or an `--allowed-host` is
//!   answered (403 otherwise, before anything is read or recorded).
//! - **Writes**: a cross-site page can POST without a preflight only as
//!   `text/plain`, a form or nothing; every POST must say
//!   `application/json` (415 otherwise), and one that carries an `Origin`
//!   must come from this server itself or a `--cors-origin` (403).
//! - **Errors**: every error answer, axum's own rejections included, is
//!   `{"error": …}` — but for hyper's answers to a head it cannot take
//!   (431, 414, 400 with no body), sent before any of our code runs, with
//!   no hook to change them (docs/serve.md, "Limits").

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::json_error;
use crate::text::quote;

/// The names every server answers to, whatever it is bound to.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Who may call the server.
#[derive(Debug, Clone)]
pub struct Trust {
    /// The specific address bound; `None` for a wildcard (`0.0.0.0`, `[::]`).
    bound: Option<IpAddr>,
    /// `--allowed-host` names, lower case.
    allowed_hosts: Vec<String>,
    /// `--cors-origin` origins, as browsers serialise them.
    cors_origins: Vec<String>,
}

/// A `--allowed-host` or `--cors-origin` that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error(
        "--cors-origin: `*` is refused: the API spends your model key, so name each origin (e.g. http://localhost:5173)"
    )]
    WildcardOrigin,
    #[error(
        "--cors-origin: `{}` is not an origin; expected scheme://host[:port], e.g. http://localhost:5173",
        quote(.0)
    )]
    BadOrigin(String),
    #[error(
        "--allowed-host: `{}` is not a host name; expected a name or an address without a port, e.g. lab.example.internal",
        quote(.0)
    )]
    BadHost(String),
}

impl Trust {
    /// The rules for a server bound to `bound`, with the names and origins given.
    pub fn new(
        bound: IpAddr,
        allowed_hosts: &[String],
        cors_origins: &[String],
    ) -> Result<Trust, TrustError> {
        Ok(Trust {
            bound: (!bound.is_unspecified()).then_some(bound),
            allowed_hosts: allowed_hosts
                .iter()
                .map(|host| parse_allowed_host(host))
                .collect::<Result<_, _>>()?,
            cors_origins: cors_origins
                .iter()
                .map(|origin| parse_origin(origin))
                .collect::<Result<_, _>>()?,
        })
    }

    /// The origins CORS answers for.
    pub fn cors_origins(&self) -> &[String] {
        &self.cors_origins
    }

    /// Whether a request's `Host` (any port) names this server.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_part(host).to_ascii_lowercase();
        if LOOPBACK_NAMES.contains(&name.as_str()) || self.allowed_hosts.contains(&name) {
            return true;
        }
        let address = name.trim_start_matches('[').trim_end_matches(']');
        match (self.bound, address.parse::<IpAddr>()) {
            (Some(bound), Ok(address)) => bound == address,
            _ => false,
        }
    }

    /// `Err` with the response that refuses the request, if it is refused.
    pub fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let refuse = |status, message| Err(Box::new(json_error(status, message)));
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let Some(host) = host.filter(|host| self.host_allowed(host)) else {
            let message = match host {
                Some(host) => {
                    let name = quote(host_part(host));
                    format!("Host `{name}` is not allowed; serve --allowed-host {name} allows it")
                }
                None => "a request needs a Host header naming this server".to_string(),
            };
            return refuse(StatusCode::FORBIDDEN, message);
        };
        if method != Method::POST {
            return Ok(());
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("").trim();
            if !self.origin_allowed(origin, host) {
                return refuse(StatusCode::FORBIDDEN, origin_refused(origin));
            }
        }
        let content_type = headers.get(header::CONTENT_TYPE);
        let is_json = content_type
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| {
                let essence = value.split(';').next().unwrap_or("").trim();
                essence.eq_ignore_ascii_case("application/json")
            });
        if !is_json {
            let got = match content_type {
                Some(value) => format!("`{}`", quote(&String::from_utf8_lossy(value.as_bytes()))),
                None => "none".to_string(),
            };
            let message =
                format!("a POST must be sent as Content-Type: application/json, got {got}");
            return refuse(StatusCode::UNSUPPORTED_MEDIA_TYPE, message);
        }
        Ok(())
    }

    /// Same-origin (`http://` + the accepted Host) or a `--cors-origin`.
    fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        origin == format!("http://{}", host.to_ascii_lowercase())
            || self.cors_origins.contains(&origin)
    }
}

fn origin_refused(origin: &str) -> String {
    if origin == "null" {
        return "Origin `null` (a sandboxed page, a file or a redirect) may not post here".into();
    }
    let origin = quote(origin);
    format!("Origin `{origin}` may not post here; serve --cors-origin {origin} allows it")
}

/// The middleware: refuses what `Trust::check` refuses, and makes every
/// error answer JSON.
pub async fn guard(State(trust): State<Arc<Trust>>, request: Request, next: Next) -> Response {
    if let Err(refused) = trust.check(request.method(), request.headers()) {
        return *refused;
    }
    as_json_error(next.run(request).await).await
}

/// An error answer that is not JSON (axum's rejections and 405s are plain
/// text or empty) as `{"error": …}` with the same status.
async fn as_json_error(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_string())
        .unwrap_or_default();
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    let mut json = json_error(status, message);
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(value) = parts.headers.get(&name) {
            json.headers_mut().insert(name, value.clone());
        }
    }
    json
}

/// `localhost:8787` → `localhost`; `[::1]:8787` → `[::1]`.
fn host_part(host: &str) -> &str {
    let host = host.trim();
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// A `--cors-origin`: `scheme://host[:port]` and nothing more, kept as a
/// browser writes it in `Origin` (lower case, no default port).
fn parse_origin(text: &str) -> Result<String, TrustError> {
    let text = text.trim();
    if text == "*" {
        return Err(TrustError::WildcardOrigin);
    }
    let bad = || TrustError::BadOrigin(text.to_string());
    let (_, rest) = text.split_once("://").ok_or_else(bad)?;
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', '*']) {
        return Err(bad());
    }
    let url = reqwest::Url::parse(text).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad());
    }
    Ok(url.origin().ascii_serialization())
}

/// A `--allowed-host`: a DNS name, an IPv4 address or a bracketed IPv6
/// address, without a port.
fn parse_allowed_host(text: &str) -> Result<String, TrustError> {
    let name = text.trim().to_ascii_lowercase();
    let bad = || TrustError::BadHost(text.to_string());
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return match inner.parse::<std::net::Ipv6Addr>() {
            Ok(_) => Ok(name),
            Err(_) => Err(bad()),
        };
    }
    let labels_ok = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    if name.is_empty() || name.len() > 253 || !labels_ok {
        return Err(bad());
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(bound: &str) -> Trust {
        Trust::new(bound.parse().unwrap(), &["lab.example".into()], &[]).unwrap()
    }

    #[test]
    fn loopback_names_the_bound_address_and_allowed_hosts_are_answered() {
        let local = trust("127.0.0.1");
        for host in [
            "localhost",
            "LOCALHOST:1",
            "127.0.0.1:8787",
            "[::1]:9",
            "lab.example:80",
        ] {
            assert!(local.host_allowed(host), "{host}");
        }
        for host in [
            "evil.example.com",
            "localhost.evil",
            "127.0.0.2",
            "[::2]",
            "",
            "a:b:c",
        ] {
            assert!(!local.host_allowed(host), "{host}");
        }
        assert!(trust("192.168.1.5").host_allowed("192.168.1.5:8787"));
        assert!(
            !trust("0.0.0.0").host_allowed("0.0.0.0:8787"),
            "a wildcard is no name"
        );
        assert!(!trust("0.0.0.0").host_allowed("192.168.1.5"));
    }

    #[test]
    fn origins_must_be_scheme_host_and_port() {
        assert_eq!(
            parse_origin("http://LocalHost:5173"),
            Ok("http://localhost:5173".into())
        );
        assert_eq!(
            parse_origin("https://a.example:443"),
            Ok("https://a.example".into())
        );
        assert_eq!(parse_origin("*"), Err(TrustError::WildcardOrigin));
        for bad in [
            "not a url",
            "http://a/",
            "http://a/x",
            "ftp://a",
            "http://u@a",
            "http://",
            "a.example",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn allowed_hosts_are_names_or_addresses_without_ports() {
        assert_eq!(parse_allowed_host("Lab.Example"), Ok("lab.example".into()));
        assert!(parse_allowed_host("10.0.0.1").is_ok());
        assert!(parse_allowed_host("[fe80::1]").is_ok());
        for bad in ["", "lab:80", "*", "a..b", "[zz]", "a b"] {
            assert!(parse_allowed_host(bad).is_err(), "{bad}");
        }
    }
}
