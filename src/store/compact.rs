//! The stored form of a decision's result (history schema 4, placement schema 3): the same
//! [`ScheduleResult`], with its verdicts written as rows instead of self-describing structs.
//!
//! At 1,000 clusters a result keeps hundreds of verdicts, and each spelled out every score
//! plugin's and estimator's name and the whole cluster name: about 110 bytes a verdict, twice
//! per decision (history and placement), which made sled write its tree pages as separate blob
//! files (most of the record phase of a first reconcile). Here a result stores each distinct
//! list of plugin names and of estimator names once, and a row per verdict holds the values,
//! an index into those lists, and the cluster name as the bytes it shares with the previous
//! row's name plus the rest (names come sorted: `member-0417` after `member-0416` is 2 bytes).
//!
//! Decoding checks what it is given (a list index out of range, a value count that does not
//! match its names, a shared prefix longer than the previous name or not on a character
//! boundary, unknown flags): a damaged record is a decode error, never a panic or a misread.
//! Used as `#[serde(with = "super::compact")]` on a record's `result`; the in-memory type and
//! every view of it are unchanged.

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::Error as _;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::schedule::{ClusterVerdict, Outcome, Rejection, ScheduleResult};

const FEASIBLE: u8 = 1;
const SELECTED: u8 = 2;

/// A result as written: [`ScheduleResult`]'s fields in order, the verdicts as [`Rows`].
#[derive(Serialize)]
#[serde(rename = "ScheduleResult")]
struct ResultOut<'a> {
    outcome: &'a Outcome,
    verdicts: Rows<'a>,
    rejected: &'a [Rejection],
    universe: u64,
    affinity_name: &'a Option<String>,
}

/// A result as read back.
#[derive(Deserialize)]
#[serde(rename = "ScheduleResult")]
struct ResultIn {
    outcome: Outcome,
    verdicts: RowsIn,
    rejected: Vec<Rejection>,
    universe: u64,
    affinity_name: Option<String>,
}

/// The verdicts as written: the distinct name lists, then one row per verdict.
struct Rows<'a>(&'a [ClusterVerdict]);

#[derive(Serialize)]
#[serde(rename = "Verdicts")]
struct RowsOut<'a> {
    /// Distinct lists of score plugin names, in first-use order.
    scores: Vec<Vec<&'a str>>,
    /// Distinct lists of estimator names, in first-use order.
    estimates: Vec<Vec<&'a str>>,
    rows: RowSeq<'a>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Clone))]
#[serde(rename = "Verdicts")]
struct RowsIn {
    scores: Vec<Vec<String>>,
    estimates: Vec<Vec<String>>,
    rows: Vec<RowIn>,
}

/// One verdict as written: see [`RowIn`] for the fields.
#[derive(Serialize)]
#[serde(rename = "Row")]
struct RowOut<'a> {
    shared: u32,
    suffix: &'a str,
    flags: u8,
    reasons: &'a [String],
    score: i64,
    score_names: u32,
    scores: Values<'a>,
    available: Option<i64>,
    replicas: Option<i32>,
    estimate_names: u32,
    estimates: Values<'a>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Clone))]
#[serde(rename = "Row")]
struct RowIn {
    /// Bytes of the name shared with the previous row's name.
    shared: u32,
    /// The rest of the name.
    suffix: String,
    /// [`FEASIBLE`], [`SELECTED`].
    flags: u8,
    reasons: Vec<String>,
    score: i64,
    /// Index into [`RowsIn::scores`]: the names of `scores`.
    score_names: u32,
    scores: Vec<i64>,
    available: Option<i64>,
    replicas: Option<i32>,
    /// Index into [`RowsIn::estimates`]: the names of `estimates`.
    estimate_names: u32,
    estimates: Vec<i64>,
}

/// The values of a named list, without the names.
struct Values<'a>(&'a [(Cow<'static, str>, i64)]);

impl Serialize for Values<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(_, v)| v))
    }
}

/// The position of `names` in `lists`, added when new; `last` (the previous row's) is tried
/// first: the rows of a result almost always share one list.
fn list_index<'a>(lists: &mut Vec<Vec<&'a str>>, last: u32, named: &'a [(Cow<'static, str>, i64)]) -> u32 {
    let same = |l: &Vec<&str>| l.len() == named.len() && l.iter().zip(named).all(|(a, (b, _))| *a == b);
    if lists.get(last as usize).is_some_and(same) {
        return last;
    }
    let found = lists.iter().position(same);
    let at = found.unwrap_or_else(|| {
        lists.push(named.iter().map(|(n, _)| n.as_ref()).collect());
        lists.len() - 1
    });
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// Bytes `name` shares with `prev`, ending on a character boundary of both.
fn shared_prefix(prev: &str, name: &str) -> usize {
    let mut n = prev.bytes().zip(name.bytes()).take_while(|(a, b)| a == b).count();
    // Equal bytes that end on a boundary of `name` are whole characters, so a boundary of
    // `prev` too.
    while !name.is_char_boundary(n) {
        n -= 1;
    }
    n
}

struct RowSeq<'a> {
    verdicts: &'a [ClusterVerdict],
    shapes: Vec<(u32, u32)>,
}

