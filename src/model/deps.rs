//! Dependencies of a workload (Karmada's `GetDependencies` for pod templates): the
//! ConfigMaps, Secrets, ServiceAccount and PersistentVolumeClaims its pod spec references,
//! which `propagateDeps` sends to the same clusters; for a kind with a
//! `dependencyInterpretation` (a customization script or a built-in CRD interpreter), what that
//! answers instead. Pure.

use std::collections::BTreeSet;

use serde_json::Value;

use super::workload::{InterpreterTable, pod_spec_pointer};
use crate::policy::ObjectKey;

/// Every object a template's pod spec references, in the template's namespace (sorted). Empty
/// for kinds without a known pod template and for cluster-scoped templates.
pub fn dependencies(key: &ObjectKey, object: &Value, table: &InterpreterTable) -> BTreeSet<ObjectKey> {
    if let Some(found) = interpreted(key, object, table) {
        return found;
    }
    let Some(ns) = &key.namespace else {
        return BTreeSet::new();
    };
    let Some(spec) = pod_spec_pointer(key.group(), &key.kind, table).and_then(|p| object.pointer(&p)) else {
        return BTreeSet::new();
    };
    pod_dependencies(spec)
        .into_iter()
        .map(|(kind, name)| ObjectKey {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: Some(ns.clone()),
            name: name.into(),
        })
        .collect()
}

/// The dependencies a customization's (or built-in's) `dependencyInterpretation` gives, in
/// precedence order (a repository script over a `WorkloadInterpreter`'s pod template, that over
/// the directories' scripts and the built-ins). References by label selector are not followed.
/// A script that fails is logged and leaves the template without interpreted dependencies.
fn interpreted(key: &ObjectKey, object: &Value, table: &InterpreterTable) -> Option<BTreeSet<ObjectKey>> {
    use super::interpreter::{Args, Layer, Operation, Outcome, Source};
    let source = table.customizations.source(&key.api_version, &key.kind, Operation::InterpretDependency)?;
    let declared = table.get(key.group(), &key.kind).is_some();
    if declared && !matches!(source, Source::Script(Layer::Repository, _)) {
        return None;
    }
    let args = Args { desired: Some(object), ..Args::default() };
    match table.customizations.run(&key.api_version, &key.kind, Operation::InterpretDependency, &args)? {
        Ok(Outcome::Dependencies(list)) => Some(
            list.into_iter()
                .filter(|d| !d.name.is_empty() && !d.kind.is_empty())
                .map(|d| ObjectKey {
                    api_version: d.api_version.into(),
                    kind: d.kind.into(),
                    namespace: match d.namespace.as_str() {
                        "" => key.namespace.clone(),
                        ns => Some(ns.into()),
                    },
                    name: d.name.into(),
                })
                .collect(),
        ),
        Ok(_) => Some(BTreeSet::new()),
        Err(error) => {
            tracing::warn!(template = %key.display_ref(), %error, "dependency interpretation failed");
            Some(BTreeSet::new())
        }
    }
}

/// (kind, name) of everything a pod spec references: volumes (configMap, secret, projected
/// sources, persistentVolumeClaim, CSI / storage secretRefs), `env[].valueFrom` and
/// `envFrom` of every container, init container and ephemeral container, `imagePullSecrets`,
/// and `serviceAccountName` (except `default`).
pub fn pod_dependencies(spec: &Value) -> BTreeSet<(&'static str, String)> {
    let mut out = BTreeSet::new();
    let mut add = |kind: &'static str, name: Option<&Value>| {
        if let Some(n) = name.and_then(Value::as_str).filter(|n| !n.is_empty()) {
            out.insert((kind, n.to_string()));
        }
    };
    let list = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    for field in ["containers", "initContainers", "ephemeralContainers"] {
        for c in list(spec.get(field)) {
            for e in list(c.get("env")) {
                add("ConfigMap", e.pointer("/valueFrom/configMapKeyRef/name"));
                add("Secret", e.pointer("/valueFrom/secretKeyRef/name"));
            }
            for e in list(c.get("envFrom")) {
                add("ConfigMap", e.pointer("/configMapRef/name"));
                add("Secret", e.pointer("/secretRef/name"));
            }
        }
    }
    for s in list(spec.get("imagePullSecrets")) {
        add("Secret", s.get("name"));
    }
    let sa = spec.get("serviceAccountName").or_else(|| spec.get("serviceAccount"));
    if sa.and_then(Value::as_str) != Some("default") {
        add("ServiceAccount", sa);
    }
    for v in list(spec.get("volumes")) {
        add("ConfigMap", v.pointer("/configMap/name"));
        add("Secret", v.pointer("/secret/secretName"));
        add("PersistentVolumeClaim", v.pointer("/persistentVolumeClaim/claimName"));
        for p in list(v.pointer("/projected/sources")) {
            add("ConfigMap", p.pointer("/configMap/name"));
            add("Secret", p.pointer("/secret/name"));
        }
        for ptr in [
            "/csi/nodePublishSecretRef/name",
            "/cephfs/secretRef/name",
            "/cinder/secretRef/name",
            "/flexVolume/secretRef/name",
            "/rbd/secretRef/name",
            "/scaleIO/secretRef/name",
            "/iscsi/secretRef/name",
            "/storageos/secretRef/name",
        ] {
            add("Secret", v.pointer(ptr));
        }
        add("Secret", v.pointer("/azureFile/secretName"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_reference_of_a_pod_template() {
        let d = json!({"spec": {"template": {"spec": {
        "serviceAccountName": "runner",
        "imagePullSecrets": [{"name": "regcred"}],
        "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-secret"}}]}],
        "containers": [{"name": "a",
            "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm-key", "key": "x"}}},
                    {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "s-key", "key": "y"}}},
                    {"name": "Z", "value": "plain"}],
            "envFrom": [{"configMapRef": {"name": "cm-all"}}]}],
        "volumes": [
            {"name": "v1", "configMap": {"name": "cm-vol"}},
            {"name": "v2", "secret": {"secretName": "s-vol"}},
            {"name": "v3", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "v4", "projected": {"sources": [{"configMap": {"name": "cm-proj"}}, {"secret": {"name": "s-proj"}}, {"serviceAccountToken": {"path": "t"}}]}},
            {"name": "v5", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-secret"}}},
            {"name": "v6", "emptyDir": {}}
        ]}}}});
        let key = ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "w".into(),
        };
        let got: Vec<String> = dependencies(&key, &d, &InterpreterTable::default())
            .iter()
            .map(|k| format!("{}/{}", k.kind, k.name))
            .collect();
        assert_eq!(
            got,
            [
                "ConfigMap/cm-all",
                "ConfigMap/cm-key",
                "ConfigMap/cm-proj",
                "ConfigMap/cm-vol",
                "PersistentVolumeClaim/data",
                "Secret/csi-secret",
                "Secret/init-secret",
                "Secret/regcred",
                "Secret/s-key",
                "Secret/s-proj",
                "Secret/s-vol",
                "ServiceAccount/runner",
            ]
        );
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"serviceAccountName": "default",
            "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}}}}}});
        let key = ObjectKey {
            api_version: "batch/v1".into(),
            kind: "CronJob".into(),
            namespace: Some("ns".into()),
            name: "c".into(),
        };
        let got: Vec<String> =
            dependencies(&key, &cron, &InterpreterTable::default()).iter().map(|k| k.name.to_string()).collect();
        assert_eq!(got, ["cfg"]);
    }
}
