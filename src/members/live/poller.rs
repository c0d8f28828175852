//! The poller and its round: which members to poll now (not backing off), at most
//! `poll.concurrency` at once, each within `poll.timeout`; watched members read from their
//! cache; the outcome of each poll goes into the [`RoundReport`]; failures back off
//! exponentially with jitter.

use super::*;

/// A member's API list (`group/version/Kind` entries), shared with its status.
type Apis = Arc<std::collections::BTreeSet<String>>;

/// What listing a cluster gave: its data and, when watching, the cache the watches start from.
pub(super) type Listed = Result<(LiveData, Option<Start>), PollError>;

/// The poller: one kube client per cluster, kept between rounds, and the per-cluster state.
pub struct Poller {
    poll: PollSection,
    interval: Duration,
    clients: BTreeMap<String, Built>,
    watchers: BTreeMap<String, Watcher>,
    /// Bounds the lists the watchers restart (410 Gone) to `poll.concurrency` at once.
    permits: Arc<tokio::sync::Semaphore>,
    next_attempt: BTreeMap<String, Instant>,
    /// When each member's next discovery is due, and its discoveries failed in a row; a member
    /// without an entry is due at its next successful poll.
    discovery: BTreeMap<String, (Instant, u32)>,
    view: LiveView,
    seed: u64,
    /// Stamps each observation (`PollFacts::at_ms`).
    clock: Arc<dyn Clock>,
    /// [`Poller::watch_lost`].
    lost: Arc<tokio::sync::Notify>,
    /// The workload objects to read per member ([`Poller::want_objects`]).
    objects: BTreeMap<String, Vec<crate::policy::ObjectKey>>,
    /// Each member's resource names that are not the guess from their kind, from its last
    /// discovery ([`Discovered::resources`]).
    resources: BTreeMap<String, Arc<BTreeMap<String, String>>>,
}

/// What a poll saw, as the view keeps it: the observation, with how the poll went.
pub fn live_data(obs: Observation, duration: Duration, pages: u32, at_ms: u64) -> LiveData {
    let poll = PollFacts {
        duration_ms: duration.as_millis() as u64,
        pages,
        nodes: obs.nodes.len() as u32,
        pods: obs.listed_pods,
        at_ms,
    };
    LiveData::of(obs, poll)
}

