//! Gemini's `usageMetadata` read field by field: a count given as a string
//! (legal in the proto JSON mapping) is a count; a field the object leaves
//! out is 0 (the proto JSON mapping omits a field at its default, and
//! Gemini omits `cachedContentTokenCount` and `thoughtsTokenCount` when
//! there are none); a field that is no count at all is unknown, with a
//! warning; no `usageMetadata` at all is unknown usage (never 0); a count
//! no call can have (negative, above 10⁹) makes the call an error rather
//! than a 0 that would pass `maxOutputTokens` and under-count the cost.

use serde_json::Value;

/// No call reports more tokens than this; a larger count is not believed.
const MAX_TOKENS: u64 = 1_000_000_000;

/// The counts promptlab uses; `None` when the server did not report one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub prompt: Option<u64>,
    pub cached: Option<u64>,
    pub candidates: Option<u64>,
    pub thoughts: Option<u64>,
}

impl Counts {
    const UNREPORTED: Counts = Counts {
        prompt: None,
        cached: None,
        candidates: None,
        thoughts: None,
    };
}

/// What one field held.
enum Count {
    Tokens(u64),
    Impossible,
    Malformed,
}

/// A token count that cannot be true (negative, fractional, past 2^53): the
/// call is an error, never a count of 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Gemini reported an impossible token count: {field} {shown}")]
pub struct ImpossibleCount {
    field: &'static str,
    shown: String,
}

/// The counts of the last `usageMetadata`; `Err` names an impossible one.
pub fn read_usage(
    raw: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<Counts, ImpossibleCount> {
    let Some(raw) = raw else {
        return Ok(Counts::UNREPORTED);
    };
    let Some(fields) = raw.as_object() else {
        warnings.push(format!(
            "usageMetadata is not an object (`{}`): its counts were left out",
            crate::text::quote(&raw.to_string())
        ));
        return Ok(Counts::UNREPORTED);
    };
    let mut counts = Counts {
        prompt: Some(0),
        cached: Some(0),
        candidates: Some(0),
        thoughts: Some(0),
    };
    for (name, slot) in [
        ("promptTokenCount", &mut counts.prompt),
        ("cachedContentTokenCount", &mut counts.cached),
        ("candidatesTokenCount", &mut counts.candidates),
        ("thoughtsTokenCount", &mut counts.thoughts),
    ] {
        let Some(value) = fields.get(name) else {
            continue;
        };
        match count(value) {
            Count::Tokens(tokens) => *slot = Some(tokens),
            Count::Impossible => {
                return Err(ImpossibleCount {
                    field: name,
                    shown: shown(value),
                });
            }
            Count::Malformed => {
                *slot = None;
                warnings.push(format!(
                    "usageMetadata.{name} is not a token count (`{}`): left out",
                    shown(value)
                ));
            }
        }
    }
    Ok(counts)
}

fn count(value: &Value) -> Count {
    match value {
        Value::Number(number) => match (number.as_u64(), number.as_i64(), number.as_f64()) {
            (Some(tokens), _, _) => bounded(tokens),
            (None, Some(_), _) => Count::Impossible,
            (None, None, Some(float)) => whole(float),
            _ => Count::Malformed,
        },
        Value::String(text) => match (text.parse::<u64>(), text.parse::<i64>()) {
            (Ok(tokens), _) => bounded(tokens),
            (Err(_), Ok(_)) => Count::Impossible,
            _ => Count::Malformed,
        },
        _ => Count::Malformed,
    }
}

fn bounded(tokens: u64) -> Count {
    if tokens > MAX_TOKENS {
        Count::Impossible
    } else {
        Count::Tokens(tokens)
    }
}

/// A float that is a whole number (`1e3`) is a count; `1.5` is not.
fn whole(float: f64) -> Count {
    if !float.is_finite() || float.fract() != 0.0 {
        return Count::Malformed;
    }
    if !(0.0..=MAX_TOKENS as f64).contains(&float) {
        return Count::Impossible;
    }
    // In range and whole: the conversion is exact.
    Count::Tokens(float as u64)
}

/// The value as it came, cut to a few characters.
fn shown(value: &Value) -> String {
    let text = match value {
        Value::String(text) => format!("{text:?}"),
        // Large floats as written (`1e30`), not as `1e+30`.
        Value::Number(number) if number.as_u64().is_none() && number.as_i64().is_none() => {
            match number.as_f64() {
                Some(float) if float.abs() >= 1e9 => format!("{float:e}"),
                _ => number.to_string(),
            }
        }
        other => other.to_string(),
    };
    crate::text::quote(&text).chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(value: Value) -> (Result<Counts, ImpossibleCount>, Vec<String>) {
        let mut warnings = Vec::new();
        (read_usage(Some(&value), &mut warnings), warnings)
    }

    #[test]
    fn a_count_given_as_a_string_is_a_count() {
        let (counts, warnings) = read(
            json!({"promptTokenCount": "12", "candidatesTokenCount": 3, "thoughtsTokenCount": 1e3}),
        );
        let counts = counts.unwrap();
        assert_eq!(
            (counts.prompt, counts.candidates, counts.thoughts),
            (Some(12), Some(3), Some(1000))
        );
        // Left out of the object: none (the proto JSON mapping omits zeros).
        assert_eq!(counts.cached, Some(0));
        assert!(warnings.is_empty());
    }

    #[test]
    fn a_bad_field_drops_only_itself_with_a_warning() {
        let (counts, warnings) = read(
            json!({"promptTokenCount": true, "candidatesTokenCount": 7, "cachedContentTokenCount": 1.5}),
        );
        let counts = counts.unwrap();
        assert_eq!(
            (counts.prompt, counts.candidates, counts.cached),
            (None, Some(7), None)
        );
        assert_eq!(
            warnings,
            [
                "usageMetadata.promptTokenCount is not a token count (`true`): left out",
                "usageMetadata.cachedContentTokenCount is not a token count (`1.5`): left out"
            ]
        );
    }

    #[test]
    fn no_usage_metadata_is_unknown_usage_never_zero() {
        let mut warnings = Vec::new();
        assert_eq!(read_usage(None, &mut warnings), Ok(Counts::UNREPORTED));
        assert!(warnings.is_empty());
        let (counts, warnings) = read(json!([1, 2]));
        assert_eq!(counts, Ok(Counts::UNREPORTED));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn an_impossible_count_is_an_error_never_zero() {
        let message = |value| read(value).0.unwrap_err().to_string();
        assert_eq!(
            message(json!({"candidatesTokenCount": 1e30})),
            "Gemini reported an impossible token count: candidatesTokenCount 1e30"
        );
        assert_eq!(
            message(json!({"promptTokenCount": -5})),
            "Gemini reported an impossible token count: promptTokenCount -5"
        );
        assert_eq!(
            message(json!({"thoughtsTokenCount": "1000000001"})),
            "Gemini reported an impossible token count: thoughtsTokenCount \"1000000001\""
        );
        assert!(read(json!({"promptTokenCount": 1_000_000_000})).0.is_ok());
    }
}
