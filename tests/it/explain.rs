//! `fedsched explain` answers for every workload of the demo, in the documented JSON shape.

use crate::support::*;

#[test]
fn explain_answers_for_every_demo_workload() {
    let s = Scratch::with_demo();
    assert!(s.render().status.success());
    let refs = [
        ("Deployment/shop/web", "Scheduled"),
        ("Deployment/shop/api", "Scheduled"),
        ("Job/ml/trainer", "Scheduled"),
        ("Deployment/ml/reindex", "Unschedulable"),
        ("Deployment/edge/edge-cache", "Scheduled"),
        ("Namespace//shop", "Scheduled"),
        ("ConfigMap/shop/web-config", "Scheduled"),
    ];
    for (r, state) in refs {
        let out = s.cmd("explain", &[r, "-o", "json"]);
        assert!(out.status.success(), "{r}: {}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["state"], state, "{r}: {v}");
        assert!(v["workload"]["kind"].is_string() && v["workload"]["name"].is_string());
        assert!(v["policy"]["kind"].is_string() && v["policy"]["name"].is_string(), "{r}: {v}");
        let clusters = v["clusters"].as_array().expect("clusters");
        assert_eq!(clusters.len(), 5, "{r}: every cluster is explained");
        for c in clusters {
            for field in ["name", "feasible", "reasons", "score", "availableReplicas", "replicas"] {
                assert!(c.get(field).is_some(), "{r}: cluster entry lacks {field}: {c}");
            }
        }
    }
    // The reasons say why: the tainted edge cluster and the not-ready cluster are filtered.
    let out = s.cmd("explain", &["Deployment/shop/web", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let legacy =
        v["clusters"].as_array().and_then(|a| a.iter().find(|c| c["name"] == "us-east-legacy")).expect("legacy");
    assert_eq!(legacy["feasible"], false);
    assert!(legacy["reasons"].to_string().contains("cluster.karmada.io/not-ready"), "{legacy}");
    let text_out = s.cmd("explain", &["Deployment/shop/web"]);
    assert!(text(&text_out.stdout).contains("policy: PropagationPolicy shop/web"), "{}", text(&text_out.stdout));
}

#[test]
fn unknown_workload_is_a_clear_error() {
    let s = Scratch::with_demo();
    let out = s.cmd("explain", &["Deployment/shop/nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no resource template Deployment/shop/nope"), "{}", text(&out.stderr));
}

/// Before the first render there is no store: explain decides from the repository with
/// nothing recorded, and creates nothing under the state directory (it only reads).
#[test]
fn explain_before_the_first_render_answers_and_writes_nothing() {
    let s = Scratch::with_demo();
    let out = s.cmd("explain", &["Deployment/shop/web", "-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["state"], "Scheduled", "{v}");
    assert!(!s.state().exists(), "explain created the state directory");
}
