//! The assembled prompt of a run log, stored once for every log that used
//! it: `<runs dir>/prompts/<sha256>.json`, named by the SHA-256 of its own
//! bytes (the applied override texts, the blocks with their sources, the
//! tool declarations), written whole, and replaced only when what is found
//! under its name is not those bytes (`KeyedFiles::write_once`: a file
//! whose writer's sync a power loss cut short); each log's header
//! names it (`promptSha256`). Logs written before (schema 2 and older) keep
//! their `prompt` record inline and read as they always did.
//!
//! A prompt file is read back only when its bytes hash to its name, so a
//! torn or edited file is said to be unreadable, never taken for the
//! prompt; a log copied without it still reads, saying the prompt text is
//! not at hand.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use super::record::PromptRecord;
use crate::chat::PreparedTurn;
use crate::chat::system::PromptBlock;
use crate::keyed_files::KeyedFiles;
use crate::memo::Bounded;
use crate::tools::ToolDeclaration;
use crate::whole_file::Durability;

/// The folder of stored prompts in a runs folder; never a prompt
/// fingerprint (`default` or 12 hex), so no scanner takes it for one.
pub const PROMPTS_FOLDER: &str = "prompts";

/// Stored prompts kept in memory, so that reading 10,000 logs of a few
/// prompt versions reads each prompt file once (`memo::Bounded`: this
/// many, of at most this many bytes of file, whatever the corpus).
const CACHED_PROMPTS: usize = 512;
const CACHED_BYTES: usize = 64 * 1024 * 1024;

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
    /// The turn's own digests of its system text (its blocks joined) and of
    /// its tools, when it has them: they let a prompt this process stored
    /// already be known without serialising and hashing it again. Private:
    /// only `of_turn` sets them, from the turn they are the digests of.
    #[serde(skip)]
    digests: Option<PromptDigests<'a>>,
}

/// `PreparedTurn::system_sha256` and `tools_sha256`.
#[derive(Clone, Copy)]
struct PromptDigests<'a> {
    system_sha256: &'a str,
    tools_sha256: &'a str,
}

impl<'a> PromptParts<'a> {
    /// A prompt record's parts, without digests (it is serialised to be
    /// named).
    pub fn new(
        applied_overrides: &'a BTreeMap<String, String>,
        blocks: &'a [PromptBlock],
        tools: &'a [ToolDeclaration],
    ) -> PromptParts<'a> {
        PromptParts {
            applied_overrides,
            blocks,
            tools,
            digests: None,
        }
    }

    /// A prepared turn's prompt, with the digests `prepare` made of exactly
    /// these blocks and tools.
    pub fn of_turn(prepared: &'a PreparedTurn) -> PromptParts<'a> {
        PromptParts {
            digests: Some(PromptDigests {
                system_sha256: &prepared.system_sha256,
                tools_sha256: &prepared.tools_sha256,
            }),
            ..PromptParts::new(
                &prepared.applied_overrides,
                &prepared.prompt.blocks,
                &prepared.tools,
            )
        }
    }
}

/// Stores the prompt under `runs_dir` unless it is there already, and
/// gives its name (the SHA-256 of its bytes) for the log's header. Turns
/// of one prompt version in this process take turns to write it (the
/// first writes and syncs it, the others find it there); processes racing
/// to store it each write a temporary of their own, and the first to link
/// it into place wins (`KeyedFiles::write_once`).
///
/// A prompt this process stored before (every turn of an eval but the
/// first of each prompt version) is known by its identity, without being
/// serialised and hashed again (~8% of an HTTP eval turn's CPU samples,
/// BENCHMARKS.md, issue #31); its file is still looked for, and written
/// again if it is gone. (`NewPrompt::write_from_runtime` is the same for a
/// caller on a runtime, the turns that wait for a write holding no thread.)
pub fn store_prompt(runs_dir: &Path, prompt: &PromptParts) -> io::Result<String> {
    match stage_prompt(runs_dir, prompt, Durability::Synced)? {
        StagedPrompt::Stored(key) => Ok(key),
        StagedPrompt::New(prompt) => prompt.write(),
    }
}

/// A prompt named before its file is written: one already stored, or one
/// whose bytes are ready to be written (`NewPrompt::write`: synced, or left
/// to a group's sync), so that a caller on a runtime's thread can hand the
/// write to another.
pub enum StagedPrompt {
    Stored(String),
    New(NewPrompt),
}

