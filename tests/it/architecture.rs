//! The floor plan, enforced: which top-level modules of `src/` may name which others.
//!
//! Reads every `.rs` file under `src/`, drops comments, string and character literals and
//! `#[cfg(test)]` items (unit tests may use the test bed), and collects each `crate::<module>`
//! the remaining code names (`use crate::a::b`, `use crate::{a, b}`, and paths in
//! expressions). ARCHITECTURE.md ("Invariants") states the same rules in words.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::support::repo_root;

mod registry;

/// The pure core: no I/O, no clock, no knowledge of where inputs come from or output goes.
const CORE: &[&str] = &["model", "schedule", "render"];
/// The edges: they do I/O, hold state between passes, or talk to people and other programs.
const EDGE: &[&str] = &[
    "store",
    "publish",
    "members",
    "reconcile",
    "daemon",
    "api",
    "metrics",
    "cli",
    "config",
    "telemetry",
    "views",
    "ha",
    "secrets",
];

/// Code of one file with comments, literals and `#[cfg(test)]` items blanked out.
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || (next == Some('#') && !is_ident(b.get(i.wrapping_sub(1))))) {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    strip_cfg_test(&out)
}

fn is_ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// The position of the `}` that closes the `{` at `open` in `text` (on code without comments or
/// literals, so braces balance), or `text.len()` when it is not closed.
fn matching_brace(text: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, ch) in text[open..].char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// Removes every item that follows `#[cfg(test)]`: up to the end of its balanced braces, or to
/// its `;` (on code without comments or literals, so braces balance).
fn strip_cfg_test(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, ch) in after.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The top-level modules named as `crate::<m>` in code.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident =
            rest[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        let trimmed = rest.trim_start();
        if let Some(group) = trimmed.strip_prefix('{') {
            // `crate::{a::x, b, c::{y, z}}`: the first segment of each top-level item.
            let mut depth = 0;
            let mut item_start = true;
            let mut ident = String::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !ident.is_empty() {
                            found.insert(std::mem::take(&mut ident));
                        }
                        item_start = true;
                    }
                    c if item_start && (c.is_alphanumeric() || c == '_') => ident.push(c),
                    c if c.is_whitespace() && ident.is_empty() => {}
                    _ => {
                        if item_start && !ident.is_empty() {
                            found.insert(std::mem::take(&mut ident));
                        }
                        item_start = false;
                    }
                }
            }
            if !ident.is_empty() {
                found.insert(ident);
            }
        } else {
            let ident: String = trimmed.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !ident.is_empty() {
                found.insert(ident);
            }
        }
    }
    found
}

/// Every `.rs` file under `src/` but those that hold only unit tests (`tests.rs`, and a module
/// its parent declares under `#[cfg(test)]`), as its path under
/// `src/` and its code ([`code_only`]), in path order.
fn source_files() -> Vec<(PathBuf, String)> {
    let src = repo_root().join("src");
    let mut found = Vec::new();
    let mut test_only = BTreeSet::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs")
                || path.file_name().and_then(|n| n.to_str()) == Some("tests.rs")
            {
                continue;
            }
            let rel = path.strip_prefix(&src).expect("under src").to_path_buf();
            let text = fs::read_to_string(&path).expect("read source");
            // `#[cfg(test)] mod name;` in `dir/mod.rs` (or `dir.rs`, `lib.rs`): `dir/name.rs`.
            let dir = match rel.file_stem().and_then(|s| s.to_str()) {
                Some("mod" | "lib") => rel.parent().map(Path::to_path_buf).unwrap_or_default(),
                _ => rel.with_extension(""),
            };
            let mut rest = text.as_str();
            while let Some(at) = rest.find("#[cfg(test)]") {
                rest = &rest[at + "#[cfg(test)]".len()..];
                let item = rest.trim_start();
                let item = item.strip_prefix("pub(super) ").or_else(|| item.strip_prefix("pub ")).unwrap_or(item);
                if let Some(name) = item.strip_prefix("mod ").and_then(|m| m.split_once(';')).map(|(n, _)| n.trim())
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                {
                    test_only.insert(dir.join(format!("{name}.rs")));
                }
            }
            found.push((rel, code_only(&text)));
        }
    }
    found.retain(|(rel, _)| !test_only.contains(rel));
    found.sort();
    found
}

/// Top-level module → the other top-level modules its code names, and in which files.
fn module_graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (rel, code) in source_files() {
        let Some(module) = top_module(&rel) else { continue };
        for named in named_modules(&code) {
            if named != module {
                graph.entry(module.clone()).or_default().entry(named).or_default().insert(rel.display().to_string());
            }
        }
        graph.entry(module).or_default();
    }
    graph
}

fn top_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first.strip_suffix(".rs") {
        Some("lib" | "main") => None,
        Some(stem) => Some(stem.to_string()),
        None => Some(first.to_string()),
    }
}

fn violations(
    graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    from: &str,
    forbidden: &[&str],
) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(edges) = graph.get(from) {
        for (to, files) in edges {
            if forbidden.contains(&to.as_str()) {
                v.push(format!("{from} -> {to} ({})", files.iter().cloned().collect::<Vec<_>>().join(", ")));
            }
        }
    }
    v
}

