//! The HTTP listener under hostile clients (issue 47): a request without the token is refused
//! before its body is read (no memory for it), bodies are bounded for every client, and
//! `/healthz` keeps answering while other clients hold every connection slot.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::*;

const TOKEN: &str = "listener-t0ken-5e1f";

/// A listener on a free port, in process, with the token and `limits`.
struct Listener {
    rt: tokio::runtime::Runtime,
    server: Option<fedsched::api::Server>,
    _s: Scratch,
}

impl Listener {
    fn start(limits: fedsched::api::Limits) -> Listener {
        let s = Scratch::new();
        let store = fedsched::store::Store::open(&s.state()).expect("store");
        let token_file = s.dir.path().join("token");
        std::fs::write(&token_file, TOKEN).expect("token");
        let (_tx, status) = tokio::sync::watch::channel(Arc::new(fedsched::views::status::StatusView::default()));
        let state = fedsched::api::ApiState {
            store,
            status,
            heartbeat: Arc::new(fedsched::views::status::Heartbeat::new(fedsched::util::clock::now_ms())),
            heartbeat_timeout: Duration::from_secs(3600),
            token: Some(fedsched::api::Token::from_file(&token_file).expect("token")),
            metrics_require_token: false,
            metrics: Arc::new(fedsched::metrics::Metrics::new()),
            clock: Arc::new(fedsched::util::clock::SystemClock),
            output_dir: s.out(),
            plans: Default::default(),
        };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        let server = rt.block_on(fedsched::api::start_with("127.0.0.1:0".parse().expect("addr"), state, limits));
        Listener { rt, server: Some(server.expect("listen")), _s: s }
    }

    fn addr(&self) -> SocketAddr {
        self.server.as_ref().expect("server").addr
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.rt.block_on(server.shutdown(Duration::from_secs(5)));
        }
    }
}

/// Sends `head` (request line and headers, without the blank line) and `body_sent` bytes of the
/// body, then reads the answer's status; None when no answer came within 10 s.
fn status_after(addr: SocketAddr, head: &str, body_sent: usize) -> Option<u16> {
    let mut c = TcpStream::connect(addr).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    c.write_all(format!("{head}\r\n\r\n").as_bytes()).ok()?;
    let _ = c.write_all(&vec![b'{'; body_sent]);
    let mut buf = [0u8; 64];
    let n = c.read(&mut buf).ok()?;
    std::str::from_utf8(&buf[..n]).ok()?.split(' ').nth(1)?.parse().ok()
}

#[test]
fn a_request_without_the_token_is_refused_before_its_body_is_read() {
    let l = Listener::start(fedsched::api::Limits::default());
    let addr = l.addr();
    // 200 MiB announced, 64 KiB sent: the answer comes without the rest.
    let head = |auth: &str| {
        format!(
            "POST /api/v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}Content-Length: {}",
            200 << 20
        )
    };
    assert_eq!(status_after(addr, &head(""), 64 << 10), Some(401));
    assert_eq!(status_after(addr, &head("Authorization: Bearer wrong\r\n"), 64 << 10), Some(401));
    assert_eq!(status_after(addr, &head("Authorization: Basic Zm9vOmJhcg==\r\n"), 0), Some(401));
    // Every /api route, whatever the method.
    for head in
        ["GET /api/v1/clusters HTTP/1.1\r\nHost: x", "PUT /api/v1/status HTTP/1.1\r\nHost: x\r\nContent-Length: 9"]
    {
        assert_eq!(status_after(addr, head, 0), Some(401), "{head}");
    }
}

