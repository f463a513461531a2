//! A running `promptlab serve --port 0` for the HTTP and browser tests: its
//! address read from the first line of stdout, its runs folder private,
//! killed when dropped. Conditions are polled with deadlines, never slept on.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use promptlab::runs::{RunLog, read_run_log};

pub struct Server {
    pub child: Child,
    /// `http://127.0.0.1:PORT`
    pub url: String,
    pub runs: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// `promptlab serve --port 0 --provider script --script SCRIPT --today 2025-01-01 EXTRA...`
    pub fn start(script: &Path, extra: &[&str]) -> Server {
        let script = script.to_str().expect("a UTF-8 path");
        let mut args = vec!["--provider", "script", "--script", script];
        args.extend_from_slice(extra);
        Server::start_with(super::promptlab(), &args)
    }

    /// `command serve --port 0 --today 2025-01-01 ARGS...`
    pub fn start_with(mut command: std::process::Command, args: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("a temp dir");
        let runs = dir.path().join("runs");
        command
            .env("PROMPTLAB_RUNS_DIR", &runs)
            .args(["serve", "--port", "0", "--today", "2025-01-01"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("promptlab serve starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("stdout is readable");
        let url = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the first line names the address, got {first:?}"))
            .to_string();
        Server {
            child,
            url,
            runs,
            _dir: dir,
        }
    }

    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    /// Every complete run log in the runs folder.
    pub fn logs(&self) -> Vec<RunLog> {
        let mut logs = Vec::new();
        let Ok(versions) = std::fs::read_dir(&self.runs) else {
            return logs;
        };
        for version in versions.flatten() {
            for file in std::fs::read_dir(version.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let path = file.path();
                if path.extension().is_some_and(|ext| ext == "ndjson")
                    && !path.to_string_lossy().ends_with(".feedback.ndjson")
                {
                    logs.push(read_run_log(&path).expect("a readable run log"));
                }
            }
        }
        logs
    }

    /// Polls until `count` complete run logs exist, or panics at the deadline.
    pub fn wait_for_logs(&self, count: usize, timeout: Duration) -> Vec<RunLog> {
        let deadline = Instant::now() + timeout;
        loop {
            let logs = self.logs();
            if logs.len() >= count {
                return logs;
            }
            assert!(
                Instant::now() < deadline,
                "expected {count} run logs within {timeout:?}, found {}",
                logs.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` and waits for the exit code, or panics at the deadline.
    pub fn stop(&mut self, signal: &str, timeout: Duration) -> (i32, String) {
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let deadline = Instant::now() + timeout;
        let code = loop {
            if let Some(status) = self.child.try_wait().expect("the child can be waited on") {
                break status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "serve did not exit within {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("stderr is readable");
        }
        (code, stderr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chat body for CLM-HH-0001 with one user message.
pub fn chat_body(message: &str) -> serde_json::Value {
    serde_json::json!({
        "claimId": "CLM-HH-0001",
        "messages": [{"role": "user", "text": message}],
    })
}

/// The `data:` payloads of an SSE body, parsed; panics on a frame that is
/// not `data: <json>\n\n`.
pub fn sse_events(body: &str) -> Vec<serde_json::Value> {
    assert!(body.ends_with("\n\n"), "the body ends with a whole frame");
    body.split_terminator("\n\n")
        .map(|frame| {
            let json = frame
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data frame: {frame:?}"));
            serde_json::from_str(json).expect("each frame is one JSON event")
        })
        .collect()
}
