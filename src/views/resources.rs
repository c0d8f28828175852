//! The `resources` document: capacity, allocated and free per dimension (raw, and CPU also in
//! normalised cores; per member also its GPUs by model, `gpuModels`), with confidence, aggregated over clusters grouped by region, zone,
//! provider or any cluster label. One builder for `fedsched resources` and
//! `/api/v1/resources`, JSON and text.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::model::ClusterSnapshot;
use crate::model::dimensions::{Dimensions, GPU_PRODUCT_LABEL, GPU_RESOURCES, ModelSettings};
use crate::model::nodes::cpu_figures;
use crate::model::quantity::format_milli;

/// How clusters are grouped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum GroupBy {
    /// `spec.region` (the default).
    #[default]
    Region,
    /// `spec.zones` (joined with `,` when a cluster spans several).
    Zone,
    /// `spec.provider`.
    Provider,
    /// A Cluster label.
    Label(String),
}

impl std::str::FromStr for GroupBy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "region" => Ok(GroupBy::Region),
            "zone" => Ok(GroupBy::Zone),
            "provider" => Ok(GroupBy::Provider),
            other => match other.strip_prefix("label=") {
                Some(k) if !k.is_empty() => Ok(GroupBy::Label(k.to_string())),
                _ => Err(format!("{s:?}: use region, zone, provider or label=KEY")),
            },
        }
    }
}

impl GroupBy {
    /// The query form (`region`, `label=KEY`).
    pub fn as_query(&self) -> String {
        match self {
            GroupBy::Region => "region".into(),
            GroupBy::Zone => "zone".into(),
            GroupBy::Provider => "provider".into(),
            GroupBy::Label(k) => format!("label={k}"),
        }
    }

    /// The group of a member (`(none)` without the field or label).
    pub fn key(&self, c: &ClusterSnapshot) -> String {
        let v = match self {
            GroupBy::Region => c.region.clone(),
            GroupBy::Zone => (!c.zones.is_empty()).then(|| c.zones.join(",")),
            GroupBy::Provider => c.provider.clone(),
            GroupBy::Label(k) => c.labels.get(k).cloned(),
        };
        v.unwrap_or_else(|| "(none)".into())
    }
}

/// One cluster as the document sees it: its latest snapshot and how far to trust it.
#[derive(Debug, Clone)]
pub struct ClusterView {
    pub snapshot: ClusterSnapshot,
    /// Confidence in [0, 1] (1 for offline clusters).
    pub confidence: f64,
    /// Age of the data in ms (None for offline clusters).
    pub age_ms: Option<u64>,
}

/// Amounts of one dimension (milli-units), summed over clusters.
#[derive(Debug, Clone, Copy, Default)]
struct Amounts {
    capacity: i64,
    allocated: i64,
    free: i64,
}

/// Normalised CPU (milli-cores × performance factor).
#[derive(Debug, Clone, Copy, Default)]
struct Normalised {
    capacity: f64,
    allocated: f64,
    free: f64,
}

/// A member's amounts. One that is NotReady or Unreachable has nothing free (no new replica
/// goes there: the scheduler's `cluster-health` filter), whatever its summary says.
fn cluster_amounts(c: &ClusterSnapshot, dims: &[String]) -> BTreeMap<String, Amounts> {
    let mut out = BTreeMap::new();
    let Some(s) = c.summary.as_ref() else { return out };
    let ready = c.health.is_ready();
    for d in dims {
        let capacity = s.allocatable.get(d);
        let allocated = s.allocated.get(d).saturating_add(s.allocating.get(d));
        let free = if ready { capacity.saturating_sub(allocated).max(0) } else { 0 };
        out.insert(d.clone(), Amounts { capacity, allocated, free });
    }
    out
}

fn cluster_cpu(c: &ClusterSnapshot, settings: &ModelSettings) -> Normalised {
    let Some(s) = c.summary.as_ref() else { return Normalised::default() };
    let (capacity, allocated) = if c.nodes.is_empty() {
        let f = settings.cpu_factor(&c.labels);
        (s.allocatable.get("cpu") as f64 * f, (s.allocated.get("cpu") + s.allocating.get("cpu")) as f64 * f)
    } else {
        let fig = cpu_figures(&c.nodes, settings);
        (
            fig.allocatable_normalised,
            fig.requested_normalised
                + (s.allocated.get("cpu") - fig.requested_raw + s.allocating.get("cpu")) as f64 * fig.mean_factor(),
        )
    };
    let free = if c.health.is_ready() { (capacity - allocated).max(0.0) } else { 0.0 };
    Normalised { capacity, allocated, free }
}

