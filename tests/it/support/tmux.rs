//! A terminal for the tests of programs that need one (`chat -i`'s line
//! editor, `review`'s single keys): tmux on a socket of its own, its
//! screen read with capture-pane until it shows what a test waits for.

use std::process::Command;
use std::time::{Duration, Instant};

/// A tmux session on its own socket, ended when dropped.
pub struct Tmux {
    pub socket: String,
    /// The session's name.
    pub session: String,
}

impl Tmux {
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", &self.session])
    }

    /// Waits until the screen shows `text` (a condition, not a guess at a
    /// time); fails with the screen after 30 s.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(text, |screen| screen.contains(text))
    }

    /// Waits until `shown(screen)`; `what` names it in the failure.
    pub fn wait_until(&self, what: &str, shown: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if shown(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {what:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the line editor's prompt on the last line: keys typed
    /// before it has the terminal could be lost in its switch to raw mode.
    pub fn wait_for_prompt(&self) -> String {
        self.wait_until("the prompt", |screen| {
            screen
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim_end)
                == Some("›")
        })
    }

    pub fn keys(&self, keys: &[&str]) {
        self.run(&[&["send-keys", "-t", self.session.as_str()][..], keys].concat());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// Whether tmux is here to give the session a terminal; CI must have it.
pub fn have_tmux() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must have tmux (.ci/run installs it)"
    );
    eprintln!("skipped: tmux is not installed");
    false
}

/// The exit code a command run in tmux wrote to `done` (`…; echo $? >
/// done`), once it has ended: the shell makes the file before it writes
/// the code, so wait for the code, not the file.
pub fn exit_code(tmux: &Tmux, done: &std::path::Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let code = std::fs::read_to_string(done).unwrap_or_default();
        if code.ends_with('\n') {
            return code.trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "the program did not end:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
