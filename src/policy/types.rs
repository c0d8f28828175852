//! Karmada's API types, field for field (`policy.karmada.io/v1alpha1` and
//! `cluster.karmada.io/v1alpha1`). This is the one home of policy types: every other module
//! reads policies through these structs.
//!
//! Field names, enums and defaults follow Karmada v1.19 (see `shared/notes/karmada-semantics.md`).
//! Unknown fields are rejected, as the API server rejects them with strict field validation, so
//! a typo in a policy is an error that names the field instead of a silently ignored setting.
//! Defaults that Karmada's mutating webhook applies are applied by [`crate::policy::defaults`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The part of `metadata` fedsched reads. Other metadata fields are accepted and ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    #[serde(default)]
    pub uid: Option<String>,
    /// `metadata.generation` (a WorkloadRebalancer acts once per generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Keys of the document's `metadata` that are no field of Kubernetes' `ObjectMeta`
    /// (`nmae:`), set by the loader: accepted, warned about. Not content (never serialized).
    #[serde(skip)]
    pub unknown_fields: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Selectors shared by every policy kind

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: SelectorOperator,
    #[serde(default)]
    pub values: Vec<String>,
}

/// Operators of label selectors and of node-selector requirements (`Gt`/`Lt` exist only in
/// the latter and are rejected by validation where Karmada rejects them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSelector {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldSelector {
    #[serde(default)]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// `ClusterAffinity`: which clusters a placement (or an override rule, or a static weight)
