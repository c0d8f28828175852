//! Watching a member (`[poll] watch`): after one list, a task per resource (nodes, pods)
//! watches from the list's resource version and applies the events to the member's
//! [`WatchCache`], shared with the poller behind a mutex. A stream that ends is re-watched
//! from the last version; 410 Gone relists that resource (bounded by a semaphore); a request
//! that fails leaves its error for the next round.

use super::*;

/// What a watched cluster's tasks share with the poller.
#[derive(Debug, Default)]
pub(super) struct Shared {
    pub(super) cache: WatchCache,
    /// Set by a watcher that stopped (its connection failed); the next round reports it.
    pub(super) failed: Option<PollError>,
    pub(super) events: u64,
    pub(super) relists: u64,
    /// Unix ms of the last event or bookmark received, or of the last list: how current the
    /// cache is known to be (a round served from it is stamped with this, not with its own time).
    pub(super) heard_ms: u64,
}

/// The watches of one cluster: a task per resource keeping [`Shared::cache`] up to date.
pub(super) struct Watcher {
    pub(super) target: Target,
    pub(super) shared: Arc<std::sync::Mutex<Shared>>,
    pub(super) tasks: Vec<tokio::task::AbortHandle>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// What the initial list of a watched cluster hands to its watchers.
pub(super) struct Start {
    pub(super) cache: WatchCache,
    pub(super) nodes_rv: String,
    pub(super) pods_rv: String,
}

pub(super) fn lock(m: &std::sync::Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A watched resource: how its events and relists change a [`WatchCache`].
pub(super) trait Watched: serde::de::DeserializeOwned + Keyed + Send + 'static {
    type Part: Sink<Self> + Default + Send;
    fn upsert(cache: &mut WatchCache, item: Self);
    fn delete(cache: &mut WatchCache, item: &Self);
    fn replace(cache: &mut WatchCache, part: Self::Part);
}

impl Watched for NodeItem {
    type Part = NodeCache;
    fn upsert(cache: &mut WatchCache, item: Self) {
        cache.nodes.upsert(item)
    }
    fn delete(cache: &mut WatchCache, item: &Self) {
        cache.nodes.delete(&item.metadata.name)
    }
    fn replace(cache: &mut WatchCache, part: NodeCache) {
        cache.nodes = part
    }
}

impl Watched for PodItem {
    type Part = PodCache;
    fn upsert(cache: &mut WatchCache, item: Self) {
        cache.pods.upsert(&item)
    }
    fn delete(cache: &mut WatchCache, item: &Self) {
        cache.pods.delete(&item.key())
    }
    fn replace(cache: &mut WatchCache, part: PodCache) {
        cache.pods = part
    }
}

/// Applies decoded events to a cache: the one place watch semantics live (the watcher and the
/// tests call it). Returns the last resource version seen, and the `ERROR` status that ends
/// the stream, if any (events after it are not applied).
pub(super) fn apply_events<T: Watched>(
    cache: &mut WatchCache,
    events: Vec<WatchEvent<T>>,
    rv: &mut String,
    applied: &mut u64,
) -> Option<crate::members::decode::StatusItem> {
    for ev in events {
        let seen = match ev {
            WatchEvent::Added(t) | WatchEvent::Modified(t) => {
                let seen = t.resource_version().map(str::to_string);
                T::upsert(cache, t);
                *applied += 1;
                seen
            }
            WatchEvent::Deleted(t) => {
                T::delete(cache, &t);
                *applied += 1;
                t.resource_version().map(str::to_string)
            }
            WatchEvent::Bookmark(t) => t.resource_version().map(str::to_string),
            WatchEvent::Error(s) => return Some(s),
        };
        if let Some(v) = seen.filter(|v| !v.is_empty()) {
            *rv = v;
        }
    }
    None
}

/// What a watcher task needs.
#[derive(Clone)]
pub(super) struct Ctx {
    pub(super) list: kube::Client,
    pub(super) watch: kube::Client,
    /// Held by a watch request of the cluster until it has its answer: the cluster's watches
    /// start one after the other, so that the second finds the first one's HTTP/2 connection
    /// in the client's pool instead of opening one more (the client learns which protocol the
    /// server speaks only from a TLS handshake: two requests at once would make two).
    pub(super) sending: Arc<tokio::sync::Mutex<()>>,
    /// How a watch gets a connection of its own when its request finds no room on the shared
    /// one (`None`: the watch client is kube's own, one connection per stream already).
    pub(super) own: Option<OwnConnection>,
    /// The member's credentials: had before a watch request is sent, so that an exec plugin
    /// that runs again (its credential expired) runs within its own budget, not the wait for
    /// the connection's answer.
    pub(super) credentials: Option<Arc<Credentials>>,
    pub(super) shared: Arc<std::sync::Mutex<Shared>>,
    pub(super) poll: PollSection,
    pub(super) permits: Arc<tokio::sync::Semaphore>,
    pub(super) timeout_secs: u64,
    pub(super) cluster: String,
    /// Stamps [`Shared::heard_ms`].
    pub(super) clock: Arc<dyn Clock>,
    /// When the shared watch connection last read anything.
    pub(super) wire: Arc<Wire>,
    /// Told when a watch stops with an error ([`Poller::watch_lost`]).
    pub(super) lost: Arc<tokio::sync::Notify>,
}

/// A watch's own HTTP/1.1 connection (kube's client, made when first needed): for a server
/// that lets a connection carry fewer streams than a member's two watches (HTTP/2's
/// `SETTINGS_MAX_CONCURRENT_STREAMS` below 2, which a proxy in front of an API server may
/// set), where the second watch's request would wait on the shared connection for good.
#[derive(Clone)]
pub(super) struct OwnConnection(Arc<kube::Config>, Option<Arc<Credentials>>);

impl OwnConnection {
    /// From the member's client configuration and credentials (shared with its list client).
    pub(super) fn new(cfg: Arc<kube::Config>, credentials: Option<Arc<Credentials>>) -> Self {
        OwnConnection(cfg, credentials)
    }

