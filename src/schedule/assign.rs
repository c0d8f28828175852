//! Replica assignment: Webster (Sainte-Laguë) apportionment and Karmada's strategies
//! (static weights, dynamic weights by available replicas in steady mode, aggregated).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

use crate::util::gosort;

/// Direction of the name tie-break, from the parity of FNV-32a of the template UID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TieBreak {
    Ascending,
    Descending,
}

impl TieBreak {
    /// Karmada's rule: ascending when the UID is empty or its FNV-32a hash is even.
    pub fn for_uid(uid: Option<&str>) -> Self {
        match uid {
            None | Some("") => TieBreak::Ascending,
            Some(u) if crate::util::hash::fnv1a32(u.as_bytes()).is_multiple_of(2) => TieBreak::Ascending,
            Some(_) => TieBreak::Descending,
        }
    }
}

/// Webster apportionment of `total` seats over `weights` (name → weight ≥ 0). Each step gives
/// one seat to the party with the highest `weight / (2·seats + 1)`; ties go to fewer seats, then
/// by name in `tie` order. Parties with zero weight receive nothing. Returns seats per party
/// (parties without seats are left out).
///
/// The result is that of giving the seats one by one, but the cost does not grow with `total`:
/// [`webster_base`] finds, in O(parties · log total), seats every party certainly gets, and
/// only the last seats (at most one per party) go through the heap: O(parties · log total).
/// Up to two seats per party, every seat goes through the heap (cheaper than the search),
/// among the `total` heaviest parties when there are more.
pub fn webster(total: i64, weights: &BTreeMap<String, i64>, tie: TieBreak) -> BTreeMap<String, i64> {
    webster_of(total, weights.iter().map(|(n, w)| (n.as_str(), *w)), tie)
}

/// [`webster`] with upper bounds: a party whose seats would exceed its cap in `caps` gets its
/// cap, and the other seats are divided again among the others by their weights (until no
/// party exceeds its cap). `None` when the capped parties and those without weight cannot seat
/// `total`. Without caps (or none reached) it is [`webster`].
pub fn webster_capped(
    total: i64,
    weights: &BTreeMap<String, i64>,
    caps: &BTreeMap<String, i64>,
    tie: TieBreak,
) -> Option<BTreeMap<String, i64>> {
    let mut fixed: BTreeMap<String, i64> = BTreeMap::new();
    loop {
        let left = total - fixed.values().sum::<i64>();
        let free = weights.iter().filter(|(n, _)| !fixed.contains_key(*n)).map(|(n, w)| (n.as_str(), *w));
        let mut seats = webster_of(left, free, tie);
        if left > 0 && seats.is_empty() {
            return None;
        }
        let over: Vec<(String, i64)> =
            seats.iter().filter_map(|(n, s)| caps.get(n).filter(|c| s > *c).map(|c| (n.clone(), *c))).collect();
        if over.is_empty() {
            seats.extend(fixed.into_iter().filter(|(_, s)| *s > 0));
            return Some(seats);
        }
        fixed.extend(over);
    }
}

