//! Parsing JSON or YAML documents into serde types, with problems that name
//! the field, the line and the column — for claims, override files, suites,
//! scripts and histories alike. YAML is read under depth, alias and size
//! budgets, and duplicate keys are an error.

use std::fmt;
use std::path::Path;

use serde::de::DeserializeOwned;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentFormat {
    Json,
    Yaml,
}

impl DocumentFormat {
    /// By extension; a name without a known one (stdin) is sniffed from its
    /// first character.
    pub fn detect(path: &Path, text: &str) -> DocumentFormat {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("json") => DocumentFormat::Json,
            Some("yaml" | "yml") => DocumentFormat::Yaml,
            _ if text.trim_start().starts_with(['{', '[']) => DocumentFormat::Json,
            _ => DocumentFormat::Yaml,
        }
    }
}

/// What is wrong with a document, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentProblem {
    /// Dotted path to the field, e.g. `policy.periodStart` or `file[2].id`.
    pub field: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for DocumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(field) = &self.field {
            write!(f, "field `{field}`")?;
        }
        match (self.line, self.column) {
            (Some(line), Some(column)) => {
                let sep = if self.field.is_some() { ", " } else { "" };
                write!(f, "{sep}line {line} column {column}")?;
            }
            (Some(line), None) => write!(f, " line {line}")?,
            _ => {}
        }
        if self.field.is_some() || self.line.is_some() {
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

/// Parses any serde type from JSON or YAML text, tracking the field path.
pub fn parse_document<T: DeserializeOwned>(
    text: &str,
    format: DocumentFormat,
) -> Result<T, DocumentProblem> {
    match format {
        DocumentFormat::Json => parse_json(text),
        DocumentFormat::Yaml => parse_yaml(text),
    }
}

fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T, DocumentProblem> {
    let value = parse_json_once(text)?;
    // A type that took the text may still have read a key twice (a map, a
    // `Value`): the second pass refuses that, as YAML's parser does.
    check_json_keys(text)?;
    Ok(value)
}

/// Refuses JSON text in which an object gives a key twice, naming the
/// object and the key: the rule `parse_document` reads JSON under, for a
/// reader that parses JSON itself (a JSONL line, a CSV cell).
pub fn check_json_keys(text: &str) -> Result<(), DocumentProblem> {
    parse_json_once::<UniqueKeys>(text).map(|_| ())
}

fn parse_json_once<T: DeserializeOwned>(text: &str) -> Result<T, DocumentProblem> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = inner.to_string();
        let message = strip_location(&message);
        problem(&path, Some(inner.line()), Some(inner.column()), message)
    })?;
    deserializer.end().map_err(|error| {
        problem(
            ".",
            Some(error.line()),
            Some(error.column()),
            strip_location(&error.to_string()),
        )
    })?;
    Ok(value)
}

/// Any JSON value in which no object gives a key twice. serde_json keeps
/// the last value of a repeated key in a map or a `Value` (a derived struct
/// refuses one itself), which would let a second `system.base` or
/// `answerContains` drop the first without a word. YAML documents are read
/// under the same rule (`yaml_options`); this error says it in the words
/// of YAML's, so that the two formats read alike.
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        // Keys borrowed from the text where it allows, and looked for in a
        // list: every JSON document read goes through here once more, and
        // objects have a few keys (a claim's ~400 objects cost more hashed).
        // Past `FEW_KEYS` they move to a set, so that a hostile object of
        // 100,000 keys is not 10^10 comparisons.
        const FEW_KEYS: usize = 32;
        let mut few: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        let mut many = std::collections::HashSet::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            if few.contains(&key) || many.contains(&key) {
                // The key is quoted, not the text: a key can be long.
                return Err(serde::de::Error::custom(format!(
                    "duplicate mapping key: {}",
                    crate::text::quote(&key)
                )));
            }
            map.next_value::<UniqueKeys>()?;
            if few.len() < FEW_KEYS {
                few.push(key);
            } else {
                many.insert(key);
            }
        }
        Ok(UniqueKeys)
    }
}

/// A key, borrowed from the document unless it had to be unescaped.
struct KeySeed;

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed {
    type Value = std::borrow::Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeySeed)
    }
}

impl<'de> serde::de::Visitor<'de> for KeySeed {
    type Value = std::borrow::Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(key))
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(key.to_string()))
    }
}

