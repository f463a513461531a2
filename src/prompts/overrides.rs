//! Prompt Lab override files: loading, merging, and the usable rule.
//!
//! File format (YAML or JSON; documented in `docs/overrides.md`):
//! ```yaml
//! name: plain-spoken            # optional
//! description: Shorter answers  # optional
//! prompts:
//!   system.base: |
//!     You are {{assistant}}...
//! ```
//! Several files merge in the order given, the later winning per id. A
//! directory stands for its `.yaml`, `.yml` and `.json` files in name order.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::registry::{CLAIM_BRIEF, PromptRegistry};
use crate::document::{DocumentFormat, DocumentProblem, parse_document};

/// The longest override text that is usable, in UTF-16 code units
/// (JavaScript's `string.length`, as production counts).
pub const MAX_OVERRIDE_CHARS: usize = 32_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverrideFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    prompts: BTreeMap<String, PromptText>,
}

/// A prompt text: a string, and nothing else. `system.base: 42` is an
/// error rather than the text `"42"`, since a number or a list where a
/// prompt belongs is a mistake in the file, not a prompt.
#[derive(Debug)]
struct PromptText(String);

impl<'de> Deserialize<'de> for PromptText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl serde::de::Visitor<'_> for TextVisitor {
            type Value = PromptText;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a prompt text (a string)")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<PromptText, E> {
                Ok(PromptText(text.to_string()))
            }
        }
        // `deserialize_any` lets the format say what the value is, so an
        // unquoted YAML `42` arrives as a number and is refused.
        deserializer.deserialize_any(TextVisitor)
    }
}

/// One loaded override file, for reports.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct OverrideFileInfo {
    pub path: String,
    pub name: Option<String>,
    pub description: Option<String>,
}

/// Overrides merged from files: prompt id → text, with the file each came from.
#[derive(Debug, Clone, Default)]
pub struct OverrideSet {
    pub prompts: BTreeMap<String, String>,
    pub sources: BTreeMap<String, String>,
    pub files: Vec<OverrideFileInfo>,
    /// Prompts a later file gave again, replacing an earlier file's text:
    /// a folder of alternatives (what `serve` saves) layered by mistake.
    pub shadowed: Vec<Shadowed>,
}

/// A prompt one file gave and a later one replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    pub id: String,
    pub earlier: String,
    pub later: String,
}

impl fmt::Display for Shadowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "override `{}` from `{}` replaces the one from `{}` (files are layered in name order; \
             to compare alternatives, make each a variant or pass one file)",
            self.id, self.later, self.earlier
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("failed to read override file `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid override file `{path}`: {problem}")]
    Invalid {
        path: String,
        problem: DocumentProblem,
    },
    #[error("override folder `{0}` holds no .yaml, .yml or .json files")]
    EmptyFolder(String),
}

impl OverrideSet {
    /// Loads and merges files and folders, later paths winning per id.
    pub fn load(paths: &[PathBuf]) -> Result<OverrideSet, OverrideError> {
        let mut set = OverrideSet::default();
        for path in paths {
            for file in expand(path)? {
                set.merge_file(&file)?;
            }
        }
        Ok(set)
    }

    fn merge_file(&mut self, path: &Path) -> Result<(), OverrideError> {
        let display = path.display().to_string();
        let text = crate::input::read_input_text(path).map_err(|source| OverrideError::Read {
            path: display.clone(),
            source,
        })?;
        let format = DocumentFormat::detect(path, &text);
        let file =
            parse_override_file(&text, format).map_err(|problem| OverrideError::Invalid {
                path: display.clone(),
                problem,
            })?;
        for (id, text) in file.prompts {
            if let Some(earlier) = self.sources.insert(id.clone(), display.clone())
                && earlier != display
            {
                self.shadowed.push(Shadowed {
                    id: id.clone(),
                    earlier,
                    later: display.clone(),
                });
            }
            self.prompts.insert(id, text);
        }
        self.files.push(OverrideFileInfo {
            path: display,
            name: file.name,
            description: file.description,
        });
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }
}

/// An override file's contents: its optional name and description, and
/// prompt id → text.
pub(super) struct ParsedOverrideFile {
    pub name: Option<String>,
    pub description: Option<String>,
    pub prompts: BTreeMap<String, String>,
}

