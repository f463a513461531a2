//! Fills a runs folder with realistic run logs, for benchmarking `runs list`
//! (see BENCHMARKS.md): real turns through the engine with a scripted model,
//! across the claim corpus, three prompt fingerprints and every status.
//!
//! `cargo run --release --example make_runs -- DIR COUNT`

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::NaiveDate;
use futures_util::StreamExt;
use promptlab::chat::{ChatRequest, ClaimInput, TurnContext, run_chat_turn};
use promptlab::claims::ClaimStore;
use promptlab::prompts::PromptRegistry;
use promptlab::provider::script::{Script, ScriptProvider};
use promptlab::runs::RunStatus;
use promptlab::sink::run_log::RunRecorder;
use tokio_util::sync::CancellationToken;

const SCRIPT: &str = "turns:
  - text: Let me check the policy and the schedule.
    calls:
      - {name: get_claim_section, args: {section: policy}}
      - {name: get_schedule, args: {}}
    usage: {inputTokens: 5210, outputTokens: 120, cacheReadTokens: 3968}
  - text: The excess is recorded in the policy section; the schedule totals are above.
    usage: {inputTokens: 6100, outputTokens: 300, cacheReadTokens: 5100}
";

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("usage: make_runs DIR COUNT"));
    let count: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: make_runs DIR COUNT");
    let store = ClaimStore::new(concat!(env!("CARGO_MANIFEST_DIR"), "/claims"));
    let ids: Vec<String> = store.entries().unwrap().into_iter().map(|e| e.id).collect();
    let script: Script = promptlab::claims::load::parse_document(
        SCRIPT,
        promptlab::claims::load::DocumentFormat::Yaml,
    )
    .unwrap();
    let registry = PromptRegistry::embedded();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for index in 0..count {
            let id = &ids[index % ids.len()];
            let mut request = ChatRequest::new(
                ClaimInput::Id(id.clone()),
                "What is the excess, and what has been paid so far?",
                NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
            );
            if index % 3 > 0 {
                request.prompt.overrides = BTreeMap::from([(
                    "system.base".to_string(),
                    format!(
                        "Variant {} of the base prompt for {{{{assistant}}}}.",
                        index % 3
                    ),
                )]);
            }
            let provider = ScriptProvider::new(script.clone(), "bench");
            let ctx = TurnContext {
                registry,
                store: store.clone(),
                provider: Arc::new(provider),
            };
            let mut recorder = RunRecorder::new(&dir, &request, "script", None);
            let turn = run_chat_turn(ctx, request, CancellationToken::new());
            futures_util::pin_mut!(turn);
            while let Some(output) = turn.next().await {
                recorder.record(&output).unwrap();
            }
            recorder.finish(RunStatus::Cancelled).unwrap();
        }
    });
    eprintln!("wrote {count} run logs to {}", dir.display());
}
