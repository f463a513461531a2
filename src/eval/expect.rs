//! What a turn showed (`Observation`), from a live turn or a run log, and
//! the verdict of a case's expectations on it.

use serde::Serialize;
use serde_json::Value;

use super::suite::{Expectations, ToolExpectation};
use crate::chat::event::{ChatEvent, Usage};
use crate::chat::request::ChatMessage;
use crate::chat::service::{ModelCallRecord, TurnOutput};
use crate::judge::evidence::add_model_call;
use crate::judge::{RubricVerdict, ToolEvidence};
use crate::runs::record::LogState;
use crate::runs::{RunLog, RunStatus};

/// Everything the expectations look at.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    pub answer: String,
    /// Every tool the model called, with its arguments, known or not.
    pub tool_calls: Vec<(String, Value)>,
    pub client_actions: Vec<Value>,
    pub error: Option<String>,
    pub cancelled: bool,
    pub rounds: u32,
    pub usage: Usage,
    pub latency_ms: u64,
    /// Of `usage.output_tokens`, thinking.
    pub thinking_tokens: u64,
    /// What the turn's model calls cost; `None`: unknown (an unpriced
    /// model, or a turn whose log was lost).
    pub cost_usd: Option<f64>,
    /// Model calls answered from the model-call cache.
    pub cached_calls: u32,
    /// The handler's last message, for a judge.
    #[serde(skip)]
    pub message: String,
    /// Each tool call with the result the model read: a judge's evidence.
    #[serde(skip)]
    pub tools: Vec<ToolEvidence>,
    /// The turn ran on a deployment (`worker`): its tools are known only by
    /// name, from `activity` events, and its rounds not at all.
    #[serde(skip)]
    pub remote: bool,
    /// The turn's id, from its start (or its log's header).
    #[serde(skip)]
    pub turn_id: Option<String>,
    /// The eval run that recorded it, for a turn read from a log; a live
    /// turn belongs to the running one.
    #[serde(skip)]
    pub eval_run: Option<String>,
}

/// The last user message of a conversation.
pub fn last_user_message(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.role == crate::chat::request::Role::User)
        .map(|m| m.text.clone())
        .unwrap_or_default()
}

impl Observation {
    /// Adds one output of a live turn.
    pub fn observe(&mut self, output: &TurnOutput) {
        match output {
            TurnOutput::Event(event) => self.observe_event(event),
            TurnOutput::ModelCall(call) => self.observe_call(call),
            TurnOutput::Cancelled => self.cancelled = true,
            TurnOutput::Started(start) => {
                self.remote = start.remote.is_some();
                self.turn_id = Some(start.turn_id.clone());
            }
            TurnOutput::Prepared(_) | TurnOutput::Notice(_) => {}
        }
    }

    /// A finished model call: its round, its tool calls, and what it cost —
    /// summed per call, so that a turn that errored later still shows the
    /// tokens its completed calls used (`done` repeats the same sum).
    fn observe_call(&mut self, call: &ModelCallRecord) {
        self.rounds += 1;
        add_model_call(&mut self.tools, &call.tool_results_in, &call.tool_calls);
        self.tool_calls.extend(
            call.tool_calls
                .iter()
                .map(|c| (c.name.clone(), c.args.clone())),
        );
        if let Some(summary) = &call.summary {
            self.usage += summary.usage;
        }
    }

    fn observe_event(&mut self, event: &ChatEvent) {
        match event {
            ChatEvent::TextDelta { text } => self.answer.push_str(text),
            ChatEvent::ClientAction(action) => {
                self.client_actions
                    .push(serde_json::to_value(action).unwrap_or(Value::Null));
            }
            ChatEvent::Done(done) => self.usage = done.usage,
            ChatEvent::Error { message } => self.error = Some(message.clone()),
            // The wire shows a known tool's call only as its activity, without
            // arguments (an unknown tool shows nothing, SPEC §1.5).
            ChatEvent::Activity { tool, .. } if self.remote => {
                self.tool_calls.push((tool.clone(), Value::Null));
            }
            ChatEvent::Activity { .. } | ChatEvent::ToolResult { .. } => {}
        }
    }

