//! Cluster selection among the feasible clusters: spread constraints.

use crate::model::ClusterSnapshot;
use crate::policy::types::{Placement, SpreadByField};

use super::{ClusterVerdict, Strategy};

/// Orders feasible clusters the way Karmada does (score desc, available desc, name asc) and
/// applies the `cluster` spread constraint (`maxGroups` / `minGroups`). Returns the selected
/// clusters or the reason none can be.
pub fn select_clusters<'a>(
    placement: &Placement,
    feasible: &[&'a ClusterVerdict],
    _clusters: &[ClusterSnapshot],
    strategy: Strategy,
) -> Result<Vec<&'a ClusterVerdict>, String> {
    let mut ordered: Vec<&ClusterVerdict> = feasible.to_vec();
    ordered.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then(b.available_replicas.unwrap_or(0).cmp(&a.available_replicas.unwrap_or(0)))
            .then(a.name.cmp(&b.name))
    });
    let by_cluster = placement.spread_constraints.iter().find(|s| s.spread_by_field == Some(SpreadByField::Cluster));
    // Karmada ignores spread constraints for static weights.
    let Some(sc) = by_cluster.filter(|_| strategy != Strategy::StaticWeight) else {
        return Ok(ordered);
    };
    let min = i64::from(sc.min_groups.max(1));
    if (ordered.len() as i64) < min {
        return Err(format!("spreadConstraints: {} feasible clusters, minGroups is {}", ordered.len(), sc.min_groups));
    }
    let max = if sc.max_groups > 0 { sc.max_groups as usize } else { ordered.len() };
    ordered.truncate(max.min(ordered.len()));
    Ok(ordered)
}
