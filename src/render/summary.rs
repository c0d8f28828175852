//! `OUT/.fedsched/placements/`: the decisions in machine-readable form, one
//! [`placement_json`] per workload, each on a line of its own (compact JSON), in
//! [`SHARDS`] shard files (`00.json` … `ff.json`, every one always present, each a document
//! `{"placements":[…]}` listing its workloads in store order). A workload's shard is a stable
//! hash of its key ([`shard_of`]), so that an edit rewrites one small file instead of the
//! whole summary (11 MB at 10,000 workloads). Deterministic (no times), so an unchanged fleet
//! does not rewrite it. The pass builds each shard from per-workload fragments
//! ([`summary_item`], [`summary_into`]) so that only changed decisions are serialised again
//! and only their shards joined again. Earlier versions wrote one file,
//! `.fedsched/placements.json`, in the same document format: [`read_published`] reads either.
//! `/api/v1/workloads` and `fedsched get` answer the same placements with more columns
//! ([`crate::views::workloads`]).
//!
//! A shard also lists, after its placements, the progressive rollouts of its workloads
//! (`"rollouts"`, one [`rollout_item`] a line; absent from a shard that has none, so a fleet
//! without a RolloutPolicy publishes the same bytes as before): each rollout's course (stage
//! released, gate timings, failures, approvals at its start, the previous and the new
//! version's object), so that a new leader adopts it with the placements
//! ([`crate::reconcile::adopt_published`]) and continues at the same stage and gate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::policy::{ObjectKey, PolicyRef};
use crate::schedule::Outcome;
use crate::schedule::rollout::RolloutState;
use crate::schedule::stability::EvictionTask;

/// What the summary shows of one decision (borrowed from the stored placement:
/// `store::PlacementRecord::summary`).
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    pub workload: &'a ObjectKey,
    pub policy: Option<&'a PolicyRef>,
    pub outcome: &'a Outcome,
    /// Cluster → replicas (None: not divided, e.g. a Duplicated workload without replicas).
    pub targets: &'a BTreeMap<String, Option<i32>>,
    /// Cluster → the file written there.
    pub files: &'a BTreeMap<String, String>,
    /// The `clusterAffinities` term in force (shown only when the placement has one).
    pub affinity: Option<&'a str>,
    /// Its graceful eviction tasks (evictions and hand-overs whose files stay until purged),
    /// as a ResourceBinding's `spec.gracefulEvictionTasks` carries them (shown only when it
    /// has some): a new leader adopts them with the placement (`[ha]`, issue 46).
    pub tasks: &'a [EvictionTask],
}

/// Number of shard files of the summary. Fixed (not a function of the fleet's size), so that
/// a workload's shard never changes: 256 files of ≈ 43 KB at 10,000 workloads.
pub const SHARDS: usize = 256;

/// Directory under the output's `.fedsched/` holding the shard files.
pub const SHARD_DIR: &str = "placements";

/// The single summary file earlier versions wrote under `.fedsched/` (read at takeover when
/// no shard directory exists; removed by the first full publish of this version).
pub const LEGACY_FILE: &str = "placements.json";

/// The shard of a workload: the top byte of the FNV-1a hash (64 bit) of its API group, kind,
/// namespace and name, each followed by a unit separator (0x1f). Stable across builds,
/// platforms and releases.
pub fn shard_of(key: &ObjectKey) -> Shard {
    use crate::util::hash::{FNV1A64_START, fnv1a64_more};
    let parts = [key.group(), key.kind.as_str(), key.namespace.as_deref().unwrap_or(""), key.name.as_str()];
    let h = parts.iter().fold(FNV1A64_START, |h, part| fnv1a64_more(fnv1a64_more(h, part.as_bytes()), &[0x1f]));
    Shard((h >> 56) as u8)
}

/// A shard of the summary, by number: the index of its document in [`Shards`] (one space,
/// `0..SHARDS`, whatever keeps a shard: the plan's changed and dirty shards, a rollout's entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shard(u8);

// A shard is a byte: the top byte of a workload's hash.
const _: () = assert!(SHARDS == 1 << u8::BITS);

impl Shard {
    /// Every shard, in order.
    pub fn all() -> impl Iterator<Item = Shard> {
        (0..=u8::MAX).map(Shard)
    }

