//! The resource interpreter per object (issue 15): a `replicaResource` Lua script on 10,000
//! distinct CloneSets, cold (every object new: the VM runs) and warm (the same objects again:
//! the content cache answers), and the built-in Rust interpreter for comparison.
//!
//! Not a timed test: it prints per-object times. Run: `cargo bench --bench interpreter`
//! (release), or `cargo bench --profile dev --bench interpreter -- --test` (CI: one small pass).
//! `-- --cold N` runs only the cold pass over N objects (after one object that starts the VM),
//! for an instruction count that does not depend on the machine's load:
//! `valgrind --tool=callgrind --toggle-collect='interpreter::pass' <bench binary> --cold 2000`
//! (`--builtin` as well: the Rust built-in instead of the script).

use std::sync::Arc;
use std::time::Instant;

use fedsched::model::interpreter::{Args, Interpreters, Operation, parse_customizations};
use fedsched::testbed::bench::timing::quick_mode;
use serde_json::{Value, json};

const CUSTOMIZATION: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: bench}
spec:
  target: {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet}
  customizations:
    replicaResource:
      luaScript: |
        local kube = require("kube")
        function GetReplicas(obj)
          return obj.spec.replicas, kube.accuratePodRequirements(obj.spec.template)
        end
"#;

const PLAIN: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: plain}
spec:
  target: {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet}
  customizations:
    replicaResource:
      luaScript: |
        function GetReplicas(obj)
          return obj.spec.replicas
        end
"#;

fn object(i: usize) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": format!("app-{i}"), "namespace": "team", "labels": {"app": format!("app-{i}")}},
        "spec": {"replicas": 1 + i % 7, "selector": {"matchLabels": {"app": format!("app-{i}")}},
            "template": {"metadata": {"labels": {"app": format!("app-{i}")}},
                "spec": {"nodeSelector": {"zone": "a"}, "containers": [
                    {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}})
}

#[inline(never)]
fn pass(i: &Interpreters, objects: &[Value]) -> f64 {
    let started = Instant::now();
    for o in objects {
        let args = Args { desired: Some(o), ..Args::default() };
        let out = i.run("apps.kruise.io/v1alpha1", "CloneSet", Operation::InterpretReplica, &args);
        assert!(matches!(out, Some(Ok(_))), "{out:?}");
    }
    started.elapsed().as_secs_f64() * 1e6 / objects.len() as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cold_only =
        args.iter().position(|a| a == "--cold").map(|i| args.get(i + 1).and_then(|n| n.parse::<usize>().ok()));
    let n = match cold_only {
        Some(Some(n)) => n + 1,
        Some(None) => panic!("--cold takes a number of objects"),
        None if quick_mode() => 100,
        None => 10_000,
    };
    let objects: Vec<Value> = (0..n).map(object).collect();
    let scripted = Interpreters::new(
        Vec::new(),
        parse_customizations(CUSTOMIZATION, "bench")
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(Arc::new)
            .collect(),
    );
    let plain = Interpreters::new(
        Vec::new(),
        parse_customizations(PLAIN, "bench").unwrap_or_else(|e| panic!("{e}")).into_iter().map(Arc::new).collect(),
    );
    let builtin = Interpreters::new(Vec::new(), Vec::new());
    if cold_only.is_some() {
        // `--builtin`: the Rust built-in instead, for what Lua adds.
        let (name, which) =
            if args.iter().any(|a| a == "--builtin") { ("builtin", &builtin) } else { ("lua-cold", &scripted) };
        pass(which, &objects[..1]);
        let cold = pass(which, &objects[1..]);
        println!("interpreter/{name:<13} {cold:8.2} µs/object ({} objects, cold pass only)", n - 1);
        return;
    }
    let cold = pass(&scripted, &objects);
    let warm = pass(&scripted, &objects);
    let plain_cold = pass(&plain, &objects);
    let native = pass(&builtin, &objects);
    let native_warm = pass(&builtin, &objects);
    println!("interpreter/lua-cold      {cold:8.2} µs/object ({n} objects)");
    println!("interpreter/lua-warm      {warm:8.2} µs/object (content cache)");
    println!("interpreter/lua-cold-no-kube {plain_cold:5.2} µs/object (a script without kube helpers)");
    println!("interpreter/builtin       {native:8.2} µs/object");
    println!("interpreter/builtin-again {native_warm:8.2} µs/object");
}
