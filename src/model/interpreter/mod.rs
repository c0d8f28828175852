//! Karmada's resource interpreter: `ResourceInterpreterCustomization` objects
//! (`config.karmada.io/v1alpha1`) whose Lua scripts tell fedsched how to read a kind it does not
//! know — its replicas and per-replica requirements, how to write per-cluster replicas back,
//! which objects it depends on, its components, its health and status.
//!
//! - [`Customization`]: one parsed object (name, target apiVersion/kind, one script per
//!   [`Operation`]); [`parse_customizations`] reads them from YAML text.
//! - [`Interpreters`]: the customizations in force, in Karmada's order of precedence, per
//!   (target, operation): the policy repository's, then those of the `[interpreter] dirs`
//!   directories, then fedsched's own built-in interpreters ([`builtin`]), then the native
//!   kinds ([`crate::model::workload`]). Within one layer customizations are taken by name.
//! - [`run`]: runs one operation of one customization on [`Args`] and gives an [`Outcome`]
//!   (Karmada's result names: `replica`/`requires`, `revised`, `retained`,
//!   `aggregatedStatus`, `status`, `healthy`, `dependencies`, `components`). The scheduler,
//!   `fedsched interpret` and the conformance tests all call it. Results are cached by content
//!   (script, operation, arguments): an unchanged object is not interpreted again.
//! - [`lua`]: the sandboxed Lua 5.1 VM; [`kube`]: the `kube` helper library;
//!   [`results`]: typed results and the conformance comparison; [`builtin`]: Rust
//!   interpreters for the CRDs users reach for first.
//!
//! Pure and deterministic: no I/O (files are read by the callers), `os.date` answers from
//! [`Args::now_ms`].

pub mod builtin;
pub mod kube;
pub mod lua;
pub mod pattern;
pub mod results;
pub mod scope;
mod stdlib;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::util::hash::{encode_json, fnv1a64};
use lua::{LuaArg, LuaFailure};
pub use results::{Component, DependencyRef, Outcome};
pub use scope::Scope;

/// The operations of a customization, by Karmada's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Operation {
    InterpretReplica,
    ReviseReplica,
    Retain,
    AggregateStatus,
    InterpretStatus,
    InterpretHealth,
    InterpretDependency,
    InterpretComponent,
}

impl Operation {
    pub const ALL: [Operation; 8] = [
        Operation::InterpretReplica,
        Operation::ReviseReplica,
        Operation::Retain,
        Operation::AggregateStatus,
        Operation::InterpretStatus,
        Operation::InterpretHealth,
        Operation::InterpretDependency,
        Operation::InterpretComponent,
    ];

    /// Karmada's operation name (`InterpretReplica`).
    pub fn name(self) -> &'static str {
        match self {
            Operation::InterpretReplica => "InterpretReplica",
            Operation::ReviseReplica => "ReviseReplica",
            Operation::Retain => "Retain",
            Operation::AggregateStatus => "AggregateStatus",
            Operation::InterpretStatus => "InterpretStatus",
            Operation::InterpretHealth => "InterpretHealth",
            Operation::InterpretDependency => "InterpretDependency",
            Operation::InterpretComponent => "InterpretComponent",
        }
    }

    /// The customization field holding the script (`replicaResource`).
    pub fn field(self) -> &'static str {
        match self {
            Operation::InterpretReplica => "replicaResource",
            Operation::ReviseReplica => "replicaRevision",
            Operation::Retain => "retention",
            Operation::AggregateStatus => "statusAggregation",
            Operation::InterpretStatus => "statusReflection",
            Operation::InterpretHealth => "healthInterpretation",
            Operation::InterpretDependency => "dependencyInterpretation",
            Operation::InterpretComponent => "componentResource",
        }
    }

    /// The Lua function the script must define (`GetReplicas`).
    pub fn function(self) -> &'static str {
        match self {
            Operation::InterpretReplica => "GetReplicas",
            Operation::ReviseReplica => "ReviseReplica",
            Operation::Retain => "Retain",
            Operation::AggregateStatus => "AggregateStatus",
            Operation::InterpretStatus => "ReflectStatus",
            Operation::InterpretHealth => "InterpretHealth",
            Operation::InterpretDependency => "GetDependencies",
            Operation::InterpretComponent => "GetComponents",
        }
    }

    /// By operation name or customization field, case-insensitively.
    pub fn parse(text: &str) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.name().eq_ignore_ascii_case(text) || o.field().eq_ignore_ascii_case(text))
    }
}

