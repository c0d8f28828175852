//! Placements seen across the fleet: the workload × cluster matrix (filtered and paged, so it
//! stays small at 10,000 workloads × 1,000 clusters) and one cluster's workloads (what runs on
//! it, what was refused there and why). One builder each for `/api/v1/placements`,
//! `/api/v1/clusters/{name}/workloads` and the web view's Placements and Cluster pages.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::schedule::Outcome;
use crate::store::{PlacementRecord, Store, StoreError};
use crate::views::placed::Placed;

/// The most rows (workloads) one page of the matrix holds.
pub const MAX_ROWS: usize = 200;
/// The most columns (clusters) one window of the matrix holds.
pub const MAX_COLUMNS: usize = 60;
/// The most workloads a cluster's document lists in each of its two lists.
pub const MAX_CLUSTER_ITEMS: usize = 500;

/// A filter and a page of the matrix (`/api/v1/placements?…`, `/ui/placements?…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixQuery {
    /// Only workloads of this namespace (`_` or empty: cluster-scoped ones).
    pub namespace: Option<String>,
    /// Only workloads claimed by this policy: its name, or `namespace/name`.
    pub policy: Option<String>,
    /// Only clusters with this label (`key` or `key=value`), and the workloads placed on one.
    pub label: Option<String>,
    /// Only workloads in this state (`Scheduled` or `Unschedulable`).
    pub state: Option<String>,
    /// The page of rows, from 1.
    pub page: usize,
    /// Rows per page (at most [`MAX_ROWS`]).
    pub per_page: usize,
    /// The window of columns, from 1.
    pub cluster_page: usize,
    /// Columns per window (at most [`MAX_COLUMNS`]).
    pub clusters_per_page: usize,
}

impl Default for MatrixQuery {
    fn default() -> Self {
        MatrixQuery {
            namespace: None,
            policy: None,
            label: None,
            state: None,
            page: 1,
            per_page: 50,
            cluster_page: 1,
            clusters_per_page: 20,
        }
    }
}

impl MatrixQuery {
    /// From decoded query pairs; unknown keys and out-of-range numbers are errors naming the
    /// key (numbers are clamped to the maxima).
    pub fn from_pairs(pairs: &[(String, String)]) -> Result<MatrixQuery, String> {
        let mut q = MatrixQuery::default();
        let number = |k: &str, v: &str| -> Result<usize, String> {
            match v.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!("{k}: expected a number from 1, got {:?}", clip(v))),
            }
        };
        for (k, v) in pairs {
            let text = || (!v.is_empty()).then(|| v.clone());
            match k.as_str() {
                "namespace" => q.namespace = text(),
                "policy" => q.policy = text(),
                "label" => q.label = text(),
                "state" => match v.as_str() {
                    "" => q.state = None,
                    "Scheduled" | "Unschedulable" => q.state = Some(v.clone()),
                    other => return Err(format!("state: expected Scheduled or Unschedulable, got {:?}", clip(other))),
                },
                "page" => q.page = number(k, v)?,
                "perPage" => q.per_page = number(k, v)?.min(MAX_ROWS),
                "clusterPage" => q.cluster_page = number(k, v)?,
                "clustersPerPage" => q.clusters_per_page = number(k, v)?.min(MAX_COLUMNS),
                other => return Err(format!("unknown parameter {:?}", clip(other))),
            }
        }
        Ok(q)
    }

    /// The query string of this filter at another page (`page`, `cluster_page`), for links.
    pub fn to_query(&self, page: usize, cluster_page: usize) -> String {
        let mut parts = Vec::new();
        for (k, v) in
            [("namespace", &self.namespace), ("policy", &self.policy), ("label", &self.label), ("state", &self.state)]
        {
            if let Some(v) = v {
                parts.push(format!("{k}={}", crate::util::percent::encode(v)));
            }
        }
        parts.push(format!("page={page}"));
        parts.push(format!("perPage={}", self.per_page));
        parts.push(format!("clusterPage={cluster_page}"));
        parts.push(format!("clustersPerPage={}", self.clusters_per_page));
        parts.join("&")
    }

    fn label_matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match &self.label {
            None => true,
            Some(l) => match l.split_once('=') {
                Some((k, v)) => labels.get(k).is_some_and(|x| x == v),
                None => labels.contains_key(l.as_str()),
            },
        }
    }

    fn row_matches(&self, p: &PlacementRecord) -> bool {
        if let Some(ns) = &self.namespace {
            let want = if ns == "_" { None } else { Some(ns.as_str()) };
            if p.workload.namespace.as_deref() != want {
                return false;
            }
        }
        if let Some(want) = &self.policy {
            let Some(r) = &p.policy else { return false };
            let full = format!("{}/{}", r.namespace.as_deref().unwrap_or(""), r.name);
            if &r.name != want && &full != want && full.trim_start_matches('/') != want {
                return false;
            }
        }
        if let Some(st) = &self.state {
            let scheduled = matches!(p.result.outcome, Outcome::Scheduled { .. });
            if (st == "Scheduled") != scheduled {
                return false;
            }
        }
        true
    }
}

