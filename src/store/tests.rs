use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::*;
use crate::model::Health;
use crate::policy::{PolicyKind, PolicyRef};
use crate::schedule::{ClusterVerdict, Outcome, ScheduleResult};

fn cluster(name: &str, generation: u32) -> ClusterSnapshot {
    ClusterSnapshot::offline(name, "clusters.yaml")
        .with_labels([("gen", generation.to_string())])
        .with_provider("aws")
        .with_region("eu-west-1")
        .with_zones(["eu-west-1a"])
        .with_api_enablements(["apps/v1/Deployment"])
}

fn seen(at_ms: u64) -> Observed {
    Observed { at_ms, confidence: 1.0 }
}

pub(super) fn workload(name: &str) -> ObjectKey {
    ObjectKey {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("default".into()),
        name: name.into(),
    }
}

fn result(targets: &[(&str, i32)]) -> ScheduleResult {
    ScheduleResult {
        outcome: Outcome::Scheduled { targets: targets.iter().map(|(c, r)| (c.to_string(), Some(*r))).collect() },
        verdicts: targets
            .iter()
            .map(|(c, r)| ClusterVerdict {
                name: c.to_string(),
                feasible: true,
                reasons: vec!["ok".into()],
                score: 100,
                scores: vec![("ClusterAffinity".into(), 100)],
                available_replicas: Some(10),
                replicas: Some(*r),
                selected: true,
                estimates: vec![("resource-summary".into(), 10)],
            })
            .collect::<Vec<_>>()
            .into(),
        rejected: Vec::new(),
        universe: 0,
        affinity_name: None,
    }
}

pub(super) fn decision(key: &ObjectKey, at_ms: u64, trigger: &str) -> HistoryRecord {
    HistoryRecord {
        seq: 0,
        at_ms,
        trigger: trigger.into(),
        workload: key.clone(),
        policy: Some(PolicyRef {
            kind: PolicyKind::PropagationPolicy,
            namespace: Some("default".into()),
            name: "pp".into(),
        }),
        inputs: DecisionInputs {
            template_hash: 1,
            policy_hash: 2,
            snapshot_versions: 7,
            previous: BTreeMap::new(),
            previous_affinity: None,
            profile: "default".into(),
            stability: 0,
        },
        result: result(&[("m1", 3)]),
        notes: vec![format!("note {trigger}")],
    }
}

pub(super) fn placement(key: &ObjectKey) -> PlacementRecord {
    let r = result(&[("m1", 2), ("m2", 1)]);
    PlacementRecord {
        workload: key.clone(),
        policy: None,
        targets: r.targets().cloned().unwrap_or_default(),
        result: r,
        affinity_name: None,
        files: BTreeMap::from([("m1".to_string(), "m1/default/web.yaml".to_string())]),
        history_seq: 0,
        decided_at_ms: 5,
    }
}

#[test]
fn store_is_send_sync_and_errors_too() {
    fn check<T: Send + Sync + 'static>() {}
    check::<Store>();
    check::<StoreError>();
}

/// One outage is one version (issue 49): the poll's error text varies (a reset stream, then a
/// refused connection) but the kind does not; another kind, or health back, is a new version.
/// The head says the latest reason.
#[test]
fn an_outage_with_changing_error_text_is_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let down = |reason: &str| {
        let mut c = cluster("m1", 1);
        c.health = Health::Unreachable { reason: reason.into() };
        c
    };
    assert_eq!(store.record_snapshot(&cluster("m1", 1), seen(100)).unwrap(), (1, true));
    assert_eq!(
        store.record_snapshot(&down("transport: listing nodes: watch: stream reset"), seen(100)).unwrap(),
        (2, true)
    );
    assert_eq!(
        store.record_snapshot(&down("transport: listing nodes: connection refused"), seen(100)).unwrap(),
        (2, false)
    );
    let head = store.snapshot_head("m1").unwrap().unwrap();
    assert_eq!(head.health, Health::Unreachable { reason: "transport: listing nodes: connection refused".into() });
    assert_eq!(
        store.record_snapshot(&down("deadline: poll exceeded its deadline of 5s"), seen(200)).unwrap(),
        (3, true)
    );
    assert_eq!(store.record_snapshot(&cluster("m1", 1), seen(300)).unwrap(), (4, true));
}