impl Poller {
    /// A poller; `interval` is the poll interval (the base of the backoff).
    pub fn new(poll: PollSection, interval: Duration) -> Poller {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x5eed);
        Poller {
            permits: Arc::new(tokio::sync::Semaphore::new(poll.concurrency.max(1))),
            poll,
            interval,
            clients: BTreeMap::new(),
            watchers: BTreeMap::new(),
            next_attempt: BTreeMap::new(),
            discovery: BTreeMap::new(),
            view: LiveView::default(),
            seed,
            clock: Arc::new(SystemClock),
            lost: Arc::default(),
            objects: BTreeMap::new(),
            resources: BTreeMap::new(),
        }
    }

    /// The workload objects (Deployments, StatefulSets, DaemonSets) each member's rounds read
    /// besides its nodes and pods: one `LIST` per kind and namespace where a member has two or
    /// more of them to read, else one `GET` per object, each round; their status in the
    /// member's [`PodFacts::objects`]; a GitOps agent's object (Flux `Kustomization`, Argo CD
    /// `Application`) by a `GET`, its sync state in [`PodFacts::agents`]; another kind's object
    /// by a `GET`, as read, in [`PodFacts::interpreted`]. A progressive rollout asks for its
    /// gated stage's members, or those of the stage whose release waits for them
    /// ([`crate::reconcile::PassReport::rollout_objects`]); nothing is read when none is under
    /// way. Returns whether a member has an object to read that it had not before.
    pub fn want_objects(&mut self, objects: BTreeMap<String, Vec<crate::policy::ObjectKey>>) -> bool {
        let new = objects
            .iter()
            .any(|(c, keys)| keys.iter().any(|k| !self.objects.get(c).is_some_and(|had| had.contains(k))));
        self.objects = objects;
        new
    }

    /// Reads the objects [`Poller::want_objects`] asked for on a member this round's poll
    /// reached, into its data. An object the member does not have, or cannot give (an error, a
    /// timeout), is left out: the rollout then judges from the pods alone.
    ///
    /// When every object asked for was answered (read, or not found), the data is stamped as
    /// current as the round's start of these reads (`poll.at_ms`; with watches it is otherwise
    /// the last event's time): a rollout holds a stage's release until its members' objects
    /// were read by a poll not older than the release.
    async fn read_objects(&self, name: &str, client: &kube::Client, data: &mut LiveData) {
        let Some(keys) = self.objects.get(name).filter(|k| !k.is_empty()) else { return };
        let started_ms = self.clock.now_ms();
        let apis = self.view.clusters.get(name).and_then(|s| s.apis.as_deref());
        let served = apis.map(|a| (a, self.resources.get(name).map(|r| &**r)));
        let (mut read, mut agents, mut interpreted) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        let (listed, mut answered) = self.list_objects(client, keys, served, &mut read).await;
        for key in keys.iter().filter(|k| !listed.contains(k)) {
            let Some(url) = object_url(key, served) else { continue };
            let limit = crate::members::decode::MAX_RAW_OBJECT_BYTES;
            let got = tokio::time::timeout(
                self.poll.timeout,
                super::list::get_limited(client, &url, "workload object", "application/json", limit),
            )
            .await;
            match got {
                Ok(Ok(bytes)) if !crate::model::ObjectStatus::of_kind(key) && !is_agent(key) => {
                    match crate::members::decode::decode_raw_object(&bytes) {
                        Ok(o) => {
                            interpreted.insert(key.display_ref(), o);
                        }
                        Err(e) => {
                            tracing::debug!(cluster = name, object = %key.display_ref(), error = %e, "workload object not decoded")
                        }
                    }
                }
                Ok(Ok(bytes)) if is_agent(key) => match crate::members::decode::decode_agent_status(&bytes) {
                    Ok(status) => {
                        agents.insert(key.display_ref(), status);
                    }
                    Err(e) => {
                        tracing::debug!(cluster = name, object = %key.display_ref(), error = %e, "GitOps agent object not decoded")
                    }
                },
                Ok(Ok(bytes)) => match crate::members::decode::decode_object_status(&bytes) {
                    Ok(status) => {
                        read.insert(key.display_ref(), status);
                    }
                    Err(e) => {
                        tracing::debug!(cluster = name, object = %key.display_ref(), error = %e, "workload object not decoded")
                    }
                },
                Ok(Err(Got::Failed(PollError::Http { status: 404, .. }))) => {}
                Ok(Err(_)) | Err(_) => {
                    answered = false;
                    tracing::debug!(cluster = name, object = %key.display_ref(), "workload object not read")
                }
            }
        }
        if answered {
            data.poll.at_ms = data.poll.at_ms.max(started_ms);
        }
        if !read.is_empty() || !agents.is_empty() || !interpreted.is_empty() {
            let pods = Arc::make_mut(&mut data.pods);
            pods.objects = read;
            pods.agents = agents;
            pods.interpreted = interpreted;
        }
    }

    /// Reads with one `LIST` each the workload objects (Deployments, StatefulSets, DaemonSets)
    /// of `keys` that share their kind and namespace with another one, into `read`, within
    /// `poll.timeout` each list; returns the keys listed (read, not in the list, or in a list
    /// that failed: not read by a `GET` either, the next round lists again) and whether every
    /// list was answered.
    async fn list_objects<'k>(
        &self,
        client: &kube::Client,
        keys: &'k [crate::policy::ObjectKey],
        served: Option<Served<'_>>,
        read: &mut BTreeMap<String, crate::model::ObjectStatus>,
    ) -> (std::collections::BTreeSet<&'k crate::policy::ObjectKey>, bool) {
        let mut groups: BTreeMap<String, Vec<&crate::policy::ObjectKey>> = BTreeMap::new();
        for key in keys.iter().filter(|k| crate::model::ObjectStatus::of_kind(k)) {
            // The collection's path: the object's, without its name.
            if let Some(url) = object_url(key, served)
                && let Some((collection, _)) = url.rsplit_once('/')
            {
                groups.entry(collection.to_string()).or_default().push(key);
            }
        }
        let (mut listed, mut answered) = (std::collections::BTreeSet::new(), true);
        for (collection, members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
            let kind = members[0].kind.clone();
            let got =
                tokio::time::timeout(self.poll.timeout, list_statuses(client, &collection, &kind, self.poll.page_size))
                    .await;
            let mut found = match got {
                Ok(Ok(found)) => found,
                Ok(Err(e)) => {
                    tracing::debug!(collection, error = %e, "workload objects not listed");
                    answered = false;
                    BTreeMap::new()
                }
                Err(_) => {
                    tracing::debug!(collection, "workload objects not listed: timeout");
                    answered = false;
                    BTreeMap::new()
                }
            };
            for key in members {
                if let Some(status) = found.remove(key.name.as_str()) {
                    read.insert(key.display_ref(), status);
                }
                listed.insert(key);
            }
        }
        (listed, answered)
    }

    /// Told when a member's watch stops with an error (the server hangs, refuses, …): what a
    /// round reports at once, without waiting for the next `reconcile.interval`.
    pub fn watch_lost(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.lost)
    }

    /// Stamps observations with `clock` instead of the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Poller {
        self.clock = clock;
        self
    }

    /// Changes the settings (after a configuration reload).
    pub fn reconfigure(&mut self, poll: PollSection, interval: Duration) {
        if poll != self.poll {
            self.clients.clear();
            self.watchers.clear();
            self.permits = Arc::new(tokio::sync::Semaphore::new(poll.concurrency.max(1)));
        }
        self.poll = poll;
        self.interval = interval;
    }

    /// The current per-cluster state.
    pub fn view(&self) -> &LiveView {
        &self.view
    }

    /// Polls every target that is not backing off, at most `poll.concurrency` at once, each
    /// within `poll.timeout`. Clusters no longer targeted are forgotten.
    ///
    /// With `poll.watch`, a cluster is listed once; then watches keep its cache current and
    /// the rounds read the cache (no request). A watch that failed is reported as this round's
    /// failure of the cluster; after its backoff the cluster is listed again.
    pub async fn round(&mut self, targets: &[Target]) -> RoundReport {
        let mut report = RoundReport::default();
        let names: std::collections::BTreeSet<&str> = targets.iter().map(|t| t.name.as_str()).collect();
        let before = self.view.clusters.len();
        self.view.clusters.retain(|k, _| names.contains(k.as_str()));
        self.clients.retain(|k, _| names.contains(k.as_str()));
        self.watchers.retain(|k, _| names.contains(k.as_str()));
        self.next_attempt.retain(|k, _| names.contains(k.as_str()));
        self.discovery.retain(|k, _| names.contains(k.as_str()));
        report.changed |= before != self.view.clusters.len();
        // A client certificate an exec plugin issued has expired: its clients and watches are
        // made again (the plugin runs again).
        let expired: Vec<String> = self.clients.iter().filter(|(_, b)| b.expired()).map(|(k, _)| k.clone()).collect();
        for name in expired {
            self.clients.remove(&name);
            self.watchers.remove(&name);
        }

        let now = Instant::now();
        let mut jobs = Vec::new();
        let mut results: Vec<(Target, Option<Built>, Result<LiveData, PollError>)> = Vec::new();
        for t in targets {
            let status = self
                .view
                .clusters
                .entry(t.name.clone())
                .or_insert_with(|| LiveStatus { endpoint: describe_endpoint(t), ..Default::default() });
            if status.polls_total == 0 {
                report.changed = true;
            }
            if self.next_attempt.get(&t.name).is_some_and(|at| *at > now) {
                report.skipped.push(t.name.clone());
                continue;
            }
            if self.poll.watch
                && let Some(w) = self.watchers.get(&t.name).filter(|w| w.target == *t)
            {
                let started = Instant::now();
                let result = {
                    let mut sh = lock(&w.shared);
                    status.watching = true;
                    status.watch_events = sh.events;
                    status.relists = sh.relists;
                    match sh.failed.take() {
                        Some(e) => Err(match self.clients.get(&t.name) {
                            Some(b) => b.redactor.error(e),
                            None => e,
                        }),
                        // As current as the last event or bookmark (or list) received.
                        None => Ok(live_data(sh.cache.observation(), started.elapsed(), 0, sh.heard_ms)),
                    }
                };
                // A watch that failed is an error of this round, whatever stopped it.
                let outcome = if result.is_ok() { PollOutcome::Ok } else { PollOutcome::Error };
                report.polls.push(PollRecord { cluster: t.name.clone(), outcome, duration: started.elapsed() });
                if let Err(e) = &result {
                    self.watchers.remove(&t.name);
                    if !keeps_client(e) {
                        self.clients.remove(&t.name);
                    }
                }
                results.push((t.clone(), None, result));
                continue;
            }
            self.watchers.remove(&t.name);
            status.watching = false;
            let built = self.clients.remove(&t.name).filter(|b| b.target == *t);
            jobs.push((t.clone(), built));
        }
        let poll = self.poll.clone();
        let listed: Vec<(Target, Option<Built>, Listed, PollRecord)> = futures_util::stream::iter(jobs)
            .map(|(t, built)| {
                let poll = poll.clone();
                let clock = Arc::clone(&self.clock);
                async move {
                    let started = Instant::now();
                    let (built, result) = poll_one(&t, built, &poll, &*clock).await;
                    let outcome = match &result {
                        Ok(_) => PollOutcome::Ok,
                        Err(PollError::Deadline(_)) => PollOutcome::Timeout,
                        Err(_) => PollOutcome::Error,
                    };
                    (t, built, result, PollRecord { cluster: String::new(), outcome, duration: started.elapsed() })
                }
            })
            .buffer_unordered(self.poll.concurrency.max(1))
            .collect()
            .await;
        for (t, mut built, result, record) in listed {
            report.polls.push(PollRecord { cluster: t.name.clone(), ..record });
            let result = match result {
                Ok((data, Some(start))) => {
                    if let Some(b) = &mut built {
                        // A fresh client: the list's pooled connection (with a read buffer
                        // grown to the page size) is closed; relists open a new one.
                        if let Ok(c) = b.rebuild() {
                            b.client = c;
                        }
                        self.start_watch(b, start, data.poll.at_ms);
                    }
                    Ok(data)
                }
                Ok((data, None)) => Ok(data),
                Err(e) => Err(e),
            };
            results.push((t, built, result));
        }

        for (t, built, result) in &mut results {
            let Ok(data) = result else { continue };
            let client = built.as_ref().or_else(|| self.clients.get(&t.name)).map(|b| b.client.clone());
            if let Some(client) = client {
                self.read_objects(&t.name, &client, data).await;
            }
        }
        for (t, built, result) in results {
            let status = self.view.clusters.entry(t.name.clone()).or_default();
            if let Some(b) = built {
                status.endpoint = b.endpoint.clone();
                self.clients.insert(t.name.clone(), b);
            }
            let recovered = status.error.is_some();
            let failed = result.as_ref().err().cloned();
            report.changed |= status.observe(result);
            match failed {
                None => {
                    if recovered {
                        // Recovered: what it serves may have changed while it was away.
                        self.discovery.remove(&t.name);
                        report.recovered.push((t.name.clone(), status.consecutive_failures));
                    }
                    self.next_attempt.remove(&t.name);
                    report.ok.push(t.name.clone());
                }
                Some(e) => {
                    let failures = status.consecutive_failures;
                    let delay = self.backoff(&t.name, failures);
                    self.next_attempt.insert(t.name.clone(), Instant::now() + delay);
                    report.failed.push((t.name.clone(), e, delay));
                }
            }
        }
        report.ok.sort();
        report.failed.sort_by(|a, b| a.0.cmp(&b.0));
        report.recovered.sort();
        report.polls.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        report.changed |= self.discover_due(&report.ok).await;
        report
    }

    /// Reads the discovery documents of the members polled successfully this round whose
    /// discovery is due (first success, recovery, `poll.discovery_interval` elapsed, or the
    /// retry of a failed discovery), at most `poll.concurrency` at once, each within
    /// `poll.timeout`. Returns whether a member's API list changed.
    async fn discover_due(&mut self, ok: &[String]) -> bool {
        let now = Instant::now();
        type Previous = (Option<Apis>, Option<Arc<BTreeMap<String, String>>>);
        let due: Vec<(String, kube::Client, Previous)> = ok
            .iter()
            .filter(|name| self.discovery.get(*name).is_none_or(|(at, _)| *at <= now))
            .filter_map(|name| {
                let client = self.clients.get(name)?.client.clone();
                let previous = self.view.clusters.get(name).and_then(|s| s.apis.clone());
                Some((name.clone(), client, (previous, self.resources.get(name).cloned())))
            })
            .collect();
        if due.is_empty() {
            return false;
        }
        let timeout = self.poll.timeout;
        let found: Vec<(String, Result<Discovered, PollError>)> = futures_util::stream::iter(due)
            .map(|(name, client, previous)| async move {
                let r =
                    tokio::time::timeout(timeout, discover(&client, (previous.0.as_deref(), previous.1.as_deref())))
                        .await
                        .unwrap_or(Err(PollError::Deadline(timeout)));
                (name, r)
            })
            .buffer_unordered(self.poll.concurrency.max(1))
            .collect()
            .await;
        let mut changed = false;
        for (name, result) in found {
            let Some(status) = self.view.clusters.get_mut(&name) else { continue };
            status.discoveries_total += 1;
            match result {
                Ok(d) => {
                    for (gv, why) in &d.failed {
                        tracing::warn!(cluster = %name, group_version = %gv, error = %why,
                            "discovery: cannot read the resources of this group version; keeping what was known of it");
                    }
                    if self.resources.get(&name).is_none_or(|r| **r != d.resources) {
                        self.resources.insert(name.clone(), Arc::new(d.resources));
                    }
                    if status.apis.as_deref() != Some(&d.apis) {
                        tracing::info!(cluster = %name, apis = d.apis.len(), "discovery: the member's API list changed");
                        changed = true;
                        status.apis = Some(Arc::new(d.apis));
                    }
                    status.apis_at_ms = self.clock.now_ms();
                    status.discovery_error = None;
                    self.discovery.insert(name, (Instant::now() + self.poll.discovery_interval, 0));
                }
                Err(e) => {
                    let failures = self.discovery.get(&name).map_or(0, |d| d.1).saturating_add(1);
                    if status.discovery_error.as_ref() != Some(&e) {
                        match status.apis {
                            Some(_) => tracing::warn!(cluster = %name, error = %e,
                                "discovery failed; keeping the member's last API list"),
                            None => tracing::warn!(cluster = %name, error = %e,
                                "discovery failed and no API list of the member was read yet: its last stored list is used, else its Cluster object's status.apiEnablements, else it is taken to serve every API"),
                        }
                    }
                    status.discovery_error = Some(e);
                    let exp = failures.saturating_sub(1).min(16);
                    let delay = self.interval.saturating_mul(1u32 << exp).min(self.poll.discovery_interval);
                    self.discovery.insert(name, (Instant::now() + delay, failures));
                }
            }
        }
        changed
    }

    /// Starts the watches of a member listed at unix ms `listed_ms` into `start`.
    fn start_watch(&mut self, b: &Built, start: Start, listed_ms: u64) {
        let Some(watch) = b.watch_client.clone() else { return };
        let shared =
            Arc::new(std::sync::Mutex::new(Shared { cache: start.cache, heard_ms: listed_ms, ..Default::default() }));
        let jitter = crate::util::hash::fnv1a64(b.target.name.as_bytes()) % (WATCH_TIMEOUT_SECS / 2 + 1);
        let ctx = Ctx {
            list: b.client.clone(),
            watch,
            sending: Arc::default(),
            own: multiplexes(&b.config).then(|| OwnConnection::new(Arc::clone(&b.config), b.credentials.clone())),
            credentials: b.credentials.clone(),
            shared: Arc::clone(&shared),
            poll: self.poll.clone(),
            permits: Arc::clone(&self.permits),
            timeout_secs: WATCH_TIMEOUT_SECS + jitter,
            cluster: b.target.name.clone(),
            clock: Arc::clone(&self.clock),
            wire: Arc::clone(&b.wire),
            lost: Arc::clone(&self.lost),
        };
        let nodes = tokio::spawn(watch_loop::<NodeItem>(ctx.clone(), "/api/v1/nodes", "nodes", start.nodes_rv));
        let pods = tokio::spawn(watch_loop::<PodItem>(ctx, "/api/v1/pods", "pods", start.pods_rv));
        self.watchers.insert(
            b.target.name.clone(),
            Watcher { target: b.target.clone(), shared, tasks: vec![nodes.abort_handle(), pods.abort_handle()] },
        );
    }

    /// `interval × 2^(failures−1)`, capped at `poll.max_backoff`, times a jitter in [0.5, 1].
    fn backoff(&mut self, name: &str, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(16);
        let base = self.interval.saturating_mul(1u32 << exp).min(self.poll.max_backoff);
        self.seed = self.seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let r = crate::util::hash::fnv1a64(format!("{name}{}", self.seed).as_bytes());
        let jitter = 0.5 + (r % 1000) as f64 / 2000.0;
        base.mul_f64(jitter)
    }
}