/// targets. An empty affinity matches every cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterAffinity {
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    #[serde(default)]
    pub field_selector: Option<FieldSelector>,
    #[serde(default)]
    pub cluster_names: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// PropagationPolicy / ClusterPropagationPolicy

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PropagationSpec {
    pub resource_selectors: Vec<ResourceSelector>,
    #[serde(default)]
    pub association: bool,
    #[serde(default)]
    pub propagate_deps: bool,
    #[serde(default)]
    pub placement: Placement,
    #[serde(default)]
    pub priority: i32,
    #[serde(default)]
    pub preemption: Preemption,
    #[serde(default)]
    pub dependent_overrides: Vec<String>,
    #[serde(default)]
    pub scheduler_name: Option<String>,
    #[serde(default)]
    pub failover: Option<FailoverBehavior>,
    /// `None` when not written (Karmada's default is `Abort`).
    #[serde(default)]
    pub conflict_resolution: Option<ConflictResolution>,
    #[serde(default)]
    pub activation_preference: Option<ActivationPreference>,
    #[serde(default)]
    pub suspension: Option<Suspension>,
    #[serde(default)]
    pub preserve_resources_on_deletion: Option<bool>,
    #[serde(default)]
    pub schedule_priority: Option<SchedulePriority>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Preemption {
    Always,
    #[default]
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConflictResolution {
    Abort,
    Overwrite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ActivationPreference {
    Lazy,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Suspension {
    #[serde(default)]
    pub dispatching: Option<bool>,
    #[serde(default)]
    pub dispatching_on_clusters: Option<SuspendClusters>,
}

impl Suspension {
    /// Whether dispatching to `cluster` is suspended: `dispatching: true` suspends every
    /// cluster, `dispatchingOnClusters` the clusters it names.
    pub fn suspends(&self, cluster: &str) -> bool {
        self.dispatching == Some(true)
            || self.dispatching_on_clusters.as_ref().is_some_and(|s| s.cluster_names.iter().any(|c| c == cluster))
    }

    /// What it suspends, if anything: `None` when no dispatching is suspended, an empty list
    /// when every cluster's is (`dispatching: true`), else the clusters named.
    pub fn suspended(&self) -> Option<Vec<String>> {
        if self.dispatching == Some(true) {
            return Some(Vec::new());
        }
        let named = self.dispatching_on_clusters.as_ref().map(|s| s.cluster_names.clone()).unwrap_or_default();
        (!named.is_empty()).then_some(named)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuspendClusters {
    #[serde(default)]
    pub cluster_names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulePriority {
    #[serde(default)]
    pub priority_class_source: Option<String>,
    #[serde(default)]
    pub priority_class_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailoverBehavior {
    #[serde(default)]
    pub application: Option<ApplicationFailoverBehavior>,
    #[serde(default)]
    pub cluster: Option<ClusterFailoverBehavior>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplicationFailoverBehavior {
    #[serde(default)]
    pub decision_conditions: DecisionConditions,
    #[serde(default)]
    pub purge_mode: Option<PurgeMode>,
    #[serde(default)]
    pub grace_period_seconds: Option<i32>,
    #[serde(default)]
    pub state_preservation: Option<StatePreservation>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecisionConditions {
    #[serde(default)]
    pub toleration_seconds: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterFailoverBehavior {
    #[serde(default)]
    pub purge_mode: Option<PurgeMode>,
    #[serde(default)]
    pub state_preservation: Option<StatePreservation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PurgeMode {
    Directly,
    Gracefully,
    Never,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatePreservation {
    #[serde(default)]
    pub rules: Vec<StatePreservationRule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatePreservationRule {
    pub alias_label_name: String,
    pub json_path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Placement {
    #[serde(default)]
    pub cluster_affinity: Option<ClusterAffinity>,
    #[serde(default)]
    pub cluster_affinities: Vec<ClusterAffinityTerm>,
    #[serde(default)]
    pub cluster_tolerations: Vec<Toleration>,
    #[serde(default)]
    pub spread_constraints: Vec<SpreadConstraint>,
    #[serde(default)]
    pub replica_scheduling: Option<ReplicaSchedulingStrategy>,
    #[serde(default)]
    pub workload_affinity: Option<WorkloadAffinity>,
}

/// One ordered group of `clusterAffinities`. Karmada inlines `ClusterAffinity`; serde's
/// `flatten` does not combine with `deny_unknown_fields`, so the fields are spelled out and
/// [`ClusterAffinityTerm::affinity`] rebuilds the inline value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterAffinityTerm {
    pub affinity_name: String,
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    #[serde(default)]
    pub field_selector: Option<FieldSelector>,
    #[serde(default)]
    pub cluster_names: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub overflow_affinities: Vec<OverflowClusterAffinity>,
}

impl ClusterAffinityTerm {
    pub fn affinity(&self) -> ClusterAffinity {
        ClusterAffinity {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            cluster_names: self.cluster_names.clone(),
            exclude: self.exclude.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverflowClusterAffinity {
    pub affinity_name: String,
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    #[serde(default)]
    pub field_selector: Option<FieldSelector>,
    #[serde(default)]
    pub cluster_names: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// `corev1.Toleration`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub operator: Option<TolerationOperator>,
    #[serde(default)]
    pub value: Option<String>,
    #[serde(default)]
    pub effect: Option<TaintEffect>,
    #[serde(default)]
    pub toleration_seconds: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TolerationOperator {
    Exists,
    Equal,
    Lt,
    Gt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

/// `corev1.Taint` as it appears on a Cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Taint {
    pub key: String,
    #[serde(default)]
    pub value: Option<String>,
    pub effect: TaintEffect,
    #[serde(default)]
    pub time_added: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpreadByField {
    Cluster,
    Region,
    Zone,
    Provider,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpreadConstraint {
    #[serde(default)]
    pub spread_by_field: Option<SpreadByField>,
    #[serde(default)]
    pub spread_by_label: Option<String>,
    #[serde(default)]
    pub max_groups: i32,
    #[serde(default)]
    pub min_groups: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSchedulingStrategy {
    #[serde(default)]
    pub replica_scheduling_type: Option<ReplicaSchedulingType>,
    #[serde(default)]
    pub replica_division_preference: Option<ReplicaDivisionPreference>,
    #[serde(default)]
    pub weight_preference: Option<ClusterPreferences>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicaSchedulingType {
    Duplicated,
    Divided,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplicaDivisionPreference {
    Aggregated,
    Weighted,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterPreferences {
    #[serde(default)]
    pub static_weight_list: Vec<StaticClusterWeight>,
    #[serde(default)]
    pub dynamic_weight: Option<DynamicWeightFactor>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StaticClusterWeight {
    pub target_cluster: ClusterAffinity,
    pub weight: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DynamicWeightFactor {
    AvailableReplicas,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadAffinity {
    #[serde(default)]
    pub affinity: Option<WorkloadAffinityTerm>,
    #[serde(default)]
    pub anti_affinity: Option<WorkloadAffinityTerm>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadAffinityTerm {
    pub group_by_label_key: String,
}

// ---------------------------------------------------------------------------------------------
// OverridePolicy / ClusterOverridePolicy

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideSpec {
    #[serde(default)]
    pub resource_selectors: Vec<ResourceSelector>,
    #[serde(default)]
    pub override_rules: Vec<RuleWithCluster>,
    /// Deprecated pair, kept for compatibility; cannot co-exist with `overrideRules`.
    #[serde(default)]
    pub target_cluster: Option<ClusterAffinity>,
    #[serde(default)]
    pub overriders: Option<Overriders>,
}

impl OverrideSpec {
    /// The rules in effect: `overrideRules`, or the deprecated `targetCluster` + `overriders`.
    pub fn rules(&self) -> Vec<RuleWithCluster> {
        if !self.override_rules.is_empty() {
            return self.override_rules.clone();
        }
        match &self.overriders {
            Some(o) => vec![RuleWithCluster { target_cluster: self.target_cluster.clone(), overriders: o.clone() }],
            None => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RuleWithCluster {
    #[serde(default)]
    pub target_cluster: Option<ClusterAffinity>,
    pub overriders: Overriders,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Overriders {
    #[serde(default)]
    pub plaintext: Vec<PlaintextOverrider>,
    #[serde(default)]
    pub image_overrider: Vec<ImageOverrider>,
    #[serde(default)]
    pub command_overrider: Vec<CommandArgsOverrider>,
    #[serde(default)]
    pub args_overrider: Vec<CommandArgsOverrider>,
    #[serde(default)]
    pub labels_overrider: Vec<LabelAnnotationOverrider>,
    #[serde(default)]
    pub annotations_overrider: Vec<LabelAnnotationOverrider>,
    #[serde(default)]
    pub field_overrider: Vec<FieldOverrider>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OverriderOperator {
    Add,
    Remove,
    Replace,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlaintextOverrider {
    pub path: String,
    pub operator: OverriderOperator,
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageOverrider {
    #[serde(default)]
    pub predicate: Option<ImagePredicate>,
    pub component: ImageComponent,
    pub operator: OverriderOperator,
    #[serde(default)]
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImagePredicate {
    pub path: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageComponent {
    Registry,
    Repository,
    Tag,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandArgsOverrider {
    pub container_name: String,
    pub operator: OverriderOperator,
    #[serde(default)]
    pub value: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelAnnotationOverrider {
    pub operator: OverriderOperator,
    #[serde(default)]
    pub value: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldOverrider {
    pub field_path: String,
    #[serde(default)]
    pub json: Vec<FieldPatch>,
    #[serde(default)]
    pub yaml: Vec<FieldPatch>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldPatch {
    pub sub_path: String,
    pub operator: OverriderOperator,
    #[serde(default)]
    pub value: Option<serde_json::Value>,
}

// ---------------------------------------------------------------------------------------------
// ClusterTaintPolicy (accepted and validated; applied by the failover work)

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterTaintPolicySpec {
    #[serde(default)]
    pub target_clusters: Option<ClusterAffinity>,
    #[serde(default)]
    pub add_on_conditions: Vec<MatchCondition>,
    #[serde(default)]
    pub remove_on_conditions: Vec<MatchCondition>,
    #[serde(default)]
    pub taints: Vec<TaintSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatchCondition {
    pub condition_type: String,
    pub operator: SelectorOperator,
    #[serde(default)]
    pub status_values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaintSpec {
    pub key: String,
    pub effect: TaintEffect,
    #[serde(default)]
    pub value: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// WorkloadRebalancer (apps.karmada.io/v1alpha1): a fresh decision of the workloads it names,
// once per generation

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadRebalancerSpec {
    #[serde(default)]
    pub workloads: Vec<RebalanceReference>,
    /// Karmada deletes a finished rebalancer after this long; in a repository the object's
    /// lifetime is the repository's (named in a warning).
    #[serde(default)]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// Karmada's `ObjectReference` of a WorkloadRebalancer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RebalanceReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    /// Empty: a cluster-scoped resource.
    #[serde(default)]
    pub namespace: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Cluster (cluster.karmada.io/v1alpha1)

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default)]
    pub id: Option<String>,
    pub sync_mode: SyncMode,
    #[serde(default, rename = "apiEndpoint")]
    pub api_endpoint: Option<String>,
    #[serde(default)]
    pub secret_ref: Option<LocalSecretReference>,
    #[serde(default)]
    pub impersonator_secret_ref: Option<LocalSecretReference>,
    #[serde(default, rename = "insecureSkipTLSVerification")]
    pub insecure_skip_tls_verification: bool,
    #[serde(default, rename = "proxyURL")]
    pub proxy_url: Option<String>,
    #[serde(default)]
    pub proxy_header: BTreeMap<String, String>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
    /// Deprecated single zone; migrated into `zones` by [`crate::policy::defaults`].
    #[serde(default)]
    pub zone: Option<String>,
    #[serde(default)]
    pub zones: Vec<String>,
    #[serde(default)]
    pub taints: Vec<Taint>,
    #[serde(default)]
    pub resource_models: Vec<ResourceModel>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyncMode {
    #[default]
    Push,
    Pull,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalSecretReference {
    pub namespace: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceModel {
    pub grade: u32,
    pub ranges: Vec<ResourceModelRange>,
}

/// A `[min, max)` interval of one resource. Quantities are kept as written and parsed by
/// [`crate::model::Quantity`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceModelRange {
    pub name: String,
    pub min: QuantityValue,
    pub max: QuantityValue,
}

/// A Kubernetes quantity as written in YAML: `"500m"`, `4`, `"16Gi"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum QuantityValue {
    Int(i64),
    Text(String),
}

impl std::fmt::Display for QuantityValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuantityValue::Int(i) => write!(f, "{i}"),
            QuantityValue::Text(s) => f.write_str(s),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    #[serde(default)]
    pub kubernetes_version: Option<String>,
    #[serde(default)]
    pub api_enablements: Vec<ApiEnablement>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub node_summary: Option<NodeSummary>,
    #[serde(default)]
    pub resource_summary: Option<ResourceSummary>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiEnablement {
    pub group_version: String,
    #[serde(default)]
    pub resources: Vec<ApiResource>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResource {
    pub name: String,
    pub kind: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub last_transition_time: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    #[serde(default)]
    pub total_num: i32,
    #[serde(default)]
    pub ready_num: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    #[serde(default)]
    pub allocatable: BTreeMap<String, QuantityValue>,
    #[serde(default)]
    pub allocating: BTreeMap<String, QuantityValue>,
    #[serde(default)]
    pub allocated: BTreeMap<String, QuantityValue>,
    #[serde(default)]
    pub allocatable_modelings: Vec<AllocatableModeling>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocatableModeling {
    pub grade: u32,
    pub count: i64,
}

// ---------------------------------------------------------------------------------------------
// WorkloadInterpreter (fedsched.io/v1alpha1): fedsched's declarative interpreter

/// `fedsched.io/v1alpha1 WorkloadInterpreter` `spec`: where a kind keeps its replicas, pod
/// template and per-replica requests, as JSON pointers (RFC 6901, `/spec/replicas`). Read by
/// [`crate::model::workload::interpret`] before the built-in knowledge, so it may also
/// override a built-in kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadInterpreterSpec {
    pub target: InterpreterTarget,
    /// Replica count (integer); absent in an object = 1. Without this path the kind has no
    /// replicas and is propagated as it is.
    #[serde(default)]
    pub replicas_path: Option<String>,
    /// A pod template (`{metadata, spec}`); its `spec` gives requests, node selector,
    /// tolerations and the dependencies followed by `propagateDeps`.
    #[serde(default)]
    pub pod_template_path: Option<String>,
    /// A resource map (`{cpu: 500m, memory: 1Gi}`) of per-replica requests; wins over the pod
    /// template's containers.
    #[serde(default)]
    pub requests_path: Option<String>,
}

/// The kind a [`WorkloadInterpreterSpec`] describes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterpreterTarget {
    pub api_version: String,
    pub kind: String,
}

// ---------------------------------------------------------------------------------------------
/// The Cluster annotation that names a member's GitOps agent object, whose sync state a
/// progressive rollout's gate reads: `Kustomization/<namespace>/<name>` (Flux,
/// `kustomize.toolkit.fluxcd.io/v1`) or `Application/<namespace>/<name>` (Argo CD,
/// `argoproj.io/v1alpha1`, in the member itself).
pub const GITOPS_AGENT_ANNOTATION: &str = "rollout.fedsched.io/gitops-agent";

/// The agent object an annotation value names ([`GITOPS_AGENT_ANNOTATION`]), or why not.
pub fn agent_object(value: &str) -> Result<super::ObjectKey, String> {
    let parts: Vec<&str> = value.split('/').collect();
    let [kind, ns, name] = parts.as_slice() else {
        return Err(format!("`{value}` is not `Kustomization/<namespace>/<name>` or `Application/<namespace>/<name>`"));
    };
    let api_version = match *kind {
        "Kustomization" => "kustomize.toolkit.fluxcd.io/v1",
        "Application" => "argoproj.io/v1alpha1",
        other => {
            return Err(format!("`{other}` is no GitOps agent kind: Kustomization (Flux) or Application (Argo CD)"));
        }
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if !valid(ns) || !valid(name) {
        return Err(format!("`{value}`: the namespace and name must be lowercase DNS names"));
    }
    Ok(super::ObjectKey::new(api_version, kind, Some(ns), name))
}

// RolloutPolicy (fedsched.io/v1alpha1): a template change reaches its clusters in stages

/// How long a stage's clusters must be observed Healthy on the new version before its gate
/// passes, when `minSuccessTime` is not set. Non-zero: a stage whose clusters cannot be
/// observed (offline members) passes only by approval or after this long, never at once.
pub const DEFAULT_MIN_SUCCESS_TIME: std::time::Duration = std::time::Duration::from_secs(300);

/// `fedsched.io/v1alpha1 RolloutPolicy` `spec` (namespaced, like a PropagationPolicy): the
/// templates it selects reach their clusters stage by stage, each stage released only when
/// the one before passed its gate. The CRD-style schema is `config/crds/rolloutpolicies.fedsched.io.yaml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutSpec {
    /// The templates it rolls out: a PropagationPolicy's selectors, in the policy's namespace.
    pub resource_selectors: Vec<ResourceSelector>,
    /// Ordered stages; the workload's clusters no stage names form a final stage.
    pub stages: Vec<RolloutStage>,
    /// Healthy this long (humantime: `5m`, `90s`) before a stage's gate passes; default
    /// [`DEFAULT_MIN_SUCCESS_TIME`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_success_time: Option<String>,
    /// A stage not Healthy this long after it was released has failed; unset: no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline: Option<String>,
    /// Clusters (a number, or a percentage of the workload's clusters) that may fail before the
    /// rollout stops; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failures: Option<IntOrPercent>,
    /// Approvals, each a stage name: a commit to the policy repository that adds a name
    /// approves that stage's gate for the rollout under way (names present when a rollout
    /// started do not count for it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved_stages: Vec<String>,
    /// What a failed stage does: `Halt` (default) or `Rollback`.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// What a new version does while a rollout is progressing: `Supersede` (default) or
    /// `Queue`.
    #[serde(default)]
    pub on_new_version: OnNewVersion,
}

/// One stage of a [`RolloutSpec`]: its clusters named by a Karmada `ClusterAffinity`, or the
/// next `maxConcurrency` of the workload's clusters not in an earlier stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutStage {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<IntOrPercent>,
    /// The gate after this stage also needs the stage's name in `spec.approvedStages`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_approval: bool,
}

/// A count written as a number (`2`) or a percentage (`"25%"`), as Kubernetes' IntOrString.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IntOrPercent {
    Int(i64),
    Text(String),
}

impl IntOrPercent {
    /// The percentage of a `"N%"` text (`None`: a number, or text that is no percentage).
    pub fn percent(&self) -> Option<Result<u32, String>> {
        match self {
            IntOrPercent::Int(_) => None,
            IntOrPercent::Text(t) => Some(
                t.strip_suffix('%')
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| format!("`{t}` is neither a number nor a percentage (`25%`)")),
            ),
        }
    }

    /// The count out of `total`: a number as it is (at least 0), a percentage rounded up
    /// (`roundUp` of Kubernetes' IntOrString, as OCM's maxConcurrency), unreadable text 0.
    pub fn of(&self, total: usize) -> usize {
        match self {
            IntOrPercent::Int(n) => usize::try_from(*n).unwrap_or(0),
            IntOrPercent::Text(_) => match self.percent() {
                Some(Ok(p)) => (total * p as usize).div_ceil(100),
                _ => 0,
            },
        }
    }
}

impl std::fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntOrPercent::Int(i) => write!(f, "{i}"),
            IntOrPercent::Text(s) => f.write_str(s),
        }
    }
}

/// What a [`RolloutSpec`] does when a stage fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OnFailure {
    /// The rollout stops: the failed stage keeps the new version, the later stages the
    /// previous one.
    #[default]
    Halt,
    /// The failed stage goes back to the previous version; the later stages keep it.
    Rollback,
}

/// What a [`RolloutSpec`] does with a new version (another template content) while a rollout
/// is progressing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OnNewVersion {
    /// The new version replaces the one under way and starts at the first stage.
    #[default]
    Supersede,
    /// The new version waits until the rollout under way completes (or halts, or rolls
    /// back), then starts at the first stage; of several that wait, the newest alone.
    Queue,
}

/// A duration of a [`RolloutSpec`] (`5m`, `90s`, `1h 30m`), read with humantime.
pub fn rollout_duration(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("`{text}` is not a duration (write 5m, 90s or 1h): {e}"))
}

impl RolloutSpec {
    /// `minSuccessTime` ([`DEFAULT_MIN_SUCCESS_TIME`] when unset or unreadable: validation
    /// refuses the latter).
    pub fn min_success_time(&self) -> std::time::Duration {
        self.min_success_time.as_deref().and_then(|t| rollout_duration(t).ok()).unwrap_or(DEFAULT_MIN_SUCCESS_TIME)
    }

    /// `progressDeadline` (`None`: no deadline).
    pub fn progress_deadline(&self) -> Option<std::time::Duration> {
        self.progress_deadline.as_deref().and_then(|t| rollout_duration(t).ok())
    }
}