#[test]
fn snapshot_versioning() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.latest_snapshot("m1").unwrap(), None);

    assert_eq!(store.record_snapshot(&cluster("m1", 1), seen(100)).unwrap(), (1, true));
    assert_eq!(store.record_snapshot(&cluster("m1", 1), Observed { at_ms: 200, confidence: 0.5 }).unwrap(), (1, false));
    let versions = store.snapshot_versions("m1").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!((versions[0].first_seen_ms, versions[0].last_seen_ms, versions[0].confidence), (100, 200, 0.5));
    // last_seen never goes backwards.
    store.record_snapshot(&cluster("m1", 1), seen(150)).unwrap();
    let (meta, snap) = store.latest_snapshot("m1").unwrap().unwrap();
    assert_eq!((meta.version, meta.last_seen_ms), (1, 200));
    assert_eq!(snap, cluster("m1", 1));

    assert_eq!(store.record_snapshot(&cluster("m1", 2), seen(300)).unwrap(), (2, true));
    assert_eq!(store.record_snapshot(&cluster("m1", 2), seen(400)).unwrap(), (2, false));
    let versions = store.snapshot_versions("m1").unwrap();
    let summary: Vec<_> = versions.iter().map(|m| (m.version, m.first_seen_ms, m.last_seen_ms)).collect();
    assert_eq!(summary, vec![(1, 100, 200), (2, 300, 400)]);
    assert_eq!(versions[1].hash, cluster("m1", 2).content_hash());
    assert_eq!(store.snapshot("m1", 1).unwrap(), Some(cluster("m1", 1)));
    assert_eq!(store.snapshot("m1", 2).unwrap(), Some(cluster("m1", 2)));
    assert_eq!(store.snapshot("m1", 3).unwrap(), None);

    // Going back to older content is a new version, not a rewind.
    assert_eq!(store.record_snapshot(&cluster("m1", 1), seen(500)).unwrap(), (3, true));

    // A health change is a content change.
    let mut sick = cluster("m1", 1);
    sick.health = Health::NotReady { reason: "kubelet".into() };
    assert_eq!(store.record_snapshot(&sick, seen(600)).unwrap(), (4, true));
    let (meta, _) = store.latest_snapshot("m1").unwrap().unwrap();
    assert_eq!(meta.health, sick.health);

    // Prefix-sharing cluster names are separate.
    store.record_snapshot(&cluster("m", 1), seen(1)).unwrap();
    store.record_snapshot(&cluster("m10", 1), seen(1)).unwrap();
    assert_eq!(store.snapshot_versions("m").unwrap().len(), 1);
    assert_eq!(store.snapshot_versions("m1").unwrap().len(), 4);
    assert_eq!(store.clusters().unwrap(), vec!["m", "m1", "m10"]);

    assert!(matches!(store.record_snapshot(&cluster("a\0b", 1), seen(1)), Err(StoreError::InvalidName { .. })));
}

#[test]
fn snapshot_versions_ordered_past_256() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for i in 0..300u32 {
        let (v, new) = store.record_snapshot(&cluster("m1", i), seen(u64::from(i))).unwrap();
        assert_eq!((v, new), (u64::from(i) + 1, true));
    }
    let versions: Vec<u64> = store.snapshot_versions("m1").unwrap().iter().map(|m| m.version).collect();
    assert_eq!(versions, (1..=300).collect::<Vec<_>>());
    let (meta, snap) = store.latest_snapshot("m1").unwrap().unwrap();
    assert_eq!(meta.version, 300);
    assert_eq!(snap, cluster("m1", 299));
    assert_eq!(store.snapshot("m1", 257).unwrap(), Some(cluster("m1", 256)));
}

