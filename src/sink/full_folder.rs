//! A log's folder that takes no more names while its file system has room.
//!
//! ext4 without its `large_dir` feature (mkfs's default) indexes a folder
//! in at most two levels: a folder holding one fingerprint's logs starts
//! refusing new names at about 5.5 million of them, at random as their
//! hashes land in full index blocks, and more often as it grows
//! (BENCHMARKS.md, "Per turn at scale"). Creating or renaming a log then
//! fails with "No space left on device", which sends whoever reads it to a
//! disk that has room; this names the folder that is full.

use std::io;
use std::path::Path;

/// Free space and inodes below which a "no space" error is taken at its
/// word: the disk, not the folder, is full.
const ROOM_BYTES: u64 = 64 << 20;
const ROOM_INODES: u64 = 1024;

/// `error`, for a name made in `folder`; a "no space" error whose file
/// system has room says that the folder is what is full.
pub(super) fn explain(error: io::Error, folder: &Path) -> io::Error {
    if error.kind() != io::ErrorKind::StorageFull {
        return error;
    }
    let Ok(stat) = rustix::fs::statvfs(folder) else {
        return error;
    };
    let room = Room {
        bytes: stat.f_bavail.saturating_mul(stat.f_frsize),
        inodes: stat.f_favail,
        // A file system with no inode table (btrfs) counts none.
        counts_inodes: stat.f_files > 0,
    };
    match room.hint(folder) {
        Some(hint) => io::Error::new(error.kind(), format!("{error}, {hint}")),
        None => error,
    }
}

/// What the file system of a folder that refused a name has left.
struct Room {
    bytes: u64,
    inodes: u64,
    counts_inodes: bool,
}

impl Room {
    fn hint(&self, folder: &Path) -> Option<String> {
        let inodes_left = !self.counts_inodes || self.inodes >= ROOM_INODES;
        if self.bytes < ROOM_BYTES || !inodes_left {
            return None;
        }
        let inodes = if self.counts_inodes {
            format!(" and {} inodes", self.inodes)
        } else {
            String::new()
        };
        Some(format!(
            "though its file system has {}{inodes} free: the folder `{}` takes no more names \
             (on ext4 without its large_dir feature a folder fills at a few million); \
             move older logs out of it, or record into another --runs-dir",
            megabytes(self.bytes),
            folder.display(),
        ))
    }
}

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

    fn room(bytes: u64, inodes: u64) -> Room {
        Room {
            bytes,
            inodes,
            counts_inodes: true,
        }
    }

    #[test]
    fn a_folder_full_on_a_disk_with_room_is_named() {
        let hint = room(5 << 30, 8_527_683).hint(Path::new("/runs/default"));
        assert_eq!(
            hint.unwrap(),
            "though its file system has 5.0 GB and 8527683 inodes free: the folder \
             `/runs/default` takes no more names (on ext4 without its large_dir feature a \
             folder fills at a few million); move older logs out of it, or record into \
             another --runs-dir"
        );
    }

    #[test]
    fn a_full_disk_is_left_to_say_so() {
        let folder = Path::new("/runs/default");
        assert!(room(ROOM_BYTES - 1, 1 << 20).hint(folder).is_none());
        assert!(room(1 << 40, ROOM_INODES - 1).hint(folder).is_none());
        assert!(room(ROOM_BYTES, ROOM_INODES).hint(folder).is_some());
    }

    #[test]
    fn a_file_system_without_inodes_is_judged_by_its_bytes() {
        let no_table = Room {
            bytes: 20 << 30,
            inodes: 0,
            counts_inodes: false,
        };
        let hint = no_table.hint(Path::new("/r/d")).unwrap();
        assert!(
            hint.starts_with("though its file system has 20.0 GB free: "),
            "{hint}"
        );
    }

    #[test]
    fn other_errors_and_an_unreadable_folder_pass_through() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        let passed = explain(denied, Path::new("/"));
        assert_eq!(passed.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(passed.to_string(), "permission denied");
        let full = io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error());
        let passed = explain(full, Path::new("/no/such/folder/here"));
        assert_eq!(passed.to_string(), "No space left on device (os error 28)");
    }

    #[test]
    fn a_full_folder_on_this_machine_s_temporary_disk_is_named() {
        // The real statvfs of a real folder: this machine's temporary disk
        // has room, so a "no space" error made there is taken as the folder's.
        let folder = std::env::temp_dir();
        let full = io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error());
        let said = explain(full, &folder).to_string();
        assert!(
            said.starts_with("No space left on device (os error 28), though its file system has"),
            "{said}"
        );
        assert!(said.contains(&format!("`{}`", folder.display())), "{said}");
    }

    proptest! {
        #[test]
        fn never_panics(bytes: u64, inodes: u64, counts_inodes: bool, folder in ".{0,40}") {
            let room = Room { bytes, inodes, counts_inodes };
            let _ = room.hint(Path::new(&folder));
        }
    }
}
