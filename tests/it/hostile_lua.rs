//! The hostile Lua corpus (issue 47): infinite loops, loops inside coroutines, pathological
//! patterns, string and memory bombs, recursion, hostile comparators and sandbox escapes, each
//! a `replicaResource` script of a customization of its own. Through `interpret`, `check`,
//! `render` and the daemon, every attack ends with a message naming its customization and the
//! operation, and the daemon keeps publishing the other workloads meanwhile; a plan through the
//! API with the same scripts never holds up a pass.
//!
//! No timing is asserted: a command or a daemon that hangs fails the test through a generous
//! outer limit ([`within`]).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::*;

/// One attack: a name (its customization is `evil-<name>`), the body of `GetReplicas`, and what
/// the failure says besides the customization and the operation (empty: anything).
struct Attack {
    name: &'static str,
    body: &'static str,
    says: &'static str,
}

const BUDGET: &str = "exceeded its budget";

const ATTACKS: &[Attack] = &[
    Attack { name: "loop", body: "while true do end", says: BUDGET },
    Attack { name: "loop-in-wrap", body: "coroutine.wrap(function() while true do end end)()", says: BUDGET },
    Attack {
        name: "loop-in-resume",
        body: "coroutine.resume(coroutine.create(function() while true do end end))\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "coroutine-tree",
        body: "local function f(d) if d > 0 then for i = 1, 10 do coroutine.resume(coroutine.create(f), d - 1) end end end\nf(200)\nreturn 1",
        says: BUDGET,
    },
    Attack { name: "coroutine-nest", body: "local function f() coroutine.wrap(f)() end\nf()", says: "stack overflow" },
    Attack { name: "find", body: "return string.find(string.rep('a', 30), string.rep('a*', 30) .. 'b')", says: BUDGET },
    Attack {
        name: "match",
        body: "return string.match(string.rep('a', 30), string.rep('a*', 30) .. 'b')",
        says: BUDGET,
    },
    Attack {
        name: "gmatch",
        body: "for w in string.gmatch(string.rep('a', 30), string.rep('a*', 30) .. 'b') do end\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "gsub",
        body: "return (string.gsub(string.rep('a', 30), string.rep('a*', 30) .. 'b', 'x'))",
        says: BUDGET,
    },
    Attack {
        name: "method-find",
        body: "local s = string.rep('a', 30)\nreturn s:find(string.rep('a*', 30) .. 'b')",
        says: BUDGET,
    },
    Attack {
        name: "deep-pattern",
        body: "return string.find(string.rep('a', 1000000), string.rep('a?', 1000000))",
        says: "pattern too complex",
    },
    Attack {
        name: "plain-find",
        body: "local s = string.rep('a', 4000000)\nreturn string.find(s, string.rep('a', 400000) .. 'b', 1, true)",
        says: "expected a number",
    },
    // C loops two billion times to build nothing; here it ends at once.
    Attack { name: "rep-empty", body: "error('ended with ' .. #string.rep('', 2147483647))", says: "ended with 0" },
    Attack { name: "rep-memory", body: "return #string.rep('x', 2147483647)", says: "memory" },
    Attack {
        name: "table-memory",
        body: "local t = {}\nlocal i = 0\nwhile true do i = i + 1 t[i] = {i, i, i} end",
        says: "memory",
    },
    Attack { name: "doubling", body: "local s = 'x'\nwhile true do s = s .. s end", says: "memory" },
    Attack {
        name: "concat-memory",
        body: "local t = {}\nfor i = 1, 1000 do t[i] = string.rep('x', 100000) end\nreturn #table.concat(t, string.rep('y', 100000))",
        says: "memory",
    },
    Attack {
        name: "recursion",
        body: "local function r(n) return 1 + r(n + 1) end\nreturn r(1)",
        says: "stack overflow",
    },
    Attack {
        name: "gsub-recursion",
        body: "local function f() return string.gsub('aaaa', '.', f) end\nreturn f()",
        says: "stack overflow",
    },
    Attack {
        name: "sort-comparator",
        body: "local t = {}\nfor i = 1, 1000 do t[i] = i end\ntable.sort(t, function(a, b) while true do end end)",
        says: BUDGET,
    },
    Attack {
        name: "sort-long-strings",
        body: "local s = string.rep('a', 8000000)\nlocal t = {}\nfor i = 1, 50000 do t[i] = s end\ntable.sort(t)\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "insert-shifts",
        body: "local t = {}\nfor i = 1, 1000000 do t[i] = i end\nwhile true do table.insert(t, 1, 0) table.remove(t, 1) end",
        says: BUDGET,
    },
    // `pcall`, `xpcall` (issue 48) and `coroutine.resume` catch errors, but not the budget.
    Attack { name: "pcall-loop", body: "while true do pcall(function() while true do end end) end", says: BUDGET },
    Attack { name: "pcall-catch", body: "local ok = pcall(function() while true do end end)\nreturn 1", says: BUDGET },
    Attack {
        name: "xpcall-handler-loop",
        body: "xpcall(function() while true do end end, function() while true do end end)\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "xpcall-handler-swallows",
        body: "local ok, e = xpcall(function() while true do end end, function() return 'fine' end)\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "pcall-in-coroutine",
        body: "coroutine.resume(coroutine.create(function() pcall(function() while true do end end) end))\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "coroutine-in-pcall",
        body: "pcall(coroutine.wrap(function() while true do end end))\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "pcall-nested",
        body: "pcall(pcall, xpcall, function() while true do end end, function(e) return e end)\nreturn 1",
        says: BUDGET,
    },
    Attack {
        name: "pcall-rep-memory",
        body: "local ok = pcall(string.rep, 'x', 2147483647)\nreturn 1",
        says: "memory",
    },
    Attack {
        name: "pcall-doubling",
        body: "pcall(function() local s = 'x' while true do s = s .. s end end)\nreturn 1",
        says: "memory",
    },
    Attack {
        name: "resume-doubling",
        body: "coroutine.resume(coroutine.create(function() local s = 'x' while true do s = s .. s end end))\nreturn 1",
        says: "memory",
    },
    Attack {
        name: "pcall-recursion",
        body: "local function f() local ok, e = pcall(f) error(e, 0) end\nf()",
        says: "stack overflow",
    },
    Attack { name: "error-bomb", body: "error(string.rep('x', 10000000))", says: "bytes in all" },
    Attack { name: "os-execute", body: "os.execute('touch /tmp/fedsched-pwned')\nreturn 1", says: "execute" },
    Attack { name: "io-open", body: "return io.open('/etc/passwd'):read('*a')", says: "io" },
    Attack { name: "loadstring", body: "return loadstring('return 1')()", says: "loadstring" },
    Attack { name: "require-os", body: "return require('os').execute('true')", says: "not available" },
    Attack { name: "string-dump", body: "return loadstring(string.dump(GetReplicas))", says: "dump" },
    Attack { name: "debug-library", body: "return debug.getinfo(1)", says: "debug" },
    Attack { name: "string-metatable", body: "return getmetatable('').__index.rep('x', 3)", says: "boolean" },
    Attack { name: "library-write", body: "string.rep = function() return 1 end\nreturn 1", says: "read-only" },
    Attack { name: "coroutine-write", body: "coroutine.create = nil\nreturn 1", says: "read-only" },
    Attack { name: "setfenv", body: "setfenv(1, {})\nreturn 1", says: "setfenv" },
    Attack { name: "collectgarbage", body: "collectgarbage('stop')\nreturn 1", says: "collectgarbage" },
];