/// [`webster`] over parties in any order (each name once): the divisions that weigh the
/// selected clusters in their selection order need no map by name of all of them.
pub fn webster_of<'a>(
    total: i64,
    weights: impl IntoIterator<Item = (&'a str, i64)>,
    tie: TieBreak,
) -> BTreeMap<String, i64> {
    let mut parties: Vec<(&str, i64)> = weights.into_iter().filter(|(_, w)| *w > 0).collect();
    if parties.is_empty() || total <= 0 {
        return BTreeMap::new();
    }
    // A few seats per party: one by one from the heap costs less than the base's search.
    let base = match usize::try_from(total) {
        Ok(t) if t <= 2 * parties.len() => {
            if t < parties.len() {
                // Every party starts with no seat: one ranked below `t` others (by weight,
                // then the name tie-break) gets none, their first seats all coming first.
                parties.select_nth_unstable_by(t, |a, b| {
                    b.1.cmp(&a.1).then_with(|| match tie {
                        TieBreak::Ascending => a.0.cmp(b.0),
                        TieBreak::Descending => b.0.cmp(a.0),
                    })
                });
                parties.truncate(t);
            }
            vec![0; parties.len()]
        }
        _ => webster_base(total, &parties),
    };
    let given: i64 = base.iter().sum();
    let mut heap: BinaryHeap<Party<'_>> =
        parties.iter().zip(&base).map(|((n, w), s)| Party { name: n, weight: *w, seats: *s, tie }).collect();
    for _ in 0..(total - given).max(0) {
        if let Some(mut best) = heap.pop() {
            best.seats += 1;
            heap.push(best);
        }
    }
    heap.into_iter().filter(|p| p.seats > 0).map(|p| (p.name.to_owned(), p.seats)).collect()
}

/// Seats each party is certain to receive in [`webster`], summing to at most `total` and short
/// of it by at most about one per party.
///
/// The one-by-one procedure hands out the seats in a fixed order of "items" (party `i`'s
/// `j`-th seat has priority `w_i / (2j + 1)`), so its result is the first `total` items. For
/// a threshold `λ`, the items of priority strictly above `λ` are all among the first `total`
/// whenever there are at most `total` of them (an item outside would have `total` items
/// before it, all above `λ`). With `λ = W / d` (`W` the sum of weights) party `i` has
/// `#{odd k : k·W < w_i·d}` such items; a binary search finds the largest `d` whose count is
/// at most `total`. Integer arithmetic only (i128, saturating), so the result is exact.
fn webster_base(total: i64, parties: &[(&str, i64)]) -> Vec<i64> {
    let w_sum: i128 = parties.iter().map(|(_, w)| i128::from(*w)).sum();
    // In 64 bits while the products fit (a division of 128 bits costs several of 64).
    let narrow = i64::try_from(w_sum).ok();
    let above = |d: i128, w: i64| -> i128 {
        if let (Some(w_sum), Ok(d)) = (narrow, i64::try_from(d))
            && let Some(q) = w.checked_mul(d)
        {
            return i128::from(if q < 1 { 0 } else { ((q - 1) / w_sum + 1) / 2 });
        }
        let q = i128::from(w).saturating_mul(d);
        if q < 1 { 0 } else { ((q - 1) / w_sum + 1) / 2 }
    };
    let count = |d: i128| -> i128 { parties.iter().map(|(_, w)| above(d, *w)).fold(0i128, i128::saturating_add) };
    let total = i128::from(total);
    // count(0) = 0 ≤ total; find hi with count(hi) > total (about 2·total + parties suffices).
    let (mut lo, mut hi) = (0i128, 2 * total + 2 * parties.len() as i128 + 2);
    while count(hi) <= total {
        lo = hi;
        hi = hi.saturating_mul(2);
        if hi == i128::MAX {
            break;
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if count(mid) <= total { lo = mid } else { hi = mid }
    }
    parties.iter().map(|(_, w)| i64::try_from(above(lo, *w)).unwrap_or(i64::MAX)).collect()
}

/// A party in the Webster heap; the greatest is the next to receive a seat.
struct Party<'a> {
    name: &'a str,
    weight: i64,
    seats: i64,
    tie: TieBreak,
}

impl Ord for Party<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        // self.w/(2·self.s+1) vs other.w/(2·other.s+1), without division.
        let lhs = i128::from(self.weight) * i128::from(2 * other.seats + 1);
        let rhs = i128::from(other.weight) * i128::from(2 * self.seats + 1);
        lhs.cmp(&rhs).then(other.seats.cmp(&self.seats)).then_with(|| match self.tie {
            TieBreak::Ascending => other.name.cmp(self.name),
            TieBreak::Descending => self.name.cmp(other.name),
        })
    }
}

impl PartialOrd for Party<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Party<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Party<'_> {}

