//! The chat turn: request, claim brief, prompt assembly.

pub mod context;
pub mod request;
pub mod system;

pub use context::build_claim_brief;
pub use request::{
    ChatMessage, ChatRequest, ClaimInput, Locale, PromptOptions, Role, ThinkingLevel,
};
pub use system::{
    AssembledPrompt, BlockSource, PromptBlock, PromptSettings, PromptSetupError, assemble_prompt,
    prompt_settings,
};