#[test]
fn the_scanner_sees_imports_and_not_comments_literals_or_unit_tests() {
    let src = r##"
        use crate::model::Quantity;
        use crate::{policy::types::X, util, schedule::{a, b}};
        // use crate::store::Store;
        /* crate::daemon */
        fn f() { let s = "crate::publish::x"; let r = r#"crate::api"#; let c = '"'; crate::render::go(); }
        fn g<'a>(x: &'a str) -> &'a str { x }
        #[cfg(test)]
        mod tests { use crate::testbed::simulate; fn h() { let j = "{"; } }
        fn after() { crate::members::live(); }
    "##;
    let found: Vec<String> = named_modules(&code_only(src)).into_iter().collect();
    assert_eq!(found, ["members", "model", "policy", "render", "schedule", "util"]);
}

#[test]
fn the_core_imports_no_edge_module_and_nothing_of_the_test_bed() {
    let graph = module_graph();
    let mut bad = Vec::new();
    for core in CORE {
        assert!(graph.contains_key(*core), "module {core} not found under src/");
        let mut forbidden: Vec<&str> = EDGE.to_vec();
        forbidden.push("testbed");
        bad.extend(violations(&graph, core, &forbidden));
    }
    // Inside the core, the layers point one way: policy types ← model ← schedule ← render.
    bad.extend(violations(&graph, "model", &["schedule", "render"]));
    bad.extend(violations(&graph, "schedule", &["render"]));
    assert!(bad.is_empty(), "the pure core reaches out:\n{}", bad.join("\n"));
}

