//! A minimal HTTP/1.1 client for the CLI to ask a running daemon (`GET` only, plain
//! `http://`, meant for the loopback listener). The store is single-process: while the
//! daemon runs, `explain`, `history` and `snapshots` read through its API instead.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

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
    let url = format!("{server}{path}");
    let io = |source| ClientError::Io { url: url.clone(), source };
    let addrs: Vec<SocketAddr> =
        (server.host.trim_matches(|c| c == '[' || c == ']'), server.port).to_socket_addrs().map_err(io)?.collect();
    let mut last = None;
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut stream = match stream {
        Some(s) => s,
        None => return Err(io(last.unwrap_or_else(|| std::io::Error::other("no address")))),
    };
    stream.set_read_timeout(Some(timeout)).map_err(io)?;
    stream.set_write_timeout(Some(timeout)).map_err(io)?;
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {}:{}\r\nAccept: application/json\r\nConnection: close\r\n",
        server.host, server.port
    );
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).map_err(io)?;
    read_response(BufReader::new(stream)).map_err(|e| match e {
        ReadError::Io(source) => ClientError::Io { url: url.clone(), source },
        ReadError::Malformed(detail) => ClientError::Malformed { url: url.clone(), detail },
    })
}

enum ReadError {
    Io(std::io::Error),
    Malformed(String),
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

fn read_response(mut r: impl BufRead) -> Result<(u16, String), ReadError> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Malformed(format!("status line {:?}", line.trim_end())));
    }
    let code: u16 = parts
        .next()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| ReadError::Malformed(format!("status line {:?}", line.trim_end())))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(ReadError::Malformed("headers end early".into()));
        }
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse().map_err(|_| ReadError::Malformed(format!("content-length {value:?}")))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size_text = line.trim_end().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| ReadError::Malformed(format!("chunk size {size_text:?}")))?;
            if size == 0 {
                break;
            }
            let mut chunk = vec![0u8; size];
            r.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk);
            line.clear();
            r.read_line(&mut line)?;
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
    }
    let body = String::from_utf8(body).map_err(|_| ReadError::Malformed("body is not UTF-8".into()))?;
    Ok((code, body))
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

    #[test]
    fn responses_with_length_or_chunks_are_read() {
        let r = read_response(&b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"[..]).ok().expect("ok");
        assert_eq!(r, (200, "{}".to_string()));
        let r = read_response(
            &b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n"[..],
        )
        .ok()
        .expect("ok");
        assert_eq!(r, (404, "abcd".to_string()));
        assert!(read_response(&b"SSH-2.0\r\n"[..]).is_err());
    }
}
