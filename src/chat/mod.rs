//! The chat turn: request, claim brief, prompt assembly, the loop and its
//! events.

pub mod context;
pub mod decide;
pub mod event;
pub mod history;
pub mod request;
pub mod service;
pub mod system;

pub use context::build_claim_brief;
pub use event::{ChatEvent, ClientAction};
pub use request::{
    ChatMessage, ChatRequest, ClaimInput, Locale, PromptOptions, Role, ThinkingLevel,
};
pub use service::{ModelCallRecord, PreparedTurn, TurnContext, TurnOutput, run_chat_turn};
pub use system::{
    AssembledPrompt, BlockSource, PromptBlock, PromptSettings, PromptSetupError, assemble_prompt,
    prompt_settings,
};
