//! Karmada fields fedsched implements rather than warns about (issue 15): each test fails
//! without its field's behaviour. The fields it does not implement are warned about by
//! `check` (`policy::support`, whose unit test walks every field of the policy types).

use crate::support::*;

fn deployment(image: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop}}\nspec:\n  replicas: {replicas}\n  \
         selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      \
         containers: [{{name: web, image: {image}, resources: {{requests: {{cpu: 100m}}}}}}]\n"
    )
}

/// A Duplicated policy on both clusters, with `extra` added to its spec.
fn policy(extra: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: web, namespace: shop}}\nspec:\n  \
         resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]\n  \
         placement: {{clusterAffinity: {{clusterNames: [a, b]}}, replicaScheduling: {{replicaSchedulingType: Duplicated}}}}\n{extra}"
    )
}

fn scratch(extra: &str) -> Scratch {
    let s = Scratch::new();
    s.write("clusters.yaml", TWO_CLUSTERS);
    s.write("web.yaml", &deployment("nginx:1.0", 2));
    s.write("policy.yaml", &policy(extra));
    s
}

fn read(s: &Scratch, cluster: &str) -> String {
    std::fs::read_to_string(s.out().join(cluster).join("shop/apps_deployment_web.yaml")).unwrap_or_default()
}

fn render_ok(s: &Scratch) -> String {
    let out = s.render();
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    text(&out.stderr)
}

/// `render --allow-mass-delete` (a cluster that loses its only file is a mass deletion).
fn render_deleting(s: &Scratch) -> String {
    let dir = |p: std::path::PathBuf| p.display().to_string();
    let (p, o, st) = (dir(s.policies()), dir(s.out()), dir(s.state()));
    let out = fedsched(&["render", "--policies", &p, "--out", &o, "--state", &st, "--allow-mass-delete"]);
    assert!(out.status.success(), "render failed: {}", text(&out.stderr));
    text(&out.stderr)
}

fn check(s: &Scratch) -> std::process::Output {
    fedsched(&["check", "--policies", s.policies().to_str().expect("utf8")])
}

#[test]
fn suspended_dispatching_keeps_every_file_as_it_was_until_resumed() {
    let s = scratch("");
    render_ok(&s);
    let (a0, b0) = (read(&s, "a"), read(&s, "b"));
    assert!(a0.contains("image: nginx:1.0") && a0.contains("replicas: 2\n"), "{a0}");
    // Suspended, then the template changes: no file changes, but the decision is recorded.
    s.write("policy.yaml", &policy("  suspension: {dispatching: true}\n"));
    s.write("web.yaml", &deployment("nginx:2.0", 3));
    let check = check(&s);
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(!text(&check.stderr).contains("suspension"), "suspension is implemented, not warned about");
    render_ok(&s);
    assert_eq!((read(&s, "a"), read(&s, "b")), (a0.clone(), b0.clone()), "a suspended workload's files changed");
    let placements = placements_of(&s.out()).expect("placements");
    assert!(placements.contains("\"replicas\":3"), "the decision is still recorded: {placements}");
    // A second pass while suspended still changes nothing.
    render_ok(&s);
    assert_eq!(read(&s, "a"), a0);
    // Resumed on b only: b gets the new template, a stays as it was.
    s.write("policy.yaml", &policy("  suspension: {dispatchingOnClusters: {clusterNames: [a]}}\n"));
    render_ok(&s);
    assert_eq!(read(&s, "a"), a0, "a is still suspended");
    let b = read(&s, "b");
    assert!(b.contains("image: nginx:2.0") && b.contains("replicas: 3\n"), "{b}");
    // Resumed everywhere.
    s.write("policy.yaml", &policy(""));
    render_ok(&s);
    assert!(read(&s, "a").contains("image: nginx:2.0"), "{}", read(&s, "a"));
}

#[test]
fn suspended_dispatching_writes_nothing_to_a_new_cluster_and_removes_nothing() {
    let s = Scratch::new();
    s.write("clusters.yaml", TWO_CLUSTERS);
    s.write("web.yaml", &deployment("nginx:1.0", 2));
    let only =
        |names: &str, extra: &str| policy(extra).replace("clusterNames: [a, b]", &format!("clusterNames: [{names}]"));
    s.write("policy.yaml", &only("a", ""));
    render_ok(&s);
    let a0 = read(&s, "a");
    assert!(!a0.is_empty() && read(&s, "b").is_empty());
    // Suspended and moved from a to b: a keeps its file, b gets none.
    s.write("policy.yaml", &only("b", "  suspension: {dispatching: true}\n"));
    render_ok(&s);
    assert_eq!(read(&s, "a"), a0, "the file on the cluster the workload left was removed");
    assert!(read(&s, "b").is_empty(), "a suspended workload was dispatched to a new cluster");
    // Resumed: the move happens.
    s.write("policy.yaml", &only("b", ""));
    render_deleting(&s);
    assert!(read(&s, "a").is_empty() && !read(&s, "b").is_empty());
}

