//! Watches of the simulated API: a resource version per cluster that every change advances,
//! a bounded window of past events, and the streams that replay and follow it.
//!
//! Every change to a served cluster goes through [`WatchLog::record`] (the GitOps agent, the
//! admin object endpoints, the churn generator): it stamps the object's
//! `metadata.resourceVersion` with the next version, keeps the event line
//! (`{"type":"MODIFIED","object":{…}}\n`, serialized once) in the window and wakes the
//! streams. A watch from version `v` replays the retained events after `v`, then follows;
//! when events after `v` have left the window it gets an `ERROR` event with a 410 `Status`
//! (as the API server answers "too old resource version") and must relist. With
//! `allowWatchBookmarks`, a `BOOKMARK` with the current version is sent every
//! [`BOOKMARK_EVERY`]. `timeoutSeconds` ends the stream. Closing the streams (a fault set, the
//! `watches/close` admin endpoint) makes every watcher re-watch; compacting (`watches/compact`)
//! makes every watcher relist.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Frame;
use serde_json::{Value, json};

use super::server::State;

/// How often an idle stream receives a `BOOKMARK`.
pub const BOOKMARK_EVERY: Duration = Duration::from_secs(5);
/// Default number of events a cluster retains for watches (`--watch-window`).
pub const DEFAULT_WINDOW: usize = 256;
/// Longest stream when the client gives no `timeoutSeconds`.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(1800);

/// The watched resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `/api/v1/nodes`.
    Nodes,
    /// `/api/v1/pods` (and per namespace).
    Pods,
}

impl Resource {
    fn kind(self) -> &'static str {
        match self {
            Resource::Nodes => "Node",
            Resource::Pods => "Pod",
        }
    }
}

/// One retained event.
#[derive(Debug, Clone)]
struct Event {
    rv: u64,
    resource: Resource,
    namespace: String,
    line: Bytes,
}

/// A cluster's resource version and its window of events.
#[derive(Debug)]
pub struct WatchLog {
    /// The cluster's resource version: the version of its latest change.
    pub rv: u64,
    /// Watches from a version below this must relist (events after it are gone).
    pub compacted: u64,
    /// Bumped to end every open stream of the cluster.
    pub generation: u64,
    /// Events retained.
    pub window: usize,
    events: VecDeque<Event>,
    notify: Arc<tokio::sync::Notify>,
    produced: Arc<AtomicU64>,
}

impl WatchLog {
    /// A log at version 1 that retains `window` events; `produced` counts every event recorded.
    pub fn new(window: usize, produced: Arc<AtomicU64>) -> WatchLog {
        WatchLog {
            rv: 1,
            compacted: 0,
            generation: 0,
            window: window.max(1),
            events: VecDeque::new(),
            notify: Arc::new(tokio::sync::Notify::new()),
            produced,
        }
    }

    /// Records a change: `kind` is `ADDED`, `MODIFIED` or `DELETED`; `obj` is the object as it
    /// is now (or was last), and gets the new `metadata.resourceVersion`.
    pub fn record(&mut self, resource: Resource, kind: &str, obj: &mut Value) {
        self.rv += 1;
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), json!(self.rv.to_string()));
        }
        let mut shown = obj.clone();
        if let Some(o) = shown.as_object_mut() {
            o.insert("apiVersion".into(), json!("v1"));
            o.insert("kind".into(), json!(resource.kind()));
        }
        let namespace = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string();
        self.events.push_back(Event { rv: self.rv, resource, namespace, line: event_line(kind, &shown) });
        while self.events.len() > self.window {
            if let Some(e) = self.events.pop_front() {
                self.compacted = e.rv;
            }
        }
        self.produced.fetch_add(1, Ordering::Relaxed);
        self.notify.notify_waiters();
    }

    /// Ends every open stream (watchers re-watch from their last version).
    pub fn close_streams(&mut self) {
        self.generation += 1;
        self.notify.notify_waiters();
    }

    /// Forgets every event and moves the version on: every watcher must relist.
    pub fn compact(&mut self) {
        self.rv += 1;
        self.compacted = self.rv;
        self.events.clear();
        self.close_streams();
    }

    /// Retained events after `from` for `resource` (in `namespace`, if given), or None when
    /// some are gone (410).
    fn since(&self, from: u64, resource: Resource, namespace: Option<&str>) -> Option<Vec<Bytes>> {
        if from < self.compacted {
            return None;
        }
        let start = self.events.partition_point(|e| e.rv <= from);
        Some(
            self.events
                .range(start..)
                .filter(|e| e.resource == resource && namespace.is_none_or(|ns| e.namespace == ns))
                .map(|e| e.line.clone())
                .collect(),
        )
    }
}

