//! The model-call cache (`--cache`; `docs/cache.md`): a provider that
//! answers a request it has seen before from disk, replaying the recorded
//! stream — text, tool calls, usage and provider state — so the loop runs
//! its tools and emits the same events as for a live call.
//!
//! The key is the SHA-256 of the canonical request — provider, model,
//! system text, every message (with replayed provider state), tools,
//! thinking level, output limit and reply schema — plus the sample index,
//! so that repeats stay independent samples. Only a call that finished is
//! written; errors and cancelled calls never are. Entries are written
//! whole or not at all (`keyed_files`), so concurrent processes sharing a
//! folder never read half an entry; an entry that cannot be read is a miss.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::{
    CallSummary, ModelEvent, ModelProvider, ModelRequest, ModelStream, ProviderError, ToolCall,
};
use crate::keyed_files::KeyedFiles;

/// The most an entry may hold when read back.
const MAX_ENTRY_BYTES: u64 = 64 * 1024 * 1024;

/// One streamed item of a recorded call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CachedEvent {
    Text(String),
    ToolCall(ToolCall),
}

/// A cached model call, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedCall {
    pub key: String,
    pub provider: String,
    pub model: String,
    pub created_at: DateTime<Utc>,
    pub events: Vec<CachedEvent>,
    pub summary: CallSummary,
}

/// A folder of cached model calls: `<dir>/<2 hex>/<key>.json`.
#[derive(Debug, Clone)]
pub struct ModelCache {
    files: KeyedFiles,
}

impl ModelCache {
    pub fn new(dir: impl Into<PathBuf>) -> ModelCache {
        ModelCache {
            files: KeyedFiles::new(dir),
        }
    }

    pub fn dir(&self) -> &Path {
        self.files.dir()
    }

    pub fn get(&self, key: &str) -> Option<CachedCall> {
        let bytes = self.files.read(key, MAX_ENTRY_BYTES)?;
        let entry: CachedCall = serde_json::from_slice(&bytes).ok()?;
        (entry.key == key).then_some(entry)
    }

    /// Stores `entry`, synced off the caller's thread.
    pub async fn put(&self, entry: &CachedCall) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(entry).map_err(std::io::Error::other)?;
        self.files.write_off_thread(entry.key.clone(), bytes).await
    }
}

/// The cache key of `request` to `provider` (its identity), for sample `sample`.
pub fn request_key(
    provider: &str,
    models: &crate::models::ModelTable,
    request: &ModelRequest,
    sample: u32,
) -> String {
    let fields = KeyFields {
        provider,
        model: &request.model,
        system: &request.system,
        messages: &request.messages,
        tools: &request.tools,
        thinking_level: request.thinking_level.as_str(),
        thinking: models.control(&request.model, request.thinking_level),
        reasoning_effort: models.reasoning_effort(&request.model, request.thinking_level),
        token_field: models.token_field(&request.model),
        max_output_tokens: request.max_output_tokens,
        response_schema: request.response_schema.as_ref(),
        sample,
    };
    crate::digest::sha256_hex_of_json(&fields)
}

/// What a cache key hashes, borrowed from the request and serialised once,
/// straight into the hash. The fields and their order are the key's bytes:
/// a change makes every stored call miss once (docs/cache.md).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct KeyFields<'a> {
    provider: &'a str,
    model: &'a str,
    system: &'a str,
    messages: &'a [crate::provider::AiMessage],
    tools: &'a [crate::tools::ToolDeclaration],
    // The level as sent (already fitted), and how: a `--models` change of
    // a budget is a different request.
    thinking_level: &'a str,
    thinking: crate::models::GeminiThinking,
    // An OpenAI-compatible model's effort and cap field, as sent.
    reasoning_effort: Option<crate::prompts::thinking::ThinkingLevel>,
    token_field: crate::models::TokenField,
    max_output_tokens: u32,
    response_schema: Option<&'a serde_json::Value>,
    sample: u32,
}

