//! Quick actions (capabilities): id, label, and an optional thinking level.

use serde::{Deserialize, Serialize};

use crate::prompts::thinking::ThinkingLevel;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq, Hash, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Capability {
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
}

impl Capability {
    /// `capability.<id>`: the prompt id of this capability's playbook.
    pub fn prompt_id(&self) -> String {
        format!("capability.{}", self.id)
    }
}

/// The list of specialist tasks that block 6b appends to free-chat guidance,
/// one `- <label> (<id>)` line each.
pub fn capability_guide(capabilities: &[Capability]) -> String {
    let mut guide = String::from("Specialist tasks the handler can start as quick actions:");
    for capability in capabilities {
        guide.push_str(&format!("\n- {} ({})", capability.label, capability.id));
    }
    guide
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_lists_every_capability() {
        let capabilities = vec![
            Capability {
                id: "summarise".into(),
                label: "Summarise the claim".into(),
                thinking_level: None,
            },
            Capability {
                id: "timeline".into(),
                label: "Build a timeline".into(),
                thinking_level: None,
            },
        ];
        let guide = capability_guide(&capabilities);
        assert!(
            guide.ends_with("\n- Summarise the claim (summarise)\n- Build a timeline (timeline)")
        );
    }
}
