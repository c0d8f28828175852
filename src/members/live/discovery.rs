//! The APIs a member serves, from its API server's discovery documents, as client-go's
//! `ServerGroupsAndResources` and Karmada's cluster status controller read them. The result is
//! the member's API enablements, as `group/version/Kind` entries (`v1/ConfigMap`,
//! `apps/v1/Deployment`, `apps.kruise.io/v1alpha1/CloneSet`); subresources (`pods/status`)
//! are left out, as Karmada does.
//!
//! `GET /api` and `GET /apis` ask for the aggregated form first ([`DISCOVERY_ACCEPT`]:
//! `APIGroupDiscoveryList`, Kubernetes 1.26 and later), which holds every group version's
//! resources: two requests in all. A server that answers the plain form (`APIVersions`,
//! `APIGroupList`) gets one more `GET /api/<v>` or `GET /apis/<group>/<version>` per group
//! version it lists (every version, not only the preferred one).
//!
//! Raw `GET`s, not kube's `Discovery` (it stops at the first group that fails, reads bodies
//! without a size limit and one group after the other): every request has the poll's read
//! timeout and [`MAX_DISCOVERY_BYTES`], at most [`DISCOVERY_CONCURRENCY`] at once, the whole
//! within `poll.timeout`. A group version that fails (an aggregated API whose backend is down
//! answers 503, or is `Stale` in the aggregated form) keeps the entries the last discovery
//! found for it; `/api` or `/apis` failing fails the discovery (the poller keeps the last
//! list).
//!
//! Hostile answers are bounded: more than [`MAX_GROUP_VERSIONS`] group versions or more than
//! [`MAX_ENTRIES`] entries fail the discovery; group versions that are not `group/version`
//! made of DNS characters are skipped (they are never put into a URL), as are resources
//! without a name or a kind; missing fields read as empty.
//!
//! Each entry's resource name is kept where it is not the one Kubernetes guesses from the kind
//! ([`guessed_resource`]; a CRD that names an irregular plural): the poller reads an object of
//! a custom kind at the path discovery gives ([`Discovered::resources`]).

use crate::members::decode::null_as_default;
use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::*;

/// Largest discovery document accepted.
pub const MAX_DISCOVERY_BYTES: usize = 8 << 20;
/// Most group versions one member may advertise.
pub const MAX_GROUP_VERSIONS: usize = 2000;
/// Most `group/version/Kind` entries one member may serve.
pub const MAX_ENTRIES: usize = 100_000;
/// Discovery requests in flight at once for one member.
pub const DISCOVERY_CONCURRENCY: usize = 8;

/// `Accept` of `/api` and `/apis`: the aggregated discovery document (v2, then v2beta1), else
/// the plain one.
pub const DISCOVERY_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,\
     application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// The `kind` of an aggregated discovery document.
const AGGREGATED: &str = "APIGroupDiscoveryList";

/// `GET /api` or `GET /apis`: plain (`APIVersions`: `versions`; `APIGroupList`: `groups`) or
/// aggregated (`APIGroupDiscoveryList`: `items`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Root {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) kind: String,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) versions: Vec<String>,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) groups: Vec<ApiGroup>,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) items: Vec<AggregatedGroup>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ApiGroup {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) versions: Vec<GroupVersionFor>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct GroupVersionFor {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) group_version: String,
}

/// `APIGroupDiscovery`: a group (`metadata.name`, empty for the core group) and its versions.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct AggregatedGroup {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) metadata: NameOnly,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) versions: Vec<AggregatedVersion>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct NameOnly {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct AggregatedVersion {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) version: String,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) resources: Vec<AggregatedResource>,
    /// `Current`, or `Stale` when its API service could not be reached.
    #[serde(deserialize_with = "null_as_default")]
    pub(super) freshness: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct AggregatedResource {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) resource: String,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) response_kind: NameKind,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct NameKind {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) kind: String,
}