/// The one reading of the file format (also used to check what
/// `override_file.rs` writes).
pub(super) fn parse_override_file(
    text: &str,
    format: DocumentFormat,
) -> Result<ParsedOverrideFile, DocumentProblem> {
    let file: OverrideFile = parse_document(text, format)?;
    Ok(ParsedOverrideFile {
        name: file.name,
        description: file.description,
        prompts: file
            .prompts
            .into_iter()
            .map(|(id, PromptText(text))| (id, text))
            .collect(),
    })
}

fn expand(path: &Path) -> Result<Vec<PathBuf>, OverrideError> {
    let read_error = |source| OverrideError::Read {
        path: path.display().to_string(),
        source,
    };
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(read_error)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|file| {
            file.is_file()
                && matches!(
                    file.extension().and_then(|ext| ext.to_str()),
                    Some("yaml" | "yml" | "json")
                )
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(OverrideError::EmptyFolder(path.display().to_string()));
    }
    Ok(files)
}

/// Why an override was not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum UnusableReason {
    UnknownId,
    ClaimBrief,
    Blank,
    TooLong { chars: usize },
}

impl fmt::Display for UnusableReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnusableReason::UnknownId => f.write_str("not a known prompt id"),
            UnusableReason::ClaimBrief => {
                f.write_str("the claim brief is built from the claim and is never overridden")
            }
            UnusableReason::Blank => f.write_str("the text is blank"),
            UnusableReason::TooLong { chars } => write!(
                f,
                "the text is {chars} characters, over the limit of {MAX_OVERRIDE_CHARS}"
            ),
        }
    }
}

/// An override that was not applied, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IgnoredOverride {
    pub id: String,
    pub reason: UnusableReason,
}

impl fmt::Display for IgnoredOverride {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "override `{}` ignored: {}", self.id, self.reason)
    }
}

/// An applied override that uses a `{{name}}` no brand fills: it is still
/// applied as written (the usable rule and the fingerprint stay
/// browser-identical), but the model will read the braces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UnknownPlaceholder {
    pub id: String,
    pub placeholder: String,
}

impl fmt::Display for UnknownPlaceholder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "override `{}` uses `{{{{{}}}}}`, which no brand fills (it reaches the model as written; \
             the brand placeholders are {{{{assistant}}}}, {{{{product}}}} and {{{{pronunciation}}}})",
            self.id, self.placeholder
        )
    }
}

/// Overrides split by the usable rule (SPEC §1.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedOverrides {
    /// Usable overrides, by id: these are applied and fingerprinted.
    pub applied: BTreeMap<String, String>,
    pub ignored: Vec<IgnoredOverride>,
    /// Applied overrides with a placeholder no brand fills.
    pub unknown_placeholders: Vec<UnknownPlaceholder>,
}

/// Why `text` cannot override prompt `id`, or `None` when it is usable.
pub fn unusable_reason(id: &str, text: &str, registry: &PromptRegistry) -> Option<UnusableReason> {
    if id == CLAIM_BRIEF {
        return Some(UnusableReason::ClaimBrief);
    }
    if !registry.is_prompt_id(id) {
        return Some(UnusableReason::UnknownId);
    }
    // JavaScript's trim() whitespace (with U+FEFF) and `length`, as production.
    if crate::text::is_js_blank(text) {
        return Some(UnusableReason::Blank);
    }
    let chars = crate::text::utf16_len(text);
    (chars > MAX_OVERRIDE_CHARS).then_some(UnusableReason::TooLong { chars })
}

