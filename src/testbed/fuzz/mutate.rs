//! Structure-aware mutation: a parsed document (JSON value) changed where a hostile or careless
//! author would change it — a field removed, misspelt or set to a value of another type, a
//! number at a limit, a string with control bytes or of a megabyte, a subtree copied from
//! another document, a list made long, a nesting made deep — and text mutation of what is
//! then written (bytes, lines, indentation, YAML anchors and aliases, document separators).
//! Every choice comes from the case's [`Rng`], so a case is a function of its seed.

use serde_json::{Map, Value, json};

pub(crate) use crate::testbed::simulate::fleet::Rng;

/// Strings that break parsers, names, paths, headers and quantities.
const STRINGS: &[&str] = &[
    "",
    " ",
    "-1",
    "-250m",
    "1e400",
    "0x10",
    "NaN",
    ".inf",
    "1Ei",
    "99999999999999999999Ki",
    "0.000000001",
    "2147483648",
    "~",
    "null",
    "yes",
    "on",
    "0755",
    "12:30",
    "../../etc/passwd",
    "/",
    ".",
    "a/b",
    "UPPER",
    "a\u{0}b",
    "a\u{1}b",
    "a\nb",
    "a\r\nb",
    "a\u{7f}b",
    "é",
    "\u{202e}rtl",
    "\u{feff}bom",
    "${HOME}",
    "%s%n",
    "'\"",
    "*",
    "&anchor",
    "!!binary",
    "- item",
    "key: value",
    "{}",
    "[]",
    "https://127.0.0.1:1/",
    "fedsched.io/x",
    "kube-system",
    "default",
    "In",
    "NotIn",
    "Exists",
    "NoExecute",
    "Divided",
    "Duplicated",
    "Weighted",
    "Aggregated",
    "Push",
];

/// Numbers at limits.
fn number(rng: &mut Rng) -> Value {
    match rng.below(14) {
        0 => json!(0),
        1 => json!(-1),
        2 => json!(1),
        3 => json!(i32::MAX),
        4 => json!(i64::from(i32::MAX) + 1),
        5 => json!(i32::MIN),
        6 => json!(i64::MAX),
        7 => json!(u64::MAX),
        8 => json!(2.5),
        9 => json!(1e308),
        10 => json!(-1e-308),
        11 => json!(f64::from(f32::MAX)),
        12 => json!(rng.below(1000)),
        _ => json!(-(rng.below(1 << 40) as i64)),
    }
}

/// A string: an interesting one, a long one, or one with a control byte.
pub(crate) fn string(rng: &mut Rng) -> String {
    match rng.below(10) {
        0 => "x".repeat(rng.range(256, 70_000) as usize),
        1 if rng.chance(10) => "a".repeat(1 << 20),
        2 => {
            let mut s = String::from("abc");
            s.insert(rng.below(3) as usize, char::from(rng.below(32) as u8));
            s
        }
        3 => format!("n{}", rng.below(100)),
        _ => rng.pick(STRINGS).to_string(),
    }
}

/// A value of any type.
fn any(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 2 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => number(rng),
        3 | 4 => Value::String(string(rng)),
        5 => Value::Array((0..rng.below(4)).map(|_| any(rng, depth + 1)).collect()),
        6 => {
            let mut m = Map::new();
            for _ in 0..rng.below(4) {
                m.insert(string(rng), any(rng, depth + 1));
            }
            Value::Object(m)
        }
        _ => deep(rng.range(50, 3_000) as usize),
    }
}

/// A nesting `depth` levels deep (lists in maps in lists).
fn deep(depth: usize) -> Value {
    let mut v = json!("bottom");
    for i in 0..depth {
        // Not `json!`: it serializes its argument again (quadratic in the depth).
        v = if i % 2 == 0 { Value::Array(vec![v]) } else { Value::Object(Map::from_iter([("a".to_string(), v)])) };
    }
    v
}

/// A path to a node of `v` chosen by a random walk from the root (each step goes one level
/// deeper with probability 4/5): cheap on a document of any size.
fn random_path(rng: &mut Rng, v: &Value) -> Vec<Step> {
    let mut path = Vec::new();
    let mut node = v;
    loop {
        let step = match node {
            Value::Object(m) if !m.is_empty() && rng.chance(80) => {
                let i = rng.below(m.len() as u64) as usize;
                m.iter().nth(i).map(|(k, child)| (Step::Key(k.clone()), child))
            }
            Value::Array(a) if !a.is_empty() && rng.chance(80) => {
                let i = rng.below(a.len() as u64) as usize;
                Some((Step::Index(i), &a[i]))
            }
            _ => None,
        };
        let Some((step, child)) = step else { return path };
        path.push(step);
        node = child;
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, s| match s {
        Step::Key(k) => v.get(k),
        Step::Index(i) => v.get(*i),
    })
}

