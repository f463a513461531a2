//! Where each record of the spill is, kept on disk beside it, so that a
//! run's memory does not grow with its turns: one bit a turn of the matrix
//! (put or not) stays in memory, and each record's place — its turn, its
//! byte offset, the digest of its line — is a 16-byte entry appended to
//! `<spill>.index` in the order the records were written.
//!
//! Reading in matrix order needs the entries by turn: once the writing
//! ends, they are sorted in chunks of `CHUNK` (16,384 entries, about
//! 512 KiB in memory at a time), each chunk appended to the same file as a
//! sorted run, and every pass merges the runs (an external sort: a
//! 1,000,000-turn suite has 62 runs, 4 KiB of buffer each). The entries
//! must hash to what was written (std's hasher, keyed at random for this process)
//! as they are sorted, else the runs are not used; a pass that meets
//! entries out of order, for a turn never put, or a run cut short says the
//! index was changed. A changed offset or digest in a run is caught by the
//! line it names: its digest is keyed too (`ResultStore`), so no edit of
//! both files makes a line read back as another.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::hash::{BuildHasher, DefaultHasher, Hasher, RandomState};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One record's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry {
    /// Its turn's matrix index.
    pub(super) index: u32,
    /// Where its line starts in the spill.
    pub(super) offset: u64,
    /// Of its line as written (`line_digest`).
    pub(super) digest: u32,
}

const ENTRY_BYTES: usize = 16;
/// Entries sorted in memory at a time: 256 KiB read, the same decoded
/// (about 512 KiB at the end of a run, however long).
const CHUNK: usize = 16_384;
/// Entries a run's reader holds at a time: 4 KiB.
const READ_ENTRIES: usize = 256;

impl Entry {
    fn to_bytes(self) -> [u8; ENTRY_BYTES] {
        let mut bytes = [0; ENTRY_BYTES];
        bytes[..4].copy_from_slice(&self.index.to_le_bytes());
        bytes[4..12].copy_from_slice(&self.offset.to_le_bytes());
        bytes[12..].copy_from_slice(&self.digest.to_le_bytes());
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Entry {
        // Always 16 bytes: `chunks(ENTRY_BYTES)` of whole entries.
        let mut index = [0; 4];
        let mut offset = [0; 8];
        let mut digest = [0; 4];
        index.copy_from_slice(&bytes[..4]);
        offset.copy_from_slice(&bytes[4..12]);
        digest.copy_from_slice(&bytes[12..ENTRY_BYTES]);
        Entry {
            index: u32::from_le_bytes(index),
            offset: u64::from_le_bytes(offset),
            digest: u32::from_le_bytes(digest),
        }
    }
}

/// The index is not what was written: said as `SpillProblem::IndexChanged`.
#[derive(Debug)]
pub(super) enum IndexError {
    Io(io::Error),
    Changed,
}

impl From<io::Error> for IndexError {
    fn from(error: io::Error) -> IndexError {
        IndexError::Io(error)
    }
}

/// The spill's index: which turns were put (in memory), where each record
/// is (on disk).
pub(super) struct SpillIndex {
    path: PathBuf,
    /// Read back by position; `writer` appends through a clone of it.
    file: File,
    writer: Option<BufWriter<File>>,
    /// A bit a turn of the matrix: put or not.
    put: Vec<u64>,
    matrix_len: usize,
    /// Entries appended, in the order their records were written.
    entries: u64,
    /// Of each entry appended: keyed, so that no entry can be made to
    /// match it from outside the process.
    keys: RandomState,
    digest: DefaultHasher,
    /// Each sorted run's first entry and length, once sorted.
    runs: Vec<(u64, u64)>,
}

impl SpillIndex {
    /// A fresh index beside the spill at `spill`, for `matrix_len` turns.
    pub(super) fn create(spill: &Path, matrix_len: usize) -> io::Result<SpillIndex> {
        if u32::try_from(matrix_len).is_err() {
            return Err(io::Error::other(format!(
                "a matrix of {matrix_len} turns is more than a spill indexes"
            )));
        }
        let mut name = spill.as_os_str().to_owned();
        name.push(".index");
        let path = PathBuf::from(name);
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let writer = BufWriter::with_capacity(16 * 1024, file.try_clone()?);
        let keys = RandomState::new();
        Ok(SpillIndex {
            path,
            file,
            writer: Some(writer),
            put: vec![0; matrix_len.div_ceil(64)],
            matrix_len,
            entries: 0,
            digest: keys.build_hasher(),
            keys,
            runs: Vec::new(),
        })
    }