/// Where a customization came from, in order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Layer {
    /// The policy repository.
    Repository,
    /// A directory of `[interpreter] dirs`.
    Directory,
}

/// One `ResourceInterpreterCustomization`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Customization {
    pub name: String,
    /// The target `apiVersion` (`apps.kruise.io/v1alpha1`) and kind.
    pub api_version: String,
    pub kind: String,
    pub scripts: BTreeMap<Operation, Arc<str>>,
    /// File (and document) it was read from.
    pub source: String,
}

impl Customization {
    /// The script of an operation.
    pub fn script(&self, op: Operation) -> Option<&Arc<str>> {
        self.scripts.get(&op)
    }

    /// A content digest (name, target, scripts), for caches.
    pub fn digest(&self) -> u64 {
        let mut text = format!("{}\n{}\n{}\n", self.name, self.api_version, self.kind);
        for (op, s) in &self.scripts {
            text.push_str(op.name());
            text.push('\n');
            text.push_str(s);
            text.push('\n');
        }
        fnv1a64(text.as_bytes())
    }
}

/// Why a customization could not be read or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpreterError {
    #[error("{file}: {field}: {reason}")]
    Invalid { file: String, field: String, reason: String },
    #[error("customization {customization} ({file}), {operation}: {failure}")]
    Script { customization: String, file: String, operation: &'static str, failure: String },
    #[error("{operation}: {reason}")]
    Arguments { operation: &'static str, reason: String },
}

/// Reads one customization object (JSON). `source` names the file and document.
pub fn parse_customization(doc: &Value, source: &str) -> Result<Customization, InterpreterError> {
    let invalid = |field: &str, reason: &str| InterpreterError::Invalid {
        file: source.to_string(),
        field: field.to_string(),
        reason: reason.to_string(),
    };
    if doc.get("apiVersion").and_then(Value::as_str) != Some("config.karmada.io/v1alpha1")
        || doc.get("kind").and_then(Value::as_str) != Some("ResourceInterpreterCustomization")
    {
        return Err(invalid("kind", "expected config.karmada.io/v1alpha1 ResourceInterpreterCustomization"));
    }
    let name =
        doc.pointer("/metadata/name").and_then(Value::as_str).ok_or_else(|| invalid("metadata.name", "missing"))?;
    let api_version = doc
        .pointer("/spec/target/apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("spec.target.apiVersion", "missing"))?;
    let kind = doc
        .pointer("/spec/target/kind")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("spec.target.kind", "missing"))?;
    let mut scripts = BTreeMap::new();
    if let Some(map) = doc.pointer("/spec/customizations") {
        let map = map.as_object().ok_or_else(|| invalid("spec.customizations", "expected a mapping"))?;
        for (field, rule) in map {
            let op = Operation::parse(field)
                .filter(|o| o.field() == field)
                .ok_or_else(|| invalid(&format!("spec.customizations.{field}"), "unknown customization"))?;
            let script = rule
                .get("luaScript")
                .and_then(Value::as_str)
                .ok_or_else(|| invalid(&format!("spec.customizations.{field}.luaScript"), "missing"))?;
            let chunk = format!("{name}/{}", op.name());
            lua::check(script, &chunk)
                .map_err(|e| invalid(&format!("spec.customizations.{field}.luaScript"), &e.to_string()))?;
            scripts.insert(op, Arc::<str>::from(script));
        }
    }
    Ok(Customization {
        name: name.to_string(),
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        scripts,
        source: source.to_string(),
    })
}

/// Reads every `ResourceInterpreterCustomization` of a YAML file (other kinds are skipped).
pub fn parse_customizations(text: &str, source: &str) -> Result<Vec<Customization>, InterpreterError> {
    let mut out = Vec::new();
    for doc in crate::policy::load::split_documents(text) {
        let at = format!("{source} (document {})", doc.number);
        let value = crate::policy::load::parse_document(&doc).map_err(|reason| InterpreterError::Invalid {
            file: at.clone(),
            field: "(document)".into(),
            reason,
        })?;
        if value.get("kind").and_then(Value::as_str) != Some("ResourceInterpreterCustomization") {
            continue;
        }
        out.push(parse_customization(&value, &at)?);
    }
    Ok(out)
}

/// The arguments of one operation.
#[derive(Debug, Clone, Default)]
pub struct Args<'a> {
    pub desired: Option<&'a Value>,
    pub observed: Option<&'a Value>,
    /// ReviseReplica's replicas.
    pub replicas: i64,
    /// AggregateStatus's items (`{clusterName, status, applied, health}`); None = nil.
    pub status_items: Option<&'a [Value]>,
    /// What `os.date` / `os.time` answer (milliseconds since the epoch).
    pub now_ms: u64,
}

