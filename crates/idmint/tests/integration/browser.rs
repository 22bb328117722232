//! The operator's page (`/ui`) in a real browser: Debian's Chromium, headless, driven over
//! WebDriver by its ChromeDriver (both installed by `tests/browser/setup` when missing), against
//! real nodes under load.
//!
//! What a person would check by looking: the page loads with no error in the console, shows
//! the node, its worker and its tags, the chart moves, the tags sort and filter, the decoder
//! decodes Discord's documented ID, Leaf's `/cache` and `/db` lead to their views, the page
//! fits a phone's width, follows the system's dark and light schemes, and asks for a token when
//! the node has tokens. Every step types and clicks as a person does (WebDriver's element
//! commands), and reads what is on the page, not what the API answered.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::{free_port, sqlite_url, Server};
use crate::security::{address, folder, http, Resp};

/// How long a step may take to show on the page (it polls every second).
const SHOWS_WITHIN: Duration = Duration::from_secs(30);
/// WebDriver's name for an element reference in JSON.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// Discord's documented snowflake: 2016-04-30 11:18:25.796 UTC, worker 1, process 0, increment 7.
const DISCORD_ID: &str = "175928847299117063";

/// Where `tests/browser/setup` found Chromium and ChromeDriver.
struct Installed {
    chromium: String,
    chromedriver: String,
}

/// Installs Chromium and ChromeDriver once per test run.
fn installed() -> &'static Installed {
    static INSTALLED: OnceLock<Installed> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let [chromium, chromedriver] =
            crate::common::run_setup("tests/browser/setup", &["chromium", "chromedriver"])
                .try_into()
                .expect("two values");
        Installed {
            chromium,
            chromedriver,
        }
    })
}

/// A ChromeDriver process on a loopback port, stopped when dropped.
struct Driver {
    child: Child,
    addr: SocketAddr,
    /// Browser profiles and failure screenshots.
    dir: PathBuf,
}

impl Driver {
    fn start(name: &str) -> Self {
        let port = free_port();
        let dir = folder(name);
        let log = std::fs::File::create(dir.join("chromedriver.log")).unwrap();
        // Its own process group: the browsers it starts join it, and all go together at drop,
        // whether or not the test reached its sessions' close.
        let child = Command::new(&installed().chromedriver)
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("chromedriver did not start");
        let driver = Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir,
        };
        let started = Instant::now();
        while !driver
            .try_call("GET", "/status", None)
            .is_some_and(|(_, v)| v["value"]["ready"] == true)
        {
            assert!(
                started.elapsed() < SHOWS_WITHIN,
                "chromedriver not ready; see {}",
                driver.dir.display()
            );
            thread::sleep(Duration::from_millis(100));
        }
        driver
    }

    /// One WebDriver call: the status and the JSON answer, or `None` when nothing answers.
    fn try_call(&self, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
        let body = body.map_or(String::new(), Value::to_string);
        let mut stream = TcpStream::connect(self.addr).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .ok()?;
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        stream.write_all(request.as_bytes()).ok()?;
        // ChromeDriver keeps the connection open whatever the request says: read the head,
        // then exactly the body its length gives.
        let mut reader = BufReader::new(stream);
        let mut status_line = String::new();
        reader.read_line(&mut status_line).ok()?;
        let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).ok()?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().ok()?;
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        Some((status, serde_json::from_slice(&body).ok()?))
    }

    /// A WebDriver call that must succeed: its `value`.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let (status, answer) = self
            .try_call(method, path, body)
            .unwrap_or_else(|| panic!("chromedriver did not answer {method} {path}"));
        assert_eq!(status, 200, "{method} {path}: {answer}");
        answer["value"].clone()
    }

    /// A new headless browser session; `mobile` emulates a phone (390 CSS px wide, touch).
    fn session(&self, name: &str, mobile: bool) -> Session<'_> {
        let profile = self.dir.join(format!("profile-{name}"));
        let mut options = json!({
            "binary": installed().chromium,
            // As root in a container, with no network beyond loopback: no sandbox, no GPU, and
            // none of Chromium's own calls home (refused here, and noise in the log).
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--disable-quic", "--disable-crash-reporter",
                     "--disable-breakpad", "--window-size=1280,900",
                     format!("--user-data-dir={}", profile.display())],
        });
        if mobile {
            options["mobileEmulation"] = json!({
                "deviceMetrics": { "width": 390, "height": 844, "pixelRatio": 3.0, "touch": true },
            });
        }
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
            "goog:loggingPrefs": { "browser": "ALL" },
        } } });
        let id = self.call("POST", "/session", Some(&capabilities))["sessionId"]
            .as_str()
            .expect("a session ID")
            .to_owned();
        Session {
            driver: self,
            id,
            name: name.to_owned(),
            errors: Vec::new(),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

/// One browser session: a page a person looks at.
struct Session<'a> {
    driver: &'a Driver,
    id: String,
    name: String,
    /// The console's errors read so far (the driver hands each entry out once).
    errors: Vec<String>,
}

