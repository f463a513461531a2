//! Eval suite files (YAML; `docs/suites.md`): which claims, which cases,
//! which prompt variants, how many repeats, and what each answer must show.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::Value;

use crate::chat::request::{ChatMessage, Locale, ThinkingLevel, validate_messages};
use crate::document::{DocumentFormat, DocumentProblem, parse_document};
use crate::prompts::PromptRegistry;

pub use super::shapes::{OneOrMany, ToolExpectation};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Suite {
    /// Defaults to the file name without its extension.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub claims: ClaimSelection,
    #[serde(default)]
    pub defaults: CaseSettings,
    /// Prompt versions to compare; the code default alone when absent.
    #[serde(default)]
    pub variants: Vec<Variant>,
    /// Samples of every turn (default 1).
    #[serde(default)]
    pub repeats: Option<u32>,
    /// The judge of `rubric` expectations (`docs/judging.md`).
    #[serde(default)]
    pub judge: Option<JudgeSection>,
    /// Answer unchanged model calls from the model-call cache (`--cache`;
    /// `--no-cache` overrides it).
    #[serde(default)]
    pub cache: bool,
    #[serde(default)]
    pub cases: Vec<Case>,
    /// More cases, one per row of a CSV or JSONL file (relative to the
    /// suite file; `docs/suites.md`), after the inline ones.
    #[serde(default)]
    pub cases_from: Option<PathBuf>,
}

/// `judge:` in a suite: the judge model and its instructions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JudgeSection {
    /// Who judges: `gemini` (the default) or `openai` (else `--judge-provider`).
    #[serde(default)]
    pub provider: Option<crate::provider::ProviderKind>,
    /// An OpenAI-compatible judge's server, up to its `/v1` (else `OPENAI_BASE_URL`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The judge model (else `--judge-model`'s default).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub thinking_level: Option<ThinkingLevel>,
    /// Judge prompt overrides (`judge.rubric`, `judge.pairwise`) → text.
    #[serde(default)]
    pub prompts: BTreeMap<String, String>,
    /// The Cohen's kappa against people's labels a rubric judge needs
    /// before its verdicts decide the exit code (`judge calibrate`).
    #[serde(default)]
    pub min_kappa: Option<f64>,
    /// The labels that calibration must rest on (default 30).
    #[serde(default)]
    pub min_labels: Option<u64>,
}

/// Which claims of the store a suite (or a case) runs against.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClaimSelection {
    #[serde(default)]
    pub ids: Vec<String>,
    /// Glob patterns over claim ids (`*` and `?`), e.g. `CLM-HH-*`.
    #[serde(default)]
    pub globs: Vec<String>,
    /// Every claim in the store (also the meaning of an empty selection).
    #[serde(default)]
    pub all: bool,
    /// Only claims from this country (`GB`, `US`).
    #[serde(default)]
    pub country: Option<String>,
    /// Only claims whose line of business contains this text (any case).
    #[serde(default)]
    pub line_of_business: Option<String>,
    /// Only claims whose status contains this text (any case).
    #[serde(default)]
    pub status: Option<String>,
}

/// Settings a case may set, with suite-wide defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaseSettings {
    #[serde(default)]
    pub capability: Option<String>,
    #[serde(default)]
    pub locale: Option<Locale>,
    #[serde(default)]
    pub brand: Option<String>,
    #[serde(default)]
    pub screen_actions: Option<bool>,
    #[serde(default)]
    pub voice: Option<bool>,
    /// The date the claim brief gives as today (pin it for reproducible runs).
    #[serde(default)]
    pub today: Option<NaiveDate>,
    /// The share of a case's repeats on a claim that must pass (0 to 1).
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    /// Or: how many of them must pass.
    #[serde(default)]
    pub min_passes: Option<u32>,
    #[serde(default)]
    pub expect: Expectations,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Variant {
    pub name: String,
    /// Override files or folders, relative to the suite file.
    #[serde(default)]
    pub overrides: Vec<PathBuf>,
    /// Inline overrides (prompt id → text); they win over files.
    #[serde(default)]
    pub prompts: BTreeMap<String, String>,
    /// The model this variant's turns ask for (else `--model`).
    #[serde(default)]
    pub model: Option<String>,
    /// The default thinking level of its turns (else `--thinking-level`); a
    /// quick action's own level still wins, as in production…
    #[serde(default)]
    pub thinking_level: Option<ThinkingLevel>,
    /// …unless this is set: then the variant's level wins everywhere.
    #[serde(default)]
    pub force_thinking_level: bool,
    /// Who answers this variant's turns: `gemini` or `openai` (else `--provider`).
    #[serde(default)]
    pub provider: Option<crate::provider::ProviderKind>,
    /// An OpenAI-compatible variant's server, up to its `/v1` (else `OPENAI_BASE_URL`).
    #[serde(default)]
    pub base_url: Option<String>,
}