/// Runs `op` of `c` on `args` (cached by content).
pub fn run(c: &Customization, op: Operation, args: &Args<'_>) -> Result<Outcome, InterpreterError> {
    let Some(script) = c.script(op) else {
        return Err(InterpreterError::Script {
            customization: c.name.clone(),
            file: c.source.clone(),
            operation: op.name(),
            failure: "the customization has no script for this operation".into(),
        });
    };
    let key = cache_key(script, op, args);
    if let Some(hit) = cache_get(key) {
        return hit.map_err(|failure| script_error(c, op, failure));
    }
    // The scope's share (`scope`): what is left of its allowance, unless it refuses.
    let scope = Scope::current();
    let time = match scope.as_ref().map(|s| s.admit(key.0)) {
        None => lua::TIME_BUDGET,
        Some(Ok(left)) => left.min(lua::TIME_BUDGET),
        Some(Err(refusal)) => return Err(script_error(c, op, refusal.to_string())),
    };
    let started = std::time::Instant::now();
    let out = run_uncached(script, &format!("{}/{}", c.name, op.name()), op, args, time);
    let spent = match &out {
        Err(Failed { spent, .. }) => *spent,
        Ok(_) => None,
    };
    if let Some(s) = &scope {
        s.record(key.0, started.elapsed(), spent.is_some());
        // Cut short by the scope, not by its own budget: says so, and is not kept.
        if spent == Some(lua::Spent::Time) && time < lua::TIME_BUDGET {
            return Err(script_error(c, op, s.cut_short().to_string()));
        }
    }
    let out = out.map_err(|f| f.message);
    cache_put(key, out.clone());
    out.map_err(|failure| script_error(c, op, failure))
}

/// Why an uncached run failed: the message, and the budget it spent if that was why.
struct Failed {
    message: String,
    spent: Option<lua::Spent>,
}

impl From<String> for Failed {
    fn from(message: String) -> Self {
        Failed { message, spent: None }
    }
}

fn script_error(c: &Customization, op: Operation, failure: String) -> InterpreterError {
    InterpreterError::Script { customization: c.name.clone(), file: c.source.clone(), operation: op.name(), failure }
}

fn needs(op: Operation, name: &str, v: Option<&Value>) -> Result<(), String> {
    match v {
        Some(_) => Ok(()),
        None => Err(format!("{} needs the {name} object", op.name())),
    }
}

