//! Narrow decoding of Kubernetes list pages: only what the model needs.
//!
//! A Pod in full (k8s-openapi's typed `Pod`, or a `serde_json::Value`) carries hundreds of
//! fields; the poller needs a handful: node name, phase, the `PodScheduled` and `Ready`
//! conditions (status, reason, transition time), the creation time, the requests of
//! containers, init containers and overhead, and the controlling owner. These structs name
//! only those; serde skips everything else without allocating, quantities are parsed straight
//! into milli-units and timestamps into Unix ms. `benches/decode.rs` measures this against
//! typed decoding.
//!
//! [`Fold`] turns pages into an [`Observation`]: node views with the requests of their
//! non-terminated pods, the requests of unbound pods, pod counts, and per controlling owner
//! what its pods are doing ([`OwnerState`]: [`PodItem::state`] is one pod's part). The watch
//! caches ([`PodCache`]) keep the same sums event by event.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::model::quantity::parse_milli;
use crate::model::workload::{container_request, pod_request};
use crate::model::{ClusterTaint, NodeView, ObjectStatus, OwnerState, PodFacts, ResourceList};
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

/// A field that may be `null` on the wire reads as its default (API servers write `null` for
/// empty lists and objects).
pub(crate) fn null_as_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
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

/// An RFC 3339 timestamp (`2026-11-01T10:00:04Z`, fractions allowed) as Unix ms; `null` or
/// absent ⇒ `None`; times before 1970 ⇒ 0.
fn rfc3339_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an RFC 3339 timestamp")
        }
        fn visit_none<E: de::Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Option<u64>, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Option<u64>, D2::Error> {
            d.deserialize_str(V)
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<u64>, E> {
            let t = crate::util::clock::parse_rfc3339(s)
                .ok_or_else(|| E::custom(format!("timestamp {s:?}: not an RFC 3339 time")))?;
            let ms = t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
            Ok(Some(u64::try_from(ms).unwrap_or(u64::MAX)))
        }
    }
    d.deserialize_option(V)
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
    /// `metadata.resourceVersion` (watch events and bookmarks carry it).
    #[serde(default)]
    pub resource_version: Option<String>,
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

/// A condition (`type`, `status`, `reason`, `lastTransitionTime`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
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
    /// `lastTransitionTime`, Unix ms.
    #[serde(default, deserialize_with = "rfc3339_ms")]
    pub last_transition_time: Option<u64>,
}

