//! The HTML page: one file with the stylesheet, the script and the data
//! inlined. The data is one `<script type="application/json">` block of
//! compact records over a string table; the page's script parses it once
//! and builds only what is on screen, inserting every string as text.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::compare::{Comparison, GateResult};
use crate::runs::record::Outcome;

use super::load::LoadedRuns;
use super::strings::{StringTable, embed_json, escape_html};
use super::summary::summarize;
use super::turn::ReportTurn;

const STYLE: &str = include_str!("assets/report.css");
const COMMON_JS: &str = include_str!("assets/common.js");
const RUNS_JS: &str = include_str!("assets/runs.js");
const COMPARE_JS: &str = include_str!("assets/compare.js");

/// The report of recorded turns (`promptlab report`).
pub fn runs_page(runs: &LoadedRuns, title: &str, generated_at: DateTime<Utc>) -> String {
    let data = runs_data(runs, title, generated_at);
    shell(title, &data, RUNS_JS)
}

/// The comparison of two prompt versions (`compare --format html`).
pub fn compare_page(
    comparison: &Comparison,
    gate: &GateResult,
    title: &str,
    generated_at: DateTime<Utc>,
) -> String {
    let data = super::compare::compare_data(comparison, gate, title, generated_at);
    shell(title, &data.to_string(), COMPARE_JS)
}

fn shell(title: &str, data: &str, script: &str) -> String {
    let json = embed_json(data);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <title>{title}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <noscript>This report needs JavaScript to show its data.</noscript>\n\
         <main id=\"app\"></main>\n\
         <script type=\"application/json\" id=\"report-data\">{json}</script>\n\
         <script>\n{COMMON_JS}\n{script}\n</script>\n</body>\n</html>\n",
        title = escape_html(title),
    )
}

/// The page's data as JSON text. Each turn is written out as soon as it is
/// built, so that 10,000 turns never sit in memory as a JSON value tree.
fn runs_data(runs: &LoadedRuns, title: &str, generated_at: DateTime<Utc>) -> String {
    let mut strings = StringTable::default();
    let variants = summarize(&runs.turns);
    let index = |names: BTreeSet<&str>| -> HashMap<String, usize> {
        names
            .into_iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), i))
            .collect()
    };
    let claims = index(runs.turns.iter().map(|t| t.claim.as_str()).collect());
    let cases = index(runs.turns.iter().map(|t| t.case.as_str()).collect());
    let versions: HashMap<&str, usize> = variants
        .iter()
        .enumerate()
        .map(|(i, s)| (s.variant.as_str(), i))
        .collect();
    let mut turns = Vec::with_capacity(runs.turns.len());
    for turn in &runs.turns {
        let place = [
            versions.get(turn.version.as_str()).copied().unwrap_or(0),
            claims.get(&turn.claim).copied().unwrap_or(0),
            cases.get(&turn.case).copied().unwrap_or(0),
        ];
        turns.push(turn_json(turn, place, &mut strings).to_string());
    }
    let suites: BTreeSet<&str> = runs
        .turns
        .iter()
        .filter_map(|t| t.suite.as_deref())
        .collect();
    let head = json!({
        "kind": "runs",
        "title": title,
        "generatedAt": generated_at.to_rfc3339(),
        "toolVersion": env!("CARGO_PKG_VERSION"),
        "dirs": runs.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
        "suites": suites,
        "superseded": runs.superseded,
        "otherSuites": runs.other_suites,
        "replays": runs.replays,
        "unreadable": runs.unreadable.iter()
            .map(|(path, why)| json!([path.display().to_string(), why]))
            .collect::<Vec<_>>(),
        "variants": variants,
        "claims": names_in_order(&claims),
        "cases": names_in_order(&cases),
    })
    .to_string();
    // `head` is a non-empty object: drop its closing brace and add the turns
    // and the string table they refer to.
    let strings = Value::from(strings.into_strings()).to_string();
    let mut out = String::with_capacity(
        head.len() + strings.len() + turns.iter().map(|t| t.len() + 1).sum::<usize>() + 32,
    );
    out.push_str(head.strip_suffix('}').unwrap_or(&head));
    out.push_str(",\"turns\":[");
    out.push_str(&turns.join(","));
    out.push_str("],\"s\":");
    out.push_str(&strings);
    out.push('}');
    out
}

fn names_in_order(index: &HashMap<String, usize>) -> Vec<&str> {
    let mut names: Vec<(&str, usize)> = index.iter().map(|(n, i)| (n.as_str(), *i)).collect();
    names.sort_by_key(|(_, i)| *i);
    names.into_iter().map(|(n, _)| n).collect()
}

/// Outcome codes in the page's data: 0 pass, 1 fail, 2 error, 3 no verdict.
pub fn outcome_code(outcome: Option<Outcome>) -> u8 {
    match outcome {
        Some(Outcome::Pass) => 0,
        Some(Outcome::Fail) => 1,
        Some(Outcome::Error) => 2,
        None => 3,
    }
}

/// One turn as a compact record; every string goes through the table.
fn turn_json(turn: &ReportTurn, [v, c, k]: [usize; 3], s: &mut StringTable) -> Value {
    let mut id = |text: &str| s.id(text);
    let pairs = |list: &[(String, String)], id: &mut dyn FnMut(&str) -> u32| {
        list.iter()
            .map(|(a, b)| json!([id(a), id(b)]))
            .collect::<Vec<_>>()
    };
    let messages = pairs(&turn.messages, &mut id);
    let chips = pairs(&turn.chips, &mut id);
    let outcome = match turn.outcome {
        None if super::summary::is_error(turn) => 2,
        other => outcome_code(other),
    };
    json!({
        "v": v, "c": c, "k": k, "n": turn.sample,
        "o": outcome,
        "st": id(&turn.status),
        "f": turn.failures.iter().map(|f| id(f)).collect::<Vec<_>>(),
        "u": [turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cache_read_tokens],
        "ms": turn.latency_ms,
        "ft": turn.first_token_ms,
        "r": turn.rounds,
        "p": id(&turn.path.display().to_string()),
        "id": turn.turn_id,
        "at": turn.started_at.to_rfc3339(),
        "pv": id(&turn.provider),
        "m": id(&turn.model),
        "fp": id(&turn.fingerprint),
        "msg": messages,
        "ch": chips,
        "a": id(&turn.answer),
        "lk": turn.lookups.iter().map(|l| json!([
            l.round, id(&l.tool), id(&l.args), l.ok, id(&l.result)
        ])).collect::<Vec<_>>(),
        "ca": turn.client_actions.iter().map(|a| id(a)).collect::<Vec<_>>(),
        "d": turn.done.as_deref().map(&mut id),
        "e": turn.error.as_deref().map(&mut id),
        "b": turn.blocks.iter().map(|(bid, source, text)| json!([id(bid), id(source), id(text)]))
            .collect::<Vec<_>>(),
    })
}
