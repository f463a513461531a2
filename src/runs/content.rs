//! What a whole log says beyond its header and footer, by one rule each,
//! for `compare` (which pairs answers and tools) and the index (which keeps
//! their digests so that two eval runs compare without re-reading logs):
//! the answer, the tools called, the latency left when the time queued
//! under a rate limit is taken out, and the model setting asked for.

use crate::chat::event::ChatEvent;

use super::record::RunHeader;
use super::store::RunLog;

impl RunLog {
    /// The answer: the text deltas, joined.
    pub fn answer(&self) -> String {
        self.events()
            .filter_map(|event| match event {
                ChatEvent::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tools a turn called, in order: from its model calls, or — for a
    /// deployment's turn (`--provider worker`), which records none — from
    /// its activity events, so that a local run and a worker run of the
    /// same turn compare tool for tool.
    pub fn tools_called(&self) -> Vec<String> {
        let from_calls: Vec<String> = self
            .model_calls()
            .flat_map(|call| call.tool_calls.iter().map(|c| c.name.clone()))
            .collect();
        if !from_calls.is_empty() || self.model_calls().next().is_some() {
            return from_calls;
        }
        self.events()
            .filter_map(|event| match event {
                ChatEvent::Activity { tool, .. } => Some(tool.clone()),
                _ => None,
            })
            .collect()
    }

    /// The turn's time less what its calls spent queued under a rate limit
    /// (the quota's, not the prompt's: left out, so throttling never reads
    /// as a regression); none without a footer.
    pub fn unqueued_ms(&self) -> Option<u64> {
        self.footer.as_ref().map(|f| {
            let queued: u64 = self
                .model_calls()
                .filter_map(|call| call.summary.as_ref())
                .map(|summary| summary.queued_ms)
                .fold(0, u64::saturating_add);
            f.total_ms.saturating_sub(queued)
        })
    }
}

/// The model a turn asked for and its default thinking level
/// (`gemini-3.1-flash-lite · low`, `· high, forced`).
pub fn model_setting(header: &RunHeader) -> String {
    let forced = if header.request.force_thinking_level {
        ", forced"
    } else {
        ""
    };
    format!(
        "{} · {}{forced}",
        header.model, header.request.thinking_level
    )
}

/// The digest by which two answers are told equal or not.
pub fn answer_digest(answer: &str) -> String {
    crate::digest::sha256_hex(answer)
}