#[test]
fn history_order_and_isolation() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let web = workload("web");
    let web2 = workload("web2");
    let mut seqs = Vec::new();
    for i in 0..300u64 {
        let key = if i % 3 == 0 { &web2 } else { &web };
        seqs.push(store.append_history(decision(key, i, &format!("t{i}"))).unwrap());
    }
    assert_eq!(seqs, (1..=300).collect::<Vec<_>>());
    let h = store.history(&web).unwrap();
    let h2 = store.history(&web2).unwrap();
    assert_eq!((h.len(), h2.len()), (200, 100));
    assert!(h.iter().all(|r| r.workload == web));
    assert!(h2.iter().all(|r| r.workload == web2));
    assert!(h.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(h2.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(h[0].seq, 2);
    assert_eq!(h[0], {
        let mut d = decision(&web, 1, "t1");
        d.seq = 2;
        d
    });
    assert!(store.history(&workload("we")).unwrap().is_empty());
}

#[test]
fn record_decision_is_atomic_and_links_seq() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let web = workload("web");
    store.append_history(decision(&web, 1, "first")).unwrap();
    let seq = store.record_decision(decision(&web, 2, "second"), &placement(&web)).unwrap();
    assert_eq!(seq, 2);
    let p = store.placement(&web).unwrap().unwrap();
    assert_eq!(p.history_seq, 2);
    assert_eq!(store.history(&web).unwrap().last().map(|r| (r.seq, r.trigger.as_str())), Some((2, "second")));
    let err = store.record_decision(decision(&workload("other"), 3, "x"), &placement(&web)).unwrap_err();
    assert!(matches!(err, StoreError::Inconsistent(_)));
    assert_eq!(store.history(&workload("other")).unwrap().len(), 0);
}

#[test]
fn blobs_are_content_addressed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let json = br#"{"apiVersion":"apps/v1","kind":"Deployment"}"#;
    let h = store.put_blob(json).unwrap();
    assert_eq!(h, fnv1a64(json));
    assert_eq!(store.put_blob(json).unwrap(), h);
    assert_eq!(store.inner.blobs.len(), 1);
    assert_eq!(store.blob(h).unwrap().as_deref(), Some(&json[..]));
    assert_eq!(store.blob(h ^ 1).unwrap(), None);
    let raw = b"not json \xff";
    let h2 = store.put_blob(raw).unwrap();
    assert_eq!(store.blob(h2).unwrap().as_deref(), Some(&raw[..]));
}

#[test]
fn placements_put_get_remove() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let web = workload("web");
    let web2 = workload("web2");
    assert_eq!(store.placement(&web).unwrap(), None);
    store.put_placement(&placement(&web)).unwrap();
    store.put_placement(&placement(&web2)).unwrap();
    assert_eq!(store.placement(&web).unwrap(), Some(placement(&web)));
    let mut changed = placement(&web);
    changed.result =
        ScheduleResult { affinity_name: Some("primary".into()), ..ScheduleResult::unschedulable("no cluster fits") };
    store.put_placement(&changed).unwrap();
    assert_eq!(store.placement(&web).unwrap(), Some(changed.clone()));
    assert_eq!(store.placements().unwrap().len(), 2);
    store.remove_placement(&web).unwrap();
    assert_eq!(store.placement(&web).unwrap(), None);
    assert_eq!(store.placements().unwrap(), vec![placement(&web2)]);
    store.remove_placement(&web).unwrap();
}

#[test]
fn reopen_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let web = workload("web");
    let blob;
    {
        let store = Store::open(dir.path()).unwrap();
        store.record_snapshot(&cluster("m1", 1), seen(1)).unwrap();
        store.record_snapshot(&cluster("m1", 2), seen(2)).unwrap();
        store.record_snapshot(&cluster("m1", 2), seen(3)).unwrap();
        store.record_decision(decision(&web, 1, "a"), &placement(&web)).unwrap();
        blob = store.put_blob(b"{}").unwrap();
        let clone = store.clone();
        drop(store);
        clone.append_history(decision(&web, 2, "b")).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let versions = store.snapshot_versions("m1").unwrap();
    assert_eq!(versions.iter().map(|m| (m.version, m.last_seen_ms)).collect::<Vec<_>>(), vec![(1, 1), (2, 3)]);
    assert_eq!(store.placement(&web).unwrap().map(|p| p.history_seq), Some(1));
    assert_eq!(store.history(&web).unwrap().len(), 2);
    assert_eq!(store.blob(blob).unwrap(), Some(b"{}".to_vec()));
    // The counter survives: no sequence number is reused.
    assert_eq!(store.append_history(decision(&web, 3, "c")).unwrap(), 3);
}

