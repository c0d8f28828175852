//! `fedsched replay`: recorded decisions made again by the current scheduler and renderer on
//! their stored inputs ([`crate::reconcile::replay_pass`]), and whether they come out the same:
//! the same result (outcome, targets, verdicts, scores, reasons), the same policy, the same
//! rendered bytes (content hashes). One replay per recorded pass, shared by the records of
//! that pass. A record whose inputs were not all stored is reported as not replayable, never
//! replayed from guesses.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::reconcile::{LoadedRepositories, PassPreview, RecordedHistory, ReplayError, Settings, replay_pass};
use crate::schedule::Outcome;
use crate::store::{HistoryRecord, ReplayRef, Store, StoreError};
use crate::views::explain::format_ms;

/// Most differences listed in the text form of a replay of many records.
pub const FIRST_DIFFERENCES: usize = 20;

/// The replay document of `records` (in the order given): per record `identical`,
/// `different` (with the differences) or `not-replayable` (with the reason); counts.
/// `settings` builds the current settings (profiles, `[model]`, interpreters) for each pass.
pub fn document(
    store: &Store,
    records: &[HistoryRecord],
    settings: &dyn Fn() -> Settings,
) -> Result<Value, StoreError> {
    let mut refs: Vec<Option<ReplayRef>> = Vec::with_capacity(records.len());
    for r in records {
        refs.push(store.replay_ref(r.seq)?);
    }
    let history = RecordedHistory::read(store)?;
    // One replay per (pass, versions, stability state).
    let mut passes: BTreeMap<(u64, u64, u64), Result<PassPreview, String>> = BTreeMap::new();
    let mut loaded = LoadedRepositories::default();
    for (r, rr) in records.iter().zip(&refs) {
        let Some(rr) = rr.as_ref().filter(|rr| rr.pass != 0) else { continue };
        let key = (rr.pass, r.inputs.snapshot_versions, r.inputs.stability);
        if passes.contains_key(&key) {
            continue;
        }
        let replayed = match store.replay_pass(rr.pass)? {
            None => Err(ReplayError::NotRecorded("the pass's inputs".into()).to_string()),
            Some(pass) => {
                replay_pass(store, &history, settings(), &mut loaded, &pass, key.1, key.2).map_err(|e| e.to_string())
            }
        };
        passes.insert(key, replayed);
    }
    let mut out = Vec::with_capacity(records.len());
    let (mut identical, mut different, mut not_replayable) = (0, 0, 0);
    for (r, rr) in records.iter().zip(&refs) {
        let base =
            json!({"workload": r.workload.display_ref(), "seq": r.seq, "at": format_ms(r.at_ms), "trigger": r.trigger});
        let entry = match rr {
            None => not(base, "its inputs were not recorded (written by an older fedsched)"),
            Some(rr) if rr.pass == 0 && crate::reconcile::is_adoption(r) => {
                not(base, crate::reconcile::ADOPTION_REASON)
            }
            Some(rr) if rr.pass == 0 => not(base, "its pass recorded notes only and stored no replay inputs"),
            Some(rr) => match &passes[&(rr.pass, r.inputs.snapshot_versions, r.inputs.stability)] {
                Err(e) => not(base, e),
                Ok(p) => {
                    let differences = compare(r, rr, p);
                    let mut e = base;
                    e["status"] = json!(if differences.is_empty() { "identical" } else { "different" });
                    e["differences"] = json!(differences);
                    e
                }
            },
        };
        match entry["status"].as_str() {
            Some("identical") => identical += 1,
            Some("different") => different += 1,
            _ => not_replayable += 1,
        }
        out.push(entry);
    }
    Ok(json!({
        "replayed": identical + different,
        "identical": identical,
        "different": different,
        "notReplayable": not_replayable,
        "passes": passes.len(),
        "decisions": out,
    }))
}

fn not(mut base: Value, reason: &str) -> Value {
    base["status"] = json!("not-replayable");
    base["reason"] = json!(reason);
    base
}