const GROUP: &str = "evil.example.com/v1";

fn kind(i: usize) -> String {
    format!("Attack{i}")
}

/// The customization of attack `i`.
fn customization(i: usize, a: &Attack) -> String {
    let body: String = a.body.lines().map(|l| format!("          {l}\n")).collect();
    format!(
        "apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterCustomization\nmetadata: {{name: evil-{}}}\nspec:\n  target: {{apiVersion: {GROUP}, kind: {}}}\n  customizations:\n    replicaResource:\n      luaScript: |\n        function GetReplicas(obj)\n{body}        end\n",
        a.name,
        kind(i)
    )
}

/// An object of attack `i`'s kind and the policy that propagates it.
fn workload(i: usize) -> String {
    let kind = kind(i);
    let name = kind.to_lowercase();
    format!(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  resourceSelectors:\n  - {{apiVersion: {GROUP}, kind: {kind}, name: {name}}}\n  placement:\n    clusterAffinity: {{clusterNames: [eu-west-a, eu-west-b]}}\n    replicaScheduling: {{replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}}\n---\napiVersion: {GROUP}\nkind: {kind}\nmetadata: {{name: {name}, namespace: shop}}\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers: [{{name: c, image: nginx}}]\n"
    )
}

/// The demo repository with every attack in it (its kinds served by the demo's clusters).
fn hostile_repository() -> Scratch {
    let s = Scratch::with_demo();
    for (i, a) in ATTACKS.iter().enumerate() {
        s.serve(GROUP, &kind(i));
        s.write(&format!("interpreters/evil-{}.yaml", a.name), &customization(i, a));
        s.write(&format!("attacks/{}.yaml", a.name), &workload(i));
    }
    s
}

