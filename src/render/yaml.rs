//! A deterministic YAML emitter for rendered manifests that every consumer reads the same way.
//!
//! The bytes written here are the product: Argo CD (go-yaml v2, YAML 1.1), Flux and kustomize
//! (kyaml, YAML 1.2-ish) and PyYAML (YAML 1.1) must all resolve every scalar to the same value.
//! So a string is written plain only when no YAML 1.1 or 1.2 resolver could read it as anything
//! but that string; otherwise it is double-quoted (or, for multi-line text, a literal block).
//!
//! Layout: keys in the order of the map (sorted, `serde_json` has no `preserve_order` here),
//! 2-space indentation, sequences under a mapping key not indented (kubectl style), one document
//! without a `---` marker, trailing newline.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// Keys rendered longer than this (in characters) use the explicit `? key` form: YAML limits
/// implicit keys to 1024 characters.
const MAX_IMPLICIT_KEY_CHARS: usize = 1000;

/// Characters that may not start a plain scalar (`-`, `?` and `:` are allowed before a
/// non-space by the spec, but are always quoted here for simplicity).
const INDICATORS: &[char] =
    &['-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`'];

/// Serializes one value as a single YAML document (no `---` marker, trailing newline).
///
/// Output is deterministic: map keys are written in the map's order, and every string that a
/// YAML 1.1 or YAML 1.2 resolver could read as a bool, null, number or timestamp is quoted.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(map) if !map.is_empty() => write_map(&mut out, map, 0),
        Value::Array(items) if !items.is_empty() => write_seq(&mut out, items, 0),
        Value::String(s) => match block_scalar(s, true) {
            Some(block) => write_block(&mut out, &block, 2),
            None => {
                out.push_str(&inline_string(s));
                out.push('\n');
            }
        },
        other => {
            out.push_str(&inline_scalar(other));
            out.push('\n');
        }
    }
    out
}

/// Writes the entries of a non-empty map, each key at column `indent`.
fn write_map(out: &mut String, map: &Map<String, Value>, indent: usize) {
    for (key, value) in map {
        push_indent(out, indent);
        let key = inline_string(key);
        if key.chars().count() > MAX_IMPLICIT_KEY_CHARS {
            out.push_str("? ");
            out.push_str(&key);
            out.push('\n');
            push_indent(out, indent);
            out.push(':');
            // Sequences are indented under an explicit value to keep the form unambiguous.
            write_after_indicator(out, value, indent, indent + 2);
        } else {
            out.push_str(&key);
            out.push(':');
            write_after_indicator(out, value, indent, indent);
        }
    }
}

/// Writes the items of a non-empty sequence, each `-` at column `indent`.
fn write_seq(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        match item {
            Value::Object(map) if !map.is_empty() => {
                let mut nested = String::new();
                write_map(&mut nested, map, indent + 2);
                push_compact(out, &nested, indent);
            }
            Value::Array(inner) if !inner.is_empty() => {
                let mut nested = String::new();
                write_seq(&mut nested, inner, indent + 2);
                push_compact(out, &nested, indent);
            }
            _ => {
                push_indent(out, indent);
                out.push('-');
                write_after_indicator(out, item, indent, indent);
            }
        }
    }
}

/// Appends a collection rendered at `indent + 2` as the content of a sequence entry at `indent`:
/// its first line's indentation is replaced by `- ` (compact form `- key: v`).
fn push_compact(out: &mut String, nested: &str, indent: usize) {
    push_indent(out, indent);
    out.push_str("- ");
    // The nested text starts with exactly `indent + 2` spaces (all ASCII).
    out.push_str(nested.get(indent + 2..).unwrap_or_default());
}