/// A response body fed by a channel: the lines of one watch stream, their bytes counted.
pub struct ChannelBody(pub tokio::sync::mpsc::Receiver<Bytes>, pub Arc<AtomicU64>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let sent = Arc::clone(&self.1);
        self.0.poll_recv(cx).map(|o| {
            o.map(|b| {
                sent.fetch_add(b.len() as u64, Ordering::Relaxed);
                Ok(Frame::data(b))
            })
        })
    }
}

/// What a watch request asked for.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    /// Cluster name.
    pub cluster: String,
    /// Nodes or pods.
    pub resource: Resource,
    /// Only this namespace's pods.
    pub namespace: Option<String>,
    /// `resourceVersion`: None (or `0`) starts with an `ADDED` event per current object.
    pub from: Option<u64>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// A damaged stream (the `truncate` / `invalidJson` faults): `Some(true)` half a line,
    /// `Some(false)` a line that is not JSON.
    pub damaged: Option<bool>,
    /// Answer with a 410 `ERROR` event at once (the `goneOnContinue` fault).
    pub gone: bool,
}

/// `{"type":KIND,"object":OBJECT}` and a newline, `type` first (as the API server writes it:
/// a decoder can then decode the object by its type in one pass).
fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = format!(r#"{{"type":"{kind}","object":"#).into_bytes();
    serde_json::to_writer(&mut line, object).unwrap_or_default();
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

fn error_line(code: u16, reason: &str, message: &str) -> Bytes {
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code});
    event_line("ERROR", &status)
}

fn bookmark_line(resource: Resource, rv: u64) -> Bytes {
    event_line(
        "BOOKMARK",
        &json!({"kind": resource.kind(), "apiVersion": "v1", "metadata": {"resourceVersion": rv.to_string()}}),
    )
}