/// A table file given to extend a shipped table (`--prices FILE`,
/// `--models FILE`): read under the input cap and parsed as JSON or YAML by
/// its name, every problem prefixed with the flag and the path. The one
/// loader of both tables.
pub fn read_table_file<T: DeserializeOwned>(
    flag: &'static str,
    path: &Path,
) -> Result<T, TableFileError> {
    let refused = |problem| TableFileError {
        flag,
        path: path.display().to_string(),
        problem,
    };
    let text = crate::input::read_input_text(path)
        .map_err(|error| refused(TableProblem::Unreadable(error.to_string())))?;
    parse_document(&text, DocumentFormat::detect(path, &text))
        .map_err(|problem| refused(TableProblem::Invalid(problem)))
}

/// Why a table file was refused: `--prices `my.yaml`: line 3 column 2: …`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} `{path}`: {problem}")]
pub struct TableFileError {
    pub flag: &'static str,
    pub path: String,
    pub problem: TableProblem,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableProblem {
    /// The file could not be read (missing, a folder, over the input cap).
    #[error("{0}")]
    Unreadable(String),
    #[error("{0}")]
    Invalid(DocumentProblem),
}

/// A table embedded at build time (`prices/gemini.yaml`, `models/gemini.yaml`);
/// a broken one is a bug of the build, caught by the modules' own tests.
pub fn parse_shipped<T: DeserializeOwned>(name: &str, text: &str) -> T {
    parse_document(text, DocumentFormat::Yaml)
        .unwrap_or_else(|problem| panic!("{name} is invalid: {problem}"))
}

/// A shipped table, parsed once when first asked for. Not a setting: a
/// `--prices` or `--models` file makes a table of its own, which the
/// commands carry as a value to what needs it.
pub struct Shipped<T> {
    cell: std::sync::OnceLock<std::sync::Arc<T>>,
}

impl<T> Shipped<T> {
    pub const fn new() -> Shipped<T> {
        Shipped {
            cell: std::sync::OnceLock::new(),
        }
    }

    pub fn get(&self, parse: impl FnOnce() -> T) -> std::sync::Arc<T> {
        self.cell
            .get_or_init(|| std::sync::Arc::new(parse()))
            .clone()
    }
}

impl<T> Default for Shipped<T> {
    fn default() -> Self {
        Shipped::new()
    }
}

/// The limits every YAML document is parsed under: deep nesting and alias
/// bombs are refused in linear time, before they cost seconds or memory.
/// Duplicate keys are an error (not "later wins"), so that a mistyped
/// second `system.base` cannot silently replace the first.
pub fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_YAML_DEPTH;
    budget.max_aliases = MAX_YAML_ALIASES;
    // Text size is bounded by the input cap, as for JSON: a claim valid as
    // JSON is valid as YAML.
    let input_cap = usize::try_from(crate::input::MAX_INPUT_BYTES).unwrap_or(usize::MAX);
    budget.max_total_scalar_bytes = input_cap;
    budget.max_reader_input_bytes = Some(input_cap);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options.with_snippet = false;
    options
}

/// Deepest nesting of a YAML document: claims, suites and scripts need a
/// handful of levels; the headroom is for unknown fields a claim keeps.
pub const MAX_YAML_DEPTH: usize = 64;
/// Most alias uses (`*name`) in one YAML document.
pub const MAX_YAML_ALIASES: usize = 1_000;

fn parse_yaml<T: DeserializeOwned>(text: &str) -> Result<T, DocumentProblem> {
    let mut path: Option<String> = None;
    let result = serde_saphyr::with_deserializer_from_str_with_options(
        text,
        yaml_options(),
        |deserializer| {
            serde_path_to_error::deserialize(deserializer).map_err(|error| {
                path = Some(error.path().to_string());
                error.into_inner()
            })
        },
    );
    result.map_err(|error| {
        let location = error.location();
        let message = yaml_message(&error);
        problem(
            path.as_deref().unwrap_or("."),
            location
                .as_ref()
                .and_then(|l| usize::try_from(l.line()).ok())
                .filter(|l| *l > 0),
            location
                .as_ref()
                .and_then(|l| usize::try_from(l.column()).ok())
                .filter(|c| *c > 0),
            &message,
        )
    })
}