/// A failure message names the attack's customization and the operation, and says what it
/// should.
fn names(message: &str, a: &Attack) -> bool {
    message.contains(&format!("evil-{}", a.name))
        && message.contains("InterpretReplica")
        && (message.contains(a.says) || message.contains("not run"))
}

#[test]
fn every_attack_ends_through_interpret() {
    let dir = tempfile::tempdir().expect("tmp");
    let _ = std::fs::remove_file("/tmp/fedsched-pwned");
    for (i, a) in ATTACKS.iter().enumerate() {
        let custom = dir.path().join(format!("{}.yaml", a.name));
        std::fs::write(&custom, customization(i, a)).expect("write");
        let object = dir.path().join(format!("{}-object.yaml", a.name));
        let doc = workload(i);
        std::fs::write(&object, doc.split("---\n").nth(1).expect("object")).expect("write");
        let out = within(
            fedsched_cmd(&[
                "interpret",
                "-f",
                custom.to_str().expect("utf8"),
                "--operation",
                "InterpretReplica",
                "--desired",
                object.to_str().expect("utf8"),
            ]),
            Duration::from_secs(120),
        );
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", a.name);
        // One command, one call: always the attack's own failure, never a refusal.
        assert!(names(&stderr, a) && stderr.contains(a.says), "{}: {stderr}", a.name);
        assert!(stderr.len() < 8192, "{}: {} bytes of message", a.name, stderr.len());
    }
    assert!(!Path::new("/tmp/fedsched-pwned").exists());
}