fn run_uncached(
    script: &str,
    chunk: &str,
    op: Operation,
    args: &Args<'_>,
    time: std::time::Duration,
) -> Result<Outcome, Failed> {
    fn json(v: Option<&Value>) -> LuaArg<'_> {
        v.map(LuaArg::Json).unwrap_or(LuaArg::Nil)
    }
    let items_value = args.status_items.map(|s| Value::Array(s.to_vec()));
    // Single-object operations take the desired object, else the observed one (as Karmada's
    // rules do).
    let single = || -> Result<LuaArg<'_>, String> {
        args.desired
            .or(args.observed)
            .map(LuaArg::Json)
            .ok_or_else(|| format!("{} needs an object (desired or observed)", op.name()))
    };
    let call_args: Vec<LuaArg<'_>> = match op {
        Operation::InterpretReplica
        | Operation::InterpretDependency
        | Operation::InterpretComponent
        | Operation::InterpretStatus
        | Operation::InterpretHealth => vec![single()?],
        Operation::ReviseReplica => vec![single()?, LuaArg::Number(args.replicas as f64)],
        Operation::Retain => {
            needs(op, "desired", args.desired)?;
            needs(op, "observed", args.observed)?;
            vec![json(args.desired), json(args.observed)]
        }
        Operation::AggregateStatus => {
            needs(op, "desired", args.desired)?;
            vec![json(args.desired), json(items_value.as_ref())]
        }
    };
    let out = lua::call_within(script, chunk, op.function(), &call_args, args.now_ms, time).map_err(|e| {
        let spent = match &e {
            LuaFailure::Budget(spent) => Some(*spent),
            _ => None,
        };
        Failed { message: e.to_string(), spent }
    })?;
    results::decode(op, out, args).map_err(|e| Failed::from(format!("script result cannot be used: {e}")))
}

type CacheEntry = Result<Outcome, String>;

const CACHE_LIMIT: usize = 100_000;

fn cache() -> &'static Mutex<HashMap<(u64, u64), CacheEntry>> {
    static CACHE: OnceLock<Mutex<HashMap<(u64, u64), CacheEntry>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// (script hash, arguments hash), for the in-memory cache only: SipHash (std's
/// `DefaultHasher`, fixed keys) over the script and over one byte encoding of the arguments
/// (no text built; FNV byte by byte over their JSON text was most of a warm call).
fn cache_key(script: &str, op: Operation, args: &Args<'_>) -> (u64, u64) {
    use std::hash::Hasher;
    let mut buf = Vec::with_capacity(1024);
    buf.extend_from_slice(op.name().as_bytes());
    for v in [args.desired, args.observed] {
        match v {
            Some(v) => encode_json(&mut buf, v),
            None => buf.push(0xff),
        }
    }
    buf.extend_from_slice(&args.replicas.to_le_bytes());
    match args.status_items {
        Some(items) => {
            buf.extend_from_slice(&(items.len() as u64).to_le_bytes());
            for item in items {
                encode_json(&mut buf, item);
            }
        }
        None => buf.push(0xff),
    }
    // The clock only matters to scripts that read it; keyed all the same.
    buf.extend_from_slice(&args.now_ms.to_le_bytes());
    let mut h = std::hash::DefaultHasher::new();
    h.write(&buf);
    (lua::script_hash(script), h.finish())
}

fn cache_get(key: (u64, u64)) -> Option<CacheEntry> {
    cache().lock().ok()?.get(&key).cloned()
}

fn cache_put(key: (u64, u64), value: CacheEntry) {
    if let Ok(mut c) = cache().lock() {
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(key, value);
    }
}

/// How many results the content cache holds (for tests and benches).
pub fn cache_len() -> usize {
    cache().lock().map(|c| c.len()).unwrap_or(0)
}

/// The customizations in force, by layer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interpreters {
    /// (layer, customization), sorted by layer then name.
    entries: Vec<(Layer, Arc<Customization>)>,
    /// Whether fedsched's built-in CRD interpreters ([`builtin`]) are consulted.
    pub builtins_off: bool,
}

