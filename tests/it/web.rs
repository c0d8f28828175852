//! The web view under `/ui/` on the real daemon: the token (a login form and a cookie, never
//! in an address or a log), the Content-Security-Policy on every answer, hostile text shown as
//! text, paging bounded; and, in a real headless Chromium driven over WebDriver
//! (`chromium`, `chromium-driver`), every page without a console error, the same figures as
//! the JSON API, filters, links, the keyboard, and a screenshot of each page.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::api::addr;
use crate::support::*;

const TOKEN: &str = "w3b-t0ken-5ecret-91c2";

/// The policy every `/ui/` answer carries (as `api::ui::CSP`).
const CSP: &str =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The daemon on a copy of the demo, with `[http] token_file` when `token` is set; returns
/// once its first pass is done (`/readyz`).
fn daemon(s: &Scratch, token: bool) -> (Daemon, String) {
    let mut http = String::from("[http]\nlisten = \"127.0.0.1:0\"\n");
    if token {
        let file = s.dir.path().join("token");
        std::fs::write(&file, format!("{TOKEN}\n")).expect("token");
        http.push_str(&format!("token_file = {:?}\n", file.display().to_string()));
    }
    let d = Daemon::start(s, &http, &[]);
    let a = addr(s);
    wait_for("the first pass", Duration::from_secs(60), || http_get(&a, "/readyz").is_some_and(|(c, _)| c == 200));
    (d, a)
}

fn get(a: &str, path: &str, cookie: Option<&str>) -> HttpAnswer {
    let c = cookie.map(|c| format!("fedsched_ui={c}"));
    let headers: Vec<(&str, &str)> = c.iter().map(|c| ("Cookie", c.as_str())).collect();
    http_request(a, "GET", path, &headers, b"")
}

fn api(a: &str, path: &str) -> Value {
    let r = http_request(a, "GET", path, &[("Authorization", &format!("Bearer {TOKEN}"))], b"");
    assert_eq!(r.code, 200, "{path}: {}", r.body);
    serde_json::from_str(&r.body).expect("json")
}

fn login(a: &str, token: &str) -> HttpAnswer {
    let body = format!("token={}", token.replace('-', "%2D"));
    http_request(a, "POST", "/ui/login", &[("Content-Type", "application/x-www-form-urlencoded")], body.as_bytes())
}

const PAGES: [&str; 5] =
    ["/ui/", "/ui/placements", "/ui/workloads/shop/Deployment/web", "/ui/clusters/eu-west-a", "/ui/plan"];

/// With `[http] token_file`: a page without the token sends the browser to the login form and
/// shows nothing; the form takes the token in its body and answers with an HttpOnly,
/// SameSite=Strict cookie that is not the token and opens the web view only (not the JSON
/// API); a wrong token is 401; every answer carries the Content-Security-Policy; the token
/// appears in no page, no link, no header the daemon sends and not in its log.
#[test]
fn the_web_view_needs_the_token_and_never_shows_it() {
    let s = Scratch::with_demo();
    let (d, a) = daemon(&s, true);
    for page in PAGES {
        let r = get(&a, page, None);
        assert_eq!((r.code, r.headers.get("location").map(String::as_str)), (303, Some("/ui/login")), "{page}");
        assert!(!r.body.contains("eu-west"), "{page} shows nothing without the token: {}", r.body);
        assert_eq!(r.headers.get("content-security-policy").map(String::as_str), Some(CSP), "{page}");
    }
    let form = get(&a, "/ui/login", None);
    assert_eq!(form.code, 200);
    assert!(form.body.contains("<form method=\"post\" action=\"/ui/login\""), "{}", form.body);
    assert_eq!(login(&a, "wrong").code, 401);
    let r = login(&a, TOKEN);
    assert_eq!((r.code, r.headers.get("location").map(String::as_str)), (303, Some("/ui/")), "{}", r.body);
    let set = r.headers.get("set-cookie").expect("a session cookie").clone();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(set.contains(attr), "{set}");
    }
    let cookie = set.split(';').next().and_then(|c| c.strip_prefix("fedsched_ui=")).expect("cookie value").to_string();
    assert!(!cookie.contains(TOKEN) && cookie.len() == 64, "the cookie is a MAC of the token, not the token: {cookie}");
    for page in PAGES {
        let r = get(&a, page, Some(&cookie));
        assert_eq!(r.code, 200, "{page}: {}", r.body);
        assert_eq!(r.headers.get("content-security-policy").map(String::as_str), Some(CSP), "{page}");
        assert_eq!(r.headers.get("x-content-type-options").map(String::as_str), Some("nosniff"));
        assert!(r.headers.get("content-type").is_some_and(|c| c.starts_with("text/html")), "{page}");
        assert!(!r.body.contains(TOKEN) && !r.headers.values().any(|v| v.contains(TOKEN)), "{page} shows the token");
        assert!(!r.body.contains("<script"), "{page} has a script");
    }
    let bearer = http_request(&a, "GET", "/ui/", &[("Authorization", &format!("Bearer {TOKEN}"))], b"");
    assert_eq!(bearer.code, 200, "the API's bearer header opens the pages too");
    assert_eq!(get(&a, "/ui/", Some(&"0".repeat(64))).code, 303, "a forged cookie");
    let api_with_cookie = get(&a, "/api/v1/status", Some(&cookie));
    assert_eq!(api_with_cookie.code, 401, "the cookie opens the web view, not the API");
    // Bodies and queries are bounded.
    assert_eq!(announced_body(&a, "/ui/login", 1 << 20), 413, "refused from its Content-Length, before it is read");
    let long = format!("/ui/placements?namespace={}", "x".repeat(5000));
    assert_eq!(get(&a, &long, Some(&cookie)).code, 414);
    let (_, log) = d.stop();
    assert!(log.contains("web view: a login with a wrong token"), "{log}");
    assert!(!log.contains(TOKEN), "the token is in the daemon's log");
}