/// Most pages one list of workload objects follows ([`list_statuses`]).
const MAX_OBJECT_PAGES: u32 = 1_000;

/// Every page of a `LIST` of `collection` (a namespace's Deployments, StatefulSets or
/// DaemonSets, all of `kind`): each object's status by name.
async fn list_statuses(
    client: &kube::Client,
    collection: &str,
    kind: &str,
    page_size: u32,
) -> Result<BTreeMap<String, crate::model::ObjectStatus>, PollError> {
    let mut out = BTreeMap::new();
    let mut token: Option<String> = None;
    for _ in 0..MAX_OBJECT_PAGES {
        let mut url = format!("{collection}?limit={}", page_size.max(1));
        if let Some(t) = &token {
            url.push_str("&continue=");
            url.push_str(&crate::util::percent::encode(t));
        }
        let bytes = match super::list::get(client, &url, "workload objects").await {
            Ok(b) => b,
            Err(Got::Failed(e)) => return Err(e),
            Err(Got::Gone(message)) => return Err(PollError::Http { status: 410, what: "workload objects", message }),
        };
        let (items, next) = crate::members::decode::decode_object_status_page(&bytes, kind)
            .map_err(|e| PollError::Decode { what: "workload objects", message: e.to_string() })?;
        out.extend(items);
        match next {
            Some(t) => token = Some(t),
            None => return Ok(out),
        }
    }
    Err(PollError::Decode { what: "workload objects", message: format!("more than {MAX_OBJECT_PAGES} pages") })
}