    /// Its index in [`Shards`].
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// The file name of shard `i` (`00.json` … `ff.json`).
pub fn shard_name(i: Shard) -> String {
    format!("{:02x}.json", i.0)
}

/// Whether `name` is a shard's file name ([`shard_name`]: two lowercase hex digits, `.json`).
pub fn is_shard_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 7 && name.ends_with(".json") && b[..2].iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The summary of a pass: every shard's document, by shard number ([`SHARDS`] of them).
/// Shards are shared (`Arc`) between the passes that did not change them and the publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shards(pub Vec<Arc<String>>);

impl Shards {
    /// Every shard empty (`{"placements":[]}`).
    pub fn empty() -> Self {
        let empty = Arc::new(EMPTY.to_string());
        Shards(vec![empty; SHARDS])
    }

    /// The shards of `placements` (in store order; each shard lists its own in that order)
    /// and of `rollouts` ([`rollout_item`]s with their shard, in the order given).
    pub fn of<'a, 'r>(
        placements: impl Iterator<Item = Placement<'a>>,
        rollouts: impl Iterator<Item = (Shard, &'r str)>,
    ) -> Self {
        let mut items: Vec<Vec<String>> = vec![Vec::new(); SHARDS];
        for p in placements {
            items[shard_of(p.workload).index()].push(summary_item(&p));
        }
        let mut courses: Vec<Vec<&str>> = vec![Vec::new(); SHARDS];
        for (shard, item) in rollouts {
            courses[shard.index()].push(item);
        }
        Shards(
            items
                .iter()
                .zip(&courses)
                .map(|(list, courses)| {
                    let mut text = String::new();
                    summary_into(&mut text, &list.iter().map(String::as_str).collect::<Vec<_>>(), courses);
                    Arc::new(text)
                })
                .collect(),
        )
    }

    /// The shards whose bytes differ from `other`'s (by position; all when the counts differ).
    pub fn changed_from(&self, other: &Shards) -> Vec<Shard> {
        Shard::all()
            .zip(&self.0)
            .filter(|(i, mine)| other.0.get(i.index()).is_none_or(|o| !Arc::ptr_eq(o, mine) && **o != ***mine))
            .map(|(i, _)| i)
            .collect()
    }
}

/// An empty shard's bytes.
const EMPTY: &str = "{\"placements\":[]}\n";

/// What a summary lists: the placements, and the rollouts of the workloads a RolloutPolicy
/// selects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub placements: Vec<Published>,
    pub rollouts: Vec<PublishedRollout>,
}

/// One workload's rollout as a new leader reads it back from the summary: its course
/// ([`RolloutState::course`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedRollout {
    pub workload: ObjectKey,
    pub state: RolloutState,
}

/// What an output directory's summary holds, read back for a takeover or a test: the
/// documents of the shard directory (`state_dir/placements/*.json`, by name), else the one
/// file of earlier versions (`state_dir/placements.json`); `None` when neither exists
/// (nothing published). An error names the file and the entry.
pub fn read_published(state_dir: &Path) -> Result<Option<Summary>, (PathBuf, String)> {
    let dir = state_dir.join(SHARD_DIR);
    // The publish never writes through a symlink; a takeover does not read through one.
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err((dir, "a symbolic link, not the directory fedsched writes: refused".into()));
    }
    let files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => {
            let mut files = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| (dir.clone(), e.to_string()))?;
                let name = entry.file_name();
                if name.to_str().is_some_and(is_shard_name) {
                    files.push(entry.path());
                }
            }
            files.sort();
            // Every shard is always published: one missing is a damaged summary, not an empty
            // part of the fleet (adopting it would drop those workloads' placements).
            if files.len() != SHARDS {
                let missing = Shard::all().map(shard_name).find(|n| !files.iter().any(|f| f.ends_with(n)));
                let what = missing.map_or_else(|| "a shard".to_string(), |n| format!("shard {n}"));
                return Err((dir, format!("{what} is missing (the summary has {SHARDS})")));
            }
            files
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let legacy = state_dir.join(LEGACY_FILE);
            match std::fs::metadata(&legacy) {
                Ok(_) => vec![legacy],
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err((legacy, e.to_string())),
            }
        }
        Err(e) => return Err((dir, e.to_string())),
    };
    let mut all = Summary::default();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| (path.clone(), e.to_string()))?;
        let doc = parse_summary(&text).map_err(|e| (path.clone(), e))?;
        all.placements.extend(doc.placements);
        all.rollouts.extend(doc.rollouts);
    }
    Ok(Some(all))
}

