//! `coordination.k8s.io/v1` Leases, as a host cluster's API server serves them to leader
//! election: `GET`, `POST` (create: 409 `AlreadyExists` when taken), `PUT` (replace: 409
//! `Conflict` when the body's `metadata.resourceVersion` is not the stored one) and `DELETE`
//! of `/clusters/<c>/apis/coordination.k8s.io/v1/namespaces/<ns>/leases[/<name>]`. No watch
//! (leader election does not need one).
//!
//! The leases are one host API's: the same store answers under every cluster's path (one
//! etcd behind several endpoints), so that instances can reach it by different paths and a
//! fault can cut one of them off. Admin: `PUT /admin/clusters/<c>/leases/fault` sets a
//! [`Fault`] on the lease endpoints under `<c>`'s path only (the member API goes on: a leader
//! cut off from its host, not from its members); `DELETE` clears it. `GET /admin/leases` lists every lease with its history of
//! holders (`{"holder", "atMs", "transitions"}` per change of holder), for tests that check
//! that no two instances held one lease at once, and its last [`WRITES_KEPT`] writes
//! (`writes`: `{"holder", "atMs"}`, renewals included: when a leader last proved itself).

use std::collections::BTreeMap;
use std::sync::RwLock;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use super::server::{Fault, Resp, ok, respond, status};

/// Writes of a lease kept for `GET /admin/leases`.
pub const WRITES_KEPT: usize = 100_000;

/// One stored lease and who held it.
#[derive(Debug, Clone)]
struct Stored {
    object: Value,
    /// (holder, unix ms, leaseTransitions) at each change of holder.
    holders: Vec<(String, u64, i64)>,
    /// (holder, unix ms) of every write, the last [`WRITES_KEPT`].
    writes: std::collections::VecDeque<(String, u64)>,
}

/// Every cluster's leases and the faults on their endpoints.
#[derive(Debug, Default)]
pub struct Leases {
    /// By (namespace, name).
    stored: RwLock<BTreeMap<(String, String), Stored>>,
    /// Resource versions handed out (shared by every lease: strictly increasing).
    rv: RwLock<u64>,
    /// By the cluster whose path they act on.
    faults: RwLock<BTreeMap<String, Fault>>,
}

impl Leases {
    /// The fault on `cluster`'s lease endpoints.
    pub fn fault(&self, cluster: &str) -> Fault {
        self.faults.read().unwrap_or_else(|p| p.into_inner()).get(cluster).cloned().unwrap_or_default()
    }

    /// Sets (or, with the default fault, clears) the fault on `cluster`'s lease endpoints.
    pub fn set_fault(&self, cluster: &str, fault: Fault) -> Resp {
        tracing::info!(cluster, fault = ?fault, "lease fault set");
        let mut faults = self.faults.write().unwrap_or_else(|p| p.into_inner());
        let answer = serde_json::to_value(&fault).unwrap_or_default();
        if fault == Fault::default() {
            faults.remove(cluster);
        } else {
            faults.insert(cluster.to_string(), fault);
        }
        ok(&answer)
    }

    /// `GET /admin/leases`.
    pub fn list(&self) -> Resp {
        let stored = self.stored.read().unwrap_or_else(|p| p.into_inner());
        let items: Vec<Value> = stored
            .iter()
            .map(|((ns, n), s)| {
                json!({"namespace": ns, "name": n, "lease": s.object,
                    "holders": s.holders.iter().map(|(h, at, t)| json!({"holder": h, "atMs": at, "transitions": t})).collect::<Vec<_>>(),
                    "writes": s.writes.iter().map(|(h, at)| json!({"holder": h, "atMs": at})).collect::<Vec<_>>()})
            })
            .collect();
        ok(&json!({"items": items}))
    }

    fn next_rv(&self) -> String {
        let mut rv = self.rv.write().unwrap_or_else(|p| p.into_inner());
        *rv += 1;
        rv.to_string()
    }