/// A member's health as the document shows it: `Ready`, `NotReady` or `Unreachable`, and the
/// reason of the last two.
fn health_of(c: &ClusterSnapshot) -> (&'static str, Option<&str>) {
    match &c.health {
        crate::model::Health::Ready => ("Ready", None),
        crate::model::Health::NotReady { reason } => ("NotReady", Some(reason)),
        crate::model::Health::Unreachable { reason } => ("Unreachable", Some(reason)),
    }
}

/// A row of amounts (capacity, allocated, free) for people, in one unit: CPU in cores with
/// decimals (`59.6`), bytes with the largest binary suffix of which the largest amount holds at
/// least ten (`1024Gi … 233.5Gi`),
/// anything else as a count. The amounts are the document's Kubernetes quantities; one that does
/// not parse is shown as it is.
fn human_row(resource: &str, quantities: [&Value; 3]) -> [String; 3] {
    let units = quantities.map(|q| q.as_str().and_then(|q| crate::model::quantity::parse_milli(q).ok()));
    let bytes = resource == "memory" || resource.contains("storage") || resource.starts_with("hugepages-");
    let largest = units.iter().flatten().map(|m| (*m as f64 / 1000.0).abs()).fold(0.0, f64::max);
    let (suffix, scale) = match bytes {
        true => [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)]
            .into_iter()
            .find(|(_, shift)| largest >= 10.0 * (1u64 << shift) as f64)
            .map_or(("", 1.0), |(s, shift)| (s, (1u64 << shift) as f64)),
        false => ("", 1.0),
    };
    let decimals = if bytes { 1 } else { 2 };
    let mut out = [String::new(), String::new(), String::new()];
    for (i, (milli, q)) in units.iter().zip(quantities).enumerate() {
        out[i] = match milli {
            Some(m) => {
                let t = format!("{:.decimals$}", *m as f64 / 1000.0 / scale);
                let t = if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').to_string() } else { t };
                format!("{t}{suffix}")
            }
            None => match q {
                Value::String(q) => q.clone(),
                _ => "-".into(),
            },
        };
    }
    out
}

