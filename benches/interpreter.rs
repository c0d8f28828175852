//! The resource interpreter per object (issue 15): a `replicaResource` Lua script on 10,000
//! distinct CloneSets, cold (every object new: the VM runs) and warm (the same objects again:
//! the content cache answers), and the built-in Rust interpreter for comparison.
//!
//! Not a timed test: it prints per-object times. Run: `cargo bench --bench interpreter`
//! (release), or `cargo bench --profile dev --bench interpreter -- --test` (CI: one small pass).
//! `-- --cold N` runs only the cold pass over N objects (after one object that starts the VM),
//! for an instruction count that does not depend on the machine's load:
//! `valgrind --tool=callgrind --toggle-collect='interpreter::pass' <bench binary> --cold 2000`
//! (`--builtin` as well: the Rust built-in instead of the script; `--unbounded`: the script
//! on a VM without the budget's instruction hook and step-metered library, issue 47).
//! `-- --bounding [N]`: the bounding's cost as a same-run ratio — each script's cold pass over N
//! new objects (default 2,000) on the bounded VM and on the unbounded one, alternating, seven
//! rounds, medians (BENCHMARKS.md).

use std::sync::Arc;
use std::time::Instant;

use fedsched::model::interpreter::lua::unbounded_for_benchmarks;
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

/// A script that matches patterns (the step-metered matcher against C Lua's): the name's parts,
/// the labels' keys and values.
const PATTERNS: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: patterns}
spec:
  target: {apiVersion: apps.kruise.io/v1alpha1, kind: CloneSet}
  customizations:
    replicaResource:
      luaScript: |
        function GetReplicas(obj)
          local base, n = string.match(obj.metadata.name, "^(%a+)%-(%d+)$")
          local score = 0
          for k, v in pairs(obj.metadata.labels) do
            if string.find(k, "^app") then
              local s = string.gsub(v, "%-", "_")
              score = score + #s
            end
          end
          for w in string.gmatch(obj.spec.template.spec.containers[1].image, "[^/:]+") do
            score = score + #w
          end
          if base == nil or score < 0 then return 0 end
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

fn interpreters(text: &str) -> Interpreters {
    Interpreters::new(
        Vec::new(),
        parse_customizations(text, "bench").unwrap_or_else(|e| panic!("{e}")).into_iter().map(Arc::new).collect(),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The bounding's cost: each script cold on the bounded VM and on the unbounded one, alternating
/// (which goes first alternates too), new objects every pass (the content cache never answers).
fn bounding(n: usize, rounds: usize) {
    for (name, text) in [("lua-cold", CUSTOMIZATION), ("lua-cold-no-kube", PLAIN), ("lua-cold-patterns", PATTERNS)] {
        let which = interpreters(text);
        let (mut bounded, mut unbounded) = (Vec::new(), Vec::new());
        for r in 0..rounds {
            let objects =
                |k: usize| -> Vec<Value> { (0..n).map(|i| object(1_000_000 * (2 * r + k + 1) + i)).collect() };
            let (a, b) = (objects(0), objects(1));
            for first in [r % 2 == 0, r % 2 == 1] {
                unbounded_for_benchmarks(!first);
                pass(&which, &[object(999_999_000 + r * 2 + usize::from(first))]);
                let t = pass(&which, if first { &a } else { &b });
                if first { bounded.push(t) } else { unbounded.push(t) }
            }
        }
        unbounded_for_benchmarks(false);
        let (b, u) = (median(bounded), median(unbounded));
        println!(
            "interpreter/bounding {name:<18} bounded {b:7.2} µs/object, unbounded {u:7.2} µs/object, ratio {:.3} \
             (medians of {rounds} alternating rounds of {n} cold objects)",
            b / u
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--bounding") {
        let n = args.get(i + 1).and_then(|n| n.parse::<usize>().ok()).unwrap_or(if quick_mode() { 50 } else { 2_000 });
        bounding(n, if quick_mode() { 1 } else { 7 });
        return;
    }
    let cold_only =
        args.iter().position(|a| a == "--cold").map(|i| args.get(i + 1).and_then(|n| n.parse::<usize>().ok()));
    let n = match cold_only {
        Some(Some(n)) => n + 1,
        Some(None) => panic!("--cold takes a number of objects"),
        None if quick_mode() => 100,
        None => 10_000,
    };
    let objects: Vec<Value> = (0..n).map(object).collect();
    let (scripted, plain) = (interpreters(CUSTOMIZATION), interpreters(PLAIN));
    let builtin = Interpreters::new(Vec::new(), Vec::new());
    if cold_only.is_some() {
        // `--builtin`: the Rust built-in instead, for what Lua adds.
        let (name, which) =
            if args.iter().any(|a| a == "--builtin") { ("builtin", &builtin) } else { ("lua-cold", &scripted) };
        let name = if args.iter().any(|a| a == "--unbounded") {
            unbounded_for_benchmarks(true);
            "lua-unbounded"
        } else {
            name
        };
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
    if quick_mode() {
        // CI runs the bounding comparison too (one small round).
        bounding(20, 1);
    }
}
