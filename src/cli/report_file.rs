//! A report file (`--junit`, `--markdown-summary`, `report -o`, `compare
//! -o`) written whole or not at all, as the path means it: a regular file
//! (or a new one) is written beside itself and renamed over — through a
//! symbolic link, onto the file it names, never replacing the link, and
//! with the old file's permissions; a FIFO, a terminal, a device, or
//! anything under `/dev` or `/proc` (`/dev/stdout` leads through
//! `/proc/self/fd/1` to whatever the shell made stdout, perhaps a file) is
//! written into as a stream, never replaced; a folder is refused.

use std::io::Write;
use std::path::{Path, PathBuf};

/// How many links are followed to a missing file before giving up, as the
/// kernel's own limit for a path.
const MAX_LINKS: usize = 40;

/// Where a report goes: the one rule the write and the check before a
/// run (`eval::preflight::writable`) share.
#[derive(Debug, PartialEq)]
pub enum Target {
    /// A regular file, new or not, at this real path: replaced whole.
    Replace(PathBuf),
    /// Written into as it comes.
    Stream(PathBuf),
}

/// What writing a report to `path` means.
pub fn resolve(path: &Path) -> Result<Target, String> {
    if in_system_folder(path) {
        return Ok(Target::Stream(path.to_path_buf()));
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err("it is a folder".to_string()),
        Ok(meta) if meta.is_file() => {
            let file = std::fs::canonicalize(path).map_err(|error| error.to_string())?;
            Ok(match in_system_folder(&file) {
                true => Target::Stream(path.to_path_buf()),
                false => Target::Replace(file),
            })
        }
        // A stream: its reader takes the bytes as they come, and a rename
        // would put a plain file where the device or FIFO was.
        Ok(_) => Ok(Target::Stream(path.to_path_buf())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let file = link_target(path)?;
            Ok(match in_system_folder(&file) {
                true => Target::Stream(path.to_path_buf()),
                false => Target::Replace(file),
            })
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
        Target::Stream(stream) => into_stream(&stream, write),
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

/// Written into a temporary beside `file`, then renamed over it; the
/// temporary is removed when anything fails.
fn write_beside(
    file: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Result<(), String> {
    let temporary = stage(file, write)?;
    std::fs::rename(&temporary, file).map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        error.to_string()
    })
}

/// `file`'s next contents, written by `write` into a new temporary beside
/// it (a name no other process has taken), with the old file's permissions
/// where there is one: a private report stays private. The temporary's
/// path, for the caller to rename over `file`; removed when anything fails.
pub fn stage(
    file: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = file
        .file_name()
        .map_or("report".into(), |n| n.to_string_lossy());
    let (temporary, created) =
        promptlab::keyed_files::create_fresh(dir, |tail| format!(".{name}.tmp-{tail:08x}"));
    let kept = std::fs::metadata(file).map(|meta| meta.permissions());
    let created = created.and_then(|new| match kept {
        Ok(permissions) => new.set_permissions(permissions).map(|()| new),
        Err(_) => Ok(new),
    });
    let written = created.map_err(|error| error.to_string()).and_then(|file| {
        let mut out = std::io::BufWriter::new(file);
        write(&mut out)?;
        out.flush().map_err(|error| error.to_string())
    });
    match written {
        Ok(()) => Ok(temporary),
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            Err(error)
        }
    }
}

/// Written into an existing stream as it comes. The process's own stdout
/// (`/dev/stdout`, or the file or pipe it is) is written through its
/// handle, so that the report and what eval prints after it keep their
/// order instead of one overwriting the other from offset 0.
fn into_stream(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Result<(), String> {
    if is_own_stdout(path) {
        let mut out = std::io::stdout().lock();
        write(&mut out)?;
        return out.flush().map_err(|error| error.to_string());
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|error| error.to_string())?;
    let mut out = std::io::BufWriter::new(file);
    write(&mut out)?;
    out.flush().map_err(|error| error.to_string())
}

/// Whether `path` is what this process's stdout is (the same inode).
fn is_own_stdout(path: &Path) -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let Ok(ours) = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
    else {
        return false;
    };
    std::fs::metadata(path).is_ok_and(|meta| (meta.dev(), meta.ino()) == (ours.dev(), ours.ino()))
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

    #[test]
    fn a_device_is_written_into_and_a_folder_refused() {
        // Through links of its own in a temporary folder; a link's target
        // under /dev is never renamed over whatever the type check says.
        let dir = tempfile::tempdir().unwrap();
        let (null, full) = (dir.path().join("null"), dir.path().join("full"));
        std::os::unix::fs::symlink("/dev/null", &null).unwrap();
        std::os::unix::fs::symlink("/dev/full", &full).unwrap();
        write_whole(&null, "gone").unwrap();
        let error = write_whole(&full, "x").unwrap_err();
        assert!(error.contains("No space left on device"), "{error}");
        for link in [&null, &full] {
            assert!(
                std::fs::symlink_metadata(link)
                    .unwrap()
                    .file_type()
                    .is_symlink()
            );
            assert!(
                std::fs::metadata(link)
                    .unwrap()
                    .file_type()
                    .is_char_device()
            );
        }
        assert_eq!(write_whole(dir.path(), "x").unwrap_err(), "it is a folder");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_fifo_is_written_into_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_whole(&fifo, "through the pipe").unwrap();
        // Before the join: a FIFO replaced by a file leaves its reader waiting.
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(reader.join().unwrap(), "through the pipe");
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
