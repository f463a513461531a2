//! Group commit of run logs: an eval turn's finished log is synced and
//! given its final name together with the other turns' that finished about
//! the same time, one file-system sync for a group of logs instead of one
//! `fsync` each — the `fsync`, and the journal commits it forces on ext4,
//! were most of an eval turn's CPU (BENCHMARKS.md, issue #31).
//!
//! The rule a complete name keeps is unchanged: a log is renamed to its
//! final name only after it is synced, so a power loss leaves `.partial`
//! files, never a torn log under a complete name. What the grouping costs:
//! a turn's result waits for its group to be gathered (`GROUP_WAIT` after
//! its first log, or `GROUP_LOGS` logs) and synced; a killed run leaves the
//! turns that finished since the last commit — at most `MAX_WAITING` — as
//! complete `.partial` files, which `runs list` shows as partial and
//! `--resume` runs again. One group is synced at a time, and at most
//! `MAX_WAITING` turns wait: a slow sync holds the run back rather than
//! letting finished turns pile up. A run's last group does not wait out
//! its deadline: each turn joins the group when it starts (`join`), and
//! once no turn is left to start (`close`) and every member has queued its
//! log or ended without one, what is queued is synced at once.

use parking_lot::Mutex;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, oneshot};

use crate::runs::naming::give_final_name;
use crate::sink::run_log::WrittenLog;

/// A group is synced once it holds this many logs...
pub const GROUP_LOGS: usize = 256;

/// ...or this long after its first log was queued.
pub const GROUP_WAIT: Duration = Duration::from_millis(100);

/// The most finished turns waiting for a commit (the group being synced
/// and the next one gathering): what a kill can leave to run again.
pub const MAX_WAITING: usize = 2 * GROUP_LOGS;

/// A queued log: its paths — its file is closed when it is queued, so that
/// the waiting turns hold no open files.
struct Queued {
    log: LogPaths,
    done: oneshot::Sender<io::Result<PathBuf>>,
}

struct LogPaths {
    partial_path: PathBuf,
    final_path: PathBuf,
}

/// The logs waiting for the next sync. Shared by an eval run's turns.
pub struct GroupCommit {
    queue: Mutex<Vec<Queued>>,
    /// Held while a group is synced: one at a time, the next one gathering
    /// (an async lock, so that a flush waiting for it holds no thread).
    syncing: Arc<tokio::sync::Mutex<FileSystems>>,
    /// A permit for each turn waiting for its commit (`MAX_WAITING`).
    waiting: Semaphore,
    limits: (usize, Duration),
    /// Turns that may still queue a log (`GroupMember`s alive).
    members: AtomicUsize,
    /// No turn will join any more (`close`).
    closed: AtomicBool,
}

/// A turn that may still queue a log for its group: it queues it with
/// `commit`, or ends without one when dropped. Either way it leaves, and
/// the last to leave a closed group has what is queued synced at once.
pub struct GroupMember {
    group: Arc<GroupCommit>,
}

impl GroupMember {
    /// Queues `log` and waits until it is synced and renamed: its final
    /// path, or why not (the log is then removed, as a failed write's is).
    /// Must be called on a Tokio runtime, whose blocking pool does the sync.
    pub async fn commit(self, log: WrittenLog) -> io::Result<PathBuf> {
        // Closed now, so that the waiting turns hold no open files.
        let (partial_path, final_path) = log.into_paths();
        self.commit_paths(LogPaths {
            partial_path,
            final_path,
        })
        .await
    }

    async fn commit_paths(self, log: LogPaths) -> io::Result<PathBuf> {
        let group = Arc::clone(&self.group);
        group.commit(log, self).await
    }
}

impl Drop for GroupMember {
    fn drop(&mut self) {
        let left = self.group.members.fetch_sub(1, Ordering::SeqCst) - 1;
        if left == 0 && self.group.closed.load(Ordering::SeqCst) {
            self.group.flush_queued_now();
        }
    }
}

impl GroupCommit {
    pub fn new() -> Arc<GroupCommit> {
        GroupCommit::with_limits(GROUP_LOGS, GROUP_WAIT)
    }

    fn with_limits(logs: usize, wait: Duration) -> Arc<GroupCommit> {
        Arc::new(GroupCommit {
            queue: Mutex::new(Vec::new()),
            syncing: Arc::new(tokio::sync::Mutex::new(FileSystems::default())),
            waiting: Semaphore::new(2 * logs),
            limits: (logs, wait),
            members: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        })
    }

    /// A turn that may queue a log: joined before it starts, so that a
    /// `close` after the last start counts it.
    pub fn join(self: &Arc<Self>) -> GroupMember {
        self.members.fetch_add(1, Ordering::SeqCst);
        GroupMember {
            group: Arc::clone(self),
        }
    }

