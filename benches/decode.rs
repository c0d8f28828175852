//! Poll throughput: pods decoded (and folded into the model) per CPU-second, for
//! - narrow decoding (`fedsched::members::decode`, what the poller uses),
//! - typed decoding into k8s-openapi's `Pod` (what `kube::Api<Pod>::list` does), then the
//!   same fold from the typed fields,
//! - untyped decoding into `serde_json::Value`, then the template reader's pod request,
//! - watch events: `MODIFIED` lines of the same pods decoded and applied to the watch cache
//!   (`PodCache::upsert`: the steady-state cost per event, without the transport).
//!
//! Not a timed test: it prints a table. Run: `cargo bench --bench decode` (release, as a
//! benchmark should) or `cargo bench --profile dev --bench decode` (unoptimised: the ratios
//! hold roughly, the absolute numbers do not). With `-- --test` (what CI runs) every path runs
//! once over one page: a check that it works, not a measurement. Pages are 500 pods of a generated fleet
//! (`fedsched::testbed::simulate::fleet::generate`), serialised as the simulator serves them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use fedsched::members::decode::{
    ContainerItem, Fold, ListPage, PodCache, PodItem, WatchEvent, decode_event, decode_page,
};
use fedsched::model::ResourceList;
use fedsched::model::quantity::parse_milli;
use fedsched::model::workload::pod_requirements;
use fedsched::testbed::simulate::fleet::{Generate, generate};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// CPU time of this thread (the shared helper), or wall time where that is missing.
fn cpu_now() -> Duration {
    fedsched::testbed::bench::timing::thread_cpu().unwrap_or_else(|| {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed()
    })
}

fn quantities(m: Option<&std::collections::BTreeMap<String, Quantity>>) -> ResourceList {
    let mut out = ResourceList::new();
    for (k, q) in m.into_iter().flatten() {
        if let Ok(v) = parse_milli(&q.0) {
            out.set(k.clone(), v);
        }
    }
    out
}

/// A typed timestamp in Unix ms (0 before 1970).
fn millis(t: &k8s_openapi::jiff::Timestamp) -> u64 {
    u64::try_from(t.as_millisecond()).unwrap_or(0)
}

/// The typed path: k8s-openapi's Pod into the same fold (via the narrow item's fields).
fn typed_to_item(p: Pod) -> PodItem {
    let spec = p.spec.unwrap_or_default();
    let status = p.status.unwrap_or_default();
    let container = |c: &k8s_openapi::api::core::v1::Container| ContainerItem {
        resources: fedsched::members::decode::ResourcesItem {
            requests: fedsched::members::decode::Quantities(quantities(
                c.resources.as_ref().and_then(|r| r.requests.as_ref()),
            )),
            limits: fedsched::members::decode::Quantities(quantities(
                c.resources.as_ref().and_then(|r| r.limits.as_ref()),
            )),
        },
        restart_policy: c.restart_policy.clone(),
    };
    PodItem {
        metadata: fedsched::members::decode::PodMeta {
            name: p.metadata.name.unwrap_or_default(),
            namespace: p.metadata.namespace.unwrap_or_default(),
            owner_references: Vec::new(),
            resource_version: p.metadata.resource_version.clone(),
            creation_timestamp: p.metadata.creation_timestamp.as_ref().map(|t| millis(&t.0)),
        },
        spec: fedsched::members::decode::PodSpec {
            node_name: spec.node_name.clone(),
            containers: spec.containers.iter().map(container).collect(),
            init_containers: spec.init_containers.iter().flatten().map(container).collect(),
            overhead: fedsched::members::decode::Quantities(quantities(spec.overhead.as_ref())),
        },
        status: fedsched::members::decode::PodStatus {
            phase: status.phase,
            conditions: status
                .conditions
                .unwrap_or_default()
                .into_iter()
                .map(|c| fedsched::members::decode::ConditionItem {
                    type_: c.type_,
                    status: c.status,
                    reason: c.reason,
                    last_transition_time: c.last_transition_time.as_ref().map(|t| millis(&t.0)),
                })
                .collect(),
        },
    }
}

