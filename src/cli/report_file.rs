//! A report file (`--junit`, `--markdown-summary`, `report -o`, `compare
//! -o`) written whole or not at all, as the path means it: a regular file
//! (or a new one) is written beside itself and renamed over — through a
//! symbolic link, onto the file it names, never replacing the link, and
//! with the old file's permissions; this process's own stdout or stderr
//! (`/dev/stdout`, whatever the shell made it: a pipe, a terminal, a file)
//! is written into through its handle; a FIFO, a device, a socket, anything
//! else under `/dev` or `/proc`, or a folder is refused by the check
//! before any work (`resolve`), since a FIFO nobody reads would hang the
//! end of a run and a device is no report file (issue 61).

use std::io::Write;
use std::path::{Path, PathBuf};

use promptlab::input::{OwnStream, special_kind};
use promptlab::whole_file::{Durability, Staged, folder_of};

/// How many links are followed to a missing file before giving up, as the
/// kernel's own limit for a path.
const MAX_LINKS: usize = 40;

/// Where a report goes: the one rule the write and the check before a
/// run (`eval::preflight::writable`) share.
#[derive(Debug, PartialEq)]
pub enum Target {
    /// A regular file, new or not, at this real path: replaced whole.
    Replace(PathBuf),
    /// This process's own stdout or stderr, written into as it comes.
    Own(OwnStream),
}

/// What writing a report to `path` means, or why it cannot be written.
pub fn resolve(path: &Path) -> Result<Target, String> {
    let meta = std::fs::metadata(path);
    if let Ok(meta) = &meta {
        for stream in [OwnStream::Stdout, OwnStream::Stderr] {
            if stream.is(meta) {
                return Ok(Target::Own(stream));
            }
        }
    }
    let not_a_file = |what: &str| {
        format!(
            "it is {what}, not a regular file (a report goes to a file, or to /dev/stdout or /dev/stderr)"
        )
    };
    if let Some(kind) = meta.as_ref().ok().and_then(special_kind) {
        return Err(not_a_file(kind));
    }
    if in_system_folder(path) {
        return Err(not_a_file("under /dev or /proc"));
    }
    match meta {
        Ok(meta) if meta.is_dir() => Err("it is a folder".to_string()),
        Ok(meta) if meta.is_file() => {
            let file = std::fs::canonicalize(path).map_err(|error| error.to_string())?;
            match in_system_folder(&file) {
                true => Err(not_a_file("under /dev or /proc")),
                false => Ok(Target::Replace(file)),
            }
        }
        Ok(_) => Err(not_a_file("not a file")),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let file = link_target(path)?;
            match in_system_folder(&file) {
                true => Err(not_a_file("under /dev or /proc")),
                false => Ok(Target::Replace(file)),
            }
        }
        Err(error) => Err(error.to_string()),
    }
}

/// Writes `contents` whole to what `path` names.
pub fn write_whole(path: &Path, contents: &str) -> Result<(), String> {
    write_whole_with(path, |out| {
        out.write_all(contents.as_bytes())
            .map_err(|error| error.to_string())
    })
}

/// `write_whole`, the contents written by `write` as they come.
pub fn write_whole_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Result<(), String> {
    match resolve(path)? {
        Target::Replace(file) => write_beside(&file, write),
        Target::Own(stream) => into_own(stream, write),
    }
}

/// Under `/dev` or `/proc`, as given or made absolute: streams and the
/// kernel's views of them, never a file to rename over.
fn in_system_folder(path: &Path) -> bool {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    absolute.starts_with("/dev") || absolute.starts_with("/proc")
}

/// Whether two paths name the same file: the same inode where both exist,
/// else the same absolute path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => match (std::path::absolute(a), std::path::absolute(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
    }
}

/// The file a path names that does not exist yet: the path itself, or,
/// where it is a link to a missing file, the end of its chain of links.
fn link_target(path: &Path) -> Result<PathBuf, String> {
    let mut target = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let Ok(link) = std::fs::read_link(&target) else {
            return Ok(target);
        };
        target = match target.parent() {
            Some(folder) if link.is_relative() => folder.join(link),
            _ => link,
        };
    }
    Err(format!("more than {MAX_LINKS} symbolic links"))
}