/// One placement: what the summary's shards list and `/api/v1/workloads` answers.
/// Deterministic (no times).
pub fn placement_json(p: &Placement<'_>) -> Value {
    let (state, reason) = match p.outcome {
        Outcome::Scheduled { .. } => ("Scheduled", None),
        Outcome::Unschedulable { reason } => ("Unschedulable", Some(reason.clone())),
    };
    let mut v = json!({
        "workload": {
            "apiVersion": p.workload.api_version,
            "kind": p.workload.kind,
            "namespace": p.workload.namespace,
            "name": p.workload.name,
        },
        "policy": p.policy.as_ref().map(|r| json!({"kind": r.kind.to_string(), "namespace": r.namespace, "name": r.name})),
        "state": state,
        "reason": reason,
        "clusters": p.targets.iter().map(|(c, r)| json!({"name": c, "replicas": r, "file": p.files.get(c)})).collect::<Vec<_>>(),
    });
    if let (Some(term), Some(o)) = (p.affinity, v.as_object_mut()) {
        o.insert("affinityTerm".into(), json!(term));
    }
    if let (false, Some(o)) = (p.tasks.is_empty(), v.as_object_mut()) {
        o.insert("gracefulEvictionTasks".into(), json!(p.tasks));
    }
    v
}

/// One placement as a new leader reads it back from the summary ([`parse_summary`]):
/// what the next decision of the workload starts from (claimer, targets, affinity term,
/// files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub workload: ObjectKey,
    pub policy: Option<PolicyRef>,
    /// `Scheduled`, or the reason it is not.
    pub unschedulable: Option<String>,
    pub targets: BTreeMap<String, Option<i32>>,
    pub files: BTreeMap<String, String>,
    pub affinity: Option<String>,
    /// Its graceful eviction tasks ([`Placement::tasks`]).
    pub tasks: Vec<EvictionTask>,
}

/// Reads a summary document (a shard, or the `placements.json` of earlier versions) back
/// ([`placement_json`]'s fields, and the [`rollout_item`]s of a shard that lists rollouts).
/// An error names the entry and the field.
pub fn parse_summary(text: &str) -> Result<Summary, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let items = doc.get("placements").and_then(Value::as_array).ok_or("placements: not a list")?;
    let placements = items
        .iter()
        .enumerate()
        .map(|(i, item)| parse_item(item).map_err(|e| format!("placements[{i}]: {e}")))
        .collect::<Result<_, _>>()?;
    let rollouts = match doc.get("rollouts") {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .ok_or("rollouts: not a list")?
            .iter()
            .enumerate()
            .map(|(i, item)| parse_rollout(item).map_err(|e| format!("rollouts[{i}]: {e}")))
            .collect::<Result<_, _>>()?,
    };
    Ok(Summary { placements, rollouts })
}

fn text(v: &Value, path: &str) -> Result<String, String> {
    v.pointer(path)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("{}: missing", path.trim_start_matches('/')))
}

fn optional(v: &Value, path: &str) -> Option<String> {
    v.pointer(path).and_then(Value::as_str).map(str::to_string)
}

/// The `workload` of a summary entry.
fn workload_of(item: &Value) -> Result<ObjectKey, String> {
    Ok(ObjectKey {
        api_version: text(item, "/workload/apiVersion")?.into(),
        kind: text(item, "/workload/kind")?.into(),
        namespace: optional(item, "/workload/namespace").map(Into::into),
        name: text(item, "/workload/name")?.into(),
    })
}

fn parse_rollout(item: &Value) -> Result<PublishedRollout, String> {
    let workload = workload_of(item)?;
    let state = item.get("state").ok_or("state: missing")?;
    let state = RolloutState::deserialize(state).map_err(|e| format!("state: {e}"))?;
    Ok(PublishedRollout { workload, state: state.course() })
}

fn parse_item(item: &Value) -> Result<Published, String> {
    let workload = workload_of(item)?;
    let policy = match item.get("policy").filter(|p| !p.is_null()) {
        None => None,
        Some(p) => Some(PolicyRef {
            kind: match text(p, "/kind")?.as_str() {
                "PropagationPolicy" => crate::policy::PolicyKind::PropagationPolicy,
                "ClusterPropagationPolicy" => crate::policy::PolicyKind::ClusterPropagationPolicy,
                other => return Err(format!("policy.kind: {other:?} is not a propagation policy kind")),
            },
            namespace: optional(p, "/namespace"),
            name: text(p, "/name")?,
        }),
    };
    let unschedulable = match text(item, "/state")?.as_str() {
        "Scheduled" => None,
        "Unschedulable" => Some(optional(item, "/reason").unwrap_or_default()),
        other => return Err(format!("state: {other:?}")),
    };
    let mut targets = BTreeMap::new();
    let mut files = BTreeMap::new();
    for (j, c) in item.get("clusters").and_then(Value::as_array).ok_or("clusters: not a list")?.iter().enumerate() {
        let name = text(c, "/name").map_err(|e| format!("clusters[{j}].{e}"))?;
        let replicas = match c.get("replicas") {
            None | Some(Value::Null) => None,
            Some(r) => Some(
                r.as_i64()
                    .and_then(|r| i32::try_from(r).ok())
                    .ok_or(format!("clusters[{j}].replicas: not an integer"))?,
            ),
        };
        if let Some(f) = optional(c, "/file") {
            files.insert(name.clone(), f);
        }
        targets.insert(name, replicas);
    }
    let tasks = match item.get("gracefulEvictionTasks") {
        None => Vec::new(),
        Some(t) => Vec::<EvictionTask>::deserialize(t).map_err(|e| format!("gracefulEvictionTasks: {e}"))?,
    };
    Ok(Published { workload, policy, unschedulable, targets, files, affinity: optional(item, "/affinityTerm"), tasks })
}

