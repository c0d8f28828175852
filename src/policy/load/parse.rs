//! Cutting a file into YAML documents ([`split_documents`]) and parsing each one
//! ([`parse_document`]) with the crate's YAML options ([`yaml_options`]).

use serde_json::Value;

/// The YAML parse options used everywhere in the crate: YAML 1.2 booleans only (`yes`, `on`
/// stay strings), integers with leading zeros (`0755`) stay strings, duplicate keys are errors.
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
    }
}

/// What parsing one file gave: its documents (source document number, value or message).
pub(super) type Parsed = Vec<(usize, Result<Value, String>)>;

pub(super) fn parse_file(text: &str) -> Parsed {
    split_documents(text).iter().map(|raw| (raw.number, parse_document(raw))).collect()
}

/// One YAML document cut out of a file by [`split_documents`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDocument {
    /// 1-based number among the non-empty documents of the file.
    pub number: usize,
    /// 1-based line of the file where `text` starts.
    pub first_line: usize,
    /// The document's lines (including its `---` marker line and directives), `\n`-joined.
    pub text: String,
}

/// Splits a YAML stream into documents, line by line:
///
/// - a line that is `---` alone or followed by a space/tab (`--- # comment`, `--- {a: 1}`)
///   starts a new document, unless everything before it since the last document holds only
///   comments, blank lines and `%` directives (then it belongs to that same document);
/// - a line `...` (alone or followed by a space/tab) ends the current document;
/// - `%YAML` / `%TAG` directives are kept with the document that follows them.
///
/// **Numbering rule:** documents are numbered from 1 in file order, counting only non-empty
/// documents: a document holding only blank lines, comments, markers and directives is
/// skipped and gets no number. (A document that is `null` or `~` gets a number but is ignored
/// by the loader.) A leading UTF-8 byte-order mark is removed.
pub fn split_documents(text: &str) -> Vec<RawDocument> {
    struct Chunk<'a> {
        start: usize,
        lines: Vec<&'a str>,
        has_marker: bool,
        has_content: bool,
    }
    impl<'a> Chunk<'a> {
        fn new(start: usize) -> Self {
            Chunk { start, lines: Vec::new(), has_marker: false, has_content: false }
        }
    }
    fn flush(chunk: Chunk<'_>, out: &mut Vec<RawDocument>) {
        if chunk.has_content {
            let number = out.len() + 1;
            out.push(RawDocument { number, first_line: chunk.start + 1, text: chunk.lines.join("\n") });
        }
    }

    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let mut cur = Chunk::new(0);
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(rest) = marker_rest(line, "---") {
            if cur.has_content || cur.has_marker {
                flush(std::mem::replace(&mut cur, Chunk::new(i)), &mut out);
            }
            cur.has_marker = true;
            cur.has_content |= is_content(rest);
            cur.lines.push(line);
        } else if marker_rest(line, "...").is_some() {
            flush(std::mem::replace(&mut cur, Chunk::new(i + 1)), &mut out);
        } else if line.starts_with('%') && !cur.has_content && !cur.has_marker {
            cur.lines.push(line); // directive
        } else {
            cur.has_content |= is_content(line);
            cur.lines.push(line);
        }
    }
    flush(cur, &mut out);
    out
}

/// If `line` is the marker (`---` / `...`) alone or followed by whitespace, what follows it.
fn marker_rest<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(marker)?;
    if rest.is_empty() || rest.starts_with([' ', '\t']) { Some(rest) } else { None }
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// A YAML error as a person reads it: the parser's message for users (its default one gives
/// advice to programmers, such as `set DuplicateKeyPolicy in Options if acceptable`), with
/// its location, without a snippet.
pub fn yaml_error(e: &serde_saphyr::Error) -> String {
    e.render_with_options(serde_saphyr::render_options! {
        formatter: &serde_saphyr::UserMessageFormatter,
        snippets: serde_saphyr::SnippetMode::Off,
    })
}

/// Parses one document with [`yaml_options`]. Errors read `invalid YAML at line N, column C:
/// ...` with the line number in the whole file; when that line holds a `{{...}}` template
/// placeholder (Helm, clusterloader2), the message says so.
pub fn parse_document(doc: &RawDocument) -> Result<Value, String> {
    serde_saphyr::from_str_with_options::<Value>(&doc.text, yaml_options()).map_err(|e| {
        let rendered = yaml_error(&e);
        match e.location() {
            Some(loc) => {
                let suffix = format!(" at line {}, column {}", loc.line(), loc.column());
                let msg = rendered.strip_suffix(&suffix).unwrap_or(&rendered);
                let rel = usize::try_from(loc.line().saturating_sub(1)).unwrap_or(0);
                let line = doc.first_line + rel;
                let placeholder = doc.text.lines().nth(rel).is_some_and(|l| l.contains("{{") && l.contains("}}"));
                let hint = if placeholder {
                    " (the line holds a `{{...}}` template placeholder: render the template first)"
                } else {
                    ""
                };
                format!("invalid YAML at line {line}, column {}: {msg}{hint}", loc.column())
            }
            None => format!("invalid YAML in the document starting at line {}: {rendered}", doc.first_line),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicySet;
    use crate::policy::load::{LoadError, load_sources};
    use std::path::PathBuf;

    fn load(files: &[(&str, &str)]) -> (PolicySet, Vec<LoadError>) {
        load_sources(files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())))
    }

    #[test]
    fn split_counts_only_non_empty_documents() {
        let text = "# header\n---\n# only a comment\n---\na: 1\n--- # c\nb: 2\n...\n---\n\n---\nc: 3\n";
        let docs = split_documents(text);
        let nums: Vec<_> = docs.iter().map(|d| (d.number, d.first_line)).collect();
        assert_eq!(nums, vec![(1, 4), (2, 6), (3, 11)]);
        assert!(docs[0].text.contains("a: 1"));
        assert!(!docs[1].text.contains("..."));
    }

    #[test]
    fn split_keeps_directives_with_their_document() {
        let docs = split_documents("%YAML 1.2\n---\na: 1\n");
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].first_line, 1);
        assert_eq!(parse_document(&docs[0]).ok(), Some(serde_json::json!({"a": 1})));
        // A marker with content on the same line.
        let docs = split_documents("--- {a: 1}\n---\n---a: 2\n");
        assert_eq!(docs.len(), 2);
        assert_eq!(parse_document(&docs[0]).ok(), Some(serde_json::json!({"a": 1})));
        assert_eq!(parse_document(&docs[1]).ok(), Some(serde_json::json!({"---a": 2})));
    }

    #[test]
    fn parse_uses_yaml_1_2_scalars_and_rejects_duplicates() {
        let doc = &split_documents("a: yes\nb: on\nc: 0755\nd: true\ne: 10\n")[0];
        let v = parse_document(doc).unwrap_or_default();
        assert_eq!(v, serde_json::json!({"a": "yes", "b": "on", "c": "0755", "d": true, "e": 10}));
        let doc = &split_documents("a: 1\na: 2\n")[0];
        let e = parse_document(doc).err().unwrap_or_default();
        // The parser's words for users, not its advice to programmers.
        assert!(e.contains("duplicate") && e.contains("line 2"), "{e}");
        assert!(!e.contains("Options") && !e.contains("DuplicateKeyPolicy"), "{e}");
    }

    #[test]
    fn syntax_error_reports_file_line() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [b\n";
        let (set, errors) = load(&[("x.yaml", text)]);
        assert_eq!(set.templates.len(), 1);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].document, Some(2));
        assert!(errors[0].message.contains("line 8") || errors[0].message.contains("line 9"), "{}", errors[0]);
    }
}