fn at_mut<'a>(v: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, s| match s {
        Step::Key(k) => v.get_mut(k),
        Step::Index(i) => v.get_mut(*i),
    })
}

/// One to `max` structural mutations of `doc`; `donors` are other documents whose subtrees
/// may be copied in.
pub(crate) fn mutate_value(rng: &mut Rng, doc: &mut Value, donors: &[Value], max: u64) {
    for _ in 0..rng.range(1, max) {
        let path = random_path(rng, doc);
        let donor_sub = (!donors.is_empty()).then(|| {
            let d = rng.pick(donors);
            let p = random_path(rng, d);
            at(d, &p).cloned().unwrap_or(Value::Null)
        });
        let Some(node) = at_mut(doc, &path) else { continue };
        match rng.below(13) {
            // Replace with a value of any type.
            0 | 1 => *node = any(rng, 0),
            // Same type, value at a limit.
            2 | 3 => match node {
                Value::Number(_) => *node = number(rng),
                Value::String(_) => *node = Value::String(string(rng)),
                Value::Bool(b) => *b = !*b,
                _ => *node = any(rng, 0),
            },
            // Remove a key or an element.
            4 | 5 => match node {
                Value::Object(m) if !m.is_empty() => {
                    let k = rng.pick(&m.keys().cloned().collect::<Vec<_>>()).clone();
                    m.remove(&k);
                }
                Value::Array(a) if !a.is_empty() => {
                    a.remove(rng.below(a.len() as u64) as usize);
                }
                _ => *node = Value::Null,
            },
            // A key misspelt or added.
            6 => {
                if let Value::Object(m) = node {
                    match m.keys().cloned().collect::<Vec<_>>() {
                        keys if !keys.is_empty() && rng.chance(60) => {
                            let k = rng.pick(&keys).clone();
                            let v = m.remove(&k).unwrap_or(Value::Null);
                            m.insert(typo(rng, &k), v);
                        }
                        _ => {
                            m.insert(string(rng), any(rng, 1));
                        }
                    }
                }
            }
            // A subtree of another document.
            7 | 8 => {
                if let Some(sub) = donor_sub {
                    *node = sub;
                }
            }
            // A list made long (the same element many times).
            9 => {
                if let Value::Array(a) = node
                    && let Some(first) = a.first().cloned()
                {
                    let n = if rng.chance(20) { 10_000 } else { rng.range(2, 200) };
                    let size = serde_json::to_string(&first).map(|t| t.len()).unwrap_or(1).max(1);
                    a.extend(std::iter::repeat_n(first, (n as usize).min(MAX_TEXT / size)));
                }
            }
            // Deep nesting.
            10 => *node = deep(rng.range(64, 2_000) as usize),
            // A map made wide.
            11 => {
                if let Value::Object(m) = node {
                    for i in 0..rng.range(2, 2_000) {
                        m.insert(format!("k{i}"), json!(i));
                    }
                }
            }
            // Swap a list and a map, a string and a number.
            _ => {
                *node = match node.take() {
                    Value::Array(a) => {
                        Value::Object(a.into_iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect())
                    }
                    Value::Object(m) => Value::Array(m.into_iter().map(|(_, v)| v).collect()),
                    Value::String(s) => s.parse::<f64>().map(|f| json!(f)).unwrap_or(json!(s.len())),
                    Value::Number(n) => Value::String(n.to_string()),
                    other => other,
                }
            }
        }
    }
}

/// `key` with one typo (a letter dropped, doubled, swapped or changed case).
fn typo(rng: &mut Rng, key: &str) -> String {
    let mut c: Vec<char> = key.chars().collect();
    if c.is_empty() {
        return "x".into();
    }
    let i = rng.below(c.len() as u64) as usize;
    match rng.below(4) {
        0 => {
            c.remove(i);
        }
        1 => c.insert(i, c[i]),
        2 if i + 1 < c.len() => c.swap(i, i + 1),
        _ => c[i] = if c[i].is_ascii_lowercase() { c[i].to_ascii_uppercase() } else { 'z' },
    }
    c.into_iter().collect()
}