/// A prompt's bytes and name, to be written under `prompts/`.
pub struct NewPrompt {
    files: KeyedFiles,
    durability: Durability,
    bytes: Arc<[u8]>,
    /// Where the process remembers it, shared with the other turns of
    /// its prompt version.
    slot: Arc<Slot>,
}

impl NewPrompt {
    /// The name the prompt's file will have.
    pub fn key(&self) -> &str {
        &self.slot.key
    }

    /// Writes the file (synced, unless the caller will) unless it is
    /// there; gives its name. Turns of one prompt version that race to
    /// write it take turns: the first writes it, the others find it there.
    pub fn write(self) -> io::Result<String> {
        let _writing = self.slot.writing.lock();
        #[cfg(test)]
        self.slot.writes.fetch_add(1, Ordering::Relaxed);
        // Named: the caller's error is about its log, not this file.
        let path = &self.slot.path;
        self.files
            .write_once(&self.slot.key, &self.bytes, self.durability)
            .map_err(|error| {
                let said = format!("storing its prompt `{}`: {error}", path.display());
                io::Error::new(error.kind(), said)
            })?;
        *self.slot.unwritten.lock() = None;
        // Set each time, as the file may have been removed and written
        // again since a synced write.
        let synced = self.durability == Durability::Synced;
        self.slot.synced.store(synced, Ordering::Release);
        self.slot.written.store(true, Ordering::Release);
        Ok(self.slot.key.clone())
    }

    /// `write` for a caller on a runtime's thread, by one turn of the
    /// prompt version at a time: the others that staged it meanwhile wait
    /// for that write on the runtime, holding no thread, and find it done.
    /// Before, each of them took a blocking thread only to find the file
    /// there — two thread wake-ups a turn whenever a version's turns run
    /// together, as an eval's repeats do (BENCHMARKS.md, issue #31). Should
    /// that write fail, the next waiter writes.
    ///
    /// The write goes to the blocking pool (a turn dropped mid-write leaves
    /// it to end there, and the waiters are told when it does) — except on
    /// a runtime of one thread, such as `eval`'s, for a write left to the
    /// caller's group sync: that one is done here, as it is page-cache work
    /// (a temporary created, written, linked into place; or a file found
    /// there read and compared), cheaper than the two thread wake-ups of
    /// handing it over (−11% of an eval's CPU a turn on tmpfs, one prompt
    /// version in six turns, BENCHMARKS.md). Only a file found torn, or a
    /// link that fails for another reason than the file being there (a
    /// file system without hard links), syncs on this thread. On a runtime
    /// of several threads it is not done here: see `on_one_thread`.
    pub async fn write_from_runtime(self) -> io::Result<String> {
        loop {
            let settled = self.slot.settled.notified();
            tokio::pin!(settled);
            // Listening before looking, so that a write that settles in
            // between is not missed.
            settled.as_mut().enable();
            // Looked for, not only remembered: a file removed since it was
            // written is written again, as `stage_prompt` would.
            if self.slot.on_disk(self.durability) {
                return Ok(self.slot.key.clone());
            }
            if !self.slot.claimed.swap(true, Ordering::AcqRel) {
                break;
            }
            settled.await;
        }
        let claim = Claim(Arc::clone(&self.slot));
        if self.durability == Durability::Unsynced && on_one_thread() {
            let written = self.write();
            drop(claim);
            return written;
        }
        tokio::task::spawn_blocking(move || {
            let written = self.write();
            // Given up from the pool's thread, as the write ends (or
            // unwinds): the waiters are woken from outside the runtime's
            // workers, so any worker can run them (`on_one_thread`).
            drop(claim);
            written
        })
        .await
        .unwrap_or_else(|joined| Err(io::Error::other(joined)))
    }
}

/// Whether this runs on a runtime of one thread, where a waiter woken from
/// the writing turn's own task runs as soon as that turn next waits. On a
/// runtime of several, it would wait in the turn's worker's next-task slot,
/// which no other worker takes, for as long as the turn then holds that
/// thread (a model call that blocks it: `tests/it/eval_parallel.rs` caught it
/// a few times in fifty runs) — so there the claim is given up from the
/// blocking pool's thread.
fn on_one_thread() -> bool {
    tokio::runtime::Handle::try_current().is_ok_and(|runtime| {
        runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread
    })
}