/// What answers an operation for a kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Source<'a> {
    Script(Layer, &'a Arc<Customization>),
    Builtin(&'static builtin::Builtin),
}

impl Interpreters {
    /// From customizations of each layer (the repository's first).
    pub fn new(repository: Vec<Customization>, directories: Vec<Arc<Customization>>) -> Self {
        let mut entries: Vec<(Layer, Arc<Customization>)> =
            repository.into_iter().map(|c| (Layer::Repository, Arc::new(c))).collect();
        entries.extend(directories.into_iter().map(|c| (Layer::Directory, c)));
        entries.sort_by(|a, b| (a.0, &a.1.name, &a.1.source).cmp(&(b.0, &b.1.name, &b.1.source)));
        Interpreters { entries, builtins_off: false }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every customization, in order of precedence.
    pub fn customizations(&self) -> impl Iterator<Item = &(Layer, Arc<Customization>)> {
        self.entries.iter()
    }

    /// The customization script that answers `op` for `api_version`/`kind`, if any.
    pub fn script(&self, api_version: &str, kind: &str, op: Operation) -> Option<(Layer, &Arc<Customization>)> {
        self.entries
            .iter()
            .find(|(_, c)| c.api_version == api_version && c.kind == kind && c.scripts.contains_key(&op))
            .map(|(l, c)| (*l, c))
    }

    /// What answers `op` for `api_version`/`kind`: a script, else a built-in interpreter.
    pub fn source(&self, api_version: &str, kind: &str, op: Operation) -> Option<Source<'_>> {
        if let Some((l, c)) = self.script(api_version, kind, op) {
            return Some(Source::Script(l, c));
        }
        if self.builtins_off {
            return None;
        }
        builtin::find(api_version, kind, op).map(Source::Builtin)
    }

    /// Whether something judges the health of `api_version`/`kind` ([`Interpreters::health`]).
    pub fn judges_health(&self, api_version: &str, kind: &str) -> bool {
        self.script(api_version, kind, Operation::InterpretHealth).is_some()
            || builtin::NATIVE_HEALTH_KINDS.contains(&(api_version, kind))
    }

    /// Karmada's health interpretation of an object `observed` in a member: the
    /// `healthInterpretation` script of a customization for its kind, else Karmada's default
    /// for the native kinds ([`builtin::native_health`]); `None` when nothing judges the kind.
    pub fn health(
        &self,
        api_version: &str,
        kind: &str,
        observed: &Value,
        now_ms: u64,
    ) -> Option<Result<bool, InterpreterError>> {
        let op = Operation::InterpretHealth;
        if let Some((_, c)) = self.script(api_version, kind, op) {
            let args = Args { observed: Some(observed), now_ms, ..Args::default() };
            return Some(run(c, op, &args).and_then(|o| match o {
                Outcome::Healthy(b) => Ok(b),
                other => Err(InterpreterError::Arguments {
                    operation: op.name(),
                    reason: format!("expected a boolean, got {other:?}"),
                }),
            }));
        }
        builtin::native_health(api_version, kind, observed).map(Ok)
    }

    /// Runs `op` for an object of `api_version`/`kind` through whatever answers it; None when
    /// nothing does (the native kinds are [`crate::model::workload`]'s).
    pub fn run(
        &self,
        api_version: &str,
        kind: &str,
        op: Operation,
        args: &Args<'_>,
    ) -> Option<Result<Outcome, InterpreterError>> {
        match self.source(api_version, kind, op)? {
            Source::Script(_, c) => Some(run(c, op, args)),
            Source::Builtin(b) => Some((b.run)(op, args).unwrap_or_else(|| {
                Err(InterpreterError::Arguments {
                    operation: op.name(),
                    reason: format!("built-in interpreter {} does not answer it", b.name),
                })
            })),
        }
    }
}

/// A replica revision to apply at render time: the script (or built-in) that writes
/// per-cluster replicas into a kind's object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Revision {
    /// A customization's `replicaRevision` script.
    Script { customization: String, source: String, script: Arc<str> },
    /// A built-in interpreter, by name.
    Builtin(String),
}