/// A member's GPUs by model ([`GPU_PRODUCT_LABEL`]), per GPU resource: from its nodes when
/// it has node-level data (a node's free GPUs count only when it is Ready and schedulable),
/// else from the Cluster's own `nvidia.com/gpu.product` label and its summary; `(no model
/// label)` for GPUs of nodes without the label. Nothing is free on a member that is not Ready.
fn gpu_models(c: &ClusterSnapshot) -> Vec<Value> {
    let ready = c.health.is_ready();
    let mut by: BTreeMap<(String, &'static str), Amounts> = BTreeMap::new();
    if c.nodes.is_empty() {
        let (Some(model), Some(s)) = (c.labels.get(GPU_PRODUCT_LABEL), c.summary.as_ref()) else { return Vec::new() };
        for r in GPU_RESOURCES {
            let capacity = s.allocatable.get(r);
            if capacity > 0 {
                let allocated = s.allocated.get(r).saturating_add(s.allocating.get(r));
                let free = if ready { capacity.saturating_sub(allocated).max(0) } else { 0 };
                by.insert((model.clone(), r), Amounts { capacity, allocated, free });
            }
        }
    }
    for n in c.nodes.iter() {
        for r in GPU_RESOURCES {
            let capacity = n.allocatable.get(r);
            if capacity <= 0 {
                continue;
            }
            let model = n.labels.get(GPU_PRODUCT_LABEL).cloned().unwrap_or_else(|| "(no model label)".into());
            let used = n.requested.get(r);
            let free = if ready && n.ready && !n.unschedulable { capacity.saturating_sub(used).max(0) } else { 0 };
            let a = by.entry((model, r)).or_default();
            a.capacity = a.capacity.saturating_add(capacity);
            a.allocated = a.allocated.saturating_add(used);
            a.free = a.free.saturating_add(free);
        }
    }
    by.into_iter()
        .map(|((model, r), a)| {
            let mut v = amounts_json(r, &a, None);
            v["model"] = json!(model);
            v["resource"] = json!(r);
            v
        })
        .collect()
}

fn cores(milli: f64) -> f64 {
    (milli / 10.0).round() / 100.0
}

fn amounts_json(name: &str, a: &Amounts, n: Option<&Normalised>) -> Value {
    let mut v = json!({
        "capacity": format_milli(name, a.capacity),
        "allocated": format_milli(name, a.allocated),
        "free": format_milli(name, a.free),
    });
    if let (Some(n), Some(o)) = (n, v.as_object_mut()) {
        o.insert(
            "normalised".into(),
            json!({"capacity": cores(n.capacity), "allocated": cores(n.allocated), "free": cores(n.free)}),
        );
    }
    v
}

/// What the document takes from the members' snapshots alone, not from the time: the
/// dimensions it shows and, per member, its amounts, normalised CPU (from its nodes) and GPUs
/// by model. The web view makes it once per pass ([`crate::views::placed::Placed::figures`]),
/// from the last pass's ([`Figures::since`]: only the members whose data changed are figured
/// again); [`document`] makes it for its call.
#[derive(Debug, Default)]
pub struct Figures {
    dims: Vec<String>,
    settings: Option<ModelSettings>,
    by_cluster: std::collections::HashMap<String, std::sync::Arc<ClusterFigures>>,
    figured: usize,
}

#[derive(Debug)]
struct ClusterFigures {
    amounts: BTreeMap<String, Amounts>,
    cpu: Normalised,
    gpus: Vec<Value>,
    /// What they were made from: the member's summary and nodes (by identity: a pass shares
    /// an unchanged member's with the last one; weak, so they are neither kept nor their
    /// addresses reused), its health and labels (the CPU factor and GPU model of a member
    /// without nodes).
    from: Source,
}

#[derive(Debug)]
struct Source {
    summary: Option<std::sync::Weak<crate::model::snapshot::ResourceSummary>>,
    nodes: std::sync::Weak<Vec<crate::model::NodeView>>,
    no_nodes: bool,
    health: crate::model::Health,
    labels: BTreeMap<String, String>,
}

impl Source {
    fn of(c: &ClusterSnapshot) -> Source {
        Source {
            summary: c.summary.as_ref().map(std::sync::Arc::downgrade),
            nodes: std::sync::Arc::downgrade(&c.nodes),
            no_nodes: c.nodes.is_empty(),
            health: c.health.clone(),
            labels: c.labels.clone(),
        }
    }

    /// Whether `c` has the same data (the same shared summary and nodes, or no nodes either).
    fn same(&self, c: &ClusterSnapshot) -> bool {
        let summary = match (&self.summary, &c.summary) {
            (Some(a), Some(b)) => std::ptr::eq(a.as_ptr(), std::sync::Arc::as_ptr(b)),
            (None, None) => true,
            _ => false,
        };
        let nodes = (self.no_nodes && c.nodes.is_empty())
            || std::ptr::eq(self.nodes.as_ptr(), std::sync::Arc::as_ptr(&c.nodes));
        summary && nodes && self.health == c.health && self.labels == c.labels
    }
}

impl Figures {
    /// The figures of `snapshots` (each cluster once: the first of a name).
    pub fn of<'a>(snapshots: impl Iterator<Item = &'a ClusterSnapshot> + Clone, settings: &ModelSettings) -> Figures {
        Figures::since(snapshots, settings, None)
    }

    /// [`Figures::of`], taking from `last` (the figures of an earlier pass) those of every
    /// member whose summary and nodes are the ones they were made from (shared, not equal:
    /// nothing is compared node by node), with the same health and labels, when the settings
    /// and dimensions are the same too.
    pub fn since<'a>(
        snapshots: impl Iterator<Item = &'a ClusterSnapshot> + Clone,
        settings: &ModelSettings,
        last: Option<&Figures>,
    ) -> Figures {
        let registered = Dimensions::new(settings);
        let mut dims: Vec<String> = registered
            .iter()
            .filter(|d| d.summary_free(&Default::default()).is_some())
            .map(|d| d.name().to_string())
            .filter(|d| snapshots.clone().any(|c| c.summary.as_ref().is_some_and(|s| s.allocatable.get(d) > 0)))
            .collect();
        if dims.is_empty() {
            dims = vec!["cpu".into(), "memory".into(), "pods".into()];
        }
        let last = last.filter(|l| l.dims == dims && l.settings.as_ref() == Some(settings));
        let mut by_cluster = std::collections::HashMap::new();
        let mut figured = 0;
        for c in snapshots {
            if by_cluster.contains_key(&c.name) {
                continue;
            }
            // Kept: made from this very summary and these very nodes (what `from` names).
            let kept = last.and_then(|l| l.by_cluster.get(&c.name)).filter(|f| f.from.same(c));
            let f = match kept {
                Some(k) => std::sync::Arc::clone(k),
                None => {
                    figured += 1;
                    std::sync::Arc::new(ClusterFigures::of(c, &dims, settings))
                }
            };
            by_cluster.insert(c.name.clone(), f);
        }
        Figures { dims, settings: Some(settings.clone()), by_cluster, figured }
    }

    /// How many members' figures were made here (the others were taken from the last ones).
    pub fn figured(&self) -> usize {
        self.figured
    }
}