/// Written into a temporary beside `file`, then renamed over it. Not
/// synced: a report is made again by running the command again.
fn write_beside(
    file: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Result<(), String> {
    stage(file, write)?
        .replace(file, Durability::Unsynced)
        .map_err(|error| error.to_string())
}

/// `file`'s next contents, written by `write` into a temporary beside it
/// (`whole_file`), with the old file's permissions where there is one: a
/// private report stays private. Removed unless it is put in place.
pub fn stage(
    file: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Result<Staged, String> {
    let staged = Staged::write_in(folder_of(file), |out| {
        write(out).map_err(std::io::Error::other)
    });
    let staged = staged.map_err(|error| error.to_string())?;
    if let Ok(meta) = std::fs::metadata(file) {
        staged
            .set_permissions(meta.permissions())
            .map_err(|error| error.to_string())?;
    }
    Ok(staged)
}

/// Written into this process's own stdout or stderr through its handle,
/// so that the report and what eval prints after it keep their order
/// instead of one overwriting the other from offset 0. A reader that stops
/// reading can hold this write: a signal then ends the process
/// (`signals::output_only`).
fn into_own(
    stream: OwnStream,
    write: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Result<(), String> {
    let _only_output = super::signals::output_only();
    let flushed = match stream {
        OwnStream::Stderr => {
            let mut out = std::io::stderr().lock();
            write(&mut out)?;
            out.flush()
        }
        _ => {
            let mut out = std::io::stdout().lock();
            write(&mut out)?;
            out.flush()
        }
    };
    flushed.map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn a_link_is_written_through_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        let target = dir.path().join("real/junit.xml");
        std::fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.xml");
        std::os::unix::fs::symlink("real/junit.xml", &link).unwrap();
        write_whole(&link, "new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        // A link to a file not there yet makes that file.
        let dangling = dir.path().join("dangling.xml");
        std::os::unix::fs::symlink("real/later.xml", &dangling).unwrap();
        write_whole(&dangling, "later").unwrap();
        assert!(
            std::fs::symlink_metadata(&dangling)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let later = std::fs::read_to_string(dir.path().join("real/later.xml")).unwrap();
        assert_eq!(later, "later");
        assert_eq!(
            std::fs::read_dir(dir.path().join("real")).unwrap().count(),
            2
        );
    }

    /// Issue 61: a report into a FIFO nobody reads hung the end of a run.
    /// A device, a FIFO, anything else under /dev — through a link or not —
    /// and a folder are refused by the check, never opened.
    #[test]
    fn a_device_a_fifo_or_a_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (null, full) = (dir.path().join("null"), dir.path().join("full"));
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        std::os::unix::fs::symlink("/dev/full", &full).unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let refused = |what: &str| {
            format!(
                "it is {what}, not a regular file (a report goes to a file, or to /dev/stdout or /dev/stderr)"
            )
        };
        for (path, what) in [
            (null.as_path(), "a device"),
            (full.as_path(), "a device"),
            (Path::new("/dev/full"), "a device"),
            (Path::new("/proc/self/status"), "under /dev or /proc"),
            (fifo.as_path(), "a FIFO"),
        ] {
            // No reader: a write that opened the FIFO would never return.
            assert_eq!(
                write_whole(path, "x").unwrap_err(),
                refused(what),
                "{path:?}"
            );
        }
        for link in [&null, &full] {
            assert!(
                std::fs::symlink_metadata(link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
        }
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(write_whole(dir.path(), "x").unwrap_err(), "it is a folder");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn the_same_file_by_another_name_is_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("suite.yaml");
        std::fs::write(&file, "x").unwrap();
        let link = dir.path().join("link.yaml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(same_file(&file, &link));
        assert!(same_file(
            &dir.path().join("new.xml"),
            &dir.path().join("./new.xml")
        ));
        assert!(!same_file(&file, &dir.path().join("new.xml")));
    }
}