    pub(super) fn matrix_len(&self) -> usize {
        self.matrix_len
    }

    /// Whether the turn at `index` was put (false outside the matrix).
    pub(super) fn is_put(&self, index: usize) -> bool {
        index < self.matrix_len && self.put[index / 64] & (1 << (index % 64)) != 0
    }

    /// Appends the place of a record just written; `entry.index` is in the
    /// matrix and not yet put (the caller checks both).
    pub(super) fn append(&mut self, entry: Entry) -> io::Result<()> {
        let writer =
            (self.writer.as_mut()).ok_or_else(|| io::Error::other("written after read"))?;
        let bytes = entry.to_bytes();
        writer.write_all(&bytes)?;
        self.digest.write(&bytes);
        self.entries += 1;
        let index = entry.index as usize;
        self.put[index / 64] |= 1 << (index % 64);
        Ok(())
    }

    /// Ends the writing: every entry is in the file.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        match self.writer.take() {
            Some(mut writer) => writer.flush(),
            None => Ok(()),
        }
    }

    /// Sorts the entries into runs, reading them once: they must hash to
    /// what was written, else the runs are not used. After it,
    /// `in_write_order` and `merged` may be read.
    pub(super) fn check_and_sort(&mut self) -> Result<(), IndexError> {
        self.flush()?;
        let mut digest = self.keys.build_hasher();
        let (mut runs, mut next) = (Vec::new(), self.entries);
        for bytes in self.chunks(0, self.entries) {
            let mut bytes = bytes?;
            // One `write` an entry, as `append` hashed them: std does not
            // promise that writes may be split or joined.
            let mut chunk: Vec<Entry> = (bytes.chunks(ENTRY_BYTES))
                .inspect(|entry| digest.write(entry))
                .map(Entry::from_bytes)
                .collect();
            chunk.sort_unstable_by_key(|entry| entry.index);
            bytes.clear();
            chunk
                .iter()
                .for_each(|entry| bytes.extend(entry.to_bytes()));
            self.file.write_all_at(&bytes, next * ENTRY_BYTES as u64)?;
            runs.push((next, chunk.len() as u64));
            next += chunk.len() as u64;
        }
        if next != 2 * self.entries || digest.finish() != self.digest.finish() {
            return Err(IndexError::Changed);
        }
        self.runs = runs;
        Ok(())
    }

    /// The bytes of `count` entries from entry `first`, at most `CHUNK` at
    /// a time; the last is short, and the chunks end, where the file does.
    fn chunks(&self, first: u64, count: u64) -> impl Iterator<Item = io::Result<Vec<u8>>> + '_ {
        let (mut at, end) = (first, first + count);
        std::iter::from_fn(move || {
            let take = end.saturating_sub(at).min(CHUNK as u64) as usize;
            if take == 0 {
                return None;
            }
            let mut bytes = vec![0; take * ENTRY_BYTES];
            let read = match read_at_most(&self.file, &mut bytes, at * ENTRY_BYTES as u64) {
                Ok(read) => read,
                Err(error) => return Some(Err(error)),
            };
            at = if read < bytes.len() {
                end
            } else {
                at + take as u64
            };
            bytes.truncate(read - read % ENTRY_BYTES);
            Some(Ok(bytes))
        })
    }

    /// The entries in the order their records were written.
    pub(super) fn in_write_order(&self) -> impl Iterator<Item = Result<Entry, IndexError>> + '_ {
        let mut run = RunReader::new(0, self.entries);
        std::iter::from_fn(move || run.next(&self.file).transpose())
    }

    /// Where turn `index` was written, looked for entry by entry: only to
    /// say what is wrong with a line.
    pub(super) fn offset_of(&self, index: usize) -> Option<u64> {
        self.in_write_order()
            .map_while(Result::ok)
            .find(|entry| entry.index as usize == index)
            .map(|entry| entry.offset)
    }

    /// The entries in matrix order: the sorted runs merged.
    pub(super) fn merged(&self) -> Merged<'_> {
        Merged {
            file: &self.file,
            runs: (self.runs.iter())
                .map(|(first, len)| RunReader::new(*first, *len))
                .collect(),
            heads: BinaryHeap::new(),
            started: false,
            failed: false,
        }
    }
}