#[test]
fn preserve_resources_on_deletion_marks_objects_for_argo_cd_and_flux_before_their_removal() {
    let s = scratch("");
    render_ok(&s);
    let plain = read(&s, "a");
    assert!(!plain.contains("Prune=false") && !plain.contains("kustomize.toolkit.fluxcd.io/prune"), "{plain}");
    s.write("policy.yaml", &policy("  preserveResourcesOnDeletion: true\n"));
    // An existing sync option of the template is kept; its own Prune= is replaced.
    s.write(
        "web.yaml",
        &deployment("nginx:1.0", 2).replace(
            "namespace: shop}",
            "namespace: shop, annotations: {argocd.argoproj.io/sync-options: 'Prune=true,ServerSideApply=true'}}",
        ),
    );
    let check = check(&s);
    assert!(!text(&check.stderr).contains("preserveResourcesOnDeletion"), "{}", text(&check.stderr));
    render_ok(&s);
    for c in ["a", "b"] {
        let f = read(&s, c);
        assert!(f.contains("argocd.argoproj.io/sync-options: ServerSideApply=true,Prune=false\n"), "{f}");
        assert!(f.contains("kustomize.toolkit.fluxcd.io/prune: disabled\n"), "{f}");
    }
    // The template removed: its files go (the marked objects stay in the members).
    std::fs::remove_file(s.policies().join("web.yaml")).expect("rm");
    render_deleting(&s);
    assert!(read(&s, "a").is_empty() && read(&s, "b").is_empty());
}

#[test]
fn check_names_each_unsupported_field_by_file_document_and_field() {
    let s = scratch(
        "  conflictResolution: Abort\n  schedulerName: other\n  \
         dependentOverrides: [missing]\n  association: true\n",
    );
    s.write(
        "taint.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterTaintPolicy\nmetadata: {name: t}\nspec:\n  \
         addOnConditions: [{conditionType: Ready, operator: In, statusValues: ['False']}]\n  \
         taints: [{key: k, effect: NoSchedule}]\n",
    );
    let out = check(&s);
    assert!(out.status.success(), "warnings do not fail check: {}", text(&out.stderr));
    let err = text(&out.stderr);
    for field in [
        "policy.yaml: document 1: spec.conflictResolution: accepted, not supported: Abort",
        "policy.yaml: document 1: spec.schedulerName: accepted, not supported",
        "policy.yaml: document 1: spec.dependentOverrides[0]: accepted, not supported: `missing`",
        "policy.yaml: document 1: spec.association: accepted, not supported",
    ] {
        assert!(err.contains(&format!("warning: {field}")), "{field} not warned about:\n{err}");
    }
    // A ClusterTaintPolicy is applied (tests/it/failover.rs), not warned about.
    assert!(!err.contains("taint.yaml"), "{err}");
    // Clusters that list their APIs are not warned about; one that lists none is.
    assert!(!err.contains("apiEnablements"), "{err}");
    s.write(
        "clusters.yaml",
        &TWO_CLUSTERS.replace(
            "  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]\n",
            "",
        ),
    );
    let err = text(&check(&s).stderr);
    assert!(err.contains("clusters.yaml: document 1: status.apiEnablements: absent"), "{err}");
    // render reports them too (every pass does; the daemon once per change).
    let err = render_ok(&s);
    assert!(err.contains("warning: policy.yaml: document 1: spec.schedulerName"), "{err}");
}

#[test]
fn deprecated_override_pair_and_api_enablements_apply() {
    let s = Scratch::new();
    let c = "---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: c}\nspec: {syncMode: Push}\n\
             status:\n  resourceSummary: {allocatable: {cpu: '64', memory: 256Gi, pods: '1000'}}\n";
    s.write("clusters.yaml", &format!("{TWO_CLUSTERS}{c}"));
    s.write("web.yaml", &deployment("nginx:1.0", 2));
    s.write("policy.yaml", &policy("").replace("clusterNames: [a, b]", "clusterNames: [a, b, c]"));
    s.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: shop}\ndata: {k: v}\n---\n\
         apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: cfg, namespace: shop}\nspec:\n  \
         resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: cfg}]\n  placement: {clusterAffinity: {clusterNames: [a, b, c]}}\n",
    );
    // The deprecated targetCluster + overriders pair (no overrideRules).
    s.write(
        "override.yaml",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: gold, namespace: shop}\nspec:\n  \
         resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]\n  targetCluster: {clusterNames: [a]}\n  \
         overriders: {labelsOverrider: [{operator: add, value: {tier: gold}}]}\n",
    );
    let err = render_ok(&s);
    // a and b list only Deployments: the ConfigMap goes to c alone, which lists nothing and is
    // taken to serve every API (named in a warning).
    let cm = |cluster: &str| s.out().join(cluster).join("shop/core_configmap_cfg.yaml").exists();
    assert_eq!((cm("a"), cm("b"), cm("c")), (false, false, true), "{err}");
    assert!(err.contains("clusters.yaml: document 3: status.apiEnablements: absent"), "{err}");
    for cluster in ["a", "b", "c"] {
        assert!(!read(&s, cluster).is_empty(), "{cluster} has no Deployment");
    }
    assert!(read(&s, "a").contains("tier: gold\n"), "{}", read(&s, "a"));
    assert!(!read(&s, "b").contains("tier: gold"), "{}", read(&s, "b"));
}

