//! The fields of a Gemini request the API is strict about, in one spelling
//! whoever wrote them (promptlab or Google's SDK): keys camelCase, enum
//! values lower case, signatures as bytes, no role on the system
//! instruction — the differences the API reads as the same.

use serde_json::{Map, Value, json};

use super::http_server::RecordedRequest;

/// The fields the API is strict about, in one spelling: keys camelCase
/// (never inside arguments, responses or schemas, which are data), enum
/// values lower case, signatures as bytes, no role on the system instruction.
pub fn strict_fields(request: &RecordedRequest) -> Value {
    let body = camel(&request.json(), false);
    let config = &body["generationConfig"];
    let mut system = body["systemInstruction"].clone();
    if let Some(map) = system.as_object_mut() {
        map.remove("role");
    }
    let contents: Vec<Value> = body["contents"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|content| {
            let parts: Vec<Value> = content["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(part_fields)
                .collect();
            json!({"role": content["role"], "parts": parts})
        })
        .collect();
    json!({
        "path": request.target.split('?').next(),
        "key header": request.header("x-goog-api-key").is_some(),
        "systemInstruction": system,
        "contents": contents,
        "tools": body.get("tools"),
        "toolConfig": lower_enums(body.get("toolConfig").cloned().unwrap_or(Value::Null)),
        "maxOutputTokens": config["maxOutputTokens"],
        "thinkingConfig": lower_enums(config["thinkingConfig"].clone()),
        "responseMimeType": config.get("responseMimeType"),
        "responseSchema": config.get("responseSchema").cloned().map(lower_enums),
    })
}

fn part_fields(part: Value) -> Value {
    let mut fields = Map::new();
    for key in ["text", "functionResponse"] {
        if let Some(value) = part.get(key) {
            fields.insert(key.into(), value.clone());
        }
    }
    if let Some(call) = part.get("functionCall") {
        fields.insert(
            "functionCall".into(),
            json!({"name": call["name"], "args": call["args"], "id": call.get("id")}),
        );
    }
    if let Some(signature) = part.get("thoughtSignature").and_then(Value::as_str) {
        fields.insert(
            "thoughtSignature bytes".into(),
            json!(signature_hex(signature)),
        );
    }
    Value::Object(fields)
}

/// A signature's bytes, whichever base64 alphabet carried them.
pub fn signature_hex(signature: &str) -> String {
    let trimmed = signature.trim_end_matches('=');
    let bytes = data_encoding::BASE64_NOPAD
        .decode(trimmed.as_bytes())
        .or_else(|_| data_encoding::BASE64URL_NOPAD.decode(trimmed.as_bytes()))
        .unwrap_or_else(|e| panic!("signature `{signature}` is not base64: {e}"));
    data_encoding::HEXLOWER.encode(&bytes)
}

/// Fields whose values are data (JSON the API passes on as it is): their
/// keys are never respelled.
const DATA_KEYS: [&str; 5] = [
    "args",
    "response",
    "parametersJsonSchema",
    "parameters_json_schema",
    "properties",
];

/// Keys in camelCase, as the proto JSON mapping reads either spelling;
/// whole floats as integers (`1.0` is `1` to a JSON reader). The keys of a
/// `properties` map (a response schema's field names) are data, but the
/// schemas under them are not.
fn camel(value: &Value, in_data: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let key = if in_data { key.clone() } else { camel_key(key) };
                    let value = match key.as_str() {
                        "properties" if !in_data => properties(value),
                        k if DATA_KEYS.contains(&k) => camel(value, true),
                        _ => camel(value, in_data),
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| camel(v, in_data)).collect()),
        Value::Number(number) => match number.as_f64() {
            Some(float) if number.is_f64() && float.fract() == 0.0 && float.abs() < 1e15 => {
                json!(float as i64)
            }
            _ => value.clone(),
        },
        other => other.clone(),
    }
}

fn properties(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(name, schema)| (name.clone(), camel(schema, false)))
                .collect(),
        ),
        other => camel(other, true),
    }
}

fn camel_key(key: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Enum values (`HIGH`, `AUTO`, `OBJECT`) in one case; other strings as they are.
fn lower_enums(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let value = match (key.as_str(), value) {
                        ("type" | "mode" | "thinkingLevel", Value::String(text)) => {
                            Value::String(text.to_lowercase())
                        }
                        (_, value) => lower_enums(value),
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(lower_enums).collect()),
        other => other,
    }
}
