//! What every call of a prompt version sends alike, encoded once per
//! process: the system text (most of a request: escaping its ~9 KB each
//! call was a twentieth of an eval turn's CPU) and the tool declarations,
//! each by its shared `Arc` (`memo::ByAddress`; `chat::system_memo` shares
//! a text among the turns that assemble it). Each adapter gives its own
//! encoding of them — Gemini's `systemInstruction` and `tools`, the
//! system message and `tools` of Chat Completions — and sends it as raw
//! JSON, byte for byte what serialising it in place would write.

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::memo::ByAddress;
use crate::tools::ToolDeclaration;

pub struct Encoded {
    system: ByAddress<str, Arc<RawValue>>,
    tools: ByAddress<[ToolDeclaration], Arc<RawValue>>,
}

impl Default for Encoded {
    fn default() -> Encoded {
        // As many texts as `chat::system_memo` shares: one it has let go
        // of is not asked for again.
        Encoded {
            system: ByAddress::new(64, 8 * 1024 * 1024),
            tools: ByAddress::new(16, 1024 * 1024),
        }
    }
}

type Encoding<T> = fn(&T) -> serde_json::Result<Box<RawValue>>;

impl Encoded {
    /// `encode(system)`, made once while `system` is shared.
    pub fn system(
        &self,
        system: &Arc<str>,
        encode: Encoding<str>,
    ) -> serde_json::Result<Arc<RawValue>> {
        let weight = |json: &Arc<RawValue>| system.len() + json.get().len();
        self.system
            .get_or_make(system, |text| encode(text).map(Arc::from), weight)
    }

    /// `encode(tools)`, made once while `tools` is shared.
    pub fn tools(
        &self,
        tools: &Arc<[ToolDeclaration]>,
        encode: Encoding<[ToolDeclaration]>,
    ) -> serde_json::Result<Arc<RawValue>> {
        let weight = |json: &Arc<RawValue>| json.get().len();
        self.tools
            .get_or_make(tools, |tools| encode(tools).map(Arc::from), weight)
    }
}

/// Requests whose system text needs escaping (quotes, a control character,
/// a backslash, non-ASCII), with every tool and with none: the adapters'
/// tests pin their pre-encoded bodies against them.
#[cfg(test)]
pub(crate) fn sample_requests(model: &str) -> Vec<crate::provider::ModelRequest> {
    let system: Arc<str> = "Claim \"CLM-1\":\n\t£1,200 — <b>\u{7}</b> \\ {{x}}".into();
    let all = crate::tools::offered_tools(true).declarations.clone();
    let none: Arc<[ToolDeclaration]> = Vec::new().into();
    [all, none]
        .into_iter()
        .map(|tools| crate::provider::ModelRequest {
            model: model.into(),
            system: Arc::clone(&system),
            messages: vec![crate::provider::AiMessage::User {
                text: "What is the excess?".into(),
            }],
            tools,
            thinking_level: crate::prompts::thinking::ThinkingLevel::Low,
            max_output_tokens: 100,
            response_schema: None,
        })
        .collect()
}
