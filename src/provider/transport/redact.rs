//! The one redaction step for everything a server sends back that can reach
//! output, a run log or the cache: known secrets — the Gemini key, the
//! endpoint token, the userinfo of a base URL and the Basic credential made
//! of it, the credentials in an endpoint's query — become `[redacted]`, as given,
//! in their URL-encoded forms (a server quoting a request URL sends them
//! encoded) and JSON-escaped: what a server sends is JSON, which may write
//! any character as `\uXXXX` and `/` as `\/`, so a secret is looked for in
//! the text with those escapes read (`unescape_printable`), and the protocol
//! that decodes the item later sees no secret either.
//!
//! A secret shorter than `MIN_SECRET_CHARS` is not redacted: replacing every
//! occurrence of a 3-letter password would mangle ordinary words and still
//! tell a reader which ones. The caller says so once on stderr.

use std::borrow::Cow;
use std::sync::Arc;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
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

    /// `text` with every known secret replaced by `[redacted]`: as it is
    /// written, then as it reads with its JSON escapes of printable
    /// characters read, which changes no JSON value it writes. Text that
    /// holds no secret either way is returned as it came.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.needles.is_empty() {
            return Cow::Borrowed(text);
        }
        let plain = self.replace_secrets(Cow::Borrowed(text));
        match unescape_printable(&plain) {
            Some(unescaped) if self.holds_secret(&unescaped) => {
                self.replace_secrets(Cow::Owned(unescaped))
            }
            _ => plain,
        }
    }

    fn holds_secret(&self, text: &str) -> bool {
        self.needles
            .iter()
            .any(|needle| text.contains(needle.as_str()))
    }

    fn replace_secrets<'t>(&self, text: Cow<'t, str>) -> Cow<'t, str> {
        if !self.holds_secret(&text) {
            return text;
        }
        let mut redacted = text.into_owned();
        for needle in self.needles.iter() {
            if redacted.contains(needle.as_str()) {
                redacted = replace_whole(&redacted, needle);
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

    /// Every string inside `value` (object keys too) redacted in place:
    /// what a call assembles (`providerState`, a tool call's arguments) is
    /// redacted as a whole before it is recorded, cached or traced, even
    /// when it arrived in pieces none of which held a secret.
    pub fn redact_value(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(text) => *text = self.redact_owned(std::mem::take(text)),
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_value(item)),
            Value::Object(map) => {
                let holds_key = map.keys().any(|key| self.redact(key) != key.as_str());
                if holds_key {
                    let entries = std::mem::take(map);
                    for (key, item) in entries {
                        map.insert(self.redact_owned(key), item);
                    }
                }
                map.values_mut().for_each(|item| self.redact_value(item));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// How many bytes of `text`'s end could be the start of a secret (in
    /// any of its forms) that the next piece completes; with a JSON escape
    /// among them, which the redaction reads, the longest escaped form.
    fn open_tail(&self, text: &str) -> usize {
        let longest = self.needles.first().map_or(0, String::len);
        let window = text.len().min(longest.saturating_mul(6));
        let mut start = text.len() - window;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        if text[start..].contains('\\') {
            return text.len() - start;
        }
        self.needles
            .iter()
            .filter_map(|needle| {
                (1..needle.len().min(text.len() + 1))
                    .rev()
                    .filter(|&k| needle.is_char_boundary(k))
                    .find(|&k| text.ends_with(&needle[..k]))
            })
            .max()
            .unwrap_or(0)
    }
}

/// Redaction over a stream of text pieces rather than each piece alone: a
/// server can echo a secret over two events, neither of which holds it.
/// What could be the start of a secret is held back until the next piece
/// proves it is not one (or completes it, and it is redacted), and given
/// out at the end, so that the pieces given out, joined, hold no secret.
#[derive(Debug, Clone, Default)]
pub struct StreamRedactor {
    redactor: Redactor,
    /// Redacted text not given out yet: a possible start of a secret.
    held: String,
}

impl StreamRedactor {
    pub fn new(redactor: Redactor) -> StreamRedactor {
        StreamRedactor {
            redactor,
            held: String::new(),
        }
    }

    /// The text of `piece` that can be given out now (perhaps empty).
    pub fn push(&mut self, piece: &str) -> String {
        if self.redactor.is_empty() {
            return piece.to_string();
        }
        self.held.push_str(piece);
        let redacted = self.redactor.redact_owned(std::mem::take(&mut self.held));
        let cut = redacted.len() - self.redactor.open_tail(&redacted);
        self.held = redacted[cut..].to_string();
        let mut out = redacted;
        out.truncate(cut);
        out
    }

    /// What is still held back, at the end of the text (it is no secret:
    /// no more text can complete one).
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// `text` with each `needle` replaced by `[redacted]`; one that begins
/// inside an escape (after the backslash of `\/`, among the digits of
/// `\u0030`) takes the escape with it, so that JSON stays JSON
/// (`\u003[redacted]` is not an escape) and plain text loses a few
/// characters, never the redaction.
fn replace_whole(text: &str, needle: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, _) in text.match_indices(needle) {
        let start = escape_around(text, at).unwrap_or(at).max(copied);
        out.push_str(&text[copied..start]);
        out.push_str(REDACTED);
        copied = at + needle.len();
    }
    out.push_str(&text[copied..]);
    out
}

/// Where the escape that byte `at` falls inside begins, if it falls inside
/// one: an escape is a backslash that is not itself escaped, with one more
/// character, or with `u` and four more.
fn escape_around(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let start = (at.saturating_sub(5)..at)
        .rev()
        .find(|&i| bytes[i] == b'\\')?;
    let escaped = bytes[..start]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1;
    let length = if bytes.get(start + 1) == Some(&b'u') {
        6
    } else {
        2
    };
    (!escaped && at < start + length).then_some(start)
}

/// The secrets a URL carries, each with the name a warning gives it
/// (`setting` names the URL): its user name and password, decoded as they
/// were meant (warned about when too short to redact); the `Basic`
/// credential an HTTP client makes of them for the `Authorization` header
/// (a server echoing its request's head shows it); and the values of its
/// query whose names say they are credentials (`token`, `key`, `sig`, …).
/// The last two are kept only when long enough to redact, without a
/// warning: the first are warned about, and a query value is not declared
/// a secret. Other query values (`stage=production`) are left alone: they
/// are common words, and redacting them would rewrite answers.
pub fn url_secrets(url: &reqwest::Url, setting: &str) -> Vec<(String, String)> {
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    let user = decode(url.username());
    let password = url.password().map(decode);
    let mut derived = Vec::new();
    if !user.is_empty() || password.is_some() {
        let credential = format!("{user}:{}", password.as_deref().unwrap_or(""));
        derived.push((
            format!("the Basic credential of {setting}"),
            BASE64_STANDARD.encode(credential),
        ));
    }
    for (name, value) in url.query_pairs() {
        if names_a_credential(&name) {
            derived.push((
                format!("the query's `{name}` in {setting}"),
                value.into_owned(),
            ));
        }
    }
    derived.retain(|(_, value)| value.trim().chars().count() >= MIN_SECRET_CHARS);
    let mut found = Vec::new();
    if !user.is_empty() {
        found.push((format!("the user name in {setting}"), user));
    }
    if let Some(password) = password {
        found.push((format!("the password in {setting}"), password));
    }
    found.extend(derived);
    found
}

/// A redactor of every secret this process was given, as `read` gives the
/// environment: the model keys, the deployment's token, the credentials in
/// the base URLs and the endpoint, the OTLP headers' values. For messages
/// that quote files and flags rather than a server (a suite, `casesFrom`,
/// a claim), which a clients' redactor never sees: `casesFrom: .env`
/// must not print the process's own key as a column name.
pub fn process_redactor(read: impl Fn(&str) -> Option<String>) -> Redactor {
    let mut secrets: Vec<(String, String)> = Vec::new();
    for name in [
        "GEMINI_API_KEY",
        "OPENAI_API_KEY",
        "PROMPTLAB_ENDPOINT_TOKEN",
    ] {
        if let Some(value) = read(name) {
            secrets.push((name.to_string(), value));
        }
    }
    for name in ["GEMINI_BASE_URL", "OPENAI_BASE_URL", "PROMPTLAB_ENDPOINT"] {
        if let Some(url) = read(name).and_then(|url| reqwest::Url::parse(url.trim()).ok()) {
            secrets.extend(url_secrets(&url, name));
        }
    }
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        let headers = read(name).unwrap_or_default();
        for (_, value) in headers.split(',').filter_map(|pair| pair.split_once('=')) {
            let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
            secrets.push((name.to_string(), value.into_owned()));
        }
    }
    let (redactor, _short) =
        Redactor::new(secrets.iter().map(|(name, value)| Secret { name, value }));
    redactor
}

/// A query parameter whose name says it carries a credential.
fn names_a_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key",
        "token",
        "secret",
        "pass",
        "pwd",
        "sig",
        "auth",
        "session",
        "credential",
        "code",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// The warning for a secret too short to redact.
pub fn short_secret_warning(name: &str) -> String {
    format!(
        "warning: {name} is shorter than {MIN_SECRET_CHARS} characters, too short to redact safely: \
         a server that echoes it will have it shown and recorded"
    )
}

/// A secret as given, percent-encoded (`%2B`) and form-encoded (`+` for a
/// space), in both hex cases, and as a JSON string writes it (`"` and `\`
/// escaped, the two characters `unescape_printable` leaves escaped).
fn forms(value: &str) -> Vec<String> {
    let encoded = utf8_percent_encode(value, NON_ALPHANUMERIC).to_string();
    // Unreserved characters (`-`, `.`, `_`, `~`) left as they are, as URL
    // libraries write them.
    let unreserved = utf8_percent_encode(value, &UNRESERVED_KEPT).to_string();
    let form = unreserved.replace("%20", "+");
    let lower = lower_hex(&encoded);
    let json = value.replace('\\', "\\\\").replace('"', "\\\"");
    vec![value.to_string(), encoded, unreserved, form, lower, json]
}

/// `text` with each JSON escape of a printable character written as the
/// character (`\u0053` → `S`, a surrogate pair → its character, `\/` →
/// `/`), but `"` and `\` in their short escapes (`\u0022` → `\"`); escapes
/// of control characters, and anything that is not an escape, left as they
/// are; `None` when there is no escape to read. A JSON document stays one,
/// with the same values; text that is not JSON is only read differently
/// where it has such escapes.
fn unescape_printable(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    // `text[..copied]` is in `out`; the search goes on from `at`.
    let (mut copied, mut at) = (0, 0);
    while let Some(found) = text[at..].find('\\') {
        let start = at + found;
        let (read, taken) = read_escape(&text[start..]);
        if let Some(c) = read {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..start]);
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
            copied = start + taken;
        }
        at = start + taken;
    }
    let mut out = out?;
    out.push_str(&text[copied..]);
    Some(out)
}

