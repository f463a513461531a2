//! The assembled prompt of a run log, stored once for every log that used
//! it: `<runs dir>/prompts/<sha256>.json`, named by the SHA-256 of its own
//! bytes (the applied override texts, the blocks with their sources, the
//! tool declarations), written whole and synced, and replaced only when
//! what is found under its name is not those bytes (`KeyedFiles::write_once`:
//! a file an older promptlab left unsynced, torn by a power loss); each
//! log's header names it (`promptSha256`). Logs written before (schema 2
//! and older) keep their `prompt` record inline and read as they always did.
//!
//! One way to store one: `stage_prompt` serialises and names it,
//! `StagedPrompt::write` puts its file in place unless it is there
//! (`store_prompt` does both). A run-log recorder stages on the turn's
//! thread and writes on the blocking pool; nothing is remembered between
//! turns, so a file removed since is simply written again.
//!
//! A prompt file is read back only when its bytes hash to its name, so a
//! torn or edited file is said to be unreadable, never taken for the
//! prompt; a log copied without it still reads, saying the prompt text is
//! not at hand. A reader of many logs keeps the prompts it has read
//! (`StoredPrompts`), so each file is read once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::record::PromptRecord;
use crate::chat::PreparedTurn;
use crate::chat::system::PromptBlock;
use crate::keyed_files::KeyedFiles;
use crate::tools::ToolDeclaration;

/// The folder of stored prompts in a runs folder; never a prompt
/// fingerprint (`default` or 12 hex), so no scanner takes it for one.
pub const PROMPTS_FOLDER: &str = "prompts";

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

impl<'a> PromptParts<'a> {
    pub fn new(
        applied_overrides: &'a BTreeMap<String, String>,
        blocks: &'a [PromptBlock],
        tools: &'a [ToolDeclaration],
    ) -> PromptParts<'a> {
        PromptParts {
            applied_overrides,
            blocks,
            tools,
        }
    }

    /// A prepared turn's prompt.
    pub fn of_turn(prepared: &'a PreparedTurn) -> PromptParts<'a> {
        PromptParts::new(
            &prepared.applied_overrides,
            &prepared.prompt.blocks,
            &prepared.tools,
        )
    }
}

/// Stores the prompt under `runs_dir` unless it is there already, and
/// gives its name (the SHA-256 of its bytes) for the log's header.
pub fn store_prompt(runs_dir: &Path, prompt: &PromptParts) -> io::Result<String> {
    stage_prompt(runs_dir, prompt)?.write()
}

/// A prompt serialised and named, its file still to be written
/// (`write`): so that a caller on a runtime's thread can hand the write,
/// which may sync, to the blocking pool.
pub struct StagedPrompt {
    files: KeyedFiles,
    key: String,
    bytes: Vec<u8>,
}

/// `store_prompt` up to the write: the prompt's bytes and their name.
pub fn stage_prompt(runs_dir: &Path, prompt: &PromptParts) -> io::Result<StagedPrompt> {
    let bytes = serde_json::to_vec(prompt).map_err(io::Error::other)?;
    Ok(StagedPrompt {
        files: KeyedFiles::flat(prompts_dir(runs_dir)),
        key: crate::digest::sha256_hex(&bytes),
        bytes,
    })
}

impl StagedPrompt {
    /// The name the prompt's file has.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Puts the file in place, synced, unless the same bytes are there;
    /// gives its name. Turns racing to write it each stage their own
    /// temporary, and the first in place wins (`KeyedFiles::write_once`).
    pub fn write(self) -> io::Result<String> {
        self.files
            .write_once(&self.key, &self.bytes)
            .map_err(|error| {
                // Named: the caller's error is about its log, not this file.
                let path = self.files.path(&self.key).unwrap_or_default();
                let said = format!("storing its prompt `{}`: {error}", path.display());
                io::Error::new(error.kind(), said)
            })?;
        Ok(self.key)
    }
}

/// The prompts one eval run's turns have stored, by name (the SHA-256 of
/// their bytes, never an address): built by the eval runner and handed to
/// each turn's recorder (`RunRecorder::sharing_prompts`), so that a turn
/// whose prompt an earlier turn stored finds its file with a `stat`
/// instead of reading it back on the blocking pool. `chat`, `serve` and
/// `replay` record one turn each and pass none.
#[derive(Debug, Default)]
pub struct StoredPromptNames(parking_lot::Mutex<HashSet<String>>);

impl StoredPromptNames {
    /// Whether `prompt` was stored by this run and its file is still there.
    pub fn has(&self, prompt: &StagedPrompt) -> bool {
        self.0.lock().contains(&prompt.key)
            && (prompt.files.path(&prompt.key)).is_some_and(|path| path.is_file())
    }