impl Serialize for RowSeq<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.verdicts.len()))?;
        let mut prev = "";
        for (v, &(score_names, estimate_names)) in self.verdicts.iter().zip(&self.shapes) {
            // A name longer than 4 GiB (never seen) is written whole.
            let shared = u32::try_from(shared_prefix(prev, &v.name)).unwrap_or(0);
            seq.serialize_element(&RowOut {
                shared,
                suffix: v.name.get(shared as usize..).unwrap_or(&v.name),
                flags: if v.feasible { FEASIBLE } else { 0 } | if v.selected { SELECTED } else { 0 },
                reasons: &v.reasons,
                score: v.score,
                score_names,
                scores: Values(&v.scores),
                available: v.available_replicas,
                replicas: v.replicas,
                estimate_names,
                estimates: Values(&v.estimates),
            })?;
            prev = &v.name;
        }
        seq.end()
    }
}

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut scores = Vec::new();
        let mut estimates = Vec::new();
        let mut last = (0, 0);
        let shapes = self
            .0
            .iter()
            .map(|v| {
                last = (list_index(&mut scores, last.0, &v.scores), list_index(&mut estimates, last.1, &v.estimates));
                last
            })
            .collect();
        RowsOut { scores, estimates, rows: RowSeq { verdicts: self.0, shapes } }.serialize(s)
    }
}

/// Pairs the names of list `index` with `values`.
fn named(
    lists: &[Vec<String>],
    index: u32,
    values: Vec<i64>,
    what: &str,
) -> Result<Vec<(Cow<'static, str>, i64)>, String> {
    let names = usize::try_from(index)
        .ok()
        .and_then(|i| lists.get(i))
        .ok_or_else(|| format!("verdict {what} name list {index} out of range (the result has {})", lists.len()))?;
    if names.len() != values.len() {
        return Err(format!("verdict has {} {what} values for {} names", values.len(), names.len()));
    }
    Ok(names.iter().map(|n| Cow::Owned(n.clone())).zip(values).collect())
}

impl RowsIn {
    fn verdicts(self) -> Result<Vec<ClusterVerdict>, String> {
        let mut out: Vec<ClusterVerdict> = Vec::with_capacity(self.rows.len());
        for row in self.rows {
            if row.flags & !(FEASIBLE | SELECTED) != 0 {
                return Err(format!("verdict flags {:#x} unknown", row.flags));
            }
            let prev = out.last().map_or("", |v| v.name.as_str());
            let head = usize::try_from(row.shared).ok().and_then(|n| prev.get(..n)).ok_or_else(|| {
                format!("verdict name shares {} bytes with a previous name of {} bytes", row.shared, prev.len())
            })?;
            let mut name = String::with_capacity(head.len() + row.suffix.len());
            name.push_str(head);
            name.push_str(&row.suffix);
            out.push(ClusterVerdict {
                name,
                feasible: row.flags & FEASIBLE != 0,
                reasons: row.reasons,
                score: row.score,
                scores: named(&self.scores, row.score_names, row.scores, "score")?,
                available_replicas: row.available,
                replicas: row.replicas,
                selected: row.flags & SELECTED != 0,
                estimates: named(&self.estimates, row.estimate_names, row.estimates, "estimate")?,
            });
        }
        Ok(out)
    }
}

/// Writes a result in its stored form.
pub(super) fn serialize<S: Serializer>(r: &ScheduleResult, s: S) -> Result<S::Ok, S::Error> {
    ResultOut {
        outcome: &r.outcome,
        verdicts: Rows(&r.verdicts),
        rejected: &r.rejected,
        universe: r.universe,
        affinity_name: &r.affinity_name,
    }
    .serialize(s)
}

