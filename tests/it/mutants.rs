//! Issue 16, "keep it that way": mutants of Karmada's example files and of the demo
//! repository (byte flips, line deletions and duplications, scalar type swaps, deep
//! structures, huge integers such as 2147483647) through the real binary. For every mutant:
//!
//! - `check` ends (no hang), with 0 or 1, never a panic;
//! - when `check` accepts it, `render` ends (no hang) and either succeeds or refuses with a
//!   message `check` printed too (check must reject what render refuses);
//! - `render` never panics.
//!
//! A mutant of the demo replaces that file of a copy of `config/demo`; a mutant of a Karmada
//! example file (`FEDSCHED_KARMADA_EXAMPLES`, see [`crate::support::karmada_examples`]; skipped,
//! and said so, when absent) is added to a copy of the demo, so that it meets clusters,
//! policies and workloads. `FEDSCHED_MUTANTS` sets the number of mutants (default 120, one or
//! two mutations each: 10–30 s of debug binary on two cores). The test prints how many mutants
//! `check` refused and how many were rendered.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::support::*;

/// A command that has not ended by then hangs: a failure. Far above any pass on the demo
/// (well under a second), so that a loaded machine never trips it.
const HANG: Duration = Duration::from_secs(60);

/// One file a mutant starts from: its place in the mutant repository and its bytes.
#[derive(Debug)]
struct Base {
    /// Relative to the repository (`apps/web.yaml`, `karmada/samples_nginx_deployment.yaml`).
    rel: String,
    text: Vec<u8>,
}

fn demo_bases() -> &'static [Base] {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    BASES.get_or_init(|| {
        let root = repo_root().join("config/demo");
        let mut out = Vec::new();
        collect(&root, Path::new(""), &mut out);
        out.into_iter()
            .map(|rel| Base {
                text: std::fs::read(root.join(&rel)).expect("read demo"),
                rel: rel.display().to_string(),
            })
            .collect()
    })
}

/// Karmada's policy, workload and customization examples (not the CRDs, the performance
/// templates or the interpreter test data, which are not repository content).
fn karmada_bases() -> &'static [Base] {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    BASES.get_or_init(|| {
        let Some(root) = karmada_examples() else { return Vec::new() };
        let mut files = Vec::new();
        collect(&root, Path::new(""), &mut files);
        files
            .into_iter()
            .filter(|rel| {
                let r = rel.display().to_string();
                ["artifacts-example/", "samples/", "e2e-manifests/", "interpreter-examples/", "proposals/"]
                    .iter()
                    .any(|p| r.starts_with(p))
                    || (r.starts_with("resourcecustomizations/") && r.ends_with("/customizations.yaml"))
            })
            .map(|rel| Base {
                text: std::fs::read(root.join(&rel)).expect("read example"),
                rel: format!("karmada/{}", rel.display().to_string().replace('/', "_")),
            })
            .collect()
    })
}

fn collect(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let mut names: Vec<_> =
        std::fs::read_dir(root.join(rel)).expect("read dir").map(|e| e.expect("entry").file_name()).collect();
    names.sort();
    for n in names {
        let r = rel.join(n);
        if root.join(&r).is_dir() {
            collect(root, &r, out);
        } else if r.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(r);
        }
    }
}

/// What replaces a scalar: other types, empty and odd values, paths that climb.
const SWAPS: &[&str] = &[
    "\"3\"",
    "3",
    "-1",
    "0",
    "1.5",
    "true",
    "null",
    "~",
    "[]",
    "{}",
    "\"\"",
    "\"/..\"",
    "../../etc/passwd",
    "a/../b",
    "\"\\0\"",
    "*undefined",
    "!!binary aGVsbG8=",
    "[1, [2, [3]]]",
    "{a: 1, a: 2}",
    ".nan",
    "-.inf",
    "0x7fffffff",
    "'{{PLACEHOLDER}}'",
];

/// Huge and edge integers and quantities.
const HUGE: &[&str] = &[
    "2147483647",
    "2147483648",
    "-2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999999999999",
    "1e308",
    "1e400",
    "2147483647Ti",
    "9223372036854775807m",
    "100000000000000000000Gi",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// XOR one byte with a non-zero mask.
    FlipByte(usize, u8),
    DeleteLine(usize),
    DuplicateLine(usize),
    /// The value of a `key: value` line becomes one of [`SWAPS`].
    SwapScalar(usize, usize),
    /// The value of a `key: value` line becomes a structure nested `depth` deep (flow
    /// sequences, flow mappings or block mappings).
    Deep(usize, usize, u8),
    /// The value of a `key: value` line (a number's, when there is one) becomes one of [`HUGE`].
    HugeInt(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => (any::<usize>(), 1u8..=255).prop_map(|(i, m)| Mutation::FlipByte(i, m)),
        1 => any::<usize>().prop_map(Mutation::DeleteLine),
        1 => any::<usize>().prop_map(Mutation::DuplicateLine),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(l, w)| Mutation::SwapScalar(l, w)),
        1 => (any::<usize>(), prop::sample::select(vec![40usize, 130, 300, 5_000, 50_000]), 0u8..3)
            .prop_map(|(l, d, k)| Mutation::Deep(l, d, k)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(l, w)| Mutation::HugeInt(l, w)),
    ]
}

