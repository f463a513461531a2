//! Eval plans and runs through the library: a suite's YAML into a plan over
//! the repository's claims, and a plan's turns run into a spill.

use std::path::Path;
use std::sync::Arc;

use promptlab::chat::request::ThinkingLevel;
use promptlab::claims::ClaimStore;
use promptlab::eval::matrix::ModelSettings;
use promptlab::eval::spill::ResultStore;
use promptlab::eval::{
    EvalMessage, EvalPlan, LoadedSuite, RunSettings, Selection, build_matrix, run_turns,
};
use promptlab::prompts::PromptRegistry;
use tokio_util::sync::CancellationToken;

/// The repository's claim store.
pub fn claims() -> ClaimStore {
    ClaimStore::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("claims"))
}

/// The plan of the suite `yaml` (written into `dir`), with model `m` at
/// low thinking, narrowed by `selection`.
pub fn plan_of(dir: &Path, yaml: &str, selection: Selection) -> EvalPlan {
    let path = dir.join("suite.yaml");
    std::fs::write(&path, yaml).unwrap();
    let registry = PromptRegistry::embedded();
    let suite = LoadedSuite::load(&path, registry).unwrap();
    let defaults = ModelSettings {
        model: "m".into(),
        thinking_level: ThinkingLevel::Low,
        forced: false,
        provider: None,
        base_url: None,
    };
    let matrix = build_matrix(&suite, &claims(), registry, &defaults).unwrap();
    EvalPlan::new(suite, matrix, selection)
}

/// Runs the plan's turns into a fresh spill in `dir`, feeding `sender`.
pub async fn run_into_spill(
    dir: &Path,
    plan: &Arc<EvalPlan>,
    settings: Arc<RunSettings>,
    sender: tokio::sync::mpsc::Sender<EvalMessage>,
) -> ResultStore {
    let mut spill = ResultStore::create(dir, &plan.eval_run, plan.matrix.planned).unwrap();
    run_turns(
        Arc::clone(plan),
        settings,
        CancellationToken::new(),
        sender,
        &mut spill,
    )
    .await;
    spill
}