/// The claim to write a slot's file, taken by a turn and then held by its
/// write (on the blocking pool, which may outlive the turn); given up when
/// dropped, however the write ended, and the turns waiting on it told.
struct Claim(Arc<Slot>);

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.claimed.store(false, Ordering::Release);
        self.0.settled.notify_waiters();
    }
}

/// `store_prompt` up to the write: the prompt's name, and its bytes when
/// its file is not known to be there already — or, for a caller that needs
/// it `Durability::Synced`, not known to be synced (a group's turn in this
/// process may have written it for its group's sync).
///
/// A prompt version's bytes are serialised and hashed once in a process,
/// even by turns that start before its file is written (an eval's first
/// `-j` turns of each version): they share the first one's bytes, and its
/// name, by the prompt's identity.
pub fn stage_prompt(
    runs_dir: &Path,
    prompt: &PromptParts,
    durability: Durability,
) -> io::Result<StagedPrompt> {
    let files = KeyedFiles::flat(prompts_dir(runs_dir));
    let new = |bytes, slot| {
        StagedPrompt::New(NewPrompt {
            files: files.clone(),
            durability,
            bytes,
            slot,
        })
    };
    let Some(digests) = prompt.digests else {
        let (bytes, key) = serialised(prompt)?;
        return Ok(new(bytes, Arc::new(Slot::new(&files, key, None)?)));
    };
    let identity = (runs_dir.to_path_buf(), identity(prompt, digests));
    let known = slots().lock().get(&identity).cloned();
    if let Some(slot) = known {
        if slot.on_disk(durability) {
            return Ok(StagedPrompt::Stored(slot.key.clone()));
        }
        let unwritten = slot.unwritten.lock().clone();
        let bytes = match unwritten {
            Some(bytes) => bytes,
            // Written, then removed (or to be synced): again from this
            // turn's own.
            None => serialised(prompt)?.0,
        };
        return Ok(new(bytes, slot));
    }
    let (bytes, key) = serialised(prompt)?;
    let slot = Arc::new(Slot::new(&files, key, Some(Arc::clone(&bytes)))?);
    let weight =
        identity.0.as_os_str().len() + identity.1.len() + slot.path.as_os_str().len() + bytes.len();
    slots().lock().insert(identity, Arc::clone(&slot), weight);
    Ok(new(bytes, slot))
}

/// A prompt's bytes and their SHA-256, its name.
fn serialised(prompt: &PromptParts) -> io::Result<(Arc<[u8]>, String)> {
    let bytes = serde_json::to_vec(prompt).map_err(io::Error::other)?;
    let key = crate::digest::sha256_hex(&bytes);
    Ok((bytes.into(), key))
}

/// A prompt this process named.
struct Slot {
    key: String,
    /// Its file's path, made once: looked for at every turn of its version.
    path: PathBuf,
    /// Its bytes until its file is written, for the turns that stage it
    /// meanwhile; dropped then, so the memo holds names, not prompts.
    unwritten: Mutex<Option<Arc<[u8]>>>,
    written: AtomicBool,
    /// Written or found `Durability::Synced`: on disk now, not only at a
    /// group's next sync.
    synced: AtomicBool,
    /// Its file is being written for a turn of its version
    /// (`write_from_runtime`), on the blocking pool or that turn's thread...
    claimed: AtomicBool,
    /// ...and tells the turns waiting for it when that write has ended.
    settled: tokio::sync::Notify,
    /// Held while its file is written: by the run-log recorder
    /// (`RunRecorder::wait`), on the blocking pool or the turn's own
    /// thread (`write_from_runtime`); a direct caller of
    /// `store_prompt` waits on it as it would on the write itself.
    writing: Mutex<()>,
    /// How many writes were tried (the tests' count).
    #[cfg(test)]
    writes: std::sync::atomic::AtomicUsize,
}

impl Slot {
    fn new(files: &KeyedFiles, key: String, unwritten: Option<Arc<[u8]>>) -> io::Result<Slot> {
        let path = files
            .path(&key)
            .ok_or_else(|| io::Error::other("a prompt's name is its SHA-256 in hex"))?;
        Ok(Slot {
            key,
            path,
            unwritten: Mutex::new(unwritten),
            written: AtomicBool::new(false),
            synced: AtomicBool::new(false),
            claimed: AtomicBool::new(false),
            settled: tokio::sync::Notify::new(),
            writing: Mutex::new(()),
            #[cfg(test)]
            writes: std::sync::atomic::AtomicUsize::new(0),
        })
    }
}

