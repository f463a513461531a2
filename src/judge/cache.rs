//! Judge replies on disk, by the SHA-256 of everything the judge was given
//! (`JudgeQuery::cache_key`): an unchanged answer is never judged twice.
//!
//! One file per entry under `<dir>/<first two hex>/<key>.json`, written to a
//! temporary file and renamed, so concurrent evals sharing a folder never
//! read half an entry. An entry that cannot be read is a miss.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::event::Usage;

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
    dir: PathBuf,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl JudgeCache {
    pub fn new(dir: impl Into<PathBuf>) -> JudgeCache {
        JudgeCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        // Keys are hex digests; anything else never touches the disk.
        if key.len() < 3 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(self.dir.join(&key[..2]).join(format!("{key}.json")))
    }

    /// The entry for `key`, when there is a readable one.
    pub fn get(&self, key: &str) -> Option<CachedReply> {
        let path = self.path(key)?;
        let file = std::fs::File::open(path).ok()?;
        let bytes = crate::input::read_limited(file, MAX_ENTRY_BYTES).ok()?;
        let entry: CachedReply = serde_json::from_slice(&bytes).ok()?;
        (entry.key == key).then_some(entry)
    }

    pub fn put(&self, key: &str, model: &str, reply: &str, usage: Usage) -> std::io::Result<()> {
        let path = self
            .path(key)
            .ok_or_else(|| std::io::Error::other("not a cache key"))?;
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(folder)?;
        let entry = CachedReply {
            key: key.to_string(),
            model: model.to_string(),
            reply: reply.to_string(),
            usage,
            created_at: Utc::now(),
        };
        let temp = folder.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::File::create(&temp).and_then(|mut file| {
            file.write_all(&serde_json::to_vec(&entry).map_err(std::io::Error::other)?)?;
            file.sync_all()
        });
        match written.and_then(|()| std::fs::rename(&temp, &path)) {
            Ok(()) => Ok(()),
            Err(error) => {
                let _ = std::fs::remove_file(&temp);
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_and_a_bad_one_is_a_miss() {
        let dir = std::env::temp_dir().join(format!("judge-cache-{}", std::process::id()));
        let cache = JudgeCache::new(&dir);
        let key = "ab".repeat(32);
        assert_eq!(cache.get(&key), None);
        cache
            .put(&key, "m", "{\"pass\":true}", Usage::default())
            .unwrap();
        assert_eq!(cache.get(&key).unwrap().reply, "{\"pass\":true}");
        std::fs::write(cache.path(&key).unwrap(), "{ half").unwrap();
        assert_eq!(cache.get(&key), None, "unreadable is a miss");
        assert_eq!(cache.get("../../etc/passwd"), None);
        assert!(cache.put("../x", "m", "r", Usage::default()).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
