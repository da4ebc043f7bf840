//! A headless Chromium driven through the DevTools protocol over `--remote-debugging-pipe`:
//! Chromium reads commands from its fd 3 and writes answers to its fd 4, each a JSON message
//! ended by a NUL byte. A shell `exec` puts our stdin/stdout pipes on those fds, so no
//! WebSocket, no port and no extra crate are needed, and nothing listens on the network.
//!
//! `chromium()` answers `None` (after a loud message) when no Chromium is installed, unless
//! `WS_REQUIRE_CHROMIUM=1` (set by `.ci/run`, which installs it), where that is a failure.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// `target/`, where the viewer tests write their screenshots.
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target/tmp is in target/")
        .to_path_buf()
}

/// The Chromium binary: `$WS_CHROMIUM`, else the first of Debian's and others' names on the PATH.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WS_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let paths = std::env::var_os("PATH")?;
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A running browser, killed on drop.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    /// Events received while waiting for answers.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
    stderr: PathBuf,
}

/// One page (a target with its session).
pub struct Page<'a> {
    browser: &'a mut Browser,
    session: String,
}

/// Starts a headless Chromium, or `None` when there is none and it is not required.
pub fn chromium() -> Option<Browser> {
    let required = std::env::var_os("WS_REQUIRE_CHROMIUM").is_some_and(|v| v == "1");
    let Some(binary) = find_chromium() else {
        assert!(
            !required,
            "WS_REQUIRE_CHROMIUM=1 but no chromium is on the PATH (.ci/run installs Debian's)"
        );
        eprintln!("\n*** no chromium on the PATH: SKIPPING the browser test (apt-get install chromium) ***\n");
        return None;
    };
    Some(Browser::launch(&binary))
}

impl Browser {
    fn launch(binary: &Path) -> Browser {
        let profile = tempfile::tempdir().expect("a profile directory");
        let stderr = profile.path().join("stderr.log");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>&2"#)
            .arg(binary)
            .args([
                "--headless=new",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--mute-audio",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("a log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let input = child.stdin.take().expect("piped");
        let output = child.stdout.take().expect("piped");
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(output);
            loop {
                let mut buf = Vec::new();
                match reader.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if buf.last() == Some(&0) {
                            buf.pop();
                        }
                        let Ok(v) = serde_json::from_slice::<Value>(&buf) else {
                            continue;
                        };
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Browser {
            child,
            input,
            messages,
            next_id: 1,
            events: Vec::new(),
            _profile: profile,
            stderr,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends a command (to a page's session when given) and waits for its answer.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.input.write_all(&bytes).expect("write to chromium");
        self.input.flush().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(v) if v["id"] == json!(id) => {
                    if let Some(e) = v.get("error") {
                        panic!("{method}: {e}");
                    }
                    return v["result"].clone();
                }
                Ok(v) => self.events.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "{method}: no answer in 60 s; chromium said:\n{}",
                        self.log()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{method}: chromium exited; it said:\n{}", self.log())
                }
            }
        }
    }

    /// Lets pages download files into `dir` (a live page's "Save recording").
    pub fn allow_downloads(&mut self, dir: &Path) {
        self.call(
            None,
            "Browser.setDownloadBehavior",
            json!({ "behavior": "allow", "downloadPath": dir.to_string_lossy() }),
        );
    }

    /// Opens a new page (a blank tab) of `width` × `height` CSS pixels.
    pub fn page(&mut self, width: u32, height: u32) -> Page<'_> {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target["targetId"], "flatten": true }),
        );
        let session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_owned();
        let mut page = Page {
            browser: self,
            session,
        };
        page.call("Page.enable", json!({}));
        page.call("Runtime.enable", json!({}));
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        );
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Page<'_> {
    /// A command in this page's session.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.browser.call(Some(&session), method, params)
    }

    /// Emulates `prefers-reduced-motion: reduce` (or clears the emulation).
    pub fn reduce_motion(&mut self, on: bool) {
        let value = if on { "reduce" } else { "no-preference" };
        self.call(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-reduced-motion", "value": value }] }),
        );
    }

    /// Opens `file` and waits until `expression` is true (e.g. the page says it is ready).
    pub fn open(&mut self, file: &Path, ready: &str) {
        self.open_at(file, "", ready);
    }

    /// [`Page::open`] with a URL fragment (`#replay`, or empty).
    pub fn open_at(&mut self, file: &Path, fragment: &str, ready: &str) {
        let url = format!(
            "file://{}{fragment}",
            file.canonicalize().unwrap().display()
        );
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_for(ready, Duration::from_secs(60));
    }

    /// Moves the viewer's tick slider to `frame`, as a user dragging it would.
    pub fn slide_to(&mut self, frame: u64) {
        self.eval(&format!(
            "(() => {{ const s = document.getElementById('slider'); s.value = '{frame}'; \
             s.dispatchEvent(new Event('input')); }})()"
        ));
    }

    /// Evaluates a JavaScript expression and returns its value (JSON).
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expression}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Polls `expression` until it is `true`.
    pub fn wait_for(&mut self, expression: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let r = self.call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            );
            if r["result"]["value"] == json!(true) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{expression}` still not true after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clicks the middle of the element with this id, as a mouse would.
    pub fn click(&mut self, id: &str) {
        let rect = self.eval(&format!(
            "(() => {{ const r = document.getElementById({id:?}).getBoundingClientRect(); \
             return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ));
        let (x, y) = (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            );
        }
    }

    /// Presses and releases a key (`key` as the DOM names it, e.g. `ArrowRight`, `" "`).
    pub fn press(&mut self, key: &str) {
        let (code, vk) = match key {
            "ArrowRight" => ("ArrowRight", 39),
            "ArrowLeft" => ("ArrowLeft", 37),
            "Home" => ("Home", 36),
            "End" => ("End", 35),
            " " => ("Space", 32),
            "." => ("Period", 190),
            "," => ("Comma", 188),
            "r" => ("KeyR", 82),
            "ArrowUp" => ("ArrowUp", 38),
            "ArrowDown" => ("ArrowDown", 40),
            "w" => ("KeyW", 87),
            "a" => ("KeyA", 65),
            "s" => ("KeyS", 83),
            "d" => ("KeyD", 68),
            other => panic!("no key code for {other:?}"),
        };
        for kind in ["keyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({ "type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk }),
            );
        }
    }

    /// A PNG of the page.
    pub fn screenshot(&mut self) -> Vec<u8> {
        let r = self.call("Page.captureScreenshot", json!({ "format": "png" }));
        base64_decode(r["data"].as_str().expect("PNG data"))
    }
}

/// Standard base64 (the screenshot's encoding).
pub fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = text.bytes().filter(|&b| b != b'=' && b != b'\n').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}
