//! Narrow decoding of Kubernetes list pages: only what the model needs.
//!
//! A Pod in full (k8s-openapi's typed `Pod`, or a `serde_json::Value`) carries hundreds of
//! fields; the poller needs a handful: node name, phase, the `PodScheduled` condition, the
//! requests of containers, init containers and overhead, and the controlling owner. These
//! structs name only those; serde skips everything else without allocating, and quantities
//! are parsed straight into milli-units. `benches/decode.rs` measures this against typed
//! decoding.
//!
//! [`Fold`] turns pages into an [`Observation`]: node views with the requests of their
//! non-terminated pods, the requests of unbound pods, and pod counts.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::model::quantity::parse_milli;
use crate::model::workload::{container_request, pod_request};
use crate::model::{ClusterTaint, NodeView, PodFacts, ResourceList};
use crate::policy::types::TaintEffect;

/// One page of a list response (`NodeList`, `PodList`).
#[derive(Debug, Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
pub struct ListPage<T> {
    /// `metadata`: the continue token and resource version.
    #[serde(default)]
    pub metadata: ListMeta,
    /// `items` (`null` reads as empty).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub items: Vec<T>,
}

/// `metav1.ListMeta`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// The token for the next page; absent or empty on the last page.
    #[serde(rename = "continue", default)]
    pub continue_: Option<String>,
    /// The resource version of the list.
    #[serde(default)]
    pub resource_version: Option<String>,
}