impl ClusterFigures {
    fn of(c: &ClusterSnapshot, dims: &[String], settings: &ModelSettings) -> ClusterFigures {
        ClusterFigures {
            amounts: cluster_amounts(c, dims),
            cpu: cluster_cpu(c, settings),
            gpus: gpu_models(c),
            from: Source::of(c),
        }
    }
}

/// The document: groups in name order, each with its clusters, totals per dimension and
/// confidence (lowest and mean).
pub fn document(views: &[ClusterView], by: &GroupBy, settings: &ModelSettings) -> Value {
    document_with(views, by, &Figures::of(views.iter().map(|v| &v.snapshot), settings), settings)
}

/// [`document`] with the figures of the views' snapshots made already (a member `figures`
/// does not have is figured here).
pub fn document_with(views: &[ClusterView], by: &GroupBy, figures: &Figures, settings: &ModelSettings) -> Value {
    let dims = figures.dims.clone();
    let mut groups: BTreeMap<String, Vec<&ClusterView>> = BTreeMap::new();
    for v in views {
        groups.entry(by.key(&v.snapshot)).or_default().push(v);
    }
    let mut out = Vec::new();
    for (key, members) in groups {
        let mut totals: BTreeMap<String, Amounts> = BTreeMap::new();
        let mut cpu_total = Normalised::default();
        let mut clusters = Vec::new();
        for v in &members {
            let made;
            let f = match figures.by_cluster.get(&v.snapshot.name) {
                Some(f) => &**f,
                None => {
                    made = ClusterFigures::of(&v.snapshot, &dims, settings);
                    &made
                }
            };
            let (amounts, cpu) = (&f.amounts, f.cpu);
            for (d, a) in amounts {
                let t = totals.entry(d.clone()).or_default();
                t.capacity = t.capacity.saturating_add(a.capacity);
                t.allocated = t.allocated.saturating_add(a.allocated);
                t.free = t.free.saturating_add(a.free);
            }
            cpu_total.capacity += cpu.capacity;
            cpu_total.allocated += cpu.allocated;
            cpu_total.free += cpu.free;
            let resources: serde_json::Map<String, Value> =
                amounts.iter().map(|(d, a)| (d.clone(), amounts_json(d, a, (d == "cpu").then_some(&cpu)))).collect();
            let mut cluster = json!({
                "name": v.snapshot.name,
                "source": if v.snapshot.is_live() { "live" } else { "offline" },
                "health": health_of(&v.snapshot).0,
                "reason": health_of(&v.snapshot).1,
                "confidence": (v.confidence * 1000.0).round() / 1000.0,
                "ageSeconds": v.age_ms.map(|a| a / 1000),
                "resources": resources,
            });
            if !f.gpus.is_empty() {
                cluster["gpuModels"] = json!(f.gpus);
            }
            clusters.push(cluster);
        }
        let confidences: Vec<f64> = members.iter().map(|v| v.confidence).collect();
        let min = confidences.iter().copied().fold(1.0f64, f64::min);
        let mean = confidences.iter().sum::<f64>() / confidences.len().max(1) as f64;
        let resources: serde_json::Map<String, Value> =
            totals.iter().map(|(d, a)| (d.clone(), amounts_json(d, a, (d == "cpu").then_some(&cpu_total)))).collect();
        out.push(json!({
            "group": key,
            "clusters": clusters,
            "resources": resources,
            "confidence": {"min": (min * 1000.0).round() / 1000.0, "mean": (mean * 1000.0).round() / 1000.0},
        }));
    }
    json!({ "by": by.as_query(), "dimensions": dims, "groups": out })
}