#[test]
fn lazy_activation_applies_a_policy_change_when_the_template_changes() {
    let s = Scratch::new();
    s.write("clusters.yaml", TWO_CLUSTERS);
    s.write("web.yaml", &deployment("nginx:1.0", 2));
    let lazy = |names: &str| {
        policy("  activationPreference: Lazy\n").replace("clusterNames: [a, b]", &format!("clusterNames: [{names}]"))
    };
    s.write("policy.yaml", &lazy("a"));
    // A template first claimed by a Lazy policy is propagated at once.
    render_ok(&s);
    assert!(!read(&s, "a").is_empty() && read(&s, "b").is_empty());
    assert!(!text(&check(&s).stderr).contains("activationPreference"), "Lazy is implemented, not warned about");
    // The policy changes, the template does not: nothing moves, pass after pass.
    s.write("policy.yaml", &lazy("b"));
    render_ok(&s);
    render_ok(&s);
    assert!(!read(&s, "a").is_empty() && read(&s, "b").is_empty(), "a Lazy policy's change applied at once");
    // The template changes: the policy of now applies.
    s.write("web.yaml", &deployment("nginx:2.0", 2));
    render_deleting(&s);
    assert!(read(&s, "a").is_empty(), "{}", read(&s, "a"));
    assert!(read(&s, "b").contains("image: nginx:2.0"), "{}", read(&s, "b"));
    // Without Lazy, a policy change applies at once.
    s.write("policy.yaml", &policy("").replace("clusterNames: [a, b]", "clusterNames: [a]"));
    render_deleting(&s);
    assert!(!read(&s, "a").is_empty() && read(&s, "b").is_empty());
}

#[test]
fn each_cluster_gets_the_namespaces_of_its_objects_unless_turned_off() {
    let s = scratch("");
    let ns_file = |cluster: &str| s.out().join(cluster).join("_cluster/core_namespace_shop.yaml");
    render_ok(&s);
    for c in ["a", "b"] {
        let ns = std::fs::read_to_string(ns_file(c)).unwrap_or_else(|_| panic!("{c} has no Namespace shop"));
        assert!(ns.contains("kind: Namespace\n") && ns.contains("name: shop\n"), "{ns}");
        // Removing the file (the last object left) never deletes the namespace in the member.
        assert!(ns.contains("argocd.argoproj.io/sync-options: Prune=false\n"), "{ns}");
        assert!(ns.contains("kustomize.toolkit.fluxcd.io/prune: disabled\n"), "{ns}");
        let k = std::fs::read_to_string(s.out().join(c).join("kustomization.yaml")).expect("kustomization");
        assert!(k.contains("_cluster/core_namespace_shop.yaml"), "{k}");
    }
    // The repository's Namespace object gives its labels; nothing propagates it by policy.
    s.write("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {team: checkout}}\n");
    render_ok(&s);
    let ns = std::fs::read_to_string(ns_file("a")).expect("ns");
    assert!(ns.contains("team: checkout\n") && ns.contains("fedsched.io/source: ns.yaml\n"), "{ns}");
    // Karmada's skip label keeps it out.
    s.write(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {namespace.karmada.io/skip-auto-propagation: 'true'}}\n",
    );
    render_deleting(&s);
    assert!(!ns_file("a").exists(), "a skipped namespace was propagated");
    // `default` is never written; `[publish] namespaces = false` turns it off.
    s.write("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    render_ok(&s);
    assert!(ns_file("a").exists());
    let cfg = s.dir.path().join("fedsched.toml");
    std::fs::write(&cfg, "[publish]\nnamespaces = false\nallow_mass_delete = true\n").expect("config");
    let dir = |p: std::path::PathBuf| p.display().to_string();
    let (p, o, st) = (dir(s.policies()), dir(s.out()), dir(s.state()));
    let out = fedsched(&["--config", &dir(cfg), "render", "--policies", &p, "--out", &o, "--state", &st]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!ns_file("a").exists() && !ns_file("b").exists(), "namespaces = false still wrote them");
    assert!(!read(&s, "a").is_empty());
}