impl ListMeta {
    /// The continue token, if another page follows.
    pub fn next(&self) -> Option<&str> {
        self.continue_.as_deref().filter(|t| !t.is_empty())
    }
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

fn null_as_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A resource map (`allocatable`, `requests`…) parsed straight into milli-units.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Quantities(pub ResourceList);

impl<'de> Deserialize<'de> for Quantities {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Quantities;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of resource name to quantity")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Quantities, E> {
                Ok(Quantities::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Quantities, A::Error> {
                let mut out = ResourceList::new();
                while let Some(name) = map.next_key::<String>()? {
                    let Milli(v) = map.next_value().map_err(|e| de::Error::custom(format!("{name}: {e}")))?;
                    out.set(name, v);
                }
                Ok(Quantities(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// One quantity (`"500m"`, `"16Gi"`, `4`) in milli-units.
struct Milli(i64);

impl<'de> Deserialize<'de> for Milli {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Milli;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a quantity")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Milli, E> {
                parse_milli(s).map(Milli).map_err(|e| E::custom(e.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Milli, E> {
                Ok(Milli(v.saturating_mul(1000)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Milli, E> {
                Ok(Milli(i64::try_from(v).unwrap_or(i64::MAX).saturating_mul(1000)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Milli, E> {
                if v.is_finite() && v >= 0.0 {
                    Ok(Milli((v * 1000.0).ceil() as i64))
                } else {
                    Err(E::custom(format!("invalid quantity {v}")))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// The name (and for nodes the labels) of an object.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeMeta {
    /// `metadata.name`.
    #[serde(default)]
    pub name: String,
    /// `metadata.labels`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
}

/// A Node: labels, taints, cordon, allocatable, capacity, Ready.
#[derive(Debug, Deserialize)]
pub struct NodeItem {
    /// Name and labels.
    #[serde(default)]
    pub metadata: NodeMeta,
    /// Taints and cordon.
    #[serde(default)]
    pub spec: NodeSpec,
    /// Allocatable, capacity, conditions.
    #[serde(default)]
    pub status: NodeStatus,
}

/// `Node.spec`, narrowed.
#[derive(Debug, Default, Deserialize)]
pub struct NodeSpec {
    /// `spec.taints`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub taints: Vec<TaintItem>,
    /// `spec.unschedulable`.
    #[serde(default)]
    pub unschedulable: Option<bool>,
}

/// A node taint.
#[derive(Debug, Deserialize)]
pub struct TaintItem {
    /// Taint key.
    pub key: String,
    /// Taint value.
    #[serde(default)]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: TaintEffect,
}

/// `Node.status`, narrowed.
#[derive(Debug, Default, Deserialize)]
pub struct NodeStatus {
    /// `status.allocatable`.
    #[serde(default)]
    pub allocatable: Quantities,
    /// `status.capacity`.
    #[serde(default)]
    pub capacity: Quantities,
    /// `status.conditions`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub conditions: Vec<ConditionItem>,
}

/// A condition (`type`, `status`, `reason`).
#[derive(Debug, Deserialize)]
pub struct ConditionItem {
    /// `Ready`, `PodScheduled`…
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    #[serde(default)]
    pub status: String,
    /// Machine-readable reason (`Unschedulable`).
    #[serde(default)]
    pub reason: Option<String>,
}

impl NodeItem {
    /// The model's view of this node (requests and pod count filled in by [`Fold`]).
    pub fn into_view(self) -> NodeView {
        NodeView {
            ready: self.status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"),
            name: self.metadata.name,
            labels: self.metadata.labels,
            taints: self
                .spec
                .taints
                .into_iter()
                .map(|t| ClusterTaint { key: t.key, value: t.value.filter(|v| !v.is_empty()), effect: t.effect })
                .collect(),
            allocatable: self.status.allocatable.0,
            capacity: self.status.capacity.0,
            unschedulable: self.spec.unschedulable.unwrap_or(false),
            requested: ResourceList::new(),
            pods: 0,
        }
    }
}

/// A Pod: where it runs, its phase, whether the scheduler gave up, what it requests, its owner.
#[derive(Debug, Deserialize)]
pub struct PodItem {
    /// Name, namespace, controlling owner.
    #[serde(default)]
    pub metadata: PodMeta,
    /// Node name and requests.
    #[serde(default)]
    pub spec: PodSpec,
    /// Phase and conditions.
    #[serde(default)]
    pub status: PodStatus,
}

/// `Pod.metadata`, narrowed.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMeta {
    /// `metadata.name`.
    #[serde(default)]
    pub name: String,
    /// `metadata.namespace`.
    #[serde(default)]
    pub namespace: String,
    /// `metadata.ownerReferences`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub owner_references: Vec<OwnerItem>,
}

/// An owner reference.
#[derive(Debug, Deserialize)]
pub struct OwnerItem {
    /// Owner kind (`ReplicaSet`, `Job`…).
    #[serde(default)]
    pub kind: String,
    /// Owner name.
    #[serde(default)]
    pub name: String,
    /// Whether this owner is the controller.
    #[serde(default)]
    pub controller: Option<bool>,
}

/// `Pod.spec`, narrowed.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// `spec.nodeName`: empty or absent while unbound.
    #[serde(default)]
    pub node_name: Option<String>,
    /// `spec.containers`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub containers: Vec<ContainerItem>,
    /// `spec.initContainers`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub init_containers: Vec<ContainerItem>,
    /// `spec.overhead`.
    #[serde(default)]
    pub overhead: Quantities,
}

/// A container's resources (and, for init containers, the sidecar marker).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerItem {
    /// `resources`.
    #[serde(default)]
    pub resources: ResourcesItem,
    /// `Always` marks a sidecar init container.
    #[serde(default)]
    pub restart_policy: Option<String>,
}

/// `resources.requests` and `resources.limits`.
#[derive(Debug, Default, Deserialize)]
pub struct ResourcesItem {
    /// `requests`.
    #[serde(default)]
    pub requests: Quantities,
    /// `limits`.
    #[serde(default)]
    pub limits: Quantities,
}

/// `Pod.status`, narrowed.
#[derive(Debug, Default, Deserialize)]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`.
    #[serde(default)]
    pub phase: Option<String>,
    /// `status.conditions`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub conditions: Vec<ConditionItem>,
}

impl PodItem {
    /// Kubernetes' pod request (the one implementation in [`crate::model::workload`]).
    pub fn request(&self) -> ResourceList {
        let containers: Vec<ResourceList> = self
            .spec
            .containers
            .iter()
            .map(|c| container_request(c.resources.requests.0.clone(), &c.resources.limits.0))
            .collect();
        let inits: Vec<(ResourceList, bool)> = self
            .spec
            .init_containers
            .iter()
            .map(|c| {
                (
                    container_request(c.resources.requests.0.clone(), &c.resources.limits.0),
                    c.restart_policy.as_deref() == Some("Always"),
                )
            })
            .collect();
        let mut r = pod_request(&containers, &inits, &self.spec.overhead.0);
        r.0.retain(|_, v| *v > 0);
        r
    }

    /// Succeeded or Failed: the pod holds no resources any more.
    pub fn is_terminated(&self) -> bool {
        matches!(self.status.phase.as_deref(), Some("Succeeded") | Some("Failed"))
    }

    /// The scheduler reported it cannot place the pod (`PodScheduled=False, Unschedulable`).
    pub fn is_unschedulable(&self) -> bool {
        self.status
            .conditions
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
    }

    /// `Kind/namespace/name` of the controlling owner, or of the pod itself.
    pub fn owner_key(&self) -> String {
        let m = &self.metadata;
        match m.owner_references.iter().find(|o| o.controller == Some(true)).or(m.owner_references.first()) {
            Some(o) => format!("{}/{}/{}", o.kind, m.namespace, o.name),
            None => format!("Pod/{}/{}", m.namespace, m.name),
        }
    }
}

/// Why a page could not be decoded, with the JSON path of the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DecodeError {
    /// Where in the document (`items[3].status.allocatable.cpu`), `.` for the top.
    pub path: String,
    /// What was wrong.
    pub message: String,
}

/// Decodes a page. The fast path decodes directly; only when that fails is the page decoded
/// again to locate the error.
pub fn decode_page<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<ListPage<T>, DecodeError> {
    match serde_json::from_slice::<ListPage<T>>(bytes) {
        Ok(p) => Ok(p),
        Err(first) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            match serde_path_to_error::deserialize::<_, ListPage<T>>(&mut de) {
                Err(e) => Err(DecodeError { path: e.path().to_string(), message: e.into_inner().to_string() }),
                Ok(_) => Err(DecodeError { path: ".".into(), message: first.to_string() }),
            }
        }
    }
}

/// What one successful poll saw of a cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    /// Every node with the requests and count of its non-terminated pods, sorted by name.
    pub nodes: Vec<NodeView>,
    /// Σ requests of non-terminated pods not bound to a node.
    pub unbound: ResourceList,
    /// Pod counts.
    pub pods: PodFacts,
    /// Pods listed, terminated ones included.
    pub listed_pods: u32,
}

/// Accumulates list pages into an [`Observation`]. Nodes first, then pods; a pod bound to a
/// node that was not listed (created between the two lists) is counted as bound but its
/// requests have no node to go to and are dropped, like that node's capacity.
#[derive(Debug, Default)]
pub struct Fold {
    nodes: BTreeMap<String, NodeView>,
    obs: Observation,
}

impl Fold {
    /// Adds a page of nodes.
    pub fn nodes(&mut self, items: Vec<NodeItem>) {
        for n in items {
            let v = n.into_view();
            self.nodes.insert(v.name.clone(), v);
        }
    }

    /// Adds a page of pods.
    pub fn pods(&mut self, items: Vec<PodItem>) {
        for p in items {
            self.pod(&p);
        }
    }

    /// Adds one pod.
    pub fn pod(&mut self, p: &PodItem) {
        self.obs.listed_pods = self.obs.listed_pods.saturating_add(1);
        if p.is_terminated() {
            return;
        }
        let request = p.request();
        *self.obs.pods.by_owner.entry(p.owner_key()).or_insert(0) += 1;
        match p.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            Some(node) => {
                self.obs.pods.bound = self.obs.pods.bound.saturating_add(1);
                if let Some(n) = self.nodes.get_mut(node) {
                    n.requested.add(&request);
                    n.pods = n.pods.saturating_add(1);
                }
            }
            None => {
                self.obs.pods.unbound = self.obs.pods.unbound.saturating_add(1);
                self.obs.unbound.add(&request);
                if p.is_unschedulable() {
                    *self.obs.pods.unschedulable.entry(p.owner_key()).or_insert(0) += 1;
                }
            }
        }
    }

    /// Forgets the pods (a pod list restarted after 410 Gone); keeps the nodes.
    pub fn reset_pods(&mut self) {
        for n in self.nodes.values_mut() {
            n.requested = ResourceList::new();
            n.pods = 0;
        }
        self.obs = Observation::default();
    }

    /// Forgets the nodes (a node list restarted after 410 Gone).
    pub fn reset_nodes(&mut self) {
        self.nodes.clear();
    }

    /// The observation.
    pub fn finish(mut self) -> Observation {
        self.obs.nodes = self.nodes.into_values().collect();
        self.obs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = r#"{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":""},
      "items":[{"metadata":{"name":"n1","labels":{"zone":"a"},"annotations":{"x":"y"}},
        "spec":{"taints":[{"key":"gpu","value":"","effect":"NoSchedule"}],"unschedulable":true},
        "status":{"allocatable":{"cpu":"3900m","memory":"15Gi","pods":"110","nvidia.com/gpu":"1"},
          "capacity":{"cpu":"4","memory":"16Gi","pods":"110"},
          "conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}],
          "images":[{"names":["x"],"sizeBytes":1}]}}]}"#;

    const PODS: &str = r#"{"kind":"PodList","metadata":{"continue":"abc","resourceVersion":"9"},"items":[
      {"metadata":{"name":"a","namespace":"ns","ownerReferences":[{"kind":"ReplicaSet","name":"web-1","controller":true}]},
       "spec":{"nodeName":"n1","containers":[{"name":"c","resources":{"requests":{"cpu":"250m"},"limits":{"memory":"64Mi"}}}],
               "initContainers":[{"name":"i","resources":{"requests":{"cpu":"1"}}}],"overhead":{"cpu":"10m"}},
       "status":{"phase":"Running"}},
      {"metadata":{"name":"b","namespace":"ns"},"spec":{"nodeName":"n1","containers":[{"resources":{"requests":{"cpu":"2"}}}]},
       "status":{"phase":"Succeeded"}},
      {"metadata":{"name":"c","namespace":"ns","ownerReferences":[{"kind":"ReplicaSet","name":"web-1","controller":true}]},
       "spec":{"containers":[{"resources":{"requests":{"cpu":"500m"}}}]},
       "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable"}]}}
    ]}"#;

    #[test]
    fn pages_fold_into_node_views_and_pod_facts() {
        let nodes = decode_page::<NodeItem>(NODES.as_bytes()).expect("nodes");
        assert_eq!(nodes.metadata.next(), None);
        let pods = decode_page::<PodItem>(PODS.as_bytes()).expect("pods");
        assert_eq!(pods.metadata.next(), Some("abc"));
        let mut f = Fold::default();
        f.nodes(nodes.items);
        f.pods(pods.items);
        let o = f.finish();
        assert_eq!(o.nodes.len(), 1);
        let n = &o.nodes[0];
        assert!(n.ready && n.unschedulable);
        assert_eq!(n.taints[0].value, None);
        assert_eq!(n.allocatable.get("cpu"), 3900);
        assert_eq!(n.allocatable.get("pods"), 110_000);
        // max(250m, 1 init) + 10m overhead; memory from the limit.
        assert_eq!(n.requested.get("cpu"), 1010);
        assert_eq!(n.requested.get("memory"), 64 * 1024 * 1024 * 1000);
        assert_eq!(n.pods, 1);
        assert_eq!((o.pods.bound, o.pods.unbound, o.listed_pods), (1, 1, 3));
        assert_eq!(o.unbound.get("cpu"), 500);
        assert_eq!(o.pods.unschedulable.get("ReplicaSet/ns/web-1"), Some(&1));
    }

    #[test]
    fn errors_name_the_path() {
        let bad = NODES.replace("\"3900m\"", "\"lots\"");
        let e = decode_page::<NodeItem>(bad.as_bytes()).expect_err("bad quantity");
        assert!(e.path.starts_with("items[0].status.allocatable"), "{e}");
        assert!(e.to_string().contains("cpu"), "{e}");
        let e = decode_page::<PodItem>(&PODS.as_bytes()[..100]).expect_err("truncated");
        assert!(e.message.contains("EOF"), "{e}");
        assert!(decode_page::<PodItem>(b"<html>").is_err());
        let empty = decode_page::<PodItem>(br#"{"items":null,"metadata":{}}"#).expect("null items");
        assert!(empty.items.is_empty());
    }
}