/// Why replicas could not be assigned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignError {
    #[error("clusters available replicas {available} are not enough to schedule {wanted}")]
    NotEnough { available: i64, wanted: i64 },
}

/// Dynamic weight (steady mode): keep what is placed, scale up by free capacity, scale down
/// proportionally. `available` = free replicas per candidate; `previous` = last assignment.
///
/// `weights`, when given (one per candidate, in its order): the new replicas go by these
/// weights instead of the free replicas, each candidate taking at most its free replicas (the
/// normalised CPU division).
pub fn dynamic_steady(
    replicas: i64,
    available: &[(&str, i64)],
    weights: Option<&[i64]>,
    previous: &BTreeMap<String, i64>,
    tie: TieBreak,
) -> Result<BTreeMap<String, i64>, AssignError> {
    let names: std::collections::HashSet<&str> =
        if previous.is_empty() { Default::default() } else { available.iter().map(|(n, _)| *n).collect() };
    let (prev, assigned) = still_placed(previous, |n| names.contains(n));
    match assigned.cmp(&replicas) {
        Ordering::Equal => Ok(prev),
        Ordering::Greater => Ok(webster(replicas, &prev, tie)),
        Ordering::Less => {
            let delta = replicas - assigned;
            let total_free: i64 = available.iter().map(|(_, a)| a).sum();
            if total_free < delta {
                return Err(AssignError::NotEnough { available: total_free + assigned, wanted: replicas });
            }
            match weights {
                None => Ok(add(prev, webster_of(delta, available.iter().copied(), tie))),
                Some(w) => {
                    let chosen: BTreeMap<String, i64> = available.iter().map(|(n, a)| (n.to_string(), *a)).collect();
                    Ok(add(prev, weighted_within(delta, &chosen, available, w, tie)))
                }
            }
        }
    }
}

/// Aggregated: like dynamic, but on as few clusters as possible. `candidates` = free replicas
/// per selected cluster, **in the selection order** (Karmada's candidate list: score desc,
/// available desc, name asc, or the spread constraints' order — for regions, the best cluster
/// of each chosen region first); `previous` = last assignment (by name).
///
/// Ties between clusters of equal capacity go exactly as in Karmada
/// (`pkg/scheduler/core/division_algorithm.go`), which orders the clusters with Go's
/// `sort.Sort` by replicas alone (not stable beyond 12 clusters: [`gosort`]):
/// - scale up (a first schedule included): the candidates, in their order, sorted by free
///   replicas descending with Go's `sort.Sort`, then the previously used ones moved to the
///   front (order kept); the shortest prefix whose free replicas cover the new ones takes them
///   (Webster over their free replicas);
/// - scale down: the previous clusters, by name (the order of Karmada's own results, which
///   Webster lists by name), sorted by previous replicas descending with Go's `sort.Sort`; the
///   shortest prefix covering the target keeps it (Webster over the previous replicas).
///
/// `weights`, when given (one per candidate, in its order): a scale-up orders the candidates
/// by these instead of their free replicas and divides by them, each taking at most its free
/// replicas (the normalised CPU division).
pub fn aggregated(
    replicas: i64,
    candidates: &[(&str, i64)],
    weights: Option<&[i64]>,
    previous: &BTreeMap<String, i64>,
    tie: TieBreak,
) -> Result<BTreeMap<String, i64>, AssignError> {
    let names: std::collections::BTreeSet<&str> = candidates.iter().map(|(n, _)| *n).collect();
    let (prev, assigned) = still_placed(previous, |n| names.contains(n));
    match assigned.cmp(&replicas) {
        Ordering::Equal => Ok(prev),
        Ordering::Greater => {
            let mut order: Vec<(&String, i64)> = prev.iter().map(|(n, r)| (n, *r)).collect();
            gosort::sort_by(&mut order, |a, b| a.1 > b.1);
            let mut kept = BTreeMap::new();
            let mut sum = 0;
            for (n, r) in order {
                if sum >= replicas {
                    break;
                }
                kept.insert(n.clone(), r);
                sum += r;
            }
            Ok(webster(replicas, &kept, tie))
        }
        Ordering::Less => {
            let delta = replicas - assigned;
            let mut order: Vec<(&str, i64)> = candidates.to_vec();
            match weights {
                None => gosort::sort_by(&mut order, |a, b| a.1 > b.1),
                Some(w) => {
                    let weight_of = |n: &str| candidates.iter().position(|(c, _)| *c == n).and_then(|k| w.get(k));
                    order.sort_by(|a, b| weight_of(b.0).cmp(&weight_of(a.0)));
                }
            }
            // The clusters already used first, each part in its order (Karmada's
            // resortAvailableClusters).
            let (mut order, rest): (Vec<_>, Vec<_>) = order.into_iter().partition(|(n, _)| prev.contains_key(*n));
            order.extend(rest);
            let mut chosen = BTreeMap::new();
            let mut cap = 0;
            for (n, a) in order {
                if cap >= delta {
                    break;
                }
                if a > 0 {
                    chosen.insert(n.to_owned(), a);
                    cap += a;
                }
            }
            if cap < delta {
                return Err(AssignError::NotEnough { available: cap + assigned, wanted: replicas });
            }
            match weights {
                None => Ok(add(prev, webster(delta, &chosen, tie))),
                Some(w) => Ok(add(prev, weighted_within(delta, &chosen, candidates, w, tie))),
            }
        }
    }
}

