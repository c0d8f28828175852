//! A minimal HTTP/1.1 client for the CLI to ask a running daemon (`GET`, and `POST` of a JSON
//! body for `fedsched plan`; plain `http://`, meant for the loopback listener). The store is single-process: while the
//! daemon runs, `explain`, `history` and `snapshots` read through its API instead.
//!
//! The CLI is synchronous: [`get`] runs hyper-util's client (`HttpConnector`, HTTP/1.1, no
//! pooling) on a current-thread tokio runtime of its own for the one request. Timeouts: the
//! connect, the response head and every body frame each get the whole `timeout` (the read
//! timeout of a socket), so a server that stops answering fails the request.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{ACCEPT, AUTHORIZATION, CONNECTION, CONTENT_TYPE};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// Errors of a request to the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server URL is not `http://host:port`.
    #[error("server URL {0:?} is not http://HOST:PORT")]
    BadUrl(String),
    /// Connecting, writing or reading failed.
    #[error("{url}: {source}")]
    Io { url: String, source: std::io::Error },
    /// The answer is not HTTP/1.x.
    #[error("{url}: malformed HTTP response: {detail}")]
    Malformed { url: String, detail: String },
}

/// A daemon's API address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerUrl {
    host: String,
    port: u16,
}

impl ServerUrl {
    /// Parses `http://host:port` (a trailing `/` is allowed) or a bare `host:port`.
    pub fn parse(s: &str) -> Result<ServerUrl, ClientError> {
        let rest = s.strip_prefix("http://").unwrap_or(s);
        if rest.contains("://") {
            return Err(ClientError::BadUrl(s.to_string()));
        }
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| ClientError::BadUrl(s.to_string()))?;
        let port: u16 = port.parse().map_err(|_| ClientError::BadUrl(s.to_string()))?;
        if host.is_empty() || host.contains('/') || port == 0 {
            return Err(ClientError::BadUrl(s.to_string()));
        }
        Ok(ServerUrl { host: host.to_string(), port })
    }

    /// The URL of a listening address; an unspecified address (`0.0.0.0`, `::`) is reached
    /// on loopback.
    pub fn from_addr(addr: SocketAddr) -> Option<ServerUrl> {
        if addr.port() == 0 {
            return None;
        }
        let ip = match addr.ip() {
            std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        Some(ServerUrl {
            host: SocketAddr::new(ip, addr.port()).to_string().rsplit_once(':')?.0.to_string(),
            port: addr.port(),
        })
    }
}

impl std::fmt::Display for ServerUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}:{}", self.host, self.port)
    }
}

/// `GET path` with an optional bearer token. Returns the status code and the body.
pub fn get(
    server: &ServerUrl,
    path: &str,
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, String), ClientError> {
    request(server, hyper::Method::GET, path, None, token, timeout)
}

/// `POST path` of a JSON `body` with an optional bearer token. Returns the status code and the
/// body of the answer.
pub fn post_json(
    server: &ServerUrl,
    path: &str,
    body: Vec<u8>,
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, String), ClientError> {
    request(server, hyper::Method::POST, path, Some(body), token, timeout)
}

fn request(
    server: &ServerUrl,
    method: hyper::Method,
    path: &str,
    body: Option<Vec<u8>>,
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, String), ClientError> {
    let url = format!("{server}{path}");
    let uri: hyper::Uri = url.parse().map_err(|_| ClientError::BadUrl(url.clone()))?;
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(uri)
        .header(ACCEPT, "application/json")
        .header(CONNECTION, "close");
    if body.is_some() {
        req = req.header(CONTENT_TYPE, "application/json");
    }
    if let Some(t) = token {
        req = req.header(AUTHORIZATION, format!("Bearer {t}"));
    }
    let io = |source| ClientError::Io { url: url.clone(), source };
    let req = req
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())))?;
    let run = move || -> Result<(u16, Vec<u8>), Failure> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(Failure::Io)?;
        rt.block_on(exchange(req, timeout))
    };
    // A runtime cannot be started from a runtime's thread: then the request runs on a thread
    // of its own (the caller blocks either way).
    let answer = if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| s.spawn(run).join())
            .unwrap_or_else(|_| Err(Failure::Io(std::io::Error::other("the request thread panicked"))))
    } else {
        run()
    };
    let (code, body) = answer.map_err(|e| match e {
        Failure::Io(source) => ClientError::Io { url: url.clone(), source },
        Failure::Malformed(detail) => ClientError::Malformed { url: url.clone(), detail },
    })?;
    let body = String::from_utf8(body)
        .map_err(|_| ClientError::Malformed { url: url.clone(), detail: "body is not UTF-8".into() })?;
    Ok((code, body))
}