/// The differences between a recorded decision and its replay (empty: identical).
fn compare(r: &HistoryRecord, rr: &ReplayRef, p: &PassPreview) -> Vec<String> {
    let removal = r.inputs.template_hash == 0 && r.inputs.policy_hash == 0;
    let Some(d) = p.decisions.get(&r.workload) else {
        return match removal {
            true => Vec::new(),
            false => vec!["the replay does not propagate the workload".into()],
        };
    };
    if removal {
        return vec!["recorded as removed, but the replay propagates it".into()];
    }
    let mut out = Vec::new();
    if d.record().policy != r.policy {
        let show = |p: &Option<crate::policy::PolicyRef>| p.as_ref().map_or("none".to_string(), ToString::to_string);
        out.push(format!("policy: {} → {}", show(&r.policy), show(&d.record().policy)));
    }
    out.extend(outcome_diff(&r.result.outcome, &d.record().result.outcome));
    if out.is_empty() && d.record().result != r.result {
        out.extend(verdicts_diff(&r.result, &d.record().result));
        if out.is_empty() {
            out.push("the result differs: cluster verdicts, scores or reasons".into());
        }
    }
    let recorded: BTreeMap<(&str, &str), u64> =
        rr.files.iter().map(|(c, f, h)| ((c.as_str(), f.as_str()), *h)).collect();
    let replayed: BTreeMap<(&str, &str), u64> = d.files().map(|(c, f, h)| ((c, f), h)).collect();
    let files: BTreeSet<&(&str, &str)> = recorded.keys().chain(replayed.keys()).collect();
    // A Secret's data is not stored (the replay reads it redacted), and its encrypted files
    // are new bytes at each encryption: only which files it has is compared.
    let secret = crate::secrets::is_secret(&r.workload);
    for f in files {
        match (recorded.get(f), replayed.get(f)) {
            (Some(a), Some(b)) if a != b && !secret => {
                out.push(format!("{}/{}: rendered bytes differ ({a:016x} → {b:016x})", f.0, f.1))
            }
            (Some(_), None) => out.push(format!("- {}/{}: not rendered by the replay", f.0, f.1)),
            (None, Some(_)) => out.push(format!("+ {}/{}: rendered only by the replay", f.0, f.1)),
            _ => {}
        }
    }
    out
}

/// Which cluster verdicts differ between two results with the same outcome, and how: the
/// first field that differs per cluster (room, estimates, score, reasons), or a cluster only
/// one of them judged.
fn verdicts_diff(
    recorded: &crate::schedule::ScheduleResult,
    replayed: &crate::schedule::ScheduleResult,
) -> Vec<String> {
    let by_name = |r: &crate::schedule::ScheduleResult| -> BTreeMap<String, crate::schedule::ClusterVerdict> {
        r.verdicts.iter().map(|v| (v.name.clone(), v.clone())).collect()
    };
    let (a, b) = (by_name(recorded), by_name(replayed));
    let clusters: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut out = Vec::new();
    for c in clusters {
        match (a.get(c), b.get(c)) {
            (Some(x), Some(y)) if x != y => {
                let what = if x.available_replicas != y.available_replicas {
                    format!("room {:?} → {:?}", x.available_replicas, y.available_replicas)
                } else if x.estimates != y.estimates {
                    format!("estimates {:?} → {:?}", x.estimates, y.estimates)
                } else if x.feasible != y.feasible {
                    format!("feasible {} → {}", x.feasible, y.feasible)
                } else if x.score != y.score || x.scores != y.scores {
                    format!("score {} {:?} → {} {:?}", x.score, x.scores, y.score, y.scores)
                } else if x.reasons != y.reasons {
                    format!("reasons {:?} → {:?}", x.reasons, y.reasons)
                } else {
                    format!("replicas {:?} → {:?}", x.replicas, y.replicas)
                };
                out.push(format!("verdict on {c}: {what}"));
            }
            (Some(_), None) => out.push(format!("verdict on {c}: not judged by the replay")),
            (None, Some(_)) => out.push(format!("verdict on {c}: judged only by the replay")),
            _ => {}
        }
    }
    if out.is_empty() && recorded.rejected != replayed.rejected {
        out.push("the rejected clusters or their reasons differ".into());
    }
    out
}

/// `cluster: 4 → 6`, `+ cluster: 3`, `- cluster`, or the change of schedulability.
fn outcome_diff(recorded: &Outcome, replayed: &Outcome) -> Vec<String> {
    match (recorded, replayed) {
        (Outcome::Scheduled { targets: a }, Outcome::Scheduled { targets: b }) => {
            let show = |r: &Option<i32>| r.map_or("-".to_string(), |r| r.to_string());
            let clusters: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            clusters
                .into_iter()
                .filter_map(|c| match (a.get(c), b.get(c)) {
                    (Some(x), Some(y)) if x != y => Some(format!("{c}: {} → {}", show(x), show(y))),
                    (None, Some(y)) => Some(format!("+ {c}: {}", show(y))),
                    (Some(_), None) => Some(format!("- {c}")),
                    _ => None,
                })
                .collect()
        }
        (Outcome::Unschedulable { reason: a }, Outcome::Unschedulable { reason: b }) if a != b => {
            vec![format!("unschedulable for another reason: {a:?} → {b:?}")]
        }
        (Outcome::Unschedulable { reason }, Outcome::Scheduled { .. }) => {
            vec![format!("recorded unschedulable ({reason}), the replay schedules it")]
        }
        (Outcome::Scheduled { .. }, Outcome::Unschedulable { reason }) => {
            vec![format!("recorded scheduled, the replay finds it unschedulable: {reason}")]
        }
        _ => Vec::new(),
    }
}

