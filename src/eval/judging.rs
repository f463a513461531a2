//! The eval side of judging: suite rules for rubrics and thresholds, the
//! evidence of a turn, and its rubric criteria put to the judge.

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use super::expect::Observation;
use super::suite::{CaseSettings, Expectations, JudgeSection};
use crate::judge::{Evidence, Judge, JudgePrompts, RubricVerdict};

/// The longest rubric criterion (a sentence or a short paragraph).
pub const MAX_CRITERION_CHARS: usize = 2_000;
/// The most criteria one case may have: each is a judge call per turn, all
/// made at once.
pub const MAX_CRITERIA: usize = 20;

/// Rubric and threshold rules of a case's (or the defaults') settings:
/// `Err((field, message))`.
pub fn check_judging(settings: &CaseSettings, repeats: u32) -> Result<(), (String, String)> {
    let expect = &settings.expect;
    if expect.rubric.0.len() > MAX_CRITERIA {
        return Err((
            "expect.rubric".into(),
            format!(
                "{} criteria; at most {MAX_CRITERIA} (each is a judge call per turn)",
                expect.rubric.0.len()
            ),
        ));
    }
    for (index, criterion) in expect.rubric.0.iter().enumerate() {
        let field = format!("expect.rubric[{index}]");
        if criterion.trim().is_empty() {
            return Err((field, "the criterion is blank".into()));
        }
        if criterion.chars().count() > MAX_CRITERION_CHARS {
            return Err((
                field,
                format!("longer than {MAX_CRITERION_CHARS} characters"),
            ));
        }
        if expect.rubric.0[..index].contains(criterion) {
            return Err((field, "the same criterion twice".into()));
        }
    }
    if let Some(threshold) = expect.rubric_threshold
        && !(0.0..=1.0).contains(&threshold)
    {
        return Err((
            "expect.rubricThreshold".into(),
            "must be from 0 to 1".into(),
        ));
    }
    if let Some(share) = settings.pass_threshold
        && !(share > 0.0 && share <= 1.0)
    {
        return Err((
            "passThreshold".into(),
            "must be above 0 and at most 1".into(),
        ));
    }
    if settings.pass_threshold.is_some() && settings.min_passes.is_some() {
        return Err((
            "minPasses".into(),
            "give passThreshold or minPasses, not both".into(),
        ));
    }
    match settings.min_passes {
        Some(0) => Err(("minPasses".into(), "must be at least 1".into())),
        Some(passes) if passes > repeats => Err((
            "minPasses".into(),
            format!("{passes} passes cannot happen in {repeats} repeats"),
        )),
        _ => Ok(()),
    }
}

/// The suite's `judge:` section: `Err((field, message))`.
pub fn check_judge_section(section: &JudgeSection) -> Result<(), (String, String)> {
    if section.model.as_ref().is_some_and(|m| m.trim().is_empty()) {
        return Err(("judge.model".into(), "the model name is empty".into()));
    }
    use crate::provider::ProviderKind;
    if let Some(provider) = section.provider
        && !matches!(provider, ProviderKind::Gemini | ProviderKind::OpenAi)
    {
        return Err((
            "judge.provider".into(),
            format!("a judge is gemini or openai, not {provider}"),
        ));
    }
    if let Some(url) = &section.base_url {
        let http = url.starts_with("http://") || url.starts_with("https://");
        if !http {
            return Err((
                "judge.baseUrl".into(),
                format!("`{}` is not an http(s) URL", crate::text::quote(url)),
            ));
        }
        if section.provider != Some(ProviderKind::OpenAi) {
            return Err((
                "judge.baseUrl".into(),
                "is for an OpenAI-compatible judge: set judge.provider: openai".into(),
            ));
        }
    }
    if let Some(kappa) = section.min_kappa
        && !(-1.0..=1.0).contains(&kappa)
    {
        return Err((
            "judge.minKappa".into(),
            format!("{kappa} is not a kappa: between -1 and 1"),
        ));
    }
    if section.min_labels == Some(0) {
        return Err(("judge.minLabels".into(), "must be at least 1".into()));
    }
    judge_prompts(section)
        .map(|_| ())
        .map_err(|e| ("judge.prompts".into(), e.to_string()))
}

/// The judge's instructions with the suite's overrides applied.
pub fn judge_prompts(section: &JudgeSection) -> Result<JudgePrompts, crate::judge::PromptError> {
    JudgePrompts::with_overrides(
        section
            .prompts
            .iter()
            .map(|(id, text)| (id.as_str(), text.as_str())),
    )
}

/// What the judge reads of a turn whose user said `message`.
pub fn evidence(message: &str, seen: &Observation) -> Evidence {
    Evidence {
        message: message.to_string(),
        answer: seen.answer.clone(),
        tools: seen.tools.clone(),
    }
}

/// Each rubric criterion of `expect` put to `judge`, all at once. A turn
/// that errored or was cancelled is not judged: its verdict is the error.
pub async fn judge_rubric(
    judge: &Judge,
    expect: &Expectations,
    message: &str,
    seen: &Observation,
    cancel: &CancellationToken,
    notices: Option<&crate::judge::RetryNotices>,
) -> Vec<RubricVerdict> {
    let unjudgeable = seen.cancelled || (seen.error.is_some() && expect.no_error != Some(false));
    if expect.rubric.0.is_empty() || unjudgeable {
        return Vec::new();
    }
    let evidence = evidence(message, seen);
    join_all(
        expect
            .rubric
            .0
            .iter()
            .map(|criterion| judge.rubric(criterion, &evidence, cancel, notices)),
    )
    .await
}