    /// The same observation, rebuilt from a recorded turn.
    pub fn from_log(log: &RunLog) -> Observation {
        let mut observation = Observation {
            message: last_user_message(&log.header.request.messages),
            remote: log.header.remote.is_some(),
            turn_id: Some(log.header.turn_id.clone()),
            eval_run: log.header.labels.as_ref().and_then(|l| l.eval_run.clone()),
            ..Observation::default()
        };
        for event in log.events() {
            observation.observe_event(event);
        }
        for call in log.model_calls() {
            observation.observe_call(call);
        }
        let view = log.view();
        if let (Some(footer), false) = (view.footer, view.state() == LogState::Partial) {
            // The footer's numbers are what the verdict was judged on.
            observation.usage = footer.usage;
            observation.latency_ms = footer.total_ms;
            observation.thinking_tokens = footer.thinking_tokens;
            observation.cost_usd = footer.cost(&log.header.provider);
            observation.cached_calls = footer.cached_calls;
            observation.cancelled = view.state() == LogState::Ended(RunStatus::Cancelled);
        } else {
            observation
                .error
                .get_or_insert_with(|| "the run log is partial: the turn never finished".into());
        }
        observation
    }
}

pub use crate::runs::record::Outcome;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub outcome: Outcome,
    /// One line per unmet expectation, saying what was seen.
    pub failures: Vec<String>,
    /// The verdict of each rubric criterion, in the case's order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rubric: Vec<RubricVerdict>,
}

impl Verdict {
    /// A verdict of `outcome` with these lines and no rubric.
    pub fn new(outcome: Outcome, failures: Vec<String>) -> Verdict {
        Verdict {
            outcome,
            failures,
            rubric: Vec::new(),
        }
    }
}

/// The verdict of `expect` on what was `seen`, with the judge's verdicts on
/// its rubric criteria in `rubric`. A turn that errored or was cancelled is
/// an `error` carrying that alone: expectations are not judged against a
/// partial answer (unless the case allows errors, `noError: false`). A
/// criterion the judge could not judge makes the verdict an `error` too.
pub fn judge(expect: &Expectations, seen: &Observation, rubric: &[RubricVerdict]) -> Verdict {
    if seen.cancelled {
        return Verdict::new(Outcome::Error, vec!["the turn was cancelled".to_string()]);
    }
    if let Some(error) = seen
        .error
        .as_ref()
        .filter(|_| expect.no_error != Some(false))
    {
        return Verdict::new(
            Outcome::Error,
            vec![format!("the turn ended in an error: {error}")],
        );
    }
    let mut failures = Vec::new();
    check_answer(expect, &seen.answer, &mut failures);
    check_tools(expect, seen, &mut failures);
    check_client_actions(expect, seen, &mut failures);
    // A deployment's rounds are not on the wire: not judged (docs/worker.md).
    if let Some(max) = expect.max_rounds.filter(|_| !seen.remote)
        && seen.rounds > max
    {
        failures.push(format!(
            "{} model rounds, more than the {max} allowed",
            seen.rounds
        ));
    }
    if let Some(max) = expect.max_output_tokens {
        // A limit no count can be checked against is not met: passing it
        // would claim what nobody measured.
        match seen.usage.output_tokens {
            Some(tokens) if tokens > max => failures.push(format!(
                "{tokens} output tokens, more than the {max} allowed"
            )),
            Some(_) => {}
            None => failures.push(format!(
                "output tokens not reported by the server: the limit of {max} cannot be checked"
            )),
        }
    }
    if let Some(max) = expect.max_latency_ms
        && seen.latency_ms > max
    {
        failures.push(format!(
            "took {} ms, more than the {max} ms allowed",
            seen.latency_ms
        ));
    }
    let (errors, used) = check_rubric(expect, rubric, &mut failures);
    let outcome = if !errors.is_empty() {
        Outcome::Error
    } else if failures.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail
    };
    Verdict {
        outcome,
        failures: [errors, failures].concat(),
        rubric: used,
    }
}