fn run(name: &str, pages: &[Vec<u8>], pods_per_round: usize, mut f: impl FnMut(&[u8]) -> usize) -> f64 {
    let quick = fedsched::testbed::bench::timing::quick_mode();
    // Warm up, then at least 2 CPU-seconds or 3 rounds (one round in quick mode).
    for p in pages.iter().take(if quick { 0 } else { 2 }) {
        black_box(f(p));
    }
    let start = cpu_now();
    let wall = Instant::now();
    let mut pods = 0usize;
    let mut rounds = 0;
    while rounds < 1 || (!quick && (rounds < 3 || (cpu_now() - start) < Duration::from_secs(2))) {
        for p in pages {
            pods += black_box(f(p));
        }
        rounds += 1;
    }
    let cpu = (cpu_now() - start).as_secs_f64().max(1e-9);
    assert_eq!(pods, pods_per_round * rounds, "{name} lost pods");
    let rate = pods as f64 / cpu;
    println!(
        "{name:<34} {rate:>12.0} pods/CPU-s   ({pods} pods, {cpu:.2} CPU-s, {:.2} s wall)",
        wall.elapsed().as_secs_f64()
    );
    rate
}

/// Makes a generated pod look like one from a real API server (≈4 KB): managed fields,
/// annotations, env, ports, probes, volumes, container statuses.
fn realistic(mut p: serde_json::Value, i: usize) -> serde_json::Value {
    use serde_json::json;
    p["metadata"]["uid"] = json!(format!("6f1c2a4e-0000-4000-8000-{i:012}"));
    p["metadata"]["creationTimestamp"] = json!("2026-11-01T10:00:00Z");
    p["metadata"]["generateName"] = json!("app-5d8f-");
    p["metadata"]["annotations"] = json!({"kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z",
        "prometheus.io/scrape": "true", "prometheus.io/port": "9090"});
    p["metadata"]["managedFields"] = json!([{"manager": "kube-controller-manager", "operation": "Update",
        "apiVersion": "v1", "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}},
            "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"main\"}": {".": {}, "f:env": {}, "f:image": {},
                "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {}, "f:resources": {}}}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-01T10:00:05Z",
         "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:podIP": {}}}}]);
    let c = &mut p["spec"]["containers"][0];
    c["env"] = json!(
        (0..10).map(|k| json!({"name": format!("VAR_{k}"), "value": format!("value-{k}-{i}")})).collect::<Vec<_>>()
    );
    c["ports"] = json!([{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}]);
    c["livenessProbe"] = json!({"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3});
    c["readinessProbe"] = c["livenessProbe"].clone();
    c["volumeMounts"] = json!([{"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]);
    c["imagePullPolicy"] = json!("IfNotPresent");
    c["terminationMessagePath"] = json!("/dev/termination-log");
    p["spec"]["volumes"] = json!([{"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}]);
    p["spec"]["serviceAccountName"] = json!("default");
    p["spec"]["dnsPolicy"] = json!("ClusterFirst");
    p["spec"]["schedulerName"] = json!("default-scheduler");
    p["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]);
    p["status"]["hostIP"] = json!("10.0.0.12");
    p["status"]["podIP"] = json!(format!("10.244.{}.{}", i / 250, i % 250));
    p["status"]["qosClass"] = json!("Burstable");
    p["status"]["startTime"] = json!("2026-11-01T10:00:01Z");
    // The conditions a kubelet writes (five, each with its transition time); unbound pods keep
    // the generator's `PodScheduled=False`, with a transition time.
    p["status"]["conditions"] = if p["spec"]["nodeName"].is_string() {
        json!(["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
            .iter()
            .map(|t| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-01T10:00:04Z"}))
            .collect::<Vec<_>>())
    } else {
        json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": null,
            "lastTransitionTime": "2026-11-01T10:00:00Z",
            "message": "0/50 nodes are available: 50 node(s) didn't match Pod's node affinity/selector."}])
    };
    p["status"]["containerStatuses"] = json!([{"name": "main", "ready": true, "restartCount": 0, "started": true,
        "image": "registry.example/app:1", "imageID": "registry.example/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "containerID": format!("containerd://{i:064x}"), "state": {"running": {"startedAt": "2026-11-01T10:00:03Z"}}}]);
    p
}

fn main() {
    let quick = fedsched::testbed::bench::timing::quick_mode();
    let fleet = generate(&Generate { clusters: 1, nodes: 50, pods: if quick { 500 } else { 5000 }, seed: 7 });
    let pods: Vec<serde_json::Value> =
        fleet[0].pods.iter().cloned().enumerate().map(|(i, p)| realistic(p, i)).collect();
    let pods = &pods;
    let pages: Vec<Vec<u8>> = pods
        .chunks(500)
        .map(|chunk| {
            serde_json::to_vec(&serde_json::json!({"kind": "PodList", "apiVersion": "v1",
                "metadata": {"resourceVersion": "1"}, "items": chunk}))
            .unwrap_or_default()
        })
        .collect();
    let bytes: usize = pages.iter().map(Vec::len).sum();
    println!(
        "{} pods in {} pages, {} bytes/pod; build profile: {}",
        pods.len(),
        pages.len(),
        bytes / pods.len().max(1),
        if cfg!(debug_assertions) { "dev (unoptimised)" } else { "optimised" }
    );

    let narrow = run("narrow (members::decode)", &pages, pods.len(), |b| {
        let page = decode_page::<PodItem>(b).unwrap_or(ListPage { metadata: Default::default(), items: Vec::new() });
        let n = page.items.len();
        let mut fold = Fold::default();
        fold.pods(page.items);
        black_box(fold.finish());
        n
    });
    let typed = run("typed (k8s-openapi Pod)", &pages, pods.len(), |b| {
        let list: k8s_openapi::List<Pod> = match serde_json::from_slice(b) {
            Ok(l) => l,
            Err(_) => return 0,
        };
        let n = list.items.len();
        let mut fold = Fold::default();
        for p in list.items {
            fold.pod(&typed_to_item(p));
        }
        black_box(fold.finish());
        n
    });
    let value = run("untyped (serde_json::Value)", &pages, pods.len(), |b| {
        let v: serde_json::Value = serde_json::from_slice(b).unwrap_or_default();
        let items = v.get("items").and_then(|i| i.as_array()).cloned().unwrap_or_default();
        for p in &items {
            black_box(pod_requirements(p.get("spec"), "spec").ok());
        }
        items.len()
    });
    println!("narrow is {:.1}x typed and {:.1}x untyped", narrow / typed, narrow / value);

    // Watch events: one line per pod, as the API server streams them.
    let events: Vec<Vec<u8>> = pods
        .chunks(500)
        .map(|chunk| {
            let mut out = Vec::new();
            for p in chunk {
                out.extend_from_slice(br#"{"type":"MODIFIED","object":"#);
                out.extend_from_slice(&serde_json::to_vec(p).unwrap_or_default());
                out.extend_from_slice(b"}\n");
            }
            out
        })
        .collect();
    let mut cache = PodCache::default();
    for page in &pages {
        if let Ok(p) = decode_page::<PodItem>(page) {
            for item in &p.items {
                cache.upsert(item);
            }
        }
    }
    let watched = run("watch events (decode + cache)", &events, pods.len(), |b| {
        let mut n = 0;
        for line in b.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
            if let Ok(WatchEvent::Modified(p)) = decode_event::<PodItem>(line) {
                cache.upsert(&p);
                n += 1;
            }
        }
        n
    });
    println!(
        "a watch event costs {:.2} µs of CPU (decode + cache), a listed pod {:.2} µs",
        1e6 / watched,
        1e6 / narrow
    );
}