/// Counts the open streams while alive.
struct Open(Arc<AtomicU64>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Feeds one watch stream until it times out, is closed, or the client goes away.
pub async fn stream(state: Arc<State>, w: WatchRequest, tx: tokio::sync::mpsc::Sender<Bytes>) {
    state.open_watches.fetch_add(1, Ordering::Relaxed);
    let _open = Open(Arc::clone(&state.open_watches));
    if let Some(half) = w.damaged {
        let line =
            if half { bookmark_line(w.resource, 1).slice(..20) } else { Bytes::from_static(b"<html>oops</html>\n") };
        let _ = tx.send(line).await;
        return;
    }
    if w.gone {
        let _ = tx.send(error_line(410, "Expired", "too old resource version (injected fault)")).await;
        return;
    }
    let deadline = tokio::time::Instant::now() + w.timeout;
    // The stream's start: the generation it belongs to, and the version it has sent up to.
    let (generation, notify, mut last, initial) = {
        let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
        let Some(c) = clusters.get(&w.cluster) else { return };
        let initial: Vec<Bytes> = match w.from {
            Some(v) if v > 0 => Vec::new(),
            _ => {
                let items = match w.resource {
                    Resource::Nodes => &c.fleet.nodes,
                    Resource::Pods => &c.fleet.pods,
                };
                items
                    .iter()
                    .filter(|v| {
                        w.namespace
                            .as_deref()
                            .is_none_or(|ns| v.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns))
                    })
                    .map(|v| {
                        let mut shown = v.clone();
                        if let Some(o) = shown.as_object_mut() {
                            o.insert("apiVersion".into(), json!("v1"));
                            o.insert("kind".into(), json!(w.resource.kind()));
                        }
                        event_line("ADDED", &shown)
                    })
                    .collect()
            }
        };
        let from = w.from.filter(|v| *v > 0).unwrap_or(c.log.rv);
        (c.log.generation, Arc::clone(&c.log.notify), from, initial)
    };
    for line in initial {
        if tx.send(line).await.is_err() {
            return;
        }
    }
    let mut next_bookmark = tokio::time::Instant::now() + BOOKMARK_EVERY;
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (lines, rv) = {
            let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
            let Some(c) = clusters.get(&w.cluster) else { return };
            if c.log.generation != generation {
                return;
            }
            (c.log.since(last, w.resource, w.namespace.as_deref()), c.log.rv)
        };
        let Some(lines) = lines else {
            let _ = tx.send(error_line(410, "Expired", &format!("too old resource version: {last} (compacted)"))).await;
            return;
        };
        for line in lines {
            if tx.send(line).await.is_err() {
                return;
            }
        }
        last = rv;
        if w.bookmarks && tokio::time::Instant::now() >= next_bookmark {
            if tx.send(bookmark_line(w.resource, rv)).await.is_err() {
                return;
            }
            next_bookmark = tokio::time::Instant::now() + BOOKMARK_EVERY;
        }
        let wake = if w.bookmarks { next_bookmark.min(deadline) } else { deadline };
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(wake) => {}
            _ = tx.closed() => return,
        }
        if tokio::time::Instant::now() >= deadline {
            return;
        }
    }
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            if let Some(t) = target.as_object_mut() {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// Modifies `per_second` pods per cluster per second (an annotation counter, as status
/// updates do), round robin: a steady stream of `MODIFIED` events for the benchmarks.
pub async fn churn(state: Arc<State>, per_second: f64) {
    const TICK: Duration = Duration::from_millis(100);
    let mut owed = 0.0f64;
    let mut cursor = 0usize;
    let mut counter = 0u64;
    loop {
        tokio::time::sleep(TICK).await;
        owed += per_second * TICK.as_secs_f64();
        let n = owed.floor() as usize;
        owed -= n as f64;
        if n == 0 {
            continue;
        }
        let mut clusters = state.clusters.write().unwrap_or_else(|p| p.into_inner());
        for c in clusters.values_mut() {
            let len = c.fleet.pods.len();
            if len == 0 {
                continue;
            }
            for i in 0..n {
                counter += 1;
                let pod = &mut c.fleet.pods[(cursor + i) % len];
                if let Some(m) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
                    let a = m.entry("annotations").or_insert_with(|| json!({}));
                    if let Some(a) = a.as_object_mut() {
                        a.insert("simulator.fedsched.io/churn".into(), json!(counter.to_string()));
                    }
                }
                c.log.record(Resource::Pods, "MODIFIED", pod);
            }
        }
        cursor = cursor.wrapping_add(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_answers_since_or_gone() {
        let mut log = WatchLog::new(2, Arc::new(AtomicU64::new(0)));
        let mut pod = json!({"metadata": {"name": "a", "namespace": "ns"}});
        log.record(Resource::Pods, "ADDED", &mut pod);
        assert_eq!(pod["metadata"]["resourceVersion"], "2");
        let mut node = json!({"metadata": {"name": "n"}});
        log.record(Resource::Nodes, "MODIFIED", &mut node);
        assert_eq!(log.since(1, Resource::Pods, None).map(|v| v.len()), Some(1));
        let line = &log.since(1, Resource::Pods, None).expect("retained")[0];
        assert!(line.starts_with(br#"{"type":"ADDED","object":{"#) && line.ends_with(b"}}\n"), "{line:?}");
        assert_eq!(log.since(1, Resource::Pods, Some("other")).map(|v| v.len()), Some(0));
        assert_eq!(log.since(2, Resource::Pods, None).map(|v| v.len()), Some(0));
        log.record(Resource::Pods, "DELETED", &mut pod);
        // The first event left the window: a watch from 1 must relist, from 2 may go on.
        assert!(log.since(1, Resource::Pods, None).is_none());
        assert_eq!(log.since(2, Resource::Pods, None).map(|v| v.len()), Some(1));
        log.compact();
        assert!(log.since(4, Resource::Pods, None).is_none());
        assert_eq!(log.since(5, Resource::Pods, None).map(|v| v.len()), Some(0));
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut v = json!({"spec": {"unschedulable": false, "taints": [1]}, "a": 1});
        merge_patch(&mut v, &json!({"spec": {"unschedulable": true, "taints": null}, "b": {"c": 2}}));
        assert_eq!(v, json!({"spec": {"unschedulable": true}, "a": 1, "b": {"c": 2}}));
    }
}