/// The text form: one record's verdict, or counts and the first differences.
pub fn to_text(doc: &Value) -> String {
    let decisions = doc["decisions"].as_array().map(Vec::as_slice).unwrap_or_default();
    let line = |d: &Value| format!("{}@{}", d["workload"].as_str().unwrap_or(""), d["seq"]);
    if let [d] = decisions {
        return match d["status"].as_str() {
            Some("identical") => format!("{}: identical\n", line(d)),
            Some("different") => {
                let mut out = format!("{}: different\n", line(d));
                for x in d["differences"].as_array().into_iter().flatten() {
                    out.push_str(&format!("  {}\n", x.as_str().unwrap_or("")));
                }
                out
            }
            _ => format!("{}: {}\n", line(d), d["reason"].as_str().unwrap_or("not replayable")),
        };
    }
    let n = |k: &str| doc[k].as_u64().unwrap_or(0);
    let mut out = format!(
        "{} decisions replayed in {} passes: {} identical, {} different; {} not replayable\n",
        n("replayed"),
        n("passes"),
        n("identical"),
        n("different"),
        n("notReplayable")
    );
    for d in decisions.iter().filter(|d| d["status"] == "different").take(FIRST_DIFFERENCES) {
        out.push_str(&format!("\n{} ({}): different\n", line(d), d["at"].as_str().unwrap_or("")));
        for x in d["differences"].as_array().into_iter().flatten() {
            out.push_str(&format!("  {}\n", x.as_str().unwrap_or("")));
        }
    }
    if let Some(d) = decisions.iter().find(|d| d["status"] == "not-replayable") {
        out.push_str(&format!("\nfirst not replayable: {}: {}\n", line(d), d["reason"].as_str().unwrap_or("")));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::policy::ObjectKey;
    use crate::schedule::ScheduleResult;
    use crate::store::{DecisionInputs, ReplayPass, ReplayRef};

    fn record(template_hash: u64) -> HistoryRecord {
        HistoryRecord {
            seq: 0,
            at_ms: 1_000,
            trigger: "render".into(),
            workload: ObjectKey {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("default".into()),
                name: "web".into(),
            },
            policy: None,
            inputs: DecisionInputs {
                template_hash,
                policy_hash: 2,
                snapshot_versions: 7,
                previous: BTreeMap::new(),
                previous_affinity: None,
                profile: "karmada-default".into(),
                stability: 0,
            },
            result: ScheduleResult::unschedulable("x"),
            notes: Vec::new(),
        }
    }

    /// A record of an older store (no replay reference) and one whose pass lost a file are not
    /// replayed: each says what was not recorded; nothing counts as identical.
    #[test]
    fn decisions_without_their_inputs_are_not_replayed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("store");
        let old = store.append_history(record(1)).expect("append");
        let lost = store.append_history(record(3)).expect("append");
        let pass = ReplayPass {
            now_ms: 1_000,
            sources: vec![("apps/web.yaml".into(), 99)],
            after_seq: 0,
            freshness: Vec::new(),
            rollouts: Some(0),
        };
        let hash = store.put_replay_pass(&pass).expect("pass");
        let r = ReplayRef { pass: hash, targets: BTreeMap::new(), affinity_name: None, files: Vec::new() };
        store.put_replay_refs(&[(lost, r)]).expect("ref");
        let records = store.history(&record(0).workload).expect("history");
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [old, lost]);
        let doc = document(&store, &records, &Settings::default).expect("document");
        assert_eq!((doc["replayed"].as_u64(), doc["notReplayable"].as_u64()), (Some(0), Some(2)), "{doc:#}");
        let reasons: Vec<&str> =
            doc["decisions"].as_array().expect("list").iter().filter_map(|d| d["reason"].as_str()).collect();
        assert!(reasons[0].contains("not recorded (written by an older fedsched)"), "{reasons:?}");
        assert_eq!(reasons[1], "not replayable: the file apps/web.yaml was not recorded");
        assert!(to_text(&doc).contains("0 decisions replayed in 1 passes: 0 identical, 0 different; 2 not replayable"));
    }
}