/// One summary document at once (a shard's, or the whole of an earlier version's
/// `placements.json`): the reference the pass's [`summary_into`] must equal.
#[cfg(test)]
pub(crate) fn summary_json<'a>(placements: impl Iterator<Item = Placement<'a>>) -> String {
    let items: Vec<String> =
        placements.map(|p| serde_json::to_string(&placement_json(&p)).unwrap_or_default()).collect();
    match items.is_empty() {
        true => EMPTY.to_string(),
        false => format!("{{\"placements\":[\n{}\n]}}\n", items.join(",\n")),
    }
}

/// One placement of a summary document as it appears inside the list: compact JSON on one
/// line (the document has one placement per line, so that an edit changes the line of its
/// workload: a small diff for git mode, and a third fewer bytes than indented JSON).
pub fn summary_item(p: &Placement<'_>) -> String {
    serde_json::to_string(&placement_json(p)).unwrap_or_default()
}

/// One workload's rollout as a summary lists it: compact JSON on one line, the workload and
/// its course ([`RolloutState::course`]: without what each pass sets again for the views, so
/// that the line changes only at a transition of the rollout).
pub fn rollout_item(workload: &ObjectKey, state: &RolloutState) -> String {
    let v = json!({
        "workload": {
            "apiVersion": workload.api_version,
            "kind": workload.kind,
            "namespace": workload.namespace,
            "name": workload.name,
        },
        "state": state.course(),
    });
    serde_json::to_string(&v).unwrap_or_default()
}

/// A summary document from [`summary_item`]s and [`rollout_item`]s (the bytes
/// [`summary_json`] gives when there is no rollout), written into `out` (cleared first).
pub fn summary_into(out: &mut String, items: &[&str], rollouts: &[&str]) {
    out.clear();
    if items.is_empty() && rollouts.is_empty() {
        out.push_str(EMPTY);
        return;
    }
    let len: usize = items.iter().chain(rollouts).map(|i| i.len() + 2).sum();
    out.reserve(len + 48);
    let list = |out: &mut String, items: &[&str]| {
        if items.is_empty() {
            return;
        }
        out.push('\n');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(",\n");
            }
            out.push_str(item);
        }
        out.push('\n');
    };
    out.push_str("{\"placements\":[");
    list(out, items);
    if !rollouts.is_empty() {
        out.push_str("],\"rollouts\":[");
        list(out, rollouts);
    }
    out.push_str("]}\n");
}

/// A summary document (`shard`, as [`summary_into`] writes it) with `items` added after its
/// placements: the entries of workloads whose removal the mass-deletion guard held
/// ([`crate::publish::SummaryPlan::removals`]). Each item is one line, so the list of
/// placements ends at the first line that starts with `]`.
pub fn with_items(shard: &str, items: &[&str]) -> String {
    const HEAD: &str = "{\"placements\":[";
    let Some(rest) = shard.strip_prefix(HEAD).filter(|_| !items.is_empty()) else { return shard.to_string() };
    let added = items.join(",\n");
    match rest.strip_prefix(']') {
        Some(_) => format!("{HEAD}\n{added}\n{rest}"),
        None => match rest.find("\n]") {
            Some(end) => format!("{HEAD}{},\n{added}{}", &rest[..end], &rest[end..]),
            None => shard.to_string(),
        },
    }
}