/// `clientAction` and `clientActionNot`: each wanted action emitted (a
/// subset of one that was), no unwanted one.
fn check_client_actions(expect: &Expectations, seen: &Observation, failures: &mut Vec<String>) {
    for wanted in &expect.client_action.0 {
        if !seen
            .client_actions
            .iter()
            .any(|action| is_subset(wanted, action))
        {
            failures.push(format!(
                "client action {} was not emitted (emitted: {})",
                compact(wanted),
                list_or_none(seen.client_actions.iter().map(compact))
            ));
        }
    }
    for unwanted in &expect.client_action_not.0 {
        if let Some(action) = seen
            .client_actions
            .iter()
            .find(|action| is_subset(unwanted, action))
        {
            failures.push(format!(
                "client action {} was emitted, which it must not be",
                compact(action)
            ));
        }
    }
}

/// How a rubric criterion's failure line starts (`rubric "…"`): the one
/// rule every reader of failure lines tells rubric failures by.
pub fn rubric_line_start(criterion: &str) -> String {
    format!("rubric \"{}\"", crate::text::one_line(criterion, 80))
}

/// Whether a failure line is a rubric criterion's (`rubric_line_start`).
pub fn is_rubric_line(line: &str) -> bool {
    line.starts_with("rubric \"")
}

/// Each criterion's verdict: a fail adds a failure line; a criterion not
/// judged, or judged with an error, adds an error line. Returns the error
/// lines and the verdicts used, in the case's order.
fn check_rubric(
    expect: &Expectations,
    rubric: &[RubricVerdict],
    failures: &mut Vec<String>,
) -> (Vec<String>, Vec<RubricVerdict>) {
    let (mut errors, mut used) = (Vec::new(), Vec::new());
    for criterion in &expect.rubric.0 {
        let named = rubric_line_start(criterion);
        let Some(verdict) = rubric.iter().find(|v| &v.criterion == criterion) else {
            errors.push(format!(
                "{named}: not judged (the turn was recorded without this criterion: re-score it with `eval --rescore`)"
            ));
            continue;
        };
        used.push(verdict.clone());
        if let Some(error) = &verdict.error {
            errors.push(format!("{named}: {error}"));
            continue;
        }
        let score = verdict
            .score
            .map(|s| format!(" (score {s:.2})"))
            .unwrap_or_default();
        let reason = crate::text::one_line(&verdict.reason, 160);
        match (verdict.pass, expect.rubric_threshold, verdict.score) {
            (Some(true), Some(_), None) => errors.push(format!(
                "{named}: judge: the reply has no `score`, and rubricThreshold needs one"
            )),
            (Some(true), Some(threshold), Some(score)) if score + 1e-9 < threshold => failures
                .push(format!(
                    "{named}: score {score:.2} is below the threshold {threshold:.2}: {reason}"
                )),
            (Some(true), _, _) => {}
            _ => failures.push(format!("{named} failed{score}: {reason}")),
        }
    }
    (errors, used)
}

fn check_answer(expect: &Expectations, answer: &str, failures: &mut Vec<String>) {
    let ignore_case = expect.ignore_case.unwrap_or(false);
    let fold = |text: &str| {
        if ignore_case {
            text.to_lowercase()
        } else {
            text.to_string()
        }
    };
    let folded = fold(answer);
    let excerpt = excerpt(answer);
    for needle in &expect.answer_contains.0 {
        if !folded.contains(&fold(needle)) {
            failures.push(format!(
                "answer does not contain \"{needle}\" (answer: \"{excerpt}\")"
            ));
        }
    }
    for needle in &expect.answer_not_contains.0 {
        if folded.contains(&fold(needle)) {
            failures.push(format!(
                "answer contains \"{needle}\", which it must not (answer: \"{excerpt}\")"
            ));
        }
    }
    for pattern in &expect.answer_matches.0 {
        let regex = regex::RegexBuilder::new(pattern)
            .case_insensitive(ignore_case)
            .build();
        match regex {
            Ok(regex) if regex.is_match(answer) => {}
            Ok(_) => failures.push(format!(
                "answer does not match /{pattern}/ (answer: \"{excerpt}\")"
            )),
            Err(error) => failures.push(format!(
                "/{pattern}/ is not a valid regular expression: {error}"
            )),
        }
    }
}

