//! Group commit of run logs: an eval turn's finished log is synced and
//! given its final name together with the other turns' that finished about
//! the same time, one file-system sync for up to `GROUP_LOGS` logs instead
//! of one `fsync` each — the `fsync`, and the journal commits it forces on
//! ext4, were most of an eval turn's CPU (BENCHMARKS.md, issue #31).
//!
//! The rule a complete name keeps is unchanged: a log is renamed to its
//! final name only after it is synced, so a power loss leaves `.partial`
//! files, never a torn log under a complete name. What the grouping costs:
//! a turn's result waits for its group (at most `GROUP_WAIT`), and a killed
//! run leaves the turns that finished since the last commit as complete
//! `.partial` files, which `runs list` shows as partial and `--resume` runs
//! again.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// The most logs one sync covers: a kill can leave this many finished
/// turns to run again.
pub const GROUP_LOGS: usize = 256;

/// The longest a finished log waits for its group to fill.
pub const GROUP_WAIT: Duration = Duration::from_millis(100);

/// A log whose footer is written and whose file is closed, still `.partial`
/// and not yet synced (`RunRecorder::finish_written`).
#[derive(Debug)]
pub struct WrittenLog {
    pub(super) file: File,
    pub(super) runs_dir: PathBuf,
    pub(super) partial_path: PathBuf,
    pub(super) final_path: PathBuf,
}

impl WrittenLog {
    /// The name the log gets once it is committed.
    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// Syncs this log alone and gives it its final name: for a turn that
    /// is not part of a group (chat, serve, a watched eval turn).
    pub(super) fn complete_alone(self) -> io::Result<PathBuf> {
        self.file.sync_all()?;
        std::fs::rename(&self.partial_path, &self.final_path)?;
        Ok(self.final_path)
    }
}

/// A queued log: its paths only, so that a full group does not hold
/// `GROUP_LOGS` open files.
struct Queued {
    log: LogPaths,
    done: oneshot::Sender<io::Result<PathBuf>>,
}

struct LogPaths {
    runs_dir: PathBuf,
    partial_path: PathBuf,
    final_path: PathBuf,
}

/// The logs waiting for the next sync. Shared by an eval run's turns.
#[derive(Default)]
pub struct GroupCommit {
    queue: Mutex<Vec<Queued>>,
}

impl GroupCommit {
    pub fn new() -> Arc<GroupCommit> {
        Arc::new(GroupCommit::default())
    }

    /// Queues `log` and waits until it is synced and renamed: its final
    /// path, or why not (the log is then removed, as a failed write's is).
    /// Must be called on a Tokio runtime, whose blocking pool does the sync.
    pub async fn commit(self: &Arc<Self>, log: WrittenLog) -> io::Result<PathBuf> {
        let (done, committed) = oneshot::channel();
        let queued = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            let WrittenLog {
                runs_dir,
                partial_path,
                final_path,
                ..
            } = log;
            let log = LogPaths {
                runs_dir,
                partial_path,
                final_path,
            };
            queue.push(Queued { log, done });
            queue.len()
        };
        if queued >= GROUP_LOGS {
            self.flush_soon(Duration::ZERO);
        } else if queued == 1 {
            // The first of a group sets its deadline; a fuller group may be
            // flushed before it, and the deadline then flushes the next.
            self.flush_soon(GROUP_WAIT);
        }
        committed
            .await
            .unwrap_or_else(|_| Err(io::Error::other("the log's group commit was dropped")))
    }

    /// Takes what is queued after `delay` and commits it off the runtime's
    /// threads.
    fn flush_soon(self: &Arc<Self>, delay: Duration) {
        let commits = Arc::clone(self);
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let group =
                std::mem::take(&mut *commits.queue.lock().unwrap_or_else(|p| p.into_inner()));
            if group.is_empty() {
                return;
            }
            let flushing = tokio::task::spawn_blocking(move || commit_group(group));
            // A panic in the sync is a bug; its waiters are told their
            // group was dropped.
            let _ = flushing.await;
        });
    }
}

