//! Offline members: a Cluster object without live access is described by its own `.status`
//! (what the operator asserts), with confidence 1.

use std::collections::BTreeSet;

use crate::model::snapshot::{ModelGrade, ResourceSummary};
use crate::model::{ClusterConstraints, ClusterSnapshot, ClusterTaint, Health, Reserve, ResourceList, SnapshotSource};
use crate::policy::types::{QuantityValue, TaintEffect};
use crate::policy::{ClusterObject, LoadError};

/// Builds the snapshot of an offline cluster from its Cluster object.
pub fn offline_snapshot(c: &ClusterObject) -> Result<ClusterSnapshot, LoadError> {
    let err = |field: String, message: String| LoadError {
        file: c.source.file.clone(),
        document: Some(c.source.document),
        field,
        message,
        io: false,
    };
    let status = c.status.clone().unwrap_or_default();
    let health = match status.conditions.iter().find(|cond| cond.type_ == "Ready") {
        None => Health::Ready,
        Some(cond) if cond.status == "True" => Health::Ready,
        Some(cond) => {
            let reason = cond.reason.clone().or_else(|| cond.message.clone()).unwrap_or_else(|| cond.status.clone());
            if cond.status == "Unknown" { Health::Unreachable { reason } } else { Health::NotReady { reason } }
        }
    };
    let mut taints: Vec<ClusterTaint> = c
        .spec
        .taints
        .iter()
        .map(|t| ClusterTaint { key: t.key.clone(), value: t.value.clone(), effect: t.effect })
        .collect();
    if let Some(key) = super::health_taint(&health)
        && !taints.iter().any(|t| t.key == key)
    {
        taints.push(ClusterTaint { key: key.to_string(), value: None, effect: TaintEffect::NoSchedule });
    }
    let summary = match &status.resource_summary {
        None => None,
        Some(s) => {
            let read = |field: &str, m: &std::collections::BTreeMap<String, QuantityValue>| {
                let list = ResourceList::from_quantities(m)
                    .map_err(|(name, e)| err(format!("status.resourceSummary.{field}.{name}"), e.to_string()))?;
                match list.first_negative() {
                    // A negative capacity would make every estimate nonsense: refused.
                    Some((name, _)) => Err(err(
                        format!("status.resourceSummary.{field}.{name}"),
                        "must be greater than or equal to 0 (a negative quantity is refused)".to_string(),
                    )),
                    None => Ok(list),
                }
            };
            Some(ResourceSummary {
                allocatable: read("allocatable", &s.allocatable)?,
                allocated: read("allocated", &s.allocated)?,
                allocating: read("allocating", &s.allocating)?,
                allocatable_modelings: s.allocatable_modelings.iter().map(|m| (m.grade, m.count)).collect(),
                modelled_taken: Vec::new(),
            })
        }
    };
    let mut resource_models = Vec::new();
    for (gi, g) in c.spec.resource_models.iter().enumerate() {
        let mut ranges = Vec::new();
        for (ri, r) in g.ranges.iter().enumerate() {
            let q = |v: &QuantityValue, which: &str| -> Result<i64, LoadError> {
                let field = format!("spec.resourceModels[{gi}].ranges[{ri}].{which}");
                match v {
                    QuantityValue::Int(i) => Ok(i.saturating_mul(1000)),
                    QuantityValue::Text(t) => {
                        crate::model::quantity::parse_milli(t).map_err(|e| err(field, e.to_string()))
                    }
                }
            };
            ranges.push((r.name.clone(), q(&r.min, "min")?, q(&r.max, "max")?));
        }
        resource_models.push(ModelGrade { grade: g.grade, ranges });
    }
    let api_enablements: BTreeSet<String> = status
        .api_enablements
        .iter()
        .flat_map(|e| e.resources.iter().map(move |r| format!("{}/{}", e.group_version, r.kind)))
        .collect();
    Ok(ClusterSnapshot {
        name: c.meta.name.clone(),
        labels: c.meta.labels.clone(),
        provider: c.spec.provider.clone(),
        region: c.spec.region.clone(),
        zones: c.spec.zones.clone(),
        taints,
        health,
        source: SnapshotSource::Offline { file: c.source.file.display().to_string() },
        api_enablements: std::sync::Arc::new(api_enablements),
        summary: summary.map(std::sync::Arc::new),
        resource_models,
        nodes: Default::default(),
        pods: None,
        poll: None,
        constraints: constraints(c)?,
        freshness: None,
        index: Default::default(),
        summary_free: Default::default(),
        taken: Default::default(),
    })
}

/// Cluster annotation: headroom kept free, `resource=amount` pairs separated by commas; the
/// amount is a quantity or a percentage of allocatable (`cpu=10%,memory=4Gi,pods=5%`).
pub const RESERVE_ANNOTATION: &str = "fedsched.io/reserve";
/// Cluster annotation: most replicas of one workload the cluster may hold (`"50"`).
pub const MAX_REPLICAS_ANNOTATION: &str = "fedsched.io/max-replicas-per-workload";

/// Reads the constraint annotations of a Cluster object; errors name the annotation.
pub fn constraints(c: &ClusterObject) -> Result<ClusterConstraints, LoadError> {
    let err = |name: &str, message: String| LoadError {
        file: c.source.file.clone(),
        document: Some(c.source.document),
        field: format!("metadata.annotations.{name}"),
        message,
        io: false,
    };
    let mut out = ClusterConstraints::default();
    if let Some(text) = c.meta.annotations.get(RESERVE_ANNOTATION) {
        out.reserve = parse_reserve(text).map_err(|m| err(RESERVE_ANNOTATION, m))?;
    }
    if let Some(text) = c.meta.annotations.get(MAX_REPLICAS_ANNOTATION) {
        let n: i64 = text
            .trim()
            .parse()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| err(MAX_REPLICAS_ANNOTATION, format!("{text:?} is not a non-negative integer")))?;
        out.max_replicas_per_workload = Some(n);
    }
    Ok(out)
}

/// Parses a reserve: `cpu=10%,memory=4Gi`.
pub fn parse_reserve(text: &str) -> Result<Vec<(String, Reserve)>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) =
            part.split_once('=').ok_or_else(|| format!("{part:?} is not resource=amount (e.g. cpu=10%)"))?;
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return Err(format!("{part:?} has no resource name"));
        }
        let r = match value.strip_suffix('%') {
            Some(p) => {
                let pct: f64 = p.trim().parse().map_err(|_| format!("{value:?} is not a percentage"))?;
                if !(0.0..=100.0).contains(&pct) {
                    return Err(format!("{value:?} is not between 0% and 100%"));
                }
                Reserve::Basis((pct * 100.0).round() as u32)
            }
            None => {
                let milli = crate::model::quantity::parse_milli(value).map_err(|e| e.to_string())?;
                if milli < 0 {
                    return Err(format!("{value:?} is negative"));
                }
                Reserve::Amount(milli)
            }
        };
        out.push((name.to_string(), r));
    }
    Ok(out)
}
