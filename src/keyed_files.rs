//! Files named by a hex digest under `<dir>/<first 2 hex>/<key>.json`: the
//! on-disk form of the model-call and judge caches. A file is written to a
//! temporary name in its folder and renamed into place, so processes
//! sharing the folder never read half of one; a key that is not hex never
//! touches the disk.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone)]
pub struct KeyedFiles {
    dir: PathBuf,
}

impl KeyedFiles {
    pub fn new(dir: impl Into<PathBuf>) -> KeyedFiles {
        KeyedFiles { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `key` lives; `None` for anything but a hex key.
    pub fn path(&self, key: &str) -> Option<PathBuf> {
        if key.len() < 3 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(self.dir.join(&key[..2]).join(format!("{key}.json")))
    }

    /// The bytes stored under `key`, when there are any and no more than `limit`.
    pub fn read(&self, key: &str, limit: u64) -> Option<Vec<u8>> {
        let file = std::fs::File::open(self.path(key)?).ok()?;
        crate::input::read_limited(file, limit).ok()
    }

    /// Stores `bytes` under `key`, whole or not at all.
    pub fn write(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self
            .path(key)
            .ok_or_else(|| io::Error::other("not a hex key"))?;
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(folder)?;
        let temp = folder.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::File::create(&temp).and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        });
        match written.and_then(|()| std::fs::rename(&temp, &path)) {
            Ok(()) => Ok(()),
            Err(error) => {
                let _ = std::fs::remove_file(&temp);
                Err(error)
            }
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
}