impl Drop for SpillIndex {
    fn drop(&mut self) {
        drop(self.writer.take());
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads as much as the file has at `offset`, up to `bytes.len()`.
fn read_at_most(file: &File, bytes: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut read = 0;
    while read < bytes.len() {
        match file.read_at(&mut bytes[read..], offset + read as u64) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(read)
}

/// One sorted run (or the entries in write order), read 4 KiB at a time.
struct RunReader {
    next: u64,
    end: u64,
    bytes: Vec<u8>,
    buffer: Vec<Entry>,
    at: usize,
}

impl RunReader {
    fn new(first: u64, len: u64) -> RunReader {
        RunReader {
            next: first,
            end: first + len,
            bytes: Vec::new(),
            buffer: Vec::new(),
            at: 0,
        }
    }

    /// The next entry; a file that ends before the run does was changed.
    fn next(&mut self, file: &File) -> Result<Option<Entry>, IndexError> {
        if self.at == self.buffer.len() {
            let take = (self.end - self.next).min(READ_ENTRIES as u64);
            if take == 0 {
                return Ok(None);
            }
            self.bytes.resize(take as usize * ENTRY_BYTES, 0);
            let read = read_at_most(file, &mut self.bytes, self.next * ENTRY_BYTES as u64)?;
            if read < self.bytes.len() {
                return Err(IndexError::Changed);
            }
            self.buffer.clear();
            (self.buffer).extend(self.bytes.chunks(ENTRY_BYTES).map(Entry::from_bytes));
            self.next += take;
            self.at = 0;
        }
        self.at += 1;
        Ok(Some(self.buffer[self.at - 1]))
    }
}

/// The sorted runs merged: entries in matrix order.
pub(super) struct Merged<'a> {
    file: &'a File,
    runs: Vec<RunReader>,
    /// Each run's next entry, smallest turn first.
    heads: BinaryHeap<Reverse<(u32, usize, u64, u32)>>,
    started: bool,
    /// An error was met: the rest of the merge is not trusted.
    failed: bool,
}

impl Merged<'_> {
    fn refill(&mut self, run: usize) -> Result<(), IndexError> {
        if let Some(entry) = self.runs[run].next(self.file)? {
            let head = (entry.index, run, entry.offset, entry.digest);
            self.heads.push(Reverse(head));
        }
        Ok(())
    }
}

impl Iterator for Merged<'_> {
    type Item = Result<Entry, IndexError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if !self.started {
            self.started = true;
            for run in 0..self.runs.len() {
                if let Err(error) = self.refill(run) {
                    self.failed = true;
                    return Some(Err(error));
                }
            }
        }
        let Reverse((index, run, offset, digest)) = self.heads.pop()?;
        if let Err(error) = self.refill(run) {
            self.failed = true;
            return Some(Err(error));
        }
        Some(Ok(Entry {
            index,
            offset,
            digest,
        }))
    }
}