/// At most 64 characters of something a request sent, for an error message.
fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

/// `Kind/namespace/name` (`_` for cluster-scoped): the key of a workload in links and tables,
/// as the CLI and the API's paths spell it.
pub fn workload_path(w: &crate::policy::ObjectKey) -> (String, String, String) {
    (w.namespace.as_deref().unwrap_or("_").to_string(), w.kind.to_string(), w.name.to_string())
}

/// `/api/v1/placements`: the rows of one page of the filtered workloads and the columns of
/// one window of the filtered clusters, with the totals. `clusters` are the fleet's clusters
/// (name, labels) in name order; a cluster that holds a placement but is not among them (it
/// left the fleet) is a column too when no label filter is set.
///
/// The rows come from `placed`'s indexes: without a filter, the page's rows only are read;
/// with filters, the rows of the smallest index that applies (the namespace's, the policy
/// name's, the unschedulable ones, the label's clusters' placements), each checked against
/// the others.
pub fn matrix(placed: &Placed, clusters: &[(String, BTreeMap<String, String>)], q: &MatrixQuery) -> Value {
    let mut names: Vec<&str> = clusters.iter().filter(|(_, l)| q.label_matches(l)).map(|(n, _)| n.as_str()).collect();
    if q.label.is_none() {
        let extra = placed
            .targeted()
            .iter()
            .map(String::as_str)
            .filter(|c| clusters.binary_search_by(|(n, _)| n.as_str().cmp(c)).is_err());
        names.extend(extra);
        names.sort_unstable();
    }
    let label_set: std::collections::HashSet<&str> =
        if q.label.is_some() { names.iter().copied().collect() } else { Default::default() };
    let mut lists: Vec<&[u32]> = Vec::new();
    if let Some(ns) = &q.namespace {
        lists.push(placed.in_namespace((ns != "_").then_some(ns.as_str())));
    }
    if let Some(policy) = &q.policy {
        lists.push(placed.of_policy(policy.rsplit('/').next().unwrap_or(policy)));
    }
    if q.state.as_deref() == Some("Unschedulable") {
        lists.push(placed.unschedulable());
    }
    let smallest = lists.iter().map(|l| l.len()).min();
    // The label's rows: the placements on its clusters (made only when that is the smallest).
    let on_label: Option<Vec<u32>> = q.label.as_ref().and_then(|_| {
        let size: usize = names.iter().map(|c| placed.on_cluster(c).len()).sum();
        if smallest.is_some_and(|s| s <= size) || size >= placed.len() {
            return None;
        }
        let mut rows: Vec<u32> = names.iter().flat_map(|c| placed.on_cluster(c).iter().copied()).collect();
        rows.sort_unstable();
        rows.dedup();
        Some(rows)
    });
    if let Some(rows) = &on_label {
        lists.push(rows);
    }
    let filtered = q.namespace.is_some() || q.policy.is_some() || q.state.is_some() || q.label.is_some();
    let rows: Vec<u32> = if !filtered {
        Vec::new()
    } else {
        let all: Vec<u32>;
        let base: &[u32] = match lists.iter().min_by_key(|l| l.len()) {
            Some(l) => l,
            None => {
                all = placed.positions().collect();
                &all
            }
        };
        base.iter()
            .copied()
            .filter(|&i| {
                let p = placed.at(i);
                q.row_matches(p) && (q.label.is_none() || p.targets.keys().any(|c| label_set.contains(c.as_str())))
            })
            .collect()
    };
    let total = if filtered { rows.len() } else { placed.len() };
    let pages = total.div_ceil(q.per_page).max(1);
    let page = q.page.min(pages);
    let cluster_pages = names.len().div_ceil(q.clusters_per_page).max(1);
    let cluster_page = q.cluster_page.min(cluster_pages);
    let window: Vec<&str> =
        names.iter().skip((cluster_page - 1) * q.clusters_per_page).take(q.clusters_per_page).copied().collect();
    let first = (page - 1) * q.per_page;
    let shown: Vec<u32> = if filtered {
        rows.iter().skip(first).take(q.per_page).copied().collect()
    } else {
        placed.positions().skip(first).take(q.per_page).collect()
    };
    let rows_json: Vec<Value> = shown
        .into_iter()
        .map(|i| {
            let p = placed.at(i);
            let (ns, kind, name) = workload_path(&p.workload);
            let (state, reason) = match &p.result.outcome {
                Outcome::Scheduled { .. } => ("Scheduled", None),
                Outcome::Unschedulable { reason } => ("Unschedulable", Some(reason.as_str())),
            };
            let cells: Vec<Value> = window
                .iter()
                .map(|c| match p.targets.get(*c) {
                    None => Value::Null,
                    Some(r) => json!({"replicas": r}),
                })
                .collect();
            json!({
                "workload": {"namespace": ns, "kind": kind, "name": name, "apiVersion": p.workload.api_version.as_str()},
                "policy": p.policy.as_ref().map(|r| r.to_string()),
                "state": state,
                "reason": reason,
                "clusters": p.targets.len(),
                "replicas": p.targets.values().map(|r| i64::from(r.unwrap_or(0))).sum::<i64>(),
                "cells": cells,
            })
        })
        .collect();
    json!({
        "workloads": {"total": total, "page": page, "pages": pages, "perPage": q.per_page},
        "clusters": {"total": names.len(), "page": cluster_page, "pages": cluster_pages, "perPage": q.clusters_per_page, "names": window},
        "rows": rows_json,
    })
}

