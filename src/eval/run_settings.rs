//! What a suite's turns run with: where each turn's model answers come
//! from (`ProviderChoice`: one provider, a script per case, replayed
//! recordings, a deployment, or a variant's own) and the run's settings.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::NaiveDate;

use super::budget::Budget;
use super::feed::Feed;
use super::matrix::TurnSpec;
use super::plan::{EvalPlan, TurnKey};
use crate::claims::ClaimStore;
use crate::judge::Judge;
use crate::prompts::PromptRegistry;
use crate::provider::cache::ModelCache;
use crate::provider::script::ScriptProvider;
use crate::provider::transport::{RateLimits, Throttle};
use crate::provider::{ModelProvider, ProviderKind};
use crate::runs::read_run_log;
use crate::worker::WorkerClient;

/// Where each turn's model answers come from.
pub enum ProviderChoice {
    /// One provider for every turn (Gemini).
    Shared(Arc<dyn ModelProvider>),
    /// A script per case (or one for all), started afresh for each turn.
    Script {
        default: Option<Arc<ScriptProvider>>,
        by_case: HashMap<usize, Arc<ScriptProvider>>,
    },
    /// Each turn replays its own recording.
    Replay {
        recordings: HashMap<TurnKey, PathBuf>,
        /// What a replayed turn fits its level by (`--models`).
        models: Arc<crate::models::ModelTable>,
    },
    /// Each turn runs whole on a deployment (`--provider worker`).
    Worker(Box<WorkerClient>),
    /// Variants with a provider of their own (a suite variant's `provider`)
    /// get it; the others, the run's.
    PerVariant {
        run: Box<ProviderChoice>,
        variants: HashMap<usize, Arc<dyn ModelProvider>>,
    },
}

/// Why a turn has no model to run with; its verdict is an error.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoProvider {
    #[error("a worker turn has no local provider")]
    Worker,
    #[error("no script for this case: give --script or a case `script`")]
    NoScript,
    #[error("no recording of this turn to replay ({0})")]
    NoRecording(String),
    #[error(transparent)]
    Unreadable(#[from] crate::runs::RunLogError),
}

impl ProviderChoice {
    pub(super) fn for_turn(
        &self,
        plan: &EvalPlan,
        spec: &TurnSpec,
    ) -> Result<Arc<dyn ModelProvider>, NoProvider> {
        match self {
            ProviderChoice::Shared(provider) => Ok(provider.clone()),
            ProviderChoice::PerVariant { run, variants } => match variants.get(&spec.variant) {
                Some(provider) => Ok(provider.clone()),
                None => run.for_turn(plan, spec),
            },
            ProviderChoice::Worker(_) => Err(NoProvider::Worker),
            ProviderChoice::Script { default, by_case } => by_case
                .get(&spec.case)
                .or(default.as_ref())
                .map(|script| Arc::new(script.restarted()) as Arc<dyn ModelProvider>)
                .ok_or(NoProvider::NoScript),
            ProviderChoice::Replay { recordings, models } => {
                let key = plan.key(spec);
                let path = recordings.get(&key).ok_or_else(|| {
                    NoProvider::NoRecording(format!(
                        "{} · {} · {} #{}",
                        key.version, key.place.claim, key.place.case, key.place.sample
                    ))
                })?;
                let log = read_run_log(path)?;
                let replay = crate::runs::replay::replay_provider(&log);
                Ok(Arc::new(replay.with_models(Arc::clone(models))))
            }
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// The throttles of the servers its providers call (SPEC §14).
    pub fn throttles(&self) -> Vec<Arc<Throttle>> {
        match self {
            ProviderChoice::Shared(provider) => provider.throttle().into_iter().collect(),
            ProviderChoice::PerVariant { run, variants } => {
                let mut throttles = run.throttles();
                throttles.extend(variants.values().filter_map(|p| p.throttle()));
                throttles
            }
            ProviderChoice::Script { .. }
            | ProviderChoice::Replay { .. }
            | ProviderChoice::Worker(_) => Vec::new(),
        }
    }

    /// Which provider answers the turns.
    pub fn kind(&self) -> ProviderKind {
        match self {
            ProviderChoice::Shared(provider) => provider.kind(),
            ProviderChoice::PerVariant { run, .. } => run.kind(),
            ProviderChoice::Script { .. } => ProviderKind::Script,
            ProviderChoice::Replay { .. } => ProviderKind::Replay,
            ProviderChoice::Worker(_) => ProviderKind::Worker,
        }
    }
}

pub struct RunSettings {
    pub registry: &'static PromptRegistry,
    /// The judge of rubric criteria, when the suite has any.
    pub judge: Option<Arc<Judge>>,
    /// What stops turns from starting: `--max-cost`, a spent quota.
    pub limits: RunLimits,
    /// `--cache`: model calls answered from here when unchanged.
    pub model_cache: Option<ModelCache>,
    pub store: ClaimStore,
    pub runs_dir: PathBuf,
    pub concurrency: usize,
    pub today: NaiveDate,
    pub provider: ProviderChoice,
    /// What the progress feed is sent besides finished turns and warnings.
    pub feed: Feed,
    /// Each turn as a trace, with its verdict (`docs/telemetry.md`); `None`: off.
    pub tracing: Option<crate::telemetry::Tracing>,
    /// What the run logs price calls by (`--prices` over the shipped table).
    pub prices: Arc<crate::cost::PriceTable>,
}

/// What stops an eval from starting turns, besides a signal: `--max-cost`'s
/// budget, and a quota one of its servers says is spent (SPEC §14: turns in
/// flight finish, the rest are not run). The throttles also keep the rate
/// limits the eval run's record shows.
#[derive(Clone, Default)]
pub struct RunLimits {
    pub budget: Option<Arc<Budget>>,
    /// The model's and the judge's servers', each once.
    pub throttles: Vec<Arc<Throttle>>,
}

impl RunLimits {
    pub fn new(budget: Option<Arc<Budget>>, throttles: Vec<Arc<Throttle>>) -> RunLimits {
        let mut unique: Vec<Arc<Throttle>> = Vec::new();
        for throttle in throttles {
            if !unique.iter().any(|seen| Arc::ptr_eq(seen, &throttle)) {
                unique.push(throttle);
            }
        }
        RunLimits {
            budget,
            throttles: unique,
        }
    }

    /// Whether a new turn may start.
    pub fn allows_start(&self) -> bool {
        self.budget.as_ref().is_none_or(|b| b.allows_start()) && self.quota_spent().is_none()
    }

    /// The first spent quota a server answered, as its error said it.
    pub fn quota_spent(&self) -> Option<String> {
        self.throttles.iter().find_map(|throttle| throttle.spent())
    }

    /// What each model that met a rate limit or a quota went through.
    pub fn rate_limits(&self) -> Vec<RateLimits> {
        self.throttles
            .iter()
            .flat_map(|throttle| throttle.reports())
            .collect()
    }
}