impl Variant {
    /// A variant with no overrides: the code default, under `name`.
    pub fn named(name: &str) -> Variant {
        Variant {
            name: name.to_string(),
            overrides: Vec::new(),
            prompts: BTreeMap::new(),
            model: None,
            thinking_level: None,
            force_thinking_level: false,
            provider: None,
            base_url: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    pub name: String,
    /// The user's message; or give a `history` ending with the user.
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub history: Option<Vec<ChatMessage>>,
    /// Claims for this case instead of the suite's.
    #[serde(default)]
    pub claims: Option<ClaimSelection>,
    /// With `--provider script`: this case's script (relative to the suite file).
    #[serde(default)]
    pub script: Option<PathBuf>,
    /// Labels for `eval --by tag` (e.g. an injection case's technique).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The recorded turn this case was promoted from (`cases from-runs`).
    #[serde(default)]
    pub from: Option<String>,
    // The case's own settings, the fields of `CaseSettings` written out
    // rather than `#[serde(flatten)]`ed: serde buffers flattened content,
    // which loses the line of any error inside a case, and suite errors
    // must name their line.
    #[serde(default)]
    pub capability: Option<String>,
    #[serde(default)]
    pub locale: Option<Locale>,
    #[serde(default)]
    pub brand: Option<String>,
    #[serde(default)]
    pub screen_actions: Option<bool>,
    #[serde(default)]
    pub voice: Option<bool>,
    #[serde(default)]
    pub today: Option<NaiveDate>,
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    #[serde(default)]
    pub min_passes: Option<u32>,
    #[serde(default)]
    pub expect: Expectations,
}

impl Case {
    /// This case's settings over the suite's defaults.
    pub fn settings(&self, defaults: &CaseSettings) -> CaseSettings {
        CaseSettings {
            capability: self
                .capability
                .clone()
                .or_else(|| defaults.capability.clone()),
            locale: self.locale.or(defaults.locale),
            brand: self.brand.clone().or_else(|| defaults.brand.clone()),
            screen_actions: self.screen_actions.or(defaults.screen_actions),
            voice: self.voice.or(defaults.voice),
            today: self.today.or(defaults.today),
            // A case's own threshold, of either kind, replaces the defaults'.
            pass_threshold: if self.pass_threshold.is_some() || self.min_passes.is_some() {
                self.pass_threshold
            } else {
                defaults.pass_threshold
            },
            min_passes: if self.pass_threshold.is_some() || self.min_passes.is_some() {
                self.min_passes
            } else {
                defaults.min_passes
            },
            expect: defaults.expect.merged_with(&self.expect),
        }
    }
}

/// What a turn must show. Lists add up across defaults and case; numbers
/// and flags set by the case win.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Expectations {
    #[serde(default)]
    pub answer_contains: OneOrMany<String>,
    #[serde(default)]
    pub answer_not_contains: OneOrMany<String>,
    /// Regular expressions the answer must match.
    #[serde(default)]
    pub answer_matches: OneOrMany<String>,
    /// Case-insensitive contains / not contains / matches (default false).
    #[serde(default)]
    pub ignore_case: Option<bool>,
    #[serde(default)]
    pub tool_called: OneOrMany<ToolExpectation>,
    #[serde(default)]
    pub tool_not_called: OneOrMany<ToolExpectation>,
    /// Client actions that must be emitted: `{action: highlight_panel, panel: coverage}`.
    #[serde(default)]
    pub client_action: OneOrMany<Value>,
    /// Client actions that must not be emitted, by kind and target:
    /// `{action: navigate, to: documents/D-09}`.
    #[serde(default)]
    pub client_action_not: OneOrMany<Value>,
    /// The turn must not end in an error (default true).
    #[serde(default)]
    pub no_error: Option<bool>,
    #[serde(default)]
    pub max_rounds: Option<u32>,
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub max_latency_ms: Option<u64>,
    /// Criteria a judge model checks the answer against, one verdict each.
    #[serde(default)]
    pub rubric: OneOrMany<String>,
    /// A rubric verdict passes only with a score at least this (0 to 1).
    #[serde(default)]
    pub rubric_threshold: Option<f64>,
}

impl Expectations {
    /// `self` (suite defaults) with `case` on top.
    pub fn merged_with(&self, case: &Expectations) -> Expectations {
        let join = |a: &OneOrMany<String>, b: &OneOrMany<String>| {
            OneOrMany([a.0.clone(), b.0.clone()].concat())
        };
        Expectations {
            answer_contains: join(&self.answer_contains, &case.answer_contains),
            answer_not_contains: join(&self.answer_not_contains, &case.answer_not_contains),
            answer_matches: join(&self.answer_matches, &case.answer_matches),
            ignore_case: case.ignore_case.or(self.ignore_case),
            tool_called: OneOrMany(
                [self.tool_called.0.clone(), case.tool_called.0.clone()].concat(),
            ),
            tool_not_called: OneOrMany(
                [
                    self.tool_not_called.0.clone(),
                    case.tool_not_called.0.clone(),
                ]
                .concat(),
            ),
            client_action: OneOrMany(
                [self.client_action.0.clone(), case.client_action.0.clone()].concat(),
            ),
            client_action_not: OneOrMany(
                [
                    self.client_action_not.0.clone(),
                    case.client_action_not.0.clone(),
                ]
                .concat(),
            ),
            no_error: case.no_error.or(self.no_error),
            max_rounds: case.max_rounds.or(self.max_rounds),
            max_output_tokens: case.max_output_tokens.or(self.max_output_tokens),
            max_latency_ms: case.max_latency_ms.or(self.max_latency_ms),
            rubric: join(&self.rubric, &case.rubric),
            rubric_threshold: case.rubric_threshold.or(self.rubric_threshold),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("failed to read suite `{path}`: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid suite `{path}`: {problem}")]
    Invalid {
        path: String,
        problem: DocumentProblem,
    },
    /// A rule the YAML's shape cannot express, naming the field.
    #[error("invalid suite `{path}`: field `{field}`: {message}")]
    Rule {
        path: String,
        field: String,
        message: String,
    },
}

/// A parsed suite and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedSuite {
    pub suite: Suite,
    pub path: PathBuf,
    pub name: String,
    /// How many of `suite.cases` are inline; the rest came from `casesFrom`…
    inline_cases: usize,
    /// …from these rows of it, in order.
    rows: Vec<usize>,
}

impl LoadedSuite {
    pub fn load(path: &Path, registry: &PromptRegistry) -> Result<LoadedSuite, SuiteError> {
        let display = path.display().to_string();
        let text = crate::input::read_input_text(path).map_err(|source| SuiteError::Read {
            path: display.clone(),
            source,
        })?;
        let suite: Suite =
            parse_document(&text, DocumentFormat::detect(path, &text)).map_err(|problem| {
                SuiteError::Invalid {
                    path: display.clone(),
                    problem,
                }
            })?;
        let name = suite.name.clone().unwrap_or_else(|| {
            path.file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("suite")
                .to_string()
        });
        let inline_cases = suite.cases.len();
        let mut loaded = LoadedSuite {
            suite,
            path: path.to_path_buf(),
            name,
            inline_cases,
            rows: Vec::new(),
        };
        loaded.add_cases_from()?;
        loaded.check_rules(registry)?;
        Ok(loaded)
    }