/// YAML fragments spliced into text.
const FRAGMENTS: &[&str] = &[
    "---\n",
    "--- |\n",
    "...\n",
    "\t",
    "  ",
    ": ",
    "- ",
    "&a ",
    "*a",
    "<<: *a\n",
    "!!str ",
    "!!binary ",
    "!custom ",
    "? ",
    "|-\n",
    ">\n",
    "'",
    "\"",
    "\\",
    "#",
    "{",
    "}",
    "[",
    "]",
    "\u{0}",
    "\u{7}",
    "\r",
    "\u{feff}",
    "%YAML 1.1\n",
    "%TAG ! tag:example.com,2000:\n",
];

/// A YAML "billion laughs": aliases of aliases.
fn laughs(levels: usize) -> String {
    let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..levels {
        let p = i - 1;
        s.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
    }
    s
}

/// One to `max` mutations of `text` as bytes (the result need not be UTF-8).
pub(crate) fn mutate_bytes(rng: &mut Rng, bytes: &mut Vec<u8>, max: u64) {
    for _ in 0..rng.range(1, max) {
        let len = bytes.len() as u64;
        let i = rng.below(len + 1) as usize;
        match rng.below(9) {
            0 => {
                if !bytes.is_empty() {
                    let j = i.min(bytes.len() - 1);
                    bytes[j] = rng.next() as u8;
                }
            }
            1 => {
                let f = rng.pick(FRAGMENTS).as_bytes();
                bytes.splice(i..i, f.iter().copied());
            }
            2 => bytes.truncate(i),
            3 | 4 => {
                // A line removed, doubled, or re-indented.
                let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
                let l = rng.below(lines.len() as u64) as usize;
                match rng.below(4) {
                    0 => {
                        lines.remove(l);
                    }
                    1 => lines.insert(l, lines[l].clone()),
                    2 => lines[l].insert(0, b' '),
                    _ => {
                        let first = lines[l].iter().position(|b| *b != b' ').unwrap_or(lines[l].len());
                        lines[l].drain(..first);
                    }
                }
                *bytes = lines.join(&b'\n');
            }
            5 => bytes.extend_from_slice(laughs(rng.range(2, 9) as usize).as_bytes()),
            6 => {
                // A range copied elsewhere.
                let j = rng.below(len + 1) as usize;
                let (a, b) = (i.min(j), i.max(j).min(i.min(j).saturating_add(4_096)));
                let chunk = bytes[a..b].to_vec();
                let k = rng.below(bytes.len() as u64 + 1) as usize;
                bytes.splice(k..k, chunk);
            }
            7 => {
                // Invalid UTF-8, or a NUL.
                let b: &[u8] = if rng.chance(50) { &[0xff, 0xfe] } else { &[0] };
                bytes.splice(i..i, b.iter().copied());
            }
            _ => {
                let s = string(rng);
                bytes.splice(i..i, s.bytes());
            }
        }
    }
}

/// How deep `v` nests (counted up to 201).
pub(super) fn depth(v: &Value, at: usize) -> usize {
    if at > 200 {
        return at;
    }
    match v {
        Value::Array(a) => a.iter().map(|c| depth(c, at + 1)).max().unwrap_or(at),
        Value::Object(m) => m.values().map(|c| depth(c, at + 1)).max().unwrap_or(at),
        _ => at,
    }
}

/// The largest document text a case writes: block YAML of a deep nesting grows with the square
/// of its depth, and a case of tens of MiB measures the parser's speed, not its robustness.
pub(crate) const MAX_TEXT: usize = 4 << 20;

/// A value as YAML text: JSON (a YAML subset) or block YAML from the crate's emitter; JSON
/// when the block form is over [`MAX_TEXT`]; `None` when both are.
pub(crate) fn to_text(rng: &mut Rng, v: &Value) -> Option<String> {
    // Block YAML of a deep nesting is quadratic in its depth: such a value is written as JSON.
    let json = rng.chance(30) || depth(v, 0) > 200;
    if !json {
        let yaml = crate::render::yaml::to_yaml(v);
        if yaml.len() <= MAX_TEXT {
            return Some(yaml);
        }
    }
    serde_json::to_string(v).ok().filter(|t| t.len() <= MAX_TEXT)
}