/// The lines of `text` that hold `key: value` (a scalar after the colon): (line, value start).
fn scalar_lines(lines: &[Vec<u8>]) -> Vec<(usize, usize)> {
    lines
        .iter()
        .enumerate()
        .filter_map(|(n, l)| {
            let at = l.windows(2).position(|w| w == b": ")?;
            let rest = &l[at + 2..];
            let first = rest.iter().position(|b| !b.is_ascii_whitespace())?;
            (!matches!(rest[first], b'|' | b'>' | b'#')).then_some((n, at + 2 + first))
        })
        .collect()
}

fn replace_value(lines: &mut [Vec<u8>], candidates: &[(usize, usize)], line: &usize, with: &[u8]) {
    if candidates.is_empty() {
        return;
    }
    let (n, start) = candidates[pick(*line, candidates.len())];
    lines[n].truncate(start);
    lines[n].extend_from_slice(with);
}

fn apply(text: &[u8], m: &Mutation) -> Vec<u8> {
    if let Mutation::FlipByte(at, mask) = m {
        let mut out = text.to_vec();
        if !out.is_empty() {
            let i = pick(*at, out.len());
            out[i] ^= mask;
        }
        return out;
    }
    let mut lines: Vec<Vec<u8>> = text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    match m {
        Mutation::FlipByte(..) => {}
        Mutation::DeleteLine(i) => {
            let n = pick(*i, lines.len());
            lines.remove(n);
        }
        Mutation::DuplicateLine(i) => {
            let n = pick(*i, lines.len());
            let copy = lines[n].clone();
            lines.insert(n, copy);
        }
        Mutation::SwapScalar(l, w) => {
            let c = scalar_lines(&lines);
            replace_value(&mut lines, &c, l, SWAPS[pick(*w, SWAPS.len())].as_bytes());
        }
        Mutation::HugeInt(l, w) => {
            let all = scalar_lines(&lines);
            let numbers: Vec<(usize, usize)> = all
                .iter()
                .copied()
                .filter(|(n, s)| {
                    let v = String::from_utf8_lossy(&lines[*n][*s..]).trim().trim_matches('"').to_string();
                    !v.is_empty() && v.chars().next().is_some_and(|c| c.is_ascii_digit())
                })
                .collect();
            let c = if numbers.is_empty() { all } else { numbers };
            replace_value(&mut lines, &c, l, HUGE[pick(*w, HUGE.len())].as_bytes());
        }
        Mutation::Deep(l, depth, kind) => {
            let c = scalar_lines(&lines);
            if c.is_empty() {
                return lines.join(&b'\n');
            }
            let (n, start) = c[pick(*l, c.len())];
            let indent = lines[n].iter().take_while(|b| **b == b' ').count();
            let value: Vec<u8> = match kind {
                0 => format!("{}1{}", "[".repeat(*depth), "]".repeat(*depth)).into_bytes(),
                1 => format!("{}1{}", "{a: ".repeat(*depth), "}".repeat(*depth)).into_bytes(),
                _ => {
                    // Block mappings, one level a line (bounded: a 50,000-deep block is 2.5 GB).
                    let depth = (*depth).min(2_000);
                    let mut v = Vec::new();
                    for d in 1..=depth {
                        v.push(b'\n');
                        v.extend(std::iter::repeat_n(b' ', indent + d));
                        v.extend_from_slice(b"k:");
                    }
                    v.extend_from_slice(b" 1");
                    v
                }
            };
            lines[n].truncate(start);
            lines[n].extend_from_slice(&value);
        }
    }
    lines.join(&b'\n')
}

/// `i` into a collection of `len` (> 0).
fn pick(i: usize, len: usize) -> usize {
    i % len
}

/// How a bounded run of the binary ended.
struct Run {
    /// None: killed after [`HANG`].
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn panicked(&self) -> bool {
        self.code == Some(101) || self.stderr.contains("panicked at")
    }
    fn shown(&self, what: &str) -> String {
        format!("{what}: exit {:?}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

fn run_bounded(dir: &Path, tag: &str, args: &[&str]) -> Run {
    let out_path = dir.join(format!("{tag}.stdout"));
    let err_path = dir.join(format!("{tag}.stderr"));
    let mut child = Command::new(bin())
        .args(args)
        .env_remove("FEDSCHED_CONFIG")
        .env_remove("NOTIFY_SOCKET")
        .env("FEDSCHED_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run fedsched");
    let deadline = Instant::now() + HANG;
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status.code().unwrap_or(-1));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Run { code, stdout: read(&out_path), stderr: read(&err_path) }
}

/// The lines of a refusal that must also be in `check`'s output: render's stderr without log
/// lines' prefixes, each stripped of `fedsched: `.
fn refusal_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.strip_prefix("fedsched: ").unwrap_or(l).to_string())
        .collect()
}