    /// One request to the lease endpoints (`segs`: the path after
    /// `apis/coordination.k8s.io/v1`), authenticated and past its faults already.
    pub fn serve(&self, method: &Method, segs: &[&str], body: &[u8]) -> Resp {
        let (ns, name) = match segs {
            ["namespaces", ns, "leases"] => (*ns, None),
            ["namespaces", ns, "leases", name] => (*ns, Some(*name)),
            _ => return status(StatusCode::NOT_FOUND, "NotFound", "the server could not find the requested resource"),
        };
        match (method, name) {
            (&Method::GET, Some(name)) => self.get(ns, name),
            (&Method::POST, None) => self.create(ns, body),
            (&Method::PUT, Some(name)) => self.replace(ns, name, body),
            (&Method::DELETE, Some(name)) => self.delete(ns, name),
            _ => status(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "leases: GET, POST, PUT or DELETE"),
        }
    }

    fn get(&self, ns: &str, name: &str) -> Resp {
        let stored = self.stored.read().unwrap_or_else(|p| p.into_inner());
        match stored.get(&(ns.to_string(), name.to_string())) {
            Some(s) => ok(&s.object),
            None => not_found(name),
        }
    }

    fn create(&self, ns: &str, body: &[u8]) -> Resp {
        let mut object = match parse(body) {
            Ok(v) => v,
            Err(r) => return *r,
        };
        let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str).map(str::to_string) else {
            return status(StatusCode::UNPROCESSABLE_ENTITY, "Invalid", "metadata.name: Required value");
        };
        let mut stored = self.stored.write().unwrap_or_else(|p| p.into_inner());
        let key = (ns.to_string(), name.clone());
        if stored.contains_key(&key) {
            return status(
                StatusCode::CONFLICT,
                "AlreadyExists",
                &format!("leases.coordination.k8s.io {name:?} already exists"),
            );
        }
        let now = crate::util::clock::now_ms();
        object["metadata"]["namespace"] = json!(ns);
        object["metadata"]["resourceVersion"] = json!(self.next_rv());
        object["metadata"]["uid"] = json!(format!("lease-{ns}-{name}-{}", self.next_rv()));
        object["metadata"]["creationTimestamp"] = json!(crate::util::clock::rfc3339_ms(now));
        let mut s = Stored { object, holders: Vec::new(), writes: Default::default() };
        note_holder(&mut s, now);
        let answer = s.object.clone();
        stored.insert(key, s);
        respond(StatusCode::CREATED, serde_json::to_vec(&answer).unwrap_or_default())
    }

    fn replace(&self, ns: &str, name: &str, body: &[u8]) -> Resp {
        let mut object = match parse(body) {
            Ok(v) => v,
            Err(r) => return *r,
        };
        let mut stored = self.stored.write().unwrap_or_else(|p| p.into_inner());
        let Some(s) = stored.get_mut(&(ns.to_string(), name.to_string())) else {
            return not_found(name);
        };
        let current = s.object.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
        let sent = object.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or("");
        if !sent.is_empty() && sent != current {
            return status(
                StatusCode::CONFLICT,
                "Conflict",
                &format!(
                    "Operation cannot be fulfilled on leases.coordination.k8s.io {name:?}: the object has been modified; please apply your changes to the latest version and try again"
                ),
            );
        }
        for k in ["uid", "creationTimestamp"] {
            object["metadata"][k] = s.object["metadata"][k].clone();
        }
        object["metadata"]["name"] = json!(name);
        object["metadata"]["namespace"] = json!(ns);
        object["metadata"]["resourceVersion"] = json!(self.next_rv());
        s.object = object;
        note_holder(s, crate::util::clock::now_ms());
        ok(&s.object)
    }

    fn delete(&self, ns: &str, name: &str) -> Resp {
        let mut stored = self.stored.write().unwrap_or_else(|p| p.into_inner());
        match stored.remove(&(ns.to_string(), name.to_string())) {
            Some(s) => ok(&s.object),
            None => not_found(name),
        }
    }
}