/// Without `[http] token_file` on a loopback listener the pages are open, as the API is; the
/// stylesheet and icon are served from the binary.
#[test]
fn the_web_view_is_open_on_loopback_without_a_token_file() {
    let s = Scratch::with_demo();
    let (_d, a) = daemon(&s, false);
    for page in PAGES {
        assert_eq!(get(&a, page, None).code, 200, "{page}");
    }
    let r = get(&a, "/ui/login", None);
    assert_eq!((r.code, r.headers.get("location").map(String::as_str)), (303, Some("/ui/")));
    let css = get(&a, "/ui/style.css", None);
    assert!(css.code == 200 && css.headers["content-type"].starts_with("text/css") && css.body.contains("--fg"));
    assert_eq!(get(&a, "/ui/icon.svg", None).headers["content-type"], "image/svg+xml");
    assert_eq!(get(&a, "/ui/clusters/nowhere", None).code, 404);
    assert_eq!(get(&a, "/ui/workloads/shop/Deployment/nothing", None).code, 404);
}

/// Text from the repository (a ConfigMap's data in a rendered file, a Cluster's label), from
/// the address (a path segment echoed in a 404) and from the query (a filter echoed in its
/// form) reaches the pages as text: no tag of it survives.
#[test]
fn hostile_text_reaches_the_pages_as_text() {
    let s = Scratch::with_demo();
    let web = s.policies().join("apps/web.yaml");
    let text = std::fs::read_to_string(&web).expect("web.yaml");
    std::fs::write(&web, text.replace("  CACHE_ENABLED: \"on\"\n", "  CACHE_ENABLED: \"<script>alert(1)</script>\"\n"))
        .expect("write");
    let eu = s.policies().join("clusters/eu-west.yaml");
    let text = std::fs::read_to_string(&eu).expect("eu-west.yaml");
    std::fs::write(
        &eu,
        text.replacen("    tier: general\n", "    tier: general\n    note: \"<img src=x onerror=alert(2)>\"\n", 1),
    )
    .expect("write");
    let (_d, a) = daemon(&s, false);
    let hostile = [
        ("/ui/workloads/shop/ConfigMap/web-config", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("/ui/clusters/eu-west-a", "&lt;img src=x onerror=alert(2)&gt;"),
        ("/ui/", "&lt;img src=x onerror=alert(2)&gt;"),
        ("/ui/placements?label=%3Cscript%3Ealert(3)%3C%2Fscript%3E", "&lt;script&gt;alert(3)&lt;/script&gt;"),
        ("/ui/clusters/%3Cscript%3Ealert(4)%3C%2Fscript%3E", "&lt;script&gt;alert(4)&lt;/script&gt;"),
        ("/ui/placements?state=%3Cscript%3Ealert(5)", "&lt;script&gt;alert(5)"),
    ];
    for (page, shown) in hostile {
        let r = get(&a, page, None);
        assert!(r.body.contains(shown), "{page} ({}) shows the text escaped:\n{}", r.code, r.body);
        assert!(!r.body.contains("<script") && !r.body.contains("<img"), "{page}: markup got through:\n{}", r.body);
    }
}

/// The Placements page and `/api/v1/placements` are one page of rows and one window of
/// columns, whatever a request asks: at most 200 rows and 60 columns, and the page shows the
/// API's rows.
#[test]
fn placements_are_paged_within_bounds() {
    let s = Scratch::with_demo();
    let (_d, a) = daemon(&s, false);
    let all = api(&a, "/api/v1/placements");
    assert_eq!(all["workloads"]["total"], 10, "{all:#}");
    let p = api(&a, "/api/v1/placements?perPage=3&page=2&clustersPerPage=2&clusterPage=3");
    assert_eq!(p["rows"].as_array().map(Vec::len), Some(3));
    assert_eq!((p["workloads"]["pages"].as_u64(), p["clusters"]["pages"].as_u64()), (Some(4), Some(3)));
    assert_eq!(p["clusters"]["names"], json!(["us-east-legacy"]), "the third window of two clusters");
    assert_eq!(p["rows"][0]["workload"], all["rows"][3]["workload"], "row 4 is the first of page 2");
    assert_eq!(p["rows"][0]["cells"].as_array().map(Vec::len), Some(1), "a cell per column of the window");
    let huge = api(&a, "/api/v1/placements?perPage=1000000&clustersPerPage=1000000");
    assert_eq!((huge["workloads"]["perPage"].as_u64(), huge["clusters"]["perPage"].as_u64()), (Some(200), Some(60)));
    let ml = api(&a, "/api/v1/placements?namespace=ml");
    assert_eq!(ml["workloads"]["total"], 2, "{ml:#}");
    let uns = api(&a, "/api/v1/placements?state=Unschedulable");
    assert_eq!(uns["rows"][0]["workload"]["name"], "reindex", "{uns:#}");
    // The policy filter: a policy's name gives the rows that policy claims, and only those.
    let of_policy = |r: &Value| r["policy"].as_str().and_then(|p| p.rsplit('/').next()).map(str::to_string);
    let rows = all["rows"].as_array().expect("rows");
    let name = of_policy(&rows[0]).expect("a policy");
    let want = rows.iter().filter(|r| of_policy(r).as_deref() == Some(&name)).count();
    let by = api(&a, &format!("/api/v1/placements?policy={name}"));
    assert_eq!(by["workloads"]["total"].as_u64(), Some(want as u64), "{name}: {by:#}");
    assert!(by["rows"].as_array().into_iter().flatten().all(|r| of_policy(r).as_deref() == Some(&name)), "{by:#}");
    assert!(want < rows.len(), "the filter leaves some out: {want} of {}", rows.len());
    let page = get(&a, &format!("/ui/placements?policy={name}"), None).body;
    assert_eq!(page.matches("<tr><th scope=\"row\">").count(), want, "{page}");
    let gpu = api(&a, "/api/v1/placements?label=tier%3Dgpu");
    assert_eq!(gpu["clusters"]["names"], json!(["us-east-gpu"]), "{gpu:#}");
    for bad in ["page=0", "perPage=x", "state=Odd", "what=1"] {
        let r = get(&a, &format!("/api/v1/placements?{bad}"), None);
        assert_eq!(r.code, 400, "{bad}: {}", r.body);
    }
    let page = get(&a, "/ui/placements?namespace=ml", None).body;
    assert_eq!(page.matches("<tr><th scope=\"row\">").count(), 2, "{page}");
    assert!(page.contains("href=\"/ui/workloads/ml/Deployment/reindex\""), "{page}");
}

// ------------------------------------------------------------------------------------------
// A real browser.

/// The WebDriver server to use: `FEDSCHED_CHROMEDRIVER` (CI sets it: then it must work), else
/// `chromedriver` on the PATH with `chromium` beside it; `None`: skipped, and said so.
fn chromedriver() -> Option<(PathBuf, PathBuf)> {
    let on_path = |name: &str| {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|f| f.is_file()))
    };
    let browser = std::env::var_os("FEDSCHED_CHROMIUM").map(PathBuf::from).or_else(|| on_path("chromium"));
    match std::env::var_os("FEDSCHED_CHROMEDRIVER").map(PathBuf::from) {
        Some(d) => {
            assert!(d.is_file(), "FEDSCHED_CHROMEDRIVER={} does not exist", d.display());
            Some((
                d,
                browser.expect("FEDSCHED_CHROMEDRIVER is set but there is no chromium (FEDSCHED_CHROMIUM or PATH)"),
            ))
        }
        None => match (on_path("chromedriver"), browser) {
            (Some(d), Some(b)) => Some((d, b)),
            _ => {
                skipped("no chromium and chromedriver (Debian: apt-get install chromium chromium-driver)");
                None
            }
        },
    }
}

