//! Fills a runs folder with realistic run logs, for benchmarking `runs list`
//! (see BENCHMARKS.md): real turns through the engine with a scripted model,
//! across the claim corpus, three prompt fingerprints and every status.
//!
//! `cargo run --release --example make_runs -- DIR COUNT`
//!
//! `… -- DIR COUNT --eval` writes COUNT eval turns instead, for the run
//! index's benchmarks (#30): eval runs of 1,000 turns (suite `bench`, two
//! variants, 25 claims × 20 cases), each log a real turn's header, events
//! and footer with its place, eval run and a verdict (about 1 in 8 fails),
//! and each eval run's summary file in `evals/`. Seeded: the same every time.

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
    if args.next().as_deref() == Some("--eval") {
        return make_eval_logs(&dir, count);
    }
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

/// Turns per eval run, and the variants' fingerprint folders.
const EVAL_RUN_TURNS: usize = 1_000;
const VARIANTS: [(&str, &str); 2] = [("default", "default"), ("candidate", "a1b2c3d4e5f6")];

/// One real turn's log, to copy the header and events of.
fn template_log() -> promptlab::runs::RunLog {
    let scratch = std::env::temp_dir().join(format!("make-runs-{}", std::process::id()));
    let store = ClaimStore::new(concat!(env!("CARGO_MANIFEST_DIR"), "/claims"));
    let script: Script = promptlab::claims::load::parse_document(
        SCRIPT,
        promptlab::claims::load::DocumentFormat::Yaml,
    )
    .unwrap();
    let request = ChatRequest::new(
        ClaimInput::Id("CLM-HH-0001".into()),
        "What is the excess, and what has been paid so far?",
        NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let path = runtime.block_on(async {
        let ctx = TurnContext {
            registry: PromptRegistry::embedded(),
            store,
            provider: Arc::new(ScriptProvider::new(script, "bench")),
        };
        let mut recorder = RunRecorder::new(&scratch, &request, "script", None);
        let turn = run_chat_turn(ctx, request, CancellationToken::new());
        futures_util::pin_mut!(turn);
        while let Some(output) = turn.next().await {
            recorder.record(&output).unwrap();
        }
        recorder.finish(RunStatus::Cancelled).unwrap().unwrap()
    });
    let log = promptlab::runs::read_run_log(&path).unwrap();
    let _ = std::fs::remove_dir_all(&scratch);
    log
}

fn make_eval_logs(dir: &std::path::Path, count: usize) {
    use promptlab::runs::record::{Outcome, RecordedVerdict, RunLabels, RunRecord};
    use std::io::Write;
    let template = template_log();
    let events: Vec<String> = template
        .entries
        .iter()
        .filter_map(|entry| match entry {
            promptlab::runs::store::LogEntry::Event(t, event) => Some(
                serde_json::to_string(&RunRecord::Event {
                    t: *t,
                    event: event.clone(),
                })
                .unwrap(),
            ),
            promptlab::runs::store::LogEntry::ModelCall(_) => None,
        })
        .collect();
    let mut random = fastrand::Rng::with_seed(30);
    let start = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .unwrap()
        .to_utc();
    for (_, folder) in VARIANTS {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
    }
    std::fs::create_dir_all(dir.join("evals")).unwrap();
    let mut turn_ids = Vec::new();
    for index in 0..count {
        let run = index / EVAL_RUN_TURNS;
        let eval_run = format!("ev-{run:010x}");
        let (variant, fingerprint) = VARIANTS[index % 2];
        let place = index % EVAL_RUN_TURNS / 2;
        let started_at = start
            + chrono::Duration::minutes(run as i64 * 30)
            + chrono::Duration::milliseconds((index % EVAL_RUN_TURNS) as i64 * 40);
        let mut header = template.header.clone();
        header.turn_id = uuid::Uuid::from_u128(random.u128(..)).to_string();
        header.started_at = started_at;
        header.fingerprint = fingerprint.to_string();
        header.labels = Some(RunLabels {
            suite: "bench".into(),
            variant: variant.into(),
            case: format!("case-{:02}", place % 20),
            sample: 1,
            eval_run: Some(eval_run.clone()),
            tags: Vec::new(),
        });
        header.claim.as_mut().unwrap().id = format!("CLM-BENCH-{:04}", place / 20);
        let mut footer = template.footer.clone().unwrap();
        footer.status = RunStatus::Done;
        footer.total_ms = 400 + random.u64(..3_000);
        footer.cost_usd = Some(random.f64() / 100.0);
        let fails = random.u8(..8) == 0;
        footer.verdict = Some(RecordedVerdict {
            outcome: if fails { Outcome::Fail } else { Outcome::Pass },
            failures: if fails {
                vec!["answer does not contain \"excess\"".into()]
            } else {
                Vec::new()
            },
            rubric: Vec::new(),
        });
        let (path, _) =
            promptlab::runs::naming::log_paths(dir, fingerprint, &header.turn_id, started_at);
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        turn_ids.push(header.turn_id.clone());
        writeln!(
            out,
            "{}",
            serde_json::to_string(&RunRecord::Header(Box::new(header))).unwrap()
        )
        .unwrap();
        for event in &events {
            writeln!(out, "{event}").unwrap();
        }
        writeln!(
            out,
            "{}",
            serde_json::to_string(&RunRecord::Footer(footer)).unwrap()
        )
        .unwrap();
        if turn_ids.len() == EVAL_RUN_TURNS || index + 1 == count {
            write_summary(dir, &eval_run, started_at, std::mem::take(&mut turn_ids));
        }
    }
    eprintln!("wrote {count} eval-turn logs to {}", dir.display());
}

/// The eval run's summary file, as `eval` writes it (its numbers left to
/// the index: `evals` computes them from the turns).
fn write_summary(
    dir: &std::path::Path,
    eval_run: &str,
    ended: chrono::DateTime<chrono::Utc>,
    turn_ids: Vec<String>,
) {
    let file = promptlab::index::evals::EvalRunFile {
        eval_run: eval_run.to_string(),
        run_kind: "run".into(),
        suite: "bench".into(),
        shard: None,
        started_at: ended - chrono::Duration::seconds(40),
        ended_at: ended,
        planned: turn_ids.len(),
        cancelled: false,
        exit: 1,
        turn_ids,
        from_logs: Vec::new(),
        summary: serde_json::json!({"kind": "summary", "suite": "bench", "evalRun": eval_run}),
    };
    let text = serde_json::to_string(&file).unwrap();
    std::fs::write(dir.join("evals").join(file.file_name()), text).unwrap();
}
