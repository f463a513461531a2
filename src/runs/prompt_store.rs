//! The assembled prompt of a run log, stored once for every log that used
//! it: `<runs dir>/prompts/<sha256>.json`, named by the SHA-256 of its own
//! bytes (the applied override texts, the blocks with their sources, the
//! tool declarations), written whole and never replaced; each log's header
//! names it (`promptSha256`). Logs written before (schema 2 and older) keep
//! their `prompt` record inline and read as they always did.
//!
//! A prompt file is read back only when its bytes hash to its name, so a
//! torn or edited file is said to be unreadable, never taken for the
//! prompt; a log copied without it still reads, saying the prompt text is
//! not at hand.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;

use super::record::PromptRecord;
use crate::chat::system::PromptBlock;
use crate::keyed_files::KeyedFiles;
use crate::tools::ToolDeclaration;

/// The folder of stored prompts in a runs folder; never a prompt
/// fingerprint (`default` or 12 hex), so no scanner takes it for one.
pub const PROMPTS_FOLDER: &str = "prompts";

/// Stored prompts kept in memory, so that reading 10,000 logs of a few
/// prompt versions reads each prompt file once. Cleared when it grows past
/// this many, which bounds it whatever the corpus.
const CACHED_PROMPTS: usize = 512;

/// `<runs dir>/prompts`.
pub fn prompts_dir(runs_dir: &Path) -> PathBuf {
    runs_dir.join(PROMPTS_FOLDER)
}

/// A prompt record's fields, borrowed from the turn: serialises to exactly
/// the bytes of `PromptRecord` (and of the inline `prompt` record, without
/// its tag), so nothing is cloned to store it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParts<'a> {
    pub applied_overrides: &'a BTreeMap<String, String>,
    pub blocks: &'a [PromptBlock],
    pub tools: &'a [ToolDeclaration],
}

/// Stores the prompt under `runs_dir` unless it is there already, and
/// gives its name (the SHA-256 of its bytes) for the log's header. Turns
/// of one prompt version racing to store it each write a temporary of
/// their own; the first to link it into place wins (`KeyedFiles::write_once`).
pub fn store_prompt(runs_dir: &Path, prompt: &PromptParts) -> io::Result<String> {
    let bytes = serde_json::to_vec(prompt).map_err(io::Error::other)?;
    let key = crate::digest::sha256_hex(&bytes);
    KeyedFiles::flat(prompts_dir(runs_dir)).write_once(&key, &bytes)?;
    Ok(key)
}

/// The stored prompt a log's header names, looked for in the log's runs
/// folder (`<runs dir>/<fingerprint>/<log>` → `<runs dir>/prompts/`), then
/// beside the log. The error says why the prompt text is not at hand.
pub fn load_prompt(log: &Path, key: &str) -> Result<Arc<PromptRecord>, PromptNotAtHand> {
    if key.len() != 64 || !key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(PromptNotAtHand::NotADigest(crate::text::quote(key)));
    }
    let folder = log.parent().unwrap_or(Path::new(""));
    let candidates = folder.parent().into_iter().chain([folder]);
    for runs_dir in candidates {
        let path = prompts_dir(runs_dir).join(format!("{key}.json"));
        if !path.is_file() {
            continue;
        }
        if let Some(cached) = cache().lock().ok().and_then(|c| c.get(&path).cloned()) {
            return Ok(cached);
        }
        let prompt = Arc::new(read_prompt(&path, key)?);
        if let Ok(mut cache) = cache().lock() {
            if cache.len() >= CACHED_PROMPTS {
                cache.clear();
            }
            cache.insert(path, Arc::clone(&prompt));
        }
        return Ok(prompt);
    }
    Err(PromptNotAtHand::Missing(key.to_string()))
}

