//! Ctrl-C and SIGTERM (and SIGHUP, as SIGTERM, unless `nohup` ignores it):
//! each cancels the work in hand, so finished run logs
//! are kept and running turns are recorded as cancelled; the exit code says
//! which signal it was (130 or 143). Another signal a second or more after
//! the first ends the process at once with its code — for work that cannot
//! wind down (a reader of its output that has stopped reading); what was
//! running or waiting for its group commit is left `.partial`, and no
//! summary, JUnit file or trace flush follows. While the process only writes
//! a finished report into its own stdout or stderr (`output_only`), the
//! first signal ends it at once: a wait on output always ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

use super::error::{Exit, exit_code};

/// Which signal stopped the work, if any.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<AtomicU8>);

const NONE: u8 = 0;
const INTERRUPT: u8 = 1;
const TERMINATE: u8 = 2;

impl StopSignal {
    /// The exit for the signal received, if one was.
    pub fn exit(&self) -> Option<Exit> {
        match self.0.load(Ordering::SeqCst) {
            INTERRUPT => Some(Exit::Cancelled),
            TERMINATE => Some(Exit::Terminated),
            _ => None,
        }
    }

    fn set(&self, which: u8) {
        let _ = self
            .0
            .compare_exchange(NONE, which, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Spawns a task (on the current Tokio runtime) that cancels `cancel` on the
/// first Ctrl-C or SIGTERM; a later one, a second or more after it, ends
/// the process (`exit_on_a_later_signal`).
pub fn cancel_on_signals(cancel: CancellationToken) -> StopSignal {
    exit_on_a_later_signal();
    let stop = StopSignal::default();
    let seen = stop.clone();
    tokio::spawn(async move {
        let which = tokio::select! {
            result = tokio::signal::ctrl_c() => result.ok().map(|_| INTERRUPT),
            which = terminate() => which,
        };
        if let Some(which) = which {
            seen.set(which);
            cancel.cancel();
        }
    });
    stop
}

/// How long after the first signal a repeat is taken for the same one
/// (a wrapper forwarding the terminal's Ctrl-C, a CI runner's SIGINT then
/// SIGTERM in quick succession) rather than a demand to stop at once.
const REPEAT_GRACE_MS: u64 = 1_000;

/// The first stop signal's time on the monotonic clock in ms, plus one (0:
/// none yet), as the process-wide handler saw it.
static FIRST_SIGNAL_MS: AtomicU64 = AtomicU64::new(0);

/// Installs, once per process, a handler beside Tokio's that ends the
/// process with 130 or 143 on a stop signal that comes `REPEAT_GRACE_MS`
/// or more after the first. It runs in the signal itself, not as a task,
/// so it works whatever the process is blocked in (a thread writing to a
/// reader that stopped reading, the summary after the runtime is gone).
#[cfg(unix)]
fn exit_on_a_later_signal() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let codes = [
            (libc::SIGINT, exit_code::INTERRUPTED),
            (libc::SIGTERM, exit_code::TERMINATED),
        ];
        for (signal, code) in codes {
            // SAFETY: the action only reads the monotonic clock, updates an
            // atomic and calls `_exit`, which are async-signal-safe.
            let _ = unsafe { signal_hook_registry::register(signal, move || on_stop_signal(code)) };
        }
    });
}

#[cfg(not(unix))]
fn exit_on_a_later_signal() {}

#[cfg(unix)]
fn on_stop_signal(code: u8) {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes only `now`; it is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let millis = u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000_000;
    let now_ms = secs.saturating_mul(1_000).saturating_add(millis) + 1;
    if OUTPUT_ONLY.load(Ordering::SeqCst) {
        // SAFETY: as below.
        unsafe { libc::_exit(i32::from(code)) }
    }
    match FIRST_SIGNAL_MS.compare_exchange(0, now_ms, Ordering::SeqCst, Ordering::SeqCst) {
        Err(first) if now_ms.saturating_sub(first) >= REPEAT_GRACE_MS => {
            // SAFETY: `_exit` ends the process without running anything
            // that is not async-signal-safe.
            unsafe { libc::_exit(i32::from(code)) }
        }
        _ => {}
    }
}

/// Set while the process does nothing but write a finished report into
/// its own stdout or stderr: a stop signal then ends it at once, the first
/// one included, since there is no work left to wind down and a reader that
/// stopped reading would hold the write for ever (`--junit /dev/stdout`
/// into a pipe nobody reads ignored the first SIGTERM, issue 61).
static OUTPUT_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// While the guard lives, a stop signal ends the process at once.
pub struct OutputOnly(());

impl Drop for OutputOnly {
    fn drop(&mut self) {
        OUTPUT_ONLY.store(false, Ordering::SeqCst);
    }
}

/// Marks the process as only writing output until the guard is dropped.
pub fn output_only() -> OutputOnly {
    OUTPUT_ONLY.store(true, Ordering::SeqCst);
    OutputOnly(())
}

/// SIGTERM, or SIGHUP taken as it.
#[cfg(unix)]
pub(super) async fn terminate() -> Option<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut stream = signal(SignalKind::terminate()).ok()?;
    let mut hangup = hangup();
    tokio::select! {
        got = stream.recv() => got.map(|_| TERMINATE),
        got = recv_or_never(&mut hangup) => got.map(|_| TERMINATE),
    }
}

/// SIGHUP — the terminal closed, an ssh session dropped — stops the work as
/// SIGTERM does (logs recorded `cancelled`, not left `.partial`), unless
/// the process was started to outlive its terminal (`nohup`, which ignores
/// the signal): then it stays ignored.
#[cfg(unix)]
pub(super) fn hangup() -> Option<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{SignalKind, signal};
    // SAFETY: a null new action only reads the current one into `current`.
    let ignored = unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGHUP, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    };
    if ignored {
        return None;
    }
    signal(SignalKind::hangup()).ok()
}

/// The next delivery of `signal`, or never when there is none to wait for.
#[cfg(unix)]
pub(super) async fn recv_or_never(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match signal {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(not(unix))]
pub(super) async fn terminate() -> Option<u8> {
    std::future::pending().await
}
