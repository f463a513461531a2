//! Where a provider's model server is and the key it is asked with: one
//! type for Gemini's and OpenAI-compatible configs, whose `Debug` and
//! `Display` never show the key nor the base URL's credentials, query or
//! fragment (`transport::shown_url`), so that no log line or error built
//! from a config can carry a secret.

/// A model server's base URL and API key.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// As given (`GEMINI_BASE_URL`, `OPENAI_BASE_URL`, a suite's `baseUrl`):
    /// it may hold credentials, so it is shown only through `Display`.
    pub base_url: String,
    pub api_key: Option<String>,
}

impl Endpoint {
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Endpoint {
        Endpoint {
            base_url: base_url.into(),
            api_key,
        }
    }
}

/// The base URL as it may be shown.
impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&super::transport::shown_url(&self.base_url))
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("base_url", &super::transport::shown_url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neither_form_shows_the_key_or_the_url_s_secrets() {
        let endpoint = Endpoint::new(
            "https://user:url-secret@example.com/v1?key=query-secret#frag",
            Some("key-secret".into()),
        );
        for shown in [format!("{endpoint}"), format!("{endpoint:?}")] {
            for secret in ["url-secret", "query-secret", "key-secret", "frag"] {
                assert!(!shown.contains(secret), "{secret} in {shown}");
            }
            assert!(shown.contains("example.com/v1"), "{shown}");
        }
    }
}