/// `delta` new replicas over the `chosen` clusters (name → free replicas) by the `weights`
/// of `candidates` (in their order), each within its free replicas: Webster with caps. The
/// caller checked the free replicas cover `delta`.
fn weighted_within(
    delta: i64,
    chosen: &BTreeMap<String, i64>,
    candidates: &[(&str, i64)],
    weights: &[i64],
    tie: TieBreak,
) -> BTreeMap<String, i64> {
    let by: BTreeMap<String, i64> = candidates
        .iter()
        .zip(weights)
        .filter(|((n, _), _)| chosen.contains_key(*n))
        .map(|((n, _), w)| (n.to_string(), *w))
        .collect();
    webster_capped(delta, &by, chosen, tie).unwrap_or_else(|| webster(delta, chosen, tie))
}

/// Whether [`dynamic_steady`] and [`aggregated`] read the free replicas for this target and
/// previous placement: only when the previous replicas on candidate clusters fall short of it
/// (a scale-up, or a first schedule); keeping or shrinking the previous placement does not.
pub fn reads_free(replicas: i64, previous: &BTreeMap<String, i64>, is_candidate: impl Fn(&str) -> bool) -> bool {
    still_placed(previous, is_candidate).1 < replicas
}

/// The previous assignment restricted to the current candidates (replicas on clusters that
/// dropped out become new replicas, as in Karmada), and its total.
fn still_placed(previous: &BTreeMap<String, i64>, is_candidate: impl Fn(&str) -> bool) -> (BTreeMap<String, i64>, i64) {
    let prev: BTreeMap<String, i64> =
        previous.iter().filter(|(n, r)| is_candidate(n) && **r > 0).map(|(n, r)| (n.clone(), *r)).collect();
    let assigned = prev.values().sum();
    (prev, assigned)
}

/// Sums two assignments.
fn add(mut a: BTreeMap<String, i64>, b: BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    for (k, v) in b {
        *a.entry(k).or_insert(0) += v;
    }
    a
}