/// Writes the value that follows a `key:` or `-` indicator whose node sits at column `indent`.
/// Nested maps go to `indent + 2`, nested sequences to `seq_indent`.
fn write_after_indicator(out: &mut String, value: &Value, indent: usize, seq_indent: usize) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            write_map(out, map, indent + 2);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            write_seq(out, items, seq_indent);
        }
        Value::String(s) => {
            out.push(' ');
            match block_scalar(s, false) {
                Some(block) => write_block(out, &block, indent + 2),
                None => {
                    out.push_str(&inline_string(s));
                    out.push('\n');
                }
            }
        }
        other => {
            out.push(' ');
            out.push_str(&inline_scalar(other));
            out.push('\n');
        }
    }
}

/// Renders a scalar or empty collection on one line.
fn inline_scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(true) => "true".to_owned(),
        Value::Bool(false) => "false".to_owned(),
        Value::Number(n) => format_number(n),
        Value::String(s) => inline_string(s),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// Formats a number as serde_json does, but keeps floats recognisable as floats under YAML 1.1
/// too: the mantissa always has a decimal point and the exponent always has a sign
/// (`3.0`, `1.0e+16`, `1.5e-7`).
fn format_number(n: &Number) -> String {
    let text = n.to_string();
    if !n.is_f64() {
        return text;
    }
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text.as_str(), None),
    };
    let mut out = mantissa.to_owned();
    if !mantissa.contains('.') {
        out.push_str(".0");
    }
    if let Some(exponent) = exponent {
        out.push('e');
        if !exponent.starts_with(['+', '-']) {
            out.push('+');
        }
        out.push_str(exponent);
    }
    out
}

/// Renders a string on one line: plain when unambiguous, otherwise double-quoted.
fn inline_string(s: &str) -> String {
    if plain_ok(s) { s.to_owned() } else { double_quoted(s) }
}

/// Double-quotes a string with JSON-style escapes (`\uXXXX` for every non-printable and every
/// character that YAML 1.1 treats as a line break).
fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if is_special_char(c) => {
                // All special characters are in the BMP.
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters never written raw: controls (C0 incl. tab and line feed, DEL, C1 incl. NEL),
/// the YAML 1.1 line and paragraph separators, the byte order mark and the non-characters
/// U+FFFE / U+FFFF.
fn is_special_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}')
}

/// Whether `s` can be written as a plain scalar and read back as this same string by YAML 1.1
/// and YAML 1.2 resolvers, as a value and as a key.
fn plain_ok(s: &str) -> bool {
    let (Some(first), Some(last)) = (s.chars().next(), s.chars().next_back()) else {
        return false; // empty
    };
    !(s.chars().any(is_special_char)
        || first.is_whitespace()
        || last.is_whitespace()
        || INDICATORS.contains(&first)
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.starts_with("...")
        || is_reserved_word(s)
        || looks_numeric(s)
        || looks_like_date(s))
}

/// YAML 1.1 / 1.2 bool and null spellings (any case), and the YAML 1.1 value and merge keys.
fn is_reserved_word(s: &str) -> bool {
    const WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];
    matches!(s, "~" | "=" | "<<") || WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
}

/// A conservative superset of what YAML 1.1 or 1.2 resolves as an int or float: decimal,
/// octal (`0755`, `0o17`), hex, binary, `_` separators, exponents, `.5`, sexagesimal
/// (`12:30`, `1:20:30`), `.inf`, `.nan`, plus anything Rust's float parser accepts.
fn looks_numeric(s: &str) -> bool {
    if s.parse::<f64>().is_ok() {
        return true;
    }
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    if [".inf", ".nan", "inf", "infinity", "nan"].iter().any(|w| t.eq_ignore_ascii_case(w)) {
        return true;
    }
    let starts_numeric = t.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    starts_numeric
        && t.chars().any(|c| c.is_ascii_digit())
        && t.chars().all(|c| c.is_ascii_hexdigit() || matches!(c, 'x' | 'X' | 'o' | 'O' | '_' | '.' | ':' | '+' | '-'))
}

