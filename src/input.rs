//! Reading files that come from outside (claims, suites, overrides, scripts,
//! histories) with one size cap, so that `/dev/zero`, a FIFO or a runaway
//! file is refused instead of filling memory.
//!
//! The functions return plain `io::Error`s so that every caller keeps its
//! own "failed to read <kind> `<path>`: …" error, which names the file.

use std::io::{self, Read};
use std::path::Path;

/// The largest input file promptlab reads: 256 MiB. Far above any real
/// claim or suite, low enough that reading one can never exhaust memory.
pub const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// Reads a whole file, refusing one over `MAX_INPUT_BYTES`.
pub fn read_input(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "a folder, not a file",
        ));
    }
    if !meta.is_file() {
        return read_limited(file, MAX_INPUT_BYTES);
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