/// Job completions divided like its parallelism: Webster over the per-cluster parallelism.
pub fn split_completions(
    completions: i32,
    parallelism: &BTreeMap<String, i32>,
    tie: TieBreak,
) -> BTreeMap<String, i32> {
    let weights: BTreeMap<String, i64> = parallelism.iter().map(|(k, v)| (k.clone(), i64::from(*v))).collect();
    webster(i64::from(completions), &weights, tie)
        .into_iter()
        .map(|(k, v)| (k, i32::try_from(v).unwrap_or(i32::MAX)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(items: &[(&str, i64)]) -> BTreeMap<String, i64> {
        items.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn webster_karmada_vectors() {
        let asc = TieBreak::Ascending;
        let w = m(&[("m1", 3), ("m2", 2), ("m3", 1)]);
        assert_eq!(webster(12, &w, asc), m(&[("m1", 6), ("m2", 4), ("m3", 2)]));
        assert_eq!(webster(13, &w, asc), m(&[("m1", 7), ("m2", 4), ("m3", 2)]));
        assert_eq!(webster(14, &w, asc), m(&[("m1", 7), ("m2", 5), ("m3", 2)]));
        let w = m(&[("m1", 2), ("m2", 1), ("m3", 1), ("m4", 1)]);
        assert_eq!(webster(7, &w, asc), m(&[("m1", 3), ("m2", 2), ("m3", 1), ("m4", 1)]));
        let w = m(&[("m1", 1), ("m2", 1), ("m3", 1), ("m4", 1)]);
        assert_eq!(webster(5, &w, asc), m(&[("m1", 2), ("m2", 1), ("m3", 1), ("m4", 1)]));
        assert_eq!(webster(5, &w, TieBreak::Descending), m(&[("m1", 1), ("m2", 1), ("m3", 1), ("m4", 2)]));
        let w = m(&[("m1", 2), ("m2", 1)]);
        assert_eq!(webster(2, &w, asc), m(&[("m1", 1), ("m2", 1)]));
    }

    /// The seat-by-seat procedure, as the definition.
    fn webster_one_by_one(total: i64, weights: &BTreeMap<String, i64>, tie: TieBreak) -> BTreeMap<String, i64> {
        let mut heap: BinaryHeap<Party<'_>> = weights
            .iter()
            .filter(|(_, w)| **w > 0)
            .map(|(n, w)| Party { name: n, weight: *w, seats: 0, tie })
            .collect();
        for _ in 0..total.max(0) {
            if let Some(mut best) = heap.pop() {
                best.seats += 1;
                heap.push(best);
            }
        }
        heap.into_iter().filter(|p| p.seats > 0).map(|p| (p.name.to_owned(), p.seats)).collect()
    }

    proptest::proptest! {
        #[test]
        fn webster_equals_the_one_by_one_procedure(
            weights in proptest::collection::vec(0i64..40, 0..9),
            big in proptest::collection::vec(0i64..1_000_000_000, 0..4),
            // Up to two seats per party (all through the heap) as often as more.
            total in proptest::prop_oneof![0i64..30, 0i64..3_000],
            descending in proptest::bool::ANY,
        ) {
            let tie = if descending { TieBreak::Descending } else { TieBreak::Ascending };
            // Small weights give many exact ties; large ones exercise the arithmetic.
            let mut w: BTreeMap<String, i64> = weights.iter().enumerate().map(|(i, w)| (format!("c{i}"), *w)).collect();
            w.extend(big.iter().enumerate().map(|(i, w)| (format!("b{i}"), *w)));
            let fast = webster(total, &w, tie);
            proptest::prop_assert_eq!(fast.values().sum::<i64>(), if w.values().any(|x| *x > 0) { total } else { 0 });
            proptest::prop_assert_eq!(&fast, &webster_one_by_one(total, &w, tie));
            // The parties' order does not matter (the selection order is not the names').
            let reversed: Vec<(&str, i64)> = w.iter().rev().map(|(n, w)| (n.as_str(), *w)).collect();
            proptest::prop_assert_eq!(webster_of(total, reversed, tie), fast);
        }
    }

    #[test]
    fn webster_cost_does_not_grow_with_the_replica_count() {
        // 2³¹−1 replicas over static weights: one by one this is minutes of work; here it is
        // a binary search and a few heap steps. The result is still exact.
        let w = m(&[("m1", 1), ("m2", 2), ("m3", 3), ("m4", i64::from(i32::MAX))]);
        let r = webster(i64::from(i32::MAX), &w, TieBreak::Ascending);
        assert_eq!(r.values().sum::<i64>(), i64::from(i32::MAX));
        // m4 holds all but a few: its weight is ~2³¹ times the others'.
        assert!(r["m4"] > i64::from(i32::MAX) - 10, "{r:?}");
        let w = m(&[("a", 1), ("b", 1), ("c", 1)]);
        let r = webster(i64::MAX / 4, &w, TieBreak::Descending);
        assert_eq!(r.values().sum::<i64>(), i64::MAX / 4);
        let max = r.values().max().copied().unwrap_or(0);
        let min = r.values().min().copied().unwrap_or(0);
        assert!(max - min <= 1, "{r:?}");
    }

    #[test]
    fn dynamic_steady_vectors() {
        let asc = TieBreak::Ascending;
        let prev = m(&[("m1", 2), ("m2", 4), ("m3", 6)]);
        let free = [("m1", 10), ("m2", 10), ("m3", 10)];
        assert_eq!(dynamic_steady(6, &free, None, &prev, asc), Ok(m(&[("m1", 1), ("m2", 2), ("m3", 3)])));
        assert_eq!(dynamic_steady(24, &free, None, &prev, asc), Ok(m(&[("m1", 6), ("m2", 8), ("m3", 10)])));
        assert_eq!(dynamic_steady(12, &free, None, &prev, asc), Ok(prev.clone()));
        assert_eq!(
            dynamic_steady(100, &free, None, &prev, asc),
            Err(AssignError::NotEnough { available: 42, wanted: 100 })
        );
    }

    fn list<'a>(items: &[(&'a str, i64)]) -> Vec<(&'a str, i64)> {
        items.to_vec()
    }

    #[test]
    fn aggregated_vectors() {
        let asc = TieBreak::Ascending;
        let free = list(&[("m3", 10), ("m2", 8), ("m1", 6)]);
        assert_eq!(aggregated(12, &free, None, &BTreeMap::new(), asc), Ok(m(&[("m2", 5), ("m3", 7)])));
        let free = list(&[("m3", 20), ("m1", 6), ("m2", 6)]);
        let prev = m(&[("m1", 4), ("m2", 8)]);
        assert_eq!(aggregated(24, &free, None, &prev, asc), Ok(m(&[("m1", 10), ("m2", 14)])));
    }

    /// The normalised CPU division: equal free replicas, weights 1.0 and 1.2 (in
    /// thousandths): the faster member gets about 20 % more, never more than it has free.
    #[test]
    fn weighted_divisions_follow_the_weights_within_the_free_replicas() {
        let asc = TieBreak::Ascending;
        let none = BTreeMap::new();
        let free = list(&[("a-xeon", 20), ("z-epyc", 20)]);
        let w = [20_000, 24_000];
        assert_eq!(dynamic_steady(22, &free, None, &none, asc), Ok(m(&[("a-xeon", 11), ("z-epyc", 11)])));
        assert_eq!(dynamic_steady(22, &free, Some(&w), &none, asc), Ok(m(&[("a-xeon", 10), ("z-epyc", 12)])));
        // 38: 17.3 / 20.7 by the weights, but z-epyc has 20 free in raw cores.
        assert_eq!(dynamic_steady(38, &free, Some(&w), &none, asc), Ok(m(&[("a-xeon", 18), ("z-epyc", 20)])));
        assert!(dynamic_steady(41, &free, Some(&w), &none, asc).is_err(), "raw capacity bounds it");
        // Aggregated: the heavier first (raw: the candidate order among equals).
        assert_eq!(aggregated(15, &free, None, &none, asc), Ok(m(&[("a-xeon", 15)])));
        assert_eq!(aggregated(15, &free, Some(&w), &none, asc), Ok(m(&[("z-epyc", 15)])));
        // Both needed: 30 × 20/44 = 13.6 and 30 × 24/44 = 16.4.
        assert_eq!(aggregated(30, &free, Some(&w), &none, asc), Ok(m(&[("a-xeon", 14), ("z-epyc", 16)])));
    }

    #[test]
    fn aggregated_ties_keep_the_candidate_order() {
        // Equal free replicas: Karmada's sort.Sort of ≤ 12 clusters is an insertion sort, so
        // the candidates keep their (selection) order, whatever their names.
        let asc = TieBreak::Ascending;
        let free = list(&[("z", 10), ("m", 10), ("a", 10)]);
        assert_eq!(aggregated(15, &free, None, &BTreeMap::new(), asc), Ok(m(&[("m", 8), ("z", 7)])));
        let free = list(&[("a", 10), ("m", 10), ("z", 10)]);
        assert_eq!(aggregated(15, &free, None, &BTreeMap::new(), asc), Ok(m(&[("a", 8), ("m", 7)])));
        // A scale-up puts the used clusters first, in that order too.
        let free = list(&[("z", 4), ("m", 4), ("a", 4), ("b", 9)]);
        let prev = m(&[("a", 1), ("z", 1)]);
        assert_eq!(aggregated(6, &free, None, &prev, asc), Ok(m(&[("a", 1), ("z", 5)])));
    }

    #[test]
    fn aggregated_scale_down_orders_more_than_12_previous_clusters_as_go() {
        // 13 previous clusters, 21 replicas, scaled down to 5. Karmada sorts them (listed by
        // name) by replicas with Go's sort.Sort — pdqsort above 12 elements: the
        // pivot is the median of positions 3, 6, 9 (position 6, no swap: "increasing"), the
        // partial insertion sort stops at position 6 (a 2 after a 1) and gives up (fewer than
        // 50 elements), the partition around position 6's 2 swaps it to the front and finds
        // nothing greater, and insertion sort orders positions 1..13: m06, m01, m02, m03,
        // m04, m00, m08, m09, then the 1s. The shortest prefix covering 5 is m06, m01, m02.
        let asc = TieBreak::Ascending;
        let reps = [2, 2, 2, 2, 2, 1, 2, 1, 2, 2, 1, 1, 1];
        let prev: BTreeMap<String, i64> = reps.iter().enumerate().map(|(i, r)| (format!("m{i:02}"), *r)).collect();
        let free: Vec<(&str, i64)> = prev.keys().map(|k| (k.as_str(), 100)).collect();
        assert_eq!(aggregated(5, &free, None, &prev, asc), Ok(m(&[("m01", 2), ("m02", 2), ("m06", 1)])));
        // 12 clusters (the last dropped): insertion sort, stable — name order among equals.
        let free12 = &free[..12];
        assert_eq!(aggregated(5, free12, None, &prev, asc), Ok(m(&[("m00", 2), ("m01", 2), ("m02", 1)])));
    }

    #[test]
    fn job_completions_follow_parallelism() {
        let par: BTreeMap<String, i32> = [("m1".to_string(), 2), ("m2".to_string(), 1)].into_iter().collect();
        let c = split_completions(9, &par, TieBreak::Ascending);
        assert_eq!(c.get("m1"), Some(&6));
        assert_eq!(c.get("m2"), Some(&3));
    }

    #[test]
    fn tie_break_direction_follows_uid_hash_parity() {
        assert_eq!(TieBreak::for_uid(None), TieBreak::Ascending);
        // FNV-32a("a") = 0xe40c292c (even), FNV-32a("b") = 0xe70c2de5 (odd).
        assert_eq!(TieBreak::for_uid(Some("a")), TieBreak::Ascending);
        assert_eq!(TieBreak::for_uid(Some("b")), TieBreak::Descending);
    }
}