/// Keeps a client after this error? A client whose connection misbehaved is rebuilt next time
/// (fresh connections).
/// The API path of a namespaced workload object of `apps/v1`, of a GitOps agent object (a
/// Flux `Kustomization`, an Argo CD `Application`, at the key's own API version), or of
/// another kind's object (read for its health interpretation) at the resource name the
/// member's discovery gives (`served`: its `group/version/Kind` entries and the names that are
/// not the guess, [`Discovered::resources`]): none when the member does not serve the kind;
/// the name Kubernetes guesses from the kind only before a discovery of the member succeeded.
fn object_url(key: &crate::policy::ObjectKey, served: Option<Served<'_>>) -> Option<String> {
    let plural = match (key.group(), key.kind.as_str()) {
        ("apps", "Deployment") => "deployments".to_string(),
        ("apps", "StatefulSet") => "statefulsets".to_string(),
        ("apps", "DaemonSet") => "daemonsets".to_string(),
        ("kustomize.toolkit.fluxcd.io", "Kustomization") => "kustomizations".to_string(),
        ("argoproj.io", "Application") => "applications".to_string(),
        (_, kind) if !kind.is_empty() && kind.bytes().all(|b| b.is_ascii_alphanumeric()) => match served {
            Some((apis, resources)) => {
                let entry = format!("{}/{kind}", key.api_version);
                if !apis.contains(&entry) {
                    return None;
                }
                resources
                    .and_then(|r| r.get(&entry))
                    .cloned()
                    .unwrap_or_else(|| super::discovery::guessed_resource(kind))
            }
            None => super::discovery::guessed_resource(kind),
        },
        _ => return None,
    };
    let dns = |s: &str| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    let ns = key.namespace.as_deref()?;
    let (group, version) = match key.api_version.split_once('/') {
        Some((g, v)) => (Some(g), v),
        None => (None, key.api_version.as_str()),
    };
    if !dns(ns) || !dns(&key.name) || !dns(version) || group.is_some_and(|g| !dns(g)) {
        return None;
    }
    Some(match group {
        Some(_) => format!("/apis/{}/namespaces/{ns}/{plural}/{}", key.api_version, key.name),
        None => format!("/api/{version}/namespaces/{ns}/{plural}/{}", key.name),
    })
}