/// Applies the usable rule to every override of a request.
pub fn resolve_overrides(
    overrides: &BTreeMap<String, String>,
    registry: &PromptRegistry,
) -> ResolvedOverrides {
    let mut resolved = ResolvedOverrides::default();
    for (id, text) in overrides {
        match unusable_reason(id, text, registry) {
            None => {
                for placeholder in super::brands::unknown_placeholders(text) {
                    resolved.unknown_placeholders.push(UnknownPlaceholder {
                        id: id.clone(),
                        placeholder,
                    });
                }
                resolved.applied.insert(id.clone(), text.clone());
            }
            Some(reason) => resolved.ignored.push(IgnoredOverride {
                id: id.clone(),
                reason,
            }),
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> &'static PromptRegistry {
        PromptRegistry::embedded()
    }

    #[test]
    fn each_unusable_reason_is_reported() {
        let overrides: BTreeMap<String, String> = [
            ("system.base", "You are {{assistant}}."),
            ("system.nonsense", "x"),
            ("claim.brief", "Claim: nothing to see"),
            ("system.safety", " \n\t "),
            ("system.voice", &"é".repeat(MAX_OVERRIDE_CHARS + 1)),
            ("system.locale_uk", &"é".repeat(MAX_OVERRIDE_CHARS)),
        ]
        .into_iter()
        .map(|(id, text)| (id.to_string(), text.to_string()))
        .collect();
        let resolved = resolve_overrides(&overrides, registry());
        assert_eq!(
            resolved.applied.keys().collect::<Vec<_>>(),
            ["system.base", "system.locale_uk"]
        );
        let reasons: Vec<(&str, &UnusableReason)> = resolved
            .ignored
            .iter()
            .map(|ignored| (ignored.id.as_str(), &ignored.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                ("claim.brief", &UnusableReason::ClaimBrief),
                ("system.nonsense", &UnusableReason::UnknownId),
                ("system.safety", &UnusableReason::Blank),
                ("system.voice", &UnusableReason::TooLong { chars: 32_001 }),
            ]
        );
    }

    #[test]
    fn later_files_win_per_id_and_folders_expand_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("b.yaml"),
            "prompts:\n  system.base: from b\n  system.voice: voice from b\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a.json"),
            r#"{"name": "a", "prompts": {"system.base": "from a", "system.safety": "safety from a"}}"#,
        )
        .unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let extra = elsewhere.path().join("extra.yml");
        std::fs::write(&extra, "prompts:\n  system.voice: voice from extra\n").unwrap();
        let set = OverrideSet::load(&[dir.path().to_path_buf(), extra.clone()]).unwrap();
        assert_eq!(set.prompts["system.base"], "from b");
        assert_eq!(set.prompts["system.safety"], "safety from a");
        assert_eq!(set.prompts["system.voice"], "voice from extra");
        assert_eq!(set.sources["system.voice"], extra.display().to_string());
        assert_eq!(set.files.len(), 3);
    }

    #[test]
    fn counting_and_blankness_follow_javascript() {
        let registry = registry();
        // U+FEFF is whitespace to JavaScript's trim().
        assert_eq!(
            unusable_reason("system.base", "\u{FEFF} ", registry),
            Some(UnusableReason::Blank)
        );
        // An emoji is two UTF-16 code units.
        let emoji = "😀".repeat(MAX_OVERRIDE_CHARS / 2);
        assert_eq!(unusable_reason("system.base", &emoji, registry), None);
        assert_eq!(
            unusable_reason("system.base", &format!("{emoji}a"), registry),
            Some(UnusableReason::TooLong { chars: 32_001 })
        );
    }

    fn load_error(name: &str, text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        OverrideSet::load(&[path]).unwrap_err().to_string()
    }

    #[test]
    fn a_duplicate_id_is_an_error_with_its_line() {
        // Regression: the second `system.base` silently won.
        let error = load_error(
            "dup.yaml",
            "prompts:\n  system.base: one\n  system.base: two\n",
        );
        assert!(error.contains("dup.yaml"), "{error}");
        assert!(error.contains("line 3"), "{error}");
        assert!(error.to_lowercase().contains("duplicate"), "{error}");
    }

    #[test]
    fn a_prompt_that_is_not_a_string_is_an_error() {
        // Regression: `system.base: 42` became the text "42".
        for (name, text) in [
            ("n.yaml", "prompts:\n  system.base: 42\n"),
            ("l.yaml", "prompts:\n  system.base: [a, b]\n"),
            ("n.json", r#"{"prompts": {"system.base": 42}}"#),
        ] {
            let error = load_error(name, text);
            assert!(error.contains("system.base"), "{name}: {error}");
            assert!(error.contains("a prompt text"), "{name}: {error}");
        }
        let quoted = tempfile::tempdir().unwrap();
        let path = quoted.path().join("q.yaml");
        std::fs::write(&path, "prompts:\n  system.base: \"42\"\n").unwrap();
        assert_eq!(
            OverrideSet::load(&[path]).unwrap().prompts["system.base"],
            "42"
        );
    }

    #[test]
    fn a_malformed_file_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.yaml");
        std::fs::write(&path, "name: x\nprompt:\n  system.base: hi\n").unwrap();
        let error = OverrideSet::load(&[path]).unwrap_err().to_string();
        assert!(error.contains("x.yaml"), "{error}");
        assert!(error.contains("line 2"), "{error}");
        assert!(error.contains("prompt"), "{error}");
    }
}
