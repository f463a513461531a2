//! Reading files that come from outside (claims, suites, overrides, scripts,
//! histories, `casesFrom`) with one size cap, so that a runaway file is
//! refused instead of filling memory; and the one rule for what is not a
//! regular file: a FIFO, a device or a socket is refused before it is read
//! (a FIFO's open waits for a writer, `/dev/zero` never ends), unless it
//! is one of this process's own standard streams (`--claim /dev/stdin`).
//!
//! The functions return plain `io::Error`s so that every caller keeps its
//! own "failed to read <kind> `<path>`: …" error, which names the file.

use std::io::{self, Read};
use std::path::Path;

/// The largest input file promptlab reads: 256 MiB. Far above any real
/// claim or suite, low enough that reading one can never exhaust memory.
pub const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// Which of this process's standard streams a special file may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnStream {
    Stdin,
    Stdout,
    Stderr,
}

impl OwnStream {
    /// Whether `meta` is the file behind this stream (the same inode).
    pub fn is(self, meta: &std::fs::Metadata) -> bool {
        use std::os::fd::AsFd;
        use std::os::unix::fs::MetadataExt;
        let ours = match self {
            OwnStream::Stdin => io::stdin().as_fd().try_clone_to_owned(),
            OwnStream::Stdout => io::stdout().as_fd().try_clone_to_owned(),
            OwnStream::Stderr => io::stderr().as_fd().try_clone_to_owned(),
        };
        ours.map(std::fs::File::from)
            .and_then(|file| file.metadata())
            .is_ok_and(|ours| (ours.dev(), ours.ino()) == (meta.dev(), meta.ino()))
    }
}

/// What a file is when it is neither a regular file nor a folder: the
/// reason a reader or a report refuses it (`it is a FIFO, not a regular
/// file`). `None` for a regular file or a folder.
pub fn special_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_file() || kind.is_dir() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// The error for a special file named as an input or an output.
pub fn refused_special(kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {kind}, not a regular file"),
    )
}

/// Reads a whole file, refusing one over `MAX_INPUT_BYTES` and anything
/// that is not a regular file but this process's own stdin.
pub fn read_input(path: &Path) -> io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    // Opened without waiting (a FIFO's open would wait for a writer), then
    // asked what it is: no gap between a check and the open. The flag
    // changes nothing for a regular file's reads.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "a folder, not a file",
        ));
    }
    if let Some(kind) = special_kind(&meta) {
        if OwnStream::Stdin.is(&meta) {
            return read_limited(io::stdin().lock(), MAX_INPUT_BYTES);
        }
        return Err(refused_special(kind));
    }
    // A file that says its size is refused before a byte is read, and read
    // into one buffer of that size (a file may still grow meanwhile: the
    // bound holds on what is read).
    if meta.len() > MAX_INPUT_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "larger than the {} MiB limit for input files ({} bytes)",
                MAX_INPUT_BYTES / (1024 * 1024),
                meta.len()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0) + 1);
    file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large(MAX_INPUT_BYTES));
    }
    Ok(bytes)
}

/// Reads a whole file as UTF-8 text, refusing one over `MAX_INPUT_BYTES`.
pub fn read_input_text(path: &Path) -> io::Result<String> {
    utf8(read_input(path)?)
}

/// Reads a whole stream (stdin, a file) up to `limit` bytes; more is an
/// error. Reading one byte past the limit tells "exactly at the limit" from
/// "over it", also for devices and pipes whose size metadata says nothing.
pub fn read_limited(mut reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    // In chunks, joined at the end: one growing buffer would double past
    // the limit and leave its earlier sizes with the allocator (a stream
    // that never ends took 540 MB to refuse), where chunks stop at it.
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut total: u64 = 0;
    loop {
        let mut chunk = Vec::new();
        let read = (&mut reader).take(READ_CHUNK).read_to_end(&mut chunk)?;
        if read == 0 {
            break;
        }
        total += read as u64;
        if total > limit {
            return Err(too_large(limit));
        }
        chunks.push(chunk);
    }
    Ok(match chunks.len() {
        1 => chunks.pop().unwrap_or_default(),
        _ => chunks.concat(),
    })
}

/// How much of a stream one read takes.
const READ_CHUNK: u64 = 1024 * 1024;

fn too_large(limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "larger than the {} MiB limit for input files",
            limit / (1024 * 1024)
        ),
    )
}

/// Bytes → text, naming the offset of the first invalid byte.
pub fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|error| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                error.utf8_error().valid_up_to()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_over_the_limit_is_refused() {
        assert_eq!(read_limited(&b"x".repeat(11)[..], 11).unwrap().len(), 11);
        let error = read_limited(&b"x".repeat(12)[..], 11).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::FileTooLarge);
    }

    /// Issue 61: `casesFrom` naming a FIFO hung until killed (the open
    /// waited for a writer), and `/dev/zero` was read to the cap.
    #[test]
    fn a_device_or_a_fifo_is_refused_before_a_byte_is_read() {
        let error = read_input(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(error.to_string(), "it is a device, not a regular file");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        // No writer: an open that waited for one would never return.
        let error = read_input(&fifo).unwrap_err();
        assert_eq!(error.to_string(), "it is a FIFO, not a regular file");
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_device_is_bounded() {
        let file = std::fs::File::open("/dev/zero").unwrap();
        assert!(read_limited(file, 4 * 1024 * 1024).is_err());
    }

    #[test]
    fn invalid_utf8_names_its_offset() {
        let error = utf8(vec![b'a', 0xff]).unwrap_err();
        assert!(error.to_string().contains("offset 1"), "{error}");
    }
}