#[test]
fn second_open_is_locked_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let start = Instant::now();
    let err = Store::open(dir.path()).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("is in use by another fedsched process"), "{err}");
    // A clone keeps the lock; dropping every handle releases it.
    let clone = store.clone();
    drop(store);
    assert!(matches!(Store::open(dir.path()), Err(StoreError::Locked { .. })));
    drop(clone);
    Store::open(dir.path()).unwrap();
}

#[test]
fn newer_store_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.inner.meta.get(keys::SCHEMA_VERSION).unwrap().as_deref(),
            Some(&STORE_SCHEMA.to_be_bytes()[..])
        );
        store.inner.meta.insert(keys::SCHEMA_VERSION, &(STORE_SCHEMA + 1).to_be_bytes()).unwrap();
    }
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::NewerStore { found: 3, supported: 2, .. }), "{err}");
}

#[test]
fn unknown_record_schema_on_disk_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let web = workload("web");
    store.put_placement(&placement(&web)).unwrap();
    let key = keys::workload(&web).unwrap();
    let mut raw = store.inner.placements.get(&key).unwrap().unwrap().to_vec();
    raw[2..4].copy_from_slice(&9u16.to_be_bytes());
    store.inner.placements.insert(&key, raw).unwrap();
    let err = store.placement(&web).unwrap_err();
    assert!(matches!(err, StoreError::Schema { what: "placement record", found: 9, supported: 3 }), "{err}");
}

#[test]
fn unchanged_snapshots_do_not_grow_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let snap = cluster("m1", 1);
    store.record_snapshot(&snap, seen(0)).unwrap();
    store.flush().unwrap();
    let before = store.size_on_disk().unwrap();
    for i in 1..=1000u64 {
        assert_eq!(store.record_snapshot(&snap, seen(i)).unwrap(), (1, false));
    }
    store.flush().unwrap();
    let after = store.size_on_disk().unwrap();
    let growth = after.saturating_sub(before);
    println!("store growth after 1000 unchanged snapshots: {before} -> {after} bytes (+{growth})");
    let versions = store.snapshot_versions("m1").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].last_seen_ms, 1000);
    assert!(growth < 1 << 20, "grew by {growth} bytes");
}

#[test]
fn corrupt_db_is_reported_with_a_hint() {
    // (file to damage, damage everything after this offset)
    for (file, from) in [("conf", 8), ("db", 16)] {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            for i in 0..50 {
                store.record_snapshot(&cluster("m1", i), seen(u64::from(i))).unwrap();
            }
            store.flush().unwrap();
        }
        let path = dir.path().join(DB_DIR).join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        for b in bytes.iter_mut().skip(from) {
            *b ^= 0x5a;
        }
        std::fs::write(&path, bytes).unwrap();
        let err = match Store::open(dir.path()) {
            Err(err) => err,
            // sled may recover a damaged log silently by dropping everything from the first bad
            // segment on (which segment that is depends on when its background flush ran). That
            // loss is undetectable; what must hold is that what survives is a clean prefix.
            Ok(store) if file == "db" => {
                let versions = store.snapshot_versions("m1").unwrap();
                assert!(versions.len() < 50, "damage went unnoticed and nothing was lost");
                for (i, v) in versions.iter().enumerate() {
                    assert_eq!(v.version, i as u64 + 1);
                }
                continue;
            }
            Ok(_) => panic!("{file}: damage went unnoticed"),
        };
        assert!(matches!(err, StoreError::Corrupt { .. }), "{file}: {err}");
        let msg = err.to_string();
        assert!(msg.contains("move it aside") && msg.contains(&dir.path().join(DB_DIR).display().to_string()), "{msg}");
        println!("{file}: {msg}");
    }
}