/// YAML 1.1 timestamps start with a date `YYYY-M-D` (`2024-01-01`,
/// `2001-12-14t21:59:43.10-05:00`); anything starting like one is quoted.
fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |from: usize, min: usize, max: usize| -> Option<usize> {
        let n = b.get(from..)?.iter().take(max).take_while(|c| c.is_ascii_digit()).count();
        (n >= min).then_some(from + n)
    };
    let date = || -> Option<()> {
        let i = digits(0, 4, 4)?;
        (b.get(i) == Some(&b'-')).then_some(())?;
        let i = digits(i + 1, 1, 2)?;
        (b.get(i) == Some(&b'-')).then_some(())?;
        digits(i + 1, 1, 2).map(|_| ())
    };
    date().is_some()
}

/// A string to be written as a literal block scalar.
struct Block<'a> {
    /// `|` plus the optional indentation indicator and chomping indicator.
    header: String,
    /// The content without its trailing line breaks.
    body: &'a str,
    /// Number of trailing line breaks in the string.
    trailing_newlines: usize,
}

/// Decides whether a multi-line string can be a literal block scalar; `None` means quote it.
///
/// Falls back to quoting for strings without a line feed, made only of line feeds, with a
/// non-printable character, tab or `\r`, or with a line that has trailing spaces. At the top
/// level (`top_level`), a block that would need an indentation indicator is quoted instead,
/// because parsers disagree on what the indicator is relative to there.
fn block_scalar(s: &str, top_level: bool) -> Option<Block<'_>> {
    if !s.contains('\n') {
        return None;
    }
    let body = s.trim_end_matches('\n');
    if body.is_empty()
        || body.chars().any(|c| c != '\n' && is_special_char(c))
        || body.split('\n').any(|line| line.ends_with(' '))
    {
        return None;
    }
    let trailing_newlines = s.len() - body.len();
    let needs_indicator = body.split('\n').find(|line| !line.is_empty()).is_some_and(|line| line.starts_with(' '));
    if needs_indicator && top_level {
        return None;
    }
    let mut header = String::from("|");
    if needs_indicator {
        header.push('2');
    }
    header.push_str(match trailing_newlines {
        0 => "-",
        1 => "",
        _ => "+",
    });
    Some(Block { header, body, trailing_newlines })
}

