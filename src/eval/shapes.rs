//! The value shapes a suite's fields take: one value or a list of them
//! (`OneOrMany`), and a tool by name or by name and arguments
//! (`ToolExpectation`) — each read by its items' own deserializer, so that
//! an error inside an item keeps its message and line.

use serde::Deserialize;
use serde_json::Value;

/// A tool by name, or by name and (a subset of) its arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolExpectation {
    Name(String),
    WithArgs { name: String, args: Option<Value> },
}

/// `{name, args}`, with unknown fields named in the error (an untagged enum
/// would only say that nothing matched).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolWithArgs {
    name: String,
    #[serde(default)]
    args: Option<Value>,
}

impl<'de> Deserialize<'de> for ToolExpectation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ToolExpectation;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a tool name, or {name, args}")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<ToolExpectation, E> {
                Ok(ToolExpectation::Name(name.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ToolExpectation, A::Error> {
                let tool =
                    ToolWithArgs::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(ToolExpectation::WithArgs {
                    name: tool.name,
                    args: tool.args,
                })
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl ToolExpectation {
    pub fn name(&self) -> &str {
        match self {
            ToolExpectation::Name(name) | ToolExpectation::WithArgs { name, .. } => name,
        }
    }

    pub fn args(&self) -> Option<&Value> {
        match self {
            ToolExpectation::Name(_) => None,
            ToolExpectation::WithArgs { args, .. } => args.as_ref(),
        }
    }
}

/// A single value or a list of them.
#[derive(Debug, Clone, PartialEq)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<T> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany(Vec::new())
    }
}

/// A list, or one item of it. Each shape is read by the item's own
/// deserializer, so an error inside an item keeps its message (an untagged
/// enum would replace it with "did not match any variant").
impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
        use serde::de::{Error, IntoDeserializer};

        struct Visitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("one value or a list of them")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(SeqAccessDeserializer::new(seq)).map(OneOrMany)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|item| OneOrMany(vec![item]))
            }
            fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
                T::deserialize(text.into_deserializer()).map(|item| OneOrMany(vec![item]))
            }
            fn visit_string<E: Error>(self, text: String) -> Result<Self::Value, E> {
                T::deserialize(text.into_deserializer()).map(|item| OneOrMany(vec![item]))
            }
            fn visit_bool<E: Error>(self, value: bool) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(|item| OneOrMany(vec![item]))
            }
            fn visit_i64<E: Error>(self, value: i64) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(|item| OneOrMany(vec![item]))
            }
            fn visit_u64<E: Error>(self, value: u64) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(|item| OneOrMany(vec![item]))
            }
            fn visit_f64<E: Error>(self, value: f64) -> Result<Self::Value, E> {
                T::deserialize(value.into_deserializer()).map(|item| OneOrMany(vec![item]))
            }
        }
        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}
