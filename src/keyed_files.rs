//! Files named by a hex digest under `<dir>/<first 2 hex>/<key>.json` (the
//! on-disk form of the model-call and judge caches), or flat under
//! `<dir>/<key>.json` (the run logs' stored prompts). A file is written to a
//! temporary name in its folder and renamed (or linked) into place, so
//! processes sharing the folder never read half of one; a key that is not
//! hex never touches the disk.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

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

    /// Stores `bytes` under `key`, whole or not at all.
    pub fn write(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let (path, temp) = self.write_temp(key, bytes)?;
        std::fs::rename(&temp, &path).inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
    }

    /// `write` on the blocking pool: for a caller on a runtime's thread,
    /// which the sync would otherwise hold (and every turn it runs).
    pub async fn write_off_thread(&self, key: String, bytes: Vec<u8>) -> io::Result<()> {
        let files = self.clone();
        tokio::task::spawn_blocking(move || files.write(&key, &bytes))
            .await
            .unwrap_or_else(|joined| Err(io::Error::other(joined)))
    }

    /// Stores `bytes` under `key` unless a file is there already, which is
    /// never replaced: for content-addressed entries, where the same key
    /// means the same bytes. Writers racing for one key each write their
    /// own temporary (created exclusively) and link it into place; the first
    /// link wins and the others find the file there. A reader sees the
    /// whole file or none. Where the filesystem has no hard links, a rename
    /// puts it in place (replacing an identical file is harmless).
    pub fn write_once(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self
            .path(key)
            .ok_or_else(|| io::Error::other("not a hex key"))?;
        if path.is_file() {
            return Ok(());
        }
        let (path, temp) = self.write_temp(key, bytes)?;
        let placed = match std::fs::hard_link(&temp, &path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(_) => std::fs::rename(&temp, &path),
        };
        let _ = std::fs::remove_file(&temp);
        placed
    }

    /// `bytes` in a fresh temporary beside `key`'s file, synced: the file's
    /// path and the temporary's. A failure removes the temporary.
    fn write_temp(&self, key: &str, bytes: &[u8]) -> io::Result<(PathBuf, PathBuf)> {
        let path = self
            .path(key)
            .ok_or_else(|| io::Error::other("not a hex key"))?;
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(folder)?;
        // Created exclusively: a temporary is only ever this writer's. One
        // left by a crashed process of the same id is passed over.
        let mut attempts = 0;
        let (temp, mut file) = loop {
            let temp = folder.join(format!(
                ".{key}.{}.{}.tmp",
                std::process::id(),
                TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(file) => break (temp, file),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempts < 16 => {
                    attempts += 1;
                }
                Err(error) => return Err(error),
            }
        };
        match file.write_all(bytes).and_then(|()| file.sync_all()) {
            Ok(()) => Ok((path, temp)),
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