/// A WebDriver session on a chromedriver this test started; both end when it drops.
struct Browser {
    driver: std::process::Child,
    addr: String,
    session: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            http_request(&self.addr, "DELETE", &format!("/session/{}", self.session), &[], b"")
        }));
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Browser {
    fn start(driver: &std::path::Path, chromium: &std::path::Path) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
        let child = std::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let addr = format!("127.0.0.1:{port}");
        let mut b = Browser { driver: child, addr, session: String::new() };
        wait_for("chromedriver", Duration::from_secs(30), || std::net::TcpStream::connect(&b.addr).is_ok());
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900", "--force-device-scale-factor=1"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["sessionId"].as_str().expect("a session").to_string();
        b
    }

    /// One WebDriver command; its `value`, or a panic with the driver's error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let r = http_request(&self.addr, method, path, &[("Content-Type", "application/json")], body.as_bytes());
        let v: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
        assert_eq!(r.code, 200, "WebDriver {method} {path}: {}", r.body);
        v["value"].clone()
    }

    fn cmd(&self, method: &str, what: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}/{what}", self.session), body)
    }

    fn go(&self, url: &str) {
        self.cmd("POST", "url", Some(json!({"url": url})));
    }

    fn url(&self) -> String {
        self.cmd("GET", "url", None).as_str().unwrap_or_default().to_string()
    }

    /// Waits until the address ends with `tail` (a key press that follows a link or submits a
    /// form returns before the navigation it starts).
    fn wait_url(&self, what: &str, cond: impl Fn(&str) -> bool) {
        wait_for(what, Duration::from_secs(30), || cond(&self.url()));
    }

    fn title(&self) -> String {
        self.cmd("GET", "title", None).as_str().unwrap_or_default().to_string()
    }

    /// The element a CSS selector finds first.
    fn find(&self, css: &str) -> String {
        let v = self.cmd("POST", "element", Some(json!({"using": "css selector", "value": css})));
        v.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).expect("element id").to_string()
    }

    fn click(&self, css: &str) {
        let e = self.find(css);
        self.cmd("POST", &format!("element/{e}/click"), Some(json!({})));
    }

    fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.cmd("POST", &format!("element/{e}/value"), Some(json!({"text": text})));
    }

    /// Presses keys on whatever has the focus (WebDriver key codes: Tab \u{E004}, Enter \u{E007}).
    fn keys(&self, keys: &str) {
        let mut actions = Vec::new();
        for k in keys.chars() {
            actions.push(json!({"type": "keyDown", "value": k.to_string()}));
            actions.push(json!({"type": "keyUp", "value": k.to_string()}));
        }
        self.cmd("POST", "actions", Some(json!({"actions": [{"type": "key", "id": "kb", "actions": actions}]})));
        self.cmd("DELETE", "actions", None);
    }

    /// The text of what has the focus.
    fn focused_text(&self) -> String {
        let v = self.cmd("GET", "element/active", None);
        let e = v.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).expect("active").to_string();
        self.cmd("GET", &format!("element/{e}/text"), None).as_str().unwrap_or_default().to_string()
    }

    /// Whether what has the focus is inside an element a selector finds.
    fn focus_is_in(&self, css: &str) -> bool {
        let script = "return document.activeElement !== null && document.activeElement.closest(arguments[0]) !== null";
        self.cmd("POST", "execute/sync", Some(json!({"script": script, "args": [css]}))) == json!(true)
    }

    /// The text of every cell of the rows a selector finds (one script, run by the driver
    /// outside the page's CSP).
    fn rows(&self, css: &str) -> Vec<Vec<String>> {
        let script = "return [...document.querySelectorAll(arguments[0])].map(r => [...r.children].map(c => c.textContent.trim()))";
        let v = self.cmd("POST", "execute/sync", Some(json!({"script": script, "args": [css]})));
        serde_json::from_value(v).expect("rows")
    }

    /// The text of every element a selector finds.
    fn texts(&self, css: &str) -> Vec<String> {
        let script = "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent.trim())";
        let v = self.cmd("POST", "execute/sync", Some(json!({"script": script, "args": [css]})));
        serde_json::from_value(v).expect("texts")
    }

    fn text_of(&self, css: &str) -> String {
        let e = self.find(css);
        self.cmd("GET", &format!("element/{e}/text"), None).as_str().unwrap_or_default().to_string()
    }

    /// Fails on any console message of level SEVERE (errors, CSP violations, failed loads)
    /// since the last call.
    fn assert_no_console_errors(&self, page: &str) {
        let log = self.cmd("POST", "se/log", Some(json!({"type": "browser"})));
        let errors: Vec<&Value> = log.as_array().into_iter().flatten().filter(|e| e["level"] == "SEVERE").collect();
        assert!(errors.is_empty(), "{page}: console errors: {errors:#?}");
    }

    /// Saves a screenshot of the viewport as `<dir>/<name>.png`.
    fn screenshot(&self, dir: &std::path::Path, name: &str) {
        use base64::Engine as _;
        let b64 = self.cmd("GET", "screenshot", None);
        let png = base64::engine::general_purpose::STANDARD.decode(b64.as_str().expect("base64")).expect("png");
        assert!(png.starts_with(b"\x89PNG"), "a PNG");
        std::fs::create_dir_all(dir).expect("screenshot dir");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("write screenshot");
    }
}

