//! The regression corpus: every bug the simulation found keeps its seed here, with the faults
//! it was shrunk to (their description, so that a change of the generator cannot silently
//! turn an entry into another run), the invariant it violated, the commit on which it was seen
//! to fail, and the commit that fixed it. `tests/it/dst.rs` runs every entry: a fixed one must
//! hold; an open one must still fail on its invariant (so that the fix that makes it hold has
//! to say so here, and the entry shows it failed before).

/// One bug the simulation found.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub seed: u64,
    /// The faults kept (indexes into the seed's schedule; None: all).
    pub keep: Option<&'static [usize]>,
    /// The kept faults as the schedule prints them.
    pub faults: &'static [&'static str],
    /// The invariant it violated.
    pub invariant: u8,
    /// What it found.
    pub found: &'static str,
    /// The commit on which it was seen to violate the invariant (with the world of this
    /// commit's `testbed/dst`).
    pub failed_on: &'static str,
    /// The commit that fixed it (None: open, the entry still fails).
    pub fixed_by: Option<&'static str>,
}

/// The corpus.
pub const CORPUS: &[Entry] = &[
    Entry {
        seed: 21,
        keep: Some(&[0]),
        faults: &["t=35s outage m3 Forbidden for 133s"],
        invariant: 1,
        found: "issue 46 bug 1: the move back to member-003 removed member-001's only Ready replica in the \
                publish that added member-003's (break before make)",
        failed_on: "2fa1973 (main before the fix), with the world as first landed",
        fixed_by: Some("9a9b8f8"),
    },
    Entry {
        seed: 13,
        keep: Some(&[1]),
        faults: &["t=675s WorkloadRebalancer w002,w003,w004"],
        invariant: 1,
        found: "issue 46 bug 1: a WorkloadRebalancer moved w002 off member-001 in the publish that added \
                its new member (its 3 Ready replicas removed, none Ready elsewhere)",
        failed_on: "2fa1973 (main before the fix), with the world as first landed",
        fixed_by: Some("9a9b8f8"),
    },
    Entry {
        seed: 10,
        keep: Some(&[2]),
        faults: &["t=125s outage m4 Dead for 119s (agent cut off too)"],
        invariant: 3,
        found: "issue 46 bug 3: the purge of the files left on member-004 was held by the mass-deletion \
                guard, but the store and the history recorded it (the files stay on disk)",
        failed_on: OPEN_ON,
        fixed_by: Some("5902e89"),
    },
    Entry {
        seed: 7,
        keep: Some(&[3]),
        faults: &["t=205s delete w000,w001"],
        invariant: 3,
        found: "issue 46, the held deletion: both templates deleted, the guard held member-001 and \
                member-002 whole, yet the store dropped the placements (the files stay on disk)",
        failed_on: OPEN_ON,
        fixed_by: Some("5902e89"),
    },
    Entry {
        seed: 6,
        keep: Some(&[0, 3]),
        faults: &["t=85s outage m7 Forbidden for 239s", "t=320s delete w000,w001,w003,w004,w005, back after 237s"],
        invariant: 3,
        found: "a deleted template whose removal the guard held was still failed over and moved back: w005 \
                'moved back to member-007' and dropped the eviction task whose files stay on member-007 (the \
                store kept no task for files on disk, the history a move nothing published)",
        failed_on: "55edf95 with f3e2c5c's checker, before the stability stage froze a held deletion's state",
        fixed_by: Some("f3e2c5c: reconcile::stability::run leaves a workload without a template as it was"),
    },
    Entry {
        seed: 6,
        keep: Some(&[0, 3, 6]),
        faults: &[
            "t=85s outage m7 Forbidden for 239s",
            "t=320s delete w000,w001,w003,w004,w005, back after 237s",
            "t=416s WorkloadRebalancer w002,w005",
        ],
        invariant: 3,
        found: "the store recorded a rebalance the guard held (w002 {001:2, 002:1, 004:1}, its change only on \
                held member-004) with a hand-over task on member-001; the move-back decided from that placement \
                then handed over from member-004, where nothing was ever published (state keeps files on 004, \
                disk has none)",
        failed_on: "c0b6884 (main) with e1bbeae's checker",
        fixed_by: Some(
            "e1bbeae (dst-b): a workload whose change the guard holds whole records nothing and keeps its \
             published engine state (StabilityPass::keep_published); its WorkloadRebalancer result is Pending",
        ),
    },
    Entry {
        seed: 16,
        keep: Some(&[]),
        faults: &[],
        invariant: 6,
        found: "a history record noting an action ('1 replicas Unschedulable on member-003 cannot move') carried \
                the figures of the pass that first decided w001 (member-002's room 2) with the inputs of the pass \
                that noted it (room 1): it replayed `different`",
        failed_on: "c0b6884 (main), no fault at all",
        fixed_by: Some("22be9da: a workload whose record notes an action is decided afresh in that pass"),
    },
    Entry {
        seed: 24,
        keep: Some(&[14, 18, 20]),
        faults: &[
            "t=715s delete w000",
            "t=894s outage m2 Hung for 113s (agent cut off too)",
            "t=1052s delete w000,w001, back after 51s",
        ],
        invariant: 8,
        found: "w001 'evicted 1 replicas from member-002 (cluster-unreachable: … for 30s)' at t=1104 while every \
                pass had seen member-002 healthy since its outage ended at t=1007: an action kept unpublished under \
                the mass-deletion guard was noted when the hold ended, with its old cause",
        failed_on: "c0b6884 + 22be9da (dst-a), before e1bbeae",
        fixed_by: Some(
            "e1bbeae (dst-b: a workload whose change the guard holds whole records nothing, its actions decided again)",
        ),
    },
    Entry {
        seed: 24,
        keep: Some(&[2, 3]),
        faults: &[
            "t=182s kill -9 after publish step 8, restart 3s later",
            "t=202s outage m2 Refused for 41s (agent cut off too)",
        ],
        invariant: 3,
        found: "the pass at t=240 evicted w001 from unreachable member-002 to member-001 and was killed between \
                publish and record; at the restart member-002 was back, the decision (w001 on member-002 alone) \
                removed w001's file and the Namespace file from member-001, and the guard (ratio 0.3) counted the \
                Namespace file's removal (1 of 2): the move was held whole while the store, never told of the \
                completed publish, placed w001 on member-002 only (disk {001, 002})",
        failed_on: "4f6d039 (main)",
        fixed_by: Some(
            "dst-b5: the guard does not count the removal of a Namespace file that follows a placed workload's \
             removal out of the cluster (publish::diff::following_namespaces)",
        ),
    },
    Entry {
        seed: 9,
        keep: Some(&[11, 20]),
        faults: &["t=389s w005 policy -> Static([(1, 2), (2, 3), (3, 3)])", "t=742s outage m2 Dead for 115s"],
        invariant: 1,
        found: "issue 46 bug 2: w005 evicted (Gracefully) from dead member-002 onto member-001 and member-003, \
                whose replicas were not Ready when the grace period (1m) ended: purged from member-002 \
                (GraceElapsed) with nothing Ready anywhere",
        failed_on: "2210dcf with 2fa1973's rule switched off (schedule/stability/workload.rs: `runs_elsewhere` \
                    forced to true)",
        fixed_by: Some("2fa1973: a grace period that ends with nothing Ready elsewhere keeps the old copy"),
    },
    Entry {
        seed: 18,
        keep: Some(&[22, 23]),
        faults: &["t=1177s outage m2 Refused for 70s (agent cut off too)", "t=1194s w001 scaled to 4"],
        invariant: 4,
        found: "issue 46 bug 4: a scale-up 17 s after member-002 went Unreachable gave it new replicas (1 -> 4) \
                before its toleration ended",
        failed_on: "2210dcf with de67ef1's rule switched off (schedule::health_taint returning None)",
        fixed_by: Some("de67ef1: a member seen NotReady or Unreachable keeps its replicas and takes no new ones"),
    },
    Entry {
        seed: 60,
        keep: Some(&[18, 22, 23]),
        faults: &[
            "t=531s outage m1 Forbidden for 293s",
            "t=790s outage m4 Forbidden for 167s",
            "t=791s outage m0 Hung for 202s",
        ],
        invariant: 1,
        found: "a staggered storm (m1 lost at 531 s, m4 and m0 260 s later: 3 of 5, more than one toleration \
                apart) is held from the pass it is a majority and released at 830 s when m1 answers (invariant 8 \
                holds; with c6abb91's rule switched off — a storm only when the majority went within one \
                toleration — member-004 is evicted at 830 s, 0 s after the storm's end, and the check fails). \
                Then w002 (purgeMode Directly) is evicted from member-004 at 950 s ('purged … Directly' noted, \
                nothing removed: no other member fits); member-004 is Ready again at 957 s, yet at 1050 s the \
                stale task moves w002 off it, removing its 6 Ready replicas with none Ready elsewhere",
        failed_on: "2210dcf (main)",
        fixed_by: Some(
            "dst-b5: a Directly eviction for the member's health whose workload never left ends when the member is \
             Ready again (schedule/stability/workload.rs purge)",
        ),
    },
    Entry {
        seed: 25,
        keep: Some(&[0]),
        faults: &["t=124s delete w000,w002,w003,w005,w009, back after 80s"],
        invariant: 6,
        found: "the guard held member-003 (5 of 11 templates deleted) and w001, on member-003, was recorded again for \
                its 'held' note with the decision an earlier pass made (and this one reused) but this pass's replay \
                inputs: the replay gave member-003 room 59 where the record says 49",
        failed_on: "4f6d039 (main)",
        fixed_by: Some(
            "dst-a5: a reused decision recorded for a note stores the inputs of the pass that made it \
             (CachedDecision::origin; restored: its placement's record)",
        ),
    },
    Entry {
        seed: 49,
        keep: Some(&[11]),
        faults: &["t=599s w000 scaled to 3"],
        invariant: 1,
        found: "w000's replica on member-000 could not run (Unschedulable): application failover (purgeMode Never) \
                moved it to member-002, and 15 s later it was moved back to member-000 ('Ready for 2m 30s; \
                stable_for 1m': the member had been healthy all along), failed over again 135 s later, every 150 s; \
                after the scale-up the pass at 735 s released the hand-over kept on member-002 (GraceElapsed) and \
                moved back again, with nothing Ready elsewhere",
        failed_on: "a87f671 (main)",
        // 32ef560: no move-back after an application failover; its member stays out while the
        // eviction task lasts, then takes part in decisions again (stability/workload.rs move_back).
        fixed_by: Some("32ef560"),
    },
    Entry {
        seed: 153,
        keep: Some(&[14, 17]),
        faults: &["t=664s outage m2 Refused for 70s (agent cut off too)", "t=823s node 3 of m1 to 10%"],
        invariant: 1,
        found: "w005 evicted from member-002 (unreachable) to member-001 at 720 s, member-002's 3 replicas kept past \
                their grace (none Ready on member-001); member-001 shrank and w005 failed over off it (application \
                failover, Never; nowhere else to go) at 870 s. At 900 s member-002 had been Ready for stable_for: \
                the move-back ended its task and noted 'moved back to member-002', but the decision placed nothing \
                there (Unschedulable) and the publish removed member-002's kept copy, its last 3 Ready replicas",
        failed_on: "7038197 (main)",
        // A move-back is one only when its decision places replicas on the member: otherwise the
        // task and its kept files are given back, no note (reconcile::stability settle_move_backs).
        fixed_by: Some("c7aa089"),
    },
    Entry {
        seed: 5,
        keep: Some(&[10, 14]),
        faults: &[
            "t=175s storm m127,m116,m112,m32,m14,m54,m17,m70,m125,m68,m122,m120,m108,m91,m28,m52,m124,m\
             1,m134,m62,m90,m18,m121,m77,m9,m86,m137,m55,m93,m20,m89,m119,m35,m101,m6,m105,m97,m72,m49,\
             m85,m123,m88,m19,m130,m39,m131,m69,m58,m102,m78,m57,m12,m135,m27,m95,m51,m21,m61,m111,m2,m\
             36,m40,m25,m48,m29,m100,m4,m31,m41,m16 Refused 3s apart for 108s",
            "t=201s storm m23,m65,m125,m87,m132,m93,m103,m95,m92,m25,m90,m61,m42,m119,m97,m124,m112,m11\
             ,m51,m59,m2,m60,m130,m57,m115,m102,m120,m27,m110,m116,m101,m53,m54,m28,m126,m20,m81,m4,m94\
             ,m14,m84,m72,m40,m55,m79,m17,m16,m19,m73,m111,m7,m77,m69,m44,m52,m47,m38,m85,m63,m129,m10,\
             m36,m91,m76,m62,m123,m108,m3,m109,m78 Dead 0s apart for 60s",
        ],
        invariant: 1,
        found: "w112 (1 replica, static weights 3:3:3) failed over from member-031 to member-055 in the first storm; \
                with move_back = false, member-031 took part in its decisions again once Ready for stable_for, and \
                the decision at 630 s put the replica back there by the weights, removing member-055's only Ready \
                replica in the same publish (a plain decision: no move-back, no hand-over)",
        failed_on: "7038197 (main)",
        // A decision made with a member that rejoins the workload's decisions hands over from
        // the members it leaves (HandOver::Rejoin, stability::handing_over).
        fixed_by: Some("b0e5d29 and 896a14f"),
    },
    Entry {
        seed: 76,
        keep: Some(&[1]),
        faults: &["t=230s outage m2 Dead for 135s (agent cut off too)"],
        invariant: 1,
        found: "w003 on {member-000: 1, member-002: 4}; member-002 lost and evicted at 300 s: the failover's decision \
                placed the whole workload on member-004 and the publish that added member-004's 5 replicas removed \
                member-000's, its only Ready one (the eviction kept only member-002's files)",
        failed_on: "c7aa089 (main)",
        // A failover's decision hands over from the healthy members it leaves or shrinks on, as
        // a move-back does (HandOver::Failover, stability::handing_over; Reason::Failover).
        fixed_by: Some(
            "dst-c7 (0a9702c), landed as one rule with seed 5's: reconcile::stability::handing_over by \
             Directive::hand_over (HandOver::Failover)",
        ),
    },
    Entry {
        seed: 106,
        keep: Some(&[2]),
        faults: &["t=189s outage m8 Hung for 133s"],
        invariant: 3,
        found: "w031 (8 replicas) evicted from member-008; a move-back decided afresh each pass that placed nothing \
                there, and at 450 s one shrank member-001 from 3 to 2, handing over (its 3-replica file kept); the \
                hand-over ended at 510 s in a pass whose fresh decision was Unschedulable, which kept the previous \
                placement's files as they were on disk: 3 replicas on member-001 under a placement of 2",
        failed_on: "3fb97c3 and 732f281 (main)",
        // A decision that keeps its previous placement writes the placement's file on the
        // members whose task ended this pass (Directive::released, decide::released_on).
        fixed_by: Some("dst8 after 732f281: reconcile::stability::Directive::released, decide::released_on"),
    },
    Entry {
        seed: 106,
        keep: Some(&[18, 19]),
        faults: &["t=1214s node 3 of m7 to 25%", "t=1220s w036 scaled to 1"],
        invariant: 1,
        found: "w036 on {member-005: 1, member-007: 2}, member-007's replicas not Ready after its node shrank; scaled \
                from 3 to 1 at 1220 s, the decision {member-007: 1} removed member-005's replica, its only Ready one, \
                in the publish that shrank member-007 (a plain decision: no hand-over)",
        failed_on: "a606f1d, 54734b9 and 1422b82 (main), and dst9 with the availability floor",
        // A race of observation: the pass at 1221 s (the scale's policy-change pass) read the
        // poll of 1200 s, member-007's 2 replicas Ready; its node shrank at 1214 s and they
        // crashed, unseen until the poll of 1230 s. The floor of stability::handing_over
        // (HandOver::Moved: hand over only when the kept members run no Ready replica) saw
        // min(2, 1) Ready kept and published at once. No rule on what a pass observes holds it
        // (a hand-over from every member a decision leaves would, branch dst8-moved, at the cost
        // of every scale-down waiting for Ready; Karmada races the same way). The promise is by
        // what fedsched observed (docs/guide/failures.md): the checker judges a removal by the
        // fresh observation of the pass that published it (check::Break), and still fails one
        // published while that view showed nothing Ready on the members it keeps.
        fixed_by: Some("dst10a after 1422b82: the checker, check::Break::at_publish (what the pass observed)"),
    },
    Entry {
        seed: 112,
        keep: Some(&[6, 8, 9]),
        faults: &[
            "t=548s storm m21,m2,m17,m29,m4,m26,m19,m12,m0,m28,m22,m1,m13,m5,m10,m20 Refused 0s apart for 146s",
            "t=598s w010 policy -> Affinities { primary: [19], backup: [21], duplicated: false }",
            "t=654s outage m5 Dead for 165s",
        ],
        invariant: 1,
        found: "w010's policy edited during a storm to clusterAffinities [member-019] then [member-021]; it stayed on \
                member-017 until member-019 could take it, and the decision at 955 s moved its 8 Ready replicas from \
                member-017 to member-019 in one publish, none Ready there yet (a plain decision: no hand-over)",
        failed_on: "3fb97c3, a606f1d and 54734b9 (main)",
        // As seed 106 [18, 19]: member-017's 8 Ready replicas stay until member-019's are.
        fixed_by: Some("dst9 after 54734b9: HandOver::Moved, the floor of stability::handing_over"),
    },
    Entry {
        seed: 127,
        keep: Some(&[18, 20]),
        faults: &["t=853s delete w005", "t=1033s leader change"],
        invariant: 6,
        found: "[ha] first invariant 3: w005's template deleted at 853 s, its removal held by the mass-deletion guard \
                (files stay on member-001 and member-006, the leader's store keeps its placement), but the published \
                summary (.fedsched/placements) no longer lists it: the takeover at 1033 s adopted the summary and the \
                new leader's store places it nowhere while its files stay. That is fixed (dst9 after 862f24b: \
                publish::SummaryPlan::removals, render::summary::with_items, the held removal's entry kept); the run \
                now failed invariant 6 at its end (t=1440 s), seed 74's bug: the takeover's adopted placements \
                were in no history record, so the replay of the new leader's first pass rebuilt none and decided \
                w000 with member-002's room 29 where the record says 38 (fedsched dst --seed 127 --keep 20 alone)",
        failed_on: "3fb97c3, a606f1d and 862f24b (main): invariant 3; with dst9's fix, 57559bb (main): invariant 6",
        // Invariant 3 holds since dst9; invariant 6 since each adopted (or removed) placement
        // has a history record of its own, the replays of later passes start from it.
        fixed_by: Some("dst74 after 57559bb: reconcile::adopt::adopt_published, adoption_record"),
    },
    Entry {
        seed: 74,
        keep: Some(&[13]),
        faults: &["t=1211s leader change"],
        invariant: 6,
        found: "[ha] the takeover at 1211 s adopted the published summary into the new leader's store but wrote no \
                history record, so the replay of its first pass (trigger takeover) rebuilt the placements it started \
                from out of this store's records alone (none): 4 decisions replayed different (w000: room on \
                member-002 37 → 30, its own replicas not deducted)",
        failed_on: "54734b9 (release, fedsched dst --seed 74 --keep 13) and 57559bb (main)",
        fixed_by: Some("dst74 after 57559bb: reconcile::adopt::adopt_published, adoption_record"),
    },
    Entry {
        seed: 1_000_019,
        keep: Some(&[2]),
        faults: &["t=216s w000 never Ready for 73s"],
        invariant: 6,
        found: "issue 52: w000's new image rolled out in stages (canary first, the others kept the previous \
                version); the replay of a pass during the rollout rendered the new version on member-002 too: the scratch \
                store it replays in had no rollout state, so the rollout stage started from none (the version \
                settled everywhere)",
        failed_on: "3fb97c3 and 54734b9 (main)",
        // A pass stores the rollouts' states it started from (StoredPass::rollouts, a list of
        // state blobs); the replay seeds its scratch store with them.
        fixed_by: Some("roll9 after 54734b9: reconcile::rollout::store_states, reconcile::replay::replay_pass"),
    },
    Entry {
        seed: 1_000_013,
        keep: Some(&[1]),
        faults: &["t=183s w000 new image"],
        invariant: 9,
        found: "issue 52: a world whose wave drew only the canary (wave `clusterNames: []`); fedsched put member-002 \
                in the wave, as Karmada's ClusterAffinity with no constraint matches every cluster, and released it \
                after the canary's one gate; the checker's model put it in the final stage (two gates) — the \
                model, not fedsched, was wrong",
        failed_on: "3fb97c3 and 54734b9 (main)",
        fixed_by: Some("roll9 after 54734b9: testbed::dst::spec::Rollout::stage_of (an empty wave takes the rest)"),
    },
    Entry {
        seed: 196,
        keep: Some(&[3, 6, 8]),
        faults: &[
            "t=393s delete w002,w003,w005,w006,w007",
            "t=606s WorkloadRebalancer w000,w005,w008",
            "t=653s leader change",
        ],
        invariant: 3,
        found: "[ha] five templates deleted at 393 s, the mass-deletion guard holding five members; the WorkloadRebalancer at \
                606 s decided w000 afresh onto held member-000 and the guard held its move whole (its file stays on \
                member-005, the leader's store keeps member-005), but the published summary listed the decision, \
                member-000: the takeover at 653 s adopted it, and the new leader's store placed w000 where nothing was \
                published",
        failed_on: "1422b82 (main, release: fedsched dst --seed 196 --keep 3,6,8)",
        // A workload whose change the guard held whole keeps its published entry in the
        // summary, as its files (publish::diff, render::summary::with_published_entries).
        fixed_by: Some("dst10b after 1422b82: the summary entry of a held move is the one on the disk"),
    },
    Entry {
        seed: 170,
        keep: Some(&[2, 3, 4, 5, 6, 7]),
        faults: &[
            "t=129s storm m2,m0,m3 Hung 14s apart for 195s",
            "t=157s WorkloadRebalancer w002,w003",
            "t=199s delete w001,w007, back after 79s",
            "t=306s outage m1 Refused for 227s (agent cut off too)",
            "t=323s w003 crashes on m0 for 210s",
            "t=330s kill -9 after publish step 11, restart 8s later",
        ],
        invariant: 1,
        found: "w003 rebalanced to {member-001: 7, member-003: 1}, member-002 handing over; the daemon killed at 342 s \
                and started again at 350 s with member-001 (Refused) and member-003 (Hung) unreachable: its first pass \
                released member-002's hand-over (GraceElapsed) on member-001's Ready replicas as the store's last \
                snapshot of it has them (this process had not polled it yet); the checker read only the process's \
                live view, which had no observation of member-001, and saw nothing Ready elsewhere",
        failed_on: "3fb97c3, 3e74e9d and 1422b82 (main; release, the seed whole)",
        // The checker was wrong: the grace rule (never purged while it runs nowhere else) held by
        // what the pass decided on. It reads the pass's snapshots now (check::decided_ready).
        fixed_by: Some("dst10a after 1422b82: the checker, check::decided_ready (the pass's own snapshots)"),
    },
    Entry {
        seed: 165,
        keep: Some(&[16, 20]),
        faults: &["t=922s delete w000,w004,w005,w006,w008,w009", "t=1115s w003 scaled to 2"],
        invariant: 2,
        found: "six templates deleted at 922 s, the mass-deletion guard holding member-004 and member-005 whole; w003 \
                (5 replicas on them) scaled to 2 at 1115 s: the scale-down is held whole with them (held_moves; the \
                store keeps the published placement), and the checker called its 5 of 2 a double run",
        failed_on: "3fb97c3, 3e74e9d and 1422b82 (main; release, the seed whole at 1112 s: w001 9 of 3)",
        // Not a double run: nothing of the workload changed (invariant 3 checks it). The checker
        // excuses a change the guard holds whole (check::after_pass, held_moves).
        fixed_by: Some("dst10a after 1422b82: the checker, a change held whole by the guard (invariant 2)"),
    },
    Entry {
        seed: 1_000_020,
        keep: Some(&[7, 30]),
        faults: &["t=344s delete w002,w003,w004,w005", "t=1323s w001 scaled to 6"],
        invariant: 2,
        found: "four of six templates deleted, the guard holding every member; w001 scaled from 9 to 6 at 1323 s, the \
                scale-down held whole (seed 165's case on a world with a rollout)",
        failed_on: "1422b82 (main, release)",
        fixed_by: Some("dst10a after 1422b82: the checker, a change held whole by the guard (invariant 2)"),
    },
    Entry {
        seed: 199,
        keep: Some(&[1, 2, 3, 7]),
        faults: &[
            "t=91s node 1 of m0 to 50%",
            "t=170s outage m0 Hung for 163s",
            "t=224s storm m0,m1 Dead 14s apart for 218s",
            "t=491s w000 scaled to 7",
        ],
        invariant: 2,
        found: "w000 (10 replicas, all on member-000) evicted from member-000 at 225 s with nowhere else to go: it \
                stayed placed there, its task kept past the grace; scaled to 7 at 491 s, every decision failed (0/3 \
                clusters: member-000 left out of its decisions by the task), so 10 ran for 7 with the excuse of a \
                kept task; member-000 Ready again, the move-back decided afresh, its own 10 pods filling member-000 \
                ('available replicas 5 are not enough to schedule 7'), kept the previous placement and was noted \
                'moved back' all the same (the task ended, 10 of 7 published with no task: invariant 2 at 510 s)",
        failed_on: "3fb97c3, 3e74e9d and 1422b82 (main; release, the seed whole at 720 s: 10 of 6)",
        // A graceful eviction whose workload never left ends once the member is Ready again, as a
        // Directly one did (stability::workload::purge, `recovered`): the member takes part in
        // the workload's decisions again and the scale-down is published (member-000: 7 at
        // 510 s). And a move-back whose decision failed is no move-back (settle_move_backs:
        // Scheduled only), as docs/guide/failures.md step 4 says.
        fixed_by: Some("dst10a after 1422b82: stability::workload::purge (recovered), reconcile settle_move_backs"),
    },
    Entry {
        seed: 1_000_046,
        keep: Some(&[5, 6]),
        faults: &[
            "t=222s kill -9 after publish step 6, restart 6s later",
            "t=256s storm m5,m10,m1,m13,m9,m12,m0,m3 Refused 12s apart for 67s",
        ],
        invariant: 8,
        found: "the daemon killed in its pass at 300 s (after publish step 6), whose poll saw member-013 Refused (cut at \
                292 s); it started again at 306 s and evicted w000 from member-013 at 330 s 'for 30s', counted from the \
                killed pass's observation, which the recovery completed into the store; the checker counted from the \
                restart's first pass (306 s) and called it 24 s of a 30 s toleration",
        failed_on: "1422b82 (the seed whole, at 300 s) and 0b69d8a (main; --keep 5,6, at 330 s)",
        // The checker was wrong, not fedsched: a killed pass observed its members too. The world
        // counts its view in the members' health timelines (World::pass, Passed::Killed).
        fixed_by: Some("dst11b after 0b69d8a: the world, a killed pass's view counts for invariant 8"),
    },
    Entry {
        seed: 181,
        keep: None,
        faults: &[
            "t=178s outage m66 Dead for 180s",
            "t=182s m46 gets a node",
            "t=197s w024 never Ready for 157s",
            "t=203s storm m1,m67,m32,m56,m68,m40,m17,m43,m34,m51,m12,m24,m59,m60,m49,m23,m13,m27,m16,m25,m0,m5,m4,m15,m\
             69,m18,m2,m39,m44,m26,m7,m57,m3,m63,m6,m35 Dead 8s apart for 135s",
            "t=298s node 0 of m34 NotReady for 83s",
            "t=299s storm m31,m22,m56,m11,m42,m66,m17,m37,m61,m8,m67,m40,m43,m10,m6,m69,m13,m51,m41,m30,m5,m53,m38,m64,m\
             23,m18,m0,m52,m1,m27,m60,m45,m54,m34,m36,m3 Forbidden 15s apart for 125s",
            "t=385s leader change",
            "t=437s delete w000,w001,w002,w003,w004,w005,w006,w007,w008,w009,w010,w011,w012,w013,w014,w015,w016,w017,w0\
             18,w020,w021,w022,w023,w024,w026,w027,w028,w029,w030,w031,w032,w033,w034,w035,w036,w037,w038,w039,w040,w04\
             1,w042,w043,w044,w045,w046,w047,w048,w049,w051,w054,w055,w056,w057,w058,w059,w060,w061,w062,w063,w064,w065\
             ,w066,w067,w068,w069,w070,w071,w072,w073,w075,w076,w078,w079,w080,w081,w082,w083,w084,w085,w086,w087,w088,\
             w089,w090,w091,w092,w093,w094,w095,w096,w097,w098,w099,w100,w101,w102,w103,w105,w106,w107,w108,w109",
            "t=477s leader change",
            "t=530s outage m23 Dead for 153s (agent cut off too)",
            "t=540s kill -9 after publish step 6, restart 5s later",
            "t=817s w095 scaled to 4",
            "t=836s outage m37 Dead for 100s (agent cut off too)",
            "t=862s node 1 of m2 to 25%",
            "t=998s outage m21 Refused for 227s (agent cut off too)",
            "t=1021s delete w029,w033,w034,w046,w062,w071,w075,w086,w091,w092,w094,w095,w097",
            "t=1272s ClusterTaintPolicy for 426s",
            "t=1448s ClusterTaintPolicy for 332s",
            "t=1555s node 1 of m53 to 25%",
        ],
        invariant: 1,
        found: "[ha] the leader evicted workloads from the members the staggered storms took, keeping their files \
                (graceful eviction tasks), some past their grace period with nothing Ready elsewhere; the published \
                summary carried the placements but not the tasks, so the new leader at 385 s had none, and its first \
                pass removed every kept copy: w081's 5 Ready replicas on member-056, its last ones (invariant 1 at \
                395 s; shrunk to --keep 5,6, the takeover removed 36 files, w063's last 5 Ready replicas on member-022 \
                among them, invariant 1 at 405 s)",
        failed_on: "1422b82 and 0b69d8a (main; release, fedsched dst --seed 181, and --keep 5,6)",
        // Each summary entry lists the graceful eviction tasks the pass leaves (those whose files
        // stay: WorkloadStability::kept_tasks, as a ResourceBinding's spec.gracefulEvictionTasks);
        // a takeover adopts them (reconcile::adopt::adopt_tasks).
        fixed_by: Some("dst11a after 0b69d8a: the summary carries the kept eviction tasks, a takeover adopts them"),
    },
    Entry {
        seed: 196,
        keep: None,
        faults: &[
            "t=67s storm m1,m3,m2,m4 Hung 13s apart for 116s",
            "t=297s w001 policy -> Static([(0, 2), (5, 3)])",
            "t=348s w007 policy -> Aggregated",
            "t=393s delete w002,w003,w005,w006,w007",
            "t=431s WorkloadRebalancer w006,w008",
            "t=500s kill -9 after publish step 12, restart 10s later",
            "t=606s WorkloadRebalancer w000,w005,w008",
            "t=625s kill -9 after publish step 11, restart 0s later",
            "t=653s leader change",
        ],
        invariant: 3,
        found: "[ha] the whole seed, once its [3, 6, 8] entry was fixed: w006 moved back to member-004 at 340 s, the \
                hand-over keeping its previous file on member-006 (2 replicas, the placement 1 there); its template \
                deleted at 393 s, the mass-deletion guard held the removal, the old leader's store keeping the task; \
                the takeover at 653 s adopted the published placement without the task, so the new leader's store \
                placed 1 replica on member-006 where the disk has 2",
        failed_on: "0b69d8a (main; release, fedsched dst --seed 196)",
        fixed_by: Some("dst11a after 0b69d8a: the summary carries the kept eviction tasks, a takeover adopts them"),
    },
    Entry {
        seed: 1_000_025,
        keep: None,
        faults: &[
            "t=122s w026 new image",
            "t=139s w018 policy -> Affinities { primary: [6], backup: [8, 15], duplicated: true }",
            "t=214s leader change",
            "t=224s outage m14 Hung for 73s (agent cut off too)",
            "t=339s w017 new image",
            "t=366s outage m15 Refused for 87s (agent cut off too)",
            "t=530s kill -9 after publish step 1, restart 10s later",
            "t=572s WorkloadRebalancer w010,w017",
            "t=605s delete w021",
            "t=617s leader change",
            "t=635s kill -9 after publish step 4, restart 5s later",
            "t=641s outage m3 Forbidden for 91s",
            "t=668s leader change",
            "t=700s agent of m13 lags 67s for 92s",
            "t=707s ClusterTaintPolicy for 136s",
        ],
        invariant: 3,
        found: "[ha] w018's move at 140 s (instance a leading) kept its previous files on member-004, -010, -013, -014 \
                and -016 (hand-overs: its pods never Ready on member-006); b led from 214 s without those tasks (the \
                summary carried none) and the copies left the disk; at a's takeover at 617 s its store still held its \
                own stale tasks of its first term: it said the files 'stay' and its store kept files the disk no longer \
                had (invariant 3). With the tasks in the summary (adopted, a's own replaced) the seed then failed \
                invariant 8 at 665 s: w017 evicted from member-003 'for 20s' of a 16 s toleration, counted from the pass \
                killed at 645 s, whose poll saw member-003 Forbidden (cut at 641 s); the checker counted from the \
                restart's first pass (650 s) — seed 1000046's checker error",
        failed_on: "0b69d8a (main; release, the seed whole: invariant 3 at 617 s); invariant 8 at 665 s with dst11a's \
                    tasks fix before c93754e (debug)",
        // Invariant 3: the summary carries the kept eviction tasks, a takeover replaces its own
        // by them (reconcile::adopt::adopt_tasks). Invariant 8: the checker, a killed pass's view
        // counts (c93754e, World::pass, Passed::Killed).
        fixed_by: Some(
            "dst11a after 0b69d8a (the summary's eviction tasks) with dst11b's c93754e (a killed pass's view)",
        ),
    },
    Entry {
        seed: 171,
        keep: Some(&[0, 8, 14, 18]),
        faults: &[
            "t=41s node 2 of m7 to 50%",
            "t=299s w005 policy -> Duplicated([0, 2])",
            "t=515s w044 policy -> Dynamic([4, 7])",
            "t=577s w005 policy -> Affinities { primary: [1, 4], backup: [6, 8], duplicated: false }",
        ],
        invariant: 2,
        found: "w005 Duplicated on member-000 and member-002 (10 each; member-000's 10 Pending Unschedulable since \
                330 s: no room), its policy edited at 577 s to Divided clusterAffinities [member-001, member-004] then \
                [member-006, member-008], none of which has room: the decision is Unschedulable ('clusters available \
                replicas 0 are not enough to schedule 10', Karmada's message and rule: a binding too few of whose \
                replicas fit keeps its clusters) and the workload keeps its previous files (docs/guide/output.md); the checker \
                counted 20 published replicas for 10 as a double run, though member-000's 10 run nowhere. No kill, no \
                hand-over task: the whole seed's kill and restart at 570-580 s are not needed",
        failed_on: "1422b82 and 0b69d8a (main; release, the seed whole at 580 s: 20 of 10)",
        // The checker was wrong: invariant 2 counts the replicas a workload runs, its published
        // ones less those its members' polls saw Pending Unschedulable
        // (check::unschedulable_published). The copies count once they run.
        fixed_by: Some("dst11b after 0b69d8a: the checker, invariant 2 counts what runs"),
    },
    Entry {
        seed: 1_000_045,
        keep: Some(&[2, 13, 23]),
        faults: &[
            "t=275s delete w000,w001,w002,w003,w006,w007,w008",
            "t=558s outage m4 Hung for 128s",
            "t=1149s delete w000,w001,w002,w003,w004,w005,w006,w007,w008, back after 98s",
        ],
        invariant: 8,
        found: "seven of nine templates deleted at 275 s, the mass-deletion guard holding every member; member-004 lost \
                at 558 s, w004 evicted from it at 605 s with nowhere to go (Unschedulable: it stayed placed there), the \
                eviction's note kept unpublished under the guard; member-004 Ready again at 686 s, the eviction task \
                ended at 690 s (it never took effect) but its note stayed, and when the templates came back at 1247 s \
                the hold ended and the history noted 'evicted 7 replicas from member-004 (… for 30s)' at 1248 s, a \
                member every pass had seen healthy for 9 minutes",
        failed_on: "1422b82 and 0b69d8a (main; release, the seed whole at 1248 s)",
        // An eviction that ends because its member is Ready again before the workload left
        // drops the notes the guard kept unpublished for it (stability::workload::purge,
        // `recovered`).
        fixed_by: Some(
            "dst11b after 0b69d8a: stability::workload::purge drops a recovered eviction's unpublished notes",
        ),
    },
    Entry {
        seed: 106,
        keep: Some(&[2, 4, 7, 9, 10, 11, 12, 14, 15, 16, 18, 19, 20]),
        faults: &[
            "t=189s outage m8 Hung for 133s",
            "t=509s outage m5 Refused for 88s",
            "t=665s delete w000,w002,w003,w005,w006,w007,w009,w010,w011,w013,w015,w016,w018,w019,w022,w024,w026,w027,w030,w032,w033,w034,w035,w037,w038,w039, back after 92s",
            "t=722s w032 policy -> Dynamic([])",
            "t=730s outage m0 Dead for 82s (agent cut off too)",
            "t=896s restart",
            "t=966s restart",
            "t=991s w033 scaled to 7",
            "t=1074s node 3 of m2 NotReady for 66s",
            "t=1115s restart",
            "t=1214s node 3 of m7 to 25%",
            "t=1220s w036 scaled to 1",
            "t=1236s outage m5 Dead for 38s (agent cut off too)",
        ],
        invariant: 4,
        found: "w033's move-back to member-008 was decided afresh every pass and placed nothing there; at 1200 s one \
                left member-005, handing over (its 1-replica file kept), at 1230 s the next placed 2 there while the \
                task kept the file; member-005 was lost at 1236 s and at 1260 s the task's grace period passed: the \
                release wrote the placement's 2-replica file on member-005, unreachable (the fresh decision was \
                Unschedulable, decide::released_on)",
        failed_on: "0b69d8a (main, release; the seed whole at 1260 s)",
        // The end of a graceful task whose member takes no new replicas now (not Ready or
        // unreachable, schedule::health_taint) while its placement there has more replicas than
        // the kept file is held until the member is Ready (Held::MemberNotReady).
        fixed_by: Some("dst11c after 0b69d8a: reconcile::stability::hold_releases_onto_unready"),
    },
];

/// Where the bug-3 entries were seen to fail: main at 2fa1973 and at f19e64c (before 5902e89),
/// with the world as first landed.
const OPEN_ON: &str = "2fa1973 and f19e64c, with the world as first landed";
