use serde_json::json;

use super::pages;
use crate::views::placements::MatrixQuery;

/// What a name could smuggle in if it were not escaped.
const HOSTILE: &str = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>'";

/// No tag or attribute of the hostile text survives in a page: every `<` of it is `&lt;`.
fn assert_inert(html: &str, what: &str) {
    for bad in ["<script", "<img", "onerror=alert(2)>", "alert(2)>'"] {
        assert!(!html.contains(bad), "{what}: {bad:?} reached the page:\n{html}");
    }
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{what}: the hostile text is shown, escaped:\n{html}"
    );
}

fn hostile_workload() -> serde_json::Value {
    json!({"namespace": HOSTILE, "kind": "Deployment", "name": HOSTILE, "apiVersion": "apps/v1"})
}

#[test]
fn hostile_names_and_labels_are_text_on_every_page() {
    let matrix = json!({
        "workloads": {"total": 1, "page": 1, "pages": 1, "perPage": 50},
        "clusters": {"total": 1, "page": 1, "pages": 1, "perPage": 20, "names": [HOSTILE]},
        "rows": [{"workload": hostile_workload(), "state": HOSTILE, "cells": [{"replicas": 3}]}],
    });
    let q = MatrixQuery { label: Some(HOSTILE.into()), namespace: Some(HOSTILE.into()), ..MatrixQuery::default() };
    assert_inert(&pages::placements(&matrix, &q), "placements");

    let clusters = json!({"clusters": [{"name": HOSTILE, "zones": [HOSTILE], "labels": {HOSTILE: HOSTILE}, "taints": [{"key": HOSTILE, "value": HOSTILE, "effect": "NoSchedule"}], "replicas": 1, "snapshot": {"ageSeconds": 1.0}}]});
    let resources = json!({"dimensions": [HOSTILE, "cpu"], "groups": [{"group": HOSTILE, "clusters": [{"name": HOSTILE, "health": HOSTILE, "reason": HOSTILE, "confidence": 1.0, "source": HOSTILE,
        "resources": {HOSTILE: {"allocated": HOSTILE, "capacity": "1", "free": "1"}, "cpu": {"allocated": "1", "capacity": "2", "free": "1", "normalised": {"allocated": 1.0, "capacity": 2.0, "free": 1.0}}}}]}]});
    assert_inert(&pages::fleet(&clusters, Some(&resources)), "fleet");

    let explain = json!({
        "policy": {"kind": "PropagationPolicy", "namespace": HOSTILE, "name": HOSTILE},
        "claim": {"reason": HOSTILE}, "state": "Scheduled", "reason": HOSTILE, "decidedAt": HOSTILE, "profile": HOSTILE,
        "clusters": [{"name": HOSTILE, "selected": true, "feasible": true, "replicas": 2, "availableReplicas": 3, "reasons": [HOSTILE], "data": {"confidence": 1.0}}],
        "status": {"state": "Healthy", "reason": HOSTILE, "clusters": [{"name": HOSTILE, "state": HOSTILE, "desired": 1, "reason": HOSTILE, "pending": {"count": 1, "reasons": {HOSTILE: 1}, "oldestAgeSeconds": 3.0}}]},
        "failover": {"movedFrom": [{"cluster": HOSTILE, "at": HOSTILE, "reason": HOSTILE}]},
    });
    let history = json!([{"at": HOSTILE, "trigger": HOSTILE, "seq": 1, "outcome": {"scheduled": {HOSTILE: 2}}, "notes": [HOSTILE]}]);
    let files = vec![(HOSTILE.to_string(), HOSTILE.to_string(), Some(HOSTILE.to_string()))];
    assert_inert(&pages::workload(&explain, &history, &files), "workload");

    let listed = json!({"name": HOSTILE, "labels": {"tier": HOSTILE}, "state": HOSTILE, "reason": HOSTILE, "region": HOSTILE, "zones": [HOSTILE], "provider": HOSTILE, "taints": [{"key": HOSTILE, "value": HOSTILE, "effect": HOSTILE}]});
    let snapshots = json!({"versions": [{"version": 1, "firstSeen": HOSTILE, "lastSeen": HOSTILE, "confidence": 1.0}]});
    let workloads = json!({"runs": {"total": 1, "replicas": 2, "items": [{"workload": hostile_workload(), "replicas": 2, "file": HOSTILE}]},
        "refused": {"total": 1, "items": [{"workload": hostile_workload(), "reasons": [HOSTILE]}]}});
    let points = vec![pages::Point { version: 1, at: HOSTILE.into(), capacity: 4.0, free: 2.0 }];
    assert_inert(&pages::cluster(Some(&listed), &snapshots, &points, &workloads), "cluster");

    let plan = json!({"changes": true, "summary": {"changed": 1}, "workloads": [{"workload": HOSTILE, "change": HOSTILE, "reason": HOSTILE}],
        "emptied": HOSTILE, "clusters": [{"cluster": HOSTILE, "added": [HOSTILE]}], "diffs": [{"diff": HOSTILE}]});
    assert_inert(&pages::plan(Some(&plan)), "plan");

    let status = json!({"lastPass": {"outcome": "ok", "at": HOSTILE, "durationMs": 1, "trigger": HOSTILE, "message": HOSTILE},
        "failover": {"stormGuard": HOSTILE}, "ha": {"role": HOSTILE, "holder": HOSTILE}, "lastSummary": HOSTILE});
    assert_inert(&pages::banner(&status), "banner");
}