/// `/api/v1/clusters/{name}/workloads`: what runs on a cluster (the placements that target it,
/// with their replicas) and what was refused there (the placements whose last decision
/// rejected it, with the filters' reasons), at most [`MAX_CLUSTER_ITEMS`] of each, with the
/// totals. What runs comes from `placed`'s index of the cluster; what was refused asks every
/// placement (in memory: nothing is decoded), once per pass and cluster: `placed` keeps the
/// document for the last [`crate::views::placed::ON_CLUSTER_KEPT`] clusters asked for.
pub fn cluster_workloads(store: &Store, placed: &Placed, cluster: &str) -> Result<Arc<Value>, StoreError> {
    placed.cluster_document(cluster, || cluster_document(store, placed, cluster))
}

fn cluster_document(store: &Store, placed: &Placed, cluster: &str) -> Result<Value, StoreError> {
    let mut universes: BTreeMap<u64, Option<crate::schedule::UniversePos>> = BTreeMap::new();
    let (mut runs, mut refused) = (Vec::new(), Vec::new());
    let (mut refused_total, mut replicas) = (0usize, 0i64);
    let on = placed.on_cluster(cluster);
    for &i in on {
        let p = placed.at(i);
        let r = p.targets.get(cluster).copied().flatten();
        replicas += i64::from(r.unwrap_or(0));
        if runs.len() < MAX_CLUSTER_ITEMS {
            let (ns, kind, name) = workload_path(&p.workload);
            let w = json!({"namespace": ns, "kind": kind, "name": name});
            runs.push(json!({"workload": w, "replicas": r, "file": p.files.get(cluster)}));
        }
    }
    for i in placed.positions() {
        let p = placed.at(i);
        if p.targets.contains_key(cluster) {
            continue;
        }
        let reasons = if let Some(v) = p.result.verdicts.iter().find(|v| v.name == cluster) {
            (!v.feasible).then(|| v.reasons.clone())
        } else {
            let position = match universes.get(&p.result.universe) {
                Some(pos) => *pos,
                None => {
                    let names = store.universe(p.result.universe)?.unwrap_or_default();
                    let pos =
                        names.binary_search_by(|n| n.as_str().cmp(cluster)).ok().map(crate::schedule::UniversePos::at);
                    universes.insert(p.result.universe, pos);
                    pos
                }
            };
            position
                .and_then(|pos| p.result.rejected.iter().find(|g| g.clusters.contains(pos)).map(|g| g.reasons.clone()))
        };
        if let Some(reasons) = reasons {
            refused_total += 1;
            if refused.len() < MAX_CLUSTER_ITEMS {
                let (ns, kind, name) = workload_path(&p.workload);
                let w = json!({"namespace": ns, "kind": kind, "name": name});
                refused.push(json!({"workload": w, "reasons": reasons}));
            }
        }
    }
    Ok(json!({
        "cluster": cluster,
        "runs": {"total": on.len(), "replicas": replicas, "items": runs},
        "refused": {"total": refused_total, "items": refused},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(s: &[(&str, &str)]) -> Vec<(String, String)> {
        s.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_matrix_query_is_bounded_and_names_what_it_refuses() {
        let q = MatrixQuery::from_pairs(&pairs(&[("perPage", "100000"), ("clustersPerPage", "5000")])).expect("ok");
        assert_eq!((q.per_page, q.clusters_per_page), (MAX_ROWS, MAX_COLUMNS));
        let e = MatrixQuery::from_pairs(&pairs(&[("page", "0")])).expect_err("page 0");
        assert!(e.contains("page"), "{e}");
        let e = MatrixQuery::from_pairs(&pairs(&[("state", "Odd")])).expect_err("state");
        assert!(e.contains("state"), "{e}");
        let e = MatrixQuery::from_pairs(&pairs(&[("x".repeat(1000).as_str(), "1")])).expect_err("unknown");
        assert!(e.len() < 120, "the message clips what the request sent: {e}");
        let q = MatrixQuery::from_pairs(&pairs(&[("namespace", "a b&c"), ("page", "3")])).expect("ok");
        assert_eq!(q.to_query(2, 1), "namespace=a%20b%26c&page=2&perPage=50&clusterPage=1&clustersPerPage=20");
    }
}