fn check_tools(expect: &Expectations, seen: &Observation, failures: &mut Vec<String>) {
    let called = || {
        list_or_none(
            seen.tool_calls
                .iter()
                .map(|(name, args)| format!("{name} {}", compact(args))),
        )
    };
    // A deployment's tool arguments are not on the wire: matched by name
    // alone (docs/worker.md).
    let matches = |wanted: &ToolExpectation, (name, args): &(String, Value)| {
        name == wanted.name()
            && (seen.remote || wanted.args().is_none_or(|want| is_subset(want, args)))
    };
    for wanted in &expect.tool_called.0 {
        if !seen.tool_calls.iter().any(|call| matches(wanted, call)) {
            let with = wanted
                .args()
                .map(|a| format!(" with {}", compact(a)))
                .unwrap_or_default();
            failures.push(format!(
                "{} was not called{with} (called: {})",
                wanted.name(),
                called()
            ));
        }
    }
    for unwanted in &expect.tool_not_called.0 {
        if seen.tool_calls.iter().any(|call| matches(unwanted, call)) {
            let with = unwanted
                .args()
                .map(|a| format!(" with {}", compact(a)))
                .unwrap_or_default();
            failures.push(format!(
                "{} was called{with}, which it must not be",
                unwanted.name()
            ));
        }
    }
}

