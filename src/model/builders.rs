//! Building model values field by field: a [`ClusterSnapshot`] or a [`NodeView`] that starts
//! empty and ready, then `with_*` for what a test, a benchmark or the testbed cares about, and
//! [`ResourceList::of`] for literal amounts. The product builds snapshots from Cluster objects
//! and polls (`members`); these exist so that fixtures do not repeat every field.

use super::resources::ResourceList;
use super::snapshot::{
    ClusterConstraints, ClusterSnapshot, ClusterTaint, Freshness, Health, ModelGrade, NodeView, PodFacts, PollFacts,
    ResourceSummary, SnapshotSource,
};

impl ResourceList {
    /// A list of literal amounts in milli-units: `ResourceList::of(&[("cpu", 2000)])`.
    pub fn of(items: &[(&str, i64)]) -> ResourceList {
        ResourceList(items.iter().map(|(k, v)| (k.to_string(), *v)).collect())
    }
}

impl ClusterSnapshot {
    /// A ready cluster from `source` with nothing else known: no labels, provider, region,
    /// zones, taints, API enablements, summary, resource models, nodes, pods or poll facts;
    /// no constraints; fresh.
    pub fn new(name: impl Into<String>, source: SnapshotSource) -> ClusterSnapshot {
        ClusterSnapshot {
            name: name.into(),
            labels: Default::default(),
            provider: None,
            region: None,
            zones: Vec::new(),
            taints: Vec::new(),
            health: Health::Ready,
            source,
            api_enablements: Default::default(),
            summary: None,
            resource_models: Vec::new(),
            nodes: Default::default(),
            pods: None,
            poll: None,
            constraints: ClusterConstraints::default(),
            freshness: None,
            index: Default::default(),
            summary_free: Default::default(),
            taken: Default::default(),
        }
    }

    /// [`ClusterSnapshot::new`] declared in the policy repository's `file`.
    pub fn offline(name: impl Into<String>, file: impl Into<String>) -> ClusterSnapshot {
        ClusterSnapshot::new(name, SnapshotSource::Offline { file: file.into() })
    }

    /// [`ClusterSnapshot::new`] polled from `endpoint` (no node data until
    /// [`ClusterSnapshot::with_nodes`]).
    pub fn live(name: impl Into<String>, endpoint: impl Into<String>) -> ClusterSnapshot {
        ClusterSnapshot::new(name, SnapshotSource::Live { endpoint: endpoint.into() })
    }

    /// Replaces the labels.
    pub fn with_labels<K: Into<String>, V: Into<String>>(mut self, labels: impl IntoIterator<Item = (K, V)>) -> Self {
        self.labels = labels.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self
    }

    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    pub fn with_zones<Z: Into<String>>(mut self, zones: impl IntoIterator<Item = Z>) -> Self {
        self.zones = zones.into_iter().map(Into::into).collect();
        self
    }

    pub fn with_taints(mut self, taints: Vec<ClusterTaint>) -> Self {
        self.taints = taints;
        self
    }

    pub fn with_health(mut self, health: Health) -> Self {
        self.health = health;
        self
    }

    /// Replaces the served `group/version/Kind` entries.
    pub fn with_api_enablements<A: Into<String>>(mut self, apis: impl IntoIterator<Item = A>) -> Self {
        self.api_enablements = std::sync::Arc::new(apis.into_iter().map(Into::into).collect());
        self
    }

    pub fn with_summary(mut self, summary: ResourceSummary) -> Self {
        self.summary = Some(std::sync::Arc::new(summary));
        self.summary_free.reset();
        self
    }

    pub fn with_resource_models(mut self, models: Vec<ModelGrade>) -> Self {
        self.resource_models = models;
        self.summary_free.reset();
        self
    }

    /// Replaces the node-level data (the node index starts empty, as for any new snapshot).
    pub fn with_nodes(mut self, nodes: Vec<NodeView>) -> Self {
        self.nodes = std::sync::Arc::new(nodes);
        self
    }

    pub fn with_pods(mut self, pods: PodFacts) -> Self {
        self.pods = Some(std::sync::Arc::new(pods));
        self
    }

    pub fn with_poll(mut self, poll: PollFacts) -> Self {
        self.poll = Some(poll);
        self
    }

    pub fn with_constraints(mut self, constraints: ClusterConstraints) -> Self {
        self.constraints = constraints;
        self
    }

    pub fn with_freshness(mut self, freshness: Freshness) -> Self {
        self.freshness = Some(freshness);
        self
    }
}

impl NodeView {
    /// A ready, schedulable node offering `allocatable`: no labels, taints or capacity, no
    /// pods and nothing requested.
    pub fn ready(name: impl Into<String>, allocatable: ResourceList) -> NodeView {
        NodeView {
            name: name.into(),
            labels: Default::default(),
            taints: Default::default(),
            allocatable: allocatable.into(),
            capacity: Default::default(),
            ready: true,
            unschedulable: false,
            requested: ResourceList::new(),
            pods: 0,
        }
    }

    /// Replaces the labels.
    pub fn with_labels<K: Into<String>, V: Into<String>>(mut self, labels: impl IntoIterator<Item = (K, V)>) -> Self {
        self.labels = std::sync::Arc::new(labels.into_iter().map(|(k, v)| (k.into(), v.into())).collect());
        self
    }

    pub fn with_taints(mut self, taints: Vec<ClusterTaint>) -> Self {
        self.taints = taints.into();
        self
    }

    pub fn with_capacity(mut self, capacity: ResourceList) -> Self {
        self.capacity = capacity.into();
        self
    }

    /// What the node's `pods` non-terminated pods request in total.
    pub fn with_requested(mut self, requested: ResourceList, pods: u32) -> Self {
        self.requested = requested;
        self.pods = pods;
        self
    }
}
