//! Issue #12: property tests that no parser of outside input panics, on
//! random text, random bytes, and random damage to valid documents. Each
//! property only asks for "an answer, Ok or Err": a panic fails it.

use std::path::Path;

use promptlab::chat::ChatMessage;
use promptlab::claims::load::{DocumentFormat, parse_document};
use promptlab::claims::money::{Money, parse_amount};
use promptlab::claims::parse_claim_bytes;
use promptlab::eval::matrix::Shard;
use promptlab::eval::suite::{LoadedSuite, Suite};
use promptlab::prompts::{OverrideSet, PromptRegistry};
use promptlab::provider::gemini::errors::{parse_duration, parse_error_body};
use promptlab::provider::script::Script;
use promptlab::runs::store::summarize;
use promptlab::runs::{read_run_log, read_run_log_checked};
use proptest::prelude::*;

/// Characters that make YAML and JSON structure, and a few that break it.
const STRUCTURE: &str = "[\\[\\]{}:,\"'&*!|>#%@`?\\- \n\tA-Za-z0-9.\\\\é😀\u{0}\u{FEFF}]{0,300}";

fn valid_claim() -> String {
    std::fs::read_to_string(format!(
        "{}/claims/CLM-HH-0001.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// `text` with `insert` spliced in at a fraction of its length, after
/// cutting `remove` bytes there (on character boundaries).
fn damage(text: &str, at: usize, remove: usize, insert: &str) -> String {
    let mut at = at % (text.len() + 1);
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let mut end = (at + remove).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    format!("{}{insert}{}", &text[..at], &text[end..])
}

fn both_formats(text: &str) {
    for name in ["c.json", "c.yaml"] {
        let _ = parse_claim_bytes(text.as_bytes(), Path::new(name));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn claim_documents_never_panic(text in STRUCTURE) {
        both_formats(&text);
    }

    #[test]
    fn damaged_claims_never_panic(at in any::<usize>(), remove in 0usize..40, insert in STRUCTURE) {
        let text = valid_claim();
        both_formats(&damage(&text, at, remove, &insert));
    }

    #[test]
    fn claim_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse_claim_bytes(&bytes, Path::new("c.json"));
        let _ = parse_claim_bytes(&bytes, Path::new("c.yaml"));
    }

    #[test]
    fn scripts_histories_and_suites_never_panic(text in STRUCTURE) {
        for format in [DocumentFormat::Json, DocumentFormat::Yaml] {
            let _ = parse_document::<Script>(&text, format);
            let _ = parse_document::<Vec<ChatMessage>>(&text, format);
            let _ = parse_document::<Suite>(&text, format);
        }
    }

    #[test]
    fn amounts_never_panic(text in "[-+0-9.eE,x ]{0,60}", json in STRUCTURE) {
        let _ = parse_amount(&text);
        let _ = serde_json::from_str::<Money>(&json);
        let _ = parse_document::<Money>(&json, DocumentFormat::Yaml);
    }

    #[test]
    fn retry_delays_and_error_bodies_never_panic(delay in "[-+0-9.eEinfa]{0,30}s?", body in STRUCTURE) {
        let _ = parse_duration(&delay);
        if let Some(error) = parse_error_body(&body) {
            let _ = error.retry_delay();
            let _ = error.describe(Some(429));
        }
    }

    #[test]
    fn retry_info_delays_never_panic(seconds in any::<f64>()) {
        let body = format!(
            r#"{{"error": {{"code": 429, "details": [{{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "{seconds}s"}}]}}}}"#
        );
        if let Some(error) = parse_error_body(&body) {
            let _ = error.retry_delay();
        }
    }

    #[test]
    fn unknown_placeholders_are_exactly_the_unfilled_brace_names(text in "([a-z_{}A-Z ]|\\{\\{(assistant|product|assitant|x_y)\\}\\}){0,40}") {
        let found = promptlab::prompts::brands::unknown_placeholders(&text);
        // The oracle: a regex scan, not the hand-written one under test.
        let pattern = regex::Regex::new(r"\{\{([a-z_]+)\}\}").unwrap();
        let mut expected: Vec<String> = Vec::new();
        for name in pattern.captures_iter(&text).map(|c| c[1].to_string()) {
            if !["assistant", "product", "pronunciation"].contains(&name.as_str()) && !expected.contains(&name) {
                expected.push(name);
            }
        }
        prop_assert_eq!(found, expected);
    }

    #[test]
    fn eval_run_ids_are_exactly_ev_and_ten_lowercase_hex(text in "(ev-)?[0-9a-fA-Fx-]{0,14}") {
        let oracle = regex::Regex::new(r"^ev-[0-9a-f]{10}$").unwrap();
        let parsed = promptlab::eval::run_id::parse_eval_run_id(&text);
        prop_assert_eq!(parsed.is_ok(), oracle.is_match(&text));
    }

    #[test]
    fn version_specs_never_panic(spec in "[0-9a-f]{0,14}|\\PC{0,20}") {
        let runs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("runs/examples");
        let registry = PromptRegistry::embedded();
        if let Ok(Some(fingerprint)) = promptlab::runs::version::fingerprint_for(&spec, &runs, registry) {
            // Whatever it names is a fingerprint: `default` or 12 hex.
            prop_assert!(promptlab::prompts::fingerprint::looks_like_fingerprint(&fingerprint));
        }
    }

    #[test]
    fn shards_never_panic(text in "[0-9/ -]{0,30}") {
        if let Ok(shard) = text.parse::<Shard>() {
            prop_assert!(shard.index >= 1 && shard.index <= shard.count);
        }
    }
}

proptest! {
    // These write a file per case: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn override_and_suite_files_never_panic(text in STRUCTURE) {
        let dir = tempfile::tempdir().unwrap();
        for name in ["o.yaml", "o.json"] {
            let path = dir.path().join(name);
            std::fs::write(&path, &text).unwrap();
            let _ = OverrideSet::load(std::slice::from_ref(&path));
            let _ = LoadedSuite::load(&path, PromptRegistry::embedded());
        }
    }

    #[test]
    fn run_logs_never_panic(lines in proptest::collection::vec(STRUCTURE, 0..6), bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(format!(
            "{}/runs/examples/{}",
            env!("CARGO_MANIFEST_DIR"),
            example_log()
        ))
        .unwrap();
        let damaged = format!("{}\n{}", text.lines().next().unwrap_or_default(), lines.join("\n"));
        for (name, content) in [
            ("a.ndjson", damaged.as_bytes().to_vec()),
            ("b.ndjson", bytes.clone()),
            ("c.ndjson.partial", bytes.clone()),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, content).unwrap();
            let _ = summarize(&path);
            let _ = read_run_log(&path);
            let _ = read_run_log_checked(&path);
        }
    }

    /// Schema 5's `text` records and left-out answers (issue #66), with any
    /// count, time, text and places to put the answer back: read or
    /// refused, never a panic.
    #[test]
    fn text_records_and_left_out_answers_never_panic(
        deltas in any::<i64>(),
        at in prop_oneof![any::<i64>().prop_map(|n| n.to_string()), Just("1e400".to_string()), Just("1.5".to_string())],
        text in "[a-z£😀\\\"]{0,6}",
        slots in proptest::collection::vec("(/[a-z0-9~]{0,9}){0,4}", 0..7),
        content in prop_oneof![Just(serde_json::Value::Null), "[a-z]{0,3}".prop_map(serde_json::Value::from)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let header = std::fs::read_to_string(format!(
            "{}/tests/data/bad/runlogs/text-no-deltas.ndjson",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let header = header.lines().next().unwrap();
        let text = serde_json::to_string(&text).unwrap();
        let call = serde_json::json!({"record": "model_call", "t": 9, "call": {"round": 1, "startedMs": 1, "latencyMs": 2,
            "summary": {"usage": null, "providerState": {"openai": {"message": {"content": content}}}}},
            "textFromEvents": slots});
        let log = format!("{header}\n{{\"record\":\"text\",\"atMs\":{at},\"deltas\":{deltas},\"text\":{text}}}\n{call}\n");
        for name in ["a.ndjson", "a.ndjson.partial"] {
            let path = dir.path().join(name);
            std::fs::write(&path, &log).unwrap();
            let _ = read_run_log(&path);
            let _ = read_run_log_checked(&path);
        }
    }
}

/// One of the example logs shipped under `runs/examples`.
fn example_log() -> String {
    let dir = format!("{}/runs/examples", env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(&dir)];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "ndjson") {
                found.push(path);
            }
        }
    }
    found.sort();
    let first = found.first().expect("an example run log");
    first
        .strip_prefix(&dir)
        .unwrap()
        .to_string_lossy()
        .trim_start_matches('/')
        .to_string()
}

/// Amounts a claim may carry, edges included.
fn amount() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::json!("79228162514264337593543950335")),
        Just(serde_json::json!("-79228162514264337593543950335")),
        Just(serde_json::json!("0.0000000000000000000000000001")),
        any::<i64>().prop_map(serde_json::Value::from),
        "[0-9]{1,28}(\\.[0-9]{1,10})?".prop_map(serde_json::Value::from),
        ("[0-9]{1,20}", "[A-Z]{0,5}", "\\PC{0,20}").prop_map(|(amount, currency, basis)| {
            serde_json::json!({"amount": amount, "currency": currency, "basis": basis})
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Valid claims with hostile values (any text, edge amounts): the
    /// brief, every section and every tool answer without a panic.
    #[test]
    fn valid_claims_with_hostile_values_never_panic(
        text in "\\PC{0,80}",
        amounts in proptest::collection::vec(amount(), 6),
        offset in any::<u64>(),
    ) {
        let claim = serde_json::json!({
            "id": "P-1", "lineOfBusiness": text, "status": text, "currency": text, "country": text,
            "policy": {"number": text, "periodStart": "2024-01-01", "periodEnd": "2024-12-31",
                       "excess": amounts[0], "limit": amounts[1]},
            "incident": {"date": "2024-03-02", "description": text},
            "lossEstimate": amounts[2],
            "financials": {"reserve": amounts[3], "paid": amounts[4], "recovered": amounts[5]},
            "schedule": [{"id": text, "description": text, "claimed": amounts[3], "agreed": amounts[4]},
                         {"id": "S2", "description": "b", "claimed": amounts[3]}],
            "file": [{"id": "D1", "title": text, "text": text}],
            "riskFlags": [{"code": text}],
        });
        let loaded = parse_claim_bytes(claim.to_string().as_bytes(), Path::new("p.json"));
        // Amounts past a decimal's precision are refused at parse time;
        // proptest fails the test if that leaves too few cases.
        prop_assume!(loaded.is_ok());
        let claim = loaded.unwrap().claim;
        let _ = promptlab::chat::build_claim_brief(&claim, chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap());
        for name in promptlab::claims::sections::section_names(&claim) {
            let _ = promptlab::claims::sections::section(&claim, &name);
        }
        let ctx = promptlab::tools::ToolContext { claim: &claim };
        let args = [
            serde_json::json!({}),
            serde_json::json!({"offset": offset, "limit": 300}),
            serde_json::json!({"section": text, "documentId": "D1", "query": text, "offset": offset}),
        ];
        for tool in promptlab::tools::all_tools(true) {
            for args in &args {
                let outcome = (tool.run)(&ctx, args);
                drop(outcome);
            }
        }
    }
}
