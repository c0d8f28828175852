//! What a load parsed, kept across restarts: [`ParseStore`] holds each file's parsed documents
//! keyed by [`digest`] (SHA-256 of the parser's version and the file's bytes), so a restarted
//! process reads the repository but does not parse an unchanged file again (YAML parsing was
//! most of a restart's load). The documents are kept in a compact binary form of their
//! values ([`encode`], [`decode`]) that gives back exactly the values parsed: same numbers
//! (unsigned, negative or floating, bit for bit), same strings, same maps.
//!
//! The store is a cache: an entry that is missing, from another parser version (another
//! digest) or that does not decode is parsed again; a store that cannot be written only costs
//! the next restart its parsing.

use serde_json::{Map, Number, Value};

use super::parse::Parsed;

/// Bumped whenever what [`super::parse::parse_file`] gives for the same bytes changes (the
/// YAML options, the document split, the parser crate): entries of another version are
/// never read (their digests differ) and are dropped at the next prune.
const PARSER_VERSION: &str = concat!("fedsched-parse-1/", env!("CARGO_PKG_VERSION"), "/serde-saphyr-2.2");

/// Where the parsed documents of files are kept between processes (the reconciler's store).
pub trait ParseStore: Send + Sync {
    /// The encoded documents of the file whose [`digest`] is `key`, if kept.
    fn get(&self, key: &[u8; 32]) -> Option<Vec<u8>>;
    /// Keeps the encoded documents of files (key, [`encode`]d documents).
    fn put(&self, entries: Vec<([u8; 32], Vec<u8>)>);
    /// Forgets every entry whose key is not in `keep` (the files of the repository now).
    fn retain(&self, keep: &std::collections::HashSet<[u8; 32]>);
    /// Forgets the entries of `keys`.
    fn remove(&self, keys: Vec<[u8; 32]>);
}

