//! How a poll fails: [`PollError`] (typed, with [`PollError::kind`] for logs and metrics and
//! the health a cluster has while it is its last error), and the HTTP answers that become one.

use super::*;

/// Why a poll of one cluster failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PollError {
    /// The access configuration cannot be used (kubeconfig, token or CA file, endpoint).
    #[error("access: {0}")]
    Access(String),
    /// 401 or 403: the API answered but refused the credentials.
    #[error("forbidden (HTTP {status}) listing {what}: {message} (the poller needs get/list/watch on nodes and pods)")]
    Forbidden { status: u16, what: &'static str, message: String },
    /// Any other non-success status.
    #[error("HTTP {status} listing {what}: {message}")]
    Http { status: u16, what: &'static str, message: String },
    /// Continue tokens kept expiring.
    #[error("listing {what}: continue token expired (410 Gone) {restarts} times in a row")]
    Gone { what: &'static str, restarts: u32 },
    /// The body is not a list page.
    #[error("listing {what}: invalid response: {message}")]
    Decode { what: &'static str, message: String },
    /// Connection, TLS, read timeout, reset, truncated body.
    #[error("listing {what}: {message}")]
    Transport { what: &'static str, message: String },
    /// The poll as a whole took longer than `poll.timeout`.
    #[error("poll exceeded its deadline of {}", humantime::format_duration(*.0))]
    Deadline(Duration),
}

impl PollError {
    /// A short, stable name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            PollError::Access(_) => "access",
            PollError::Forbidden { .. } => "forbidden",
            PollError::Http { .. } => "http",
            PollError::Gone { .. } => "gone",
            PollError::Decode { .. } => "decode",
            PollError::Transport { .. } => "transport",
            PollError::Deadline(_) => "deadline",
        }
    }

    /// The health a cluster has while this is its last error: `NotReady` when the API answered
    /// but refused (401/403: the cluster is up, our credentials are not), `Unreachable`
    /// otherwise.
    pub fn health(&self) -> Health {
        let reason = readable(&format!("{}: {self}", self.kind()));
        match self {
            PollError::Forbidden { .. } => Health::NotReady { reason },
            _ => Health::Unreachable { reason },
        }
    }
}

/// An error and its sources, `: `-separated, in the words of [`readable`].
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    readable(&s)
}

/// The wrappers the HTTP and TLS libraries put around an error, which say nothing to someone
/// who runs fedsched (`ServiceError: client error (SendRequest): …`), dropped; their phrases
/// said in ours.
const LIBRARY_WORDS: [(&str, &str); 6] = [
    ("ServiceError: ", ""),
    ("client error (SendRequest): ", ""),
    ("client error (Connect): ", "cannot connect: "),
    ("connection error: ", "connection: "),
    ("peer closed connection without sending TLS close_notify", "the server closed the connection without ending TLS"),
    ("received corrupt message of type InvalidContentType", "the server does not speak TLS"),
];

/// A library's error text as fedsched shows it (poll errors reach logs, snapshots, history
/// notes and the eviction log): the wrappers of [`LIBRARY_WORDS`] dropped or said in our
/// words, and documentation links removed (rustls ends some errors with a `https://docs.rs/…`
/// URL into its manual).
pub fn readable(text: &str) -> String {
    let mut s = text.to_string();
    for (theirs, ours) in LIBRARY_WORDS {
        s = s.replace(theirs, ours);
    }
    while let Some(at) = s.find("https://docs.rs/") {
        let end = s[at..].find(char::is_whitespace).map_or(s.len(), |n| at + n);
        // The separator before the link goes with it (`…close_notify: https://…`).
        let start = s[..at].trim_end().strip_suffix(':').map_or(at, str::len);
        s.replace_range(start..end, "");
    }
    s.trim_end().to_string()
}

pub(super) enum Got {
    Gone(String),
    Failed(PollError),
}

pub(super) fn http_error(status: u16, message: String, what: &'static str) -> Got {
    match status {
        410 => Got::Gone(message),
        s @ (401 | 403) => Got::Failed(PollError::Forbidden { status: s, what, message }),
        s => Got::Failed(PollError::Http { status: s, what, message }),
    }
}

/// The `message` of a `Status` body, or the start of the body; at most 300 characters.
pub(super) fn status_message(body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Status {
        #[serde(default)]
        message: String,
    }
    let m = match serde_json::from_slice::<Status>(body) {
        Ok(s) if !s.message.is_empty() => s.message,
        _ => String::from_utf8_lossy(body).trim().to_string(),
    };
    m.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_wrappers_and_documentation_links_do_not_reach_users() {
        let raw = "listing nodes: ServiceError: client error (SendRequest): connection error: peer closed \
                   connection without sending TLS close_notify: \
                   https://docs.rs/rustls/latest/rustls/manual/_03_howto/index.html#unexpected-eof";
        assert_eq!(readable(raw), "listing nodes: connection: the server closed the connection without ending TLS");
        let e = PollError::Transport { what: "nodes", message: raw.into() };
        let Health::Unreachable { reason } = e.health() else { panic!("unreachable") };
        assert!(!reason.contains("https://") && !reason.contains("ServiceError"), "{reason}");
        assert_eq!(readable("a: https://docs.rs/x b"), "a b");
        assert_eq!(readable("plain words"), "plain words");
    }

    #[test]
    fn forbidden_is_not_unreachable() {
        let f = PollError::Forbidden { status: 403, what: "pods", message: "no".into() };
        assert!(matches!(f.health(), Health::NotReady { .. }));
        let t = PollError::Transport { what: "pods", message: "reset".into() };
        assert!(matches!(t.health(), Health::Unreachable { .. }));
        assert_eq!(crate::util::percent::encode("a+b/c=="), "a%2Bb%2Fc%3D%3D");
    }
}
