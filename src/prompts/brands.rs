//! Brands and `apply_brand`: filling `{{assistant}}`, `{{product}}` and
//! `{{pronunciation}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, Hash, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Brand {
    pub assistant: String,
    pub product: String,
    pub pronunciation: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BrandsFile {
    pub default: String,
    pub brands: BTreeMap<String, Brand>,
}

/// The placeholders a brand fills, as `apply_brand` knows them.
pub const BRAND_PLACEHOLDERS: [&str; 3] = ["assistant", "product", "pronunciation"];

/// The names of `{{name}}` placeholders (`name` in `[a-z_]+`) in `text` that
/// no brand fills — most likely typos (`{{assitant}}`), which would reach the
/// model as written. Each name once, in order of first use.
pub fn unknown_placeholders(text: &str) -> Vec<String> {
    let mut unknown: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let name_len = after
            .bytes()
            .take_while(|b| b.is_ascii_lowercase() || *b == b'_')
            .count();
        let name = &after[..name_len];
        if name_len > 0 && after[name_len..].starts_with("}}") {
            if !BRAND_PLACEHOLDERS.contains(&name) && !unknown.iter().any(|seen| seen == name) {
                unknown.push(name.to_string());
            }
            rest = &after[name_len + 2..];
        } else {
            // `{{{name}}`: the placeholder may start at the next brace.
            rest = &rest[start + 1..];
        }
    }
    unknown
}

/// Fills the brand placeholders. Done in one pass over the text, so that a
/// brand value containing `{{product}}` is not itself expanded. Every
/// turn brands its prompt's blocks (~9 KB), so `{{` is looked for with
/// `memchr`'s vectorised search, not `str::find`'s byte-at-a-time one.
pub fn apply_brand(text: &str, brand: &Brand) -> String {
    static OPEN: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("{{"));
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = OPEN.find(rest.as_bytes()) {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let replacement = [
            ("{{assistant}}", &brand.assistant),
            ("{{product}}", &brand.product),
            ("{{pronunciation}}", &brand.pronunciation),
        ]
        .into_iter()
        .find(|(placeholder, _)| after.starts_with(placeholder));
        match replacement {
            Some((placeholder, value)) => {
                out.push_str(value);
                rest = &after[placeholder.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &after[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_placeholders_are_the_brace_names_no_brand_fills() {
        let text = "{{assistant}} {{assitant}} {{ product }} {{Product}} {{x_y}}{{assitant}} {{";
        assert_eq!(unknown_placeholders(text), ["assitant", "x_y"]);
        assert!(unknown_placeholders("{{product}} and {{pronunciation}}").is_empty());
    }

    fn brand() -> Brand {
        Brand {
            assistant: "Clara {{product}}".into(),
            product: "Harbour".into(),
            pronunciation: "KLAIR-uh".into(),
        }
    }

    #[test]
    fn every_placeholder_is_filled_once() {
        let text = "I am {{assistant}} in {{product}} ({{pronunciation}}); {{other}} and {{ stays.";
        assert_eq!(
            apply_brand(text, &brand()),
            "I am Clara {{product}} in Harbour (KLAIR-uh); {{other}} and {{ stays."
        );
    }

    use proptest::prelude::Strategy as _;

    proptest::proptest! {
        /// The oracle: with brand values free of braces, and braces only
        /// in pairs (a lone `{` before a placeholder is where a one-pass
        /// fill and a search for each placeholder part ways), filling them
        /// in one pass is `str::replace` of each in turn.
        #[test]
        fn branding_is_replacing_each_placeholder(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[a-z }]{0,12}").unwrap(),
                    proptest::sample::select(vec![
                        "{{assistant}}", "{{product}}", "{{pronunciation}}", "{{", "}}", "{{x}}",
                    ]).prop_map(str::to_string),
                ],
                0..24,
            ),
            values in proptest::collection::vec("[a-zA-Z -]{0,10}", 3),
        ) {
            let text = pieces.concat();
            let brand = Brand {
                assistant: values[0].clone(),
                product: values[1].clone(),
                pronunciation: values[2].clone(),
            };
            let replaced = text
                .replace("{{assistant}}", &brand.assistant)
                .replace("{{product}}", &brand.product)
                .replace("{{pronunciation}}", &brand.pronunciation);
            proptest::prop_assert_eq!(apply_brand(&text, &brand), replaced);
        }
    }
}