/// Sends `head` (and no body) with `Connection: close`; returns the answer's status and body.
fn answer(addr: SocketAddr, head: &str) -> (u16, String) {
    let mut c = TcpStream::connect(addr).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    c.write_all(format!("{head}\r\nConnection: close\r\n\r\n").as_bytes()).expect("request");
    let mut raw = String::new();
    let _ = c.read_to_string(&mut raw);
    let code = raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

/// Every route of the JSON API — the router's own list (`api::api_routes`), not one kept here —
/// is behind the token (issue 51): 401 without it or with a wrong one, and, with it, an answer
/// of the route itself (neither 401 nor "no such endpoint"). A path under `/api/v1` that no route
/// serves is behind it too; `/healthz` and `/readyz` need no token.
#[test]
fn every_api_route_is_behind_the_token_and_the_probes_are_open() {
    let l = Listener::start(fedsched::api::Limits::default());
    let addr = l.addr();
    let routes = fedsched::api::api_routes();
    assert!(routes.len() >= 13, "{routes:?}");
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    for (method, path) in &routes {
        let path = path.replace("{ns}", "shop").replace("{kind}", "Deployment").replace("{name}", "web");
        let head = |auth: &str| format!("{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: 0");
        let (code, body) = answer(addr, &head(""));
        assert_eq!(code, 401, "{method} {path} without the token: {body}");
        assert_eq!(answer(addr, &head("Authorization: Bearer wrong\r\n")).0, 401, "{method} {path}, a wrong token");
        let (code, body) = answer(addr, &head(&auth));
        assert!(code != 401 && !body.contains("no such endpoint"), "{method} {path} with the token: {code} {body}");
    }
    let (code, body) = answer(addr, &format!("GET /api/v1/nothing-here HTTP/1.1\r\nHost: x\r\n{auth}"));
    assert!(code == 404 && body.contains("no such endpoint"), "{code} {body}");
    assert_eq!(answer(addr, "GET /api/v1/nothing-here HTTP/1.1\r\nHost: x").0, 401);
    assert_eq!(answer(addr, "GET /healthz HTTP/1.1\r\nHost: x").0, 200);
    // Not ready before a first pass: 503, its own answer, not a refusal.
    assert_eq!(answer(addr, "GET /readyz HTTP/1.1\r\nHost: x").0, 503);
    assert_eq!(answer(addr, "GET /metrics HTTP/1.1\r\nHost: x").0, 200, "metrics_require_token is off");
}

#[test]
fn bodies_are_bounded_for_clients_with_the_token_too() {
    let l = Listener::start(fedsched::api::Limits::default());
    let addr = l.addr();
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let plan = |len: usize| format!("POST /api/v1/plan HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {len}");
    // Over the plan's limit: refused from its length, nothing sent.
    assert_eq!(status_after(addr, &plan(fedsched::api::PLAN_BODY_LIMIT + 1), 0), Some(413));
    // A body where no route reads one.
    let get = format!("GET /api/v1/status HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {}", 1 << 20);
    assert_eq!(status_after(addr, &get, 0), Some(413));
    // One upload holds most of the budget while it is read (its `100 Continue` says the
    // server took it in and reads its body): another is refused meanwhile.
    let mut first = TcpStream::connect(addr).expect("connect");
    first.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    first.write_all(format!("{}\r\nExpect: 100-continue\r\n\r\n", plan(200 << 20)).as_bytes()).expect("head");
    let mut buf = [0u8; 64];
    let n = first.read(&mut buf).expect("100 Continue");
    assert!(buf[..n].starts_with(b"HTTP/1.1 100"), "{}", String::from_utf8_lossy(&buf[..n]));
    first.write_all(&[b'{'; 4096]).expect("body");
    assert_eq!(status_after(addr, &plan(100 << 20), 0), Some(429));
    drop(first);
    // Given back when that request ends.
    let mut answered = None;
    for _ in 0..100 {
        answered = status_after(addr, &plan(3), 3);
        if answered != Some(429) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(answered, Some(400), "a three-byte body is read (and is no plan request)");
}

/// The daemon's peak resident memory in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM")
}

#[test]
fn two_hundred_mebibytes_without_the_token_cost_the_daemon_no_memory() {
    let s = Scratch::new();
    let token = s.dir.path().join("api.token");
    std::fs::write(&token, TOKEN).expect("token");
    let d = Daemon::start(
        &s,
        &format!("[http]\nlisten = \"127.0.0.1:0\"\ntoken_file = {:?}\n", token.display().to_string()),
        &[],
    );
    let file = s.state().join("http.addr");
    wait_for("the HTTP address", Duration::from_secs(30), || file.exists());
    let addr: SocketAddr = std::fs::read_to_string(&file).expect("addr").trim().parse().expect("addr");
    let before = peak_kib(d.child.id());
    // Four clients send 200 MiB each, as fast as the daemon takes them.
    let senders: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).expect("connect");
                c.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
                let head = format!("POST /api/v1/plan HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", 200 << 20);
                c.write_all(head.as_bytes()).expect("head");
                let chunk = vec![b' '; 1 << 20];
                for _ in 0..200 {
                    if c.write_all(&chunk).is_err() {
                        break;
                    }
                }
                let mut answer = String::new();
                let _ = c.read_to_string(&mut answer);
                answer.split(' ').nth(1).and_then(|c| c.parse::<u16>().ok())
            })
        })
        .collect();
    for s in senders {
        assert_eq!(s.join().expect("sender"), Some(401));
    }
    let grown = peak_kib(d.child.id()).saturating_sub(before);
    assert!(grown < 32 << 10, "the daemon's peak memory grew by {grown} KiB for requests it refused");
    let (code, log) = d.stop();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn healthz_answers_every_probe_while_other_clients_hold_every_connection() {
    let limits = fedsched::api::Limits { max_connections: 32, header_timeout: Duration::from_secs(2) };
    let l = Listener::start(limits);
    let addr = l.addr();
    // 48 clients (more than the slots) hold a connection each, and open another as soon as
    // theirs is closed.
    let stop = Arc::new(AtomicBool::new(false));
    let holders: Vec<_> = (0..48)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut opened = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut c) = TcpStream::connect(addr) else { continue };
                    opened += 1;
                    let _ = c.set_read_timeout(Some(Duration::from_millis(200)));
                    let mut buf = [0u8; 64];
                    while !stop.load(Ordering::Relaxed) {
                        match c.read(&mut buf) {
                            Ok(0) => break,
                            Ok(_) => continue,
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => break,
                        }
                    }
                }
                opened
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let mut answered = 0;
    for _ in 0..40 {
        let mut c = TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        if c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").is_ok() {
            let mut raw = String::new();
            let _ = c.read_to_string(&mut raw);
            answered += usize::from(raw.starts_with("HTTP/1.1 200"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let opened: u32 = holders.into_iter().map(|h| h.join().expect("holder")).sum();
    assert!(opened > 48, "the holders never had to reopen ({opened} connections): the test held nothing");
    assert_eq!(answered, 40, "/healthz answered {answered} probes of 40");
}