/// `check`, `render` and `plan --local` on one repository holding every attack: each ends; `check` names each
/// customization and operation; `render` publishes the demo's own workloads and each attack's
/// workload is unschedulable with the same message, which `explain` gives.
#[test]
fn every_attack_ends_through_check_and_render() {
    let s = hostile_repository();
    let policies = s.policies();
    let out =
        within(fedsched_cmd(&["check", "--policies", policies.to_str().expect("utf8")]), Duration::from_secs(600));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", text(&out.stderr));
    for a in ATTACKS {
        assert!(stdout.lines().any(|l| names(l, a)), "check says nothing of {}: {stdout}", a.name);
    }
    let (o, st) = (s.out(), s.state());
    let out = within(
        fedsched_cmd(&[
            "render",
            "--policies",
            policies.to_str().expect("utf8"),
            "--out",
            o.to_str().expect("utf8"),
            "--state",
            st.to_str().expect("utf8"),
        ]),
        Duration::from_secs(600),
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(s.out().join("eu-west-a/shop/apps_deployment_web.yaml").exists(), "the demo is published: {stderr}");
    for (i, a) in ATTACKS.iter().enumerate() {
        let name = kind(i).to_lowercase();
        assert!(
            stderr.lines().any(|l| l.contains("unschedulable") && l.contains(&name) && names(l, a)),
            "render says nothing of {}: {stderr}",
            a.name
        );
    }
    // `plan --local` on the same repository and store ends too.
    let out = within(
        fedsched_cmd(&[
            "plan",
            "--local",
            "--policies",
            policies.to_str().expect("utf8"),
            "--out",
            o.to_str().expect("utf8"),
            "--state",
            st.to_str().expect("utf8"),
            "-o",
            "json",
        ]),
        Duration::from_secs(600),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(matches!(out.status.code(), Some(0 | 2)), "{stdout}\n{stderr}");
    // What `render` published is what the plan finds: every workload evaluated, none changed.
    let v: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    assert!(v["summary"]["workloads"].as_u64().is_some_and(|n| n as usize > ATTACKS.len()), "{stdout}\n{stderr}");
    let out = s.cmd("explain", &[&format!("{}/shop/attack0", kind(0)), "-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(names(&v.to_string(), &ATTACKS[0]), "{v}");
}

/// The daemon on the same repository: its pass ends, the demo's workloads are published, an
/// edit of one of them is published by the next pass, and the log names every attack.
#[test]
fn the_daemon_keeps_publishing_while_every_attack_fails() {
    let s = hostile_repository();
    let d = Daemon::start(&s, "", &[]);
    let web = s.out().join("eu-west-a/shop/apps_deployment_web.yaml");
    wait_for("the first pass to publish the demo", Duration::from_secs(600), || web.exists());
    let before = std::fs::read_to_string(&web).expect("web");
    let edited = std::fs::read_to_string(s.policies().join("apps/web.yaml"))
        .expect("web.yaml")
        .replace("replicas: 9", "replicas: 18");
    s.write("apps/web.yaml", &edited);
    wait_for("a pass to publish the edit", Duration::from_secs(600), || {
        std::fs::read_to_string(&web).is_ok_and(|t| t != before)
    });
    let (code, stderr) = d.stop();
    assert_eq!(code, Some(0), "{stderr}");
    for a in ATTACKS {
        assert!(
            stderr.lines().any(|l| l.contains("unschedulable") && names(l, a)),
            "the daemon logged nothing of {}: {stderr}",
            a.name
        );
    }
}

/// `POST /api/v1/plan` of a repository full of scripts that each run to their budget (a pull
/// request's, planned by CI): while the plan runs (its scripts share the plan's allowance, some
/// twenty seconds), the daemon's passes go on and publish an edit.
#[test]
fn a_plan_of_hostile_scripts_never_holds_up_a_pass() {
    use fedsched::api::client::{ServerUrl, post_json};
    let s = Scratch::with_demo();
    let d = Daemon::start(&s, "", &[]);
    let web = s.out().join("eu-west-a/shop/apps_deployment_web.yaml");
    wait_for("the first pass", Duration::from_secs(120), || web.exists() && d.stderr().contains("reconcile done"));
    let addr = std::fs::read_to_string(s.state().join("http.addr")).expect("http.addr");
    let url = ServerUrl::parse(addr.trim()).expect("url");
    let pr = hostile_repository();
    let (files, errors) = fedsched::policy::load::read_repository(&pr.policies(), &Default::default());
    assert!(errors.is_empty(), "{errors:?}");
    let body = serde_json::to_vec(&fedsched::views::plan::PlanRequest { after: files, base: None, diff: false })
        .expect("json");
    let planned = std::thread::spawn(move || {
        let answer = post_json(&url, "/api/v1/plan", body, None, Duration::from_secs(600));
        (Instant::now(), answer)
    });
    // Meanwhile an edit of the daemon's own repository is published.
    let before = std::fs::read_to_string(&web).expect("web");
    let edited = std::fs::read_to_string(s.policies().join("apps/web.yaml"))
        .expect("web.yaml")
        .replace("replicas: 9", "replicas: 18");
    s.write("apps/web.yaml", &edited);
    wait_for("a pass to publish the edit while the plan runs", Duration::from_secs(300), || {
        std::fs::read_to_string(&web).is_ok_and(|t| t != before)
    });
    let published = Instant::now();
    let (answered, answer) = planned.join().expect("plan thread");
    let (code, answer) = answer.expect("the plan is answered");
    assert_eq!(code, 200, "{answer}");
    for a in ATTACKS {
        assert!(answer.contains(&format!("evil-{}", a.name)), "the plan says nothing of {}: {answer}", a.name);
    }
    assert!(published < answered, "the pass published only after the plan answered");
    let (code, stderr) = d.stop();
    assert_eq!(code, Some(0), "{stderr}");
}