impl Session<'_> {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.id);
        self.driver.call(method, &path, body.as_ref())
    }

    fn open(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    fn run(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// Waits until `script` returns something other than `null` or `false`, and returns it.
    /// On a timeout: a screenshot and the page's text, for whoever reads the failure.
    fn wait_for(&self, what: &str, script: &str) -> Value {
        let started = Instant::now();
        loop {
            let value = self.run(script, json!([]));
            if !(value.is_null() || value == false) {
                return value;
            }
            if started.elapsed() > SHOWS_WITHIN {
                let shot = self.screenshot(&format!("failed-{}", self.name));
                let text = self.run("return document.body.innerText.slice(0, 3000)", json!([]));
                panic!(
                    "{}: the page did not show {what} within {SHOWS_WITHIN:?}\nscreenshot: {}\npage:\n{}",
                    self.name,
                    shot.display(),
                    text.as_str().unwrap_or_default()
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn element(&self, css: &str) -> String {
        let found = self.call(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        );
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    fn click(&self, css: &str) {
        let element = self.element(css);
        self.call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    /// Clears the field and types `text` into it, key by key.
    fn type_into(&self, css: &str, text: &str) {
        let element = self.element(css);
        self.call(
            "POST",
            &format!("/element/{element}/clear"),
            Some(json!({})),
        );
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Shows a view through its link in the page's navigation, as a person does.
    fn show(&self, view: &str) {
        self.click(&format!("nav a[data-view='{view}']"));
        self.wait_for(
            &format!("the {view} view"),
            &format!("return document.querySelector('section#{view}').classList.contains('on')"),
        );
    }

    /// The console's entries at level SEVERE since the last read, kept in `errors`.
    fn read_console(&mut self) -> Vec<String> {
        let entries = self.call("POST", "/se/log", Some(json!({ "type": "browser" })));
        let new: Vec<String> = entries
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
            .collect();
        self.errors.extend(new.iter().cloned());
        new
    }

    fn screenshot(&self, name: &str) -> PathBuf {
        let path = self.driver.dir.join(format!("{name}.png"));
        if let Some(png) = self.call("GET", "/screenshot", None).as_str() {
            if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(png) {
                let _ = std::fs::write(&path, bytes);
            }
        }
        path
    }

    /// Emulates the system's colour scheme (Chrome DevTools Protocol, through the driver).
    fn color_scheme(&self, scheme: &str) {
        self.call(
            "POST",
            "/goog/cdp/execute",
            Some(json!({ "cmd": "Emulation.setEmulatedMedia", "params": {
                "features": [{ "name": "prefers-color-scheme", "value": scheme }] } })),
        );
    }

    fn close(self) {
        self.call("DELETE", "", None);
    }
}

/// Traffic of both kinds until dropped: `orders` ten times busier than `invoices`, `payments`
/// a trickle, and snowflakes over HTTP.
struct Load {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Load {
    fn start(server: &Server, token: Option<&str>) -> Self {
        let (web, redis) = (address(&server.http), address(&server.resp));
        let token = token.map(str::to_owned);
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut resp = Resp::connect(redis);
            if let Some(token) = &token {
                assert_eq!(resp.call(&["AUTH", token]), "+OK");
            }
            while !running.load(Ordering::Relaxed) {
                assert!(resp.call(&["INCRBY", "orders", "200"]).starts_with(':'));
                assert!(resp.call(&["INCRBY", "invoices", "20"]).starts_with(':'));
                assert!(resp.call(&["INCR", "payments"]).starts_with(':'));
                let (status, _, body) =
                    http(web, "GET", "/v1/snowflake?count=50", token.as_deref());
                assert_eq!(status, 200, "{body}");
                thread::sleep(Duration::from_millis(20));
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let ended = thread.join();
            if !thread::panicking() {
                ended.expect("the load thread failed");
            }
        }
    }
}

/// The rows of the tags table as shown: the first cell of each.
const TAG_ROWS: &str =
    "return [...document.querySelectorAll('#tag-table tbody tr')].map(r => r.cells[0].textContent)";

#[test]
fn the_operator_page_shows_a_node_under_load_in_a_real_browser() {
    let server = Server::start_with(
        &sqlite_url("browser"),
        "browser-node",
        &["--layout", "discord"],
    );
    let web = address(&server.http);
    let base = server.http.clone();
    let (_, _, node) = http(web, "GET", "/v1/node", None);
    let worker = serde_json::from_str::<Value>(&node).unwrap()["worker_id"].to_string();
    let load = Load::start(&server, None);
    let driver = Driver::start("browser-open");
    let mut page = driver.session("desktop", false);

    // The overview: the node, its worker, the store's and the requests' latency, with units.
    page.open(&format!("{base}/ui"));
    page.wait_for(
        "the node's name",
        "return document.getElementById('who').textContent === 'browser-node'",
    );
    let cards = page.wait_for(
        "the worker ID card",
        "const t = document.getElementById('cards').innerText; return t.includes('worker ID') && t",
    );
    assert!(cards.as_str().unwrap().contains(&worker), "{cards}");
    page.wait_for(
        "the store's call latency and the ID requests' p99, with units",
        r"const t = document.getElementById('store-cards').innerText;
          return /store call p99\s+[\d.]+ (µs|ms|s)/.test(t)
            && /p99 of the last 10 s\s+≤ [\d.]+ (µs|ms|s)/.test(t) && t",
    );

    // The chart moves: more points as the page polls, and the segment line off the floor.
    let points = "return Number(document.getElementById('chart').dataset.points || 0)";
    page.wait_for("3 points on the chart", &format!("{points} >= 3"));
    let before = page.run(points, json!([])).as_u64().unwrap();
    let line = "return document.querySelector('#chart polyline').getAttribute('points')";
    let drawn = page.run(line, json!([]));
    page.wait_for(
        "the chart moving",
        &format!("{points} > {before} && document.querySelector('#chart polyline').getAttribute('points') !== {drawn}"),
    );
    page.wait_for(
        "a segment rate above zero on the chart",
        "return document.querySelector('#chart polyline').getAttribute('points').split(' ')
           .some(p => Number(p.split(',')[1]) < 199)",
    );

    // The tags, the busiest first; filtered and sorted by a person's typing and clicks.
    page.show("tags");
    page.wait_for(
        "the three tags, orders first",
        &format!(
            "const r = (() => {{ {TAG_ROWS} }})(); return r.length === 3 && r[0] === 'orders' && r"
        ),
    );
    let row = page.run(
        "return document.querySelector('#tag-table tbody tr').innerText",
        json!([]),
    );
    let row = row.as_str().unwrap();
    assert!(
        row.contains("/s") && (row.contains(" s") || row.contains(" min") || row.contains('∞')),
        "units: {row}"
    );
    assert!(row.contains("ready") || row.contains("not yet"), "{row}");
    page.type_into("#filter", "inv");
    page.wait_for(
        "only invoices",
        &format!(
            "const r = (() => {{ {TAG_ROWS} }})(); return r.length === 1 && r[0] === 'invoices'"
        ),
    );
    page.type_into("#filter", "");
    page.run(
        "document.getElementById('filter').dispatchEvent(new Event('input'))",
        json!([]),
    );
    page.click("#tag-table th[data-key='tag']");
    page.wait_for(
        "tags sorted by name, descending",
        &format!("return JSON.stringify((() => {{ {TAG_ROWS} }})()) === '[\"payments\",\"orders\",\"invoices\"]'"),
    );
    page.click("#tag-table th[data-key='tag']");
    page.wait_for(
        "tags sorted by name, ascending",
        &format!("return JSON.stringify((() => {{ {TAG_ROWS} }})()) === '[\"invoices\",\"orders\",\"payments\"]'"),
    );

    // The workers: this node's lease, live.
    page.show("workers");
    let row = page.wait_for(
        "this node's lease",
        "const r = [...document.querySelectorAll('#worker-table tbody tr')].map(r => r.innerText)
           .find(t => t.includes('browser-node')); return r || null",
    );
    let row = row.as_str().unwrap();
    assert!(
        row.starts_with(&worker) && row.contains("live (this node)") && row.contains("UTC"),
        "{row}"
    );

    // The decoder: Discord's documented ID in the discord layout, typed and submitted.
    page.show("decode");
    page.type_into("#decode-id", DISCORD_ID);
    page.click("#decode-form button");
    let field = |name: &str| {
        format!("(document.querySelector('dd[data-field=\"{name}\"]') || {{}}).textContent")
    };
    page.wait_for(
        "the decoded time",
        &format!(
            "return {} === '2016-04-30T11:18:25.796Z'",
            field("time (UTC)")
        ),
    );
    let parts = page.run(
        &format!(
            "return [{}, {}, {}, {}]",
            field("dc"),
            field("worker"),
            field("seq"),
            field("time (local)")
        ),
        json!([]),
    );
    assert_eq!(
        parts.as_array().unwrap()[..3],
        [json!("1"), json!("0"), json!("7")],
        "{parts}"
    );
    assert!(parts[3].as_str().unwrap().contains("2016"), "{parts}");
    // Not an ID: a clear message on the page, and no request that would fail in the console.
    page.type_into("#decode-id", "12ab");
    page.click("#decode-form button");
    page.wait_for(
        "the decoder's error",
        &format!("return ({} || '').startsWith('not an ID')", field("error")),
    );

    // Leaf's monitor paths lead to the matching views.
    for (path, view, shows) in [
        ("/cache", "tags", "#tag-table tbody tr"),
        ("/db", "workers", "#worker-table tbody tr"),
    ] {
        page.open(&format!("{base}{path}"));
        page.wait_for(
            &format!("{path} leading to the {view} view"),
            &format!(
                "return location.pathname === '/ui' && location.hash === '#{view}'
                   && document.querySelector('section#{view}').classList.contains('on')
                   && document.querySelectorAll('{shows}').length > 0"
            ),
        );
    }

    // Dark and light follow the system.
    let background = "return getComputedStyle(document.body).backgroundColor";
    page.color_scheme("dark");
    page.wait_for(
        "the dark scheme",
        &format!("{background} === 'rgb(13, 17, 23)'"),
    );
    page.color_scheme("light");
    page.wait_for(
        "the light scheme",
        &format!("{background} === 'rgb(255, 255, 255)'"),
    );

    page.read_console();
    assert!(page.errors.is_empty(), "console errors: {:#?}", page.errors);
    page.close();

    // A phone's width: every view fits without scrolling sideways (the tables scroll inside
    // their own box).
    let mut phone = driver.session("phone", true);
    phone.open(&format!("{base}/ui"));
    phone.wait_for(
        "the overview on a phone",
        "return document.getElementById('cards').children.length > 0",
    );
    assert_eq!(phone.run("return window.innerWidth", json!([])), 390);
    for view in ["overview", "tags", "workers", "decode"] {
        phone.show(view);
        thread::sleep(Duration::from_millis(1200));
        let widths = phone.run(
            "return [document.documentElement.scrollWidth, window.innerWidth]",
            json!([]),
        );
        assert!(
            widths[0].as_u64() <= widths[1].as_u64(),
            "{view} is wider than the phone: {widths}"
        );
    }
    phone.read_console();
    assert!(
        phone.errors.is_empty(),
        "console errors: {:#?}",
        phone.errors
    );
    phone.close();
    drop(load);
    server.stop();
}

#[test]
fn with_tokens_the_page_asks_for_one_and_then_shows_everything() {
    const ADMIN: &str = "browser-admin-token-0123456789";
    let server = Server::start_with(
        &sqlite_url("browser-token"),
        "token-node",
        &["--admin-token", ADMIN],
    );
    let load = Load::start(&server, Some(ADMIN));
    let driver = Driver::start("browser-token");
    let mut page = driver.session("token", false);
    page.open(&format!("{}/ui#tags", server.http));
    page.wait_for(
        "the token form",
        "return getComputedStyle(document.getElementById('token')).display !== 'none'",
    );
    // Before a token, the page's reads were refused: the console shows those refusals only.
    let refused = page.read_console();
    assert!(
        refused.iter().all(|e| e.contains("status of 401")),
        "{refused:#?}"
    );
    page.type_into("#token-value", ADMIN);
    page.click("#token button");
    page.wait_for(
        "the node after the token",
        "return document.getElementById('who').textContent === 'token-node'
           && getComputedStyle(document.getElementById('token')).display === 'none'",
    );
    page.wait_for(
        "the tags after the token",
        &format!("const r = (() => {{ {TAG_ROWS} }})(); return r.includes('orders') && r"),
    );
    page.show("workers");
    page.wait_for(
        "this node's lease",
        "return document.getElementById('worker-table').innerText.includes('token-node')",
    );
    // Once the token is given, nothing more goes wrong.
    let after = page.read_console();
    assert!(
        after.is_empty(),
        "console errors after the token: {after:#?}"
    );
    page.close();
    drop(load);
    server.stop();
}

/// Tags of any text (issue 27) show on the page as the text they are: CJK and an emoji as
/// written, and a tag that looks like markup as its characters, never as an element or a
/// script that runs.
#[test]
fn tags_of_any_text_show_as_text() {
    let server = Server::start(&sqlite_url("browser-text-tags"), "text-tags-node");
    let web = address(&server.http);
    let tags = [
        "订单 🦀",
        "<img src=x onerror=\"window.injected=1\">",
        "a&amp;b '\"' </td>",
    ];
    for tag in tags {
        let path = format!("/v1/segment/{}", crate::common::path_segment(tag));
        let (status, _, body) = http(web, "GET", &path, None);
        assert_eq!(status, 200, "{tag}: {body}");
    }
    let driver = Driver::start("browser-text-tags");
    let mut page = driver.session("text-tags", false);
    page.open(&format!("{}/ui#tags", server.http));
    let shown = page.wait_for(
        "the three tags",
        &format!("const r = (() => {{ {TAG_ROWS} }})(); return r.length === 3 && r"),
    );
    let mut shown: Vec<String> = serde_json::from_value(shown).unwrap();
    shown.sort();
    let mut expected: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
    expected.sort();
    assert_eq!(shown, expected);
    let injected = page.run(
        "return [window.injected === undefined,
                 document.querySelectorAll('#tag-table img').length,
                 document.querySelectorAll('#tag-table tbody td').length % 7]",
        json!([]),
    );
    assert_eq!(
        injected,
        json!([true, 0, 0]),
        "markup in a tag became markup"
    );
    assert!(page.read_console().is_empty());
    page.close();
    server.stop();
}