/// `inner`, answering from `cache` what it answered before for this sample.
pub struct CachingProvider {
    inner: Arc<dyn ModelProvider>,
    cache: ModelCache,
    sample: u32,
}

impl CachingProvider {
    pub fn new(inner: Arc<dyn ModelProvider>, cache: ModelCache, sample: u32) -> CachingProvider {
        CachingProvider {
            inner,
            cache,
            sample,
        }
    }
}

impl ModelProvider for CachingProvider {
    fn kind(&self) -> super::ProviderKind {
        self.inner.kind()
    }

    fn models(&self) -> std::sync::Arc<crate::models::ModelTable> {
        self.inner.models()
    }

    fn check_ready(&self) -> Result<(), ProviderError> {
        self.inner.check_ready()
    }

    fn stream_turn(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let key = request_key(
            &self.inner.identity(),
            &self.inner.models(),
            &request,
            self.sample,
        );
        if let Some(hit) = self.cache.get(&key) {
            return replay(hit);
        }
        let mut entry = CachedCall {
            key,
            provider: self.inner.name().to_string(),
            model: request.model.clone(),
            created_at: Utc::now(),
            events: Vec::new(),
            summary: CallSummary::default(),
        };
        let cache = self.cache.clone();
        let live = self.inner.stream_turn(request, cancel);
        Box::pin(async_stream::stream! {
            futures_util::pin_mut!(live);
            while let Some(item) = live.next().await {
                match &item {
                    Ok(ModelEvent::TextDelta(text)) => entry.events.push(CachedEvent::Text(text.clone())),
                    Ok(ModelEvent::ToolCall(call)) => entry.events.push(CachedEvent::ToolCall(call.clone())),
                    Ok(ModelEvent::Done(summary)) => {
                        entry.summary = summary.clone();
                        entry.summary.retries = 0;
                        // A cache that cannot be written costs a later call, not this one.
                        let _ = cache.put(&entry).await;
                    }
                    // Retries are the live call's, never replayed from the cache.
                    Ok(ModelEvent::Retry(_)) | Err(_) => {}
                }
                yield item;
            }
        })
    }
}

/// A recorded call as a stream, marked as answered from the cache.
fn replay(hit: CachedCall) -> ModelStream {
    let mut summary = hit.summary;
    summary.cached = true;
    let events = hit
        .events
        .into_iter()
        .map(|event| match event {
            CachedEvent::Text(text) => Ok(ModelEvent::TextDelta(text)),
            CachedEvent::ToolCall(call) => Ok(ModelEvent::ToolCall(call)),
        })
        .chain(std::iter::once(Ok(ModelEvent::Done(summary))));
    Box::pin(futures_util::stream::iter(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompts::thinking::ThinkingLevel;
    use crate::provider::AiMessage;
    use serde_json::json;

    fn request() -> ModelRequest {
        ModelRequest {
            model: "gemini-3.1-flash-lite".into(),
            system: "You are a claims assistant.\n\"quoted\" ünïcode".into(),
            messages: vec![AiMessage::User {
                text: "What is the excess?".into(),
            }],
            tools: crate::tools::offered_tools(false).declarations.clone(),
            thinking_level: ThinkingLevel::Low,
            max_output_tokens: 8192,
            response_schema: Some(json!({"type": "object", "required": ["b", "a"]})),
        }
    }

    /// Cache keys are what `--cache` folders hold entries by: a change of
    /// their bytes makes every stored call miss once, so it must be on
    /// purpose (and said in docs/cache.md). The value was computed by the
    /// key's first form, a `json!` object serialised once more.
    #[test]
    fn the_key_of_a_request_is_unchanged() {
        let models = crate::models::ModelTable::shipped();
        let key = request_key("gemini", &models, &request(), 2);
        assert_eq!(
            key,
            "ff39596f60c37569deb4486b45b65a915858a91e94d00cb1fc37ee828078367d"
        );
        assert_ne!(key, request_key("gemini", &models, &request(), 3));
    }
}
