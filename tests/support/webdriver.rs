//! A real headless Chromium driven over WebDriver (Debian's `chromium-driver`), for the
//! HTML report's end-to-end test: the W3C protocol is JSON over HTTP/1.1, so a small
//! blocking client over a TCP stream is all it takes.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A chromedriver and one browser session, both ended on drop.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium that keeps the console's messages.
    pub fn start() -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs (Debian's chromium-driver; tests/run-all.sh installs it)");
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                "--window-size=1400,1000", "--disable-dev-shm-usage"]},
            "goog:loggingPrefs": {"browser": "ALL"}
        }}});
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"].as_str().expect("a session id").to_string();
        b
    }

    /// One command: `path` under the session (or absolute when it starts with `/session`
    /// and no session exists yet); returns its `value`, panicking on a WebDriver error.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = if self.session.is_empty() {
            path.to_string()
        } else {
            format!("/session/{}{path}", self.session)
        };
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        // Headers, then exactly Content-Length bytes (chromedriver keeps the connection).
        let mut reply = Vec::new();
        let mut buf = [0u8; 65536];
        let body_at = loop {
            let n = s.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "chromedriver closed the connection on {method} {path}"
            );
            reply.extend_from_slice(&buf[..n]);
            if let Some(at) = reply.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&reply[..body_at]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .expect("chromedriver's reply has a Content-Length");
        while reply.len() < body_at + length {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "chromedriver's reply to {method} {path} ended early");
            reply.extend_from_slice(&buf[..n]);
        }
        let json = String::from_utf8_lossy(&reply[body_at..body_at + length]).into_owned();
        let v: Value = serde_json::from_str(&json).unwrap();
        if v["value"].get("error").is_some() {
            panic!("WebDriver {method} {path}: {}", v["value"]);
        }
        v["value"].clone()
    }

    pub fn open(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns its value.
    pub fn run(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// The element `css` selects (its WebDriver reference).
    pub fn find(&self, css: &str) -> Value {
        self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        )
    }

    pub fn click(&self, element: &Value) {
        let id = element_id(element);
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    /// Types `text` into `element` (keys as WebDriver spells them: `\u{E007}` is Enter).
    pub fn keys(&self, element: &Value, text: &str) {
        let id = element_id(element);
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// The visible text of what `css` selects.
    pub fn text(&self, css: &str) -> String {
        let id = element_id(&self.find(css));
        self.call("GET", &format!("/element/{id}/text"), None)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// The browser console's messages so far (level, text).
    pub fn console(&self) -> Vec<(String, String)> {
        self.call("POST", "/se/log", Some(json!({"type": "browser"})))
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|m| {
                (
                    m["level"].as_str().unwrap_or("").to_string(),
                    m["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

fn element_id(element: &Value) -> String {
    element
        .as_object()
        .and_then(|o| o.values().next())
        .and_then(|v| v.as_str())
        .expect("an element reference")
        .to_string()
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let session = std::mem::take(&mut self.session);
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.call("DELETE", &format!("/session/{session}"), None)
            }));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