#[test]
fn layout_1_records_are_upgraded_on_open() {
    use super::records::{ClusterVerdictV1, DecisionInputsV1, HistoryRecordV1, PlacementRecordV1, ScheduleResultV1};
    let v1_result = || ScheduleResultV1 {
        outcome: Outcome::Scheduled { targets: BTreeMap::from([("m1".to_string(), Some(3))]) },
        verdicts: ["m1", "m2", "m3", "m4"]
            .iter()
            .map(|n| ClusterVerdictV1 {
                name: n.to_string(),
                feasible: *n == "m1",
                reasons: if *n == "m1" {
                    vec!["estimator resource-summary: 7 more replicas fit".into(), "model: note".into()]
                } else if *n == "m3" {
                    vec!["taint-toleration: cluster had untolerated taint {t:NoSchedule}".into()]
                } else {
                    vec!["cluster-affinity: cluster does not match".into()]
                },
                score: 0,
                scores: vec![],
                available_replicas: (*n == "m1").then_some(7),
                replicas: (*n == "m1").then_some(3),
                selected: *n == "m1",
            })
            .collect(),
        affinity_name: None,
    };
    let web = workload("web");
    let versions = BTreeMap::from([("m1".to_string(), 4u64), ("m2".to_string(), 1)]);
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        let envelope = |schema: u16, payload: Vec<u8>| {
            let mut b = vec![codec::MAGIC, 1, 0, 0];
            b[2..4].copy_from_slice(&schema.to_be_bytes());
            b.extend(payload);
            b
        };
        let cfg = codec::bincode_config();
        let h = HistoryRecordV1 {
            seq: 1,
            at_ms: 5,
            trigger: "t".into(),
            workload: web.clone(),
            policy: None,
            inputs: DecisionInputsV1 {
                template_hash: 1,
                policy_hash: 2,
                snapshot_versions: versions.clone(),
                previous: BTreeMap::new(),
                previous_affinity: None,
                profile: "karmada-default".into(),
            },
            result: v1_result(),
            notes: vec![],
        };
        let p = PlacementRecordV1 {
            workload: web.clone(),
            policy: None,
            result: v1_result(),
            targets: BTreeMap::from([("m1".to_string(), Some(3))]),
            affinity_name: None,
            files: BTreeMap::new(),
            history_seq: 1,
            decided_at_ms: 5,
        };
        let prefix = keys::history_prefix(&web).unwrap();
        store
            .inner
            .history
            .insert(keys::history(&prefix, 1), envelope(1, bincode::serde::encode_to_vec(&h, cfg).unwrap()))
            .unwrap();
        store
            .inner
            .placements
            .insert(keys::workload(&web).unwrap(), envelope(1, bincode::serde::encode_to_vec(&p, cfg).unwrap()))
            .unwrap();
        store.inner.meta.insert(keys::SCHEMA_VERSION, &1u32.to_be_bytes()).unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.inner.meta.get(keys::SCHEMA_VERSION).unwrap().as_deref(), Some(&2u32.to_be_bytes()[..]));
    let h = store.last_history(&web).unwrap().unwrap();
    assert_eq!(store.versions(h.inputs.snapshot_versions).unwrap(), Some(versions));
    let p = store.placement(&web).unwrap().unwrap();
    for result in [&h.result, &p.result] {
        assert_eq!(result.verdicts.len(), 1, "only the feasible cluster keeps a verdict");
        assert_eq!(result.verdicts[0].estimates, vec![("resource-summary".into(), 7)]);
        assert_eq!(result.verdicts[0].reasons, vec!["model: note".to_string()]);
        assert_eq!(result.rejected.len(), 2);
        let all = store.expand(result).unwrap();
        let names: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, vec!["m1", "m2", "m3", "m4"]);
        assert!(all[2].reasons[0].starts_with("taint-toleration:"), "{:?}", all[2]);
        assert_eq!(all[3].reasons, vec!["cluster-affinity: cluster does not match".to_string()]);
    }
    // Reopening an upgraded store changes nothing.
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.placement(&web).unwrap(), Some(p));
}

