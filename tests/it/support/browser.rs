//! A small Chrome DevTools Protocol client for the report tests: starts
//! Debian's headless `chromium` with a fresh profile, talks CDP over one
//! WebSocket (tungstenite, synchronous), evaluates JavaScript in the page,
//! clicks with real mouse events, takes screenshots, and collects every
//! console error and uncaught exception the page produced.
//!
//! Why not chromiumoxide or headless_chrome: they pull in an async runtime
//! stack or a browser fetcher and compile far longer than the half-dozen
//! CDP methods these tests need (see the commit that added this file).

use std::io::ErrorKind;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

/// How long one CDP answer may take before the test fails.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Browser {
    child: Child,
    socket: WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    /// Console errors, uncaught exceptions and error log entries, in order.
    pub errors: Vec<String>,
    _profile: tempfile::TempDir,
}

/// The Chromium binary: `$CHROMIUM`, else `chromium` on the PATH.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "the browser tests need headless Chromium: `apt-get install -y chromium` \
             (.ci/run installs it), or set CHROMIUM to its path"
        )
    })
}

impl Browser {
    /// Starts Chromium headless and attaches to a fresh page of `width` × `height`.
    pub fn launch(width: u32, height: u32) -> Browser {
        Browser::launch_with(width, height, &[])
    }

