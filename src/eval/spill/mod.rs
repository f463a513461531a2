//! The eval run's own scratch file of finished turns (its "spill"): each
//! turn's kept result (`TurnResult::kept`) is appended as one JSON line as
//! it finishes, and the end of the run — summary, folds, tags, JUnit,
//! Markdown, the eval run's turn ids — reads them back in matrix order, so
//! that no turn's result stays in memory while a long suite runs. Where
//! each record is goes to a second file beside it (`index.rs`), so that
//! memory does not grow with the turns either: one bit a turn of the matrix.
//!
//! The file is `<runs dir>/.eval-spill.<eval run id>.<pid>-<random>` (the system's
//! temporary folder when the runs folder does not exist, e.g. `--report`
//! into a fresh one): a dot file, not named like a run log, so no scanner
//! takes it for one; it is removed when the run ends, whatever its end (a
//! run killed outright leaves it: the next eval in that folder removes the
//! spills of processes that no longer exist). Its
//! size is bounded by the turns times a kept result's size (the verdict's
//! lines, ≤ 2,001 characters of answer, ids and numbers: ~0.5–10 KB), its
//! index's by 32 bytes a turn (each record's place, then the same sorted).
//!
//! The file is trusted no more than any input: before it is read, its
//! index's entries are checked against their keyed hash as written (in
//! the read that sorts them); then one scan reads them again in write order
//! beside the lines, each line whole, at the offset its entry says, with
//! the keyed digest of its turn and line as written (32 bits, in the
//! entry), and as many lines as were put — a
//! truncated, altered, missing or duplicated record is an error naming the
//! byte (a line that is not the one written is parsed to say why: not a
//! record, a turn outside the matrix, never put, again, or changed), never
//! a wrong verdict. Every record read, in that pass or a later one, is
//! checked against its line's digest again, so a record changed after the
//! first scan is caught when it is read, not taken for the turn's result;
//! an index cut short, or naming a turn twice or out of order, is said to
//! be changed.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use std::hash::{BuildHasher, Hasher, RandomState};

use serde::Deserialize;

mod error;
mod index;
mod record;

pub use error::{Damage, SpillError, SpillProblem};
use index::{Entry, IndexError, Merged, SpillIndex};
use record::{Head, Record, TurnIdOf};

use super::runner::TurnResult;

/// The longest line read back: far past any kept result, short of harm.
const MAX_RECORD_BYTES: u64 = 16 * 1024 * 1024;

/// The finished turns of one eval run, on disk, by matrix index.
pub struct ResultStore {
    path: PathBuf,
    writer: Option<BufWriter<File>>,
    /// Which turns were put, and where each record is.
    index: SpillIndex,
    written: u64,
    count: usize,
    /// The first failure to write: every read then says it.
    broken: Option<SpillProblem>,
    /// Checked by one scan since the last write.
    checked: bool,
    /// Of each line's digest: random for this process, so that no line
    /// can be made to match a digest from outside it.
    keys: RandomState,
    /// The spill's file, locked for as long as the store lives (the writer
    /// goes before the reading passes): what tells another eval in the
    /// folder that this spill is alive — from any PID namespace, where a
    /// pid says nothing (`remove_left_behind`).
    _held: File,
}