/// The escape at the start of `escape` (which starts with `\`): the
/// printable character it stands for, if it is to be read, and how many
/// bytes it takes. A `\` followed by anything takes two bytes at least, so
/// that `\\u0053` stays an escaped backslash and the text `u0053`.
fn read_escape(escape: &str) -> (Option<char>, usize) {
    let bytes = escape.as_bytes();
    match bytes.get(1) {
        None => (None, 1),
        Some(b'/') => (Some('/'), 2),
        Some(b'u') => match hex_unit(escape, 2) {
            Some(high @ 0xD800..=0xDBFF) if escape.get(6..8) == Some("\\u") => {
                match hex_unit(escape, 8) {
                    Some(low @ 0xDC00..=0xDFFF) => {
                        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        (char::from_u32(code).filter(|c| readable(*c)), 12)
                    }
                    _ => (None, 6),
                }
            }
            Some(unit) => (char::from_u32(unit).filter(|c| readable(*c)), 6),
            None => (None, 2),
        },
        Some(_) => (
            None,
            1 + escape[1..].chars().next().map_or(0, char::len_utf8),
        ),
    }
}

/// The code unit written in the four hex digits at `at`, if they are.
fn hex_unit(escape: &str, at: usize) -> Option<u32> {
    let digits = escape.get(at..at + 4)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// A character an escape may be read as: not a control character, which
/// a JSON string must escape and a secret cannot hold.
fn readable(c: char) -> bool {
    !c.is_control()
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
    fn secrets_a_json_writer_escapes_are_redacted() {
        let (redactor, _) = redactor(&["SECRET-canary-1234", "ab/cd+with\"quote"]);
        for (text, redacted) in [
            (
                r#"{"t":"\u0053ECRET-canary-1234"}"#,
                r#"{"t":"[redacted]"}"#,
            ),
            (
                r#"{"t":"\u0053\u0045CRET\u002dcanary-1234!"}"#,
                r#"{"t":"[redacted]!"}"#,
            ),
            (r#"{"t":"ab\/cd+with\"quote"}"#, r#"{"t":"[redacted]"}"#),
            (
                r#"{"t":"ab\u002fcd+with\u0022quote"}"#,
                r#"{"t":"[redacted]"}"#,
            ),
        ] {
            assert_eq!(redactor.redact(text), redacted, "{text}");
        }
        // A secret that begins where an escape's backslash ends takes the
        // backslash with it: JSON stays JSON, plain text keeps no secret.
        let (slash, _) = Redactor::new([Secret {
            name: "S",
            value: "/a0a0!AA-tail",
        }]);
        assert_eq!(
            slash.redact(r#"{"t":"x\/a0a0!AA-tail"}"#),
            r#"{"t":"x[redacted]"}"#
        );
        assert_eq!(slash.redact(r"C:\/a0a0!AA-tail"), "C:[redacted]");
        assert_eq!(slash.redact(r"C:\\/a0a0!AA-tail"), r"C:\\[redacted]");
        let (digits, _) = Redactor::new([Secret {
            name: "S",
            value: "0AA0AAa!",
        }]);
        assert_eq!(
            digits.redact(r#"{"t":"\u0030AA0AAa!"}"#),
            r#"{"t":"[redacted]"}"#
        );
        // Escapes that hide no secret are left as they came.
        let plain = r#"{"t":"\u0041 \/ \n \\u0053ECRET-canary-1234"}"#;
        assert_eq!(redactor.redact(plain), plain);
    }

    #[test]
    fn escapes_are_read_only_where_json_has_them() {
        for (text, read) in [
            (r"\u0053", "S"),
            (r"\\u0053", r"\\u0053"),
            (r"\u00", r"\u00"),
            (r"\u0022 \u005C \u000a", r#"\" \\ \u000a"#),
            (r"\ud83d\ude00 \ud83d \ude00", "\u{1F600} \\ud83d \\ude00"),
            (r"\/\é\", r"/\é\"),
        ] {
            assert_eq!(
                unescape_printable(text).as_deref().unwrap_or(text),
                read,
                "{text}"
            );
        }
    }

    #[test]
    fn a_url_gives_its_userinfo_its_basic_credential_and_its_query_values() {
        let url = reqwest::Url::parse(
            "http://al%20ice:p%40ssword@host/chat?token=QTOKEN-canary-9&v=1&stage=production",
        )
        .unwrap();
        let found = url_secrets(&url, "--endpoint");
        let values: Vec<&str> = found.iter().map(|(_, value)| value.as_str()).collect();
        // reqwest's own header for this URL: `Basic base64("al ice:p@ssword")`.
        // A query value whose name says nothing of a credential is a word
        // like any other (`production`), not redacted.
        assert_eq!(
            values,
            [
                "al ice",
                "p@ssword",
                "YWwgaWNlOnBAc3N3b3Jk",
                "QTOKEN-canary-9"
            ]
        );
        assert_eq!(found[0].0, "the user name in --endpoint");
        assert_eq!(found[1].0, "the password in --endpoint");
        let bare = reqwest::Url::parse("http://host/").unwrap();
        assert!(url_secrets(&bare, "X").is_empty());
    }

    /// A JSON text as a server may write it: each character of its strings
    /// as itself or as `\uXXXX` (surrogate pairs beyond the BMP), `/` also
    /// as `\/`, by the choices given.
    fn written_as_json(value: &str, choices: &[u8]) -> String {
        let mut out = String::from("{\"text\":\"");
        for (i, c) in value.chars().enumerate() {
            let choice = choices.get(i % choices.len().max(1)).copied().unwrap_or(0);
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '/' if choice % 3 == 1 => out.push_str("\\/"),
                c if c.is_control() || choice % 3 == 2 => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push_str("\"}");
        out
    }

    proptest::proptest! {
        /// serde_json is the oracle: whatever escapes a server chooses, the
        /// value decoded from the redacted text holds no secret, and a text
        /// without one comes back unchanged.
        #[test]
        fn no_escaping_hides_a_secret(
            before in "\\PC{0,12}",
            after in "\\PC{0,12}",
            secret in "[!-~]{8,20}",
            choices in proptest::collection::vec(proptest::num::u8::ANY, 1..40),
            with_secret in proptest::bool::ANY,
        ) {
            let (redactor, _) = redactor(&[&secret]);
            let value = if with_secret { format!("{before}{secret}{after}") } else { format!("{before}{after}") };
            let text = written_as_json(&value, &choices);
            let redacted = redactor.redact(&text);
            let decoded: serde_json::Value = serde_json::from_str(&redacted).unwrap();
            let decoded = decoded["text"].as_str().unwrap().to_string();
            proptest::prop_assert!(!decoded.contains(secret.trim()) || secret.trim().is_empty(), "{text} -> {redacted}");
            if !value.contains(secret.trim()) {
                proptest::prop_assert_eq!(redacted.as_ref(), text.as_str());
            }
        }

        /// Issue 61: a secret echoed over two or three pieces, cut at every
        /// offset, never comes out of the stream redactor whole, nor in
        /// pieces that join to it; text without a secret comes out as it
        /// went in; and what comes out is the whole text redacted at once.
        #[test]
        fn a_secret_cut_anywhere_across_pieces_never_comes_out(
            before in "[a-z ]{0,6}",
            after in "[a-z ]{0,6}",
            secret in "[A-Za-z0-9_+/-]{8,12}",
            with_secret in proptest::bool::ANY,
        ) {
            let (redactor, _) = redactor(&[&secret]);
            let text = if with_secret { format!("{before}{secret}{after}") } else { format!("{before}{after}") };
            let whole = redactor.redact(&text).into_owned();
            let boundaries: Vec<usize> = (0..=text.len()).collect();
            let mut cuts: Vec<Vec<usize>> = boundaries.iter().map(|&i| vec![i]).collect();
            for &i in &boundaries {
                for &j in &boundaries[i..] {
                    cuts.push(vec![i, j]);
                }
            }
            for cut in cuts {
                let mut pieces = Vec::new();
                let mut start = 0;
                for &at in &cut {
                    pieces.push(&text[start..at]);
                    start = at;
                }
                pieces.push(&text[start..]);
                let mut stream = StreamRedactor::new(redactor.clone());
                let mut given: Vec<String> = pieces.iter().map(|piece| stream.push(piece)).collect();
                given.push(stream.finish());
                let joined: String = given.concat();
                proptest::prop_assert!(!joined.contains(&secret), "{pieces:?} -> {given:?}");
                proptest::prop_assert_eq!(&joined, &whole, "{:?}", pieces);
                if !text.contains(&secret) {
                    proptest::prop_assert_eq!(&joined, &text);
                }
            }
        }

        #[test]
        fn unescaping_never_panics(text in "(\\\\|u|[0-9a-fA-F]|d8|dc|/|\\PC){0,40}") {
            let _ = unescape_printable(&text);
        }
    }
}
