//! Judge replies on disk, by the SHA-256 of everything the judge was given
//! (`JudgeQuery::cache_key`): an unchanged answer is never judged twice.
//!
//! One file per entry (`keyed_files`: written whole or not at all, so
//! concurrent evals sharing a folder never read half an entry). An entry
//! that cannot be read is a miss.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::event::Usage;
use crate::keyed_files::KeyedFiles;

/// The most an entry may hold (a reply is capped well below this).
const MAX_ENTRY_BYTES: u64 = 1024 * 1024;

/// A cached judge reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedReply {
    pub key: String,
    pub model: String,
    pub reply: String,
    /// What the call cost when it was made.
    pub usage: Usage,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug)]
pub struct JudgeCache {
    files: KeyedFiles,
}

impl JudgeCache {
    pub fn new(dir: impl Into<PathBuf>) -> JudgeCache {
        JudgeCache {
            files: KeyedFiles::new(dir),
        }
    }

    pub fn dir(&self) -> &Path {
        self.files.dir()
    }

    /// The entry for `key`, when there is a readable one.
    pub fn get(&self, key: &str) -> Option<CachedReply> {
        let bytes = self.files.read(key, MAX_ENTRY_BYTES)?;
        let entry: CachedReply = serde_json::from_slice(&bytes).ok()?;
        (entry.key == key).then_some(entry)
    }

    /// Stores a reply, synced off the caller's thread.
    pub async fn put(
        &self,
        key: &str,
        model: &str,
        reply: &str,
        usage: Usage,
    ) -> std::io::Result<()> {
        let entry = CachedReply {
            key: key.to_string(),
            model: model.to_string(),
            reply: reply.to_string(),
            usage,
            created_at: Utc::now(),
        };
        let bytes = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        self.files.write_off_thread(key.to_string(), bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_entry_reads_back_and_a_bad_one_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("judge-cache-{}", std::process::id()));
        let cache = JudgeCache::new(&dir);
        let key = "ab".repeat(32);
        assert_eq!(cache.get(&key), None);
        cache
            .put(&key, "m", "{\"pass\":true}", Usage::default())
            .await
            .unwrap();
        assert_eq!(cache.get(&key).unwrap().reply, "{\"pass\":true}");
        std::fs::write(cache.files.path(&key).unwrap(), "{ half").unwrap();
        assert_eq!(cache.get(&key), None, "unreadable is a miss");
        assert_eq!(cache.get("../../etc/passwd"), None);
        assert!(cache.put("../x", "m", "r", Usage::default()).await.is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
