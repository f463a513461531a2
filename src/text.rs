//! Text helpers shared by every layer: quoting input in messages, the
//! nearest known name for a "did you mean", keeping control characters from
//! a terminal, and counting the way the production (TypeScript) server
//! counts.
//!
//! Production limits (60 × 20,000-character messages, 32,000-character
//! overrides, the 400-character `tool_result` cut) are JavaScript
//! `string.length` values: UTF-16 code units. Counting the same here keeps a
//! request that production accepts accepted, and one it refuses refused.

/// `eprintln!` that never panics: a line stderr cannot take (`2>/dev/full`,
/// a closed descriptor `2>&-`, a reader gone) is dropped, where `eprintln!`
/// would panic and turn the documented exit code into 101. The exit code
/// still says what happened. Every message promptlab writes to stderr goes
/// through it.
#[macro_export]
macro_rules! eprintln_or_drop {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that never panics (`eprintln_or_drop!`, without the newline).
#[macro_export]
macro_rules! eprint_or_drop {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stderr(), $($arg)*);
    }};
}

// `#[macro_export]` puts the macros at the crate's root; they are this
// module's all the same, and used as `text::eprintln_or_drop!`.
pub use super::{eprint_or_drop, eprintln_or_drop};

/// How many characters of an input a message quotes, at most.
pub const QUOTE_CHARS: usize = 200;

/// A short quotation of `text` for an error message: at most `QUOTE_CHARS`
/// characters, cut on a character boundary and marked with `…` when cut.
/// Messages quote their input, they never dump it.
pub fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The length JavaScript's `string.length` reports: UTF-16 code units.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The longest prefix of `text` of at most `max_units` UTF-16 code units,
/// never splitting a character (so never a surrogate pair). Returns the
/// prefix and whether anything was cut.
pub fn cut_utf16(text: &str, max_units: usize) -> (&str, bool) {
    let mut units = 0usize;
    for (index, ch) in text.char_indices() {
        units += ch.len_utf16();
        if units > max_units {
            return (&text[..index], true);
        }
    }
    (text, false)
}

