//! A reply schema in plain JSON Schema (what the judge writes, and what any
//! provider takes) converted to the OpenAPI subset Gemini's
//! `responseSchema` accepts: upper-case type names, only the keywords it
//! knows, and `propertyOrdering` — the order the properties are written in,
//! so that a judge gives its reason before its verdict.

use serde_json::{Map, Value};

/// The keywords of Gemini's `Schema` object that a JSON Schema shares.
const KEPT: [&str; 9] = [
    "description",
    "enum",
    "format",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "required",
    "nullable",
];

/// `schema` in Gemini's dialect. Keywords it does not take are left out.
pub fn to_gemini(schema: &Value) -> Value {
    let Value::Object(object) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    if let Some(Value::String(kind)) = object.get("type") {
        out.insert("type".into(), Value::String(kind.to_ascii_uppercase()));
    }
    for keyword in KEPT {
        if let Some(value) = object.get(keyword) {
            out.insert(keyword.into(), value.clone());
        }
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        let converted: Map<String, Value> = properties
            .iter()
            .map(|(name, property)| (name.clone(), to_gemini(property)))
            .collect();
        let ordering = properties.keys().cloned().map(Value::String).collect();
        out.insert("properties".into(), Value::Object(converted));
        out.insert("propertyOrdering".into(), Value::Array(ordering));
    }
    if let Some(items) = object.get("items") {
        out.insert("items".into(), to_gemini(items));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_are_upper_cased_and_properties_keep_their_order() {
        let plain = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "reason": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                "score": {"type": "number", "minimum": 0, "maximum": 1}
            },
            "required": ["score", "reason"]
        });
        assert_eq!(
            to_gemini(&plain),
            json!({
                "type": "OBJECT",
                "required": ["score", "reason"],
                "properties": {
                    "reason": {"type": "STRING"},
                    "tags": {"type": "ARRAY", "items": {"type": "STRING", "enum": ["a", "b"]}},
                    "score": {"type": "NUMBER", "minimum": 0, "maximum": 1}
                },
                "propertyOrdering": ["reason", "tags", "score"]
            })
        );
    }
}
