//! Brands and `apply_brand`: filling `{{assistant}}`, `{{product}}` and
//! `{{pronunciation}}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
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

/// Fills the brand placeholders. Done in one pass over the text, so that a
/// brand value containing `{{product}}` is not itself expanded.
pub fn apply_brand(text: &str, brand: &Brand) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
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
}
