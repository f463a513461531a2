//! The chat turn: request, claim brief, prompt assembly, the loop and its
//! events.

pub mod block_context;
pub mod context;
pub mod decide;
pub mod history;
pub mod prompt_diff;
pub mod prompt_report;
pub mod request;
pub mod service;
pub mod system;
pub mod turn_loop;
pub mod wire;

// The wire format of events lives in the leaf module `crate::event`, so that
// tools and providers can use it without reaching up to the turn.
pub use crate::event;
pub use context::build_claim_brief;
pub use event::{ChatEvent, ClientAction};
pub use request::{
    ChatMessage, ChatRequest, ClaimInput, Locale, PromptOptions, Role, ThinkingLevel,
};
pub use service::{
    ModelCallRecord, PreparedTurn, RemoteTurn, TurnContext, TurnOutput, TurnStart, run_chat_turn,
};
pub use system::{
    AssembledPrompt, BlockSource, PromptBlock, PromptSettings, PromptSetupError, assemble_prompt,
    prompt_settings,
};