/// Records a write, and appends the lease's holder to its history when it changed.
fn note_holder(s: &mut Stored, now_ms: u64) {
    let holder = s.object.pointer("/spec/holderIdentity").and_then(Value::as_str).unwrap_or("").to_string();
    let transitions = s.object.pointer("/spec/leaseTransitions").and_then(Value::as_i64).unwrap_or(0);
    if s.writes.len() == WRITES_KEPT {
        s.writes.pop_front();
    }
    s.writes.push_back((holder.clone(), now_ms));
    if s.holders.last().is_none_or(|(h, _, _)| *h != holder) {
        s.holders.push((holder, now_ms, transitions));
    }
}

fn not_found(name: &str) -> Resp {
    status(StatusCode::NOT_FOUND, "NotFound", &format!("leases.coordination.k8s.io {name:?} not found"))
}

fn parse(body: &[u8]) -> Result<Value, Box<Resp>> {
    match serde_json::from_slice::<Value>(body) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(Box::new(status(StatusCode::BAD_REQUEST, "BadRequest", "body: not an object"))),
        Err(e) => Err(Box::new(status(StatusCode::BAD_REQUEST, "BadRequest", &format!("body: {e}")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn body(r: Resp) -> (u16, Value) {
        let code = r.status().as_u16();
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("rt");
        let bytes = rt.block_on(r.into_body().collect()).map(|b| b.to_bytes()).unwrap_or_default();
        (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    #[test]
    fn create_replace_and_conflicts() {
        let l = Leases::default();
        let lease = |holder: &str, rv: Option<&str>| {
            let mut v = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "fedsched"}, "spec": {"holderIdentity": holder}});
            if let Some(rv) = rv {
                v["metadata"]["resourceVersion"] = json!(rv);
            }
            serde_json::to_vec(&v).expect("json")
        };
        let segs = ["namespaces", "ha", "leases"];
        let one = ["namespaces", "ha", "leases", "fedsched"];
        assert_eq!(body(l.serve(&Method::GET, &one, b"")).0, 404);
        let (code, created) = body(l.serve(&Method::POST, &segs, &lease("a", None)));
        assert_eq!(code, 201);
        let rv = created["metadata"]["resourceVersion"].as_str().expect("rv").to_string();
        // A second create loses: someone else won.
        assert_eq!(body(l.serve(&Method::POST, &segs, &lease("b", None))).0, 409);
        // A replace with the current version wins once; the same version again conflicts.
        let (code, replaced) = body(l.serve(&Method::PUT, &one, &lease("b", Some(&rv))));
        assert_eq!(code, 200);
        assert_ne!(replaced["metadata"]["resourceVersion"].as_str(), Some(rv.as_str()));
        let (code, conflict) = body(l.serve(&Method::PUT, &one, &lease("c", Some(&rv))));
        assert_eq!((code, conflict["reason"].as_str()), (409, Some("Conflict")));
        assert_eq!(body(l.serve(&Method::GET, &one, b"")).1["spec"]["holderIdentity"], "b");
        assert_eq!(body(l.serve(&Method::GET, &["namespaces", "other", "leases", "fedsched"], b"")).0, 404);
        let (_, listed) = body(l.list());
        let holders: Vec<&str> = listed["items"][0]["holders"]
            .as_array()
            .expect("holders")
            .iter()
            .filter_map(|h| h["holder"].as_str())
            .collect();
        assert_eq!(holders, ["a", "b"]);
        let writes: Vec<&str> = listed["items"][0]["writes"]
            .as_array()
            .expect("writes")
            .iter()
            .filter_map(|h| h["holder"].as_str())
            .collect();
        assert_eq!(writes, ["a", "b"], "the conflicting write is not one");
    }
}
