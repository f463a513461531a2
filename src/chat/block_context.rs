//! Which prompt options bring a block into the system prompt: the inverse
//! of `assemble_prompt`'s choices, so that `prompts diff` can say of an
//! override outside the current context what would bring it in. Kept beside
//! `system.rs`, whose block order these conditions mirror; a test assembles
//! the prompt under each condition to hold them to it.

use super::request::Locale;
use crate::prompts::PromptRegistry;
use crate::prompts::registry::{
    CAPABILITY_CLAIM_QA, CLAIM_BRIEF, SYSTEM_BASE, SYSTEM_LOCALE_UK, SYSTEM_LOCALE_US,
    SYSTEM_SAFETY, SYSTEM_SCREEN_ACTIONS, SYSTEM_VOICE,
};

/// What a turn needs for a block to be in its prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockCondition {
    /// In every prompt.
    Always,
    /// Only with the screen tools offered.
    ScreenActions,
    /// Only for answers read aloud.
    Voice,
    /// Only in this locale.
    Locale(Locale),
    /// Only with this quick action chosen.
    Capability(String),
    /// Only in free chat (no quick action chosen).
    FreeChat,
}

/// When block `id` is in the prompt; `None` for an id that is no block.
pub fn block_condition(id: &str, registry: &PromptRegistry) -> Option<BlockCondition> {
    let condition = match id {
        SYSTEM_BASE | SYSTEM_SAFETY | CLAIM_BRIEF => BlockCondition::Always,
        SYSTEM_SCREEN_ACTIONS => BlockCondition::ScreenActions,
        SYSTEM_VOICE => BlockCondition::Voice,
        SYSTEM_LOCALE_UK => BlockCondition::Locale(Locale::Uk),
        SYSTEM_LOCALE_US => BlockCondition::Locale(Locale::Us),
        CAPABILITY_CLAIM_QA => BlockCondition::FreeChat,
        _ => {
            let capability = registry
                .capabilities()
                .iter()
                .find(|capability| capability.prompt_id() == id)?;
            BlockCondition::Capability(capability.id.clone())
        }
    };
    Some(condition)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::request::PromptOptions;
    use crate::chat::{assemble_prompt, prompt_settings};
    use crate::claims::parse_claim_bytes;
    use std::path::Path;

    fn options_meeting(condition: &BlockCondition) -> PromptOptions {
        let mut options = PromptOptions::default();
        match condition {
            BlockCondition::Always | BlockCondition::FreeChat => {}
            BlockCondition::ScreenActions => options.screen_actions = true,
            BlockCondition::Voice => options.voice = true,
            BlockCondition::Locale(locale) => options.locale = Some(*locale),
            BlockCondition::Capability(id) => options.capability = Some(id.clone()),
        }
        options
    }

    /// Every prompt id has a condition, and meeting it puts the block in
    /// the assembled prompt: a new block in `assemble_prompt` without a
    /// condition here fails this test.
    #[test]
    fn meeting_each_blocks_condition_brings_the_block_in() {
        let registry = PromptRegistry::embedded();
        let json = r#"{"id": "C1", "lineOfBusiness": "Household", "status": "open",
            "policy": {"number": "P-1", "periodStart": "2024-01-01", "periodEnd": "2024-12-31"},
            "incident": {"date": "2024-03-02", "description": "A leak."}}"#;
        let claim = parse_claim_bytes(json.as_bytes(), Path::new("c.json"))
            .unwrap()
            .claim;
        let today = chrono::NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        for id in registry.prompt_ids() {
            let condition = block_condition(id, registry)
                .unwrap_or_else(|| panic!("`{id}` has no block condition"));
            let options = options_meeting(&condition);
            let settings = prompt_settings(&options, registry, &claim).unwrap();
            let prompt = assemble_prompt(&settings, &claim, today);
            assert!(
                prompt.blocks.iter().any(|block| block.id == id),
                "`{id}` is not in the prompt under {condition:?}"
            );
        }
        assert_eq!(block_condition("system.nonsense", registry), None);
    }
}