/// `GET /api/<v>`, `GET /apis/<g>/<v>`: `APIResourceList`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct ApiResourceList {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) group_version: String,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) resources: Vec<ApiResourceItem>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ApiResourceItem {
    #[serde(deserialize_with = "null_as_default")]
    pub(super) name: String,
    #[serde(deserialize_with = "null_as_default")]
    pub(super) kind: String,
}

/// What one discovery found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// `group/version/Kind` entries (with the entries kept for the group versions that failed).
    pub apis: BTreeSet<String>,
    /// The resource name of each entry whose name is not [`guessed_resource`] of its kind
    /// (`example.io/v1/Cactus` → `cacti`), by entry; the others' is the guess.
    pub resources: BTreeMap<String, String>,
    /// Group versions whose resource list could not be read, with why.
    pub failed: Vec<(String, String)>,
}

/// The entries of one group version: `group/version/Kind`, and the resource names that are not
/// the guess ([`Discovered::resources`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Entries {
    pub(super) apis: BTreeSet<String>,
    pub(super) resources: BTreeMap<String, String>,
}

/// The resource name Kubernetes guesses from a kind (`UnsafeGuessKindToResource`: lower case,
/// `y` → `ies`, `s` → `ses`, else `s`), the name a CRD has unless it names another plural.
pub fn guessed_resource(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    match lower.strip_suffix('y') {
        _ if lower.ends_with('s') => format!("{lower}es"),
        Some(stem) => format!("{stem}ies"),
        None => format!("{lower}s"),
    }
}

/// Whether `gv` is `version` (core) or `group/version`, made of the characters a DNS
/// subdomain and an API version may hold: safe in a URL path.
pub(super) fn valid_group_version(gv: &str) -> bool {
    let ok = |s: &str, max: usize| {
        !s.is_empty()
            && s.len() <= max
            && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !s.starts_with(['.', '-'])
            && !s.contains("..")
    };
    match gv.split_once('/') {
        Some((g, v)) => ok(g, 253) && ok(v, 63) && !v.contains('.'),
        None => ok(gv, 63) && !gv.contains('.'),
    }
}

/// What `/api` and `/apis` gave: the resource lists they held (the aggregated form), and the
/// group versions whose list is still to be read (the plain form).
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// Group version → its entries, or why they are not known.
    pub(super) known: Vec<(String, Result<Entries, String>)>,
    /// Group versions to read (`/api/<v>`, `/apis/<g>/<v>`).
    pub(super) fetch: Vec<String>,
    seen: BTreeSet<String>,
}

impl Plan {
    fn add(&mut self, gv: String, known: Option<Result<Entries, String>>) -> Result<(), String> {
        if !valid_group_version(&gv) {
            tracing::debug!(group_version = %gv.chars().take(80).collect::<String>(), "discovery: invalid group version skipped");
            return Ok(());
        }
        if !self.seen.insert(gv.clone()) {
            return Ok(());
        }
        if self.seen.len() > MAX_GROUP_VERSIONS {
            return Err(format!("more than {MAX_GROUP_VERSIONS} group versions advertised"));
        }
        match known {
            Some(k) => self.known.push((gv, k)),
            None => self.fetch.push(gv),
        }
        Ok(())
    }
}