/// The error's own message, without its locations (the problem carries
/// the first; an alias error adds where the anchor was defined) and without
/// advice about the parser's options, which a user cannot set.
fn yaml_message(error: &serde_saphyr::Error) -> String {
    let message = error.to_string();
    let message = match message.split_once(", set DuplicateKeyPolicy") {
        Some((head, _)) => head,
        None => &message,
    };
    match message.find(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

/// Turns a serde path and message into a problem, folding `missing field`
/// into the field path so that the message names the field that is absent.
fn problem(
    path: &str,
    line: Option<usize>,
    column: Option<usize>,
    message: &str,
) -> DocumentProblem {
    // `?` is serde_path_to_error's "somewhere unknown" (a duplicate key, for
    // one): name the enclosing field, or none.
    let path = path.strip_suffix(".?").unwrap_or(path);
    let parent = (path != "." && path != "?" && !path.is_empty()).then(|| crate::text::quote(path));
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'));
    let (field, message) = match missing {
        Some(name) => {
            let field = match &parent {
                Some(parent) => format!("{parent}.{name}"),
                None => name.to_string(),
            };
            (Some(field), "missing required field".to_string())
        }
        None => (parent, crate::text::quote(message)),
    };
    DocumentProblem {
        field,
        line,
        column,
        message,
    }
}

fn strip_location(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(index) => &message[..index],
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use serde_json::Value;

    fn json<T: DeserializeOwned>(text: &str) -> Result<T, DocumentProblem> {
        parse_document(text, DocumentFormat::Json)
    }

    #[test]
    fn a_json_key_given_twice_is_an_error_naming_the_object_and_the_key() {
        let problem = json::<BTreeMap<String, BTreeMap<String, String>>>(
            "{\"prompts\": {\"system.base\": \"a\",\n \"system.base\": \"b\"}}",
        )
        .unwrap_err();
        assert_eq!(
            problem.to_string(),
            "field `prompts`, line 2 column 14: duplicate mapping key: system.base"
        );
        let problem = json::<Value>("[{\"k\": 1}, {\"k\": 2, \"k\": 3}]").unwrap_err();
        assert_eq!(problem.field.as_deref(), Some("[1]"));
        let problem = json::<Value>("{\"a\": 1, \"a\": 1}").unwrap_err();
        assert_eq!(problem.field, None, "the top-level object has no name");
        assert_eq!(problem.message, "duplicate mapping key: a");
    }

    /// Keys are kept in a list, then (past 32) in a set: a repeat is found
    /// in either, and an escaped key is the key it reads as.
    #[test]
    fn a_key_given_again_is_found_among_few_keys_or_many() {
        for (count, again) in [(3, 1), (40, 2), (40, 35), (5_000, 4_999)] {
            let mut text: String = (0..count).map(|i| format!("\"k{i}\": {i}, ")).collect();
            text = format!("{{{text}\"k{again}\": 0}}");
            let problem = json::<Value>(&text).unwrap_err();
            assert_eq!(
                problem.message,
                format!("duplicate mapping key: k{again}"),
                "{count}"
            );
        }
        let problem = json::<Value>("{\"ab\": 1, \"a\\u0062\": 2}").unwrap_err();
        assert_eq!(problem.message, "duplicate mapping key: ab");
        let unique: String = (0..5_000).map(|i| format!("\"k{i}\": {i}, ")).collect();
        assert!(json::<Value>(&format!("{{{unique}\"last\": 0}}")).is_ok());
    }

    #[test]
    fn the_same_key_in_sibling_objects_is_not_a_duplicate() {
        let value: Value = json("[{\"k\": 1}, {\"k\": 2, \"j\": {\"k\": 3}}]").unwrap();
        assert_eq!(value[1]["j"]["k"], 3);
    }

    #[test]
    fn a_long_duplicate_key_is_quoted_not_dumped() {
        let key = "k".repeat(10_000);
        let problem = json::<Value>(&format!("{{\"{key}\": 1, \"{key}\": 2}}")).unwrap_err();
        assert!(problem.message.chars().count() < 250, "{}", problem.message);
        assert!(problem.message.starts_with("duplicate mapping key: kkk"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn json_with_repeated_keys_never_panics(text in "[{}\\[\\]\"ab:, 0-9]{0,60}") {
            let _ = json::<Value>(&text);
            let _ = json::<BTreeMap<String, Value>>(&text);
        }
    }
}