    /// Appends the cases of `casesFrom` (relative to the suite file), a
    /// name already used being an error that names the row.
    fn add_cases_from(&mut self) -> Result<(), SuiteError> {
        let Some(file) = self.suite.cases_from.clone() else {
            return Ok(());
        };
        let full = self.base_dir().join(&file);
        let shown = crate::text::quote(&file.display().to_string());
        let fail = |message: String| self.rule("casesFrom".into(), format!("`{shown}`: {message}"));
        let text = crate::input::read_input_text(&full).map_err(|error| fail(error.to_string()))?;
        let jsonl = matches!(
            full.extension().and_then(|e| e.to_str()),
            Some("jsonl" | "ndjson")
        );
        let rows = super::cases_from::parse_cases(&text, jsonl)
            .map_err(|problem| fail(problem.to_string()))?;
        let mut names: std::collections::BTreeSet<String> =
            self.suite.cases.iter().map(|c| c.name.clone()).collect();
        for (row, case) in &rows {
            if !names.insert(case.name.clone()) {
                let used = crate::text::quote(&case.name);
                return Err(fail(format!(
                    "row {row}, column `name`: `{used}` is used twice"
                )));
            }
        }
        if self.suite.cases.len() + rows.len() > super::matrix::MAX_PLANNED_TURNS {
            return Err(fail(format!(
                "more than {} cases in all (the most turns a suite may plan)",
                super::matrix::MAX_PLANNED_TURNS
            )));
        }
        self.rows = rows.iter().map(|(row, _)| *row).collect();
        self.suite
            .cases
            .extend(rows.into_iter().map(|(_, case)| case));
        Ok(())
    }