impl Slot {
    /// Whether its file is there as durably as `durability` asks: written
    /// (and synced, if asked), and still found (a file removed since is
    /// written again, under the same name).
    fn on_disk(&self, durability: Durability) -> bool {
        let durable = match durability {
            Durability::Synced => self.synced.load(Ordering::Acquire),
            Durability::Unsynced => true,
        };
        self.written.load(Ordering::Acquire) && durable && self.path.is_file()
    }
}

/// Prompts this process named, by runs folder and identity
/// (`memo::Bounded`: whatever the corpus, at most this many, and this many
/// bytes counting each unwritten prompt's).
const KNOWN_PROMPTS: usize = 4096;
const KNOWN_BYTES: usize = 64 * 1024 * 1024;

type Slots = Mutex<Bounded<(PathBuf, String), Arc<Slot>>>;

fn slots() -> &'static Slots {
    static SLOTS: OnceLock<Slots> = OnceLock::new();
    SLOTS.get_or_init(|| Mutex::new(Bounded::new(KNOWN_PROMPTS, KNOWN_BYTES)))
}

/// A digest that tells one prompt from another as surely as its bytes'
/// does, from far fewer bytes (no block text, no tool): the system text's digest and each
/// block's id, source and length — the blocks' texts, joined, are the
/// system text, so their lengths cut it back into exactly those texts —
/// with the tools' digest and the applied overrides.
fn identity(prompt: &PromptParts, digests: PromptDigests) -> String {
    #[derive(Serialize)]
    struct Identity<'a> {
        system_sha256: &'a str,
        tools_sha256: &'a str,
        blocks: Vec<(&'a str, crate::chat::system::BlockSource, usize)>,
        applied_overrides: &'a BTreeMap<String, String>,
    }
    crate::digest::sha256_hex_of_json(&Identity {
        system_sha256: digests.system_sha256,
        tools_sha256: digests.tools_sha256,
        blocks: prompt
            .blocks
            .iter()
            .map(|block| (block.id.as_str(), block.source, block.text.len()))
            .collect(),
        applied_overrides: prompt.applied_overrides,
    })
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
        if let Some(cached) = cache().lock().get(&path).cloned() {
            return Ok(cached);
        }
        let (prompt, bytes) = read_prompt(&path, key)?;
        let prompt = Arc::new(prompt);
        cache().lock().insert(path, Arc::clone(&prompt), bytes);
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

/// One prompt file, which must hash to its name, and its size.
fn read_prompt(path: &Path, key: &str) -> Result<(PromptRecord, usize), PromptNotAtHand> {
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
    let record = serde_json::from_slice(&bytes).map_err(|error| PromptNotAtHand::NotARecord {
        path: shown(),
        quoted: crate::text::quote(&error.to_string()),
    })?;
    Ok((record, bytes.len()))
}

type ReadPrompts = Mutex<Bounded<PathBuf, Arc<PromptRecord>>>;

fn cache() -> &'static ReadPrompts {
    static CACHE: OnceLock<ReadPrompts> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Bounded::new(CACHED_PROMPTS, CACHED_BYTES)))
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
            digests: None,
        }
    }

    /// `store_prompt` as a turn calls it: with the digests `prepare` makes.
    fn store_as_a_turn(runs_dir: &Path, record: &PromptRecord) -> String {
        match stage_as_a_turn(runs_dir, record, Durability::Synced) {
            StagedPrompt::Stored(key) => key,
            StagedPrompt::New(prompt) => prompt.write().unwrap(),
        }
    }

    fn stage_as_a_turn(
        runs_dir: &Path,
        record: &PromptRecord,
        durability: Durability,
    ) -> StagedPrompt {
        let joined: Vec<&str> = record.blocks.iter().map(|b| b.text.as_str()).collect();
        let system_sha256 =
            crate::digest::sha256_hex(joined.join(crate::chat::system::BLOCK_SEPARATOR));
        let tools_sha256 = crate::digest::sha256_hex(serde_json::to_vec(&record.tools).unwrap());
        let digests = PromptDigests {
            system_sha256: &system_sha256,
            tools_sha256: &tools_sha256,
        };
        let parts = PromptParts {
            digests: Some(digests),
            ..parts(record)
        };
        stage_prompt(runs_dir, &parts, durability).unwrap()
    }

    /// An eval's first `-j` turns of a version all stage its prompt before
    /// any has written it: they share one slot, and its file is written
    /// once, whole, whichever turn writes first.
    #[test]
    fn turns_staging_a_prompt_before_it_is_written_share_its_bytes_and_name() {
        let runs = tempfile::tempdir().unwrap();
        let record = record_with_tools("x");
        let bytes = serde_json::to_vec(&record).unwrap();
        let staged = staged_by(8, runs.path(), &record);
        // One slot, and one serialisation: every turn writes the same bytes.
        assert!(staged.iter().all(|p| Arc::ptr_eq(&p.slot, &staged[0].slot)));
        assert!(
            staged
                .iter()
                .all(|p| Arc::ptr_eq(&p.bytes, &staged[0].bytes))
        );
        let keys: Vec<String> = std::thread::scope(|scope| {
            let writers: Vec<_> = staged
                .into_iter()
                .map(|prompt| scope.spawn(move || prompt.write().unwrap()))
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
            std::fs::read(folder.join(format!("{key}.json"))).unwrap(),
            bytes
        );
        assert!(
            matches!(stage_as_a_turn(runs.path(), &record, Durability::Synced), StagedPrompt::Stored(k) if k == key)
        );
    }

    fn staged_by(turns: usize, runs_dir: &Path, record: &PromptRecord) -> Vec<NewPrompt> {
        staged_as(Durability::Synced, turns, runs_dir, record)
    }

    fn staged_as(
        durability: Durability,
        turns: usize,
        runs_dir: &Path,
        record: &PromptRecord,
    ) -> Vec<NewPrompt> {
        (0..turns)
            .map(|_| match stage_as_a_turn(runs_dir, record, durability) {
                StagedPrompt::New(prompt) => prompt,
                StagedPrompt::Stored(_) => panic!("not written yet"),
            })
            .collect()
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// The turns of a prompt version that stage it together take no
    /// blocking thread each: one writes, the others wait for that write.
    #[test]
    fn turns_staging_a_prompt_together_write_it_once_off_thread() {
        for durability in [Durability::Synced, Durability::Unsynced] {
            eight_turns_write_once(durability);
        }
    }

    fn eight_turns_write_once(durability: Durability) {
        let runs = tempfile::tempdir().unwrap();
        let record = record_with_tools("one write");
        let staged = staged_as(durability, 8, runs.path(), &record);
        let slot = Arc::clone(&staged[0].slot);
        let keys = current_thread().block_on(within_a_minute(futures_util::future::join_all(
            staged.into_iter().map(NewPrompt::write_from_runtime),
        )));
        let key = crate::digest::sha256_hex(serde_json::to_vec(&record).unwrap());
        assert!(
            keys.iter().all(|k| k.as_deref().ok() == Some(key.as_str())),
            "{keys:?}"
        );
        assert_eq!(
            slot.writes.load(Ordering::Relaxed),
            1,
            "one write for eight turns ({durability:?})"
        );
        assert!(!slot.claimed.load(Ordering::Relaxed));
        assert!(stored_file(runs.path(), &key).is_file());
    }

    /// A write left to the group's sync is done on the turn's own thread:
    /// with the runtime's only blocking thread taken, it still ends (handed
    /// to the pool, it would wait for that thread).
    #[test]
    fn a_write_left_to_the_group_takes_no_blocking_thread() {
        let runs = tempfile::tempdir().unwrap();
        let prompt = one_left_to_the_group(runs.path(), "left to the group");
        let (runtime, release, blocker) =
            with_the_pool_taken(tokio::runtime::Builder::new_current_thread());
        let written = runtime.block_on(async {
            tokio::time::timeout(
                std::time::Duration::from_secs(10),
                prompt.write_from_runtime(),
            )
            .await
        });
        release.send(()).unwrap();
        runtime.block_on(blocker).unwrap();
        let key = written
            .expect("the write waited for a blocking thread")
            .unwrap();
        assert!(stored_file(runs.path(), &key).is_file());
    }

    /// A writer whose turn is dropped mid-write: its write ends on the
    /// blocking pool all the same, and the turns waiting for it are told.
    // The slot's lock is held across polls on purpose: it is what keeps
    // the dropped writer's blocking half from finishing first. `poll!`
    // polls once and never yields to anything that takes it.
    #[allow(clippy::await_holding_lock)]
    #[test]
    fn a_writer_dropped_mid_write_still_tells_the_waiters() {
        let runs = tempfile::tempdir().unwrap();
        let record = record_with_tools("dropped writer");
        let mut staged = staged_by(3, runs.path(), &record);
        let slot = Arc::clone(&staged[0].slot);
        let writer = staged.remove(0);
        current_thread().block_on(async {
            // The first claims the write, whose blocking half waits for the
            // slot's lock, held here; the others wait for it to settle.
            let held = slot.writing.lock();
            let mut first = Box::pin(writer.write_from_runtime());
            assert!(futures_util::poll!(first.as_mut()).is_pending());
            assert!(slot.claimed.load(Ordering::Acquire));
            let mut waiting = Box::pin(futures_util::future::join_all(
                staged.into_iter().map(NewPrompt::write_from_runtime),
            ));
            assert!(futures_util::poll!(waiting.as_mut()).is_pending());
            // Dropped mid-write: the write goes on, still claimed, and the
            // waiters must be told when it ends, or they wait on.
            drop(first);
            assert!(slot.claimed.load(Ordering::Acquire), "the write goes on");
            drop(held);
            let keys = within_a_minute(waiting).await;
            assert!(keys.iter().all(Result::is_ok), "{keys:?}");
        });
        assert!(slot.written.load(Ordering::Acquire));
        assert!(!slot.claimed.load(Ordering::Acquire));
        assert_eq!(
            slot.writes.load(Ordering::Relaxed),
            1,
            "the waiters wrote nothing"
        );
    }

    /// A prompt file removed after it was written is written again by the
    /// next turn that stages it, even one staged while it was there.
    #[test]
    fn a_prompt_removed_after_its_write_is_written_again_off_thread() {
        let runs = tempfile::tempdir().unwrap();
        let record = record_with_tools("removed");
        let mut staged = staged_by(2, runs.path(), &record);
        let later = staged.pop().unwrap();
        let first = staged.pop().unwrap();
        let runtime = current_thread();
        let key = runtime.block_on(first.write_from_runtime()).unwrap();
        let file = stored_file(runs.path(), &key);
        std::fs::remove_file(&file).unwrap();
        assert_eq!(runtime.block_on(later.write_from_runtime()).unwrap(), key);
        assert!(file.is_file(), "written again by a turn staged before");
        std::fs::remove_file(&file).unwrap();
        let again = match stage_as_a_turn(runs.path(), &record, Durability::Synced) {
            StagedPrompt::New(prompt) => prompt,
            StagedPrompt::Stored(_) => panic!("its file is gone"),
        };
        assert_eq!(runtime.block_on(again.write_from_runtime()).unwrap(), key);
        assert!(file.is_file(), "written again by a turn staged after");
    }

    /// A hang is a failure, not a test that never ends.
    async fn within_a_minute<T>(waiting: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(std::time::Duration::from_secs(60), waiting)
            .await
            .expect("turns were left waiting for a write")
    }

    /// A failed write is no written prompt: each waiting turn tries in turn
    /// and says why it could not, none takes the file for written.
    #[cfg(unix)]
    #[test]
    fn a_failed_write_fails_every_waiting_turn_without_a_hang() {
        for durability in [Durability::Synced, Durability::Unsynced] {
            let runs = tempfile::tempdir().unwrap();
            // `prompts` is a file: no prompt can be written under it.
            std::fs::write(prompts_dir(runs.path()), "not a folder").unwrap();
            let record = record_with_tools("failed write");
            let staged = staged_as(durability, 4, runs.path(), &record);
            let slot = Arc::clone(&staged[0].slot);
            let results =
                current_thread().block_on(within_a_minute(futures_util::future::join_all(
                    staged.into_iter().map(NewPrompt::write_from_runtime),
                )));
            assert!(results.iter().all(Result::is_err), "{results:?}");
            assert!(!slot.written.load(Ordering::Acquire));
            assert!(!slot.claimed.load(Ordering::Acquire));
        }
    }

    /// On a runtime of several threads a write left to the group still
    /// goes to the blocking pool, so that its waiters are woken from
    /// outside the workers (`on_one_thread`): with the pool's only thread
    /// taken, the write has not ended two seconds later, and ends once the
    /// thread is free. (Done on the turn's thread, it ends at once.)
    #[test]
    fn on_a_runtime_of_several_threads_a_write_left_to_the_group_goes_to_the_pool() {
        let runs = tempfile::tempdir().unwrap();
        let prompt = one_left_to_the_group(runs.path(), "several threads");
        let mut two_workers = tokio::runtime::Builder::new_multi_thread();
        two_workers.worker_threads(2);
        let (runtime, release, blocker) = with_the_pool_taken(two_workers);
        let mut writing = runtime.spawn(prompt.write_from_runtime());
        let early = runtime.block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(2), &mut writing).await
        });
        assert!(early.is_err(), "written on a worker: {early:?}");
        release.send(()).unwrap();
        let key = runtime.block_on(within_a_minute(writing)).unwrap().unwrap();
        runtime.block_on(blocker).unwrap();
        assert!(stored_file(runs.path(), &key).is_file());
    }

    /// One turn's new prompt whose file its log's group will sync.
    fn one_left_to_the_group(runs_dir: &Path, label: &str) -> NewPrompt {
        let record = record_with_tools(label);
        let staged = staged_as(Durability::Unsynced, 1, runs_dir, &record);
        staged.into_iter().next().unwrap()
    }

    /// Where the store keeps the prompt named `key` (its own naming rule).
    fn stored_file(runs_dir: &Path, key: &str) -> PathBuf {
        KeyedFiles::flat(prompts_dir(runs_dir)).path(key).unwrap()
    }

    /// A runtime built by `builder` whose blocking pool has one thread,
    /// taken by the task returned until `release` is sent.
    fn with_the_pool_taken(
        mut builder: tokio::runtime::Builder,
    ) -> (
        tokio::runtime::Runtime,
        std::sync::mpsc::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        let runtime = builder
            .max_blocking_threads(1)
            .enable_time()
            .build()
            .unwrap();
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (taken, is_taken) = std::sync::mpsc::channel::<()>();
        let blocker = runtime.spawn_blocking(move || {
            taken.send(()).unwrap();
            held.recv().ok();
        });
        is_taken.recv().unwrap();
        (runtime, release, blocker)
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

    proptest::proptest! {
        /// Whatever was stored before in the process, a prompt's name is
        /// the digest of its own bytes and its file holds them — blocks
        /// that join to the same system text included.
        #[test]
        fn a_known_prompt_is_named_by_its_own_bytes(
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
                let key = store_as_a_turn(runs.path(), &record);
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
        let first = store_as_a_turn(runs.path(), &record(["x\n\ny", "z"]));
        let second = store_as_a_turn(runs.path(), &record(["x", "y\n\nz"]));
        assert_ne!(first, second);
        let path = stored_file(runs.path(), &first);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            store_as_a_turn(runs.path(), &record(["x\n\ny", "z"])),
            first
        );
        assert!(path.is_file(), "stored again");
    }

    /// A prompt a group's turn wrote for its group's sync is not known to
    /// be on disk yet: a turn whose log is synced alone syncs it before
    /// taking it as stored. And a torn file found under its name (what a
    /// power loss before that sync can leave) is replaced, not taken.
    #[test]
    fn a_prompt_left_to_a_group_is_synced_for_a_lone_turn_and_a_torn_one_replaced() {
        let runs = tempfile::tempdir().unwrap();
        let record = record_with_tools("left to the group");
        let stage = |durability| stage_as_a_turn(runs.path(), &record, durability);
        let StagedPrompt::New(prompt) = stage(Durability::Unsynced) else {
            panic!("a new prompt is to be written");
        };
        let key = prompt.write().unwrap();
        assert!(matches!(stage(Durability::Unsynced), StagedPrompt::Stored(k) if k == key));
        let StagedPrompt::New(unsynced) = stage(Durability::Synced) else {
            panic!("a prompt left to a group's sync was taken as synced");
        };
        assert_eq!(unsynced.write().unwrap(), key);
        assert!(matches!(stage(Durability::Synced), StagedPrompt::Stored(k) if k == key));

        let whole = std::fs::read(stored_file(runs.path(), &key)).unwrap();
        for durability in [Durability::Unsynced, Durability::Synced] {
            let other = tempfile::tempdir().unwrap();
            let path = prompts_dir(other.path()).join(format!("{key}.json"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
            let StagedPrompt::New(prompt) = stage_as_a_turn(other.path(), &record, durability)
            else {
                panic!("a prompt this process never wrote is to be written");
            };
            assert_eq!(prompt.write().unwrap(), key);
            assert_eq!(std::fs::read(&path).unwrap(), whole, "{durability:?}");
            let log = other.path().join("default").join("x.ndjson");
            assert_eq!(load_prompt(&log, &key).unwrap().blocks, record.blocks);
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
