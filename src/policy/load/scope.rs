//! Whether a kind is namespaced: the CRDs of the repository ([`crd_scope`]) and the built-in
//! list of cluster-scoped kinds.

use std::collections::BTreeMap;

use serde_json::Value;

/// (group, kind, namespaced) of a CRD, or (field, message) of what is wrong with it.
pub(super) type CrdScope = Result<(String, String, bool), (String, String)>;

/// Scope of a CustomResourceDefinition: `Some(Ok((group, kind, namespaced)))`, `Some(Err(..))`
/// for a CRD missing one of the fields, None for other objects.
pub(super) fn crd_scope(value: &Value) -> Option<CrdScope> {
    let api = value.get("apiVersion")?.as_str()?;
    if group_of(api) != "apiextensions.k8s.io" || value.get("kind")?.as_str()? != "CustomResourceDefinition" {
        return None;
    }
    let text = |path: &[&str]| -> Result<String, (String, String)> {
        let mut v = value;
        for p in path {
            v = match v.get(p) {
                Some(v) => v,
                None => return Err((path.join("."), "required field is missing".into())),
            };
        }
        match v.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err((path.join("."), "must be a non-empty string".into())),
        }
    };
    Some((|| {
        let group = text(&["spec", "group"])?;
        let kind = text(&["spec", "names", "kind"])?;
        let scope = text(&["spec", "scope"])?;
        let namespaced = match scope.as_str() {
            "Namespaced" => true,
            "Cluster" => false,
            other => {
                return Err((
                    "spec.scope".to_string(),
                    format!("unknown scope `{other}`, expected `Namespaced` or `Cluster`"),
                ));
            }
        };
        Ok((group, kind, namespaced))
    })())
}

/// API group of an apiVersion (`apps/v1` → `apps`, `v1` → "").
pub(super) fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

pub(super) fn version_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(_, v)| v).unwrap_or(api_version)
}

/// Kinds whose objects are cluster-scoped, by (group, kind). CRD-declared kinds are looked up
/// in [`crate::policy::PolicySet::crd_scopes`] first.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("policy", "PodSecurityPolicy"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
    ("cert-manager.io", "ClusterIssuer"),
    ("work.karmada.io", "ClusterResourceBinding"),
    ("search.karmada.io", "ResourceRegistry"),
    ("apps.karmada.io", "WorkloadRebalancer"),
];

/// Whether objects of this kind live in a namespace: CRD scopes of the repository first, then
/// the built-in list of cluster-scoped kinds; unknown kinds are namespaced (as most are).
pub fn is_namespaced(crd_scopes: &BTreeMap<(String, String), bool>, group: &str, kind: &str) -> bool {
    if let Some(namespaced) = crd_scopes.get(&(group.to_string(), kind.to_string())) {
        return *namespaced;
    }
    !CLUSTER_SCOPED.iter().any(|(g, k)| *g == group && *k == kind)
}
