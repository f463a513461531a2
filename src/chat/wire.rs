//! The production Worker's `POST /api/chat` body (SPEC §1.1) as one typed
//! shape, for both directions: `serve` reads it (`serve::body`) and the
//! `worker` provider writes it, so the two can never disagree on a field.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::request::{ChatMessage, ChatRequest, ClaimInput, Locale, ThinkingLevel};

/// The wire shape, camelCase as the front end sends it. Unknown fields are
/// ignored, as the Worker ignores them, so a newer front end still works;
/// absent options are left out when writing, so the server's defaults apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WireRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_id: Option<String>,
    pub messages: Vec<ChatMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<Locale>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brand: Option<String>,
    #[serde(default)]
    pub screen_actions: bool,
    #[serde(default)]
    pub voice: bool,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
}

/// Why a request cannot be put on the wire.
#[derive(Debug, thiserror::Error)]
#[error("claim: the claim document cannot be sent as JSON: {0}")]
pub struct WireEncodeError(#[from] serde_json::Error);

impl WireRequest {
    /// The body that asks a deployment for the turn `request` describes.
    /// A claim document travels as JSON; a claim id as `claimId`. Every
    /// override is sent as written: the deployment applies its own usable
    /// rule, so that its fingerprint can be compared with ours.
    pub fn from_request(request: &ChatRequest) -> Result<WireRequest, WireEncodeError> {
        let (claim, claim_id) = match &request.claim {
            ClaimInput::Document(loaded) => (Some(serde_json::to_value(&loaded.claim)?), None),
            ClaimInput::Id(id) => (None, Some(id.clone())),
        };
        Ok(WireRequest {
            claim,
            claim_id,
            messages: request.messages.clone(),
            capability: request.prompt.capability.clone(),
            locale: request.prompt.locale,
            brand: request.prompt.brand.clone(),
            screen_actions: request.prompt.screen_actions,
            voice: request.prompt.voice,
            overrides: request.prompt.overrides.clone(),
            model: Some(request.model.clone()),
            thinking_level: Some(request.thinking_level),
        })
    }
}

/// The body of every error response: `{"error": message}` (the production
/// Worker's shape), the message naming the field when a request is malformed.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorBody {
    pub error: String,
}