/// A summary document's placement entries (one a line) and what follows them (from the line
/// that closes the list: `]}` or `],"rollouts":[…`); `None`: not a document [`summary_into`]
/// writes.
fn entries(doc: &str) -> Option<(Vec<&str>, &str)> {
    const HEAD: &str = "{\"placements\":[";
    let rest = doc.strip_prefix(HEAD)?;
    if rest.starts_with(']') {
        return Some((Vec::new(), rest));
    }
    let rest = rest.strip_prefix('\n')?;
    let end = rest.find("\n]")?;
    let items = rest[..end].split('\n').map(|l| l.strip_suffix(',').unwrap_or(l)).collect();
    Some((items, &rest[end + 1..]))
}

/// The workload of a summary entry (one line of [`summary_item`]), as its key displays
/// (`Deployment/shop/web`); `None` when the line is not an entry.
fn entry_owner(item: &str) -> Option<String> {
    let v: Value = serde_json::from_str(item).ok()?;
    workload_of(&v).ok().map(|k| k.to_string())
}

/// A summary document (`planned`, as [`summary_into`] writes it) whose entries of the
/// workloads `held` (by key, as displayed) are those of `published`, the shard as it is on the
/// disk — none where it has none: the workloads whose change the mass-deletion guard held
/// whole keep the placement they were published with, files and summary alike, so that a new
/// leader adopts the placement whose files are on the disk (`[ha]`, invariant 3 of issue 46).
/// `None`: nothing to change.
pub fn with_published_entries(planned: &str, published: Option<&str>, held: &BTreeSet<&str>) -> Option<String> {
    let (items, tail) = entries(planned)?;
    let old: Vec<(&str, String)> = published
        .and_then(entries)
        .map(|(items, _)| items)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|i| entry_owner(i).filter(|o| held.contains(o.as_str())).map(|o| (i, o)))
        .collect();
    let mut changed = false;
    let mut out: Vec<&str> = Vec::with_capacity(items.len() + old.len());
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    for item in items {
        let Some(owner) = entry_owner(item).filter(|o| held.contains(o.as_str())) else {
            out.push(item);
            continue;
        };
        match old.iter().find(|(_, o)| *o == owner) {
            Some((was, o)) => {
                changed |= *was != item;
                out.push(was);
                placed.insert(o.as_str());
            }
            None => changed = true,
        }
    }
    for (was, o) in &old {
        if !placed.contains(o.as_str()) {
            out.push(was);
            changed = true;
        }
    }
    changed.then(|| match out.is_empty() {
        true => format!("{{\"placements\":[{tail}"),
        false => format!("{{\"placements\":[\n{}\n{tail}", out.join(",\n")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyKind;

    /// The shard of a workload is part of the output's layout: it never changes between
    /// releases (a change would move every workload's entry), and spreads workloads evenly.
    #[test]
    fn a_workloads_shard_is_stable_and_the_shards_spread_evenly() {
        let key = |ns: Option<&str>, name: &str| ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: ns.map(Into::into),
            name: name.into(),
        };
        // FNV-1a of "apps␟Deployment␟shop␟web␟", its top byte.
        let h = crate::util::hash::fnv1a64(b"apps\x1fDeployment\x1fshop\x1fweb\x1f");
        assert_eq!(shard_of(&key(Some("shop"), "web")).index(), (h >> 56) as usize);
        assert_eq!(shard_of(&key(Some("shop"), "web")).index(), 0x8c, "a workload's shard changed: the layout moved");
        // The API version is not part of it (the group is): v1beta1 → v1 keeps the shard.
        let mut beta = key(Some("shop"), "web");
        beta.api_version = "apps/v1beta1".into();
        assert_eq!(shard_of(&beta), shard_of(&key(Some("shop"), "web")));
        // A cluster-scoped object and a namespaced one of the same name differ.
        assert_ne!(shard_of(&key(None, "web")), shard_of(&key(Some("shop"), "web")));
        let mut counts = vec![0usize; SHARDS];
        for i in 0..25_600 {
            counts[shard_of(&key(Some(&format!("ns-{}", i % 37)), &format!("app-{i}"))).index()] += 1;
        }
        let (min, max) = (counts.iter().min().copied(), counts.iter().max().copied());
        assert!(min.is_some_and(|m| m >= 60) && max.is_some_and(|m| m <= 150), "{min:?}..{max:?}");
        assert_eq!(shard_name(Shard(0)), "00.json");
        assert_eq!(shard_name(Shard(0xff)), "ff.json");
        assert_eq!(Shard::all().count(), SHARDS);
        assert!(Shard::all().all(|i| is_shard_name(&shard_name(i))));
        for other in ["FF.json", "0g.json", "é.json", "000.json", "00.yaml", "00.json~", ""] {
            assert!(!is_shard_name(other), "{other}");
        }
    }

    #[test]
    fn the_shards_list_each_workload_once_in_store_order_and_read_back() {
        let key = |name: &str| ObjectKey {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("a".into()),
            name: name.into(),
        };
        let keys: Vec<ObjectKey> = (0..600).map(|i| key(&format!("c{i:04}"))).collect();
        let outcome = Outcome::Unschedulable { reason: "none".into() };
        let (targets, files) = (BTreeMap::new(), BTreeMap::new());
        let p = |k| Placement {
            workload: k,
            policy: None,
            outcome: &outcome,
            targets: &targets,
            files: &files,
            affinity: None,
            tasks: &[],
        };
        let shards = Shards::of(keys.iter().map(p), std::iter::empty());
        assert_eq!(shards.0.len(), SHARDS);
        let dir = tempfile::tempdir().expect("tmp");
        assert_eq!(read_published(dir.path()), Ok(None), "nothing published");
        std::fs::create_dir_all(dir.path().join(SHARD_DIR)).expect("mkdir");
        for (i, text) in Shard::all().zip(&shards.0) {
            // Each shard is a document of its own, its workloads in store order.
            let back = parse_summary(text).expect("shard parses").placements;
            assert!(back.iter().all(|b| shard_of(&b.workload) == i));
            assert!(back.windows(2).all(|w| w[0].workload.name < w[1].workload.name));
            std::fs::write(dir.path().join(SHARD_DIR).join(shard_name(i)), text.as_bytes()).expect("write");
        }
        // A shard directory that is a symlink is refused.
        let linked = tempfile::tempdir().expect("tmp");
        std::os::unix::fs::symlink(dir.path().join(SHARD_DIR), linked.path().join(SHARD_DIR)).expect("symlink");
        let (path, e) = read_published(linked.path()).expect_err("a symlink");
        assert!(path.ends_with(SHARD_DIR) && e.contains("symbolic link"), "{e}");
        // A missing shard is a damaged summary, named.
        std::fs::rename(dir.path().join(SHARD_DIR).join("07.json"), dir.path().join("07.json")).expect("move");
        let (_, e) = read_published(dir.path()).expect_err("a shard missing");
        assert!(e.contains("shard 07.json is missing"), "{e}");
        std::fs::rename(dir.path().join("07.json"), dir.path().join(SHARD_DIR).join("07.json")).expect("move");
        // A file that is not a shard is not read.
        std::fs::write(dir.path().join(SHARD_DIR).join("notes.txt"), "not json").expect("write");
        let mut back: Vec<String> = read_published(dir.path())
            .expect("read")
            .expect("published")
            .placements
            .into_iter()
            .map(|b| b.workload.name.to_string())
            .collect();
        back.sort();
        assert_eq!(back, keys.iter().map(|k| k.name.to_string()).collect::<Vec<_>>());
        // An unchanged shard compares equal; one with another workload differs.
        let fewer = Shards::of(keys[1..].iter().map(p), std::iter::empty());
        assert_eq!(fewer.changed_from(&shards), vec![shard_of(&keys[0])]);
        assert_eq!(shards.changed_from(&shards), Vec::<Shard>::new());
    }

    #[test]
    fn placements_read_back_as_published() {
        let workload = ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
        };
        let policy =
            PolicyRef { kind: PolicyKind::PropagationPolicy, namespace: Some("shop".into()), name: "p".into() };
        let targets: BTreeMap<String, Option<i32>> = [("a".to_string(), Some(2)), ("b".to_string(), None)].into();
        let files: BTreeMap<String, String> = [("a".to_string(), "a/shop/web.yaml".to_string())].into();
        let scheduled = Outcome::Scheduled { targets: targets.clone() };
        let unschedulable = Outcome::Unschedulable { reason: "no fit".into() };
        let p = |outcome, affinity| Placement {
            workload: &workload,
            policy: Some(&policy),
            outcome,
            targets: &targets,
            files: &files,
            affinity,
            tasks: &[],
        };
        let text = summary_json([p(&scheduled, Some("primary")), p(&unschedulable, None)].into_iter());
        let back = parse_summary(&text).expect("parses").placements;
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].workload, workload);
        assert_eq!(back[0].policy.as_ref(), Some(&policy));
        assert_eq!((back[0].targets.clone(), back[0].files.clone()), (targets.clone(), files.clone()));
        assert_eq!(back[0].affinity.as_deref(), Some("primary"));
        assert_eq!(back[0].unschedulable, None);
        assert_eq!(back[1].unschedulable.as_deref(), Some("no fit"));
        assert_eq!(back[1].affinity, None);
        // One placement per line; the indented form earlier versions wrote reads the same.
        assert_eq!(text.lines().count(), 4, "{text}");
        let indented: Value = serde_json::from_str(&text).expect("json");
        let indented = serde_json::to_string_pretty(&indented).expect("pretty");
        assert_eq!(parse_summary(&indented).expect("parses").placements, back);
        // Without a term the entry has no affinityTerm key: documents without terms are unchanged.
        assert!(!text.split("\"state\": \"Unschedulable\"").nth(1).unwrap_or("").contains("affinityTerm"));
        let e = parse_summary("{\"placements\": [{\"workload\": {}}]}").expect_err("bad");
        assert!(e.contains("placements[0]: workload/apiVersion: missing"), "{e}");
        // From the fragments, into a buffer that held another summary: the same bytes.
        let items = [summary_item(&p(&scheduled, Some("primary"))), summary_item(&p(&unschedulable, None))];
        let items: Vec<&str> = items.iter().map(String::as_str).collect();
        let mut buffer = "stale bytes of an earlier, longer summary".repeat(100);
        summary_into(&mut buffer, &items, &[]);
        assert_eq!(buffer, text);
        summary_into(&mut buffer, &[], &[]);
        assert_eq!(buffer, summary_json(std::iter::empty()));
        // A placement's graceful eviction tasks read back whole (a new leader adopts them);
        // without any, the entry has no such key.
        assert!(!text.contains("gracefulEvictionTasks"), "{text}");
        use crate::schedule::stability::{Purge, Reason};
        let task = EvictionTask {
            cluster: "c".into(),
            replicas: 3,
            reason: Reason::ClusterUnreachable,
            since_ms: 1_000,
            purge: Purge::Gracefully,
            grace_ms: 60_000,
            grace_expired_ms: Some(61_000),
        };
        let with_task = Placement { tasks: std::slice::from_ref(&task), ..p(&scheduled, None) };
        let back = parse_summary(&summary_json(std::iter::once(with_task))).expect("parses").placements;
        assert_eq!(back[0].tasks, vec![task]);
    }

    /// A rollout's course is listed after the placements of its shard and reads back whole
    /// (issue 52: what a takeover adopts); what each pass sets again for the views is not
    /// published, so a shard changes only at a transition.
    #[test]
    fn rollouts_read_back_as_published_after_the_placements() {
        use crate::schedule::rollout::{GateFigures, MemberObserved, Phase, Transition};
        let workload = ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: "api".into(),
        };
        let mut state = RolloutState::settled("shop/waves".into(), 1, "{\"spec\":{\"image\":\"api:1\"}}".into());
        state.target_hash = 2;
        state.target = "{\"spec\":{\"image\":\"api:2\"}}".into();
        state.phase = Phase::Progressing;
        state.released = 2;
        state.released_at_ms = 1_000;
        state.healthy_since_ms = Some(5_000);
        state.failed.insert("member-009".into(), "CrashLoopBackOff on 1 pod(s)".into());
        state.approvals_at_start.insert("next".into());
        state.transitions.push(Transition {
            at_ms: 1_000,
            stage: "next".into(),
            event: "released".into(),
            cause: "c".into(),
        });
        state.generations.insert("member-001".into(), 3);
        state.agent_revisions.insert("member-001".into(), "main@sha1:abc".into());
        let course = state.clone();
        state.stages = vec![("canary".into(), vec!["member-000".into()])];
        state.gate = GateFigures { min_success_ms: 10, deadline_ms: None, max_failures: 1, needs_approval: true };
        state.observed.insert("member-001".into(), MemberObserved { state: "Healthy".into(), agent: None });
        let item = rollout_item(&workload, &state);
        assert!(!item.contains('\n'), "one line: {item}");
        assert!(!item.contains("Healthy") && !item.contains("canary"), "the views' part is published: {item}");
        assert_eq!(item, rollout_item(&workload, &course), "what the views show changes no byte");
        let outcome = Outcome::Scheduled { targets: BTreeMap::new() };
        let (targets, files) = (BTreeMap::new(), BTreeMap::new());
        let placement = Placement {
            workload: &workload,
            policy: None,
            outcome: &outcome,
            targets: &targets,
            files: &files,
            affinity: None,
            tasks: &[],
        };
        let placed = summary_item(&placement);
        let mut text = String::new();
        summary_into(&mut text, &[&placed], &[&item]);
        let back = parse_summary(&text).expect("parses");
        assert_eq!(back.placements.len(), 1);
        assert_eq!(back.rollouts, vec![PublishedRollout { workload: workload.clone(), state: course.clone() }]);
        // A shard without placements lists its rollouts; without either it is the empty one.
        summary_into(&mut text, &[], &[&item]);
        let back = parse_summary(&text).expect("parses");
        assert!(back.placements.is_empty());
        assert_eq!(back.rollouts.len(), 1);
        assert_eq!(
            Shards::of(std::iter::empty(), [(shard_of(&workload), item.as_str())].into_iter()).0
                [shard_of(&workload).index()]
            .as_str(),
            text
        );
        // A damaged entry is named.
        let e = parse_summary("{\"placements\":[],\"rollouts\":[{\"workload\":{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"n\"},\"state\":{}}]}")
            .expect_err("bad");
        assert!(e.starts_with("rollouts[0]: state: missing field"), "{e}");
    }

    /// A held removal's entries go after a shard's placements, whatever the shard holds: the
    /// document reads back with them, the other entries and the rollouts as they were.
    #[test]
    fn a_held_removals_entries_are_added_to_any_shard() {
        let (a, b, c) = ("{\"a\":1}", "{\"b\":2}", "{\"c\":3}");
        let doc = |items: &[&str], rollouts: &[&str]| {
            let mut out = String::new();
            summary_into(&mut out, items, rollouts);
            out
        };
        for (items, rollouts) in
            [(vec![], vec![]), (vec![a], vec![]), (vec![a, b], vec![]), (vec![], vec![c]), (vec![a], vec![c])]
        {
            let mut all = items.clone();
            all.push(b);
            assert_eq!(with_items(&doc(&items, &rollouts), &[b]), doc(&all, &rollouts), "{items:?} {rollouts:?}");
        }
        assert_eq!(with_items(&doc(&[a], &[]), &[]), doc(&[a], &[]));
    }

    /// Issue 46, `[ha]` invariant 3 (simulation seed 196): the entries of the workloads whose
    /// change the guard held whole are those on the disk — the placement published, or none
    /// for a workload never published —; the other entries and the rollouts are the plan's.
    #[test]
    fn a_held_moves_entry_is_the_one_published() {
        let key = |name: &str| ObjectKey {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("shop".into()),
            name: name.into(),
        };
        let item = |name: &str, cluster: &str| {
            let targets: BTreeMap<String, Option<i32>> = [(cluster.to_string(), Some(5))].into();
            let files: BTreeMap<String, String> = [(cluster.to_string(), format!("shop/{name}.yaml"))].into();
            let outcome = Outcome::Scheduled { targets: targets.clone() };
            let k = key(name);
            summary_item(&Placement {
                workload: &k,
                policy: None,
                outcome: &outcome,
                targets: &targets,
                files: &files,
                affinity: None,
                tasks: &[],
            })
        };
        let doc = |items: &[&str], rollouts: &[&str]| {
            let mut out = String::new();
            summary_into(&mut out, items, rollouts);
            out
        };
        let (web_5, web_0, api_1, api_2, new_3) =
            (item("web", "m5"), item("web", "m0"), item("api", "m1"), item("api", "m2"), item("new", "m3"));
        let course = "{\"workload\":{},\"state\":{}}";
        let planned = doc(&[&api_2, &new_3, &web_0], &[course]);
        let disk = doc(&[&api_1, &web_5], &[]);
        let held: BTreeSet<&str> = ["Deployment/shop/web", "Deployment/shop/new"].into();
        let kept = with_published_entries(&planned, Some(&disk), &held).expect("changed");
        assert_eq!(kept, doc(&[&api_2, &web_5], &[course]), "web as published, new not listed, api as planned");
        let without_course = with_published_entries(&doc(&[&api_2, &new_3, &web_0], &[]), Some(&disk), &held);
        let read = parse_summary(&without_course.expect("changed")).expect("reads back");
        assert_eq!(read.placements.iter().map(|p| p.workload.name.as_str()).collect::<Vec<_>>(), ["api", "web"]);
        // Nothing held, or the held entries as on the disk already: nothing to change.
        assert_eq!(with_published_entries(&planned, Some(&disk), &BTreeSet::new()), None);
        let same = doc(&[&api_2, &web_5], &[]);
        assert_eq!(with_published_entries(&same, Some(&disk), &["Deployment/shop/web"].into()), None);
        // No shard on the disk: a held workload is not listed.
        assert_eq!(with_published_entries(&doc(&[&web_0], &[]), None, &held), Some(doc(&[], &[])));
        // A held workload the plan no longer lists keeps its published entry.
        assert_eq!(with_published_entries(&doc(&[], &[]), Some(&disk), &held), Some(doc(&[&web_5], &[])));
    }
}