impl ResultStore {
    /// A fresh spill for eval run `eval_run` in `runs_dir` (else the
    /// system's temporary folder), with room for `matrix_len` turns.
    pub fn create(
        runs_dir: &Path,
        eval_run: &str,
        matrix_len: usize,
    ) -> Result<ResultStore, SpillError> {
        let id: String = eval_run
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(40)
            .collect();
        // The runs folder, else (none yet, or read-only: a merge of shard
        // folders) the temporary folder.
        let (path, file) = match runs_dir.is_dir() {
            true => create_in(runs_dir, &id).or_else(|_| create_in(&std::env::temp_dir(), &id)),
            false => create_in(&std::env::temp_dir(), &id),
        }?;
        let index = file
            .try_clone()
            .and_then(|held| Ok((SpillIndex::create(&path, matrix_len)?, held)));
        let (index, held) = index.map_err(|error| {
            let _ = std::fs::remove_file(&path);
            SpillError {
                path: path.display().to_string(),
                problem: SpillProblem::Create(error.to_string()),
            }
        })?;
        Ok(ResultStore {
            path,
            writer: Some(BufWriter::with_capacity(64 * 1024, file)),
            index,
            written: 0,
            count: 0,
            broken: None,
            checked: false,
            keys: RandomState::new(),
            _held: held,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Turns put in.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether the turn at this matrix index has a result.
    pub fn contains(&self, index: usize) -> bool {
        self.index.is_put(index)
    }

    /// Appends a finished turn (kept: see `TurnResult::kept`). A failure
    /// (a full disk, a turn outside the matrix or put twice) is kept and
    /// said by every later read: the run cannot end with a verdict.
    pub fn push(&mut self, result: TurnResult) {
        if self.broken.is_some() {
            return;
        }
        if let Err(problem) = self.append(result.kept()) {
            self.broken = Some(problem);
        }
    }

    fn append(&mut self, result: TurnResult) -> Result<(), SpillProblem> {
        let index = result.spec.index;
        if index >= self.index.matrix_len() {
            return Err(SpillProblem::Outside(index));
        }
        if self.index.is_put(index) {
            return Err(SpillProblem::PutTwice(index));
        }
        let write = |error: &dyn std::fmt::Display| SpillProblem::Write(error.to_string());
        let mut line = serde_json::to_vec(&Record::of(result)).map_err(|e| write(&e))?;
        line.push(b'\n');
        let writer = (self.writer.as_mut()).ok_or_else(|| write(&"written after it was read"))?;
        writer.write_all(&line).map_err(|e| write(&e))?;
        let entry = Entry {
            index: index as u32, // below the matrix's length, which fits (`SpillIndex::create`)
            offset: self.written,
            digest: self.line_digest(index, &line),
        };
        self.index.append(entry).map_err(|e| write(&e))?;
        self.written += line.len() as u64;
        self.count += 1;
        self.checked = false;
        Ok(())
    }

    pub(super) fn error(&self, problem: SpillProblem) -> SpillError {
        SpillError {
            path: self.path.display().to_string(),
            problem,
        }
    }

    fn damaged(&self, offset: u64, damage: Damage) -> SpillError {
        self.error(SpillProblem::Damaged { offset, damage })
    }

    fn index_error(&self, error: IndexError) -> SpillError {
        self.error(match error {
            IndexError::Io(error) => SpillProblem::Read(error.to_string()),
            IndexError::Changed => SpillProblem::IndexChanged,
        })
    }

    /// Ends the writing: every record is in the file. (Reading does it.)
    pub fn flush(&mut self) -> Result<(), SpillError> {
        if let Some(problem) = &self.broken {
            return Err(self.error(problem.clone()));
        }
        let flushed = match self.writer.take() {
            Some(mut writer) => writer.flush(),
            None => Ok(()),
        };
        if let Err(error) = flushed.and_then(|()| self.index.flush()) {
            // Said again by every later read, as a failed write is.
            let problem = SpillProblem::Write(error.to_string());
            self.broken = Some(problem.clone());
            return Err(self.error(problem));
        }
        Ok(())
    }

    /// Every result, in matrix order. The first call ends the writing and
    /// checks the whole file once; every pass checks each record it reads.
    pub fn in_matrix_order(&mut self) -> Result<MatrixOrder<'_>, SpillError> {
        self.flush()?;
        if !self.checked {
            let sorted = self.index.check_and_sort();
            sorted.map_err(|error| self.index_error(error))?;
            self.check()?;
            self.checked = true;
        }
        Ok(MatrixOrder {
            store: self,
            reader: BufReader::with_capacity(64 * 1024, self.open()?),
            entries: self.index.merged(),
            at: 0,
            last: None,
            done: false,
        })
    }

    fn open(&self) -> Result<File, SpillError> {
        File::open(&self.path).map_err(|error| self.error(SpillProblem::Read(error.to_string())))
    }

    /// One scan: each line whole and the very bytes written at that offset
    /// (its index entry, read alongside, has both); as many lines as turns
    /// put in; nothing after them. A line that is not is parsed only to say
    /// what is wrong with it.
    fn check(&self) -> Result<(), SpillError> {
        let mut reader = BufReader::with_capacity(64 * 1024, self.open()?);
        let mut entries = self.index.in_write_order();
        let (mut at, mut lines, mut line) = (0u64, 0usize, Vec::new());
        loop {
            line.clear();
            let read = read_line(&mut reader, &mut line).map_err(|e| self.damaged(at, e))?;
            if read == 0 {
                break;
            }
            let entry = entries.next().transpose();
            let entry = entry.map_err(|error| self.index_error(error))?;
            let intact = entry.is_some_and(|e| {
                e.offset == at && e.digest == self.line_digest(e.index as usize, &line)
            });
            if !intact {
                return Err(self.damaged(at, self.what_is_wrong(&line, entry, at)));
            }
            at += read as u64;
            lines += 1;
        }
        if lines != self.count || at != self.written {
            return Err(self.error(SpillProblem::Missing {
                lines,
                bytes: at,
                count: self.count,
                written: self.written,
            }));
        }
        Ok(())
    }

    /// What is wrong with a whole line at byte `at` that is not the one
    /// written there (`written`: the entry at its place in the write order).
    fn what_is_wrong(&self, line: &[u8], written: Option<Entry>, at: u64) -> Damage {
        match parse::<Head>(line) {
            Err(damage) => damage,
            Ok(head) => (self.misplaced(head.index, written, at))
                .unwrap_or(Damage::ChangedSince(head.index)),
        }
    }

    /// What is wrong, if anything, with a line naming turn `index` at byte
    /// `at`, where the record of `written` (the entry at its place in the
    /// write order, if any) was written.
    fn misplaced(&self, index: usize, written: Option<Entry>, at: u64) -> Option<Damage> {
        if index >= self.index.matrix_len() {
            return Some(Damage::Outside(index));
        }
        if !self.index.is_put(index) {
            return Some(Damage::NeverPut(index));
        }
        let first = match written {
            Some(entry) if entry.index as usize == index && entry.offset == at => return None,
            Some(entry) if entry.index as usize == index => entry.offset,
            // Another turn's line, or one after the last: where this turn's was.
            _ => self.index.offset_of(index).unwrap_or(at),
        };
        Some(Damage::Again { index, first })
    }
}

/// A fresh spill file in `dir`, named by the pid and a random tail
/// (`tempfile`'s): a file a killed run left (a container gives its process
/// the same pid each time) is never in the way.
fn create_in(dir: &Path, id: &str) -> Result<(PathBuf, File), SpillError> {
    remove_left_behind(dir);
    let prefix = format!(".eval-spill.{id}.{}-", std::process::id());
    let mut tries = 0;
    loop {
        let created = tempfile::Builder::new().prefix(&prefix).tempfile_in(dir);
        let (file, path) = (created.and_then(|temp| temp.keep().map_err(|kept| kept.error)))
            .map_err(|error| SpillError {
                path: dir.join(format!("{prefix}…")).display().to_string(),
                problem: SpillProblem::Create(error.to_string()),
            })?;
        // Locked at once (waiting out another eval's clean-up that is
        // trying it), then checked to be still the file under the name:
        // one that clean-up removed in between is made again.
        match file.lock().map(|()| still_named(&file, &path)) {
            Ok(false) if tries < 8 => tries += 1,
            // Where locks are not kept (some network file systems), the pid
            // alone tells a live spill, as it did.
            _ => return Ok((path, file)),
        }
    }
}

/// Spills of runs that were killed (their process is gone and nobody holds
/// the file's lock): nobody will read them. A live process's — another
/// eval in the same folder, in this PID namespace or another (a container
/// sharing the folder, whose pids mean nothing here) — stays.
fn remove_left_behind(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(".eval-spill.")) else {
            continue;
        };
        let pid = rest
            .split_once('.')
            .and_then(|(_, tail)| tail.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
            .filter(|pid| *pid > 0);
        // SAFETY: kill with signal 0 sends nothing; it only asks whether
        // the process exists.
        let gone = pid.is_some_and(|pid| {
            let asked = unsafe { libc::kill(pid, 0) };
            asked == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        });
        if gone && entry.file_type().is_ok_and(|kind| kind.is_file()) && !locked(&entry.path()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether a live process holds the lock of the spill at `path` (of its
/// `.index` file: of the spill beside it).
fn locked(path: &Path) -> bool {
    let spill = match path.to_str().and_then(|p| p.strip_suffix(".index")) {
        Some(spill) => PathBuf::from(spill),
        None => path.to_path_buf(),
    };
    // Not blocking, not through a link: a FIFO put in a spill's place
    // would otherwise hold every eval that starts in the folder.
    use std::os::unix::fs::OpenOptionsExt;
    let opened = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&spill);
    match opened {
        Ok(file) if file.metadata().is_ok_and(|meta| meta.is_file()) => {
            matches!(file.try_lock(), Err(std::fs::TryLockError::WouldBlock))
        }
        _ => false,
    }
}

/// Whether `path` still names `file` (not removed, nor replaced, since).
fn still_named(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(ours), Ok(named)) => ours.dev() == named.dev() && ours.ino() == named.ino(),
        _ => false,
    }
}

impl Drop for ResultStore {
    fn drop(&mut self) {
        drop(self.writer.take());
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One whole line (with its `\n`) into `line`; 0 at the end.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> Result<usize, Damage> {
    let read = reader
        .take(MAX_RECORD_BYTES)
        .read_until(b'\n', line)
        .map_err(|error| Damage::Read(error.to_string()))?;
    match line.last() {
        _ if read == 0 => Ok(0),
        Some(b'\n') => Ok(read),
        _ if read as u64 == MAX_RECORD_BYTES => Err(Damage::TooLong),
        _ => Err(Damage::CutShort),
    }
}

impl ResultStore {
    /// Turn `index`'s record line as 32 bits of a keyed hash (std's
    /// `RandomState`, keyed at random for this store): what tells,
    /// on reading it again, that its bytes are the ones written for that
    /// turn (the turn is hashed too: two turns' lines with equal digests
    /// cannot pass for each other).
    fn line_digest(&self, index: usize, line: &[u8]) -> u32 {
        let mut digest = self.keys.build_hasher();
        digest.write_u64(index as u64);
        digest.write(line);
        digest.finish() as u32
    }
}

fn parse<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Result<T, Damage> {
    serde_json::from_slice(line)
        .map_err(|error| Damage::NotARecord(crate::text::quote(&error.to_string())))
}

/// The results of a `ResultStore`, by matrix index.
pub struct MatrixOrder<'a> {
    store: &'a ResultStore,
    reader: BufReader<File>,
    /// The index entries, in matrix order.
    entries: Merged<'a>,
    /// Where the reader is.
    at: u64,
    /// The turn read last: each entry's must be greater.
    last: Option<u32>,
    /// An error, or the end, was met: nothing more is read.
    done: bool,
}

impl MatrixOrder<'_> {
    /// An error about this spill.
    pub fn error(&self, problem: SpillProblem) -> SpillError {
        self.store.error(problem)
    }

    /// The next entry, each a turn put in and after the last. (As many
    /// as were written: the runs' lengths are in memory, and a file cut
    /// short is `IndexChanged`.)
    fn next_entry(&mut self) -> Result<Option<Entry>, SpillError> {
        let store = self.store;
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        let entry = entry.map_err(|error| store.index_error(error))?;
        let in_order = self.last.is_none_or(|last| entry.index > last);
        if !in_order || !store.index.is_put(entry.index as usize) {
            return Err(store.error(SpillProblem::IndexChanged));
        }
        self.last = Some(entry.index);
        Ok(Some(entry))
    }

    fn read(&mut self, entry: Entry) -> Result<TurnResult, SpillError> {
        let mut line = Vec::new();
        self.line_of(entry, &mut line)?;
        let record = self.parse_checked(entry, &line, |record: &Record| record.index)?;
        (record.into_result()).map_err(|damage| self.store.damaged(entry.offset, damage))
    }

    /// `entry`'s line, whole, from the offset its entry says, into `line`.
    fn line_of(&mut self, entry: Entry, line: &mut Vec<u8>) -> Result<(), SpillError> {
        let (store, offset) = (self.store, entry.offset);
        if offset >= store.written {
            // No record starts there: the index was changed.
            return Err(store.error(SpillProblem::IndexChanged));
        }
        let jump = i64::try_from(offset).unwrap_or(i64::MAX) - i64::try_from(self.at).unwrap_or(0);
        self.reader
            .seek_relative(jump)
            .map_err(|error| store.error(SpillProblem::Read(error.to_string())))?;
        line.clear();
        let read = read_line(&mut self.reader, line).map_err(|e| store.damaged(offset, e))?;
        self.at = offset + read as u64;
        if read == 0 {
            return Err(store.damaged(offset, Damage::Ends));
        }
        Ok(())
    }

    /// `line` parsed as a `T`, once it names `entry`'s turn (`index_of`)
    /// and is the very bytes written for it.
    fn parse_checked<'l, T: Deserialize<'l>>(
        &self,
        entry: Entry,
        line: &'l [u8],
        index_of: impl Fn(&T) -> usize,
    ) -> Result<T, SpillError> {
        let (store, index, offset) = (self.store, entry.index as usize, entry.offset);
        let record: T = parse(line).map_err(|damage| store.damaged(offset, damage))?;
        let found = index_of(&record);
        if found != index {
            return Err(store.damaged(offset, Damage::Elsewhere { found, index }));
        }
        // Whole JSON of the right turn, and yet not the bytes written.
        if store.line_digest(index, line) != entry.digest {
            return Err(store.damaged(offset, Damage::ChangedSince(index)));
        }
        Ok(record)
    }

    /// Each turn id, in matrix order, with whether its turn was taken from
    /// a log: what an eval run's history keeps, read with the same checks
    /// as a result (its place, its turn, the bytes written) but without
    /// decoding the rest of each line. For a pass after the one that held
    /// every result to the plan (`eval::totals::gather`, through
    /// `eval::fold::folds`): a line that passes these checks is the line
    /// that pass read. A spill that cannot be read back is an `io::Error`
    /// wrapping its `SpillError`; an error of `each` comes back as it is.
    pub fn turn_ids(
        mut self,
        each: &mut dyn FnMut(&str, bool) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut line = Vec::new();
        while let Some(entry) = self.next_entry().map_err(std::io::Error::other)? {
            self.line_of(entry, &mut line)
                .map_err(std::io::Error::other)?;
            let record = (self.parse_checked(entry, &line, |record: &TurnIdOf| record.index))
                .map_err(std::io::Error::other)?;
            if let Some(id) = &record.turn_id {
                each(id, record.from_log)?;
            }
        }
        Ok(())
    }
}

impl Iterator for MatrixOrder<'_> {
    type Item = Result<TurnResult, SpillError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let read = self
            .next_entry()
            .transpose()?
            .and_then(|entry| self.read(entry));
        // One error ends the pass: nothing after it is trusted.
        self.done = read.is_err();
        Some(read)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::eval::TurnSpec;
    use crate::eval::expect::{Observation, Outcome, Verdict};

    fn result(index: usize) -> TurnResult {
        let spec = TurnSpec {
            index,
            variant: 0,
            claim_id: "CLM-HH-0001".into(),
            case: 0,
            sample: 1,
        };
        let verdict = Verdict::new(Outcome::Pass, Vec::new());
        TurnResult::new(&spec, Observation::default(), verdict)
    }

    /// A record held in the writer's buffer until the end, then a disk
    /// that is full (`/dev/full`): the flush fails, and every later read
    /// says that failure again — not what a read of the short file would
    /// find — and nothing more is put in.
    #[test]
    fn a_failed_flush_is_said_by_every_later_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = ResultStore::create(dir.path(), "ev-0123456789", 2).unwrap();
        let full = File::options().write(true).open("/dev/full").unwrap();
        store.writer = Some(BufWriter::with_capacity(64 * 1024, full));
        store.push(result(0));
        let said = |store: &mut ResultStore| store.in_matrix_order().err().map(|e| e.to_string());
        let first = said(&mut store).expect("a flush to a full disk fails");
        assert!(
            first.contains("could not write to it") && first.contains("No space left"),
            "{first}"
        );
        assert_eq!(said(&mut store).as_deref(), Some(first.as_str()));
        store.push(result(1));
        assert_eq!(store.len(), 1, "nothing is put in after the failure");
        assert_eq!(said(&mut store).as_deref(), Some(first.as_str()));
    }
}