#[test]
fn the_matrix_pages_link_to_the_next_and_previous_windows() {
    let matrix = json!({
        "workloads": {"total": 120, "page": 2, "pages": 3, "perPage": 50},
        "clusters": {"total": 30, "page": 1, "pages": 2, "perPage": 20, "names": ["a"]},
        "rows": [],
    });
    let q = MatrixQuery { namespace: Some("shop".into()), ..MatrixQuery::default() };
    let html = pages::placements(&matrix, &q);
    assert!(html.contains("workloads page 2 of 3"), "{html}");
    assert!(html.contains("href=\"/ui/placements?namespace=shop&amp;page=1&amp;perPage=50&amp;clusterPage=1&amp;clustersPerPage=20\" rel=\"prev\""), "{html}");
    assert!(html.contains("href=\"/ui/placements?namespace=shop&amp;page=3&amp;perPage=50&amp;clusterPage=1&amp;clustersPerPage=20\" rel=\"next\""), "{html}");
    assert!(html.contains("href=\"/ui/placements?namespace=shop&amp;page=2&amp;perPage=50&amp;clusterPage=2&amp;clustersPerPage=20\" rel=\"next\""), "{html}");
}

/// WCAG 2 relative luminance of `#rrggbb`.
fn luminance(hex: &str) -> f64 {
    let h = hex.trim().trim_start_matches('#');
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&h[i..i + 2], 16).expect("hex colour")) / 255.0;
        if c <= 0.03928 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
    };
    0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4)
}

fn contrast(a: &str, b: &str) -> f64 {
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

/// The stylesheet's palette, read from the stylesheet the daemon serves: every text colour on
/// every background it is used on reaches WCAG 2's AA ratio for normal text (4.5:1).
#[test]
fn the_palette_has_enough_contrast() {
    let css = super::STYLE;
    let var = |name: &str| -> String {
        let at = css.find(&format!("--{name}:")).unwrap_or_else(|| panic!("--{name} in style.css"));
        let rest = &css[at + name.len() + 3..];
        rest[..rest.find(';').expect("semicolon")].trim().to_string()
    };
    let texts = ["fg", "muted", "link", "good", "bad", "neutral", "banner-fg"];
    for bg in ["bg", "card-bg", "banner-bg"] {
        for fg in texts {
            let r = contrast(&var(fg), &var(bg));
            assert!(r >= 4.5, "--{fg} on --{bg}: {r:.2}:1 is below 4.5:1");
        }
    }
    // The focus ring against the page (WCAG 2.2's 3:1 for non-text contrast).
    assert!(contrast(&var("focus"), &var("bg")) >= 3.0);
    assert!((contrast("#000000", "#ffffff") - 21.0).abs() < 1e-9, "the formula itself");
}

#[test]
fn the_limiting_dimension_is_drawn_from_the_estimators_lines() {
    let explain = json!({"clusters": [{"name": "a", "feasible": true, "selected": true, "replicas": 2, "availableReplicas": 2,
        "reasons": ["model: resource summary: cpu: 14 free, 1 per replica: 14 replicas",
                    "model: resource summary: memory: 4Gi free, 2Gi per replica: 2 replicas (limiting)",
                    "model: resource summary: pods: 110 free slots: 110 replicas",
                    "estimator resource-summary: 2 more replicas fit"]}]});
    let html = pages::workload(&explain, &json!([]), &[]);
    assert!(html.contains("<dt class=\"bad\">memory (limiting)</dt>"), "{html}");
    assert!(html.contains("<dt>cpu</dt>"), "{html}");
    assert!(
        html.contains("value=\"2\"") && html.contains("max=\"110\""),
        "bars scaled to the dimension that lets most fit: {html}"
    );
    assert!(html.contains("memory: 4Gi free, 2Gi per replica: 2 replicas"), "the figures beside the bar: {html}");
}