/// Why an exchange failed, before the URL is attached.
#[derive(Debug)]
enum Failure {
    Io(std::io::Error),
    Malformed(String),
}

impl Failure {
    fn timed_out() -> Failure {
        Failure::Io(std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out waiting for the daemon"))
    }

    /// A client or body error: `Malformed` when hyper could not parse the answer, else `Io`
    /// (with the kind of the I/O error underneath, if any). The message is the innermost
    /// error's (`Connection refused (os error 111)`, not hyper-util's wrappers).
    fn of(e: &(dyn std::error::Error + 'static)) -> Failure {
        let mut kind = std::io::ErrorKind::Other;
        let mut parse = false;
        let mut innermost = e;
        let mut at: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = at {
            if let Some(h) = err.downcast_ref::<hyper::Error>() {
                parse |= h.is_parse() || h.is_parse_status();
            }
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                kind = io.kind();
            }
            innermost = err;
            at = err.source();
        }
        let message = innermost.to_string();
        if parse { Failure::Malformed(message) } else { Failure::Io(std::io::Error::new(kind, message)) }
    }
}

/// Sends `req` and reads the whole body, each step within `timeout`.
async fn exchange(req: hyper::Request<Full<Bytes>>, timeout: Duration) -> Result<(u16, Vec<u8>), Failure> {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(timeout));
    let client = Client::builder(TokioExecutor::new()).pool_max_idle_per_host(0).build(connector);
    let resp = match tokio::time::timeout(timeout, client.request(req)).await {
        Err(_) => return Err(Failure::timed_out()),
        Ok(Err(e)) => return Err(Failure::of(&e)),
        Ok(Ok(resp)) => resp,
    };
    let code = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut bytes = Vec::new();
    loop {
        match tokio::time::timeout(timeout, body.frame()).await {
            Err(_) => return Err(Failure::timed_out()),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(Failure::of(&e)),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
        }
    }
    Ok((code, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_segments_encode() {
        let u = ServerUrl::parse("http://127.0.0.1:9464/").expect("url");
        assert_eq!(u.to_string(), "http://127.0.0.1:9464");
        assert_eq!(ServerUrl::parse("localhost:80").expect("url").to_string(), "http://localhost:80");
        assert!(ServerUrl::parse("https://x:1").is_err());
        assert!(ServerUrl::parse("http://x").is_err());
        assert_eq!(
            ServerUrl::from_addr("0.0.0.0:9464".parse().expect("addr")).expect("url").to_string(),
            "http://127.0.0.1:9464"
        );
        assert_eq!(ServerUrl::from_addr("[::]:1".parse().expect("addr")).expect("url").to_string(), "http://[::1]:1");
        assert!(ServerUrl::from_addr("127.0.0.1:0".parse().expect("addr")).is_none());
    }

    /// A server on loopback that answers every connection with `answer` (after reading the
    /// request head), or never answers when `answer` is `None`.
    fn serve(answer: Option<&'static [u8]>) -> ServerUrl {
        use std::io::{BufRead, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let mut r = std::io::BufReader::new(conn.try_clone().expect("clone"));
                let mut line = String::new();
                while r.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                match answer {
                    Some(a) => {
                        let _ = conn.write_all(a);
                    }
                    None => std::thread::sleep(Duration::from_secs(30)),
                }
            }
        });
        ServerUrl::from_addr(addr).expect("url")
    }

    #[test]
    fn responses_with_length_or_chunks_are_read() {
        let t = Duration::from_secs(10);
        let u = serve(Some(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"));
        assert_eq!(get(&u, "/x", None, t).expect("ok"), (200, "{}".to_string()));
        let u =
            serve(Some(b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n"));
        assert_eq!(get(&u, "/x", Some("tok"), t).expect("ok"), (404, "abcd".to_string()));
        let u = serve(Some(b"SSH-2.0\r\n"));
        assert!(matches!(get(&u, "/x", None, t), Err(ClientError::Malformed { .. })));
    }

    #[test]
    fn a_server_that_hangs_times_out() {
        let u = serve(None);
        let started = std::time::Instant::now();
        match get(&u, "/x", None, Duration::from_millis(300)) {
            Err(ClientError::Io { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::TimedOut),
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_refused_connection_is_an_io_error() {
        let addr = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
        let u = ServerUrl::from_addr(addr).expect("url");
        assert!(matches!(get(&u, "/x", None, Duration::from_secs(5)), Err(ClientError::Io { .. })));
    }

    #[tokio::test]
    async fn get_works_from_inside_a_runtime() {
        let u = serve(Some(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
        assert_eq!(get(&u, "/x", None, Duration::from_secs(10)).expect("ok"), (200, "ok".to_string()));
    }
}
