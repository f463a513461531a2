//! `eval --max-cost`: a spending limit on a run. Once what the finished
//! turns cost (chat and judge) reaches it, no new turn starts; the turns
//! already running finish, so the spend can pass the limit by what they
//! cost. Calls whose server reported no usage have an unknown cost: they
//! are not counted (no guess), the run goes on, and the summary says for
//! how many calls the budget could not be enforced.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::runner::TurnResult;
use crate::judge::JudgeSpend;

#[derive(Debug)]
pub struct Budget {
    limit_usd: f64,
    spent_usd: Mutex<f64>,
    reached: AtomicBool,
    /// Calls of finished turns whose cost the budget could not count.
    unenforced_calls: AtomicU32,
}

impl Budget {
    pub fn new(limit_usd: f64) -> Budget {
        Budget {
            limit_usd,
            spent_usd: Mutex::new(0.0),
            reached: AtomicBool::new(false),
            unenforced_calls: AtomicU32::new(0),
        }
    }

    pub fn limit_usd(&self) -> f64 {
        self.limit_usd
    }

    pub fn spent_usd(&self) -> f64 {
        *self.spent_usd.lock()
    }

    /// Whether a new turn may start; false once the spend reached the limit.
    pub fn allows_start(&self) -> bool {
        if self.spent_usd() >= self.limit_usd {
            self.reached.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Adds what a finished turn cost: its chat calls and its judge calls.
    /// A part whose cost is unknown because its server reported no usage
    /// is not counted, and its calls are (`unenforced_calls`): a server
    /// that never reports usage would otherwise stop every run after one
    /// turn. Any other unknown cost (an unpriced model, a call cut short)
    /// counts as reaching the limit — a budget that cannot be measured is
    /// not kept by guessing.
    pub fn spend(&self, result: &TurnResult) {
        let seen = &result.observation;
        let judge = JudgeSpend::of_rubric(&result.verdict.rubric);
        let parts = [
            (
                seen.cost_usd,
                seen.usage.usage_unreported,
                // A deployment's turn shows no rounds: its usage says how
                // many calls lacked it.
                seen.rounds.max(seen.usage.usage_unreported),
            ),
            (
                judge.cost.usd(),
                judge.usage.usage_unreported,
                u32::try_from(judge.calls - judge.cached).unwrap_or(u32::MAX),
            ),
        ];
        let mut spent = self.spent_usd.lock();
        for (cost, unreported, calls) in parts {
            match cost {
                Some(usd) => *spent += usd,
                None if unreported > 0 => {
                    self.unenforced_calls.fetch_add(calls, Ordering::Relaxed);
                }
                None => *spent = f64::INFINITY,
            }
        }
    }

    /// Calls of the finished turns whose cost was unknown because their
    /// server reported no usage: the budget could not be enforced for them.
    pub fn unenforced_calls(&self) -> u32 {
        self.unenforced_calls.load(Ordering::Relaxed)
    }

    /// Whether a turn was held back because the limit was reached.
    pub fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }
}
