//! A run log's folder that refuses new names while its file system has room.
//!
//! ext4 without its `large_dir` feature (mkfs's default) indexes a folder
//! in at most two levels: a folder holding one fingerprint's logs starts
//! refusing new names at about 5.5 million of them, at random as their
//! hashes land in full index blocks, and more often as it grows
//! (BENCHMARKS.md, "Per turn at scale"). Creating or renaming a log (or a
//! file beside it: feedback, a re-score) then fails with "No space left on
//! device", which sends whoever reads it to a disk that has room; this
//! names the folder. Only then: other file systems say "no space" on a disk
//! with room for other reasons (btrfs's metadata, XFS's fragmented inodes
//! or project quotas), so the folder is named only on ext4, and only when
//! its index is large.

use std::io;
use std::path::Path;

/// Free space and inodes below which a "no space" error is taken at its
/// word: the disk, not the folder, is full.
const ROOM_BYTES: u64 = 64 << 20;
const ROOM_INODES: u64 = 1024;
/// The size of a folder's own blocks from which it may be the one that is
/// full: ~650,000 of the logs' names; one that refuses them is ~600 MB.
const LARGE_FOLDER_BYTES: u64 = 64 << 20;
/// `statfs`'s `f_type` of ext2, ext3 and ext4.
const EXT4_SUPER_MAGIC: u64 = 0xEF53;

/// `error`, from making the name `made` (a file's path); a "no space" error
/// that is its folder's (above) says so.
pub(crate) fn explain(error: io::Error, made: &Path) -> io::Error {
    if error.kind() != io::ErrorKind::StorageFull {
        return error;
    }
    let folder = made.parent().unwrap_or(Path::new("."));
    with_room(error, folder, room_of(folder))
}

/// `error`, with what `room` says of `folder` when it names it.
fn with_room(error: io::Error, folder: &Path, room: Option<Room>) -> io::Error {
    match room.and_then(|room| room.hint(folder)) {
        Some(hint) => io::Error::new(error.kind(), format!("{error}, {hint}")),
        None => error,
    }
}

/// What the file system of a folder that refused a name has left, and the
/// folder's own size; nothing when either cannot be read.
fn room_of(folder: &Path) -> Option<Room> {
    let stat = rustix::fs::statfs(folder).ok()?;
    let block = u64::try_from(stat.f_frsize).ok()?;
    Some(Room {
        ext4: u64::try_from(stat.f_type).ok() == Some(EXT4_SUPER_MAGIC),
        bytes: stat.f_bavail.saturating_mul(block),
        inodes: stat.f_ffree,
        folder_bytes: std::fs::metadata(folder).ok()?.len(),
    })
}

/// What the file system of a folder that refused a name has left.
#[derive(Debug, Clone, Copy)]
struct Room {
    ext4: bool,
    bytes: u64,
    inodes: u64,
    folder_bytes: u64,
}

impl Room {
    fn hint(&self, folder: &Path) -> Option<String> {
        let has_room = self.bytes >= ROOM_BYTES && self.inodes >= ROOM_INODES;
        if !self.ext4 || !has_room || self.folder_bytes < LARGE_FOLDER_BYTES {
            return None;
        }
        Some(format!(
            "though its file system has {} and {} inodes free: the folder `{}` ({} of names) \
             refuses new names (on ext4 without its large_dir feature a folder fills at a few \
             million); move older logs out of it, or record into another --runs-dir",
            megabytes(self.bytes),
            self.inodes,
            folder.display(),
            megabytes(self.folder_bytes),
        ))
    }
}

/// Bytes for people: MB, or GB from 1 GB.
fn megabytes(bytes: u64) -> String {
    let mb = bytes >> 20;
    if mb >= 1024 {
        format!("{:.1} GB", mb as f64 / 1024.0)
    } else {
        format!("{mb} MB")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A full folder on ext4 with room elsewhere, as measured.
    fn full_ext4() -> Room {
        Room {
            ext4: true,
            bytes: 5 << 30,
            inodes: 8_527_683,
            folder_bytes: 592 << 20,
        }
    }

    fn nospc() -> io::Error {
        io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error())
    }

    #[test]
    fn a_full_ext4_folder_on_a_disk_with_room_is_named() {
        let hint = full_ext4().hint(Path::new("/runs/default"));
        assert_eq!(
            hint.unwrap(),
            "though its file system has 5.0 GB and 8527683 inodes free: the folder \
             `/runs/default` (592 MB of names) refuses new names (on ext4 without its large_dir \
             feature a folder fills at a few million); move older logs out of it, or record \
             into another --runs-dir"
        );
    }

    #[test]
    fn a_full_disk_a_small_folder_or_another_file_system_is_left_to_the_os() {
        let folder = Path::new("/runs/default");
        let named = |room: Room| room.hint(folder).is_some();
        assert!(named(full_ext4()));
        assert!(!named(Room {
            bytes: ROOM_BYTES - 1,
            ..full_ext4()
        }));
        assert!(!named(Room {
            inodes: ROOM_INODES - 1,
            ..full_ext4()
        }));
        assert!(!named(Room {
            folder_bytes: LARGE_FOLDER_BYTES - 1,
            ..full_ext4()
        }));
        assert!(!named(Room {
            ext4: false,
            ..full_ext4()
        }));
        let at_the_edges = Room {
            ext4: true,
            bytes: ROOM_BYTES,
            inodes: ROOM_INODES,
            folder_bytes: LARGE_FOLDER_BYTES,
        };
        assert!(named(at_the_edges));
    }

    #[test]
    fn other_errors_and_an_unreadable_folder_pass_through() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        let passed = explain(denied, Path::new("/a.ndjson"));
        assert_eq!(passed.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(passed.to_string(), "permission denied");
        let passed = explain(nospc(), Path::new("/no/such/folder/a.ndjson"));
        assert_eq!(passed.kind(), io::ErrorKind::StorageFull);
        assert_eq!(passed.to_string(), "No space left on device (os error 28)");
    }

    #[test]
    fn the_os_error_goes_on_with_the_folder_named() {
        let folder = Path::new("/runs/default");
        let said = with_room(nospc(), folder, Some(full_ext4()));
        assert_eq!(said.kind(), io::ErrorKind::StorageFull);
        assert_eq!(
            said.to_string(),
            format!(
                "No space left on device (os error 28), {}",
                full_ext4().hint(folder).unwrap()
            )
        );
        let unread = with_room(nospc(), folder, None);
        assert_eq!(unread.to_string(), "No space left on device (os error 28)");
    }

    #[test]
    fn a_real_folder_is_read_and_judged_by_its_reading() {
        // The real statfs of a real folder, whatever this machine's disk:
        // its reading is sane, and `explain` says what the reading says.
        let folder = std::env::temp_dir();
        let room = room_of(&folder).expect("the temporary folder's file system is read");
        let said = explain(nospc(), &folder.join("a.ndjson")).to_string();
        let expected = match room.hint(&folder) {
            Some(hint) => format!("No space left on device (os error 28), {hint}"),
            None => "No space left on device (os error 28)".to_string(),
        };
        assert_eq!(said, expected);
    }

    proptest! {
        #[test]
        fn never_panics(
            ext4: bool, bytes: u64, inodes: u64, folder_bytes: u64, folder in ".{0,40}",
        ) {
            let room = Room { ext4, bytes, inodes, folder_bytes };
            let _ = room.hint(Path::new(&folder));
        }
    }
}