/// Where the screenshots go: `FEDSCHED_UI_SCREENSHOTS`, else `target/web-screenshots` (kept as
/// CI artefacts; the guide's come from `FEDSCHED_UI_SCREENSHOTS=docs/guide/ui`).
fn screenshot_dir() -> PathBuf {
    std::env::var_os("FEDSCHED_UI_SCREENSHOTS")
        .map(PathBuf::from)
        .map(|d| if d.is_absolute() { d } else { repo_root().join(d) })
        .unwrap_or_else(|| repo_root().join("target/web-screenshots"))
}

/// Text of a cell (`-` for null), as the pages print JSON values.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The demo in a real headless Chromium, logged in through the form: each page loads without
/// a console error and shows the API's figures; the Placements filter and the links between
/// pages work, and so does the keyboard; a screenshot of each page is kept.
#[test]
fn the_web_view_in_a_real_browser() {
    let Some((driver, chromium)) = chromedriver() else { return };
    let s = Scratch::with_demo();
    let (d, a) = daemon(&s, true);
    // A plan posted to the daemon (the Plan page shows the last one): shop/web's weights changed.
    let pr = s.dir.path().join("pr");
    copy_dir(&s.policies(), &pr);
    let shop = pr.join("policies/shop.yaml");
    let text = std::fs::read_to_string(&shop).expect("shop.yaml");
    std::fs::write(&shop, text.replacen("weight: 2", "weight: 5", 1)).expect("write");
    let plan = fedsched(&[
        "plan",
        "--config",
        &d.config.display().to_string(),
        "--policies",
        &pr.display().to_string(),
        "--state",
        &s.state().display().to_string(),
        "--out",
        &s.out().display().to_string(),
        "-o",
        "json",
    ]);
    let plan_doc: Value =
        serde_json::from_slice(&plan.stdout).unwrap_or_else(|e| panic!("{e}: {}", text_of_output(&plan)));
    wait_for("the daemon's log of the plan", Duration::from_secs(10), || d.stderr().contains("plan answered"));
    let shots = screenshot_dir();
    let b = Browser::start(&driver, &chromium);
    let base = format!("http://{a}");

    // Log in through the form: the token goes in the body, the address never shows it.
    b.go(&format!("{base}/ui/"));
    assert!(b.url().ends_with("/ui/login"), "sent to the login form: {}", b.url());
    b.assert_no_console_errors("login");
    b.screenshot(&shots, "login");
    b.type_into("#token", TOKEN);
    b.click("form.login button");
    b.wait_url("the Fleet page after the login", |u| u.ends_with("/ui/"));
    assert!(!b.url().contains(TOKEN), "{}", b.url());

    // Fleet: each cluster's replicas and CPU figures as /api/v1/clusters and /api/v1/resources.
    assert_eq!(b.title(), "Fleet · fedsched");
    b.assert_no_console_errors("fleet");
    let clusters = api(&a, "/api/v1/clusters");
    let resources = api(&a, "/api/v1/resources?by=region");
    let cards = b.rows(".card");
    for c in clusters["clusters"].as_array().expect("clusters") {
        let name = c["name"].as_str().expect("name");
        let card =
            cards.iter().find(|card| card.first().map(String::as_str) == Some(name)).expect("a card per cluster");
        let text = card.join(" ");
        assert!(text.contains(&format!("replicas {}", c["replicas"])), "{name}: {text}");
        let r = resources["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["clusters"].as_array().into_iter().flatten())
            .find(|x| x["name"] == name)
            .expect("in resources");
        // A bar with its figures for every dimension of the document (and normalised CPU).
        let dims: Vec<&str> =
            resources["dimensions"].as_array().expect("dims").iter().filter_map(Value::as_str).collect();
        assert!(dims.len() >= 3, "{dims:?}");
        for d in dims {
            let a = &r["resources"][d];
            let want = format!(
                "{d} {} allocated of {}, {} free",
                shown(&a["allocated"]),
                shown(&a["capacity"]),
                shown(&a["free"])
            );
            assert!(text.contains(&want), "{name}: {want} in {text}");
        }
        let n = &r["resources"]["cpu"]["normalised"];
        let f = |k: &str| n[k].as_f64().expect("normalised");
        let want =
            format!("cpu (normalised) {:.1} allocated of {:.1}, {:.1} free", f("allocated"), f("capacity"), f("free"));
        assert!(text.contains(&want), "{name}: {want} in {text}");
    }
    let bars = b.texts(".card meter").len();
    let figures = b.texts(".card .bar .fig").len();
    assert!(bars > 0 && bars == figures, "every bar has its figures as text: {bars} bars, {figures} figures");
    b.screenshot(&shots, "fleet");

    // The keyboard: the first Tab reaches the skip link, whose Enter takes the focus past the
    // navigation and banner into the content; from the top again, Tab reaches the navigation,
    // and Enter follows a link.
    b.keys("\u{E004}");
    assert_eq!(b.focused_text(), "Skip to the content", "Tab focuses the skip link first");
    b.keys("\u{E007}");
    b.wait_url("Enter on the skip link", |u| u.ends_with("/ui/#main"));
    b.keys("\u{E004}");
    assert!(b.focus_is_in("main"), "after the skip link, Tab stays in the content");
    b.go(&format!("{base}/ui/"));
    b.keys("\u{E004}\u{E004}");
    assert_eq!(b.focused_text(), "fedsched", "then the first link");
    b.keys("\u{E004}\u{E004}");
    assert_eq!(b.focused_text(), "Placements");
    b.keys("\u{E007}");
    b.wait_url("Enter to follow the link", |u| u.ends_with("/ui/placements"));

    // Placements: the matrix as /api/v1/placements; the namespace filter from the keyboard.
    b.assert_no_console_errors("placements");
    let m = api(&a, "/api/v1/placements");
    let rows = b.rows("table.matrix tbody tr");
    let api_rows = m["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), api_rows.len());
    for (row, want) in rows.iter().zip(api_rows) {
        let cells: Vec<String> = want["cells"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| match c {
                Value::Null => String::new(),
                c if c["replicas"].is_null() => "✓".into(),
                c => shown(&c["replicas"]),
            })
            .collect();
        assert_eq!(&row[2..], cells.as_slice(), "{row:?} against {want}");
        assert_eq!(row[1], shown(&want["state"]));
    }
    b.screenshot(&shots, "placements");
    b.type_into("input[name=namespace]", "ml\u{E007}");
    b.wait_url("Enter to submit the filter", |u| u.contains("namespace=ml"));
    let filtered = api(&a, "/api/v1/placements?namespace=ml");
    assert_eq!(b.rows("table.matrix tbody tr").len() as u64, filtered["workloads"]["total"].as_u64().expect("total"));
    b.assert_no_console_errors("placements, filtered");

    // A link to a workload: its verdicts as /…/explain.
    b.go(&format!("{base}/ui/placements"));
    b.click("a[href=\"/ui/workloads/shop/Deployment/web\"]");
    b.wait_url("the workload's page", |u| u.ends_with("/ui/workloads/shop/Deployment/web"));
    assert_eq!(b.title(), "Deployment/shop/web · fedsched");
    b.assert_no_console_errors("workload");
    let explain = api(&a, "/api/v1/workloads/shop/Deployment/web/explain");
    let verdicts = b.rows("main > section:nth-of-type(2) table tbody tr");
    let want: BTreeMap<String, String> = explain["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (shown(&c["name"]), shown(&c["replicas"])))
        .collect();
    let got: BTreeMap<String, String> = verdicts.iter().map(|r| (r[0].clone(), r[2].clone())).collect();
    assert_eq!(got, want, "replicas per cluster as explain says");
    b.screenshot(&shots, "workload");

    // A link to a cluster: what runs there as /api/v1/clusters/{name}/workloads.
    b.click("a[href=\"/ui/clusters/eu-west-a\"]");
    b.wait_url("the cluster's page", |u| u.ends_with("/ui/clusters/eu-west-a"));
    assert_eq!(b.title(), "Cluster eu-west-a · fedsched");
    b.assert_no_console_errors("cluster");
    let on = api(&a, "/api/v1/clusters/eu-west-a/workloads");
    let runs = b.text_of("main > section:nth-of-type(3) > p");
    assert_eq!(runs, format!("{} workloads, {} replicas.", on["runs"]["total"], on["runs"]["replicas"]));
    b.screenshot(&shots, "cluster");

    // The plan posted above.
    b.click("nav a[href=\"/ui/plan\"]");
    b.wait_url("the Plan page", |u| u.ends_with("/ui/plan"));
    assert_eq!(b.title(), "Plan · fedsched");
    b.assert_no_console_errors("plan");
    let summary = b.text_of("main > p");
    assert!(
        summary.contains(&format!(
            "{} of {} workloads change",
            plan_doc["summary"]["changed"], plan_doc["summary"]["workloads"]
        )),
        "{summary}"
    );
    b.screenshot(&shots, "plan");
    drop(b);
    let (_, log) = d.stop();
    assert!(!log.contains(TOKEN), "the token is in the daemon's log");
}

/// The status of a POST that announces a body of `len` bytes and sends none of it.
fn announced_body(a: &str, path: &str, len: usize) -> u16 {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(a).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    write!(c, "POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len}\r\n\r\n").expect("write");
    let mut raw = String::new();
    let _ = c.read_to_string(&mut raw);
    raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn text_of_output(o: &std::process::Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}

/// The pages during a failover of a live simulated fleet: one member of three stops
/// answering, its replicas are evicted and its files purged once the replacement is Ready; the
/// Fleet page then shows each member's state as `/api/v1/clusters` says it, the banner the
/// failover counts of `/api/v1/status`, and the Workload page the replicas of `…/explain`, its
/// failover lines and the eviction in the history — in a real browser, without a console error.
#[test]
fn a_live_failover_in_a_real_browser() {
    let Some((driver, chromium)) = chromedriver() else { return };
    let t = crate::live::setup(3, true, "timeout = \"2s\"\nread_timeout = \"1s\"\nmax_backoff = \"1s\"");
    let mut cfg = std::fs::read_to_string(&t.config).expect("config");
    cfg.push_str(
        "\n[reschedule]\ntoleration = \"3s\"\nstable_for = \"1h\"\nmin_stay = \"1s\"\ngrace_period = \"10m\"\n",
    );
    std::fs::write(&t.config, cfg).expect("config");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let a = addr(&t.s);
    let web = |c: &str| t.s.out().join(c).join("shop/apps_deployment_web.yaml");
    wait_for("the first live reconcile", Duration::from_secs(30), || {
        ["member-000", "member-001", "member-002"].iter().all(|c| web(c).exists())
    });
    t.sim.fault("member-000", r#"{"status": 503}"#);
    wait_for("the purge after the replacement is Ready", Duration::from_secs(60), || !web("member-000").exists());
    wait_for("the eviction recorded", Duration::from_secs(20), || {
        api(&a, "/api/v1/workloads/shop/Deployment/web/history").to_string().contains("evicted")
    });
    let b = Browser::start(&driver, &chromium);
    let shots = screenshot_dir();
    // The daemon passes every second: compare a page with the API's answers read before and
    // after it, when those agree (the figures did not move while the page was read).
    let steady = |paths: &[&str], read: &dyn Fn() -> Vec<Vec<String>>| {
        for _ in 0..20 {
            let before: Vec<Value> = paths.iter().map(|p| api(&a, p)).collect();
            let page = read();
            let after: Vec<Value> = paths.iter().map(|p| api(&a, p)).collect();
            let stable = |v: &[Value]| v.iter().map(|d| strip_ages(d.clone())).collect::<Vec<_>>();
            if stable(&before) == stable(&after) {
                return (after, page);
            }
        }
        panic!("the API's answers kept changing: {paths:?}");
    };
    let (docs, cards) = steady(&["/api/v1/clusters", "/api/v1/status"], &|| {
        b.go(&format!("http://{a}/ui/"));
        let mut rows = b.rows(".card");
        rows.push(vec![b.text_of(".banner")]);
        rows
    });
    b.assert_no_console_errors("fleet during a failover");
    let banner = cards.last().expect("banner")[0].clone();
    let f = &docs[1]["failover"];
    let counts = format!(
        "pending failover {}, kept past grace {}, held {}",
        f["pendingFailover"], f["keptPastGrace"], f["held"]
    );
    assert!(banner.contains(&counts), "{counts} in {banner}");
    for c in docs[0]["clusters"].as_array().expect("clusters") {
        let name = c["name"].as_str().expect("name");
        let card = cards.iter().find(|r| r.first().map(String::as_str) == Some(name)).expect("a card");
        let line = &card[1];
        assert!(line.starts_with(c["state"].as_str().expect("state")), "{name}: {line} against {c}");
        assert!(line.contains(&format!("replicas {}", c["replicas"])), "{name}: {line} against {c}");
    }
    assert!(
        docs[0]["clusters"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["name"] == "member-000" && c["state"] != "Ready"),
        "member-000 is down: {}",
        docs[0]
    );
    b.screenshot(&shots, "failover-fleet");
    let (docs, sections) = steady(&["/api/v1/workloads/shop/Deployment/web/explain"], &|| {
        b.go(&format!("http://{a}/ui/workloads/shop/Deployment/web"));
        let mut rows = b.rows("main > section:nth-of-type(2) table tbody tr");
        rows.push(b.texts("main > section:nth-of-type(4) li"));
        rows.push(vec![b.text_of("ol.timeline")]);
        rows
    });
    b.assert_no_console_errors("workload during a failover");
    let explain = &docs[0];
    let (timeline, lines) = (&sections[sections.len() - 1][0], &sections[sections.len() - 2]);
    let want: BTreeMap<String, String> = explain["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (shown(&c["name"]), shown(&c["replicas"])))
        .collect();
    let got: BTreeMap<String, String> =
        sections[..sections.len() - 2].iter().map(|r| (r[0].clone(), r[2].clone())).collect();
    assert_eq!(got, want, "replicas per cluster as explain says");
    assert_eq!(got.get("member-000").map(String::as_str), Some("-"), "nothing left on the lost member");
    assert_eq!(lines, &fedsched::views::explain::failover_lines(explain), "the failover lines of explain");
    assert!(timeline.contains("evicted"), "{timeline}");
    b.screenshot(&shots, "failover-workload");
    drop(b);
    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(!l.contains("panicked"), "{l}");
}

/// A document without the fields that change by themselves between two reads (ages, times of
/// observation), for comparing two reads of the API.
fn strip_ages(mut v: Value) -> Value {
    match &mut v {
        Value::Object(o) => {
            for k in [
                "ageSeconds",
                "observedAgeSeconds",
                "observedAt",
                "lastSeen",
                "heartbeatAgeMs",
                "lastPass",
                "lastSuccess",
                "lastSummary",
                "ageAtDecisionMs",
            ] {
                o.remove(k);
            }
            for x in o.values_mut() {
                *x = strip_ages(x.take());
            }
        }
        Value::Array(a) => {
            for x in a.iter_mut() {
                *x = strip_ages(x.take());
            }
        }
        _ => {}
    }
    v
}

/// A progressive rollout (issue 52) on a live simulated fleet with `--apply`, in a real
/// browser: while the canary stage waits for its approval, and again after the approval
/// commit released the next stage, the Workload page's rollout section shows what
/// `/api/v1/workloads/shop/api/rollout` says — state, stage, both versions, the gate, each
/// stage's clusters and the version they run — without a console error.
#[test]
fn a_rollout_in_a_real_browser() {
    let Some((driver, chromium)) = chromedriver() else { return };
    let t = crate::live::setup_with(3, true, crate::live::WATCHED, &[]);
    let write = |image: &str, spec: &str| {
        t.s.write("apps/api.yaml", &crate::rollout::app_with(image, ", requireApproval: true", spec))
    };
    write("api:1", "");
    let (mut child, log) = crate::live::daemon(&t, "info");
    let a = addr(&t.s);
    let rollout = || match http_get(&a, "/api/v1/workloads/shop/api/rollout") {
        Some((200, body)) => serde_json::from_str::<Value>(&body).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    wait_for("api:1 everywhere", Duration::from_secs(90), || crate::rollout::images(&t) == ["api:1"; 3]);
    write("api:2", "");
    wait_for("the canary's gate to ask for approval", Duration::from_secs(90), || {
        let r = rollout();
        r["stage"] == "canary" && r["gate"]["approvalRequired"] == true && r["gate"]["healthySince"].is_string()
    });
    let b = Browser::start(&driver, &chromium);
    let shots = screenshot_dir();
    // Loaded afresh each time (a fragment alone would not reload it), then scrolled to the
    // rollout for the screenshot.
    let page = format!("http://{a}/ui/workloads/shop/Deployment/api");
    let shot = |name: &str| {
        b.go(&format!("{page}#rollout"));
        b.screenshot(&shots, name);
    };
    // The page against the API's answers read before and after it, when they agree (the gate's
    // times left move by themselves: compared without them).
    let compare = || -> Value {
        for _ in 0..20 {
            let before = rollout();
            b.go(&page);
            let state = b.text_of("#rollout .rollout-state");
            let gate = b.text_of("#rollout .gate");
            let stages = b.rows("#rollout table:nth-of-type(1) tbody tr");
            let after = rollout();
            let fixed =
                |d: &Value| (d["state"].clone(), d["stage"].clone(), d["stages"].clone(), d["versions"].clone());
            if fixed(&before) != fixed(&after) {
                continue;
            }
            let doc = after;
            b.assert_no_console_errors("workload with a rollout");
            match doc["stage"].as_str() {
                Some(stage) => assert!(
                    state.contains(&format!("{} at stage {stage}", shown(&doc["state"]))),
                    "{state} against {doc:#}"
                ),
                None => assert!(state.contains(&shown(&doc["state"])) && !state.contains("at stage"), "{state}"),
            }
            assert!(
                state.contains(&format!(
                    "previous version {}, new version {}",
                    shown(&doc["versions"]["previous"]),
                    shown(&doc["versions"]["new"])
                )),
                "{state} against {doc:#}"
            );
            assert!(gate.starts_with("gate: "), "{gate}");
            if doc["gate"]["approvalRequired"] == true {
                assert!(gate.contains("approval required"), "{gate} against {doc:#}");
            }
            let want = doc["stages"].as_array().expect("stages");
            assert_eq!(stages.len(), want.len(), "{stages:?} against {doc:#}");
            for (row, st) in stages.iter().zip(want) {
                let name = shown(&st["name"]);
                let current = doc["stage"].as_str() == Some(name.as_str());
                let label = if current { format!("{name} (current)") } else { name.clone() };
                assert_eq!(row[1], label, "{row:?} against {doc:#}");
                assert_eq!(row[2], shown(&st["version"]), "{row:?} against {st}");
                let clusters: Vec<String> = st["clusters"].as_array().into_iter().flatten().map(shown).collect();
                let on_page: Vec<String> = row[3]
                    .split(", ")
                    .filter(|c| !c.is_empty())
                    .map(|c| c.split(" (").next().unwrap_or("").to_string())
                    .collect();
                assert_eq!(on_page, clusters, "{row:?} against {st}");
            }
            return doc;
        }
        panic!("the rollout kept changing");
    };
    let held = compare();
    assert_eq!(held["stage"], "canary", "held at the canary by its gate: {held:#}");
    shot("rollout");
    // The approval is a commit to the policy repository: the next stage is released.
    write("api:2", "  approvedStages: [canary]\n");
    wait_for("the next stage", Duration::from_secs(90), || crate::rollout::image(&t, "member-001") == "api:2");
    let released = compare();
    assert_ne!(released["stage"], "canary", "released past the canary: {released:#}");
    assert!(released["stages"][0]["version"] == "new" && released["stages"][1]["version"] == "new", "{released:#}");
    shot("rollout-next");
    drop(b);
    child.kill().expect("kill");
    let _ = child.wait();
    let l = log.lock().map(|l| l.clone()).unwrap_or_default();
    assert!(!l.contains("panicked"), "{l}");
}