/// JavaScript's `trim()` whitespace: ECMAScript WhiteSpace (TAB, VT, FF,
/// ZWNBSP U+FEFF, and Unicode category Zs) and LineTerminator (LF, CR,
/// U+2028, U+2029). Unlike Rust's `char::is_whitespace` it includes U+FEFF
/// and excludes U+0085 (NEL), U+180E is in neither.
pub fn is_js_whitespace(ch: char) -> bool {
    matches!(
        ch,
        '\u{0009}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{FEFF}'
            | '\u{000A}'
            | '\u{000D}'
            | '\u{2028}'
            | '\u{2029}'
            // Category Zs.
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// `text.trim() === ""` in JavaScript.
pub fn is_js_blank(text: &str) -> bool {
    text.chars().all(is_js_whitespace)
}

/// Folds any run of whitespace (newlines included) into one space, drops
/// control characters, and cuts to `max` characters with an ellipsis.
pub fn one_line(text: &str, max: usize) -> String {
    let mut folded = String::with_capacity(text.len().min(max * 4));
    let mut chars = 0;
    for word in text.split_whitespace() {
        let word: String = word.chars().filter(|c| !c.is_control()).collect();
        if word.is_empty() {
            continue;
        }
        if !folded.is_empty() {
            folded.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars >= max {
                folded.push('…');
                return folded;
            }
            folded.push(c);
            chars += 1;
        }
    }
    folded
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The candidate nearest to `input`, if it is near enough to be a typo: at
/// most a third of the input's length away (at least one edit), ignoring
/// case. Ties go to the first candidate. Under three characters nothing is
/// near enough: `2` is not a slip for `f`, nor the empty text for anything.
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let input = input.trim();
    if input.chars().count() < 3 {
        return None;
    }
    let wanted = input.to_lowercase();
    let limit = (input.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(&wanted, &candidate.to_lowercase()), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Removes control characters (C0, DEL and C1: Unicode's `Cc`) from text
/// that came from a claim, a model or a file, keeping newlines and tabs, so
/// that hostile text cannot move the cursor, retitle the window or hide
/// output. The one rule for text bound for a terminal (`sink` re-exports it).
pub fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

/// JSON text with DEL and the C1 controls (U+007F–U+009F) written as `\u`
/// escapes. serde_json escapes C0 only, and a raw U+009B is a terminal's CSI;
/// escaped, a JSON reader still gets the very same string. (Outside strings
/// JSON text is ASCII, so every such character is inside one.)
pub fn json_for_terminal(json: String) -> String {
    if !json.chars().any(|c| c.is_control()) {
        return json;
    }
    let mut escaped = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if (c.is_control() && !c.is_ascii()) || c == '\u{7f}' {
            escaped.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    escaped
}

/// A duration as a person writes one in a flag or a variable: `10s`,
/// `2m`, `500ms`, `1h 30m` (humantime), or a bare number, which is seconds
/// (`0.3`, `600`). `None` for anything else, a negative or non-finite
/// number, or one too large for a `Duration`. The one rule every time flag
/// reads by; each flag says its own bounds.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    match text.parse::<f64>() {
        Ok(seconds) => std::time::Duration::try_from_secs_f64(seconds).ok(),
        Err(_) => humantime::parse_duration(text).ok(),
    }
}

/// A duration that is not one, or not above 0 and at most a day.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected a duration above 0 and at most a day, such as 10s, 2m, 500ms or 600 (seconds), got `{}`",
    quote(.0)
)]
pub struct BadDuration(pub String);

/// `parse_duration`, above 0 and at most a day: a timeout or a time limit.
pub fn parse_time_limit(text: &str) -> Result<std::time::Duration, BadDuration> {
    match parse_duration(text) {
        Some(duration)
            if !duration.is_zero() && duration <= std::time::Duration::from_secs(86_400) =>
        {
            Ok(duration)
        }
        _ => Err(BadDuration(text.trim().to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_short_and_cut_on_a_char_boundary() {
        assert_eq!(quote("short"), "short");
        let long = "é".repeat(500);
        let quoted = quote(&long);
        assert_eq!(quoted.chars().count(), QUOTE_CHARS + 1);
        assert!(quoted.ends_with('…'));
    }

    #[test]
    fn counts_like_javascript_string_length() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("😀"), 2);
    }

    #[test]
    fn a_cut_never_splits_a_surrogate_pair() {
        assert_eq!(cut_utf16("a😀b", 2), ("a", true));
        assert_eq!(cut_utf16("a😀b", 3), ("a😀", true));
        assert_eq!(cut_utf16("a😀b", 4), ("a😀b", false));
    }

    proptest::proptest! {
        /// The cut is the longest whole-character prefix within the limit,
        /// measured as `encode_utf16` (JavaScript's units) measures it.
        #[test]
        fn a_cut_is_the_longest_prefix_within_the_limit(text in "\\PC{0,40}", max in 0usize..60) {
            let (cut, truncated) = cut_utf16(&text, max);
            proptest::prop_assert!(text.starts_with(cut));
            proptest::prop_assert!(cut.encode_utf16().count() <= max);
            proptest::prop_assert_eq!(truncated, cut.len() < text.len());
            if let Some(next) = text[cut.len()..].chars().next() {
                proptest::prop_assert!(cut.encode_utf16().count() + next.len_utf16() > max);
            }
            proptest::prop_assert_eq!(utf16_len(&text), text.encode_utf16().count());
        }
    }

    #[test]
    fn blank_uses_the_javascript_whitespace_set() {
        assert!(is_js_blank(" \u{FEFF}\u{3000}\n"));
        assert!(!is_js_blank("\u{0085}"));
        assert!(!is_js_blank("\u{200B}"));
        assert!(is_js_blank(""));
    }

    #[test]
    fn printable_drops_c0_del_and_c1_but_keeps_lines_and_tabs() {
        assert_eq!(
            printable("a\u{1b}[2Jb\u{7f}\u{9b}31mc\n\td\r"),
            "a[2Jb31mc\n\td"
        );
    }

    #[test]
    fn json_for_terminal_escapes_c1_losslessly() {
        let json = serde_json::to_string("a\u{9b}31m\u{7f}\u{1}é").unwrap();
        let shown = json_for_terminal(json);
        assert_eq!(shown, "\"a\\u009b31m\\u007f\\u0001é\"");
        assert!(!shown.chars().any(char::is_control));
        let back: String = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, "a\u{9b}31m\u{7f}\u{1}é");
    }
}
