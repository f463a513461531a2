//! Ctrl-C and SIGTERM: both cancel the work in hand, so finished run logs
//! are kept and running turns are recorded as cancelled; the exit code says
//! which signal it was (130 or 143). A second signal ends the process at
//! once with that code — for work that cannot wind down (a reader of its
//! output that has stopped reading); what was running is left `.partial`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use tokio_util::sync::CancellationToken;

use super::error::Exit;

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
/// first Ctrl-C or SIGTERM, and exits on the second.
pub fn cancel_on_signals(cancel: CancellationToken) -> StopSignal {
    let stop = StopSignal::default();
    let seen = stop.clone();
    tokio::spawn(async move {
        let Some(which) = next_signal().await else {
            return;
        };
        seen.set(which);
        cancel.cancel();
        if let Some(again) = next_signal().await {
            let code = if again == INTERRUPT {
                super::error::exit_code::INTERRUPTED
            } else {
                super::error::exit_code::TERMINATED
            };
            std::process::exit(i32::from(code));
        }
    });
    stop
}

async fn next_signal() -> Option<u8> {
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.ok().map(|_| INTERRUPT),
        which = terminate() => which,
    }
}

#[cfg(unix)]
async fn terminate() -> Option<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut stream = signal(SignalKind::terminate()).ok()?;
    stream.recv().await.map(|_| TERMINATE)
}

#[cfg(not(unix))]
async fn terminate() -> Option<u8> {
    std::future::pending().await
}