/// The group versions of `/api` and `/apis` (core first), deduplicated, invalid ones skipped,
/// with their entries when the documents are aggregated.
pub(super) fn plan(core: &[u8], groups: &[u8]) -> Result<Plan, String> {
    let core: Root = serde_json::from_slice(core).map_err(|e| format!("/api: {e}"))?;
    let groups: Root = serde_json::from_slice(groups).map_err(|e| format!("/apis: {e}"))?;
    let mut plan = Plan::default();
    for (root, is_core) in [(core, true), (groups, false)] {
        if root.kind == AGGREGATED {
            for g in root.items {
                // The core group (no name) under `/api`, the others under `/apis`.
                if g.metadata.name.is_empty() != is_core {
                    continue;
                }
                for v in g.versions {
                    let gv = match is_core {
                        true => v.version,
                        false => format!("{}/{}", g.metadata.name, v.version),
                    };
                    let known = match v.freshness.as_str() {
                        "Stale" => Err("stale: its API service could not be reached".to_string()),
                        _ => Ok(kinds(&gv, v.resources.into_iter().map(|r| (r.resource, r.response_kind.kind)))),
                    };
                    plan.add(gv, Some(known))?;
                }
            }
        } else if is_core {
            for v in root.versions.into_iter().filter(|v| !v.contains('/')) {
                plan.add(v, None)?;
            }
        } else {
            for v in root.groups.into_iter().flat_map(|g| g.versions) {
                if v.group_version.contains('/') {
                    plan.add(v.group_version, None)?;
                }
            }
        }
    }
    Ok(plan)
}

/// `group/version/Kind` of each `(resource name, Kind)`, with the resource names that are not
/// the guess: subresources and nameless or kindless resources left out, and names that are not
/// DNS labels (never put into a URL). Of two resources of one kind, the first one's name.
fn kinds(gv: &str, resources: impl Iterator<Item = (String, String)>) -> Entries {
    let kind_ok = |k: &str| k.len() <= 253 && k.bytes().all(|b| b.is_ascii_alphanumeric()) && !k.is_empty();
    let name_ok = |n: &str| {
        n.len() <= 253 && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    let mut out = Entries::default();
    for (name, kind) in resources.filter(|(name, kind)| !name.is_empty() && !name.contains('/') && kind_ok(kind)) {
        let entry = format!("{gv}/{kind}");
        if out.apis.insert(entry.clone()) && name_ok(&name) && name != guessed_resource(&kind) {
            out.resources.insert(entry, name);
        }
    }
    out
}

/// The entries of one resource list of group version `gv` (`group/version/Kind`, sorted,
/// subresources and nameless or kindless resources left out).
pub(super) fn entries(gv: &str, body: &[u8]) -> Result<Entries, String> {
    let list: ApiResourceList = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    if !list.group_version.is_empty() && list.group_version != gv {
        return Err(format!("the list is of {:?}", list.group_version.chars().take(80).collect::<String>()));
    }
    Ok(kinds(gv, list.resources.into_iter().map(|r| (r.name, r.kind))))
}

/// The entries of `previous` that belong to group version `gv`.
pub(super) fn entries_of<'a>(previous: &'a BTreeSet<String>, gv: &'a str) -> impl Iterator<Item = &'a String> + 'a {
    let prefix = format!("{gv}/");
    let n = prefix.len();
    previous.range(prefix.clone()..).take_while(move |e| e.starts_with(&prefix)).filter(move |e| {
        // `v1/Pod` belongs to `v1`; `v1/x/Kind` would belong to a group `v1`.
        !e[n..].contains('/')
    })
}