/// Why a log's stored prompt cannot be shown.
#[derive(Debug, thiserror::Error)]
pub enum PromptNotAtHand {
    #[error("the prompt text is not at hand: the header's promptSha256 {0} is not a SHA-256")]
    NotADigest(String),
    #[error(
        "the prompt text is not at hand: {PROMPTS_FOLDER}/{0}.json is not in the log's runs \
         folder (copied without it?)"
    )]
    Missing(String),
    #[error("the prompt text is not at hand: `{path}` could not be read: {error}")]
    Unreadable { path: String, error: io::Error },
    #[error(
        "the prompt text is not at hand: `{path}` is not the prompt it is named after (its \
         SHA-256 is {short})"
    )]
    Misnamed { path: String, short: String },
    #[error("the prompt text is not at hand: `{path}` is not a prompt record: {quoted}")]
    NotARecord { path: String, quoted: String },
}

/// One prompt file, which must hash to its name.
fn read_prompt(path: &Path, key: &str) -> Result<PromptRecord, PromptNotAtHand> {
    let shown = || path.display().to_string();
    let bytes = crate::input::read_input(path).map_err(|error| PromptNotAtHand::Unreadable {
        path: shown(),
        error,
    })?;
    let actual = crate::digest::sha256_hex(&bytes);
    if actual != key {
        return Err(PromptNotAtHand::Misnamed {
            path: shown(),
            short: crate::digest::short_sha(&actual).to_string(),
        });
    }
    serde_json::from_slice(&bytes).map_err(|error| PromptNotAtHand::NotARecord {
        path: shown(),
        quoted: crate::text::quote(&error.to_string()),
    })
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Arc<PromptRecord>>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<PromptRecord>>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::system::BlockSource;

    fn record() -> PromptRecord {
        PromptRecord {
            applied_overrides: BTreeMap::from([("system.base".into(), "Be brief.".into())]),
            blocks: vec![PromptBlock {
                id: "system.base".into(),
                source: BlockSource::Override,
                text: "Be brief.".into(),
            }],
            tools: vec![],
        }
    }

    fn parts(record: &PromptRecord) -> PromptParts<'_> {
        PromptParts {
            applied_overrides: &record.applied_overrides,
            blocks: &record.blocks,
            tools: &record.tools,
        }
    }

    #[test]
    fn the_borrowed_parts_are_the_record_byte_for_byte() {
        let record = record();
        assert_eq!(
            serde_json::to_vec(&parts(&record)).unwrap(),
            serde_json::to_vec(&record).unwrap()
        );
    }

    #[test]
    fn a_prompt_is_stored_once_and_read_back_only_when_it_hashes_to_its_name() {
        let runs = tempfile::tempdir().unwrap();
        let record = record();
        let key = store_prompt(runs.path(), &parts(&record)).unwrap();
        assert_eq!(store_prompt(runs.path(), &parts(&record)).unwrap(), key);
        let folder = prompts_dir(runs.path());
        let names: Vec<_> = std::fs::read_dir(&folder).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "one file, no temporaries left");
        let log = runs.path().join("default").join("x.ndjson");
        let read = load_prompt(&log, &key).unwrap();
        assert_eq!(read.blocks[0].text, "Be brief.");
        // An edited file is refused by its digest, not read as the prompt.
        let other = runs.path().join("copy");
        std::fs::create_dir_all(prompts_dir(&other)).unwrap();
        std::fs::write(prompts_dir(&other).join(format!("{key}.json")), b"{}").unwrap();
        let error = load_prompt(&other.join("default").join("x.ndjson"), &key)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("is not the prompt it is named after"),
            "{error}"
        );
        let error = load_prompt(&log, "../../etc/passwd")
            .unwrap_err()
            .to_string();
        assert!(error.contains("is not a SHA-256"), "{error}");
        let error = load_prompt(Path::new("/nowhere/default/x.ndjson"), &key)
            .unwrap_err()
            .to_string();
        assert!(error.contains("is not in the log's runs folder"), "{error}");
    }
}
