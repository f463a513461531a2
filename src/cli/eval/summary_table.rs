//! The eval summary table: one row per variant, fitted to the terminal by
//! `promptlab::table` — the variant, fingerprint and counts stay whole; the
//! cache share, tokens, model and latency give way, in that order — and the
//! judging lines under it.

use promptlab::cost::Cost;
use promptlab::eval::EvalPlan;
use promptlab::eval::report::VariantSummary;
use promptlab::models::ModelTable;
use promptlab::provider::ProviderKind;
use promptlab::table::{Fit, Fitted, fit_table};

const HEADER: [&str; 11] = [
    "variant",
    "fingerprint",
    "model",
    "turns",
    "passed",
    "failed",
    "errors",
    "pass rate",
    "tokens in/out",
    "cache read",
    "latency p50/p95",
];

/// The counts and the pass rate are what an eval is read for; the rest is
/// in `--format ndjson` and the Markdown summary when a narrow terminal
/// leaves it out.
/// The model outranks latency: it is what tells variants of one prompt
/// version apart (a flaky 80-column test showed latency pushing it out).
const FITS: [Fit; 11] = [
    Fit::Keep,
    Fit::Keep,
    Fit::Drop(4),
    Fit::Keep,
    Fit::Keep,
    Fit::Keep,
    Fit::Keep,
    Fit::Keep,
    Fit::Drop(2),
    Fit::Drop(1),
    Fit::Drop(3),
];

pub fn summary_table(summaries: &[VariantSummary], sent: &LevelSent, width: usize) -> Fitted {
    let rows: Vec<[String; 11]> = summaries.iter().map(|s| row(s, sent)).collect();
    fit_table(HEADER, FITS, &rows, width)
}

/// Whether a variant's turns sent its thinking level: an OpenAI-compatible
/// model the model table gives no reasoning levels is sent none, so its row
/// names none.
pub struct LevelSent<'a> {
    /// The run's `--provider`, for variants that choose none.
    pub run_provider: ProviderKind,
    pub models: &'a ModelTable,
}

impl LevelSent<'_> {
    pub fn of(&self, s: &VariantSummary) -> bool {
        let provider = (s.provider.as_deref())
            .and_then(|name| name.parse::<ProviderKind>().ok())
            .unwrap_or(self.run_provider);
        provider != ProviderKind::OpenAi
            || self
                .models
                .reasoning_effort(&s.model, s.thinking_level)
                .is_some()
    }
}

fn row(s: &VariantSummary, sent: &LevelSent) -> [String; 11] {
    let not_run = if s.not_run > 0 {
        format!(" (+{} not run)", s.not_run)
    } else {
        String::new()
    };
    [
        s.variant.clone(),
        s.fingerprint.clone(),
        model_text(s, sent.of(s)),
        format!("{}{not_run}", s.turns),
        s.passed.to_string(),
        s.failed.to_string(),
        s.errors.to_string(),
        format!("{:.1}%", s.pass_rate * 100.0),
        s.usage.in_out(),
        s.cache_read_share
            .map_or("–".to_string(), |share| format!("{:.1}%", share * 100.0)),
        format!(
            "{} / {}",
            seconds(s.latency_p50_ms),
            seconds(s.latency_p95_ms)
        ),
    ]
    .map(|cell| promptlab::sink::printable(&cell))
}

/// `gemini-3.1-flash-lite · low` (`· high, forced`); a variant's own
/// provider beside its model: `llama3.1:8b (openai) · low`; no level when
/// none was `sent`: `llama3.1:8b (openai)`.
pub fn model_text(s: &VariantSummary, sent: bool) -> String {
    let forced = if s.force_thinking_level {
        ", forced"
    } else {
        ""
    };
    let provider = s
        .provider
        .as_ref()
        .map(|p| format!(" ({p})"))
        .unwrap_or_default();
    match sent {
        true => format!("{}{provider} · {}{forced}", s.model, s.thinking_level),
        false => format!("{}{provider}", s.model),
    }
}

pub fn seconds(ms: Option<u64>) -> String {
    ms.map_or("–".to_string(), |ms| {
        format!("{:.2} s", ms as f64 / 1000.0)
    })
}

/// Per variant: what it cost (chat, per turn, thinking tokens, turns
/// answered from the cache); with repeats, the cases that met their
/// threshold, pass@k and pass^k; with rubric criteria, what the judge was
/// asked and cost, apart from the chat.
pub fn judging_lines(summaries: &[VariantSummary], plan: &EvalPlan) -> Vec<String> {
    let repeated = plan.suite.repeats() > 1;
    let mut lines = Vec::new();
    for s in summaries {
        let mut parts = Vec::new();
        let total = Cost::from(s.cost_usd).display();
        // No turn ran (an empty shard): no cost a turn to speak of.
        let mut cost = match s.turns {
            0 => format!("cost {total} (no turns)"),
            _ => {
                let per_turn = Cost::from(s.cost_per_turn_usd).display();
                format!("cost {total} ({per_turn}/turn)")
            }
        };
        if s.thinking_tokens > 0 {
            cost.push_str(&format!(", {} thinking tokens", s.thinking_tokens));
        }
        if s.cached_turns > 0 {
            cost.push_str(&format!(
                ", {} turn{} answered from the model cache (left out of latency)",
                s.cached_turns,
                if s.cached_turns == 1 { "" } else { "s" }
            ));
        }
        parts.push(cost);
        // Said beside the cost it makes unknown, and the "–" of its tokens.
        parts.extend(s.usage.unreported_note());
        if repeated && s.cases > 0 {
            let k = s.samples_per_case;
            parts.push(format!(
                "{} of {} cases met their threshold · pass@{k} {:.1}% · pass^{k} {:.1}%",
                s.cases_met,
                s.cases,
                s.pass_at_k * 100.0,
                s.pass_all_k * 100.0
            ));
        }
        if s.judge_calls > 0 {
            parts.push(format!(
                "judge: {} verdict{} ({} asked, {} from the cache), judge tokens {}, judge cost {}{}",
                s.judge_calls,
                if s.judge_calls == 1 { "" } else { "s" },
                s.judge_calls - s.judge_cached,
                s.judge_cached,
                s.judge_usage.in_out(),
                Cost::from(s.judge_cost_usd).display(),
                s.judge_usage
                    .unreported_note()
                    .map(|note| format!(" (judge {note})"))
                    .unwrap_or_default()
            ));
        }
        if !parts.is_empty() {
            lines.push(format!("{}: {}", s.variant, parts.join(" · ")));
        }
    }
    lines
}
