//! Files named by a hex digest under `<dir>/<first 2 hex>/<key>.json` (the
//! on-disk form of the model-call and judge caches), or flat under
//! `<dir>/<key>.json` (the run logs' stored prompts). Each is put in place
//! whole (`whole_file`), so processes sharing the folder never read half of
//! one; a key that is not hex never touches the disk.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::whole_file::{Durability, Staged};

#[derive(Debug, Clone)]
pub struct KeyedFiles {
    dir: PathBuf,
    /// `<dir>/<key>.json`, without the two-hex folder.
    flat: bool,
}

impl KeyedFiles {
    pub fn new(dir: impl Into<PathBuf>) -> KeyedFiles {
        KeyedFiles {
            dir: dir.into(),
            flat: false,
        }
    }

    /// Files directly in `dir`: for a folder of few, large entries.
    pub fn flat(dir: impl Into<PathBuf>) -> KeyedFiles {
        KeyedFiles {
            dir: dir.into(),
            flat: true,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `key` lives; `None` for anything but a hex key.
    pub fn path(&self, key: &str) -> Option<PathBuf> {
        if key.len() < 3 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let name = format!("{key}.json");
        Some(match self.flat {
            true => self.dir.join(name),
            false => self.dir.join(&key[..2]).join(name),
        })
    }

    /// The bytes stored under `key`, when there are any and no more than `limit`.
    pub fn read(&self, key: &str, limit: u64) -> Option<Vec<u8>> {
        let file = std::fs::File::open(self.path(key)?).ok()?;
        crate::input::read_limited(file, limit).ok()
    }

    /// Stores `bytes` under `key`, whole or not at all, synced.
    pub fn write(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.key_path(key)?;
        self.staged(&path, bytes)?
            .replace(&path, Durability::Synced)
    }

    /// `write` on the blocking pool: for a caller on a runtime's thread,
    /// which the sync would otherwise hold (and every turn it runs).
    pub async fn write_off_thread(&self, key: String, bytes: Vec<u8>) -> io::Result<()> {
        let files = self.clone();
        tokio::task::spawn_blocking(move || files.write(&key, &bytes))
            .await
            .unwrap_or_else(|joined| Err(io::Error::other(joined)))
    }

    /// Stores `bytes` under `key`, synced, unless the same bytes are there
    /// already: for content-addressed entries, where the same key means
    /// the same bytes. Writers racing for one key each stage their own
    /// temporary and put it in place only where nothing is; the first wins
    /// and the others find the file there. A reader sees the whole file or
    /// none.
    ///
    /// A file found under the key (before writing, or put there first by
    /// another writer) is read and compared, not trusted: one an older
    /// promptlab wrote for a group sync that never came (a power loss) may
    /// be torn. One that differs is replaced by a synced file renamed over
    /// it; one with the same bytes was synced by the writer that put it
    /// there.
    pub fn write_once(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.key_path(key)?;
        if !path.is_file() {
            match self.staged(&path, bytes)?.create(&path, Durability::Synced) {
                // Another writer's got there first: checked as any found.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                // A file system that can neither rename without replacing
                // nor link: renamed over.
                Err(_) => return self.write(key, bytes),
                Ok(()) => return Ok(()),
            }
        }
        self.keep_or_replace(key, &path, bytes)
    }

    /// A file found at `path`, `key`'s: kept if it holds `bytes`, else
    /// replaced by a synced one. A file that cannot be read is an error,
    /// not a difference, so that no file is replaced for want of reading
    /// it.
    fn keep_or_replace(&self, key: &str, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            // Removed since it was found: written again.
            Err(error) if error.kind() == io::ErrorKind::NotFound => return self.write(key, bytes),
            Err(error) => return Err(error),
        };
        let mut found = Vec::with_capacity(bytes.len());
        // One byte over, so that a longer file is not read as equal.
        file.take(bytes.len() as u64 + 1).read_to_end(&mut found)?;
        match found == bytes {
            true => Ok(()),
            false => self.write(key, bytes),
        }
    }

    fn key_path(&self, key: &str) -> io::Result<PathBuf> {
        self.path(key)
            .ok_or_else(|| io::Error::other("not a hex key"))
    }

    /// `bytes` in a temporary beside `path`, its folder made when it is
    /// missing (a system call saved for every file but a folder's first).
    fn staged(&self, path: &Path, bytes: &[u8]) -> io::Result<Staged> {
        let folder = path.parent().unwrap_or(&self.dir);
        let write = |out: &mut dyn Write| out.write_all(bytes);
        match Staged::write_in(folder, write) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                std::fs::create_dir_all(folder)?;
                Staged::write_in(folder, write)
            }
            staged => staged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hex_keys_touch_the_disk_and_entries_read_back() {
        let dir = std::env::temp_dir().join(format!("keyed-files-{}", std::process::id()));
        let files = KeyedFiles::new(&dir);
        let key = "ab".repeat(32);
        assert_eq!(files.read(&key, 100), None);
        files.write(&key, b"{}").unwrap();
        assert_eq!(files.read(&key, 100).as_deref(), Some(&b"{}"[..]));
        assert_eq!(files.read(&key, 1), None, "over the limit is a miss");
        assert!(files.path("../../etc/passwd").is_none());
        assert!(files.write("../x", b"").is_err());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[cfg(unix)]
    #[test]
    fn write_once_keeps_the_same_bytes_and_replaces_a_torn_or_longer_file() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let files = KeyedFiles::flat(dir.path());
        let key = "cd".repeat(32);
        let path = files.path(&key).unwrap();
        let inode = |path: &Path| std::fs::metadata(path).unwrap().ino();
        files.write_once(&key, b"{\"whole\":1}").unwrap();
        let first = inode(&path);
        files.write_once(&key, b"{\"whole\":1}").unwrap();
        assert_eq!(inode(&path), first, "the same bytes are left in place");
        // What a power loss before the sync can leave: a prefix, or the
        // length with none of the bytes; and a longer file.
        for found in [
            &b"{\"who"[..],
            &[0; 11][..],
            &b"{\"whole\":1}\n"[..],
            &b""[..],
        ] {
            std::fs::write(&path, found).unwrap();
            files.write_once(&key, b"{\"whole\":1}").unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), b"{\"whole\":1}", "{found:?}");
        }
        std::fs::remove_file(&path).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "no temporary is left: {left:?}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever is found under a key, `write_once` never panics and
        /// leaves exactly the bytes it was given there.
        #[test]
        fn whatever_is_found_write_once_leaves_its_own_bytes(
            found in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let files = KeyedFiles::flat(dir.path());
            let key = "ef".repeat(32);
            std::fs::write(files.path(&key).unwrap(), &found).unwrap();
            files.write_once(&key, &bytes).unwrap();
            proptest::prop_assert_eq!(std::fs::read(files.path(&key).unwrap()).unwrap(), bytes);
        }
    }
}
