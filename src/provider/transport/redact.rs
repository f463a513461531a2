//! The one redaction step for everything a server sends back that can reach
//! output, a run log or the cache: known secrets — the Gemini key, the
//! endpoint token, the userinfo of a base URL — become `[redacted]`, as
//! given and in their URL-encoded forms (a server quoting a request URL
//! sends them encoded).
//!
//! A secret shorter than `MIN_SECRET_CHARS` is not redacted: replacing every
//! occurrence of a 3-letter password would mangle ordinary words and still
//! tell a reader which ones. The caller says so once on stderr.

use std::borrow::Cow;
use std::sync::Arc;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// What a secret becomes.
pub const REDACTED: &str = "[redacted]";
/// The shortest secret that is redacted.
pub const MIN_SECRET_CHARS: usize = 8;

/// Replaces known secrets in text. Cheap to clone (shared needles).
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every form of every secret, longest first, so that a secret that
    /// contains another is replaced whole.
    needles: Arc<Vec<String>>,
}

/// Debug never shows the secrets.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} forms)", self.needles.len())
    }
}

/// A secret and the name a warning uses for it.
#[derive(Clone, Copy)]
pub struct Secret<'a> {
    pub name: &'a str,
    pub value: &'a str,
}

impl Redactor {
    /// A redactor for `secrets`, and a warning for each one too short to
    /// redact (empty secrets are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = Secret<'a>>) -> (Redactor, Vec<String>) {
        let mut needles = Vec::new();
        let mut warnings = Vec::new();
        for secret in secrets {
            let value = secret.value.trim();
            if value.is_empty() {
                continue;
            }
            if value.chars().count() < MIN_SECRET_CHARS {
                warnings.push(short_secret_warning(secret.name));
                continue;
            }
            needles.extend(forms(value));
        }
        needles.sort_by_key(|needle| std::cmp::Reverse(needle.len()));
        needles.dedup();
        let redactor = Redactor {
            needles: Arc::new(needles),
        };
        (redactor, warnings)
    }

    /// `text` with every known secret replaced by `[redacted]`.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if !self
            .needles
            .iter()
            .any(|needle| text.contains(needle.as_str()))
        {
            return Cow::Borrowed(text);
        }
        let mut redacted = text.to_string();
        for needle in self.needles.iter() {
            if redacted.contains(needle.as_str()) {
                redacted = redacted.replace(needle.as_str(), REDACTED);
            }
        }
        Cow::Owned(redacted)
    }

    /// `redact` for an owned string, which is returned as is (no copy)
    /// when it holds no secret.
    pub fn redact_owned(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// Whether anything is redacted at all.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }
}

/// The secrets in a URL's userinfo, decoded as they were meant.
pub fn url_userinfo(url: &reqwest::Url) -> Vec<String> {
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut found = Vec::new();
    if !url.username().is_empty() {
        found.push(decode(url.username()));
    }
    if let Some(password) = url.password() {
        found.push(decode(password));
    }
    found
}

/// The warning for a secret too short to redact.
pub fn short_secret_warning(name: &str) -> String {
    format!(
        "warning: {name} is shorter than {MIN_SECRET_CHARS} characters, too short to redact safely: \
         a server that echoes it will have it shown and recorded"
    )
}

/// A secret as given, percent-encoded (`%2B`) and form-encoded (`+` for a
/// space), in both hex cases.
fn forms(value: &str) -> Vec<String> {
    let encoded = utf8_percent_encode(value, NON_ALPHANUMERIC).to_string();
    // Unreserved characters (`-`, `.`, `_`, `~`) left as they are, as URL
    // libraries write them.
    let unreserved = utf8_percent_encode(value, &UNRESERVED_KEPT).to_string();
    let form = unreserved.replace("%20", "+");
    let lower = lower_hex(&encoded);
    vec![value.to_string(), encoded, unreserved, form, lower]
}

/// Percent-encode everything but the unreserved characters of RFC 3986.
const UNRESERVED_KEPT: percent_encoding::AsciiSet = NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `%2B` → `%2b`: some servers write escapes in lower case.
fn lower_hex(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut chars = encoded.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            out.extend(chars.by_ref().take(2).map(|h| h.to_ascii_lowercase()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(values: &[&str]) -> (Redactor, Vec<String>) {
        Redactor::new(values.iter().map(|value| Secret {
            name: "SECRET",
            value,
        }))
    }

    #[test]
    fn secrets_and_their_encoded_forms_are_redacted() {
        let (redactor, warnings) = redactor(&["AIza+key/with space~x"]);
        assert!(warnings.is_empty());
        for form in [
            "AIza+key/with space~x",
            "AIza%2Bkey%2Fwith%20space%7Ex",
            "AIza%2bkey%2fwith%20space%7ex",
            "AIza%2Bkey%2Fwith+space~x",
            "AIza%2Bkey%2Fwith%20space~x",
        ] {
            let text = format!("API key not valid: {form}.");
            assert_eq!(
                redactor.redact(&text),
                "API key not valid: [redacted].",
                "{form}"
            );
        }
    }

    #[test]
    fn short_secrets_are_named_not_redacted() {
        let (redactor, warnings) = redactor(&["abc", "", "  "]);
        assert!(redactor.is_empty());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("SECRET is shorter than 8 characters"));
        assert_eq!(redactor.redact("abc"), "abc");
    }

    #[test]
    fn the_longer_secret_wins_when_one_contains_another() {
        let (redactor, _) = redactor(&["password", "password-and-more"]);
        assert_eq!(redactor.redact("x password-and-more y"), "x [redacted] y");
    }

    #[test]
    fn userinfo_is_decoded() {
        let url = reqwest::Url::parse("http://us%20er:p%40ss@host/").unwrap();
        assert_eq!(url_userinfo(&url), ["us er", "p@ss"]);
    }
}