impl Revision {
    /// Revises `object` to `replicas`.
    pub fn apply(&self, object: &Value, replicas: i32) -> Result<Value, InterpreterError> {
        let args = Args { desired: Some(object), replicas: i64::from(replicas), ..Args::default() };
        let out = match self {
            Revision::Script { customization, source, script } => {
                let mut scripts = BTreeMap::new();
                scripts.insert(Operation::ReviseReplica, script.clone());
                let c = Customization {
                    name: customization.clone(),
                    api_version: String::new(),
                    kind: String::new(),
                    scripts,
                    source: source.clone(),
                };
                run(&c, Operation::ReviseReplica, &args)?
            }
            Revision::Builtin(name) => {
                let b = builtin::by_name(name).ok_or_else(|| InterpreterError::Arguments {
                    operation: "ReviseReplica",
                    reason: format!("no built-in interpreter {name}"),
                })?;
                (b.run)(Operation::ReviseReplica, &args).ok_or_else(|| InterpreterError::Arguments {
                    operation: "ReviseReplica",
                    reason: format!("built-in interpreter {name} does not revise replicas"),
                })??
            }
        };
        match out {
            Outcome::Revised(v) => Ok(v),
            _ => Err(InterpreterError::Arguments { operation: "ReviseReplica", reason: "no revised object".into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn custom(name: &str, replicas: u32) -> Customization {
        let doc = json!({
            "apiVersion": "config.karmada.io/v1alpha1",
            "kind": "ResourceInterpreterCustomization",
            "metadata": {"name": name},
            "spec": {"target": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet"},
                "customizations": {"replicaResource": {"luaScript": format!("function GetReplicas(o) return {replicas} end")}}}
        });
        parse_customization(&doc, name).expect("valid")
    }

    fn replicas(i: &Interpreters) -> Option<i32> {
        let obj = json!({"spec": {"replicas": 7, "template": {}}});
        let args = Args { desired: Some(&obj), ..Args::default() };
        match i.run("apps.kruise.io/v1alpha1", "CloneSet", Operation::InterpretReplica, &args)? {
            Ok(Outcome::Replica { replicas, .. }) => Some(replicas),
            _ => None,
        }
    }

    #[test]
    fn precedence_repository_then_directories_then_builtins() {
        let both = Interpreters::new(vec![custom("repo", 1)], vec![Arc::new(custom("dir", 2))]);
        assert_eq!(replicas(&both), Some(1));
        let dir = Interpreters::new(vec![], vec![Arc::new(custom("dir", 2))]);
        assert_eq!(replicas(&dir), Some(2));
        let none = Interpreters::new(vec![], vec![]);
        assert_eq!(replicas(&none), Some(7), "the built-in CloneSet interpreter");
        let mut off = Interpreters::new(vec![], vec![]);
        off.builtins_off = true;
        assert_eq!(replicas(&off), None);
        // Within a layer, by name.
        let two = Interpreters::new(vec![custom("b", 4), custom("a", 3)], vec![]);
        assert_eq!(replicas(&two), Some(3));
    }

    /// Issue 48 item 10: a CloneSet without a pod template is an error for the built-in, as
    /// for Karmada's script (`accuratePodRequirements(nil)`), not replicas without requirements.
    #[test]
    fn a_cloneset_without_a_template_is_an_error() {
        let builtin = Interpreters::new(vec![], vec![]);
        let run = |obj: &Value, op: Operation| {
            let args = Args { desired: Some(obj), observed: Some(obj), ..Args::default() };
            builtin.run("apps.kruise.io/v1alpha1", "CloneSet", op, &args).expect("an interpreter")
        };
        // A CloneSet without a pod template: no replicas without requirements, an error (as
        // Karmada's script gives, `accuratePodRequirements(nil)`); revising it still works.
        let bare = json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}});
        for op in [Operation::InterpretReplica, Operation::InterpretDependency] {
            let e = run(&bare, op).expect_err("no template");
            assert!(e.to_string().contains("spec.template: expected a pod template, got nil"), "{e}");
        }
        let args = Args { desired: Some(&bare), replicas: 3, ..Args::default() };
        let revised = builtin.run("apps.kruise.io/v1alpha1", "CloneSet", Operation::ReviseReplica, &args);
        assert!(matches!(revised, Some(Ok(Outcome::Revised(ref o))) if o["spec"]["replicas"] == 3), "{revised:?}");
    }

    #[test]
    fn bad_customizations_name_the_field() {
        let mut doc = json!({
            "apiVersion": "config.karmada.io/v1alpha1",
            "kind": "ResourceInterpreterCustomization",
            "metadata": {"name": "x"},
            "spec": {"target": {"apiVersion": "v1", "kind": "Pod"},
                "customizations": {"replicaResource": {"luaScript": "function GetReplicas( end"}}}
        });
        let e = parse_customization(&doc, "f.yaml").expect_err("syntax");
        assert!(e.to_string().contains("f.yaml: spec.customizations.replicaResource.luaScript"), "{e}");
        doc["spec"]["customizations"] = json!({"bogus": {"luaScript": ""}});
        let e = parse_customization(&doc, "f.yaml").expect_err("unknown");
        assert!(e.to_string().contains("spec.customizations.bogus"), "{e}");
        doc["spec"]["target"] = json!({});
        assert!(parse_customization(&doc, "f.yaml").is_err());
    }

    #[test]
    fn results_are_cached_by_content() {
        let c = custom("cached", 5);
        let obj = json!({"metadata": {"name": "unique-for-the-cache-test"}});
        let args = Args { desired: Some(&obj), ..Args::default() };
        let key = cache_key(c.script(Operation::InterpretReplica).expect("script"), Operation::InterpretReplica, &args);
        assert!(cache_get(key).is_none());
        run(&c, Operation::InterpretReplica, &args).expect("runs");
        assert!(cache_get(key).is_some(), "an unchanged object is not interpreted again");
    }

    /// In a scope, a script that ran past its budget three times is not run again (its other
    /// objects fail at once, naming it), another script still runs, and the refusals are not
    /// cached: a new scope runs the script again.
    #[test]
    fn a_scope_strikes_out_a_runaway_script_and_forgets_it_after() {
        let mut c = custom("runaway", 1);
        c.scripts.insert(Operation::InterpretReplica, Arc::from("function GetReplicas(o) while true do end end"));
        let good = custom("good", 4);
        let object = |i: usize| json!({"metadata": {"name": format!("strikes-{i}")}});
        let scope = Scope::new("this test");
        Scope::enter(Some(Arc::clone(&scope)), || {
            for i in 0..scope::STRIKES as usize {
                let e = run(&c, Operation::InterpretReplica, &Args { desired: Some(&object(i)), ..Args::default() })
                    .expect_err("runaway");
                assert!(e.to_string().contains("exceeded its budget"), "{e}");
            }
            let o = object(99);
            let e = run(&c, Operation::InterpretReplica, &Args { desired: Some(&o), ..Args::default() })
                .expect_err("struck out");
            let text = e.to_string();
            assert!(
                text.contains("runaway") && text.contains("InterpretReplica") && text.contains("not run"),
                "{text}"
            );
            let out = run(&good, Operation::InterpretReplica, &Args { desired: Some(&o), ..Args::default() });
            assert!(out.is_ok(), "{out:?}");
        });
        let o = object(99);
        let key = cache_key(
            c.script(Operation::InterpretReplica).expect("script"),
            Operation::InterpretReplica,
            &Args { desired: Some(&o), ..Args::default() },
        );
        assert!(cache_get(key).is_none(), "a refusal is not cached");
        // Cut short by a scope whose allowance is nearly spent: says so, not cached either.
        let tight = Scope::with_allowance("this test", std::time::Duration::from_millis(10));
        let o = object(100);
        let e = Scope::enter(Some(tight), || {
            run(&c, Operation::InterpretReplica, &Args { desired: Some(&o), ..Args::default() }).expect_err("cut")
        });
        assert!(e.to_string().contains("used their"), "{e}");
    }

    #[test]
    fn a_failing_script_names_customization_and_operation() {
        let mut c = custom("broken", 1);
        c.scripts.insert(Operation::InterpretReplica, Arc::from("function GetReplicas(o) return o.spec.missing.x end"));
        let obj = json!({"spec": {}});
        let e =
            run(&c, Operation::InterpretReplica, &Args { desired: Some(&obj), ..Args::default() }).expect_err("fails");
        let text = e.to_string();
        assert!(text.contains("broken") && text.contains("InterpretReplica") && text.contains("missing"), "{text}");
    }
}