/// How one mutant ended.
enum Ended {
    Refused,
    Rendered,
    RenderRefused,
}

/// Builds the mutant repository and runs `check`, then `render` when check accepts it.
fn try_mutant(base: &Base, mutations: &[Mutation]) -> Result<Ended, TestCaseError> {
    let mut text = base.text.clone();
    for m in mutations {
        text = apply(&text, m);
    }
    let s = Scratch::with_demo();
    let path = s.policies().join(&base.rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, &text).expect("write mutant");
    let policies = s.policies().display().to_string();
    let check = run_bounded(s.dir.path(), "check", &["check", "--policies", &policies]);
    let what = format!("{} after {mutations:?}", base.rel);
    prop_assert!(check.code.is_some(), "check hangs on {what}");
    prop_assert!(!check.panicked(), "check panics on {what}\n{}", check.shown("check"));
    prop_assert!(matches!(check.code, Some(0 | 1)), "check on {what}\n{}", check.shown("check"));
    if check.code != Some(0) {
        return Ok(Ended::Refused);
    }
    let (out, state) = (s.out().display().to_string(), s.state().display().to_string());
    let render =
        run_bounded(s.dir.path(), "render", &["render", "--policies", &policies, "--out", &out, "--state", &state]);
    prop_assert!(render.code.is_some(), "render hangs on {what} (check accepted it)");
    prop_assert!(!render.panicked(), "render panics on {what}\n{}", render.shown("render"));
    if render.code == Some(0) {
        return Ok(Ended::Rendered);
    }
    {
        let said = format!("{}\n{}", check.stdout, check.stderr);
        for line in refusal_lines(&render.stderr) {
            prop_assert!(
                said.contains(&line),
                "check accepts {what}, render refuses it with a message check did not give: {line}\n{}\n{}",
                check.shown("check"),
                render.shown("render")
            );
        }
    }
    Ok(Ended::RenderRefused)
}

fn cases() -> u32 {
    std::env::var("FEDSCHED_MUTANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(120)
}

/// How the mutants ended (printed at the end, so that a run shows what it exercised).
#[derive(Debug, Default)]
struct Tally {
    refused: usize,
    rendered: usize,
    render_refused: usize,
}

/// Mutants of the demo and of Karmada's examples: `check` never panics or hangs, and what it
/// accepts `render` renders or refuses with check's own message.
#[test]
fn mutants_are_checked_and_rendered_consistently() {
    use proptest::test_runner::{Config, TestRunner};
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        // Each shrinking step runs the binary twice: enough to simplify a mutant, not hours.
        max_shrink_iters: 64,
        ..Config::default()
    };
    let tally = std::cell::RefCell::new(Tally::default());
    let strategy = (any::<bool>(), any::<usize>(), prop::collection::vec(mutation(), 1..3));
    let karmada = karmada_bases();
    let result = TestRunner::new(config).run(&strategy, |(from_karmada, base, mutations)| {
        let bases = if from_karmada && !karmada.is_empty() { karmada } else { demo_bases() };
        let ended = try_mutant(&bases[pick(base, bases.len())], &mutations)?;
        let mut t = tally.borrow_mut();
        match ended {
            Ended::Refused => t.refused += 1,
            Ended::Rendered => t.rendered += 1,
            Ended::RenderRefused => t.render_refused += 1,
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    use std::io::Write;
    let t = tally.into_inner();
    let _ = writeln!(
        std::io::stderr(),
        "mutants: {} refused by check, {} accepted and rendered, {} accepted and refused by render with check's message ({} Karmada example files{})",
        t.refused,
        t.rendered,
        t.render_refused,
        karmada.len(),
        if karmada.is_empty() { ": skipped, demo only" } else { "" }
    );
}

#[test]
fn mutations_do_what_they_say() {
    let text = b"a: 1\nb:\n  c: \"x\"\nd: |\n  text\n";
    let first = 0usize;
    assert_eq!(apply(text, &Mutation::DeleteLine(first)), b"b:\n  c: \"x\"\nd: |\n  text\n");
    assert_eq!(apply(text, &Mutation::DuplicateLine(first)), b"a: 1\na: 1\nb:\n  c: \"x\"\nd: |\n  text\n");
    // Scalars only: `b:` holds a mapping, `d:` a block scalar.
    assert_eq!(scalar_lines(&text.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect::<Vec<_>>()), [(0, 3), (2, 5)]);
    assert_eq!(apply(text, &Mutation::HugeInt(first, first)), b"a: 2147483647\nb:\n  c: \"x\"\nd: |\n  text\n");
    assert_eq!(apply(text, &Mutation::FlipByte(first, 0x20)), b"A: 1\nb:\n  c: \"x\"\nd: |\n  text\n");
    let deep = apply(text, &Mutation::Deep(first, 3, 0));
    assert!(deep.starts_with(b"a: [[[1]]]\n"), "{}", String::from_utf8_lossy(&deep));
}