    /// `launch` with more Chromium flags (e.g. `--host-resolver-rules=…`).
    pub fn launch_with(width: u32, height: u32, extra: &[&str]) -> Browser {
        let profile = tempfile::tempdir().expect("a temp dir for the profile");
        let log = std::fs::File::create(profile.path().join("chromium.log")).expect("a log file");
        // The flags this machine needs (its network is closed; as root there is no sandbox).
        let child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--remote-debugging-port=0",
                &format!("--window-size={width},{height}"),
            ])
            .args(extra)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("chromium starts");
        let url = devtools_url(profile.path());
        let stream = connect(&url);
        stream
            .set_read_timeout(Some(ANSWER_TIMEOUT))
            .expect("a read timeout");
        let (socket, _) = tungstenite::client(url.as_str(), stream).expect("the CDP handshake");
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            errors: Vec::new(),
            _profile: profile,
        };
        browser.attach(width, height);
        browser
    }

    fn attach(&mut self, width: u32, height: u32) {
        let target = self.call("Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = self.call(
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        self.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        for method in ["Page.enable", "Runtime.enable", "Log.enable"] {
            self.call(method, json!({}));
        }
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// Opens `path` as a `file://` URL and waits (bounded) until the page
    /// says it has drawn itself (`document.body.dataset.ready`).
    pub fn open_report(&mut self, path: &Path, timeout: Duration) -> Duration {
        let started = Instant::now();
        let url = format!(
            "file://{}",
            path.canonicalize().expect("the report exists").display()
        );
        self.open_url(&url, timeout);
        started.elapsed()
    }

    /// Opens `url` and waits (bounded) until the page says it has drawn
    /// itself (`document.body.dataset.ready`).
    pub fn open_url(&mut self, url: &str, timeout: Duration) {
        let navigated = self.call("Page.navigate", json!({"url": url}));
        assert!(
            navigated.get("errorText").is_none(),
            "navigation failed: {navigated}"
        );
        self.wait_for(
            "document.body && document.body.dataset.ready === '1'",
            "the page to render",
            timeout,
        );
    }

    /// Opens `url` and waits (bounded) only until the document has loaded,
    /// for pages that are not ours (an error answer, a test's own page).
    pub fn navigate(&mut self, url: &str, timeout: Duration) {
        let navigated = self.call("Page.navigate", json!({"url": url}));
        assert!(
            navigated.get("errorText").is_none(),
            "navigation failed: {navigated}"
        );
        self.wait_for(
            &format!(
                "document.readyState === 'complete' && location.href === {}",
                json!(url)
            ),
            "the document to load",
            timeout,
        );
    }

    /// The value of a JavaScript expression in the page; an exception fails the test.
    pub fn eval(&mut self, expression: &str) -> Value {
        let answer = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = answer.get("exceptionDetails") {
            panic!("`{expression}` threw: {exception}");
        }
        answer["result"]
            .get("value")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Polls `expression` until it is truthy, failing after `timeout`.
    pub fn wait_for(&mut self, expression: &str, what: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let value = self.eval(expression);
            let truthy = !matches!(value, Value::Null | Value::Bool(false))
                && value != json!(0)
                && value != json!("");
            if truthy {
                return value;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what} (`{expression}`); page errors: {:?}",
                self.errors
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Clicks the centre of the first element matching `selector` with real
    /// mouse events, as a person would.
    pub fn click(&mut self, selector: &str) {
        let selector_json = serde_json::to_string(selector).expect("a string");
        let point = self.eval(&format!(
            "(() => {{ const e = document.querySelector({selector_json}); if (!e) return null; \
             e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
             return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ));
        let (x, y) = match point.as_array().map(Vec::as_slice) {
            Some([x, y]) => (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0)),
            _ => panic!("nothing on the page matches `{selector}`"),
        };
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Presses and releases a key as the keyboard would (`Tab`, `Enter`,
    /// …), on whatever has the focus; `shift` holds Shift.
    pub fn press(&mut self, key: &str, shift: bool) {
        let code = match key {
            "Tab" => 9,
            "Enter" => 13,
            "Escape" => 27,
            _ => 0,
        };
        let modifiers = if shift { 8 } else { 0 };
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code,
                       "nativeVirtualKeyCode": code, "modifiers": modifiers}),
            );
        }
    }

    /// Types `text` into the focused element, as an input method would.
    pub fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({"text": text}));
    }

    /// Sets the viewport to `width` × `height`.
    pub fn resize(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    /// A PNG of the viewport (or of the whole page with `full_page`).
    pub fn screenshot(&mut self, path: &Path, full_page: bool) {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": full_page}),
        );
        let data = shot["data"].as_str().expect("screenshot data");
        let png = data_encoding::BASE64
            .decode(data.as_bytes())
            .expect("base64 PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("the artifact folder");
        }
        std::fs::write(path, png).expect("the screenshot is written");
    }

    /// Sends one command (to the page once attached) and reads until its answer.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if !self.session.is_empty() {
            message["sessionId"] = json!(self.session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .unwrap_or_else(|error| panic!("sending {method} to chromium: {error}"));
        loop {
            let frame = match self.socket.read() {
                Ok(frame) => frame,
                Err(tungstenite::Error::Io(error))
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    panic!("chromium did not answer {method} within {ANSWER_TIMEOUT:?}")
                }
                Err(error) => panic!("reading chromium's answer to {method}: {error}"),
            };
            let Message::Text(text) = frame else { continue };
            let value: Value = serde_json::from_str(text.as_str()).expect("CDP sends JSON");
            if value["id"] == json!(id) {
                if let Some(error) = value.get("error") {
                    panic!("{method} failed: {error}");
                }
                return value["result"].clone();
            }
            self.note_event(&value);
        }
    }

    fn note_event(&mut self, value: &Value) {
        let params = &value["params"];
        match value["method"].as_str() {
            Some("Runtime.exceptionThrown") => self.errors.push(format!(
                "uncaught exception: {}",
                params["exceptionDetails"]
            )),
            Some("Runtime.consoleAPICalled")
                if matches!(params["type"].as_str(), Some("error" | "assert")) =>
            {
                self.errors
                    .push(format!("console.error: {}", params["args"]))
            }
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => self
                .errors
                .push(format!("log error: {}", params["entry"]["text"])),
            _ => {}
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.socket.close(None);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Chromium writes its DevTools port and path to `DevToolsActivePort` in
/// the profile once it listens; waited for with a deadline.
fn devtools_url(profile: &Path) -> String {
    let file = profile.join("DevToolsActivePort");
    // Generous: on a 2-core machine running the other tests, several
    // Chromiums starting at once have taken over 30 s.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Some((port, path)) = text.split_once('\n')
            && !path.trim().is_empty()
        {
            return format!("ws://127.0.0.1:{}{}", port.trim(), path.trim());
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(profile.join("chromium.log")).unwrap_or_default();
            panic!("chromium did not open its DevTools port within 90 s; its log:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn connect(url: &str) -> TcpStream {
    let address = url
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .expect("host:port");
    TcpStream::connect(address).unwrap_or_else(|error| panic!("connecting to {address}: {error}"))
}
