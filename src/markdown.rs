//! Text we did not write (model answers, claim values, suite and file
//! names), made safe for GitHub-flavoured Markdown: the one escaping rule of
//! `eval --markdown-summary` and `compare --format markdown`.
//!
//! Such text lands in a step summary or a pull request, where GitHub renders
//! raw HTML (`<img src=…>`), an unclosed `<!--` hides everything after it,
//! a `|` splits a table cell, and a newline ends a table row or opens a new
//! block. So every piece is folded onto one line, stripped of control
//! characters and cut; then `<`, `>` and `&` become character references
//! (which also holds inside an HTML block, where backslashes do not), and
//! the characters that open inline markup — `\` `` ` `` `*` `_` `[` `]` `~`
//! `|` `$` `@` — are backslash-escaped, as is a first character that would
//! open a block, so it can open no emphasis, link, image, code span,
//! strikethrough, table cell, math, mention, heading or list.
//! `tests/it/markdown.rs` renders real output with npm `markdown-it`.

use crate::text::one_line;

/// How much of one piece of text a Markdown report shows by default.
pub const CELL_CHARS: usize = 200;

/// `text` as literal Markdown inline text: one line, at most `max`
/// characters (then `…`), nothing in it interpreted.
pub fn inline(text: &str, max: usize) -> String {
    let line = one_line(text, max);
    let mut escaped = String::with_capacity(line.len() + line.len() / 4);
    for c in line.chars() {
        match c {
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '&' => escaped.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' | '|' | '$' | '@' => {
                escaped.push('\\');
                escaped.push(c);
            }
            c => escaped.push(c),
        }
    }
    escape_block_start(escaped)
}

/// Text that opens a list item or a quote (`- x`, `> x`) is read as blocks:
/// a first `#`, `-`, `+` or `=`, or the `.`/`)` after leading digits,
/// would open a heading, a list or a rule, so it is escaped.
fn escape_block_start(mut text: String) -> String {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let at = match text.as_bytes().get(digits) {
        Some(b'.' | b')') if digits > 0 => digits,
        Some(b'#' | b'-' | b'+' | b'=') if digits == 0 => 0,
        _ => return text,
    };
    text.insert(at, '\\');
    text
}

/// `text` as HTML text (inside `<summary>`, an HTML block in which Markdown
/// escapes are not read): one line, at most `max` characters.
pub fn html(text: &str, max: usize) -> String {
    one_line(text, max)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `text` as a code span: one line, at most `max` characters, fenced by
/// more backticks than any run inside it (CommonMark §6.1), so nothing in
/// it ends the span.
pub fn code(text: &str, max: usize) -> String {
    let line = one_line(text, max);
    if line.is_empty() {
        return "` `".to_string();
    }
    let mut longest = 0;
    let mut run = 0;
    for c in line.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    // A span that starts or ends with a backtick needs a space between it
    // and the fence; one space each side is removed again by the reader.
    let pad = if line.starts_with(['`', ' ']) || line.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{line}{pad}{fence}")
}

/// A code span inside a table cell: GFM splits cells at a `|` even inside a
/// code span, unless it is written `\|` (which the table reads as `|`).
pub fn code_in_table(text: &str, max: usize) -> String {
    code(text, max).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_text_opens_no_markup() {
        assert_eq!(
            inline("<img src=x> & *a* | `b` <!--", 100),
            "&lt;img src=x&gt; &amp; \\*a\\* \\| \\`b\\` &lt;!--"
        );
    }

    #[test]
    fn inline_text_is_one_cut_line_without_controls() {
        assert_eq!(inline("a\n\n# b\u{9b}31m\r\n", 100), "a # b31m");
        assert_eq!(inline("# a", 100), "\\# a");
        assert_eq!(inline("12. a", 100), "12\\. a");
        assert_eq!(inline("- a", 100), "\\- a");
        assert_eq!(inline("abcdef", 3), "abc…");
    }

    #[test]
    fn html_text_escapes_what_html_reads() {
        assert_eq!(html("<b>&amp;</b>\n", 100), "&lt;b&gt;&amp;amp;&lt;/b&gt;");
    }

    #[test]
    fn a_code_span_outlasts_the_backticks_inside_it() {
        assert_eq!(code("a", 10), "`a`");
        assert_eq!(code("a``b", 10), "```a``b```");
        assert_eq!(code("`a", 10), "`` `a ``");
        assert_eq!(code("", 10), "` `");
        assert_eq!(code_in_table("a|b", 10), "`a\\|b`");
    }

    proptest::proptest! {
        #[test]
        fn escaping_never_panics_and_keeps_to_one_line(text in "\\PC{0,300}|[\\x00-\\x7f]{0,300}", max in 0usize..400) {
            for escaped in [inline(&text, max), html(&text, max), code(&text, max), code_in_table(&text, max)] {
                proptest::prop_assert!(!escaped.contains(['\n', '\r']));
                proptest::prop_assert!(!escaped.chars().any(char::is_control));
            }
        }
    }
}