/// The key of a file's parsed documents: SHA-256 of the parser's version and the bytes.
pub fn digest(text: &str) -> [u8; 32] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(PARSER_VERSION.as_bytes());
    ctx.update(&[0]);
    ctx.update(text.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

// Tags of the encoding: one byte per value, lengths and integers as LEB128.
const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const UNSIGNED: u8 = 3;
const NEGATIVE: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;
const DOC_OK: u8 = 9;
const DOC_ERR: u8 = 10;

/// Deepest nesting [`decode`] accepts (deeper input is parsed again instead).
const MAX_DEPTH: usize = 256;

/// The documents of one file in the kept form.
pub fn encode(parsed: &Parsed) -> Vec<u8> {
    let mut out = Vec::new();
    put_len(&mut out, parsed.len());
    for (number, doc) in parsed {
        put_len(&mut out, *number);
        match doc {
            Ok(value) => {
                out.push(DOC_OK);
                put_value(&mut out, value);
            }
            Err(message) => {
                out.push(DOC_ERR);
                put_str(&mut out, message);
            }
        }
    }
    out
}

/// The documents [`encode`] gave `bytes` for; `None` when they are not such an encoding.
pub fn decode(bytes: &[u8]) -> Option<Parsed> {
    let mut r = Reader { bytes, at: 0 };
    let count = r.len()?;
    let mut out = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let number = r.len()?;
        let doc = match r.byte()? {
            DOC_OK => Ok(r.value(0)?),
            DOC_ERR => Err(r.string()?),
            _ => return None,
        };
        out.push((number, doc));
    }
    (r.at == bytes.len()).then_some(out)
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_len(out: &mut Vec<u8>, n: usize) {
    put_uvarint(out, n as u64);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(UNSIGNED);
                put_uvarint(out, u);
            } else if let Some(i) = n.as_i64() {
                // Negative (non-negative integers are unsigned above): stored as -(i + 1).
                out.push(NEGATIVE);
                put_uvarint(out, !(i as u64));
            } else {
                out.push(FLOAT);
                out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(STRING);
            put_str(out, s);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            put_len(out, items.len());
            for item in items {
                put_value(out, item);
            }
        }
        Value::Object(map) => {
            out.push(OBJECT);
            put_len(out, map.len());
            for (k, v) in map {
                put_str(out, k);
                put_value(out, v);
            }
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn uvarint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// A length: never more than the bytes left (each element takes at least one byte).
    fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.uvarint()?).ok()?;
        (n <= self.bytes.len() - self.at).then_some(n)
    }

    fn string(&mut self) -> Option<String> {
        let n = self.len()?;
        let s = std::str::from_utf8(self.bytes.get(self.at..self.at + n)?).ok()?;
        self.at += n;
        Some(s.to_owned())
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.byte()? {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            UNSIGNED => Value::Number(Number::from(self.uvarint()?)),
            NEGATIVE => {
                let i = !self.uvarint()? as i64;
                if i >= 0 {
                    return None;
                }
                Value::Number(Number::from(i))
            }
            FLOAT => {
                let raw: [u8; 8] = self.bytes.get(self.at..self.at + 8)?.try_into().ok()?;
                self.at += 8;
                Value::Number(Number::from_f64(f64::from_bits(u64::from_le_bytes(raw)))?)
            }
            STRING => Value::String(self.string()?),
            ARRAY => {
                let n = self.len()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Value::Array(items)
            }
            OBJECT => {
                let n = self.len()?;
                let mut map = Map::new();
                for _ in 0..n {
                    let k = self.string()?;
                    let v = self.value(depth + 1)?;
                    map.insert(k, v);
                }
                if map.len() != n {
                    return None; // a key twice: not an encoding of a parsed map
                }
                Value::Object(map)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_file;
    use super::*;

    /// Whether two parse results are the same, numbers compared by kind and bits (`==` on
    /// `Value` would call 1 and 1.0 different too, but not tell -0.0 from 0.0).
    fn same(a: &Parsed, b: &Parsed) -> bool {
        fn v(a: &Value, b: &Value) -> bool {
            match (a, b) {
                (Value::Number(x), Value::Number(y)) => {
                    (x.as_u64(), x.as_i64(), x.as_f64().map(f64::to_bits))
                        == (y.as_u64(), y.as_i64(), y.as_f64().map(f64::to_bits))
                        && x.is_f64() == y.is_f64()
                }
                (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| v(x, y)),
                (Value::Object(x), Value::Object(y)) => {
                    x.len() == y.len() && x.iter().zip(y).all(|((kx, x), (ky, y))| kx == ky && v(x, y))
                }
                _ => a == b,
            }
        }
        a.len() == b.len()
            && a.iter().zip(b).all(|((na, da), (nb, db))| {
                na == nb
                    && match (da, db) {
                        (Ok(x), Ok(y)) => v(x, y),
                        (Err(x), Err(y)) => x == y,
                        _ => false,
                    }
            })
    }

    #[test]
    fn kept_documents_are_the_parsed_ones_exactly() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: \"1\"\n\
                    n: [0, 1, -1, 9223372036854775807, -9223372036854775808, 18446744073709551615]\n\
                    f: [0.1, -0.0, 1.0e300, 2.5e-308, 3.0, 1.7976931348623157e308]\n\
                    s: [\"\", \"ü ✓ 𝄞\", yes, on, \"0755\", 0755, null, ~, true]\n\
                    nested: {a: {b: {c: [[], {}, [{}]]}}}\n\
                    ---\nkey: [unclosed\n---\n- just\n- a list\n";
        let parsed = parse_file(text);
        assert_eq!(parsed.len(), 3);
        assert!(parsed[1].1.is_err(), "the second document is an error, kept as one");
        let back = decode(&encode(&parsed)).expect("decodes");
        assert!(same(&parsed, &back), "{parsed:?}\n{back:?}");
    }

    /// Karmada's example files (`FEDSCHED_KARMADA_EXAMPLES`, as the integration tests; `.ci/run`
    /// sets it): every file's documents come back exactly as parsed.
    #[test]
    fn the_karmada_examples_come_back_exactly() {
        let Some(examples) = std::env::var_os("FEDSCHED_KARMADA_EXAMPLES") else {
            eprintln!("skipped: FEDSCHED_KARMADA_EXAMPLES is not set (Karmada's example files)");
            return;
        };
        let mut stack = vec![std::path::PathBuf::from(examples)];
        let mut files = 0;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    let parsed = parse_file(&text);
                    let back = decode(&encode(&parsed)).expect("decodes");
                    assert!(same(&parsed, &back), "{}", p.display());
                    files += 1;
                }
            }
        }
        assert!(files > 0, "no example file read");
    }

    #[test]
    fn bytes_that_are_not_an_encoding_do_not_decode() {
        let parsed = parse_file("a: [1, 2, {b: c}]\n");
        let good = encode(&parsed);
        // Every truncation, and trailing bytes.
        for n in 0..good.len() {
            assert!(decode(&good[..n]).is_none(), "truncated at {n}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(decode(&longer).is_none());
        // A huge length, an unknown tag, a NaN, invalid UTF-8, a depth beyond the limit.
        assert!(decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_none());
        assert!(decode(&[1, 1, DOC_OK, 42]).is_none());
        let mut nan = vec![1, 1, DOC_OK, FLOAT];
        nan.extend_from_slice(&f64::NAN.to_bits().to_le_bytes());
        assert!(decode(&nan).is_none());
        assert!(decode(&[1, 1, DOC_OK, STRING, 2, 0xc3, 0x28]).is_none());
        let mut deep = vec![1, 1, DOC_OK];
        deep.extend(std::iter::repeat_n([ARRAY, 1], MAX_DEPTH + 2).flatten());
        deep.push(NULL);
        assert!(decode(&deep).is_none());
        // Every single-byte corruption either fails or decodes to something; never panics.
        for i in 0..good.len() {
            for b in [0u8, 1, 0x7f, 0x80, 0xff] {
                let mut bad = good.clone();
                bad[i] = b;
                let _ = decode(&bad);
            }
        }
    }

    #[test]
    fn the_digest_depends_on_the_bytes() {
        assert_eq!(digest("a: 1\n"), digest("a: 1\n"));
        assert_ne!(digest("a: 1\n"), digest("a: 2\n"));
        assert_ne!(digest(""), [0u8; 32]);
    }
}
