//! The deployment's URL: checked once, sent as given, and shown or
//! recorded only without its secrets (userinfo, query, fragment).

use reqwest::Url;

/// A checked `--endpoint`.
#[derive(Clone)]
pub struct Endpoint {
    /// What requests go to, credentials and all.
    url: Url,
    /// What messages and run logs show.
    shown: String,
}

/// Why an `--endpoint` is unusable. The URL itself is never quoted: it may
/// carry a password or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("--endpoint: not a URL ({0}); expected e.g. https://staging.example.com/api/chat")]
    NotUrl(String),
    #[error("--endpoint: the scheme must be http or https, got `{}`", crate::text::quote(.0))]
    Scheme(String),
    #[error("--endpoint: the URL has no host")]
    NoHost,
}

impl Endpoint {
    /// Parses `text`. A URL with no path (or just `/`) means the
    /// deployment's `/api/chat`, as `promptlab serve` and production serve it.
    pub fn parse(text: &str) -> Result<Endpoint, EndpointError> {
        let mut url =
            Url::parse(text.trim()).map_err(|error| EndpointError::NotUrl(error.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(EndpointError::Scheme(url.scheme().to_string()));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(EndpointError::NoHost);
        }
        if url.path() == "/" || url.path().is_empty() {
            url.set_path("/api/chat");
        }
        let shown = crate::provider::transport::shown(&url);
        Ok(Endpoint { url, shown })
    }

    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The URL without userinfo, query or fragment: safe to print and record.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// Debug shows only the safe form, so no `{:?}` can leak a secret.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Endpoint").field(&self.shown).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_reach_the_shown_form() {
        let endpoint =
            Endpoint::parse("https://user:s3cret@staging.example.com/api/chat?key=k3y#frag")
                .unwrap();
        assert_eq!(endpoint.shown(), "https://staging.example.com/api/chat");
        assert!(!format!("{endpoint:?}").contains("s3cret"));
        assert!(endpoint.url().as_str().contains("key=k3y"), "sent as given");
    }

    #[test]
    fn a_bare_host_means_its_api_chat() {
        let endpoint = Endpoint::parse("http://127.0.0.1:8787").unwrap();
        assert_eq!(endpoint.shown(), "http://127.0.0.1:8787/api/chat");
        let custom = Endpoint::parse("http://127.0.0.1:8787/v2/chat").unwrap();
        assert_eq!(custom.shown(), "http://127.0.0.1:8787/v2/chat");
    }

    #[test]
    fn bad_endpoints_are_named_without_quoting_secrets() {
        let not_url = Endpoint::parse("staging:s3cret").unwrap_err().to_string();
        assert!(!not_url.contains("s3cret"), "{not_url}");
        assert!(matches!(
            Endpoint::parse("ftp://host/x"),
            Err(EndpointError::Scheme(_))
        ));
        assert!(Endpoint::parse("").is_err());
        assert!(Endpoint::parse("http://").is_err());
    }
}