    /// The folder that relative paths in the suite are taken from.
    pub fn base_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    pub fn repeats(&self) -> u32 {
        self.suite.repeats.unwrap_or(1)
    }

    fn rule(&self, field: String, message: impl Into<String>) -> SuiteError {
        SuiteError::Rule {
            path: self.path.display().to_string(),
            field,
            message: message.into(),
        }
    }

    fn check_rules(&self, registry: &PromptRegistry) -> Result<(), SuiteError> {
        let suite = &self.suite;
        if suite.cases.is_empty() {
            return Err(self.rule("cases".into(), "a suite needs at least one case"));
        }
        if suite.repeats == Some(0) {
            return Err(self.rule("repeats".into(), "must be at least 1"));
        }
        if suite
            .repeats
            .is_some_and(|r| r as usize > super::matrix::MAX_PLANNED_TURNS)
        {
            return Err(self.rule(
                "repeats".into(),
                format!(
                    "at most {} (the most turns a suite may plan)",
                    super::matrix::MAX_PLANNED_TURNS
                ),
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for (index, variant) in suite.variants.iter().enumerate() {
            if !names.insert(variant.name.as_str()) {
                return Err(self.rule(
                    format!("variants[{index}].name"),
                    format!("`{}` is used twice", variant.name),
                ));
            }
            if !is_label(&variant.name) {
                return Err(self.rule(
                    format!("variants[{index}].name"),
                    "use letters, digits, `-`, `_` and `.` only",
                ));
            }
            if variant.model.as_ref().is_some_and(|m| m.trim().is_empty()) {
                return Err(self.rule(
                    format!("variants[{index}].model"),
                    "the model name is empty",
                ));
            }
            check_variant_provider(variant).map_err(|(field, message)| {
                self.rule(format!("variants[{index}].{field}"), message)
            })?;
        }
        if let Some(section) = &suite.judge {
            super::judging::check_judge_section(section)
                .map_err(|(field, message)| self.rule(field, message))?;
        }
        self.check_settings("defaults", &suite.defaults, registry)?;
        // A default threshold is for the cases that have criteria; with none
        // anywhere it would judge nothing, and its mistake would go unseen.
        if suite.defaults.expect.rubric_threshold.is_some()
            && suite
                .cases
                .iter()
                .all(|case| case.settings(&suite.defaults).expect.rubric.0.is_empty())
        {
            return Err(self.rule(
                "defaults.expect.rubricThreshold".into(),
                "no case has a rubric criterion to apply it to",
            ));
        }
        let mut case_names = std::collections::BTreeSet::new();
        for (index, case) in suite.cases.iter().enumerate() {
            if !case_names.insert(case.name.as_str()) {
                return Err(self.rule(
                    format!("cases[{index}].name"),
                    format!("`{}` is used twice", case.name),
                ));
            }
            self.check_case(index, case, registry)
                .map_err(|error| self.at_row(index, error))?;
        }
        Ok(())
    }

    fn check_case(
        &self,
        index: usize,
        case: &Case,
        registry: &PromptRegistry,
    ) -> Result<(), SuiteError> {
        let field = |name: &str| format!("cases[{index}].{name}");
        if !is_label(&case.name) {
            return Err(self.rule(field("name"), "use letters, digits, `-`, `_` and `.` only"));
        }
        if let Some(tag) = case.tags.iter().find(|tag| !is_label(tag)) {
            return Err(self.rule(
                field("tags"),
                format!(
                    "`{}`: use letters, digits, `-`, `_` and `.` only",
                    crate::text::quote(tag)
                ),
            ));
        }
        match (&case.message, &case.history) {
            (Some(_), Some(_)) => {
                return Err(self.rule(field("message"), "give a message or a history, not both"));
            }
            (None, None) => {
                return Err(self.rule(field("message"), "a case needs a message or a history"));
            }
            _ => {}
        }
        let source = if case.message.is_some() {
            "message"
        } else {
            "history"
        };
        validate_messages(&case_messages(case))
            .map_err(|error| self.rule(field(source), error.to_string()))?;
        if case.expect.rubric_threshold.is_some()
            && case
                .settings(&self.suite.defaults)
                .expect
                .rubric
                .0
                .is_empty()
        {
            return Err(self.rule(
                field("expect.rubricThreshold"),
                "no rubric criterion to apply it to (give `rubric` here or in `defaults`)",
            ));
        }
        self.check_settings(
            &format!("cases[{index}]"),
            &case.settings(&CaseSettings::default()),
            registry,
        )
    }

    /// A rule broken by a `casesFrom` case, said by its file, row and column.
    fn at_row(&self, index: usize, error: SuiteError) -> SuiteError {
        let (Some(file), Some(row), SuiteError::Rule { field, message, .. }) = (
            &self.suite.cases_from,
            index
                .checked_sub(self.inline_cases)
                .and_then(|i| self.rows.get(i)),
            &error,
        ) else {
            return error;
        };
        let prefix = format!("cases[{index}].");
        let column = field.strip_prefix(&prefix).unwrap_or(field);
        let column = column.split('[').next().unwrap_or(column);
        let shown = crate::text::quote(&file.display().to_string());
        self.rule(
            "casesFrom".into(),
            format!("`{shown}`: row {row}, column `{column}`: {message}"),
        )
    }

    fn check_settings(
        &self,
        at: &str,
        settings: &CaseSettings,
        registry: &PromptRegistry,
    ) -> Result<(), SuiteError> {
        if let Some(capability) = &settings.capability
            && registry.capability(capability).is_none()
        {
            return Err(self.rule(
                format!("{at}.capability"),
                format!("unknown capability `{capability}`"),
            ));
        }
        if let Some(brand) = &settings.brand
            && registry.brand(brand).is_none()
        {
            return Err(self.rule(format!("{at}.brand"), format!("unknown brand `{brand}`")));
        }
        check_blank_texts(&settings.expect)
            .map_err(|(field, message)| self.rule(format!("{at}.{field}"), message))?;
        for (index, pattern) in settings.expect.answer_matches.0.iter().enumerate() {
            regex::Regex::new(pattern).map_err(|error| {
                self.rule(
                    format!("{at}.expect.answerMatches[{index}]"),
                    format!("not a valid regular expression: {error}"),
                )
            })?;
        }
        for (key, tools) in [
            ("toolCalled", &settings.expect.tool_called),
            ("toolNotCalled", &settings.expect.tool_not_called),
        ] {
            for (index, tool) in tools.0.iter().enumerate() {
                check_tool_name(tool.name()).map_err(|unknown| {
                    self.rule(format!("{at}.expect.{key}[{index}]"), unknown.to_string())
                })?;
            }
        }
        super::judging::check_judging(settings, self.repeats())
            .map_err(|(field, message)| self.rule(format!("{at}.{field}"), message))?;
        for (key, actions) in [
            ("clientAction", &settings.expect.client_action),
            ("clientActionNot", &settings.expect.client_action_not),
        ] {
            for (index, action) in actions.0.iter().enumerate() {
                if action.get("action").and_then(Value::as_str).is_none() {
                    return Err(self.rule(
                        format!("{at}.expect.{key}[{index}]"),
                        "needs an `action` (highlight_panel or navigate)",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The conversation a case sends.
pub fn case_messages(case: &Case) -> Vec<ChatMessage> {
    match (&case.message, &case.history) {
        (Some(message), _) => vec![ChatMessage::user(message.clone())],
        (None, Some(history)) => history.clone(),
        (None, None) => Vec::new(),
    }
}

/// A blank text expectation checks nothing: `answerContains: ""` is in
/// every answer, `answerNotContains: ""` fails every one, and an empty
/// pattern matches anything (whitespace alone is taken for a slip of the
/// same kind). Refused, as a blank rubric criterion is:
/// `Err((field, message))`.
fn check_blank_texts(expect: &Expectations) -> Result<(), (String, &'static str)> {
    for (key, texts, message) in [
        (
            "answerContains",
            &expect.answer_contains,
            "the text is blank",
        ),
        (
            "answerNotContains",
            &expect.answer_not_contains,
            "the text is blank",
        ),
        (
            "answerMatches",
            &expect.answer_matches,
            "the pattern is blank",
        ),
    ] {
        if let Some(index) = texts.0.iter().position(|text| text.trim().is_empty()) {
            return Err((format!("expect.{key}[{index}]"), message));
        }
    }
    Ok(())
}

/// A tool expectation must name a tool a turn can offer: a misspelt name
/// would make `toolNotCalled` always pass and `toolCalled` always fail.
fn check_tool_name(name: &str) -> Result<(), UnknownTool> {
    let known: Vec<&'static str> = crate::tools::all_tools(true)
        .iter()
        .map(|tool| tool.name)
        .collect();
    if known.contains(&name) {
        return Ok(());
    }
    let quoted = crate::text::quote(name);
    Err(match crate::text::closest(name, known.iter().copied()) {
        Some(near) => UnknownTool::Near {
            quoted,
            near: near.to_string(),
        },
        None => UnknownTool::None { quoted, known },
    })
}

#[derive(Debug, thiserror::Error)]
enum UnknownTool {
    #[error("unknown tool `{quoted}`; did you mean `{near}`?")]
    Near { quoted: String, near: String },
    #[error("unknown tool `{quoted}` (the tools: {})", .known.join(", "))]
    None {
        quoted: String,
        known: Vec<&'static str>,
    },
}

/// Names that become labels and file-friendly keys.
fn is_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 100
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A variant's own provider: Gemini or an OpenAI-compatible server (a
/// script, a replay or a deployment is the whole run's `--provider`), with
/// a model of its own when it is OpenAI-compatible, and a base URL only then.
fn check_variant_provider(variant: &Variant) -> Result<(), (&'static str, String)> {
    use crate::provider::ProviderKind;
    match variant.provider {
        None | Some(ProviderKind::Gemini) => {}
        Some(ProviderKind::OpenAi) if variant.model.is_none() => {
            return Err((
                "model",
                "a variant with provider openai names its model".to_string(),
            ));
        }
        Some(ProviderKind::OpenAi) => {}
        Some(other) => {
            return Err((
                "provider",
                format!(
                    "a variant's provider is gemini or openai, not {other} (that is the whole run's --provider)"
                ),
            ));
        }
    }
    if let Some(url) = &variant.base_url {
        if variant.provider != Some(ProviderKind::OpenAi) {
            return Err((
                "baseUrl",
                "is for an OpenAI-compatible variant: set provider: openai".to_string(),
            ));
        }
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err((
                "baseUrl",
                format!("`{}` is not an http(s) URL", crate::text::quote(url)),
            ));
        }
    }
    Ok(())
}
