//! Two prompt versions of one context, block by block: the rule behind
//! `prompts diff` and the Prompt Lab page's "diff against the default"
//! (`POST /api/diff`). Each side is assembled as a turn would assemble it,
//! every override of a side is placed (in this context, in a block this
//! context leaves out — with what would bring it in — or ignored), and a
//! changed block gets a unified line diff. How "what would bring it in" is
//! worded is the caller's: a flag on the command line, a choice on the page.

use chrono::NaiveDate;

use super::block_context::{BlockCondition, block_condition};
use super::prompt_report::{BlockDiff, DiffSide, OverrideInContext, OverrideStatus, PromptDiff};
use super::request::PromptOptions;
use super::system::{AssembledPrompt, PromptSetupError, assemble_prompt, prompt_settings};
use crate::claims::Claim;
use crate::digest::sha256_hex;
use crate::prompts::overrides::{IgnoredOverride, UnusableReason};
use crate::prompts::{PromptRegistry, fingerprint, resolve_overrides};

/// One side of a diff: its label, fingerprint, assembled prompt and where
/// each of its overrides stands.
#[derive(Debug, Clone)]
pub struct DiffSideOf {
    pub label: String,
    pub fingerprint: String,
    pub prompt: AssembledPrompt,
    pub overrides: Vec<OverrideInContext>,
    /// The overrides that are not applied, with why (for warnings).
    pub ignored: Vec<IgnoredOverride>,
}

/// Assembles `options` (its overrides included) for `claim` on `today`.
/// `bring_in` words what would bring a left-out block in.
pub fn diff_side(
    label: &str,
    options: &PromptOptions,
    registry: &PromptRegistry,
    claim: &Claim,
    today: NaiveDate,
    bring_in: &dyn Fn(&BlockCondition) -> String,
) -> Result<DiffSideOf, PromptSetupError> {
    let resolved = resolve_overrides(&options.overrides, registry);
    let settings = prompt_settings(options, registry, claim)?;
    let prompt = assemble_prompt(&settings, claim, today);
    let overrides = options
        .overrides
        .keys()
        .map(|id| {
            let ignored = resolved.ignored.iter().find(|i| &i.id == id);
            let reason = ignored.map(|i| &i.reason);
            override_in_context(id, reason, &prompt, registry, bring_in)
        })
        .collect();
    Ok(DiffSideOf {
        label: label.to_string(),
        fingerprint: fingerprint(&resolved.applied),
        prompt,
        overrides,
        ignored: resolved.ignored,
    })
}

/// Where override `id` stands: applied to a block of `prompt`, applied to
/// a block this context leaves out, or ignored.
fn override_in_context(
    id: &str,
    ignored: Option<&UnusableReason>,
    prompt: &AssembledPrompt,
    registry: &PromptRegistry,
    bring_in: &dyn Fn(&BlockCondition) -> String,
) -> OverrideInContext {
    let (status, bring_in) = if ignored.is_some() {
        (OverrideStatus::Ignored, None)
    } else if prompt.blocks.iter().any(|block| block.id == id) {
        (OverrideStatus::InContext, None)
    } else {
        let phrase = block_condition(id, registry).map(|condition| bring_in(&condition));
        (OverrideStatus::NotInContext, phrase)
    };
    OverrideInContext {
        id: id.to_string(),
        status,
        bring_in,
        reason: ignored.cloned(),
    }
}

/// The two sides block by block. The same context gives both sides the
/// same blocks; only their texts differ.
pub fn diff_report(a: &DiffSideOf, b: &DiffSideOf) -> PromptDiff {
    let side = |side: &DiffSideOf| DiffSide {
        label: side.label.clone(),
        fingerprint: side.fingerprint.clone(),
        system_sha256: sha256_hex(side.prompt.system_text()),
        overrides: side.overrides.clone(),
    };
    PromptDiff {
        a: side(a),
        b: side(b),
        blocks: a
            .prompt
            .blocks
            .iter()
            .zip(&b.prompt.blocks)
            .map(|(x, y)| BlockDiff {
                id: x.id.clone(),
                changed: x.text != y.text,
                source_a: x.source,
                source_b: y.source,
                diff: (x.text != y.text).then(|| unified_diff(&x.id, &x.text, &y.text)),
            })
            .collect(),
    }
}

/// A unified line diff of block `id` with three lines of context: a
/// `--- a/ID` / `+++ b/ID` header, then `@@` hunks of ` `, `-` and `+`
/// lines (a front end colours them by their first character).
pub fn unified_diff(id: &str, old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut text = format!("--- a/{id}\n+++ b/{id}\n");
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        text.push_str(&hunk.header().to_string());
        text.push('\n');
        for change in hunk.iter_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
                similar::ChangeTag::Equal => ' ',
            };
            text.push(sign);
            text.push_str(change.value().trim_end_matches('\n'));
            text.push('\n');
            if change.missing_newline() {
                text.push_str("\\ No newline at end of file\n");
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unified_diff_has_its_header_hunks_and_a_missing_newline_note() {
        let diff = unified_diff("system.base", "one\ntwo\nthree", "one\n2\nthree");
        assert_eq!(
            diff,
            "--- a/system.base\n+++ b/system.base\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n\\ No newline at end of file\n"
        );
        assert_eq!(unified_diff("x", "same\n", "same\n"), "--- a/x\n+++ b/x\n");
    }
}