    /// The client, without a read timeout (a watch is idle between events).
    fn client(&self) -> Result<kube::Client, PollError> {
        let mut cfg = (*self.0).clone();
        cfg.read_timeout = None;
        client_of(cfg, self.1.clone())
    }
}

/// One resource's watch: re-watches from the last resource version when the stream ends,
/// relists on 410 Gone, and stops (leaving the error for the next round) when a request fails.
pub(super) async fn watch_loop<T: Watched>(ctx: Ctx, path: &'static str, what: &'static str, mut rv: String) {
    // This watch's own connection, once the shared one had no room for it.
    let mut own = None;
    loop {
        let started = Instant::now();
        let failed = match watch_once::<T>(&ctx, path, what, &mut rv, &mut own).await {
            Ok(events) => {
                if events == 0 && started.elapsed() < Duration::from_secs(1) {
                    // A stream that ends at once, repeatedly, must not spin.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            }
            Err(Got::Gone(message)) => {
                tracing::debug!(cluster = %ctx.cluster, what, %message, "watch expired (410 Gone); relisting");
                match relist::<T>(&ctx, path, what).await {
                    Ok(new_rv) => {
                        rv = new_rv;
                        continue;
                    }
                    Err(e) => e,
                }
            }
            Err(Got::Failed(e)) => e,
        };
        tracing::debug!(cluster = %ctx.cluster, what, error = %failed, "watch stopped");
        lock(&ctx.shared).failed = Some(failed);
        ctx.lost.notify_one();
        return;
    }
}

/// Lists `path` again (at most `poll.concurrency` relists at once, within `poll.timeout`) and
/// replaces that part of the cache; returns the list's resource version.
pub(super) async fn relist<T: Watched>(ctx: &Ctx, path: &str, what: &'static str) -> Result<String, PollError> {
    let _permit = ctx.permits.acquire().await.map_err(|e| PollError::Transport { what, message: e.to_string() })?;
    let list = async {
        let mut part = T::Part::default();
        let (_, rv) = list_all::<T, _>(&ctx.list, path, what, ctx.poll.page_size, &mut part).await?;
        Ok::<_, PollError>((part, rv))
    };
    let (part, rv) =
        tokio::time::timeout(ctx.poll.timeout, list).await.map_err(|_| PollError::Deadline(ctx.poll.timeout))??;
    let mut sh = lock(&ctx.shared);
    T::replace(&mut sh.cache, part);
    sh.relists += 1;
    sh.heard_ms = ctx.clock.now_ms();
    Ok(rv)
}

/// One watch request, read until the stream ends. `Ok(events applied)` when it ended normally
/// (server timeout, closed, idle longer than `timeoutSeconds` + `read_timeout`, broken
/// mid-stream): re-watch from `rv`. `Gone` for 410 (as a status or an `ERROR` event).
///
/// A request the shared watch connection does not answer within `read_timeout` is sent once
/// more on a connection of the watch's own ([`OwnConnection`]), which it keeps in `own`: a
/// server that allows one stream per connection is watched that way, and a server that hangs
/// fails after the second wait.
pub(super) async fn watch_once<T: Watched>(
    ctx: &Ctx,
    path: &str,
    what: &'static str,
    rv: &mut String,
    own: &mut Option<kube::Client>,
) -> Result<u64, Got> {
    let url = format!(
        "{path}?watch=1&resourceVersion={}&allowWatchBookmarks=true&timeoutSeconds={}",
        crate::util::percent::encode(rv),
        ctx.timeout_secs
    );
    let failed = |message: String| Got::Failed(PollError::Transport { what, message });
    if let Some(c) = &ctx.credentials {
        c.header().await.map_err(|e| Got::Failed(e.into()))?;
    }
    let sent = loop {
        let req = http::Request::get(url.as_str())
            .header(http::header::ACCEPT, "application/json")
            .body(kube::client::Body::from(Vec::new()))
            .map_err(|e| failed(e.to_string()))?;
        let client = own.as_ref().unwrap_or(&ctx.watch);
        let sent = {
            let _turn = ctx.sending.lock().await;
            tokio::time::timeout(ctx.poll.read_timeout, client.send(req)).await
        };
        match (&sent, &ctx.own) {
            (Err(_), Some(connection)) if own.is_none() => {
                tracing::debug!(cluster = %ctx.cluster, what, "no answer on the shared watch connection; watching on a connection of its own");
                *own = Some(connection.client().map_err(Got::Failed)?);
            }
            _ => break sent,
        }
    };
    let res = match sent {
        Err(_) => {
            return Err(failed(format!(
                "watch: no response within {}",
                humantime::format_duration(ctx.poll.read_timeout)
            )));
        }
        Ok(Err(e)) => return Err(send_error(&e, what, "watch: ")),
        Ok(Ok(r)) => r,
    };
    let status = res.status();
    let mut body = res.into_body();
    if !status.is_success() {
        let bytes = tokio::time::timeout(ctx.poll.read_timeout, http_body_util::Limited::new(body, 1 << 20).collect())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(http_error(status.as_u16(), status_message(&bytes), what));
    }
    tracing::trace!(cluster = %ctx.cluster, what, rv = %rv, "watching");
    let idle = Duration::from_secs(ctx.timeout_secs) + ctx.poll.read_timeout;
    let mut buf: Vec<u8> = Vec::new();
    let mut applied = 0u64;
    loop {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Ok(applied),
            Ok(None) => {
                if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Err(Got::Failed(PollError::Decode {
                        what,
                        message: format!("watch stream ended inside an event ({} bytes)", buf.len()),
                    }));
                }
                return Ok(applied);
            }
            Ok(Some(Err(e))) => {
                // A connection that answers is read at least every `watch_ping_interval` (the
                // pings): one that broke after a silence longer than that and most of
                // `read_timeout` was closed for a ping left unanswered. The server hangs
                // (stopped, or the path to it): this round's error, not a wait on a new
                // connection that would hang as well.
                let ping = ctx.poll.watch_ping_interval;
                let hung = match ctx.wire.quiet_for() {
                    Some(quiet) if own.is_none() && !ping.is_zero() && quiet >= ping + ctx.poll.read_timeout / 2 => {
                        Some(quiet)
                    }
                    _ => None,
                };
                if let Some(quiet) = hung {
                    return Err(failed(format!(
                        "watch: the server answered nothing, not even a ping, for {}",
                        humantime::format_duration(Duration::from_secs(quiet.as_secs()))
                    )));
                }
                tracing::debug!(cluster = %ctx.cluster, what, error = %chain(&e), "watch stream broke; re-watching");
                return Ok(applied);
            }
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else { continue };
        tracing::trace!(cluster = %ctx.cluster, what, bytes = data.len(), "watch data");
        buf.extend_from_slice(&data);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(i) = buf[start..].iter().position(|b| *b == b'\n') {
            let line = &buf[start..start + i];
            start += i + 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let ev =
                decode_event::<T>(line).map_err(|e| Got::Failed(PollError::Decode { what, message: e.to_string() }))?;
            events.push(ev);
        }
        buf.drain(..start);
        if buf.len() > MAX_PAGE_BYTES {
            return Err(Got::Failed(PollError::Decode { what, message: "watch event larger than 64 MiB".into() }));
        }
        if events.is_empty() {
            continue;
        }
        let ended = {
            let mut sh = lock(&ctx.shared);
            let mut n = 0;
            let ended = apply_events(&mut sh.cache, events, rv, &mut n);
            sh.events += n;
            // An event or a bookmark: the cache is current as of now.
            sh.heard_ms = ctx.clock.now_ms();
            applied += n;
            ended
        };
        tracing::trace!(cluster = %ctx.cluster, what, applied, rv = %rv, "watch events applied");
        if let Some(s) = ended {
            if s.code == Some(410) {
                return Err(Got::Gone(s.message));
            }
            tracing::debug!(cluster = %ctx.cluster, what, code = ?s.code, message = %s.message, "watch ERROR event; re-watching");
            return Ok(applied);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::members::decode::{Fold, Observation};

    /// A pseudo-random pod or node as the API serves it.
    fn pod_json(r: u64, name: &str, rv: u64) -> String {
        let node =
            ["\"nodeName\":\"n1\",", "\"nodeName\":\"n2\",", "", "\"nodeName\":\"ghost\",", "\"nodeName\":\"\","]
                [(r % 5) as usize];
        let phase = ["Running", "Pending", "Succeeded", "Failed", "Running"][((r >> 3) % 5) as usize];
        // Conditions and times as a kubelet and scheduler write them, or missing.
        let t = |k: u64| format!("2026-11-01T10:0{}:00Z", k % 4);
        let cond = match (r >> 6) % 9 {
            0 | 1 => format!(
                r#","conditions":[{{"type":"PodScheduled","status":"False","reason":"Unschedulable","lastTransitionTime":"{}"}}]"#,
                t(r >> 12)
            ),
            2 => r#","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]"#.to_string(),
            3 => r#","conditions":[{"type":"PodScheduled","status":"False","reason":"SchedulingGated"}]"#.to_string(),
            4 => format!(
                r#","conditions":[{{"type":"Ready","status":"True","lastTransitionTime":"{}"}},{{"type":"PodScheduled","status":"True"}}]"#,
                t(r >> 12)
            ),
            5 => format!(
                r#","conditions":[{{"type":"Ready","status":"False","reason":"ContainersNotReady","lastTransitionTime":"{}"}}]"#,
                t(r >> 12)
            ),
            6 => r#","conditions":[{"type":"Ready","status":"False","lastTransitionTime":null}]"#.to_string(),
            _ => String::new(),
        };
        let created = match (r >> 14) % 3 {
            0 => String::new(),
            k => format!(r#","creationTimestamp":"2026-10-2{k}T08:00:00.5Z""#),
        };
        let owner = match (r >> 8) % 4 {
            0 => String::new(),
            k => format!(r#","ownerReferences":[{{"kind":"ReplicaSet","name":"rs-{k}","controller":true}}]"#),
        };
        let req = ["\"cpu\":\"250m\"", "\"cpu\":\"1\",\"memory\":\"64Mi\"", "\"memory\":\"1Gi\"", ""]
            [((r >> 10) % 4) as usize];
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"{owner}{created},"annotations":{{"x":"{r}"}}}},"spec":{{{node}"containers":[{{"resources":{{"requests":{{{req}}}}}}}]}},"status":{{"phase":"{phase}"{cond}}}}}"#
        )
    }

    fn node_json(r: u64, name: &str, rv: u64) -> String {
        let unsched = r.is_multiple_of(2);
        format!(
            r#"{{"metadata":{{"name":"{name}","resourceVersion":"{rv}","labels":{{"r":"{}"}}}},"spec":{{"unschedulable":{unsched}}},"status":{{"allocatable":{{"cpu":"4","memory":"8Gi"}},"conditions":[{{"type":"Ready","status":"True"}}]}}}}"#,
            r % 7
        )
    }

    fn fresh(nodes: &BTreeMap<String, String>, pods: &BTreeMap<String, String>) -> Observation {
        let page = |items: &BTreeMap<String, String>| {
            format!(
                r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#,
                items.values().cloned().collect::<Vec<_>>().join(",")
            )
        };
        let mut f = Fold::default();
        f.nodes(decode_page::<NodeItem>(page(nodes).as_bytes()).expect("nodes").items);
        f.pods(decode_page::<PodItem>(page(pods).as_bytes()).expect("pods").items);
        f.finish()
    }

    fn event<T: Watched>(kind: &str, object: &str) -> WatchEvent<T> {
        decode_event::<T>(format!(r#"{{"type":"{kind}","object":{object}}}"#).as_bytes()).expect("event")
    }

    #[test]
    fn the_watched_cache_equals_a_fresh_list_after_any_sequence_of_events() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            seed >> 20
        };
        let (mut nodes, mut pods) = (BTreeMap::new(), BTreeMap::new());
        let mut cache = WatchCache::default();
        let (mut rv, mut seen, mut applied) = (1u64, String::new(), 0u64);
        let mut relists = 0;
        for step in 0..2000 {
            rv += 1;
            let r = next();
            match r % 10 {
                0..=4 => {
                    let name = format!("p{}", next() % 40);
                    let kind = if pods.contains_key(&name) { "MODIFIED" } else { "ADDED" };
                    let json = pod_json(next(), &name, rv);
                    pods.insert(name, json.clone());
                    apply_events::<PodItem>(&mut cache, vec![event(kind, &json)], &mut seen, &mut applied);
                }
                5 | 6 => {
                    let Some(name) = pods.keys().nth((next() % 40) as usize % pods.len().max(1)).cloned() else {
                        continue;
                    };
                    let json = pods.remove(&name).expect("present");
                    apply_events::<PodItem>(&mut cache, vec![event("DELETED", &json)], &mut seen, &mut applied);
                }
                7 => {
                    let name = format!("n{}", 1 + next() % 3);
                    let json = node_json(next(), &name, rv);
                    nodes.insert(name, json.clone());
                    apply_events::<NodeItem>(&mut cache, vec![event("MODIFIED", &json)], &mut seen, &mut applied);
                }
                8 => {
                    let name = format!("n{}", 1 + next() % 3);
                    if let Some(json) = nodes.remove(&name) {
                        apply_events::<NodeItem>(&mut cache, vec![event("DELETED", &json)], &mut seen, &mut applied);
                    }
                }
                _ => {
                    // A bookmark, or (one time in four) 410 Gone: events were missed (a pod
                    // changes unseen), then the relist replaces the pods.
                    let b = format!(r#"{{"metadata":{{"resourceVersion":"{rv}"}}}}"#);
                    let mut evs = vec![event::<PodItem>("BOOKMARK", &b)];
                    if next().is_multiple_of(4) {
                        let unseen = format!("unseen-{step}");
                        pods.insert(unseen.clone(), pod_json(next(), &unseen, rv));
                        evs.push(event(
                            "ERROR",
                            r#"{"kind":"Status","code":410,"reason":"Expired","message":"too old"}"#,
                        ));
                        let gone = apply_events::<PodItem>(&mut cache, evs, &mut seen, &mut applied);
                        assert_eq!(gone.and_then(|s| s.code), Some(410));
                        assert_ne!(cache.observation(), fresh(&nodes, &pods), "step {step}: the missed event shows");
                        let page = format!(r#"{{"items":[{}]}}"#, pods.values().cloned().collect::<Vec<_>>().join(","));
                        let mut part = PodCache::default();
                        part.add(decode_page::<PodItem>(page.as_bytes()).expect("page").items);
                        PodItem::replace(&mut cache, part);
                        relists += 1;
                    } else {
                        assert!(apply_events(&mut cache, evs, &mut seen, &mut applied).is_none());
                    }
                    assert_eq!(seen, rv.to_string());
                }
            }
            assert_eq!(cache.observation(), fresh(&nodes, &pods), "step {step}");
        }
        assert!(relists > 5 && applied > 1000, "{relists} relists, {applied} events");
        let o = cache.observation();
        assert!(o.pods.bound > 0 && o.pods.unbound > 0 && !o.pods.unschedulable.is_empty(), "{o:?}");
        // The owners' states were exercised: ready and not-ready pods, timestamps from the
        // conditions and from the creation time, several reasons.
        let states: Vec<&crate::model::OwnerState> = o.pods.owners.values().collect();
        assert!(states.iter().any(|s| s.ready > 0) && states.iter().any(|s| s.running > s.ready), "{states:?}");
        let reasons: std::collections::BTreeSet<&String> =
            states.iter().flat_map(|s| s.pending_reasons.keys()).collect();
        assert!(reasons.len() >= 4, "{reasons:?}");
        assert!(states.iter().any(|s| s.unschedulable_since.iter().any(|t| *t > 1_790_000_000_000)), "{states:?}");
        for (k, s) in &o.pods.owners {
            assert_eq!(o.pods.by_owner.get(k), Some(&s.pods), "{k}");
            assert_eq!(s.not_ready_since.len() as u32, s.pods - s.ready, "{k}");
            assert_eq!(s.pending_reasons.values().sum::<u32>(), s.pods - s.ready, "{k}");
            assert!(s.not_ready_since.is_sorted() && s.unschedulable_since.is_sorted(), "{k}");
        }
    }

    #[test]
    fn events_decode_in_any_field_order_and_errors_name_the_event() {
        let e =
            decode_event::<PodItem>(br#"{"object":{"metadata":{"name":"a","resourceVersion":"5"}},"type":"ADDED"}"#)
                .expect("object first");
        assert!(matches!(e, WatchEvent::Added(p) if p.metadata.name == "a" && p.resource_version() == Some("5")));
        let e =
            decode_event::<NodeItem>(br#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410}}"#)
                .expect("error");
        assert!(matches!(e, WatchEvent::Error(s) if s.code == Some(410)));
        assert!(decode_event::<PodItem>(br#"{"type":"SOMETHING","object":{}}"#).is_err());
        assert!(decode_event::<PodItem>(br#"{"type":"ADDED","object":{"spec":{"containers":3}}}"#).is_err());
    }
}