impl NodeItem {
    /// The model's view of this node (requests and pod count filled in by [`Fold`]).
    pub fn into_view(self) -> NodeView {
        NodeView {
            ready: self.status.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"),
            name: self.metadata.name,
            labels: self.metadata.labels.into(),
            taints: std::sync::Arc::new(
                self.spec
                    .taints
                    .into_iter()
                    .map(|t| ClusterTaint { key: t.key, value: t.value.filter(|v| !v.is_empty()), effect: t.effect })
                    .collect(),
            ),
            allocatable: self.status.allocatable.0.into(),
            capacity: self.status.capacity.0.into(),
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
    /// `metadata.resourceVersion` (watch events and bookmarks carry it).
    #[serde(default)]
    pub resource_version: Option<String>,
    /// `metadata.creationTimestamp`, Unix ms.
    #[serde(default, deserialize_with = "rfc3339_ms")]
    pub creation_timestamp: Option<u64>,
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

    /// What this (non-terminated) pod adds to its owner's [`OwnerState`], read in one pass over
    /// its conditions; see [`OwnerState`] for the reasons and timestamps.
    pub fn state(&self) -> PodState<'_> {
        let bound = self.spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
        let phase = self.status.phase.as_deref();
        let running = phase == Some("Running");
        let (mut ready_c, mut sched_c) = (None, None);
        for c in &self.status.conditions {
            match c.type_.as_str() {
                "Ready" if ready_c.is_none() => ready_c = Some(c),
                "PodScheduled" if sched_c.is_none() => sched_c = Some(c),
                _ => {}
            }
        }
        let ready = ready_c.is_some_and(|c| c.status == "True");
        let created = self.metadata.creation_timestamp.unwrap_or(0);
        let sched_false = sched_c.filter(|c| c.status == "False");
        let unschedulable_since = sched_false
            .filter(|c| !bound && c.reason.as_deref() == Some("Unschedulable"))
            .map(|c| c.last_transition_time.unwrap_or(created));
        let not_ready = (!ready).then(|| {
            let reason = if !bound {
                reason_of(sched_false).unwrap_or("Scheduling")
            } else if running {
                reason_of(ready_c.filter(|c| c.status != "True")).unwrap_or("NotReady")
            } else {
                match phase {
                    None | Some("Pending") | Some("") => "Starting",
                    Some(other) => other,
                }
            };
            let since = ready_c.and_then(|c| c.last_transition_time).unwrap_or(created);
            (reason, since)
        });
        PodState { bound, running, ready, unschedulable_since, not_ready }
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

/// A condition's reason, when it has a non-empty one.
fn reason_of(c: Option<&ConditionItem>) -> Option<&str> {
    c.and_then(|c| c.reason.as_deref()).filter(|r| !r.is_empty())
}

/// One non-terminated pod's part of its owner's [`OwnerState`] ([`PodItem::state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodState<'a> {
    /// Bound to a node.
    pub bound: bool,
    /// Phase `Running`.
    pub running: bool,
    /// `Ready=True`.
    pub ready: bool,
    /// Unbound with `PodScheduled=False, reason=Unschedulable`: since when (Unix ms).
    pub unschedulable_since: Option<u64>,
    /// Not Ready: why (the [`OwnerState::pending_reasons`] key) and since when (Unix ms).
    pub not_ready: Option<(&'a str, u64)>,
}

/// Adds (`add`) or takes away one pod's part of an owner's state. The timestamp vectors are
/// kept sorted when `sorted` (the watch cache); a [`Fold`] appends and sorts once at the end.
fn apply_state(s: &mut OwnerState, p: &PodState<'_>, add: bool, sorted: bool) {
    let step = |n: &mut u32, on: bool| {
        if on {
            *n = if add { n.saturating_add(1) } else { n.saturating_sub(1) };
        }
    };
    step(&mut s.pods, true);
    step(&mut s.bound, p.bound);
    step(&mut s.running, p.running);
    step(&mut s.ready, p.ready);
    let put = |v: &mut Vec<u64>, t: u64| {
        if !add {
            if let Ok(i) = v.binary_search(&t) {
                v.remove(i);
            }
        } else if sorted {
            let i = v.partition_point(|x| *x <= t);
            v.insert(i, t);
        } else {
            v.push(t);
        }
    };
    if let Some(t) = p.unschedulable_since {
        put(&mut s.unschedulable_since, t);
    }
    if let Some((reason, t)) = p.not_ready {
        put(&mut s.not_ready_since, t);
        if add {
            count_up(&mut s.pending_reasons, reason);
        } else {
            count_down(&mut s.pending_reasons, reason);
        }
    }
}

/// Runs `f` on the entry of `key` in `map` (a default one, inserted, when missing) without
/// allocating the key when it is present.
fn with_entry<V: Default>(map: &mut BTreeMap<String, V>, key: &str, f: impl FnOnce(&mut V)) {
    match map.get_mut(key) {
        Some(v) => f(v),
        None => {
            let mut v = V::default();
            f(&mut v);
            map.insert(key.to_string(), v);
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

/// A member's Deployment, StatefulSet or DaemonSet, as far as its rollout goes (see
/// [`ObjectStatus`]); the rest of the object is skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WorkloadObject {
    kind: String,
    metadata: ObjectMeta,
    spec: ObjectSpec,
    #[serde(deserialize_with = "null_as_default")]
    status: ObjectStatusFields,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ObjectMeta {
    name: String,
    generation: i64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ObjectSpec {
    replicas: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ObjectStatusFields {
    observed_generation: i64,
    replicas: i64,
    updated_replicas: i64,
    ready_replicas: i64,
    available_replicas: i64,
    desired_number_scheduled: i64,
    current_number_scheduled: i64,
    updated_number_scheduled: i64,
    number_ready: i64,
    number_available: i64,
    #[serde(deserialize_with = "null_as_default")]
    conditions: Vec<ObjectCondition>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ObjectCondition {
    #[serde(rename = "type")]
    kind: String,
    reason: String,
    message: String,
}

/// Decodes a member's Deployment, StatefulSet or DaemonSet (a `GET` of the object) into what
/// a rollout judges ([`ObjectStatus::rolled_out`]).
pub fn decode_object_status(bytes: &[u8]) -> Result<ObjectStatus, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let o: WorkloadObject = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| DecodeError { path: e.path().to_string(), message: e.into_inner().to_string() })?;
    Ok(status_of(o))
}

/// One page of workload objects: each one's name and status, and the next page's token.
pub type ObjectStatusPage = (Vec<(String, ObjectStatus)>, Option<String>);

/// One page of a `LIST` of a member's Deployments, StatefulSets or DaemonSets of `kind` in one
/// namespace (its items carry no `kind`): each object's name with what a rollout judges
/// ([`decode_object_status`]), and the token of the next page.
pub fn decode_object_status_page(bytes: &[u8], kind: &str) -> Result<ObjectStatusPage, DecodeError> {
    let page = decode_page::<WorkloadObject>(bytes)?;
    let next = page.metadata.next().map(String::from);
    let items = page
        .items
        .into_iter()
        .map(|mut o| {
            if o.kind.is_empty() {
                o.kind = kind.to_string();
            }
            (std::mem::take(&mut o.metadata.name), status_of(o))
        })
        .collect();
    Ok((items, next))
}

fn status_of(o: WorkloadObject) -> ObjectStatus {
    let s = o.status;
    let stalled = s
        .conditions
        .iter()
        .find(|c| c.kind == "Progressing" && c.reason == "ProgressDeadlineExceeded")
        .map(|c| c.message.clone());
    match o.kind.as_str() {
        "DaemonSet" => ObjectStatus {
            generation: o.metadata.generation,
            observed_generation: s.observed_generation,
            desired: s.desired_number_scheduled,
            current: s.current_number_scheduled,
            updated: s.updated_number_scheduled,
            ready: s.number_ready,
            available: s.number_available,
            stalled,
        },
        kind => ObjectStatus {
            generation: o.metadata.generation,
            observed_generation: s.observed_generation,
            desired: o.spec.replicas.unwrap_or(1),
            current: s.replicas,
            updated: s.updated_replicas,
            ready: s.ready_replicas,
            // A StatefulSet's availableReplicas is recent (1.22): its readyReplicas before.
            available: match kind {
                "StatefulSet" if s.available_replicas == 0 => s.ready_replicas,
                _ => s.available_replicas,
            },
            stalled,
        },
    }
}

/// Largest member object kept for a health interpretation ([`decode_raw_object`]).
pub const MAX_RAW_OBJECT_BYTES: usize = 1 << 20;

/// A member's object of a kind a progressive rollout judges by Karmada's health interpretation
/// (`healthInterpretation`): the object as JSON, without `metadata.managedFields`, and its
/// `metadata.generation`.
pub fn decode_raw_object(bytes: &[u8]) -> Result<crate::model::RawObject, DecodeError> {
    let invalid = |message: String| DecodeError { path: ".".into(), message };
    let mut v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if !v.is_object() {
        return Err(invalid("expected an object".into()));
    }
    if let Some(m) = v.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
        m.remove("managedFields");
    }
    let generation = v.pointer("/metadata/generation").and_then(serde_json::Value::as_i64).unwrap_or(0);
    Ok(crate::model::RawObject { generation, text: std::sync::Arc::from(v.to_string()) })
}

/// A member's GitOps agent object (a Flux `Kustomization`, an Argo CD `Application`), as far
/// as its sync state goes ([`crate::model::AgentStatus`]); the rest is skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AgentObject {
    kind: String,
    #[serde(deserialize_with = "null_as_default")]
    status: AgentStatusFields,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct AgentStatusFields {
    // Flux
    last_applied_revision: String,
    last_attempted_revision: String,
    #[serde(deserialize_with = "null_as_default")]
    conditions: Vec<AgentCondition>,
    // Argo CD
    #[serde(deserialize_with = "null_as_default")]
    sync: ArgoSync,
    #[serde(deserialize_with = "null_as_default")]
    health: ArgoHealth,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AgentCondition {
    #[serde(rename = "type")]
    kind: String,
    status: String,
    reason: String,
    message: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ArgoSync {
    status: String,
    revision: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ArgoHealth {
    status: String,
    message: String,
}

/// Decodes a member's Flux `Kustomization` or Argo CD `Application` (a `GET` of the object)
/// into its sync state. Flux: the revision is `lastAppliedRevision`, synced when
/// `lastAttemptedRevision` is the same (no newer revision being tried or failing to apply),
/// healthy on `Ready=True`, degraded on `Ready=False, reason=HealthCheckFailed` (or a
/// `Healthy=False` condition with that reason). Argo CD: `status.sync.revision`, synced on
/// `status.sync.status: Synced`, health from `status.health.status` (`Degraded` degraded).
pub fn decode_agent_status(bytes: &[u8]) -> Result<crate::model::AgentStatus, DecodeError> {
    use crate::model::{AgentHealth, AgentStatus};
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let o: AgentObject = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| DecodeError { path: e.path().to_string(), message: e.into_inner().to_string() })?;
    let s = o.status;
    Ok(match o.kind.as_str() {
        "Application" => AgentStatus {
            kind: o.kind.clone(),
            revision: s.sync.revision,
            synced: s.sync.status == "Synced",
            health: match s.health.status.as_str() {
                "Healthy" => AgentHealth::Healthy,
                "Degraded" => AgentHealth::Degraded,
                _ => AgentHealth::Progressing,
            },
            message: match (s.health.status.as_str(), s.health.message.as_str()) {
                ("", _) => format!("sync {}", s.sync.status),
                (h, "") => format!("sync {}, health {h}", s.sync.status),
                (h, m) => format!("sync {}, health {h}: {m}", s.sync.status),
            },
        },
        "Kustomization" => {
            let cond = |kind: &str| s.conditions.iter().find(|c| c.kind == kind);
            let ready = cond("Ready");
            let failed_check =
                |c: Option<&AgentCondition>| c.is_some_and(|c| c.status == "False" && c.reason == "HealthCheckFailed");
            let health = match ready {
                _ if failed_check(ready) || failed_check(cond("Healthy")) => AgentHealth::Degraded,
                Some(c) if c.status == "True" => AgentHealth::Healthy,
                _ => AgentHealth::Progressing,
            };
            AgentStatus {
                kind: o.kind.clone(),
                synced: !s.last_applied_revision.is_empty() && s.last_attempted_revision == s.last_applied_revision,
                revision: s.last_applied_revision,
                health,
                message: ready.map_or_else(
                    || "no Ready condition".to_string(),
                    |c| format!("Ready={} {}: {}", c.status, c.reason, c.message),
                ),
            }
        }
        other => {
            return Err(DecodeError {
                path: "kind".into(),
                message: format!("`{other}` is no GitOps agent object (Kustomization or Application)"),
            });
        }
    })
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
    /// Σ requests of the non-terminated pods bound to a node that is not listed, with their
    /// count as `pods` (Karmada counts them in `allocated`).
    pub unlisted: ResourceList,
    /// Pods listed, terminated ones included.
    pub listed_pods: u32,
}

/// Accumulates list pages into an [`Observation`]. Nodes first, then pods; a pod bound to a
/// node that was not listed (created between the two lists, or deleted before its pods) is
/// counted as bound and its requests go to [`Observation::unlisted`], as Karmada counts them.
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
        let owner = p.owner_key();
        let state = p.state();
        with_entry(&mut self.obs.pods.owners, &owner, |s| apply_state(s, &state, true, false));
        count_up(&mut self.obs.pods.by_owner, &owner);
        match p.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            Some(node) => {
                self.obs.pods.bound = self.obs.pods.bound.saturating_add(1);
                match self.nodes.get_mut(node) {
                    Some(n) => {
                        n.requested.add(&request);
                        n.pods = n.pods.saturating_add(1);
                    }
                    None => {
                        self.obs.unlisted.add(&request);
                        let pods = self.obs.unlisted.get("pods");
                        self.obs.unlisted.set("pods", pods.saturating_add(1000));
                    }
                }
            }
            None => {
                self.obs.pods.unbound = self.obs.pods.unbound.saturating_add(1);
                self.obs.unbound.add(&request);
                if state.unschedulable_since.is_some() {
                    count_up(&mut self.obs.pods.unschedulable, &owner);
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
        for s in self.obs.pods.owners.values_mut() {
            s.unschedulable_since.sort_unstable();
            s.not_ready_since.sort_unstable();
        }
        self.obs
    }
}

/// A line of a watch stream (`?watch=1`): `{"type": …, "object": …}`.
#[derive(Debug)]
pub enum WatchEvent<T> {
    /// `ADDED`: a new object.
    Added(T),
    /// `MODIFIED`: the object as it is now.
    Modified(T),
    /// `DELETED`: the object as it was last.
    Deleted(T),
    /// `BOOKMARK`: only the object's `metadata.resourceVersion` is meaningful.
    Bookmark(T),
    /// `ERROR`: a `Status` (410 Gone: the resource version asked for is too old, relist).
    Error(StatusItem),
}

/// A `Status` object (the `object` of an `ERROR` event).
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
pub struct StatusItem {
    /// HTTP-like code (`410`).
    #[serde(default)]
    pub code: Option<u16>,
    /// `Expired`, `Gone`, `InternalError`…
    #[serde(default)]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
}

enum EventObject<T> {
    Item(T),
    Status(StatusItem),
    /// `object` came before `type` (the API server writes `type` first; this is the slow path).
    Raw(serde_json::Value),
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for WatchEvent<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::de::DeserializeOwned> Visitor<'de> for V<T> {
            type Value = WatchEvent<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a watch event")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WatchEvent<T>, A::Error> {
                let mut kind: Option<String> = None;
                let mut object: Option<EventObject<T>> = None;
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "type" => kind = Some(map.next_value()?),
                        "object" => {
                            object = Some(match kind.as_deref() {
                                Some("ERROR") => EventObject::Status(map.next_value()?),
                                Some(_) => EventObject::Item(map.next_value()?),
                                None => EventObject::Raw(map.next_value()?),
                            })
                        }
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                let kind = kind.ok_or_else(|| de::Error::missing_field("type"))?;
                let object = object.ok_or_else(|| de::Error::missing_field("object"))?;
                let item = |o: EventObject<T>| -> Result<T, A::Error> {
                    match o {
                        EventObject::Item(t) => Ok(t),
                        EventObject::Raw(v) => serde_json::from_value(v).map_err(de::Error::custom),
                        EventObject::Status(_) => Err(de::Error::custom("a Status where an object was expected")),
                    }
                };
                Ok(match kind.as_str() {
                    "ADDED" => WatchEvent::Added(item(object)?),
                    "MODIFIED" => WatchEvent::Modified(item(object)?),
                    "DELETED" => WatchEvent::Deleted(item(object)?),
                    "BOOKMARK" => WatchEvent::Bookmark(item(object)?),
                    "ERROR" => WatchEvent::Error(match object {
                        EventObject::Status(s) => s,
                        EventObject::Raw(v) => serde_json::from_value(v).map_err(de::Error::custom)?,
                        EventObject::Item(_) => StatusItem::default(),
                    }),
                    other => {
                        return Err(de::Error::unknown_variant(
                            other,
                            &["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"],
                        ));
                    }
                })
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Decodes one line of a watch stream.
pub fn decode_event<T: serde::de::DeserializeOwned>(line: &[u8]) -> Result<WatchEvent<T>, DecodeError> {
    serde_json::from_slice::<WatchEvent<T>>(line)
        .map_err(|e| DecodeError { path: ".".into(), message: format!("watch event: {e}") })
}

/// An object the watch cache keeps: nodes by name, pods by `namespace/name`.
pub trait Keyed {
    /// The cache key.
    fn key(&self) -> String;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
}

impl Keyed for NodeItem {
    fn key(&self) -> String {
        self.metadata.name.clone()
    }
    fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

impl Keyed for PodItem {
    fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }
    fn resource_version(&self) -> Option<&str> {
        self.metadata.resource_version.as_deref()
    }
}

/// What a list page or a watch event goes into: a [`Fold`] (one poll) or a [`NodeCache`] /
/// [`PodCache`] (kept between polls and updated by watch events).
pub trait Sink<T> {
    /// Adds (or replaces) listed objects.
    fn add(&mut self, items: Vec<T>);
    /// Forgets everything added (the list restarts).
    fn reset(&mut self);
}

impl Sink<NodeItem> for Fold {
    fn add(&mut self, items: Vec<NodeItem>) {
        self.nodes(items)
    }
    fn reset(&mut self) {
        self.reset_nodes()
    }
}

impl Sink<PodItem> for Fold {
    fn add(&mut self, items: Vec<PodItem>) {
        self.pods(items)
    }
    fn reset(&mut self) {
        self.reset_pods()
    }
}

/// The nodes of a watched cluster by name (views with no requests: [`WatchCache`] adds them).
#[derive(Debug, Default, Clone)]
pub struct NodeCache {
    nodes: BTreeMap<String, NodeView>,
}

impl NodeCache {
    /// Adds or replaces a node.
    pub fn upsert(&mut self, n: NodeItem) {
        let v = n.into_view();
        self.nodes.insert(v.name.clone(), v);
    }

    /// Removes a node.
    pub fn delete(&mut self, name: &str) {
        self.nodes.remove(name);
    }

    /// Nodes kept.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is kept.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

impl Sink<NodeItem> for NodeCache {
    fn add(&mut self, items: Vec<NodeItem>) {
        for n in items {
            self.upsert(n);
        }
    }
    fn reset(&mut self) {
        self.nodes.clear();
    }
}

/// A string interned by a [`PodCache`]: one pointer wide (an `Arc<str>` is two), as a pod's
/// facts hold up to three and a member thousands of pods. Hashes and compares as the string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Interned(std::sync::Arc<Box<str>>);

impl std::borrow::Borrow<str> for Interned {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Interned {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// What the cache keeps of one pod: exactly what [`Fold::pod`] reads. Strings and request
/// lists are shared between the pods that have the same (interned per cluster).
#[derive(Debug, Clone)]
struct PodFact {
    node: Option<Interned>,
    request: std::sync::Arc<ResourceList>,
    owner: Interned,
    terminated: bool,
    running: bool,
    ready: bool,
    /// Unbound and Unschedulable: since when.
    unschedulable_since: Option<u64>,
    /// Not Ready: the (interned) reason and since when.
    not_ready: Option<(Interned, u64)>,
}

// The watch cache of a member holds one per pod (1,500 a member, 1.5 million in S5 at 1,000
// members): their table is the largest part of the poller's memory (a quarter of its heap).
const _: () = assert!(std::mem::size_of::<PodFact>() <= 64);

/// The pods of a watched cluster, with the sums a [`Fold`] would compute kept up to date
/// event by event (adding a pod adds its contribution, deleting it subtracts it), so building
/// an observation costs O(nodes + owners), not O(pods).
#[derive(Debug, Default, Clone)]
pub struct PodCache {
    pods: std::collections::HashMap<Box<str>, PodFact>,
    /// Σ requests and pod count by node name (whether or not that node is listed).
    per_node: std::collections::HashMap<Interned, (ResourceList, u32)>,
    unbound: ResourceList,
    facts: PodFacts,
    strings: std::collections::HashSet<Interned>,
    requests: std::collections::HashSet<std::sync::Arc<ResourceList>>,
}

impl PodFact {
    /// The same facts (interned values compare by pointer).
    fn same(&self, o: &PodFact) -> bool {
        let node = match (&self.node, &o.node) {
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(&a.0, &b.0),
            (None, None) => true,
            _ => false,
        };
        let not_ready = match (&self.not_ready, &o.not_ready) {
            (Some((a, t)), Some((b, u))) => std::sync::Arc::ptr_eq(&a.0, &b.0) && t == u,
            (None, None) => true,
            _ => false,
        };
        node && not_ready
            && std::sync::Arc::ptr_eq(&self.request, &o.request)
            && std::sync::Arc::ptr_eq(&self.owner.0, &o.owner.0)
            && self.terminated == o.terminated
            && self.running == o.running
            && self.ready == o.ready
            && self.unschedulable_since == o.unschedulable_since
    }

    /// Its part of the owner's state.
    fn state(&self) -> PodState<'_> {
        PodState {
            bound: self.node.is_some(),
            running: self.running,
            ready: self.ready,
            unschedulable_since: self.unschedulable_since,
            not_ready: self.not_ready.as_ref().map(|(r, t)| (&**r, *t)),
        }
    }
}

/// `list += other` without allocating for resources already present.
fn add_to(list: &mut ResourceList, other: &ResourceList) {
    for (k, v) in &other.0 {
        match list.0.get_mut(k) {
            Some(e) => *e = e.saturating_add(*v),
            None => {
                list.0.insert(k.clone(), *v);
            }
        }
    }
}

fn count_up(map: &mut BTreeMap<String, u32>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n = n.saturating_add(1),
        None => {
            map.insert(key.to_string(), 1);
        }
    }
}

/// `list −= other`, dropping resources that reach zero. Every amount added is positive
/// ([`PodItem::request`] keeps only positive ones), so a resource is at zero exactly when no
/// pod contributes to it any more, which is when a fresh [`Fold`] would not have the key.
fn subtract(list: &mut ResourceList, other: &ResourceList) {
    for (k, v) in &other.0 {
        if let Some(e) = list.0.get_mut(k) {
            *e = e.saturating_sub(*v);
            if *e == 0 {
                list.0.remove(k);
            }
        }
    }
}

fn count_down(map: &mut BTreeMap<String, u32>, key: &str) {
    if let Some(n) = map.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(key);
        }
    }
}

impl PodCache {
    fn intern(&mut self, s: &str) -> Interned {
        if let Some(a) = self.strings.get(s) {
            return a.clone();
        }
        let a = Interned(std::sync::Arc::new(s.into()));
        self.strings.insert(a.clone());
        a
    }

    fn intern_request(&mut self, r: ResourceList) -> std::sync::Arc<ResourceList> {
        if let Some(a) = self.requests.get(&r) {
            return std::sync::Arc::clone(a);
        }
        let a = std::sync::Arc::new(r);
        self.requests.insert(std::sync::Arc::clone(&a));
        a
    }

    /// Adds or replaces a pod. A pod whose facts did not change (most `MODIFIED` events:
    /// status and metadata updates) costs its decoding and one lookup.
    pub fn upsert(&mut self, p: &PodItem) {
        let key = p.key();
        let fact = self.fact(p);
        if self.pods.get(key.as_str()).is_some_and(|old| old.same(&fact)) {
            return;
        }
        self.delete(&key);
        self.account(&fact, true);
        self.pods.insert(key.into_boxed_str(), fact);
        self.collect_garbage();
    }

    fn fact(&mut self, p: &PodItem) -> PodFact {
        if p.is_terminated() {
            return PodFact {
                node: None,
                request: self.intern_request(ResourceList::new()),
                owner: self.intern(""),
                terminated: true,
                running: false,
                ready: false,
                unschedulable_since: None,
                not_ready: None,
            };
        }
        let node = p.spec.node_name.as_deref().filter(|n| !n.is_empty()).map(|n| self.intern(n));
        let state = p.state();
        PodFact {
            node,
            request: self.intern_request(p.request()),
            owner: self.intern(&p.owner_key()),
            terminated: false,
            running: state.running,
            ready: state.ready,
            unschedulable_since: state.unschedulable_since,
            not_ready: state.not_ready.map(|(r, t)| (self.intern(r), t)),
        }
    }

    /// Removes a pod (`namespace/name`); nothing if it is not kept.
    pub fn delete(&mut self, key: &str) {
        if let Some(old) = self.pods.remove(key) {
            self.account(&old, false);
        }
    }

    /// Adds (`add`) or subtracts a pod's contribution, as [`Fold::pod`] counts it.
    fn account(&mut self, f: &PodFact, add: bool) {
        if f.terminated {
            return;
        }
        if add {
            count_up(&mut self.facts.by_owner, &f.owner);
        } else {
            count_down(&mut self.facts.by_owner, &f.owner);
        }
        let state = f.state();
        with_entry(&mut self.facts.owners, &f.owner, |s| apply_state(s, &state, add, true));
        if !add && self.facts.owners.get(&*f.owner).is_some_and(|s| s.pods == 0) {
            self.facts.owners.remove(&*f.owner);
        }
        match &f.node {
            Some(node) => {
                let e = match self.per_node.get_mut(&**node) {
                    Some(e) => e,
                    None => self.per_node.entry(node.clone()).or_default(),
                };
                if add {
                    self.facts.bound = self.facts.bound.saturating_add(1);
                    add_to(&mut e.0, &f.request);
                    e.1 = e.1.saturating_add(1);
                } else {
                    self.facts.bound = self.facts.bound.saturating_sub(1);
                    subtract(&mut e.0, &f.request);
                    e.1 = e.1.saturating_sub(1);
                    if e.1 == 0 {
                        self.per_node.remove(node);
                    }
                }
            }
            None if add => {
                self.facts.unbound = self.facts.unbound.saturating_add(1);
                add_to(&mut self.unbound, &f.request);
                if f.unschedulable_since.is_some() {
                    count_up(&mut self.facts.unschedulable, &f.owner);
                }
            }
            None => {
                self.facts.unbound = self.facts.unbound.saturating_sub(1);
                subtract(&mut self.unbound, &f.request);
                if f.unschedulable_since.is_some() {
                    count_down(&mut self.facts.unschedulable, &f.owner);
                }
            }
        }
    }

    /// Drops interned strings and requests no pod uses any more, once they outnumber the pods
    /// (owners come and go with rollouts): memory follows the pods, not the history.
    fn collect_garbage(&mut self) {
        if self.strings.len() + self.requests.len() > 2 * self.pods.len() + 64 {
            self.strings.retain(|s| std::sync::Arc::strong_count(&s.0) > 1);
            self.requests.retain(|r| std::sync::Arc::strong_count(r) > 1);
        }
    }

    /// Pods kept, terminated ones included.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether no pod is kept.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

impl Sink<PodItem> for PodCache {
    fn add(&mut self, items: Vec<PodItem>) {
        for p in &items {
            self.upsert(p);
        }
    }
    fn reset(&mut self) {
        *self = PodCache::default();
    }
}

/// The watched state of one cluster: its nodes and pods as the last list and the watch events
/// since left them. [`WatchCache::observation`] equals what a [`Fold`] of a fresh list of the
/// same objects gives (tested).
#[derive(Debug, Default, Clone)]
pub struct WatchCache {
    /// Nodes by name.
    pub nodes: NodeCache,
    /// Pods by `namespace/name`.
    pub pods: PodCache,
}

impl WatchCache {
    /// The observation a fresh list of the cached objects would give.
    pub fn observation(&self) -> Observation {
        let nodes = self
            .nodes
            .nodes
            .values()
            .map(|n| {
                let mut v = n.clone();
                if let Some((requested, pods)) = self.pods.per_node.get(v.name.as_str()) {
                    v.requested = requested.clone();
                    v.pods = *pods;
                }
                v
            })
            .collect();
        let mut unlisted = ResourceList::new();
        for (node, (requested, pods)) in &self.pods.per_node {
            let name: &str = std::borrow::Borrow::borrow(node);
            if *pods > 0 && !self.nodes.nodes.contains_key(name) {
                unlisted.add(requested);
                let count = unlisted.get("pods");
                unlisted.set("pods", count.saturating_add(i64::from(*pods).saturating_mul(1000)));
            }
        }
        Observation {
            nodes,
            unbound: self.pods.unbound.clone(),
            pods: self.pods.facts.clone(),
            unlisted,
            listed_pods: u32::try_from(self.pods.pods.len()).unwrap_or(u32::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Deployment, a DaemonSet and a stalled Deployment, as a member's API serves them.
    #[test]
    fn a_workload_objects_status_decodes_per_kind() {
        let d = br#"{"kind":"Deployment","metadata":{"name":"web","generation":4},"spec":{"replicas":3},
            "status":{"observedGeneration":4,"replicas":4,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":2}}"#;
        let o = decode_object_status(d).expect("decode");
        assert_eq!(
            (o.generation, o.observed_generation, o.desired, o.current, o.updated, o.ready, o.available),
            (4, 4, 3, 4, 3, 3, 2)
        );
        let ds = br#"{"kind":"DaemonSet","metadata":{"generation":2},"spec":{},"status":{"observedGeneration":1,
            "desiredNumberScheduled":5,"currentNumberScheduled":5,"updatedNumberScheduled":2,"numberReady":5,"numberAvailable":5}}"#;
        let o = decode_object_status(ds).expect("decode");
        assert_eq!((o.desired, o.current, o.updated, o.available), (5, 5, 2, 5));
        assert!(matches!(o.rolled_out(), crate::model::RolledOut::Waiting(_)));
        let stalled = br#"{"kind":"Deployment","metadata":{"generation":1},"status":{"conditions":[
            {"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"timed out"}]}}"#;
        let o = decode_object_status(stalled).expect("decode");
        assert_eq!((o.desired, o.stalled.as_deref()), (1, Some("timed out")));
        let bad = decode_object_status(br#"{"metadata":{"generation":"x"}}"#).expect_err("a string generation");
        assert_eq!(bad.path, "metadata.generation");
        assert!(decode_object_status(br#"{"kind":"Deployment","status":null}"#).is_ok());
    }

    /// A page of a namespace's DaemonSets as a `LIST` serves it (items without `kind`): each
    /// one's name and status as its own `GET` decodes it, and the next page's token.
    #[test]
    fn a_list_page_of_workload_objects_decodes_each_by_name() {
        let page = br#"{"kind":"DaemonSetList","apiVersion":"apps/v1","metadata":{"continue":"t2"},"items":[
            {"metadata":{"name":"a","generation":2},"spec":{},"status":{"observedGeneration":2,
             "desiredNumberScheduled":3,"currentNumberScheduled":3,"updatedNumberScheduled":3,"numberReady":3,"numberAvailable":3}},
            {"metadata":{"name":"b","generation":5},"status":null}]}"#;
        let (items, next) = decode_object_status_page(page, "DaemonSet").expect("decode");
        assert_eq!(next.as_deref(), Some("t2"));
        let names: Vec<&str> = items.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!((items[0].1.desired, items[0].1.updated, items[0].1.generation), (3, 3, 2), "judged as a DaemonSet");
        assert_eq!(items[1].1.generation, 5);
        let last = br#"{"metadata":{"continue":""},"items":null}"#;
        assert_eq!(decode_object_status_page(last, "Deployment").expect("decode"), (Vec::new(), None));
        let bad = decode_object_status_page(br#"{"items":[{"metadata":{"generation":"x"}}]}"#, "Deployment");
        assert!(bad.expect_err("a string generation").path.contains("generation"));
    }

    /// Flux and Argo CD objects as their controllers write them: "not synced yet" apart from
    /// "synced, unhealthy".
    #[test]
    fn gitops_agent_objects_decode_into_their_sync_state() {
        use crate::model::{AgentHealth, AgentVerdict};
        let flux = br#"{"apiVersion":"kustomize.toolkit.fluxcd.io/v1","kind":"Kustomization",
          "metadata":{"name":"apps","namespace":"flux-system","generation":3},
          "status":{"observedGeneration":3,"lastAppliedRevision":"main@sha1:aaa","lastAttemptedRevision":"main@sha1:bbb",
            "conditions":[{"type":"Ready","status":"False","reason":"ReconciliationFailed","message":"apply failed"},
              {"type":"Reconciling","status":"True","reason":"ProgressingWithRetry","message":"retrying"}]}}"#;
        let f = decode_agent_status(flux).expect("flux");
        assert_eq!((f.revision.as_str(), f.synced, &f.health), ("main@sha1:aaa", false, &AgentHealth::Progressing));
        assert!(matches!(f.verdict(Some("main@sha1:000")), AgentVerdict::NotSynced(w) if w.contains("apply failed")));
        let checked = br#"{"kind":"Kustomization","status":{"lastAppliedRevision":"main@sha1:bbb",
          "lastAttemptedRevision":"main@sha1:bbb","conditions":[{"type":"Ready","status":"False",
          "reason":"HealthCheckFailed","message":"timeout waiting for: [Deployment/shop/web status: 'InProgress']"}]}}"#;
        let f = decode_agent_status(checked).expect("flux");
        assert!(
            matches!(f.verdict(Some("main@sha1:aaa")), AgentVerdict::SyncedDegraded(w) if w.contains("HealthCheckFailed"))
        );
        assert!(matches!(f.verdict(Some("main@sha1:bbb")), AgentVerdict::NotSynced(_)), "the revision of the release");
        let argo = br#"{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"m1","namespace":"argocd"},
          "status":{"sync":{"status":"Synced","revision":"0123abcd","comparedTo":{"source":{}}},
            "health":{"status":"Progressing","message":"Waiting for rollout to finish"},"operationState":{"phase":"Succeeded"}}}"#;
        let a = decode_agent_status(argo).expect("argo");
        assert!(matches!(a.verdict(None), AgentVerdict::SyncedProgressing(w) if w.contains("Waiting for rollout")));
        let out_of_sync = br#"{"kind":"Application","status":{"sync":{"status":"OutOfSync","revision":"0123abcd"},"health":{"status":"Healthy"}}}"#;
        let a = decode_agent_status(out_of_sync).expect("argo");
        assert!(matches!(a.verdict(Some("ffff")), AgentVerdict::NotSynced(w) if w.contains("OutOfSync")));
        assert!(decode_agent_status(br#"{"kind":"Deployment"}"#).is_err());
        let bad =
            decode_agent_status(br#"{"kind":"Application","status":{"sync":{"revision":7}}}"#).expect_err("a number");
        assert_eq!(bad.path, "status.sync.revision");
    }

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

    /// Karmada's `getAllocatedResource` counts every non-terminated pod with a `spec.nodeName`,
    /// whether or not its node is listed: so does `allocated`, through `unlisted`, by a list and
    /// by the watch cache alike.
    #[test]
    fn a_pod_bound_to_a_node_not_listed_counts_as_allocated_as_karmada_counts_it() {
        let nodes = || decode_page::<NodeItem>(NODES.as_bytes()).expect("nodes").items;
        let orphan = PODS
            .replace(
                r#""name":"b","namespace":"ns"},"spec":{"nodeName":"n1""#,
                r#""name":"b","namespace":"ns"},"spec":{"nodeName":"gone""#,
            )
            .replace(r#""status":{"phase":"Succeeded"}"#, r#""status":{"phase":"Running"}"#);
        let pods = decode_page::<PodItem>(orphan.as_bytes()).expect("pods").items;
        let mut f = Fold::default();
        f.nodes(nodes());
        for p in &pods {
            f.pod(p);
        }
        let o = f.finish();
        assert_eq!((o.pods.bound, o.nodes[0].pods), (2, 1));
        assert_eq!((o.unlisted.get("cpu"), o.unlisted.get("pods")), (2000, 1000));
        let summary = crate::model::snapshot::ResourceSummary::from_nodes(&o.nodes, &o.unbound, o.pods.unbound, &[])
            .with_unlisted(&o.unlisted);
        assert_eq!(summary.allocated.get("cpu"), 1010 + 2000, "the listed node's pod and the other");
        assert_eq!(summary.allocated.get("pods"), 2000);
        assert_eq!(summary.unlisted(&o.nodes), o.unlisted, "read back from a stored summary");
        // The watch cache: the same, and the part goes when the node is listed after all.
        let mut w = WatchCache::default();
        for n in nodes() {
            w.nodes.upsert(n);
        }
        for p in &pods {
            w.pods.upsert(p);
        }
        assert_eq!(w.observation(), o);
        let gone = NODES.replace(r#""name":"n1""#, r#""name":"gone""#);
        for n in decode_page::<NodeItem>(gone.as_bytes()).expect("nodes").items {
            w.nodes.upsert(n);
        }
        assert_eq!(w.observation().unlisted, ResourceList::new());
    }

    #[test]
    fn pods_fold_into_owner_states() {
        let pod = |name: &str, node: &str, phase: &str, conds: &str| {
            format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"ns","creationTimestamp":"2026-11-01T10:00:00Z",
                  "ownerReferences":[{{"kind":"ReplicaSet","name":"web-1","controller":true}}]}},
                  "spec":{{{node}"containers":[]}},"status":{{"phase":"{phase}","conditions":[{conds}]}}}}"#
            )
        };
        let ready = r#"{"type":"Ready","status":"True","lastTransitionTime":"2026-11-01T10:00:09Z"}"#;
        let not_ready = r#"{"type":"Ready","status":"False","reason":"ContainersNotReady","lastTransitionTime":"2026-11-01T10:00:07.250Z"}"#;
        let unsched = r#"{"type":"PodScheduled","status":"False","reason":"Unschedulable","lastTransitionTime":"2026-11-01T10:00:05Z"}"#;
        let items = [
            pod("a", r#""nodeName":"n1","#, "Running", ready),
            pod("b", r#""nodeName":"n1","#, "Running", not_ready),
            pod("c", r#""nodeName":"n1","#, "Pending", ""),
            pod("d", "", "Pending", unsched),
            pod("e", "", "Pending", r#"{"type":"PodScheduled","status":"False","reason":"SchedulingGated"}"#),
            pod("f", "", "Pending", ""),
            pod("g", r#""nodeName":"n1","#, "Succeeded", ""),
        ];
        let page = format!(r#"{{"items":[{}]}}"#, items.join(","));
        let mut f = Fold::default();
        f.pods(decode_page::<PodItem>(page.as_bytes()).expect("pods").items);
        let o = f.finish();
        let t0 = 1_793_527_200_000; // 2026-11-01T10:00:00Z
        let s = &o.pods.owners["ReplicaSet/ns/web-1"];
        assert_eq!((s.pods, s.bound, s.running, s.ready), (6, 3, 2, 1));
        assert_eq!(s.unschedulable_since, vec![t0 + 5000]);
        // b: its Ready=False transition; c, d, e, f: no Ready condition, the creation time.
        assert_eq!(s.not_ready_since, vec![t0, t0, t0, t0, t0 + 7250]);
        let reasons: Vec<(&str, u32)> = s.pending_reasons.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            reasons,
            vec![
                ("ContainersNotReady", 1),
                ("Scheduling", 1),
                ("SchedulingGated", 1),
                ("Starting", 1),
                ("Unschedulable", 1)
            ]
        );
        assert_eq!(o.pods.unschedulable.get("ReplicaSet/ns/web-1"), Some(&1));
        // The watch cache sums the same, in any order, and forgets a deleted pod's part.
        let mut cache = PodCache::default();
        let decoded = decode_page::<PodItem>(page.as_bytes()).expect("pods").items;
        for p in decoded.iter().rev() {
            cache.upsert(p);
        }
        let w = WatchCache { nodes: NodeCache::default(), pods: cache };
        assert_eq!(w.observation().pods, o.pods);
        let mut cache = w.pods;
        for k in ["ns/a", "ns/b", "ns/c", "ns/d", "ns/e", "ns/f"] {
            cache.delete(k);
        }
        assert!(cache.facts.owners.is_empty() && cache.facts.by_owner.is_empty(), "{:?}", cache.facts);
        // A bad timestamp is an error naming its field.
        let bad = page.replace("2026-11-01T10:00:05Z", "yesterday");
        let e = decode_page::<PodItem>(bad.as_bytes()).expect_err("bad time");
        assert!(e.path.contains("conditions[0].lastTransitionTime"), "{e}");
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