/// Reads the member's discovery documents with `client` (each request within the client's read
/// timeout; the caller bounds the whole). `previous` (the last list, and its resource names)
/// fills in the group versions that fail.
pub(super) async fn discover(
    client: &kube::Client,
    previous: (Option<&BTreeSet<String>>, Option<&BTreeMap<String, String>>),
) -> Result<Discovered, PollError> {
    const WHAT: &str = "discovery";
    let fetch = |path: String, accept: &'static str| async move {
        match get_limited(client, &path, WHAT, accept, MAX_DISCOVERY_BYTES).await {
            Ok(b) => Ok(b),
            Err(Got::Failed(e)) => Err(e),
            Err(Got::Gone(message)) => Err(PollError::Http { status: 410, what: WHAT, message }),
        }
    };
    let core = fetch("/api".into(), DISCOVERY_ACCEPT).await?;
    let groups = fetch("/apis".into(), DISCOVERY_ACCEPT).await?;
    let plan = plan(&core, &groups).map_err(|message| PollError::Decode { what: WHAT, message })?;
    let fetched: Vec<(String, Result<Entries, String>)> = futures_util::stream::iter(plan.fetch)
        .map(|gv| {
            let path = if gv.contains('/') { format!("/apis/{gv}") } else { format!("/api/{gv}") };
            let fetched = fetch(path, "application/json");
            async move {
                let found = fetched.await.map_err(|e| e.to_string()).and_then(|b| entries(&gv, &b));
                (gv, found)
            }
        })
        .buffer_unordered(DISCOVERY_CONCURRENCY)
        .collect()
        .await;
    let mut out = Discovered::default();
    for (gv, found) in plan.known.into_iter().chain(fetched) {
        match found {
            Ok(found) => {
                out.apis.extend(found.apis);
                out.resources.extend(found.resources);
            }
            Err(why) => {
                if let Some(prev) = previous.0 {
                    for e in entries_of(prev, &gv) {
                        out.apis.insert(e.clone());
                        if let Some(name) = previous.1.and_then(|r| r.get(e)) {
                            out.resources.insert(e.clone(), name.clone());
                        }
                    }
                }
                out.failed.push((gv, why));
            }
        }
        if out.apis.len() > MAX_ENTRIES {
            return Err(PollError::Decode { what: WHAT, message: format!("more than {MAX_ENTRIES} API resources") });
        }
    }
    out.failed.sort();
    if out.apis.is_empty() {
        return Err(PollError::Decode { what: WHAT, message: "no API resource could be read".into() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The group versions of plain documents, to be read one by one.
    fn group_versions(core: &[u8], groups: &[u8]) -> Result<Vec<String>, String> {
        let p = plan(core, groups)?;
        assert!(p.known.is_empty(), "{p:?}");
        Ok(p.fetch)
    }

    #[test]
    fn aggregated_documents_hold_every_resource_list() {
        let core = br#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
            {"metadata":{"creationTimestamp":null},"versions":[{"version":"v1","resources":[
                {"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},"scope":"Namespaced",
                 "subresources":[{"subresource":"status","responseKind":{"kind":"Pod"}}]},
                {"resource":"configmaps","responseKind":{"kind":"ConfigMap"}},
                {"resource":"bindings"},
                {"resource":"","responseKind":{"kind":"Nameless"}}],"freshness":"Current"}]},
            {"metadata":{"name":"apps"},"versions":[{"version":"v1","resources":[{"resource":"deployments","responseKind":{"kind":"Deployment"}}]}]}
        ]}"#;
        let groups = br#"{"kind":"APIGroupDiscoveryList","items":[
            {"metadata":{"name":"apps"},"versions":[
                {"version":"v1","resources":[{"resource":"deployments","responseKind":{"kind":"Deployment"}},
                    {"resource":"statefulsets","responseKind":{"kind":"StatefulSet"}}]},
                {"version":"v1beta1","resources":null}]},
            {"metadata":{"name":"metrics.k8s.io"},"versions":[{"version":"v1beta1","freshness":"Stale"}]},
            {"metadata":{"name":"../x"},"versions":[{"version":"v1"}]},
            {"metadata":null,"versions":[{"version":"v9"}]},
            {"versions":null}
        ]}"#;
        let p = plan(core, groups).expect("valid");
        assert!(p.fetch.is_empty(), "nothing left to read: {p:?}");
        let known: BTreeMap<&str, Result<Vec<&str>, &str>> = p
            .known
            .iter()
            .map(|(gv, r)| {
                (gv.as_str(), r.as_ref().map(|e| e.apis.iter().map(String::as_str).collect()).map_err(String::as_str))
            })
            .collect();
        assert_eq!(known["v1"], Ok(vec!["v1/ConfigMap", "v1/Pod"]));
        assert_eq!(known["apps/v1"], Ok(vec!["apps/v1/Deployment", "apps/v1/StatefulSet"]), "from /apis, not /api");
        assert_eq!(known["apps/v1beta1"], Ok(vec![]));
        assert!(known["metrics.k8s.io/v1beta1"].is_err(), "a stale group version is a failed one");
        assert_eq!(known.len(), 4, "{known:?}");
        // A plain /api beside an aggregated /apis (and the other way round) works too.
        let p = plan(br#"{"kind":"APIVersions","versions":["v1"]}"#, groups).expect("mixed");
        assert_eq!((p.fetch, p.known.len()), (vec!["v1".to_string()], 3));
    }

    #[test]
    fn group_versions_come_from_both_documents_and_bad_ones_are_skipped() {
        let core =
            br#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0"}]}"#;
        let groups = br#"{"kind":"APIGroupList","groups":[
            {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1"}},
            {"name":"autoscaling","versions":[{"groupVersion":"autoscaling/v2"},{"groupVersion":"autoscaling/v1"}]},
            {"name":"evil","versions":[{"groupVersion":"../../api/v1/secrets"},{"groupVersion":"a/b?watch=1"},
                {"groupVersion":"UPPER/v1"},{"groupVersion":"apps/v1"},{"groupVersion":""},{}]},
            {"name":"nothing"},
            {"name":"nulls","versions":null},
            {"versions":[{"groupVersion":"x.example.com/v1beta1","extra":[1,2,{"deep":null}]}]}
        ]}"#;
        let gvs = group_versions(core, groups).expect("valid");
        assert_eq!(gvs, ["v1", "apps/v1", "autoscaling/v2", "autoscaling/v1", "x.example.com/v1beta1"]);
        // Missing fields read as empty; the wrong type is an error naming the document.
        assert_eq!(group_versions(b"{}", b"{}").expect("empty"), Vec::<String>::new());
        assert_eq!(
            group_versions(br#"{"versions":null}"#, br#"{"groups":null}"#).expect("nulls"),
            Vec::<String>::new()
        );
        let e = group_versions(br#"{"versions":"v1"}"#, b"{}").expect_err("a string");
        assert!(e.starts_with("/api:"), "{e}");
        let e = group_versions(b"{}", b"<html>").expect_err("not JSON");
        assert!(e.starts_with("/apis:"), "{e}");
    }

    #[test]
    fn huge_lists_fail_instead_of_fanning_out() {
        let many: Vec<String> = (0..=MAX_GROUP_VERSIONS)
            .map(|i| format!(r#"{{"versions":[{{"groupVersion":"g{i}.example/v1"}}]}}"#))
            .collect();
        let groups = format!(r#"{{"groups":[{}]}}"#, many.join(","));
        let e = group_versions(b"{}", groups.as_bytes()).expect_err("too many");
        assert!(e.contains("more than"), "{e}");
        // The same group version repeated a million times is one.
        let same =
            format!(r#"{{"groups":[{{"versions":[{}]}}]}}"#, vec![r#"{"groupVersion":"apps/v1"}"#; 100_000].join(","));
        assert_eq!(group_versions(b"{}", same.as_bytes()).expect("deduplicated"), ["apps/v1"]);
    }

    #[test]
    fn resource_lists_give_kinds_without_subresources() {
        let body = br#"{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
            {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get"]},
            {"name":"deployments/scale","kind":"Scale","group":"autoscaling","version":"v1"},
            {"name":"deployments/status","kind":"Deployment"},
            {"name":"","kind":"Nameless"},
            {"name":"kindless"},
            {"name":"weird","kind":"Has Space/Slash"},
            {"name":"statefulsets","kind":"StatefulSet","verbs":null,"shortNames":null},
            {"name":null,"kind":null}
        ]}"#;
        let e = entries("apps/v1", body).expect("valid");
        assert_eq!(e.apis.into_iter().collect::<Vec<_>>(), ["apps/v1/Deployment", "apps/v1/StatefulSet"]);
        assert!(e.resources.is_empty(), "every name is the guess: {:?}", e.resources);
        assert!(entries("apps/v1", br#"{"resources":null}"#).expect("null").apis.is_empty());
        assert!(entries("apps/v1", br#"{"groupVersion":"batch/v1","resources":[]}"#).is_err(), "another list");
        assert!(entries("apps/v1", br#"{"resources":[{"name":"x","kind":5}]}"#).is_err());
        // A large list decodes (bounded by the body limit, not by a count).
        let big = format!(
            r#"{{"resources":[{}]}}"#,
            (0..20_000).map(|i| format!(r#"{{"name":"r{i}","kind":"K{i}"}}"#)).collect::<Vec<_>>().join(",")
        );
        assert_eq!(entries("x.example/v1", big.as_bytes()).expect("big").apis.len(), 20_000);
    }

    /// A custom kind whose plural is not the guess from its kind keeps the name discovery gives
    /// (both forms of the documents); a regular one, or a name that is no DNS name, does not.
    #[test]
    fn irregular_resource_names_are_kept_from_discovery() {
        let body = br#"{"groupVersion":"example.io/v1","resources":[
            {"name":"cacti","kind":"Cactus"},{"name":"cacti/status","kind":"Cactus"},
            {"name":"widgets","kind":"Widget"},{"name":"policies","kind":"Policy"},
            {"name":"mice","kind":"Mouse"},{"name":"Bad..Name","kind":"Odd"}]}"#;
        let e = entries("example.io/v1", body).expect("valid");
        let want: BTreeMap<String, String> = [("example.io/v1/Cactus", "cacti"), ("example.io/v1/Mouse", "mice")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(e.resources, want);
        assert_eq!(e.apis.len(), 5, "{:?}", e.apis);
        let groups = br#"{"kind":"APIGroupDiscoveryList","items":[{"metadata":{"name":"example.io"},"versions":[
            {"version":"v1","resources":[{"resource":"cacti","responseKind":{"kind":"Cactus"}},
                {"resource":"widgets","responseKind":{"kind":"Widget"}}]}]}]}"#;
        let p = plan(br#"{"kind":"APIVersions","versions":[]}"#, groups).expect("aggregated");
        let found = p.known[0].1.as_ref().expect("known");
        assert_eq!(found.resources.get("example.io/v1/Cactus").map(String::as_str), Some("cacti"));
        assert_eq!(found.resources.len(), 1);
        for (kind, guess) in
            [("Widget", "widgets"), ("Policy", "policies"), ("Ingress", "ingresses"), ("Cactus", "cactuses")]
        {
            assert_eq!(guessed_resource(kind), guess);
        }
    }

    #[test]
    fn the_entries_of_a_group_version_are_found_in_the_last_list() {
        let prev: BTreeSet<String> =
            ["apps/v1/Deployment", "apps/v1beta1/Old", "v1/Pod", "v1/ConfigMap", "metrics.k8s.io/v1beta1/NodeMetrics"]
                .into_iter()
                .map(String::from)
                .collect();
        let of = |gv| entries_of(&prev, gv).cloned().collect::<Vec<_>>();
        assert_eq!(of("v1"), ["v1/ConfigMap", "v1/Pod"]);
        assert_eq!(of("apps/v1"), ["apps/v1/Deployment"]);
        assert_eq!(of("metrics.k8s.io/v1beta1"), ["metrics.k8s.io/v1beta1/NodeMetrics"]);
        assert!(of("batch/v1").is_empty());
    }

    #[test]
    fn only_safe_group_versions_are_valid() {
        for ok in ["v1", "apps/v1", "apps.kruise.io/v1alpha1", "a-b.c/v2beta3"] {
            assert!(valid_group_version(ok), "{ok}");
        }
        for bad in
            ["", "/", "apps/", "/v1", "a/b/c", "../v1", "a..b/v1", "apps/v1?x", "apps/v 1", "Apps/v1", "apps/v1.2"]
        {
            assert!(!valid_group_version(bad), "{bad}");
        }
    }
}