    /// No turn will join any more: once every member has left, what is
    /// queued is synced at once, not at its group's deadline (a short
    /// run's last group would otherwise wait out `GROUP_WAIT`).
    pub fn close(self: &Arc<Self>) {
        self.closed.store(true, Ordering::SeqCst);
        if self.members.load(Ordering::SeqCst) == 0 {
            self.flush_queued_now();
        }
    }

    /// A flush now, if anything is queued (the last member's, or `close`'s).
    fn flush_queued_now(self: &Arc<Self>) {
        let queued = !self.queue.lock().is_empty();
        // Outside a runtime nobody can be waiting for a commit.
        if queued && tokio::runtime::Handle::try_current().is_ok() {
            self.flush_soon(Duration::ZERO);
        }
    }

    async fn commit(self: &Arc<Self>, log: LogPaths, member: GroupMember) -> io::Result<PathBuf> {
        let Ok(_waiting) = self.waiting.acquire().await else {
            return Err(io::Error::other("the log's group commit was closed"));
        };
        let (done, committed) = oneshot::channel();
        let queued = {
            let mut queue = self.queue.lock();
            queue.push(Queued { log, done });
            queue.len()
        };
        let (logs, wait) = self.limits;
        if queued == logs {
            self.flush_soon(Duration::ZERO);
        } else if queued == 1 {
            // The first of a group sets its deadline; a fuller group may be
            // flushed before it, and the deadline then flushes the next.
            self.flush_soon(wait);
        }
        // Queued: the member leaves, the last of a closed group flushing.
        drop(member);
        committed
            .await
            .unwrap_or_else(|_| Err(io::Error::other("the log's group commit was dropped")))
    }

    /// After `delay`, syncs and renames what is queued once the sync before
    /// it is done, off the runtime's threads.
    fn flush_soon(self: &Arc<Self>, delay: Duration) {
        let commits = Arc::clone(self);
        tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let file_systems = Arc::clone(&commits.syncing).lock_owned().await;
            let flushing = tokio::task::spawn_blocking(move || commits.flush(file_systems));
            // A panic in the sync is a bug; its waiters are told their
            // group was dropped.
            let Ok((file_systems, committed)) = flushing.await else {
                return;
            };
            // Told from here, on the runtime: a waiter woken from the
            // blocking pool's thread costs the runtime a wake-up each (a
            // system call a turn), one woken here costs nothing.
            for (done, result) in committed {
                let _ = done.send(result);
            }
            drop(file_systems);
        });
    }

    fn flush(&self, mut file_systems: SyncingGuard) -> (SyncingGuard, Outcomes) {
        // Taken only now: what queued while the last group was synced
        // joins this one.
        let group = std::mem::take(&mut *self.queue.lock());
        let committed = commit_group(group, &mut file_systems);
        (file_systems, committed)
    }
}

type SyncingGuard = tokio::sync::OwnedMutexGuard<FileSystems>;

/// What to tell each waiter of a group.
type Outcomes = Vec<(oneshot::Sender<io::Result<PathBuf>>, io::Result<PathBuf>)>;

/// Syncs the group's logs, then renames each. A failed sync fails the
/// whole group: no name is given to a log that may not be on disk.
fn commit_group(group: Vec<Queued>, file_systems: &mut FileSystems) -> Outcomes {
    if group.is_empty() {
        return Vec::new();
    }
    let synced = file_systems.sync(&group);
    let mut outcomes = Vec::with_capacity(group.len());
    for Queued { log, done } in group {
        let renamed = match &synced {
            Ok(()) => give_final_name(&log.partial_path, &log.final_path),
            Err(error) => Err(io::Error::new(error.kind(), error.to_string())),
        };
        let result = match renamed {
            Ok(()) => Ok(log.final_path),
            Err(error) => Err(not_committed(&log.partial_path, error)),
        };
        outcomes.push((done, result));
    }
    outcomes
}

/// The error of a log that could not be committed, whose `.partial` is
/// removed (a failed write's is): it says whether it was.
fn not_committed(partial_path: &Path, error: io::Error) -> io::Error {
    let what = match std::fs::remove_file(partial_path) {
        Ok(()) => "which was removed",
        Err(_) => "which could not be removed either",
    };
    let shown = partial_path.display();
    io::Error::new(
        error.kind(),
        format!("{error} (committing `{shown}`, {what})"),
    )
}

/// The file systems an eval's logs are on, each with a file held open for
/// the run: `syncfs` reports a write-back error once to each open file, so
/// one kept from the first group on sees every error since (a file opened
/// just before a sync could miss one reported to somebody else).
#[derive(Default)]
struct FileSystems {
    #[cfg(target_os = "linux")]
    open: Vec<(u64, File)>,
}

