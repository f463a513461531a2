//! The two things that keep an embedded report small and safe: a string
//! table (a scripted answer repeated over 10,000 turns, a claim brief over
//! every case of its claim, is stored once and referred to by index), and
//! the escaping that lets any JSON sit inside a `<script>` element without
//! ending it.

use std::collections::HashMap;

/// Strings stored once each, referred to by their index.
#[derive(Debug, Default)]
pub struct StringTable {
    strings: Vec<String>,
    index: HashMap<String, u32>,
}

impl StringTable {
    /// The index of `text`, adding it the first time.
    pub fn id(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.index.get(text) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(text.to_string());
        self.index.insert(text.to_string(), id);
        id
    }

    pub fn into_strings(self) -> Vec<String> {
        self.strings
    }
}

/// JSON made safe to embed in `<script type="application/json">`: every
/// `<`, `>` and `&` (which JSON only allows inside strings) becomes its
/// `\u` escape, so no text from a claim, a model or a file can close the
/// element (`</script>`), open a comment (`<!--`) or read as markup.
/// JSON.parse turns the escapes back into the same characters. U+2028 and
/// U+2029 are escaped too, for any older parser that treats them as line ends.
pub fn embed_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 64);
    for ch in json.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            other => out.push(other),
        }
    }
    out
}

/// Text for an HTML element or attribute value we write ourselves (the
/// title): the five characters that could start markup, escaped.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_script_element_and_parses_back() {
        let hostile = serde_json::json!({"a": "</script><script>alert(1)</script><!-- & \u{2028}"});
        let embedded = embed_json(&hostile.to_string());
        assert!(!embedded.contains('<') && !embedded.contains('>'));
        assert!(!embedded.to_lowercase().contains("</script"));
        let back: serde_json::Value = serde_json::from_str(&embedded).unwrap();
        assert_eq!(back, hostile);
    }

    #[test]
    fn repeated_strings_are_stored_once() {
        let mut table = StringTable::default();
        let (a, b, c) = (table.id("x"), table.id("y"), table.id("x"));
        assert_eq!((a, b, c), (0, 1, 0));
        assert_eq!(table.into_strings(), vec!["x", "y"]);
    }

    #[test]
    fn html_text_is_escaped() {
        assert_eq!(
            escape_html("<b a=\"1\">&'"),
            "&lt;b a=&quot;1&quot;&gt;&amp;&#39;"
        );
    }
}