#[test]
fn compact_records_are_small_and_expand_to_every_cluster() {
    use crate::schedule::{ClusterSet, Rejection, UniversePos};
    let names: Vec<String> = (0..1000).map(|i| format!("member-{i:04}")).collect();
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let universe = store.put_universe(&names).unwrap();
    assert_eq!(universe, crate::schedule::fleet::universe_of(&names));
    let mut r = result(&[("member-0007", 3)]);
    r.universe = universe;
    r.rejected = vec![Rejection {
        reasons: vec!["cluster-affinity: cluster does not match".into()],
        clusters: ClusterSet::from_sorted((0..1000).filter(|p| *p != 7).map(UniversePos::new)),
    }];
    let bytes = bincode::serde::encode_to_vec(&r, codec::bincode_config()).unwrap().len();
    assert!(bytes < 400, "{bytes} bytes");
    let all = store.expand(&r).unwrap();
    assert_eq!(all.len(), 1000);
    assert!(all[7].feasible && !all[8].feasible);
}

#[test]
fn record_decisions_in_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (web, api) = (workload("web"), workload("api"));
    store.append_history(decision(&web, 1, "first")).unwrap();
    let seqs = store
        .record_decisions(&mut [(decision(&web, 2, "a"), placement(&web)), (decision(&api, 2, "b"), placement(&api))])
        .unwrap();
    assert_eq!(seqs, vec![2, 3]);
    assert_eq!(store.placement(&api).unwrap().map(|p| p.history_seq), Some(3));
    assert_eq!(store.history(&web).unwrap().last().map(|r| r.seq), Some(2));
    let err = store.record_decisions(&mut [(decision(&web, 3, "x"), placement(&api))]).unwrap_err();
    assert!(matches!(err, StoreError::Inconsistent(_)));
    assert_eq!(store.append_history(decision(&web, 4, "c")).unwrap(), 4, "nothing of the refused batch was written");
}

#[test]
fn record_decisions_writes_what_one_by_one_writes_would() {
    let contents = |store: &Store| -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        [&store.inner.meta, &store.inner.history, &store.inner.placements]
            .iter()
            .map(|t| t.iter().map(|kv| kv.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect())
            .collect()
    };
    let names = ["web", "api", "db", "cache", "web"];
    let mut decisions: Vec<(HistoryRecord, PlacementRecord)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (decision(&workload(n), i as u64 + 2, n), placement(&workload(n))))
        .collect();
    let (one_dir, batch_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (one, batched) = (Store::open(one_dir.path()).unwrap(), Store::open(batch_dir.path()).unwrap());
    for store in [&one, &batched] {
        store.append_history(decision(&workload("web"), 1, "first")).unwrap();
    }
    let one_seqs: Vec<u64> = decisions.iter().map(|(h, p)| one.record_decision(h.clone(), p).unwrap()).collect();
    let mut batch_seqs = batched.record_decisions(&mut decisions[..2]).unwrap();
    batch_seqs.extend(batched.record_decisions(&mut decisions[2..]).unwrap());
    assert_eq!(one_seqs, batch_seqs);
    assert_eq!(contents(&one), contents(&batched));
}