#[test]
fn policy_and_util_stand_on_their_own() {
    let graph = module_graph();
    let mut bad = Vec::new();
    // The policy types and their loading: only the ground floor below them.
    let mut not_policy: Vec<&str> = CORE.to_vec();
    not_policy.extend(EDGE);
    not_policy.push("testbed");
    bad.extend(violations(&graph, "policy", &not_policy));
    // The ground floor imports nothing from the crate.
    if let Some(edges) = graph.get("util") {
        for (to, files) in edges {
            bad.push(format!("util -> {to} ({})", files.iter().cloned().collect::<Vec<_>>().join(", ")));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn leader_election_stands_on_config_members_and_util_only() {
    let graph = module_graph();
    assert!(graph.contains_key("ha"), "module ha not found under src/");
    let bad = violations(
        &graph,
        "ha",
        &[
            "store",
            "publish",
            "reconcile",
            "daemon",
            "api",
            "metrics",
            "cli",
            "telemetry",
            "views",
            "testbed",
            "model",
            "schedule",
            "render",
            "policy",
        ],
    );
    assert!(bad.is_empty(), "the election reaches beyond its host client:\n{}", bad.join("\n"));
}

#[test]
fn only_the_cli_dispatches_into_the_test_bed() {
    let graph = module_graph();
    let mut bad = Vec::new();
    for (from, edges) in &graph {
        if from == "testbed" || from == "cli" {
            continue;
        }
        if let Some(files) = edges.get("testbed") {
            bad.push(format!("{from} -> testbed ({})", files.iter().cloned().collect::<Vec<_>>().join(", ")));
        }
    }
    assert!(bad.is_empty(), "the product imports the test bed:\n{}", bad.join("\n"));
}

#[test]
fn metrics_are_recorded_at_the_edge_only() {
    let graph = module_graph();
    let allowed = ["daemon", "api", "cli", "testbed"];
    let mut bad = Vec::new();
    for (from, edges) in &graph {
        if allowed.contains(&from.as_str()) {
            continue;
        }
        if let Some(files) = edges.get("metrics") {
            bad.push(format!("{from} -> metrics ({})", files.iter().cloned().collect::<Vec<_>>().join(", ")));
        }
    }
    assert!(bad.is_empty(), "metrics reached from the core:\n{}", bad.join("\n"));
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = module_graph();
    // Depth-first search for a back edge; report the cycle it closes.
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for to in graph.get(n).map(|e| e.keys().cloned().collect::<Vec<_>>()).unwrap_or_default() {
            if !graph.contains_key(&to) {
                continue; // not a module of ours (a macro path, say)
            }
            match state.get(&to).copied() {
                Some(1) => {
                    let start = path.iter().position(|p| *p == to).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(to);
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(&to, graph, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n) {
            let mut path = Vec::new();
            if let Some(cycle) = visit(n, &graph, &mut state, &mut path) {
                let files: Vec<String> = cycle
                    .windows(2)
                    .map(|w| {
                        format!(
                            "{} -> {}: {}",
                            w[0],
                            w[1],
                            graph[&w[0]][&w[1]].iter().cloned().collect::<Vec<_>>().join(", ")
                        )
                    })
                    .collect();
                panic!("import cycle {}\n{}", cycle.join(" -> "), files.join("\n"));
            }
        }
    }
}

/// The longest function bodies (outside unit tests) in lines, from the code without comments
/// and literals: `fn name` to its balanced closing brace.
fn long_functions(limit: usize) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, code) in source_files() {
        let mut rest = code.as_str();
        let mut offset = 0;
        while let Some(at) = rest.find("fn ") {
            let start = offset + at;
            let before = code[..start].chars().next_back();
            offset = start + 3;
            rest = &code[offset..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            // The body: the first `{` before any `;` (a declaration without body has none).
            let Some(open) = rest.find(['{', ';']).filter(|i| rest.as_bytes()[*i] == b'{') else { continue };
            let end = matching_brace(rest, open);
            let lines = rest[..end].matches('\n').count() + 1;
            if lines > limit {
                found.push(format!("{}: fn {name}: {lines} lines", rel.display()));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn no_function_is_over_200_lines() {
    let long = long_functions(200);
    assert!(long.is_empty(), "split these by concept:\n{}", long.join("\n"));
    // The measure sees long functions (the longest today is about 140 lines).
    assert!(!long_functions(100).is_empty());
}

/// The files of `src/` (unit-test files left out) whose code names the crate `name`
/// (`name::…`, `::name::…`, `use name;`, `use name as …;`), as paths under `src/`.
fn files_naming_crate(name: &str) -> Vec<String> {
    source_files()
        .into_iter()
        .filter(|(_, code)| names_crate(code, name))
        .map(|(rel, _)| rel.display().to_string())
        .collect()
}

/// Whether the code before a `::` ends in a path segment (`my`, `crate`, `self`), not a keyword
/// that can stand before a leading `::` (`use ::sled::x`, `dyn ::sled::X`).
fn follows_a_path_segment(before: &str) -> bool {
    let before = before.trim_end();
    let word: String =
        before.chars().rev().take_while(|c| is_ident(Some(c))).collect::<Vec<_>>().into_iter().rev().collect();
    const KEYWORDS: [&str; 10] = ["use", "dyn", "impl", "mut", "as", "in", "return", "ref", "const", "static"];
    !word.is_empty() && !KEYWORDS.contains(&word.as_str())
}

/// Whether `code` names the crate `name` as a path's first segment: `name::x`, `::name::x`,
/// `use name;`, `use name as n;`, `extern crate name;` — not a word that contains it, nor a
/// later segment of a path (`my::name::x`, `crate::name`).
fn names_crate(code: &str, name: &str) -> bool {
    let mut from = 0;
    while let Some(found) = code[from..].find(name) {
        let at = from + found;
        from = at + name.len();
        let (before, after) = (&code[..at], &code[from..]);
        // Part of a longer word (`sled_size`, `sleds`).
        if is_ident(before.chars().next_back().as_ref()) || is_ident(after.chars().next().as_ref()) {
            continue;
        }
        // A field (`x.sled`), a later segment of a path (`my::sled`); a leading `::` after a
        // keyword or punctuation (`use ::sled::x`, `= ::sled::open()`) is none.
        let before = before.trim_end();
        if before.ends_with('.') || before.strip_suffix("::").is_some_and(follows_a_path_segment) {
            continue;
        }
        let after = after.trim_start();
        if after.starts_with("::")
            || after.starts_with(';')
            || after.strip_prefix("as").is_some_and(|a| a.starts_with(char::is_whitespace))
        {
            return true;
        }
    }
    false
}

#[test]
fn one_module_is_the_home_of_each_outside_store_and_protocol() {
    // The scanner itself: a path names the crate, a word or another crate's path does not.
    assert!(names_crate("use sled::Db;", "sled"));
    assert!(names_crate("fn f() { let t = sled::Config::new(); }", "sled"));
    assert!(!names_crate("fn sled_size() {} let x = my::sled::y; let sleds = 1;", "sled"));
    assert!(!names_crate("use crate::sled::x; use self::sled; let a = b.sled;", "sled"));
    // And every other way of naming it.
    for code in
        ["use ::sled::Db;", "use sled as kv;", "extern crate sled;", "use {sled::Db, std::io};", "<T as sled::X>"]
    {
        assert!(names_crate(code, "sled"), "{code}");
    }
    // Only `store` knows sled, and only `api` knows axum (ARCHITECTURE.md, "Invariants").
    let outside = |name: &str, home: &str| -> Vec<String> {
        files_naming_crate(name).into_iter().filter(|f| !f.starts_with(&format!("{home}/"))).collect()
    };
    assert!(!files_naming_crate("sled").is_empty(), "the scanner finds the store's use of sled");
    assert_eq!(outside("sled", "store"), Vec::<String>::new(), "sled outside store/");
    assert!(!files_naming_crate("axum").is_empty(), "the scanner finds the API's use of axum");
    assert_eq!(outside("axum", "api"), Vec::<String>::new(), "axum outside api/");
}

/// One function of the code ([`functions`]).
struct Function {
    /// Its file under `src/`.
    file: String,
    name: String,
    /// From `fn` to the body's `{` (or to the `;` of a declaration), spaces collapsed.
    signature: String,
    /// Its body, braces included (empty for a declaration).
    body: String,
}

/// Every function of the code (unit tests, comments and literals left out), in file order.
fn functions() -> Vec<Function> {
    let mut found = Vec::new();
    for (rel, code) in source_files() {
        let mut from = 0;
        while let Some(at) = code[from..].find("fn ") {
            let start = from + at;
            from = start + 3;
            if is_ident(code[..start].chars().next_back().as_ref()) {
                continue;
            }
            let rest = &code[from..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let end = rest.find(['{', ';']).unwrap_or(rest.len());
            let signature = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
            let body = match rest[end..].starts_with('{') {
                true => rest[end..(matching_brace(rest, end) + 1).min(rest.len())].to_string(),
                false => String::new(),
            };
            found.push(Function { file: rel.display().to_string(), name, signature, body });
        }
    }
    found
}

/// One settings path (issue 51): a repository is loaded in one place, `reconcile/inputs.rs` —
/// the free `load_inputs` (one-shot) and `Reconciler::load_inputs` (warm) — and every load takes
/// the settings (a load with the built-in profile only, beside the configured ones, is how the
/// daemon's start once found no live member of a policy naming a configured profile).
#[test]
fn every_load_of_the_repository_is_one_of_two_and_takes_the_settings() {
    let loads: Vec<Function> = functions().into_iter().filter(|f| f.name.starts_with("load_inputs")).collect();
    let places: Vec<String> = loads.iter().map(|f| format!("{}: fn {}", f.file, f.name)).collect();
    assert_eq!(
        places,
        ["reconcile/inputs.rs: fn load_inputs", "reconcile/inputs.rs: fn load_inputs"],
        "a load of the repository beside the two"
    );
    for f in &loads {
        assert!(
            f.signature.contains("settings: &super::Settings") || f.signature.contains("&self"),
            "a load that does not take the settings: {}",
            f.signature
        );
    }
}

/// One authentication layer (issue 51): the JSON API's token is checked in one function,
/// `api::authenticate`, the layer every `/api/v1` route is served behind (`api::router` nests
/// the one list, `api::api_v1`) — no handler checks it by hand, and no route of the API is
/// added beside the list — and in the web view's session check (`api::ui::admitted`, which
/// also takes the token). `it::listener::every_api_route_is_behind_the_token_and_the_probes_are_open`
/// asks every route of the list.
#[test]
fn the_api_token_is_checked_by_one_layer_not_by_handlers() {
    let checking: Vec<String> = functions()
        .into_iter()
        .filter(|f| f.file.starts_with("api/") && f.body.contains("authorize("))
        .map(|f| format!("{}: fn {}", f.file, f.name))
        .collect();
    assert_eq!(checking, ["api/mod.rs: fn authenticate", "api/ui/mod.rs: fn admitted"], "the token checked by hand");
    let api = repo_root().join("src/api");
    let mut beside = Vec::new();
    for file in [api.join("mod.rs"), api.join("ui/mod.rs")] {
        let text = fs::read_to_string(&file).expect("read");
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            if line.contains(".route(\"/api") || line.contains(".nest(\"/api") {
                beside.push(format!("{}: {}", file.display(), line.trim()));
            }
        }
    }
    assert_eq!(beside, Vec::<String>::new(), "an API route beside the list `api_v1`");
}

/// Typed parameters (issue 51): no function of `src/` silences clippy's `too_many_arguments`
/// (a context struct says what the arguments are for: `stability::Engine`, `decide::KeyCheck`
/// took the last two).
#[test]
fn no_function_silences_too_many_arguments() {
    let mut found: Vec<String> = source_files()
        .into_iter()
        .filter_map(|(rel, code)| {
            let n = code.matches("too_many_arguments").count();
            (n > 0).then(|| format!("{}: {n}", rel.display()))
        })
        .collect();
    found.sort();
    assert_eq!(found, Vec::<String>::new(), "context structs, not allows");
}

/// The stage files of `src/reconcile/`, each owning one part of the kept state (`struct Kept`).
const STAGES: &[&str] = &["snapshots", "stability", "rollout", "decide", "plan", "record"];

/// The fields of `struct Kept { … }` in `src` (raw source): name and whether it is `pub`.
fn kept_fields(src: &str) -> Vec<(String, bool)> {
    let Some(start) = src.find("struct Kept {") else { return Vec::new() };
    let body = &src[start + "struct Kept {".len()..];
    let body = &body[..body.find("\n}").unwrap_or(body.len())];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with('#'))
        .filter_map(|l| {
            let (public, rest) = match l.strip_prefix("pub") {
                Some(r) => (true, r.trim_start_matches(|c: char| c != ' ').trim_start()),
                None => (false, l),
            };
            let name = rest.split(':').next()?.trim();
            (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') && rest.contains(':'))
                .then(|| (name.to_string(), public))
        })
        .collect()
}

/// Kept state has one owner per field (issue 51): each stage's part (`<stage>::Kept`) has
/// private fields (the compiler then lets no other file name them), but the decisions decide
/// lends to plan and record; no stage file names another stage's part or the whole
/// `cache::Kept` (the record stage's files excepted, `record.rs` and the replay inputs it
/// stores, `replay.rs`: they stamp the decisions decide lends with what was persisted); the
/// others read the placements through `record::Kept::placements` and decide through
/// `record::Lent`; and the whole holds the parts and nothing else — a new field shared by
/// stages fails here.
#[test]
fn no_field_of_kept_state_is_named_by_two_stage_files() {
    let root = repo_root().join("src/reconcile");
    let read = |name: &str| fs::read_to_string(root.join(format!("{name}.rs"))).expect("read a stage file");
    let mut public = Vec::new();
    for stage in STAGES {
        let fields = kept_fields(&read(stage));
        assert!(!fields.is_empty(), "{stage}.rs has no struct Kept");
        public.extend(fields.into_iter().filter(|(_, p)| *p).map(|(f, _)| format!("{stage}::Kept::{f}")));
    }
    assert_eq!(public, ["decide::Kept::decisions"], "a stage's kept fields are its own (private)");
    let whole = kept_fields(&read("cache"));
    let shared: BTreeSet<&str> = whole.iter().map(|(f, _)| f.as_str()).filter(|f| !STAGES.contains(f)).collect();
    assert_eq!(shared, BTreeSet::new(), "cache::Kept holds the stages' parts and nothing else");
    let mut naming = Vec::new();
    for (rel, code) in source_files() {
        let Some(stage) = rel.strip_prefix("reconcile").ok().and_then(|r| r.file_stem()).and_then(|s| s.to_str())
        else {
            continue;
        };
        if ["cache", "mod", "preview", "audit", "record", "replay"].contains(&stage) {
            continue;
        }
        for other in STAGES.iter().filter(|o| **o != stage).chain(&["cache"]) {
            let part = format!("{other}::Kept");
            let names =
                code.match_indices(&part).any(|(i, _)| !is_ident(code[i + part.len()..].chars().next().as_ref()));
            if names {
                naming.push(format!("reconcile/{stage}.rs names {other}::Kept"));
            }
        }
    }
    assert_eq!(naming, Vec::<String>::new(), "each stage takes its own part");
}

/// The lines of `code` that keep a pointer as an integer (`Arc::as_ptr(x) as usize`,
/// `ptr::from_ref(x) as usize`, `x as *const T as usize`, `.addr()`).
fn pointers_as_integers(code: &str) -> Vec<String> {
    code.lines()
        .filter(|l| {
            let cast = l.contains(" as usize") || l.contains(" as u64");
            let pointer = l.contains("as_ptr") || l.contains("from_ref") || l.contains("*const") || l.contains("*mut");
            (cast && pointer) || l.contains(".addr()") || l.contains("expose_provenance")
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// No pointer is kept as an integer and no key is an address (issue 51): an object's identity
/// is `util::memo::ArcKey`, which holds the `Arc` it stands for.
#[test]
fn no_pointer_is_kept_as_an_integer() {
    let found: Vec<String> = source_files()
        .into_iter()
        .flat_map(|(rel, code)| pointers_as_integers(&code).into_iter().map(move |l| format!("{}: {l}", rel.display())))
        .collect();
    assert_eq!(found, Vec::<String>::new(), "util::memo::ArcKey, not an address");
    // The scanner sees the forms it looks for.
    let old = "let at = Arc::as_ptr(p) as usize;\nlet k = std::ptr::from_ref::<T>(v) as usize;\nlet a = p.addr();";
    assert_eq!(pointers_as_integers(old).len(), 3);
}

/// The words of a signature that name a bare integer index type (`usize`, `u32`), counts
/// (`total: usize`) left out.
fn bare_indices(signature: &str) -> Vec<&str> {
    signature
        .split(',')
        .filter(|p| !p.trim_start().starts_with("total:"))
        .flat_map(|p| p.split(|c: char| !c.is_alphanumeric() && c != '_'))
        .filter(|w| matches!(*w, "usize" | "u32"))
        .collect()
}

/// Typed positions (issue 51): where the reconciler's kept decisions meet the scheduler, a
/// cluster is named by an index of one space, by its type — `schedule::FleetPos` (the fleet's
/// name order), `schedule::ViewIx` (the pass's views, as a kept decision names its clusters),
/// `schedule::HeldIx` (the verdicts a kept result holds: which changed) — never by a bare
/// integer, so an index of one space is not taken for another's (`Fleet::positions_of` is the
/// one conversion from the views to the fleet). `outcome_stands` once took two `&[usize]` of
/// two spaces and needed its doc to tell them apart.
#[test]
fn positions_are_typed_where_kept_decisions_meet_the_scheduler() {
    const TYPED: &[(&str, &str)] = &[
        ("schedule/mod.rs", "outcome_stands"),
        ("schedule/mod.rs", "decide"),
        ("schedule/mod.rs", "decide_on"),
        ("schedule/fleet.rs", "positions_of"),
        ("schedule/fleet.rs", "position"),
        ("schedule/fleet.rs", "cluster"),
        ("schedule/select/mod.rs", "select_clusters_at"),
        ("reconcile/cache.rs", "clusters_state"),
        ("reconcile/cache.rs", "state_since"),
        ("reconcile/decide.rs", "capacity_stands"),
        ("reconcile/decide.rs", "outcome_stands_on"),
        ("reconcile/snapshots.rs", "of_position"),
    ];
    let all = functions();
    let mut bare = Vec::new();
    for (file, name) in TYPED {
        let found: Vec<&Function> = all.iter().filter(|f| f.file == *file && f.name == *name).collect();
        assert!(!found.is_empty(), "{file}: fn {name} not found");
        for f in found.into_iter().filter(|f| !bare_indices(&f.signature).is_empty()) {
            bare.push(format!("{file}: fn {}", f.signature));
        }
    }
    assert_eq!(bare, Vec::<String>::new(), "a bare integer where a typed position is meant");
    // The kept decision's clusters and the pass's positions by name are views' indices.
    let cache = fs::read_to_string(repo_root().join("src/reconcile/cache.rs")).expect("read");
    let snapshots = fs::read_to_string(repo_root().join("src/reconcile/snapshots.rs")).expect("read");
    assert!(cache.contains("pub clusters: Vec<ViewIx>,"), "CachedDecision::clusters");
    assert!(snapshots.contains("pub positions: HashMap<String, ViewIx>,"), "Pass::positions");
    // The scanner sees the old form.
    let old = "outcome_stands(fleet: &Fleet, (at, changed): (Option<&[usize]>, Option<&[usize]>)) -> Stands";
    assert_eq!(bare_indices(old), ["usize", "usize"]);
    assert_eq!(bare_indices("position(&self, name: &str) -> Option<FleetPos>"), Vec::<&str>::new());
    assert_eq!(bare_indices("decide_on(fw: &Framework, total: usize) -> Outcome"), Vec::<&str>::new());
}

/// The declaration of field `field` of `struct name` in `code` (from the field's name to the
/// end of its line), if the struct has it.
fn field_declaration(code: &str, name: &str, field: &str) -> Option<String> {
    let head = format!("struct {name}");
    let start = code
        .match_indices(&head)
        .find(|(i, _)| !is_ident(code[i + head.len()..].chars().next().as_ref()))
        .map(|(i, _)| i + head.len())?;
    let body = &code[start..];
    let open = body.find('{')?;
    let end = matching_brace(body, open);
    body[open + 1..end].lines().map(str::trim).find_map(|l| {
        let rest = match l.strip_prefix("pub") {
            Some(r) => r.trim_start_matches(|c: char| c != ' ').trim_start(),
            None => l,
        };
        rest.strip_prefix(field).filter(|r| r.starts_with(':')).map(|_| rest.to_string())
    })
}

/// Typed index spaces (issue 51), beyond where the kept decisions meet the scheduler: an index
/// into a vector kept across calls or passes is of its space's type, never a bare `usize` or
/// `u32`, so that no index of one space is used in another without a conversion made in one
/// place. The spaces: a result's universe (`schedule::UniversePos`, as a `ClusterSet` gives and
/// takes its members; `FleetPos::in_universe` the one conversion from the fleet's order); a
/// filter combination's groups of rejected clusters (`schedule::GroupIx`) and the fleet memo's
/// distinct answers (`AnswerId`); a topology level's groups (`LevelGroupId`); a node index's
/// groups (`NodeGroupIx`); the policy set's lists (`policy::SetPos<T>`: the templates and the
/// policies, as the policy index kept between passes, the templates' content hashes and a
/// splice's replaced objects name them); the recent placements in store order
/// (`snapshots::StoreIx`: the last pass's list matched to this one's); the views
/// (`schedule::ViewIx`: what a deduction plan reads and deducts from, its undo, the views a
/// pass copied); the pass's decision order (`decide::OrderIx`); and the summary's shards
/// (`render::summary::Shard`: the plan's changed shards, a rollout's entry kept between passes).
#[test]
fn index_spaces_are_typed_where_kept() {
    const TYPED: &[(&str, &str)] = &[
        ("schedule/fleet.rs", "from_sorted"),
        ("schedule/fleet.rs", "contains"),
        ("schedule/fleet.rs", "insert"),
        ("schedule/fleet.rs", "remove"),
        ("schedule/fleet.rs", "intern"),
        ("schedule/select/mod.rs", "groups_at"),
        ("policy/mod.rs", "template_at"),
        ("reconcile/inputs.rs", "template"),
        ("reconcile/decide.rs", "claim"),
        ("reconcile/decide.rs", "debug_check_kept_key"),
        ("reconcile/decide.rs", "render_decided"),
        ("reconcile/snapshots.rs", "align"),
        ("reconcile/snapshots.rs", "position_of"),
        ("reconcile/snapshots.rs", "plan"),
        ("reconcile/snapshots.rs", "apply_logged"),
        ("reconcile/snapshots.rs", "record"),
        ("reconcile/snapshots.rs", "recent_requirements"),
        ("reconcile/snapshots.rs", "recent_digest"),
        ("reconcile/snapshots.rs", "requirement_of"),
        ("render/summary.rs", "shard_of"),
        ("render/summary.rs", "shard_name"),
        ("render/summary.rs", "changed_from"),
        ("reconcile/rollout.rs", "summary_entry"),
    ];
    const FIELDS: &[(&str, &str, &str)] = &[
        ("schedule/fleet.rs", "Combo", "group_of"),
        ("schedule/fleet.rs", "Memo", "keyed"),
        ("schedule/fleet.rs", "Memo", "by_content"),
        ("schedule/fleet.rs", "Memo", "combos"),
        ("schedule/select/mod.rs", "LevelIndex", "ids"),
        ("model/nodes.rs", "NodeIndex", "group_of"),
        ("policy/matching.rs", "IndexPositions", "pps"),
        ("policy/matching.rs", "IndexPositions", "by_name"),
        ("policy/matching.rs", "IndexPositions", "overrides"),
        ("policy/load/incremental.rs", "Spliced", "templates"),
        ("policy/load/incremental.rs", "Spliced", "propagation_policies"),
        ("policy/load/incremental.rs", "Spliced", "cluster_propagation_policies"),
        ("policy/load/incremental.rs", "Spliced", "override_policies"),
        ("policy/load/incremental.rs", "Spliced", "cluster_override_policies"),
        ("reconcile/snapshots.rs", "PassSnapshots", "originals"),
        ("reconcile/snapshots.rs", "PlanMemo", "plan"),
        ("reconcile/snapshots.rs", "Undo", "position"),
        ("reconcile/rollout.rs", "RolloutSummary", "items"),
    ];
    let all = functions();
    let mut bare = Vec::new();
    for (file, name) in TYPED {
        let found: Vec<&Function> = all.iter().filter(|f| f.file == *file && f.name == *name).collect();
        assert!(!found.is_empty(), "{file}: fn {name} not found");
        for f in found.into_iter().filter(|f| !bare_indices(&f.signature).is_empty()) {
            bare.push(format!("{file}: fn {}", f.signature));
        }
    }
    let files: BTreeMap<String, String> =
        source_files().into_iter().map(|(rel, code)| (rel.display().to_string(), code)).collect();
    for (file, strukt, field) in FIELDS {
        let code = files.get(*file).unwrap_or_else(|| panic!("{file} not found"));
        let declared = field_declaration(code, strukt, field).unwrap_or_else(|| panic!("{file}: {strukt}::{field}"));
        if !bare_indices(&declared).is_empty() {
            bare.push(format!("{file}: {strukt}::{declared}"));
        }
    }
    assert_eq!(bare, Vec::<String>::new(), "a bare integer where an index space's type is meant");
    // The scanner sees the old forms.
    let old = "struct IndexPositions {\n    /// Per namespace.\n    pps: KeyMap<String, Vec<usize>>,\n    x: u8,\n}";
    assert_eq!(field_declaration(old, "IndexPositions", "pps").as_deref(), Some("pps: KeyMap<String, Vec<usize>>,"));
    assert_eq!(bare_indices("pps: KeyMap<String, Vec<usize>>,"), ["usize"]);
    assert_eq!(bare_indices("touching: Option<Vec<Vec<u32>>>,"), ["u32"]);
    assert_eq!(bare_indices("fn contains(&self, p: u32) -> bool"), ["u32"]);
    assert_eq!(field_declaration(old, "IndexPosition", "pps"), None, "another struct");
}

/// The text of the item `struct name` or `type name` in `code`: to the end of its body (a
/// struct with fields) or to its `;`.
fn item_text(code: &str, name: &str) -> Option<String> {
    let start = ["struct ", "type "].iter().find_map(|kw| {
        let head = format!("{kw}{name}");
        code.match_indices(&head)
            .find(|(i, _)| !is_ident(code[i + head.len()..].chars().next().as_ref()))
            .map(|(i, _)| i)
    })?;
    let rest = &code[start..];
    let (semi, open) = (rest.find(';'), rest.find('{'));
    let end = match (semi, open) {
        (Some(s), Some(o)) if s < o => s,
        (Some(s), None) => s,
        (_, Some(o)) => matching_brace(rest, o),
        (None, None) => rest.len(),
    };
    Some(rest[..end].to_string())
}

/// The variants of `util::memo::Name` (the memo registry) with their doc comments.
fn memo_registry() -> Vec<(String, String)> {
    let text = fs::read_to_string(repo_root().join("src/util/memo.rs")).expect("read memo.rs");
    let body = &text[text.find("pub enum Name {").expect("enum Name")..];
    let body = &body[..body.find("\n}").expect("end of Name")];
    let mut out = Vec::new();
    let mut doc = String::new();
    for line in body.lines().skip(1).map(str::trim) {
        if let Some(d) = line.strip_prefix("///") {
            doc.push_str(d.trim());
            doc.push(' ');
        } else if let Some(name) = line.strip_suffix(',').filter(|n| n.chars().all(char::is_alphanumeric)) {
            out.push((name.to_string(), std::mem::take(&mut doc)));
        }
    }
    out
}

/// One memo shape (issue 51): every memo of the registry (`util::memo::Name`) is a `Memo` or a
/// `MemoMap` — validity by key equality, one compute function, compared in debug builds with a
/// value given again — or its entry says why it cannot take the shape ("Not a [`Memo`]: …").
/// Those on the shape are named here with their type, whose definition holds the shape, and
/// whose file computes through it (`get_or_compute`; `KeyMemo`'s compute needs what a miss goes
/// on to use, so it keeps what the caller computed: `keep`).
#[test]
fn every_memo_is_on_the_one_shape_or_says_why_not() {
    const ALL_MEMOS: usize = fedsched::util::memo::Name::ALL.len();
    const ON_THE_SHAPE: &[(&str, &str, &str)] = &[
        ("NodeDigests", "reconcile/cache.rs", "NodeDigests"),
        ("StaticDigests", "reconcile/cache.rs", "StaticDigests"),
        ("PolicyIndex", "policy/matching.rs", "KeptIndex"),
        ("Claims", "reconcile/cache.rs", "ClaimMemo"),
        ("DecisionKeys", "reconcile/cache.rs", "KeyMemo"),
    ];
    let registry = memo_registry();
    assert_eq!(registry.len(), ALL_MEMOS, "the registry's variants read (ARCHITECTURE.md counts them)");
    let files: BTreeMap<String, String> =
        source_files().into_iter().map(|(rel, code)| (rel.display().to_string(), code)).collect();
    let mut wrong = Vec::new();
    for (name, doc) in &registry {
        match ON_THE_SHAPE.iter().find(|(n, ..)| n == name) {
            Some((_, file, ty)) => {
                let code = &files[*file];
                let item = item_text(code, ty).unwrap_or_default();
                if !(item.contains("MemoMap<") || item.contains("Memo<")) {
                    wrong.push(format!("{name}: {file}: {ty} is not a Memo or MemoMap"));
                }
                if !(code.contains(".get_or_compute(") || code.contains(".keep(")) {
                    wrong.push(format!("{name}: {file} computes nothing through it"));
                }
            }
            None if doc.contains("Not a [`Memo`]:") || doc.contains("Not a [`MemoMap`]:") => {}
            None => wrong.push(format!("{name}: neither on the shape nor saying why not")),
        }
    }
    assert_eq!(wrong, Vec::<String>::new(), "one memo shape");
    // The scanner reads the old ClaimMemo as what it was.
    let old = "pub struct ClaimMemo {\n    claims: HashMap<ArcKey<Template>, ClaimEntry>,\n}";
    assert!(!item_text(old, "ClaimMemo").is_some_and(|t| t.contains("MemoMap<")));
    assert_eq!(
        item_text("pub struct S(memo::MemoMap<u32, u64, u64>);", "S").as_deref(),
        Some("struct S(memo::MemoMap<u32, u64, u64>)")
    );
}

/// The pass trigger is one type (issue 51), `publish::Trigger`, from the daemon's loop to every
/// place that names it (the pass, its report, the status, the history record it writes, the git
/// commit message): no parameter or field of the product's code holds a trigger as a string. The
/// history's record keeps its name (`store/records.rs`: a stored format, which older records
/// with other names also read as).
#[test]
fn the_pass_trigger_is_an_enum_not_a_string() {
    let found: Vec<String> = source_files()
        .into_iter()
        .filter(|(rel, _)| rel != Path::new("store/records.rs"))
        .flat_map(|(rel, code)| {
            code.lines()
                .filter(|l| {
                    let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
                    l.contains("trigger:&") || l.contains("trigger:String")
                })
                .map(|l| format!("{}: {}", rel.display(), l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(found, Vec::<String>::new(), "a trigger as a string, not `publish::Trigger`");
}

/// The text of a file before its unit tests: everything up to the first top-level
/// `#[cfg(test)]` module, checked to be followed by test modules (and comments) only.
fn before_unit_tests(rel: &Path, text: &str) -> String {
    let mut cut = text.len();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "#[cfg(test)]" {
            let next = text[at + line.len()..].lines().next().unwrap_or("");
            if ["mod ", "pub mod ", "pub(super) mod ", "pub(crate) mod "].iter().any(|m| next.starts_with(m)) {
                cut = at;
                break;
            }
        }
        at += line.len();
    }
    assert!(code_only(&text[cut..]).trim().is_empty(), "{}: code after its first unit-test module", rel.display());
    text[..cut].to_string()
}

/// The publisher knows files by class — an object's, an index of a cluster directory, a shard
/// of the summary — and the output layout (`render::layout`) names and renders the index
/// files (issue 51, "Open output layout"): no file under `src/publish/` names
/// `kustomization` outside its unit tests, in code, literals or docs, so a second output
/// format is a `render::layout::Layout`, not a change of the publisher.
#[test]
fn the_publisher_names_no_index_file() {
    let naming = |dir: &str| -> Vec<String> {
        let root = repo_root().join("src").join(dir);
        let mut found = Vec::new();
        for entry in fs::read_dir(&root).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(repo_root().join("src")).expect("under src").to_path_buf();
            let text = fs::read_to_string(&path).expect("read source");
            for (n, line) in before_unit_tests(&rel, &text).lines().enumerate() {
                if line.to_lowercase().contains("kustomiz") {
                    found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
                }
            }
        }
        found.sort();
        found
    };
    assert_eq!(naming("publish"), Vec::<String>::new(), "the publisher names an index file");
    // The scanner sees the layout's own naming of it, and not a unit test's.
    assert!(naming("render").iter().any(|l| l.starts_with("render/layout.rs:")), "{:?}", naming("render"));
    let with_test = "fn a() {}\n#[cfg(test)]\nmod tests {\n    const K: &str = \"kustomization.yaml\";\n}\n";
    assert!(!before_unit_tests(Path::new("x.rs"), with_test).contains("kustomiz"));
}