/// Every key of `wanted` is in `actual` with an equal (recursively subset) value.
fn is_subset(wanted: &Value, actual: &Value) -> bool {
    match (wanted, actual) {
        (Value::Object(wanted), Value::Object(actual)) => wanted
            .iter()
            .all(|(key, value)| actual.get(key).is_some_and(|other| is_subset(value, other))),
        _ => wanted == actual,
    }
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn list_or_none(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

fn excerpt(answer: &str) -> String {
    let flat: String = answer.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut: String = flat.chars().take(120).collect();
    if flat.chars().count() > 120 {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::suite::OneOrMany;
    use serde_json::json;

    fn seen() -> Observation {
        Observation {
            answer: "The excess is £350, per the policy section.".into(),
            tool_calls: vec![("get_claim_section".into(), json!({"section": "policy"}))],
            client_actions: vec![json!({"action": "highlight_panel", "panel": "policy"})],
            rounds: 2,
            usage: Usage::known(100, 50, 0),
            latency_ms: 1200,
            ..Observation::default()
        }
    }

    #[test]
    fn met_expectations_pass() {
        let expect = Expectations {
            answer_contains: OneOrMany(vec!["£350".into()]),
            answer_not_contains: OneOrMany(vec!["deductible".into()]),
            answer_matches: OneOrMany(vec![r"excess is £\d+".into()]),
            tool_called: OneOrMany(vec![ToolExpectation::WithArgs {
                name: "get_claim_section".into(),
                args: Some(json!({"section": "policy"})),
            }]),
            tool_not_called: OneOrMany(vec![ToolExpectation::Name("read_document".into())]),
            client_action: OneOrMany(vec![json!({"action": "highlight_panel"})]),
            max_rounds: Some(2),
            max_output_tokens: Some(50),
            max_latency_ms: Some(1200),
            ..Expectations::default()
        };
        assert_eq!(
            judge(&expect, &seen(), &[]),
            Verdict::new(Outcome::Pass, vec![])
        );
    }

    #[test]
    fn each_unmet_expectation_says_what_was_seen() {
        let expect = Expectations {
            answer_contains: OneOrMany(vec!["EXCESS".into()]),
            tool_called: OneOrMany(vec![ToolExpectation::WithArgs {
                name: "get_claim_section".into(),
                args: Some(json!({"section": "coverage"})),
            }]),
            tool_not_called: OneOrMany(vec![ToolExpectation::Name("get_claim_section".into())]),
            client_action: OneOrMany(vec![json!({"action": "navigate"})]),
            max_rounds: Some(1),
            ..Expectations::default()
        };
        let verdict = judge(&expect, &seen(), &[]);
        assert_eq!(verdict.outcome, Outcome::Fail);
        assert_eq!(
            verdict.failures,
            [
                "answer does not contain \"EXCESS\" (answer: \"The excess is £350, per the policy section.\")",
                "get_claim_section was not called with {\"section\":\"coverage\"} (called: get_claim_section {\"section\":\"policy\"})",
                "get_claim_section was called, which it must not be",
                "client action {\"action\":\"navigate\"} was not emitted (emitted: {\"action\":\"highlight_panel\",\"panel\":\"policy\"})",
                "2 model rounds, more than the 1 allowed",
            ]
        );
        let ignoring_case = Expectations {
            answer_contains: OneOrMany(vec!["EXCESS".into()]),
            ignore_case: Some(true),
            ..Expectations::default()
        };
        assert_eq!(judge(&ignoring_case, &seen(), &[]).outcome, Outcome::Pass);
    }

    #[test]
    fn a_token_limit_on_output_the_server_did_not_report_is_not_met() {
        let expect = Expectations {
            max_output_tokens: Some(50),
            ..Expectations::default()
        };
        let unreported = Observation {
            usage: Usage::UNREPORTED,
            ..seen()
        };
        let verdict = judge(&expect, &unreported, &[]);
        assert_eq!(verdict.outcome, Outcome::Fail);
        assert_eq!(
            verdict.failures,
            ["output tokens not reported by the server: the limit of 50 cannot be checked"]
        );
    }

    #[test]
    fn an_error_is_an_error_unless_allowed() {
        let errored = Observation {
            error: Some("Claim X not found.".into()),
            ..Observation::default()
        };
        let expect = Expectations {
            answer_contains: OneOrMany(vec!["£350".into()]),
            ..Expectations::default()
        };
        let verdict = judge(&expect, &errored, &[]);
        assert_eq!(
            (verdict.outcome, verdict.failures),
            (
                Outcome::Error,
                vec!["the turn ended in an error: Claim X not found.".to_string()]
            ),
            "the error alone: expectations are not judged on a partial answer"
        );
        let allowed = Expectations {
            no_error: Some(false),
            ..Expectations::default()
        };
        assert_eq!(judge(&allowed, &errored, &[]).outcome, Outcome::Pass);
    }

    #[test]
    fn client_action_not_fails_only_on_its_kind_and_target() {
        let not = |value: Value| Expectations {
            client_action_not: OneOrMany(vec![value]),
            ..Expectations::default()
        };
        let other_panel = not(json!({"action": "highlight_panel", "panel": "coverage"}));
        assert_eq!(judge(&other_panel, &seen(), &[]).outcome, Outcome::Pass);
        let other_kind = not(json!({"action": "navigate", "to": "policy"}));
        assert_eq!(judge(&other_kind, &seen(), &[]).outcome, Outcome::Pass);
        let same = not(json!({"action": "highlight_panel", "panel": "policy"}));
        assert_eq!(
            judge(&same, &seen(), &[]).failures,
            [
                "client action {\"action\":\"highlight_panel\",\"panel\":\"policy\"} was emitted, which it must not be"
            ]
        );
        let any_highlight = not(json!({"action": "highlight_panel"}));
        assert_eq!(judge(&any_highlight, &seen(), &[]).outcome, Outcome::Fail);
    }
}