/// Syncs the group's logs, then renames each and tells its waiter. A
/// failed sync fails the whole group: no name is given to a log that may
/// not be on disk.
fn commit_group(group: Vec<Queued>) {
    let synced = sync_logs(&group);
    let mut noted: Vec<(PathBuf, PathBuf)> = Vec::new();
    for Queued { log, done } in group {
        let result = match &synced {
            Ok(()) => std::fs::rename(&log.partial_path, &log.final_path),
            Err(error) => Err(io::Error::new(error.kind(), error.to_string())),
        };
        let result = match result {
            Ok(()) => {
                noted.push((log.runs_dir, log.final_path.clone()));
                Ok(log.final_path)
            }
            Err(error) => {
                let _ = std::fs::remove_file(&log.partial_path);
                Err(io::Error::new(
                    error.kind(),
                    format!(
                        "{error} (committing `{}`, which was removed)",
                        log.partial_path.display()
                    ),
                ))
            }
        };
        let _ = done.send(result);
    }
    // The run index (#30) gets the rows; one it misses is found by the
    // next reader's folder check.
    for (runs_dir, path) in &noted {
        crate::index::note_log(runs_dir, path);
    }
}

/// One `syncfs` of the file system holding the logs, where there is one
/// (Linux): the data of every log in the group is then on disk. Elsewhere,
/// an `fsync` of each.
fn sync_logs(group: &[Queued]) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let mut file_systems: Vec<&Path> = Vec::new();
        for queued in group {
            let dir = queued.log.runs_dir.as_path();
            if !file_systems.contains(&dir) {
                file_systems.push(dir);
            }
        }
        for dir in file_systems {
            let folder = File::open(dir)?;
            rustix::fs::syncfs(&folder)?;
        }
        // Each log's own file is still synced if its folder is on another
        // file system than the runs folder (a symlinked fingerprint folder).
        let mut checked: Vec<(&Path, bool)> = Vec::new();
        for queued in group {
            let folder = queued.log.partial_path.parent().unwrap_or(Path::new("."));
            let same = match checked.iter().find(|(seen, _)| *seen == folder) {
                Some((_, same)) => *same,
                None => {
                    let same = same_file_system(folder, &queued.log.runs_dir);
                    checked.push((folder, same));
                    same
                }
            };
            if !same {
                sync_file(&queued.log.partial_path)?;
            }
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        group
            .iter()
            .try_for_each(|queued| sync_file(&queued.log.partial_path))
    }
}

/// An `fsync` of the file at `path`, opened again for it (opened for
/// writing, as some systems need, without truncating it).
fn sync_file(path: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .sync_all()
}

/// Whether `folder` is on the file system of `runs_dir`.
#[cfg(target_os = "linux")]
fn same_file_system(folder: &Path, runs_dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(folder), std::fs::metadata(runs_dir)) {
        (Ok(file), Ok(dir)) => file.dev() == dir.dev(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished log as `RunRecorder::finish_written` leaves it.
    fn written(runs_dir: &Path, name: &str) -> WrittenLog {
        let folder = runs_dir.join("default");
        std::fs::create_dir_all(&folder).unwrap();
        let partial_path = folder.join(format!("{name}.ndjson.partial"));
        std::fs::write(&partial_path, format!("{{\"log\":\"{name}\"}}\n")).unwrap();
        WrittenLog {
            file: File::open(&partial_path).unwrap(),
            runs_dir: runs_dir.to_path_buf(),
            final_path: folder.join(format!("{name}.ndjson")),
            partial_path,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_log_of_a_group_gets_its_final_name_and_keeps_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let group = GroupCommit::new();
        // More than one group's worth, from concurrent turns.
        let turns: Vec<_> = (0..GROUP_LOGS + 3)
            .map(|n| {
                let (group, log) = (Arc::clone(&group), written(dir.path(), &n.to_string()));
                tokio::spawn(async move { group.commit(log).await })
            })
            .collect();
        for (n, turn) in turns.into_iter().enumerate() {
            let path = turn.await.unwrap().unwrap();
            assert_eq!(path, dir.path().join(format!("default/{n}.ndjson")));
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text, format!("{{\"log\":\"{n}\"}}\n"));
        }
        let left: Vec<_> = std::fs::read_dir(dir.path().join("default"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".partial"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[tokio::test]
    async fn a_log_that_cannot_be_renamed_is_an_error_and_its_partial_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let group = GroupCommit::new();
        let mut log = written(dir.path(), "lost");
        let partial = log.partial_path.clone();
        log.final_path = dir.path().join("gone/lost.ndjson");
        let kept = written(dir.path(), "kept");
        let (lost, kept) = tokio::join!(group.commit(log), group.commit(kept));
        let error = lost.unwrap_err().to_string();
        assert!(error.contains("which was removed"), "{error}");
        assert!(error.contains("lost.ndjson.partial"), "{error}");
        assert!(!partial.exists());
        // The other log of the group is not held back by it.
        assert!(kept.unwrap().exists());
    }
}
