//! Reading a tool call's arguments, with errors the model can act on.

use serde_json::Value;

use super::ToolError;

/// A required string argument.
pub fn required_str<'a>(args: &'a Value, name: &str) -> Result<&'a str, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Err(ToolError(format!("missing required argument `{name}`"))),
        Some(Value::String(text)) if text.trim().is_empty() => {
            Err(ToolError(format!("argument `{name}` is empty")))
        }
        Some(Value::String(text)) => Ok(text.trim()),
        Some(_) => Err(ToolError(format!("argument `{name}` must be a string"))),
    }
}

/// An optional string argument; blank counts as absent.
pub fn optional_str<'a>(args: &'a Value, name: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.trim())),
        Some(_) => Err(ToolError(format!("argument `{name}` must be a string"))),
    }
}

/// An optional non-negative integer argument within `max`. Models sometimes
/// send numbers as strings or as whole floats (`10.0`); both are accepted.
pub fn optional_count(args: &Value, name: &str, max: usize) -> Result<Option<usize>, ToolError> {
    let invalid = || {
        ToolError(format!(
            "argument `{name}` must be a whole number from 0 to {max}"
        ))
    };
    let number = match args.get(name) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(number)) => match (number.as_u64(), number.as_f64()) {
            (Some(n), _) => n,
            (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f <= max as f64 => f as u64,
            _ => return Err(invalid()),
        },
        Some(Value::String(text)) => text.trim().parse::<u64>().map_err(|_| invalid())?,
        Some(_) => return Err(invalid()),
    };
    usize::try_from(number)
        .ok()
        .filter(|n| *n <= max)
        .map(Some)
        .ok_or_else(invalid)
}

/// The arguments must be a JSON object (or absent).
pub fn expect_object(args: &Value) -> Result<(), ToolError> {
    match args {
        Value::Object(_) | Value::Null => Ok(()),
        _ => Err(ToolError("arguments must be a JSON object".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_arguments_get_readable_errors() {
        let args = json!({"a": 3, "b": "  ", "n": "12", "f": 2.0, "neg": -1, "big": 10_000});
        assert_eq!(
            required_str(&args, "a").unwrap_err().0,
            "argument `a` must be a string"
        );
        assert_eq!(
            required_str(&args, "b").unwrap_err().0,
            "argument `b` is empty"
        );
        assert_eq!(
            required_str(&args, "z").unwrap_err().0,
            "missing required argument `z`"
        );
        assert_eq!(optional_str(&args, "b").unwrap(), None);
        assert_eq!(optional_count(&args, "n", 100).unwrap(), Some(12));
        assert_eq!(optional_count(&args, "f", 100).unwrap(), Some(2));
        assert!(optional_count(&args, "neg", 100).is_err());
        assert!(optional_count(&args, "big", 100).is_err());
        assert!(expect_object(&json!([1])).is_err());
    }
}
