//! Live members: polling each member's Kubernetes API for Nodes and Pods.
//!
//! Client: kube-rs (`kube::Client` over rustls, certificate verification on unless the
//! Cluster object says `insecureSkipTLSVerification`), which brings kubeconfig handling,
//! client certificates and proxies.
//! Pages are fetched raw (`Client::send`) and decoded narrowly ([`super::decode`]).
//!
//! Per poll of one cluster: `GET /api/v1/nodes?limit=N` and `GET /api/v1/pods?limit=N`
//! following `continue` tokens; a 410 Gone on a continue token restarts that list (up to
//! [`MAX_RESTARTS`] times). Every request has the read timeout `poll.read_timeout`; the whole
//! poll has the deadline `poll.timeout`. At most `poll.concurrency` clusters are polled at
//! once. A cluster that fails is retried after an exponential backoff with jitter (base: the
//! poll interval, cap: `poll.max_backoff`); meanwhile it keeps its last good observation.
//!
//! Credentials: [`credentials`] takes them out of the kubeconfig and puts them on each request
//! (kube sees none); no message quotes one, and endpoints are shown without user info.
//!
//! Discovery: the APIs a member serves are read from its discovery documents ([`discovery`]:
//! `/api` and `/apis`, aggregated, or plain and then each group version's resource list)
//! after its first successful poll,
//! then every `poll.discovery_interval` (10 min) and after it recovers from a failed poll —
//! never every round. A discovery that fails keeps the last list (and a group version that
//! fails keeps its part of it).
//!
//! Files: [`access`] (targets and clients), [`credentials`] (tokens, token files, exec
//! plugins, the `Authorization` layer, redaction), [`poller`] (the round, backoff, discovery),
//! [`list`] (paginated lists), [`discovery`] (the API list), [`watch`] (watch tasks and the
//! watch cache they keep), [`error`].

mod access;
mod credentials;
mod discovery;
mod error;
mod list;
mod poller;
mod watch;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use http_body_util::BodyExt;

use super::decode::{
    Fold, Keyed, NodeCache, NodeItem, Observation, PodCache, PodItem, Sink, WatchCache, WatchEvent, decode_event,
    decode_page,
};
use crate::config::{ClusterAccess, Config, PollSection};
use crate::model::{Health, NodeView, PodFacts, PollFacts, ResourceList};
use crate::policy::{ClusterObject, PolicySet};
use crate::util::clock::{Clock, SystemClock};

pub use access::{Target, describe_endpoint, host_client, targets};
pub use discovery::{Discovered, MAX_DISCOVERY_BYTES, MAX_ENTRIES, MAX_GROUP_VERSIONS};
pub use error::{PollError, chain};
pub use poller::{Poller, live_data};

use access::*;
use credentials::*;
use discovery::*;
use error::*;
use list::*;
use watch::*;

/// How often a list restarts after its continue token expired (410 Gone) before giving up.
pub const MAX_RESTARTS: u32 = 3;
/// Largest response body accepted for one page (and for one watch event).
pub const MAX_PAGE_BYTES: usize = 64 << 20;
/// `timeoutSeconds` of a watch request, before a per-cluster jitter of up to half of it: the
/// server ends the stream then and the watcher re-watches from the last resource version.
pub const WATCH_TIMEOUT_SECS: u64 = 60;

/// What a successful poll saw (shared: the view is cloned for every reconcile).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveData {
    /// Nodes with the requests of their pods (shared with the snapshots built from them).
    pub nodes: Arc<Vec<NodeView>>,
    /// Σ requests of pods not bound yet.
    pub unbound: ResourceList,
    /// Pod counts (shared with the snapshots built from them).
    pub pods: Arc<PodFacts>,
    /// Σ requests of the non-terminated pods bound to a node that is not listed, with their
    /// count as `pods`: Karmada counts them in `allocated`
    /// ([`crate::model::snapshot::ResourceSummary::with_unlisted`]).
    pub unlisted: ResourceList,
    /// How the poll went.
    pub poll: PollFacts,
}

impl LiveData {
    /// What a poll's observation becomes.
    pub fn of(obs: Observation, poll: PollFacts) -> LiveData {
        LiveData {
            nodes: Arc::new(obs.nodes),
            unbound: obs.unbound,
            pods: Arc::new(obs.pods),
            unlisted: obs.unlisted,
            poll,
        }
    }
}