/// Reads a result from its stored form.
pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ScheduleResult, D::Error> {
    let r = ResultIn::deserialize(d)?;
    Ok(ScheduleResult {
        outcome: r.outcome,
        verdicts: Arc::new(r.verdicts.verdicts().map_err(D::Error::custom)?),
        rejected: r.rejected,
        universe: r.universe,
        affinity_name: r.affinity_name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::codec::bincode_config;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Stored(#[serde(with = "super")] ScheduleResult);

    fn verdict(name: &str, feasible: bool, selected: bool) -> ClusterVerdict {
        ClusterVerdict {
            name: name.into(),
            feasible,
            reasons: if feasible { vec![] } else { vec!["model: cpu 2 of 4 fit".into()] },
            score: 170,
            scores: if feasible {
                vec![("cluster-locality".into(), 100), ("taint-toleration".into(), 70)]
            } else {
                vec![]
            },
            available_replicas: feasible.then_some(i64::from(i32::MAX) + 5),
            replicas: selected.then_some(i32::MAX),
            selected,
            estimates: vec![("general".into(), -1), ("resource-models".into(), i64::MAX)],
        }
    }

    fn result() -> ScheduleResult {
        ScheduleResult {
            outcome: Outcome::Scheduled { targets: [("member-0002".to_string(), Some(3))].into() },
            verdicts: Arc::new(vec![
                verdict("member-0001", true, false),
                verdict("member-0002", true, true),
                verdict("member-0010", false, true),
                verdict("ßeta-ü", true, false),
                verdict("ßeta-ö", true, false),
                verdict("", true, false),
                verdict("x", true, false),
            ]),
            rejected: vec![],
            universe: 42,
            affinity_name: Some("primary".into()),
        }
    }

    fn bincode(r: &ScheduleResult) -> Vec<u8> {
        bincode::serde::encode_to_vec(Stored(r.clone()), bincode_config()).expect("encode")
    }

    /// Decodes as the store does (a limit on what one decode allocates).
    fn unbincode(bytes: &[u8]) -> Result<ScheduleResult, crate::store::StoreError> {
        crate::store::codec::decode_payload::<Stored>("result", crate::store::codec::Codec::Bincode, bytes).map(|s| s.0)
    }

    #[test]
    fn a_result_round_trips_in_both_codecs() {
        let r = result();
        assert_eq!(unbincode(&bincode(&r)).expect("decode"), r);
        let json = serde_json::to_vec(&Stored(r.clone())).expect("json");
        let back: Stored = serde_json::from_slice(&json).expect("json back");
        assert_eq!(back.0, r);
        let empty = ScheduleResult::unschedulable("no policy");
        assert_eq!(unbincode(&bincode(&empty)).expect("decode"), empty);
    }

    #[test]
    fn rows_are_smaller_than_the_plain_verdicts() {
        let names: Vec<String> = (0..1000).map(|i| format!("member-{i:04}")).collect();
        let r = ScheduleResult {
            // Figures of a real fleet's size (the extremes are round-tripped above).
            verdicts: Arc::new(
                names
                    .iter()
                    .map(|n| ClusterVerdict {
                        available_replicas: Some(12),
                        estimates: vec![("general".into(), 12), ("resource-models".into(), 9)],
                        ..verdict(n, true, false)
                    })
                    .collect(),
            ),
            ..result()
        };
        let plain = bincode::serde::encode_to_vec(&r, bincode_config()).expect("plain");
        let compact = bincode(&r);
        assert!(compact.len() * 3 < plain.len(), "compact {} bytes, plain {} bytes", compact.len(), plain.len());
        assert_eq!(unbincode(&compact).expect("decode"), r);
    }

    #[test]
    fn damaged_rows_are_decode_errors() {
        let mut rows = RowsIn {
            scores: vec![vec!["a".into()]],
            estimates: vec![vec![]],
            rows: vec![RowIn {
                shared: 0,
                suffix: "m1".into(),
                flags: FEASIBLE,
                reasons: vec![],
                score: 1,
                score_names: 0,
                scores: vec![1],
                available: None,
                replicas: None,
                estimate_names: 0,
                estimates: vec![],
            }],
        };
        let one = |rows: &RowsIn| rows.clone();
        assert_eq!(one(&rows).verdicts().expect("valid").len(), 1);
        rows.rows[0].shared = 1;
        assert!(one(&rows).verdicts().unwrap_err().contains("shares 1 bytes"));
        rows.rows[0].shared = 0;
        rows.rows[0].score_names = 7;
        assert!(one(&rows).verdicts().unwrap_err().contains("out of range"));
        rows.rows[0].score_names = 0;
        rows.rows[0].scores = vec![1, 2];
        assert!(one(&rows).verdicts().unwrap_err().contains("2 score values for 1 names"));
        rows.rows[0].scores = vec![1];
        rows.rows[0].flags = 0x80;
        assert!(one(&rows).verdicts().unwrap_err().contains("flags"));
        // A shared prefix that splits a character.
        rows.rows[0].flags = FEASIBLE;
        rows.rows[0].suffix = "ß".into();
        let mut second = one(&rows).rows.remove(0);
        second.shared = 1;
        second.suffix = String::new();
        rows.rows.push(second);
        assert!(one(&rows).verdicts().unwrap_err().contains("shares 1 bytes"));
    }

    #[test]
    fn damaged_bytes_are_errors_not_panics() {
        let bytes = bincode(&result());
        for cut in 0..bytes.len() {
            assert!(unbincode(&bytes[..cut]).is_err(), "{cut} of {} bytes decoded", bytes.len());
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = unbincode(&b);
        }
    }
}