/// Writes a block scalar header (the caller has written the `key: ` or `- ` before it) and its
/// content lines at column `content_indent`.
fn write_block(out: &mut String, block: &Block<'_>, content_indent: usize) {
    out.push_str(&block.header);
    out.push('\n');
    for line in block.body.split('\n') {
        if !line.is_empty() {
            push_indent(out, content_indent);
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..block.trailing_newlines {
        out.push('\n');
    }
}

fn push_indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Parses with serde-saphyr's default (YAML 1.1-ish) resolution.
    fn parse_default(yaml: &str) -> Value {
        serde_saphyr::from_str::<Value>(yaml).unwrap_or_else(|e| panic!("default parse failed: {e}\n---\n{yaml}"))
    }

    /// Parses with YAML 1.2 booleans.
    fn parse_strict(yaml: &str) -> Value {
        serde_saphyr::from_str_with_options::<Value>(yaml, serde_saphyr::options! { strict_booleans: true })
            .unwrap_or_else(|e| panic!("strict parse failed: {e}\n---\n{yaml}"))
    }

    fn assert_round_trip(v: &Value) {
        let yaml = to_yaml(v);
        assert_eq!(&parse_default(&yaml), v, "default options\n---\n{yaml}");
        assert_eq!(&parse_strict(&yaml), v, "strict_booleans\n---\n{yaml}");
    }

    const TRICKY: &[&str] = &[
        "",
        " ",
        "y",
        "Y",
        "n",
        "N",
        "yes",
        "Yes",
        "YES",
        "no",
        "No",
        "NO",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "true",
        "True",
        "TRUE",
        "tRuE",
        "false",
        "False",
        "FALSE",
        "null",
        "Null",
        "NULL",
        "nUll",
        "~",
        "=",
        "<<",
        "0",
        "1",
        "-1",
        "+1",
        "007",
        "0755",
        "0o17",
        "0O17",
        "0x1F",
        "0X1f",
        "0b101",
        "0B101",
        "1_000",
        "1__0",
        "3.0",
        "1.10",
        "1e3",
        "1E3",
        "1e+3",
        ".5",
        "+.5",
        "-.5",
        "1.",
        ".inf",
        ".Inf",
        "-.Inf",
        "+.inf",
        ".nan",
        ".NaN",
        "-.nan",
        "inf",
        "nan",
        "NaN",
        "infinity",
        "12:30",
        "1:20:30",
        "190:20:30.15",
        "2024-01-01",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10 -5",
        "2001-12-15T02:59:43.1Z",
        "-",
        "--",
        "---",
        "...",
        "....",
        "?",
        "? x",
        ":",
        "::1",
        "a:",
        "a: b",
        "a:b",
        "a #b",
        "a#b",
        "#x",
        "&a",
        "*a",
        "!tag",
        "!!str",
        "|",
        ">",
        "'q'",
        "\"q\"",
        "%x",
        "@x",
        "`x",
        ",",
        "[a]",
        "{a: 1}",
        "a,b",
        " lead",
        "trail ",
        "\ttab",
        "a\tb",
        "nbsp\u{a0}",
        "\u{a0}nbsp",
        "a\u{85}b",
        "a\u{2028}b",
        "a\u{2029}b",
        "\u{feff}bom",
        "bad\u{fffe}",
        "del\u{7f}",
        "nul\u{0}",
        "bell\u{7}",
        "esc\u{1b}",
        "\\",
        "back\\slash",
        "é",
        "日本語",
        "😀",
        "line1\nline2",
        "line1\nline2\n",
        "line1\nline2\n\n",
        "\n",
        "\n\n",
        "\nx",
        "x\n\n\ny",
        "  indented\nnext",
        "trail \nnext",
        "cr\r\nlf",
        "tab\tline\nx",
        "# not a comment\nx",
        "---\n...\n",
        "a\u{85}\nb",
        "-x",
        "?x",
        ":x",
        "1.2.3",
        "v1.2.3",
        "e2e",
        "deadbeef",
        "0xdeadbeef",
        "1a",
        "abc123",
        "100m",
        "512Mi",
        "0.5",
        "1Gi",
        ".",
        "._",
        "1_",
        "0_",
        "+",
        "+a",
        "nginx:1.25",
        "http://example.com/a#b",
        "key=value",
        "a=b",
        "C:\\path",
        "✓ done",
    ];

    #[test]
    fn tricky_strings_round_trip_as_values_and_keys() {
        for s in TRICKY {
            let as_value = json!({ "k": s, "list": [s, { "inner": s }] });
            assert_round_trip(&as_value);
            let mut m = Map::new();
            m.insert((*s).to_owned(), json!(s));
            assert_round_trip(&Value::Object(m));
            assert_round_trip(&json!(s));
            assert_round_trip(&json!([s]));
        }
    }

    #[test]
    fn quoting_decisions() {
        let cases: &[(&str, &str)] = &[
            ("web", "web"),
            ("nginx:1.25", "nginx:1.25"),
            ("512Mi", "512Mi"),
            ("a b c", "a b c"),
            ("http://x/#frag", "http://x/#frag"),
            ("", r#""""#),
            ("yes", r#""yes""#),
            ("Off", r#""Off""#),
            ("~", r#""~""#),
            ("0755", r#""0755""#),
            ("1_000", r#""1_000""#),
            ("1e3", r#""1e3""#),
            ("12:30", r#""12:30""#),
            ("2024-01-01", r#""2024-01-01""#),
            (".inf", r#"".inf""#),
            ("a: b", r#""a: b""#),
            ("a #b", r#""a #b""#),
            ("end:", r#""end:""#),
            ("-x", r#""-x""#),
            (" x", r#"" x""#),
            ("<<", r#""<<""#),
            ("=", r#""=""#),
            ("tab\there", r#""tab\there""#),
            ("q\"\\", r#"q"\"#),
            ("\"q", r#""\"q""#),
            ("nel\u{85}", r#""nel\u0085""#),
            ("bom\u{feff}", r#""bom\uFEFF""#),
            ("日本", "日本"),
        ];
        for (input, expected) in cases {
            assert_eq!(to_yaml(&json!({ "k": input })), format!("k: {expected}\n"), "{input:?}");
        }
    }

    #[test]
    fn numbers_and_scalars() {
        let v = json!({
            "a": 3.0, "b": 1e16, "c": 1.5e-7, "d": -0.0, "e": 0.1, "f": 42, "g": -7,
            "h": u64::MAX, "i": i64::MIN, "j": true, "k": false, "l": null, "m": {}, "n": [],
        });
        let yaml = to_yaml(&v);
        assert_eq!(
            yaml,
            "a: 3.0\nb: 1.0e+16\nc: 1.5e-7\nd: -0.0\ne: 0.1\nf: 42\ng: -7\n\
             h: 18446744073709551615\ni: -9223372036854775808\nj: true\nk: false\nl: null\n\
             m: {}\n\"n\": []\n"
        );
        assert_round_trip(&v);
        for top in [json!(null), json!(1.0), json!({}), json!([]), json!("x"), json!(7)] {
            assert_round_trip(&top);
        }
        assert_eq!(to_yaml(&json!({})), "{}\n");
        assert_eq!(to_yaml(&json!(null)), "null\n");
    }

    #[test]
    fn block_scalars() {
        let v = json!({
            "clip": "a\nb\n",
            "keep": "a\n\nb\n\n\n",
            "strip": "a\n  b",
            "indent": "  a\nb\n",
            "quoted": "trailing \nspace",
            "seq": ["x\ny", { "k": " lead\nz" }],
        });
        let yaml = to_yaml(&v);
        assert_eq!(
            yaml,
            "clip: |\n  a\n  b\nindent: |2\n    a\n  b\nkeep: |+\n  a\n\n  b\n\n\n\
             quoted: \"trailing \\nspace\"\nseq:\n- |-\n  x\n  y\n- k: |2-\n     lead\n    z\n\
             strip: |-\n  a\n    b\n"
        );
        assert_round_trip(&v);
        // A top-level block that would need an indentation indicator is quoted.
        assert_eq!(to_yaml(&json!(" a\nb")), "\" a\\nb\"\n");
        assert_eq!(to_yaml(&json!("a\nb")), "|-\n  a\n  b\n");
    }

    #[test]
    fn nested_sequences_and_long_keys() {
        let long_key = "k".repeat(1500);
        let v = json!({
            "matrix": [[1, [2, 3]], [], [{}], [{ "a": [4] }]],
            (long_key.clone()): { "x": [1, 2] },
            "after": [ { "a": 1, "b": [ { "c": "d" } ] } ],
        });
        let yaml = to_yaml(&v);
        assert!(yaml.contains(&format!("? {long_key}\n:\n  x:\n  - 1\n")), "{yaml}");
        assert!(yaml.contains("matrix:\n- - 1\n  - - 2\n    - 3\n- []\n- - {}\n- - a:\n    - 4\n"));
        assert!(yaml.starts_with("after:\n- a: 1\n  b:\n  - c: d\n"), "{yaml}");
        assert_round_trip(&v);
        let long_seq = json!({ (long_key.clone()): [1, { "y": 2 }], "z": "s\nt" });
        assert_round_trip(&long_seq);
    }

    #[test]
    fn golden_deployment() {
        let deployment = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "labels": { "app": "web", "tier": "frontend", "canary": "no" },
                "annotations": {
                    "fedsched.io/policy": "default/web-pp",
                    "note": "line one\nline two\n",
                },
            },
            "spec": {
                "replicas": 3,
                "selector": { "matchLabels": { "app": "web" } },
                "template": {
                    "metadata": { "labels": { "app": "web" } },
                    "spec": {
                        "containers": [{
                            "name": "web",
                            "image": "nginx:1.25",
                            "args": ["--port=8080", "--verbose", "on"],
                            "env": [
                                { "name": "ENABLED", "value": "yes" },
                                { "name": "MODE", "value": "0755" },
                                { "name": "EMPTY", "value": "" },
                            ],
                            "ports": [{ "containerPort": 8080, "protocol": "TCP" }],
                            "resources": {
                                "limits": { "cpu": "500m", "memory": "512Mi" },
                                "requests": { "cpu": 0.25, "memory": "256Mi" },
                            },
                        }],
                        "tolerations": [],
                        "nodeSelector": {},
                    },
                },
            },
        });
        let expected = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    fedsched.io/policy: default/web-pp
    note: |
      line one
      line two
  labels:
    app: web
    canary: \"no\"
    tier: frontend
  name: web
  namespace: default
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - args:
        - \"--port=8080\"
        - \"--verbose\"
        - \"on\"
        env:
        - name: ENABLED
          value: \"yes\"
        - name: MODE
          value: \"0755\"
        - name: EMPTY
          value: \"\"
        image: nginx:1.25
        name: web
        ports:
        - containerPort: 8080
          protocol: TCP
        resources:
          limits:
            cpu: 500m
            memory: 512Mi
          requests:
            cpu: 0.25
            memory: 256Mi
      nodeSelector: {}
      tolerations: []
";
        assert_eq!(to_yaml(&deployment), expected);
        assert_round_trip(&deployment);
    }

    fn arb_string() -> impl Strategy<Value = String> {
        let word = prop::sample::select(TRICKY).prop_map(str::to_owned);
        let chars = "[ a-zA-Z0-9:#.,'\"!&*?|>{}\\[\\]%@`~=<_+\\-\\\\\n\t\r\u{85}\u{a0}\u{2028}\u{feff}é日😀]{0,12}";
        let joined = prop::collection::vec(
            prop_oneof![
                prop::sample::select(TRICKY).prop_map(str::to_owned),
                prop::sample::select(&[" ", ":", ": ", " #", "\n", "\n\n", "  ", "-", "."][..]).prop_map(str::to_owned),
                "[a-z0-9]{1,4}",
            ],
            1..5,
        )
        .prop_map(|parts| parts.concat());
        prop_oneof![word, chars, joined]
    }

    fn arb_number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
            (-1_000_000i64..1_000_000, -20i32..20)
                .prop_filter_map("finite", |(m, e)| { Number::from_f64(m as f64 * 10f64.powi(e)).map(Value::Number) }),
        ]
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            arb_number(),
            arb_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(arb_string(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn round_trips_under_yaml11_and_yaml12_resolution(v in arb_json()) {
            let yaml = to_yaml(&v);
            let default = serde_saphyr::from_str::<Value>(&yaml);
            prop_assert!(default.is_ok(), "default parse failed: {:?}\n---\n{}", default, yaml);
            prop_assert_eq!(default.ok(), Some(v.clone()), "default options\n---\n{}", yaml);
            let strict = serde_saphyr::from_str_with_options::<Value>(
                &yaml,
                serde_saphyr::options! { strict_booleans: true },
            );
            prop_assert_eq!(strict.ok(), Some(v.clone()), "strict_booleans\n---\n{}", yaml);
            prop_assert!(yaml.ends_with('\n'));
            prop_assert_eq!(to_yaml(&v), yaml, "deterministic");
        }
    }
}
