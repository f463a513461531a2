//! A plain JSON Schema (a judge's reply schema) in the form OpenAI's strict
//! structured outputs take: every object closed (`additionalProperties:
//! false`) and every property required, through `$defs`, properties, items,
//! `anyOf` and `allOf` — the rules of the official SDK's
//! `to_strict_json_schema`, which `tests/it/openai_conformance.rs` checks this
//! against.

use serde_json::{Map, Value};

/// `schema` as strict mode takes it.
pub fn to_strict(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let value = match key.as_str() {
            "$defs" | "definitions" | "properties" => each_value(value),
            "items" if value.is_object() => to_strict(value),
            "anyOf" | "allOf" => each_item(value),
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    if out.get("type").and_then(Value::as_str) == Some("object")
        && !out.contains_key("additionalProperties")
    {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(Value::Object(properties)) = out.get("properties") {
        let required = properties.keys().cloned().map(Value::String).collect();
        out.insert("required".into(), Value::Array(required));
    }
    // One entry in `allOf` is the schema itself.
    if let Some(Value::Array(all)) = out.get("allOf")
        && let [Value::Object(only)] = all.as_slice()
    {
        let only = only.clone();
        out.remove("allOf");
        out.extend(only);
    }
    if out.get("default") == Some(&Value::Null) {
        out.remove("default");
    }
    Value::Object(out)
}

fn each_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, schema)| (key.clone(), to_strict(schema)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn each_item(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(to_strict).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_are_closed_and_every_property_required() {
        let strict = to_strict(&json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}, "c": {"type": "array", "items": {"type": "object"}}},
            "required": ["a"]
        }));
        assert_eq!(strict["additionalProperties"], false);
        assert_eq!(strict["required"], json!(["a", "c"]));
        assert_eq!(strict["properties"]["a"]["additionalProperties"], false);
        assert_eq!(strict["properties"]["a"]["required"], json!(["b"]));
        assert_eq!(
            strict["properties"]["c"]["items"]["additionalProperties"],
            false
        );
    }
}