/// A dry-run handle reads the store, answers blob writes and snapshot recordings in memory,
/// refuses every other write, and leaves the store as it was.
#[test]
fn a_dry_run_reads_the_store_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    store.record_snapshot(&cluster("a", 1), seen(1_000)).expect("record");
    let kept = store.put_blob(b"kept").expect("blob");
    let key = workload("web");
    store.put_placement(&placement(&key)).expect("put");
    let before_heads = store.latest_snapshot("a").expect("head").expect("a head");

    let dry = store.dry_run();
    assert!(dry.is_dry_run() && !store.is_dry_run());
    // Reads see the store.
    assert_eq!(dry.blob(kept).expect("read"), Some(b"kept".to_vec()));
    assert_eq!(dry.placements().expect("placements").len(), 1);
    // Snapshots: the head's version for the same content, the next one for new content, and
    // that same version again for the same new content.
    assert_eq!(dry.record_snapshot(&cluster("a", 1), seen(2_000)).expect("same"), (1, false));
    assert_eq!(dry.record_snapshot(&cluster("a", 2), seen(2_000)).expect("new"), (2, true));
    assert_eq!(dry.record_snapshot(&cluster("a", 2), seen(3_000)).expect("again"), (2, false));
    assert_eq!(dry.record_snapshot(&cluster("b", 1), seen(2_000)).expect("first"), (1, true));
    // A blob written through the dry run reads back through it, not through the store.
    let held = dry.put_blob(b"held").expect("dry blob");
    assert_eq!(dry.blob(held).expect("read"), Some(b"held".to_vec()));
    assert_eq!(store.blob(held).expect("read"), None);
    // Every other write is refused.
    assert!(matches!(dry.put_placement(&placement(&workload("api"))), Err(StoreError::DryRun { .. })));
    assert!(matches!(dry.remove_placement(&key), Err(StoreError::DryRun { .. })));
    assert!(matches!(dry.append_history(decision(&key, 5, "plan")), Err(StoreError::DryRun { .. })));
    assert!(matches!(dry.record_decision(decision(&key, 5, "plan"), &placement(&key)), Err(StoreError::DryRun { .. })));
    assert!(matches!(dry.put_stability(&Default::default()), Err(StoreError::DryRun { .. })));
    assert!(matches!(dry.put_stored_decisions(&[]), Err(StoreError::DryRun { .. })));
    assert!(matches!(dry.flush(), Err(StoreError::DryRun { .. })));
    // The store is as it was.
    assert_eq!(store.snapshot_versions("a").expect("versions").len(), 1);
    assert!(store.latest_snapshot("b").expect("b").is_none());
    assert_eq!(store.latest_snapshot("a").expect("head").expect("a head").0, before_heads.0);
    assert_eq!(store.placements().expect("placements").len(), 1);
    assert!(store.history(&key).expect("history").is_empty());
}

/// `Store::in_use` tells a store held by another handle (a running daemon) from a free one,
/// and creates nothing.
#[test]
fn in_use_probes_the_lock_without_creating_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    assert!(!Store::in_use(&state));
    assert!(!state.exists(), "the probe created the state directory");
    let store = Store::open(&state).expect("open");
    assert!(Store::in_use(&state));
    drop(store);
    assert!(!Store::in_use(&state));
    let again = Store::open(&state).expect("the probe left no lock behind");
    drop(again);
}

/// A snapshot prepared beforehand is recorded as `record_snapshot` records it, with the
/// freshness it was prepared with in its body; prepared against a head of the same content it
/// carries no body and adds no version.
#[test]
fn a_prepared_snapshot_records_what_record_snapshot_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (prepared_store, plain_store) =
        (Store::open(&dir.path().join("p")).expect("open"), Store::open(&dir.path().join("q")).expect("open"));
    let fresh = Some(crate::model::Freshness {
        polled_at_ms: 900,
        consecutive_failures: 0,
        age_ms: 100,
        confidence_ppm: 990_000,
    });
    let snap = cluster("a", 1);
    let prepared = PreparedSnapshot::of(&snap, None, fresh).expect("prepare");
    assert_eq!(prepared.hash(), snap.content_hash());
    assert!(prepared.body.is_some());
    let with_freshness = ClusterSnapshot { freshness: fresh, ..snap.clone() };
    assert_eq!(
        prepared_store.record_prepared_snapshot(&with_freshness, seen(1_000), prepared).expect("record"),
        (1, true)
    );
    assert_eq!(plain_store.record_snapshot(&with_freshness, seen(1_000)).expect("record"), (1, true));
    let (stored, plain) = (
        prepared_store.latest_snapshot("a").expect("read").expect("head"),
        plain_store.latest_snapshot("a").expect("read").expect("head"),
    );
    assert_eq!(stored.1.freshness, fresh);
    assert_eq!(stored, plain);
    // Against a head of the same content: no body, no new version.
    let again = PreparedSnapshot::of(&snap, Some(snap.content_hash()), fresh).expect("prepare");
    assert!(again.body.is_none());
    assert_eq!(
        prepared_store.record_prepared_snapshot(&with_freshness, seen(2_000), again).expect("record"),
        (1, false)
    );
}