impl FileSystems {
    /// One `syncfs` of each file system holding the group's logs (Linux):
    /// every log's data is then on disk. Elsewhere, an `fsync` of each log.
    #[cfg(target_os = "linux")]
    fn sync(&mut self, group: &[Queued]) -> io::Result<()> {
        let mut seen: Vec<(PathBuf, u64)> = Vec::new();
        let mut devices: Vec<u64> = Vec::new();
        for queued in group {
            let log = &queued.log;
            let folder = log.partial_path.parent().unwrap_or(Path::new("."));
            // A log itself, not the runs folder, which may not be
            // readable; the file stays valid once renamed.
            let device = self.device_of(folder, &log.partial_path, &mut seen)?;
            if !devices.contains(&device) {
                devices.push(device);
            }
        }
        for (device, file) in &self.open {
            if devices.contains(device) {
                rustix::fs::syncfs(file)?;
            }
        }
        Ok(())
    }

    /// The device `folder` is on (remembered in `seen` for the group); the
    /// first time the run meets a device, `open` is kept open on it.
    #[cfg(target_os = "linux")]
    fn device_of(
        &mut self,
        folder: &Path,
        open: &Path,
        seen: &mut Vec<(PathBuf, u64)>,
    ) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        if let Some((_, device)) = seen.iter().find(|(known, _)| known == folder) {
            return Ok(*device);
        }
        let device = std::fs::metadata(folder)?.dev();
        seen.push((folder.to_path_buf(), device));
        if !self.open.iter().any(|(open, _)| *open == device) {
            self.open.push((device, File::open(open)?));
        }
        Ok(device)
    }

    #[cfg(not(target_os = "linux"))]
    fn sync(&mut self, group: &[Queued]) -> io::Result<()> {
        group.iter().try_for_each(|queued| {
            // Opened again for writing, as some systems need to sync.
            let path = &queued.log.partial_path;
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)?
                .sync_all()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A finished log as `RunRecorder::finish_written` leaves it, closed.
    fn written(runs_dir: &Path, name: &str) -> LogPaths {
        let folder = runs_dir.join("default");
        std::fs::create_dir_all(&folder).unwrap();
        let partial_path = folder.join(format!("{name}.ndjson.partial"));
        std::fs::write(&partial_path, format!("{{\"log\":\"{name}\"}}\n")).unwrap();
        let final_path = folder.join(format!("{name}.ndjson"));
        LogPaths {
            final_path,
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
                let (member, log) = (group.join(), written(dir.path(), &n.to_string()));
                tokio::spawn(member.commit_paths(log))
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

    /// How many of this process's open files are under `dir` (Linux).
    #[cfg(target_os = "linux")]
    fn open_files_under(dir: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| target.starts_with(dir))
            .count()
    }

    /// A turn waiting for its group holds no open file: a full queue of
    /// waiting turns would otherwise hold hundreds, past a usual limit of
    /// 1,024 (or macOS's 256).
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiting_logs_hold_no_open_files() {
        let dir = tempfile::tempdir().unwrap();
        // A group of 40 that only fills, never times out.
        let group = GroupCommit::with_limits(40, Duration::from_secs(3600));
        let waiting: Vec<_> = (0..39)
            .map(|n| {
                let (member, log) = (group.join(), written(dir.path(), &n.to_string()));
                tokio::spawn(member.commit_paths(log))
            })
            .collect();
        while group.queue.lock().len() < 39 {
            tokio::task::yield_now().await;
        }
        assert_eq!(open_files_under(dir.path()), 0, "with 39 waiting");
        // The 40th fills the group; every one is committed.
        let last = group.join().commit_paths(written(dir.path(), "39")).await;
        assert!(last.unwrap().exists());
        for turn in waiting {
            assert!(turn.await.unwrap().unwrap().exists());
        }
    }

    /// At most twice a group waits: a slow sync holds the run back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_than_two_groups_wait() {
        use std::future::Future;
        use std::pin::Pin;
        use std::task::Poll;
        type Turn = Pin<Box<dyn Future<Output = io::Result<PathBuf>> + Send>>;
        let dir = tempfile::tempdir().unwrap();
        let group = GroupCommit::with_limits(4, Duration::from_secs(3600));
        // Held as a sync that does not end would hold it.
        let syncing = group.syncing.lock().await;
        let mut turns: Vec<Turn> = (0..12)
            .map(|n| {
                let (member, log) = (group.join(), written(dir.path(), &n.to_string()));
                Box::pin(member.commit_paths(log)) as Turn
            })
            .collect();
        // Each turn is polled once, in order, on this task: every one that
        // can get a place in the queue has taken it when this loop ends.
        for turn in &mut turns {
            let polled = std::future::poll_fn(|cx| Poll::Ready(turn.as_mut().poll(cx))).await;
            assert!(
                polled.is_pending(),
                "no turn is committed while a sync runs"
            );
        }
        assert_eq!(
            group.queue.lock().len(),
            8,
            "two groups queued, four turns held back"
        );
        drop(syncing);
        let turns: Vec<_> = turns.into_iter().map(tokio::spawn).collect();
        for turn in turns {
            assert!(turn.await.unwrap().unwrap().exists());
        }
    }

    #[tokio::test]
    async fn a_log_that_cannot_be_renamed_is_an_error_and_its_partial_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let group = GroupCommit::new();
        let mut log = written(dir.path(), "lost");
        let partial = log.partial_path.clone();
        log.final_path = dir.path().join("gone/lost.ndjson");
        let kept = written(dir.path(), "kept");
        let (lost, kept) = tokio::join!(
            group.join().commit_paths(log),
            group.join().commit_paths(kept)
        );
        let error = lost.unwrap_err().to_string();
        assert!(error.contains("which was removed"), "{error}");
        assert!(error.contains("lost.ndjson.partial"), "{error}");
        assert!(!partial.exists());
        // The other log of the group is not held back by it.
        assert!(kept.unwrap().exists());
    }

    /// How long a test waits for a commit that should come at once: far
    /// less than the hour its group's deadline is set to, far more than a
    /// sync takes.
    const AT_ONCE: Duration = Duration::from_secs(60);

    /// The path a spawned commit gives, which must come within `AT_ONCE`.
    async fn committed_at_once(turn: tokio::task::JoinHandle<io::Result<PathBuf>>) -> PathBuf {
        let joined = tokio::time::timeout(AT_ONCE, turn).await;
        joined.expect("committed at once").unwrap().unwrap()
    }

    /// A spawned commit still waiting a second on: far longer than a
    /// sync wrongly started now would take, and far shorter than the hour
    /// a correct group waits, so this never fails a correct group.
    async fn still_waiting(turn: &mut tokio::task::JoinHandle<io::Result<PathBuf>>) -> bool {
        tokio::time::timeout(Duration::from_secs(1), turn)
            .await
            .is_err()
    }

    /// A closed group whose members have all queued is synced without
    /// waiting for its deadline (an hour here): a run's last group.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_group_is_synced_once_its_last_member_queues() {
        let dir = tempfile::tempdir().unwrap();
        let group = GroupCommit::with_limits(256, Duration::from_secs(3600));
        let (first, second) = (group.join(), group.join());
        let mut first = tokio::spawn(first.commit_paths(written(dir.path(), "1")));
        while group.queue.lock().is_empty() {
            tokio::task::yield_now().await;
        }
        group.close();
        // One member has not queued yet: nothing is synced.
        assert!(still_waiting(&mut first).await);
        let second = tokio::spawn(second.commit_paths(written(dir.path(), "2")));
        assert!(committed_at_once(second).await.exists());
        assert!(committed_at_once(first).await.exists());
    }

    /// Members that end without a log (a turn whose log failed) leave too;
    /// a close after the others have queued syncs them at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn members_leaving_without_a_log_and_a_late_close_flush_too() {
        let dir = tempfile::tempdir().unwrap();
        let group = GroupCommit::with_limits(256, Duration::from_secs(3600));
        let members: Vec<_> = (0..4).map(|_| group.join()).collect();
        let mut turns = Vec::new();
        for (n, member) in members.into_iter().enumerate() {
            match n % 2 {
                0 => turns.push(tokio::spawn(
                    member.commit_paths(written(dir.path(), &n.to_string())),
                )),
                _ => drop(member),
            }
        }
        while group.queue.lock().len() < 2 {
            tokio::task::yield_now().await;
        }
        group.close();
        for turn in turns {
            assert!(committed_at_once(turn).await.exists());
        }
    }

    /// An open group still waits for its deadline: the rule that gathers a
    /// group is unchanged while turns may still start.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_open_group_waits_for_its_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let group = GroupCommit::with_limits(256, Duration::from_secs(3600));
        let starting = group.join();
        let mut turn = tokio::spawn(group.join().commit_paths(written(dir.path(), "1")));
        while group.queue.lock().is_empty() {
            tokio::task::yield_now().await;
        }
        group.close();
        // A member is still running, so the group gathers on.
        assert!(still_waiting(&mut turn).await);
        drop(starting);
        assert!(committed_at_once(turn).await.exists());
    }
}
