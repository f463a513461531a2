//! The one way a model or deployment client is built and talks about the
//! server: no redirects followed (a 3xx is an error naming its target), and
//! URLs and transport errors shown without userinfo or query.
//!
//! Why no redirects at all: reqwest's default policy re-sends the request
//! body and every header but `Authorization` and `Cookie` to wherever a
//! server points — Gemini's `x-goog-api-key` and a claim included. Neither
//! Google's API nor a deployment's `/api/chat` redirects a POST in normal
//! operation, so refusing costs nothing and keeps the key and the claim home.

use std::time::Duration;

use reqwest::Url;

/// A client for one kind of server: the connect timeout given, our user
/// agent, and no redirects followed. `tls` is false for a server reached
/// over plain `http://` (a local model, a mock) and no proxy
/// (`may_need_tls`): it is then given no trust
/// roots, whose loading (the system's certificate folder, file by file)
/// was most of a short eval's start-up; since no redirect is followed, it
/// never needs them, and an `https://` URL through it fails to verify
/// rather than going unchecked.
pub fn client(connect_timeout: Duration, tls: bool) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("promptlab/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .tls_built_in_root_certs(tls)
        .build()
}

/// Whether a server named by its shown URL (`shown_url`) may need TLS:
/// all but a plain `http://` URL — unless a proxy is set for such URLs,
/// which may itself be reached over TLS (reqwest takes `HTTP_PROXY` and
/// `ALL_PROXY`, in either case, from the environment).
pub fn may_need_tls(shown_url: &str) -> bool {
    !plain_http(shown_url) || http_proxy_set()
}

fn plain_http(shown_url: &str) -> bool {
    Url::parse(shown_url).is_ok_and(|url| url.scheme() == "http")
}

fn http_proxy_set() -> bool {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|value| !value.is_empty()))
}

/// `url` as it may be shown and recorded: no userinfo, query or fragment.
/// Text that is not a URL with a host is not shown at all (it may be a secret).
pub fn shown_url(text: &str) -> String {
    match Url::parse(text.trim()) {
        Ok(url) if url.has_host() => shown(&url),
        // `user:secret` parses as a URL of scheme `user`: not shown either.
        _ => "(a base URL without a host)".to_string(),
    }
}

/// `url` without userinfo, query or fragment.
pub fn shown(url: &Url) -> String {
    let mut safe = url.clone();
    // Fails only for URLs that cannot have a host (`data:`, `mailto:`),
    // which have no userinfo to remove either.
    let _ = safe.set_username("");
    let _ = safe.set_password(None);
    safe.set_query(None);
    safe.set_fragment(None);
    safe.to_string()
}

/// A server's base URL as the model-call cache's key names it: without
/// credentials, query or fragment (`shown`), or hashed when it is not a
/// URL, so that one server's answers are never served as another's.
pub fn endpoint_identity(base_url: &str) -> String {
    match Url::parse(base_url) {
        Ok(url) => shown(&url),
        Err(_) => crate::digest::sha256_hex(base_url),
    }
}

/// For a 3xx answer, the error that ends the call: `{who} answered 307 to
/// http://host/path: redirects are not followed`, the target resolved
/// against `requested` and shown without its query or userinfo.
pub fn redirect_message(who: &str, response: &reqwest::Response) -> Option<String> {
    let status = response.status();
    if !status.is_redirection() {
        return None;
    }
    let target = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .map(|location| match response.url().join(location.trim()) {
            Ok(url) => format!(" to {}", shown(&url)),
            Err(_) => " to a Location that is not a URL".to_string(),
        })
        .unwrap_or_default();
    Some(format!(
        "{who} answered {}{target}: redirects are not followed",
        status.as_u16()
    ))
}

/// A transport error and its causes, as one line, without the URL reqwest
/// attaches (it would show a base URL's query and password).
pub fn error_chain(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_http_server_goes_without_trust_roots() {
        assert!(plain_http("http://127.0.0.1:8788/"));
        assert!(plain_http("HTTP://localhost/v1"));
        assert!(!plain_http("https://generativelanguage.googleapis.com/"));
        assert!(!plain_http("(a base URL without a host)"));
    }

    #[test]
    fn shown_urls_carry_no_userinfo_query_or_fragment() {
        assert_eq!(
            shown_url("http://user:pa55word@127.0.0.1:9/base?key=k#f"),
            "http://127.0.0.1:9/base"
        );
        assert!(!shown_url("user:pa55word").contains("pa55word"));
    }
}