/// What the poller knows of one cluster.
#[derive(Debug, Clone, Default)]
pub struct LiveStatus {
    /// The endpoint polled, without user info (`kubeconfig:<path>` before the first poll).
    pub endpoint: String,
    /// The last successful observation.
    pub last_good: Option<Arc<LiveData>>,
    /// The error of the last attempt; None after a success.
    pub error: Option<PollError>,
    /// Failures since the last success.
    pub consecutive_failures: u32,
    /// Counters since start (metrics).
    pub polls_total: u64,
    /// Failed polls since start, by [`PollError::kind`].
    pub failures_total: BTreeMap<&'static str, u64>,
    /// Whether the last round was served from watches (`[poll] watch`), not a list.
    pub watching: bool,
    /// Watch events applied (bookmarks excluded) since the current watches started.
    pub watch_events: u64,
    /// Lists restarted by the watches (410 Gone) since they started.
    pub relists: u64,
    /// The APIs the member serves (`group/version/Kind`), from its last discovery that
    /// succeeded; None until one did in this process.
    pub apis: Option<Arc<std::collections::BTreeSet<String>>>,
    /// Unix ms of that discovery (0 = none).
    pub apis_at_ms: u64,
    /// Why the last discovery failed (None after a success); [`LiveStatus::apis`] is kept.
    pub discovery_error: Option<PollError>,
    /// Discoveries since start (metrics, tests).
    pub discoveries_total: u64,
    /// The resource summary last computed from this member's nodes, shared by the view's
    /// copies ([`crate::members::SummaryMemo`]).
    pub summary: crate::members::SummaryMemo,
}

impl LiveStatus {
    /// Takes the outcome of one poll of the member (the poller's round, or a simulated
    /// member's): a success becomes the last good observation — keeping the last one's node
    /// list (the same `Arc`) when its nodes are equal, so what is kept per list (the
    /// snapshot's node digest, the member's summary) is not computed again — and clears the
    /// error; a failure keeps the last observation and counts. Returns whether anything the
    /// reconcile reads changed.
    pub fn observe(&mut self, result: Result<LiveData, PollError>) -> bool {
        self.polls_total += 1;
        match result {
            Ok(mut data) => {
                // A watch round builds a new node list from its cache.
                let same = match self.last_good.as_deref() {
                    Some(old) if old.nodes == data.nodes => {
                        data.nodes = Arc::clone(&old.nodes);
                        old.pods == data.pods && old.unbound == data.unbound
                    }
                    _ => false,
                };
                let changed = !same || self.error.is_some();
                self.last_good = Some(Arc::new(data));
                self.error = None;
                self.consecutive_failures = 0;
                changed
            }
            Err(e) => {
                self.watching = false;
                let changed = self.error.as_ref() != Some(&e);
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                *self.failures_total.entry(e.kind()).or_insert(0) += 1;
                self.error = Some(e);
                changed
            }
        }
    }
}

/// Per-cluster live state, as the reconcile consumes it.
#[derive(Debug, Clone, Default)]
pub struct LiveView {
    /// By cluster name.
    pub clusters: BTreeMap<String, LiveStatus>,
}

/// How a poll of a member cluster ended (the metrics' label `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollOutcome {
    /// Live poll answered.
    Ok,
    /// Live poll failed (connection, authentication, API error).
    Error,
    /// Live poll hit `poll.timeout`.
    Timeout,
    /// Offline cluster: the snapshot was built from the Cluster object's status.
    Offline,
}

impl PollOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            PollOutcome::Ok => "ok",
            PollOutcome::Error => "error",
            PollOutcome::Timeout => "timeout",
            PollOutcome::Offline => "offline",
        }
    }
}

/// One poll of one member in a round: how it ended and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollRecord {
    /// Cluster name.
    pub cluster: String,
    /// How the poll ended.
    pub outcome: PollOutcome,
    /// Wall time of the poll (for a watched member: reading its cache).
    pub duration: Duration,
}

/// What one round did.
#[derive(Debug, Clone, Default)]
pub struct RoundReport {
    /// Every poll made in the round (members backing off are not polled), by cluster name.
    pub polls: Vec<PollRecord>,
    /// Clusters polled successfully.
    pub ok: Vec<String>,
    /// Clusters whose poll failed, with the error and the backoff before the next attempt.
    pub failed: Vec<(String, PollError, Duration)>,
    /// Clusters skipped because they are backing off.
    pub skipped: Vec<String>,
    /// Clusters polled successfully after failed polls: the name and how many failed in a row.
    pub recovered: Vec<(String, u32)>,
    /// Whether anything the reconcile reads changed.
    pub changed: bool,
}