/// The document for people.
pub fn to_text(doc: &Value) -> String {
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let by = s(&doc["by"]);
    let mut out = String::new();
    for g in doc["groups"].as_array().into_iter().flatten() {
        let names: Vec<String> = g["clusters"].as_array().into_iter().flatten().map(|c| s(&c["name"])).collect();
        out.push_str(&format!(
            "{by} {}: {} cluster(s) ({}), confidence min {:.2} mean {:.2}\n",
            s(&g["group"]),
            names.len(),
            names.join(", "),
            g["confidence"]["min"].as_f64().unwrap_or(1.0),
            g["confidence"]["mean"].as_f64().unwrap_or(1.0),
        ));
        for (d, a) in g["resources"].as_object().into_iter().flatten() {
            let n = &a["normalised"];
            let norm = |k: &str| if n.is_object() { format!(" ({} normalised)", s(&n[k])) } else { String::new() };
            let [capacity, allocated, free] = human_row(d, [&a["capacity"], &a["allocated"], &a["free"]]);
            out.push_str(&format!(
                "  {d:<20} capacity {capacity}{}  allocated {allocated}{}  free {free}{}\n",
                norm("capacity"),
                norm("allocated"),
                norm("free"),
            ));
        }
        // Every member with its health; one that is not Ready counts nothing as free.
        for c in g["clusters"].as_array().into_iter().flatten() {
            let source = match c["source"].as_str() {
                Some("live") => format!(
                    "live, data {}s old, confidence {:.2}",
                    s(&c["ageSeconds"]),
                    c["confidence"].as_f64().unwrap_or(1.0)
                ),
                _ => "offline".to_string(),
            };
            let health = match c["reason"].as_str() {
                Some(r) => format!("{} ({r}): nothing counted as free", s(&c["health"])),
                None => s(&c["health"]),
            };
            out.push_str(&format!("  {}: {source}, {health}\n", s(&c["name"])));
        }
    }
    if out.is_empty() {
        out.push_str("no member clusters\n");
    }
    out
}

/// The views of a pass's snapshots: live ones get their age and confidence at `now_ms`
/// ([`crate::reconcile::set_confidence`]), offline ones confidence 1.
pub fn views(snapshots: &[ClusterSnapshot], settings: &ModelSettings, now_ms: u64) -> Vec<ClusterView> {
    snapshots
        .iter()
        .map(|s| {
            let mut snapshot = s.clone();
            crate::reconcile::set_confidence(&mut snapshot, now_ms, settings);
            ClusterView { confidence: snapshot.confidence(), age_ms: snapshot.freshness.map(|f| f.age_ms), snapshot }
        })
        .collect()
}