    /// `key`'s prompt is stored.
    pub fn add(&self, key: String) {
        self.0.lock().insert(key);
    }
}

/// The stored prompt a log's header names, looked for in the log's runs
/// folder (`<runs dir>/<fingerprint>/<log>` → `<runs dir>/prompts/`), then
/// beside the log. The error says why the prompt text is not at hand.
pub fn load_prompt(log: &Path, key: &str) -> Result<Arc<PromptRecord>, PromptNotAtHand> {
    StoredPrompts::default().load(log, key)
}

/// The stored prompts one reader of many logs has read, by their file: a
/// report of 10,000 logs of a few prompt versions reads each file once.
/// Kept by that reader for as long as it reads.
#[derive(Default)]
pub struct StoredPrompts {
    read: HashMap<PathBuf, Arc<PromptRecord>>,
}

impl StoredPrompts {
    /// `load_prompt`, each file read once.
    pub fn load(&mut self, log: &Path, key: &str) -> Result<Arc<PromptRecord>, PromptNotAtHand> {
        if key.len() != 64 || !key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(PromptNotAtHand::NotADigest(crate::text::quote(key)));
        }
        let folder = log.parent().unwrap_or(Path::new(""));
        let candidates = folder.parent().into_iter().chain([folder]);
        for runs_dir in candidates {
            let path = prompts_dir(runs_dir).join(format!("{key}.json"));
            // Only nothing at the name is "not there": a link, a FIFO or a
            // folder in the file's place is said to be what it is (a link is
            // never followed out of the folder; a FIFO's open would wait).
            match std::fs::symlink_metadata(&path) {
                Err(_) => continue,
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(PromptNotAtHand::NotAFile {
                        path: path.display().to_string(),
                        what: "a symbolic link",
                    });
                }
                Ok(meta) if !meta.is_file() => {
                    let what = crate::input::special_kind(&meta).unwrap_or("a folder");
                    return Err(PromptNotAtHand::NotAFile {
                        path: path.display().to_string(),
                        what,
                    });
                }
                Ok(_) => {}
            }
            if let Some(read) = self.read.get(&path) {
                return Ok(Arc::clone(read));
            }
            let prompt = Arc::new(read_prompt(&path, key)?);
            self.read.insert(path, Arc::clone(&prompt));
            return Ok(prompt);
        }
        Err(PromptNotAtHand::Missing(key.to_string()))
    }
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
    #[error("the prompt text is not at hand: `{path}` is {what}, not a prompt file")]
    NotAFile { path: String, what: &'static str },
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
        PromptParts::new(&record.applied_overrides, &record.blocks, &record.tools)
    }

    fn store(runs_dir: &Path, record: &PromptRecord) -> String {
        store_prompt(runs_dir, &parts(record)).unwrap()
    }

    /// Where the store keeps the prompt named `key` (its own naming rule).
    fn stored_file(runs_dir: &Path, key: &str) -> PathBuf {
        KeyedFiles::flat(prompts_dir(runs_dir)).path(key).unwrap()
    }

    fn record_with_tools(text: &str) -> PromptRecord {
        PromptRecord {
            applied_overrides: BTreeMap::new(),
            blocks: vec![block("system.safety", "Be careful."), block("b", text)],
            tools: crate::tools::offered_tools(false).declarations.to_vec(),
        }
    }

    fn block(id: &str, text: &str) -> PromptBlock {
        PromptBlock {
            id: id.into(),
            source: BlockSource::Default,
            text: text.into(),
        }
    }

    /// Turns of one version racing to store its prompt: every one gets its
    /// name, its file is written whole, and no temporary is left.
    #[test]
    fn turns_racing_to_store_a_prompt_write_it_whole() {
        let runs = tempfile::tempdir().unwrap();
        let record = record_with_tools("x");
        let bytes = serde_json::to_vec(&record).unwrap();
        let keys: Vec<String> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| store(runs.path(), &record)))
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let key = crate::digest::sha256_hex(&bytes);
        assert!(keys.iter().all(|k| *k == key), "{keys:?}");
        let folder = prompts_dir(runs.path());
        let names: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            [std::ffi::OsString::from(format!("{key}.json"))],
            "no temporaries left"
        );
        assert_eq!(
            std::fs::read(stored_file(runs.path(), &key)).unwrap(),
            bytes
        );
    }

    /// A prompt that cannot be stored is an error naming its file.
    #[cfg(unix)]
    #[test]
    fn a_failed_write_is_an_error_naming_the_prompt_file() {
        let runs = tempfile::tempdir().unwrap();
        // `prompts` is a file: no prompt can be written under it.
        std::fs::write(prompts_dir(runs.path()), "not a folder").unwrap();
        let error = store_prompt(runs.path(), &parts(&record()))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("storing its prompt `"), "{error}");
        assert!(error.contains("/prompts/"), "{error}");
    }

    proptest::proptest! {
        /// Whatever was stored before, a prompt's name is the digest of
        /// its own bytes and its file holds them — blocks that join to the
        /// same system text included.
        #[test]
        fn a_prompt_is_named_by_its_own_bytes(
            prompts in proptest::collection::vec((
                // One id and few letters, so that prompts whose blocks join
                // to the same system text are common.
                proptest::collection::vec(("a", "(a|\\n\\n){0,3}"), 1..4),
                proptest::collection::btree_map("[ab]", "a{0,2}", 0..2),
                proptest::option::of(proptest::bool::ANY),
            ), 1..24),
        ) {
            let runs = tempfile::tempdir().unwrap();
            for (texts, applied_overrides, screen_actions) in &prompts {
                let tools = screen_actions.map(|screen| {
                    crate::tools::offered_tools(screen).declarations.to_vec()
                });
                let record = PromptRecord {
                    applied_overrides: applied_overrides.clone(),
                    blocks: texts.iter().map(|(id, text)| block(id, text)).collect(),
                    tools: tools.unwrap_or_default(),
                };
                let bytes = serde_json::to_vec(&record).unwrap();
                let key = store(runs.path(), &record);
                proptest::prop_assert_eq!(&key, &crate::digest::sha256_hex(&bytes));
                let stored = std::fs::read(stored_file(runs.path(), &key));
                proptest::prop_assert_eq!(stored.unwrap(), bytes);
            }
        }
    }

    #[test]
    fn blocks_split_differently_are_different_prompts_and_a_removed_file_comes_back() {
        let runs = tempfile::tempdir().unwrap();
        let record = |texts: [&str; 2]| PromptRecord {
            applied_overrides: BTreeMap::new(),
            blocks: vec![block("a", texts[0]), block("a", texts[1])],
            tools: vec![],
        };
        // The same system text, "x\n\ny\n\nz", cut in two places.
        let first = store(runs.path(), &record(["x\n\ny", "z"]));
        let second = store(runs.path(), &record(["x", "y\n\nz"]));
        assert_ne!(first, second);
        let path = stored_file(runs.path(), &first);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(store(runs.path(), &record(["x\n\ny", "z"])), first);
        assert!(path.is_file(), "stored again");
    }

    /// A torn file found under a prompt's name (what a power loss before an
    /// older promptlab's group sync could leave) is replaced, not taken.
    #[test]
    fn a_torn_prompt_file_is_replaced() {
        let runs = tempfile::tempdir().unwrap();
        let record = record_with_tools("torn");
        let whole = serde_json::to_vec(&record).unwrap();
        let key = crate::digest::sha256_hex(&whole);
        let path = stored_file(runs.path(), &key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
        assert_eq!(store(runs.path(), &record), key);
        assert_eq!(std::fs::read(&path).unwrap(), whole);
        let log = runs.path().join("default").join("x.ndjson");
        assert_eq!(load_prompt(&log, &key).unwrap().blocks, record.blocks);
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
        let key = store(runs.path(), &record);
        assert_eq!(store(runs.path(), &record), key);
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

    /// Issue 61: a link, a FIFO or a folder at a prompt's name was said to
    /// be "not in the log's runs folder (copied without it?)".
    #[test]
    fn a_link_a_fifo_or_a_folder_at_a_prompts_name_is_said_to_be_one() {
        let key = crate::digest::sha256_hex(b"x");
        for what in ["a symbolic link", "a FIFO", "a folder"] {
            let runs = tempfile::tempdir().unwrap();
            let folder = prompts_dir(runs.path());
            std::fs::create_dir_all(&folder).unwrap();
            let path = folder.join(format!("{key}.json"));
            match what {
                "a symbolic link" => std::os::unix::fs::symlink("/etc/passwd", &path).unwrap(),
                "a FIFO" => {
                    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                    // SAFETY: a NUL-terminated path and a mode.
                    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
                }
                _ => std::fs::create_dir(&path).unwrap(),
            }
            let log = runs.path().join("default").join("x.ndjson");
            let error = load_prompt(&log, &key).unwrap_err().to_string();
            assert_eq!(
                error,
                format!(
                    "the prompt text is not at hand: `{}` is {what}, not a prompt file",
                    path.display()
                )
            );
        }
    }
}
