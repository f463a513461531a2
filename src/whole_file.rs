//! The one way a file is put in its place whole: its bytes go into a
//! temporary beside it (`tempfile`'s `NamedTempFile`: a fresh name, created
//! exclusively so that a planted link is never followed, removed if
//! anything fails), are synced when the caller needs them to outlive a
//! power loss, and the temporary then takes the place — renamed over
//! whatever is there (`replace`), or only where nothing is (`create`). A
//! reader sees the old file or the new one, never half of one.
//!
//! Each caller chooses its durability: what cannot be made again (a cache
//! entry, a stored prompt, an eval run's summary, a saved override file) is
//! `Synced`; a report or a re-score that a command can write again is not.

use std::fs::Permissions;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Whether a file's bytes reach the disk before it takes its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Synced first: after a power loss the place holds the old file or
    /// the new one, whole.
    Synced,
    /// Left to the page cache: after a power loss the place may hold a
    /// torn file.
    Unsynced,
}

/// A file's next contents, written into a temporary beside its place.
pub struct Staged(tempfile::NamedTempFile);

impl Staged {
    /// `write`'s bytes in a new temporary in `dir`, which must exist.
    /// Created as `File::create` creates a file (0666 less the umask), not
    /// private as temporaries usually are: it becomes the file itself.
    pub fn write_in(
        dir: &Path,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<Staged> {
        let temp = tempfile::Builder::new()
            .prefix(".promptlab-")
            .suffix(".tmp")
            .permissions(ordinary_permissions())
            .tempfile_in(dir)?;
        let mut out = BufWriter::new(temp);
        write(&mut out)?;
        let temp = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        Ok(Staged(temp))
    }

    /// Gives the file `permissions` (those of the file it replaces).
    pub fn set_permissions(&self, permissions: Permissions) -> io::Result<()> {
        self.0.as_file().set_permissions(permissions)
    }

    /// Renamed over `path`, whatever is there: a link there is replaced,
    /// never written through.
    pub fn replace(self, path: &Path, durability: Durability) -> io::Result<()> {
        self.synced(durability)?;
        self.0.persist(path).map(drop).map_err(|error| error.error)
    }

    /// Put at `path` only where nothing is: `AlreadyExists` if something
    /// is, a link included (no check-then-write race).
    pub fn create(self, path: &Path, durability: Durability) -> io::Result<()> {
        self.synced(durability)?;
        self.0
            .persist_noclobber(path)
            .map(drop)
            .map_err(|error| error.error)
    }

    fn synced(&self, durability: Durability) -> io::Result<()> {
        match durability {
            Durability::Synced => self.0.as_file().sync_all(),
            Durability::Unsynced => Ok(()),
        }
    }
}

/// `path` replaced whole by `write`'s bytes (its folder must exist).
pub fn replace(
    path: &Path,
    durability: Durability,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    Staged::write_in(folder_of(path), write)?.replace(path, durability)
}

/// A new file `name` in `dir`, written whole and synced, never replacing
/// anything (`create`): for records kept one file each (labels,
/// calibrations). `dir` is made if missing; a link or a file in its place
/// is refused, never written through.
pub fn create_record(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<std::path::PathBuf> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    if !std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.is_dir()) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{}` is not a folder of ours (a link or a file): records are never written through one",
                dir.display()
            ),
        ));
    }
    let path = dir.join(name);
    Staged::write_in(dir, |out| out.write_all(bytes))?.create(&path, Durability::Synced)?;
    Ok(path)
}

/// The folder a file named by `path` is in (`.` for a bare name).
pub fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// What `File::create` asks for; the umask takes its share.
fn ordinary_permissions() -> Permissions {
    use std::os::unix::fs::PermissionsExt;
    Permissions::from_mode(0o666)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_replaced_whole_and_a_link_in_its_place_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (target, link) = (dir.path().join("target"), dir.path().join("link"));
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for durability in [Durability::Synced, Durability::Unsynced] {
            replace(&link, durability, |out| out.write_all(b"new")).unwrap();
            assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
            assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        }
        assert_eq!(
            names_in(dir.path()),
            ["link", "target"],
            "no temporary left"
        );
    }

    #[test]
    fn a_failed_write_leaves_the_place_as_it_was_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        std::fs::write(&path, "old").unwrap();
        let failed = replace(&path, Durability::Synced, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("the writer failed"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "the writer failed");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(names_in(dir.path()), ["file"]);
    }

    #[test]
    fn create_takes_only_an_empty_place_and_files_get_the_ordinary_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new");
        let staged = |text: &'static str| {
            Staged::write_in(dir.path(), move |out| out.write_all(text.as_bytes())).unwrap()
        };
        staged("first").create(&path, Durability::Synced).unwrap();
        let refused = staged("second").create(&path, Durability::Synced);
        assert_eq!(refused.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        // As `File::create` makes one: not the 0600 of a private temporary.
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "").unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode(&path), mode(&plain));
        assert_eq!(names_in(dir.path()), ["new", "plain"]);
    }
}
