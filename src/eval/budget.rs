//! `eval --max-cost`: a spending limit on a run. Once what the finished
//! turns cost (chat and judge) reaches it, no new turn starts; the turns
//! already running finish, so the spend can pass the limit by what they
//! cost.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::runner::TurnResult;
use crate::judge::JudgeSpend;

#[derive(Debug)]
pub struct Budget {
    limit_usd: f64,
    spent_usd: Mutex<f64>,
    reached: AtomicBool,
}

impl Budget {
    pub fn new(limit_usd: f64) -> Budget {
        Budget {
            limit_usd,
            spent_usd: Mutex::new(0.0),
            reached: AtomicBool::new(false),
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
    /// A cost that is unknown counts as reaching the limit — a budget that
    /// cannot be measured is not kept by guessing.
    pub fn spend(&self, result: &TurnResult) {
        let judge = JudgeSpend::of_rubric(&result.verdict.rubric).cost.usd();
        let mut spent = self.spent_usd.lock();
        match (result.observation.cost_usd, judge) {
            (Some(chat), Some(judge)) => *spent += chat + judge,
            _ => *spent = f64::INFINITY,
        }
    }

    /// Whether a turn was held back because the limit was reached.
    pub fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }
}