/// What a member's last discovery says it serves: its `group/version/Kind` entries, and the
/// resource names that are not the guess from their kind ([`Discovered::resources`]).
type Served<'a> = (&'a std::collections::BTreeSet<String>, Option<&'a BTreeMap<String, String>>);

/// Whether `key` names a GitOps agent object ([`object_url`]).
fn is_agent(key: &crate::policy::ObjectKey) -> bool {
    matches!(key.group(), "kustomize.toolkit.fluxcd.io" | "argoproj.io")
}

pub(super) fn keeps_client(e: &PollError) -> bool {
    matches!(e, PollError::Forbidden { .. } | PollError::Http { .. })
}

pub(super) async fn poll_one(
    t: &Target,
    built: Option<Built>,
    poll: &PollSection,
    clock: &dyn Clock,
) -> (Option<Built>, Listed) {
    let started = Instant::now();
    // The deadline covers building the client too (an exec credential plugin may hang).
    let attempt = async {
        let built = match built {
            Some(b) => b,
            None => build(t, poll).await.map_err(|e| (None, e))?,
        };
        // The credentials first: one that cannot be had is an access error, not a list's.
        if let Some(c) = &built.credentials
            && let Err(e) = c.header().await
        {
            return Err((Some(built), e.into()));
        }
        let listed = if poll.watch {
            list_to_cache(&built.client, poll.page_size)
                .await
                .map(|(start, pages)| (start.cache.observation(), pages, Some(start)))
        } else {
            list_cluster(&built.client, poll.page_size).await.map(|(fold, pages)| (fold.finish(), pages, None))
        };
        match listed {
            Ok(r) => Ok((built, r)),
            Err(e) => Err((Some(built), e)),
        }
    };
    let (built, result) = match tokio::time::timeout(poll.timeout, attempt).await {
        Ok(Ok((built, (obs, pages, start)))) => {
            (Some(built), Ok((live_data(obs, started.elapsed(), pages, clock.now_ms()), start)))
        }
        Ok(Err((built, e))) => {
            let e = match &built {
                Some(b) => b.redactor.error(e),
                None => e,
            };
            (built, Err(e))
        }
        Err(_) => (None, Err(PollError::Deadline(poll.timeout))),
    };
    let keep = match &result {
        Ok(_) => true,
        Err(e) => keeps_client(e),
    };
    (built.filter(|_| keep), result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let poll = PollSection { max_backoff: Duration::from_secs(60), ..Default::default() };
        let mut p = Poller::new(poll, Duration::from_secs(10));
        for (n, lo, hi) in [(1, 5, 10), (2, 10, 20), (3, 20, 40), (10, 30, 60)] {
            let d = p.backoff("m", n);
            assert!(d >= Duration::from_secs(lo) && d <= Duration::from_secs(hi), "{n}: {d:?}");
        }
    }

    /// A rollout reads a member's object of another kind at the path its resource has in the
    /// member's discovery (an irregular plural as the CRD names it), none where the member does
    /// not serve the kind, and the name Kubernetes guesses only before any discovery; a name that
    /// is no DNS name is never put into a URL.
    #[test]
    fn another_kinds_object_is_read_at_its_discovered_resource_path() {
        use crate::policy::ObjectKey;
        let url = |api: &str, kind: &str, ns: Option<&str>, name: &str| {
            object_url(&ObjectKey::new(api, kind, ns, name), None)
        };
        let cases = [
            ("apps/v1", "Deployment", "/apis/apps/v1/namespaces/shop/deployments/web"),
            ("example.io/v1", "Widget", "/apis/example.io/v1/namespaces/shop/widgets/web"),
            ("example.io/v1", "Policy", "/apis/example.io/v1/namespaces/shop/policies/web"),
            ("networking.k8s.io/v1", "Ingress", "/apis/networking.k8s.io/v1/namespaces/shop/ingresses/web"),
            ("v1", "Service", "/api/v1/namespaces/shop/services/web"),
        ];
        for (api, kind, want) in cases {
            assert_eq!(url(api, kind, Some("shop"), "web").as_deref(), Some(want), "{kind}");
        }
        assert_eq!(url("example.io/v1", "Widget", Some("shop"), "../x"), None);
        assert_eq!(url("example.io/v1", "Wid/get", Some("shop"), "web"), None);
        assert_eq!(url("example.io/v1", "Widget", None, "web"), None, "cluster-scoped");
        // With the member's discovery: its resource names.
        let apis: std::collections::BTreeSet<String> =
            ["example.io/v1/Cactus", "example.io/v1/Widget"].into_iter().map(String::from).collect();
        let resources: BTreeMap<String, String> = [("example.io/v1/Cactus".to_string(), "cacti".to_string())].into();
        let served = |kind: &str| {
            object_url(&ObjectKey::new("example.io/v1", kind, Some("shop"), "web"), Some((&apis, Some(&resources))))
        };
        assert_eq!(served("Cactus").as_deref(), Some("/apis/example.io/v1/namespaces/shop/cacti/web"));
        assert_eq!(
            url("example.io/v1", "Cactus", Some("shop"), "web").as_deref(),
            Some("/apis/example.io/v1/namespaces/shop/cactuses/web"),
            "before any discovery: the guess"
        );
        assert_eq!(served("Widget").as_deref(), Some("/apis/example.io/v1/namespaces/shop/widgets/web"));
        assert_eq!(served("Gadget"), None, "not served: not asked for");
        let deployment = ObjectKey::new("apps/v1", "Deployment", Some("shop"), "web");
        assert!(object_url(&deployment, Some((&apis, None))).is_some(), "a workload kind's path is its own");
        assert!(crate::model::ObjectStatus::of_kind(&ObjectKey::new("apps/v1", "StatefulSet", Some("a"), "b")));
        assert!(!crate::model::ObjectStatus::of_kind(&ObjectKey::new("example.io/v1", "Widget", Some("a"), "b")));
    }
}