/// Replaces the offline snapshots of live clusters (`live`: the names with access in the
/// config) by their latest live snapshot in the store, last seen at the head's
/// `last_seen_ms` (the last successful poll).
pub fn with_stored_live(
    snapshots: &mut [ClusterSnapshot],
    live: &std::collections::BTreeSet<String>,
    store: &crate::store::Store,
) -> Result<(), crate::store::StoreError> {
    for snap in snapshots.iter_mut().filter(|s| live.contains(&s.name)) {
        let Some((meta, stored)) = store.latest_snapshot(&snap.name)? else { continue };
        if !stored.is_live() {
            continue;
        }
        let failures = stored.freshness.map_or(0, |f| f.consecutive_failures);
        let offline = std::mem::replace(snap, stored);
        // The repository still owns identity and constraints.
        snap.labels = offline.labels;
        snap.constraints = offline.constraints;
        snap.freshness = Some(crate::model::Freshness {
            polled_at_ms: meta.last_seen_ms,
            consecutive_failures: failures,
            age_ms: 0,
            confidence_ppm: 1_000_000,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::snapshot::ResourceSummary;
    use crate::model::{NodeView, ResourceList};

    /// A pass's figures made from the last pass's: a member whose summary and nodes are the
    /// last pass's (shared, as a pass shares an unchanged member's) with the same health and
    /// labels is taken as it was; one with new data, another health or other labels is
    /// figured again, and every member is under other settings. The document is the one made
    /// from nothing.
    #[test]
    fn figures_since_the_last_pass_figure_again_only_the_members_that_changed() {
        let settings = ModelSettings::default();
        let member = |name: &str, cpu: i64| {
            ClusterSnapshot::live(name, "https://m")
                .with_region("eu")
                .with_summary(ResourceSummary { allocatable: ResourceList::of(&[("cpu", cpu)]), ..Default::default() })
                .with_nodes(vec![
                    NodeView::ready("n1", ResourceList::of(&[("cpu", cpu)]))
                        .with_labels([("node.kubernetes.io/instance-type", "fast")])
                        .with_requested(ResourceList::of(&[("cpu", 1000)]), 1),
                ])
        };
        let offline = ClusterSnapshot::offline("o", "clusters/o.yaml")
            .with_region("us")
            .with_summary(ResourceSummary { allocatable: ResourceList::of(&[("cpu", 4000)]), ..Default::default() });
        let first = vec![member("a", 8000), member("b", 8000), member("c", 8000), member("d", 8000), offline];
        let last = Figures::of(first.iter(), &settings);
        assert_eq!(last.figured(), 5);
        // The next pass: its snapshots share the last ones' data (a copy shares it), but for b
        // (polled again: new nodes and summary), c (now NotReady) and d (relabelled).
        let mut next = first.clone();
        next[1] = member("b", 16_000);
        next[2].health = crate::model::Health::NotReady { reason: "down".into() };
        next[3].labels.insert("tier".into(), "gpu".into());
        let views = |s: &[ClusterSnapshot]| -> Vec<ClusterView> {
            s.iter().map(|s| ClusterView { snapshot: s.clone(), confidence: 1.0, age_ms: Some(0) }).collect()
        };
        let since = Figures::since(next.iter(), &settings, Some(&last));
        assert_eq!(since.figured(), 3, "b, c and d");
        let fresh = document(&views(&next), &GroupBy::Region, &settings);
        assert_eq!(document_with(&views(&next), &GroupBy::Region, &since, &settings), fresh);
        assert_ne!(
            document_with(&views(&next), &GroupBy::Region, &last, &settings),
            fresh,
            "the last pass's figures are not this pass's"
        );
        let mut faster = settings.clone();
        faster.cpu_performance.insert("fast".into(), 2.0);
        let other = Figures::since(next.iter(), &faster, Some(&last));
        assert_eq!(other.figured(), 5, "other settings: every member figured again");
        assert_eq!(
            document_with(&views(&next), &GroupBy::Region, &other, &faster),
            document(&views(&next), &GroupBy::Region, &faster)
        );
    }

    /// GPUs by model: from the nodes' `nvidia.com/gpu.product` label (a node's free GPUs only
    /// when it is Ready and schedulable), or from an offline Cluster's own label and summary.
    #[test]
    fn gpus_are_counted_by_model() {
        let gpu = |n: i64| ResourceList::of(&[("cpu", 8000), ("nvidia.com/gpu", n * 1000)]);
        let a100 = [(GPU_PRODUCT_LABEL, "A100")];
        let mut cordoned = NodeView::ready("n3", gpu(4)).with_labels(a100);
        cordoned.unschedulable = true;
        let live = ClusterSnapshot::live("m", "https://m").with_nodes(vec![
            NodeView::ready("n1", gpu(4))
                .with_labels(a100)
                .with_requested(ResourceList::of(&[("nvidia.com/gpu", 1000)]), 1),
            NodeView::ready("n2", gpu(8)).with_labels([(GPU_PRODUCT_LABEL, "H100")]),
            cordoned,
            NodeView::ready("n4", gpu(2)),
            NodeView::ready("n5", ResourceList::of(&[("cpu", 8000)])),
        ]);
        let models = gpu_models(&live);
        let row = |m: &str| models.iter().find(|v| v["model"] == m).cloned().unwrap_or_default();
        assert_eq!(models.len(), 3, "{models:#?}");
        assert_eq!(
            row("A100"),
            json!({"model": "A100", "resource": "nvidia.com/gpu", "capacity": "8", "allocated": "1", "free": "3"})
        );
        assert_eq!(row("H100")["free"], "8");
        assert_eq!(row("(no model label)")["capacity"], "2");
        let offline =
            ClusterSnapshot::offline("o", "clusters/o.yaml").with_labels(a100).with_summary(ResourceSummary {
                allocatable: gpu(16),
                allocated: ResourceList::of(&[("nvidia.com/gpu", 10_000)]),
                ..Default::default()
            });
        assert_eq!(
            gpu_models(&offline),
            vec![
                json!({"model": "A100", "resource": "nvidia.com/gpu", "capacity": "16", "allocated": "10", "free": "6"})
            ]
        );
        let down = offline.clone().with_health(crate::model::Health::Unreachable { reason: "x".into() });
        assert_eq!(gpu_models(&down)[0]["free"], "0", "nothing free on a member that is not Ready");
        assert!(gpu_models(&ClusterSnapshot::offline("p", "f")).is_empty());
    }
}
