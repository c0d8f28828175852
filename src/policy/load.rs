//! Walks a policy directory and sorts its YAML documents into a [`PolicySet`].
//!
//! The steps, in order:
//!
//! 1. [`load_dir`] walks the directory (sorted, recursive, hidden entries and editor leftovers
//!    skipped, symlinked directories followed at most once) and reads every `*.yaml` / `*.yml`.
//! 2. [`split_documents`] cuts each file into YAML documents itself, so document numbers and
//!    line numbers are stable and a syntax error in one document does not hide the others.
//! 3. Each document is parsed into a [`serde_json::Value`] with [`yaml_options`] (YAML 1.2
//!    booleans, `0755` stays a string, duplicate keys are errors).
//! 4. Documents are classified by `apiVersion` / `kind`: Karmada policies and `Cluster` objects
//!    are decoded into [`super::types`] (errors name the field path), interpreter objects are
//!    kept raw, everything else is a resource template. `kind: List` is expanded.
//! 5. Names, namespaces and duplicates are checked; every list is sorted.
//!
//! Webhook defaults ([`super::defaults`]) and semantic validation ([`super::validate`]) are
//! separate steps; [`load_repository`] runs all three.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::types::{ClusterSpec, ClusterStatus, ObjectMeta, WorkloadInterpreterSpec};
use super::{
    CLUSTER_GROUP, CONFIG_GROUP, ClusterObject, FEDSCHED_GROUP, ObjectKey, POLICY_GROUP, Policy, PolicySet, RawObject,
    Source, Template,
};

/// One problem found in the policy repository. Displays as
/// `<file>: document <n>: <field path>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LoadError {
    /// Path relative to the policy directory.
    pub file: PathBuf,
    /// 1-based document number within the file; None for file-level problems.
    pub document: Option<usize>,
    /// Dotted field path (`spec.placement.replicaScheduling.replicaSchedulingType`), or "" .
    pub field: String,
    pub message: String,
}

impl LoadError {
    /// An error about one field of one document.
    pub fn at(source: &Source, field: impl Into<String>, message: impl Into<String>) -> Self {
        LoadError {
            file: source.file.clone(),
            document: Some(source.document),
            field: field.into(),
            message: message.into(),
        }
    }

    /// An error about a whole file (unreadable, not UTF-8, ...).
    pub fn file(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        LoadError { file: file.into(), document: None, field: String::new(), message: message.into() }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(n) = self.document {
            write!(f, ": document {n}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The YAML parse options used everywhere in the crate: YAML 1.2 booleans only (`yes`, `on`
/// stay strings), integers with leading zeros (`0755`) stay strings, duplicate keys are errors.
pub fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::Error,
    }
}

/// Loads every `*.yaml` / `*.yml` file below `dir`. Returns the set of valid documents and
/// every error found (all of them, not only the first). A document with an error is dropped;
/// the other documents of the same file are still loaded.
///
/// Walk rules: entries are visited in byte order of their names, at any depth; hidden entries
/// (`.git`, `..data`, `.#foo.yaml`) and editor leftovers (`*~`, `*.swp`) are skipped; symlinks
/// are followed, but every directory is entered at most once (by canonical path), so symlink
/// loops and aliases do not load files twice. A missing or unreadable `dir` is an error.
///
/// Defaults and validation are not applied; see [`load_repository`].
pub fn load_dir(dir: &Path) -> (PolicySet, Vec<LoadError>) {
    load_dir_cached(dir, None)
}

/// The parsed documents of every file loaded before, keyed by path and content hash (FNV-1a
/// 64): a file whose bytes did not change is not parsed again (YAML parsing is most of a
/// load). Files that disappear are forgotten at the next load.
///
/// Each file's length, modification time and inode are kept too: a file whose stat did not
/// change is not even read, unless it is "racy" (git's rule): modified within
/// [`RACY_NS`] of when it was read, when a second write in the same clock tick could have
/// left the stat unchanged. [`ParseCache::refresh`] says whether anything changed at all, so
/// a caller can reuse what it built from the previous load.
#[derive(Debug, Default)]
pub struct ParseCache {
    files: HashMap<PathBuf, CachedFile>,
    /// The files of the last refresh, in walk order (those that were read).
    order: Vec<PathBuf>,
}

/// A file's stat, what identifies its bytes without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStat {
    len: u64,
    mtime_ns: i128,
    ino: u64,
}

impl FileStat {
    fn of(m: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileStat {
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ino: m.ino(),
        }
    }
}

/// A file modified less than this before it was read is read again next time.
pub const RACY_NS: i128 = 1_000_000_000;

#[derive(Debug)]
struct CachedFile {
    hash: u64,
    len: usize,
    docs: Parsed,
    /// Stat taken when the file was walked before it was read; None = not trusted.
    stat: Option<FileStat>,
    /// Wall clock (ns since the epoch) just before the file was read.
    read_at_ns: i128,
    /// The file loaded on its own ([`load_repository_incremental`]); forgotten when its bytes
    /// change.
    typed: Option<Typed>,
}

/// One file's documents typed, defaulted and validated on their own, with the CRD scopes of
/// the whole repository they were typed with.
#[derive(Debug)]
struct Typed {
    /// [`crd_digest`] of the scopes used.
    crd: u64,
    set: PolicySet,
    errors: Vec<LoadError>,
    /// Every object recorded for the duplicate check: (group, kind, namespace, name).
    seen: Vec<(String, String, Option<String>, String)>,
}

impl CachedFile {
    /// Whether `now` (the stat of the file now) proves the bytes are those cached.
    fn clean(&self, now: Option<FileStat>) -> bool {
        match (self.stat, now) {
            (Some(then), Some(now)) => then == now && now.mtime_ns.saturating_add(RACY_NS) <= self.read_at_ns,
            _ => false,
        }
    }
}

fn wall_ns() -> i128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i128)
}

/// What parsing one file gave: its documents (source document number, value or message).
type Parsed = Vec<(usize, Result<Value, String>)>;

fn parse_file(text: &str) -> Parsed {
    split_documents(text).iter().map(|raw| (raw.number, parse_document(raw))).collect()
}

/// The walk of `dir`: every YAML file (relative path and stat) and the walk errors.
fn walk_dir(dir: &Path) -> (Vec<(PathBuf, Option<FileStat>)>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {
            let mut visited = HashSet::new();
            walk(dir, Path::new(""), &mut visited, &mut files, &mut errors);
        }
        Ok(_) => errors.push(LoadError::file(dir, "policy directory is not a directory")),
        Err(e) => errors.push(LoadError::file(dir, format!("cannot read policy directory: {e}"))),
    }
    (files, errors)
}

/// Reads one file as UTF-8.
fn read_text(dir: &Path, rel: &Path) -> Result<String, LoadError> {
    match fs::read(dir.join(rel)) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|e| LoadError::file(rel, format!("file is not UTF-8: {e}"))),
        Err(e) => Err(LoadError::file(rel, format!("cannot read file: {e}"))),
    }
}

impl ParseCache {
    /// Walks `dir` and brings the cache up to date: files whose stat proves them unchanged are
    /// not read, files read are parsed only when their bytes changed. Returns whether the
    /// repository differs from the previous refresh (a file added, removed, renamed or with
    /// other bytes; always true on the first refresh and when a file could not be read) and
    /// the walk and read errors.
    pub fn refresh(&mut self, dir: &Path) -> (bool, Vec<LoadError>) {
        let first = self.order.is_empty() && self.files.is_empty();
        let (walked, mut errors) = walk_dir(dir);
        let mut changed = first || !errors.is_empty();
        let mut order = Vec::with_capacity(walked.len());
        for (rel, stat) in walked {
            if self.files.get(&rel).is_some_and(|c| c.clean(stat)) {
                order.push(rel);
                continue;
            }
            let read_at_ns = wall_ns();
            let text = match read_text(dir, &rel) {
                Ok(text) => text,
                Err(e) => {
                    errors.push(e);
                    changed = true;
                    continue;
                }
            };
            let hash = crate::util::hash::fnv1a64(text.as_bytes());
            match self.files.get_mut(&rel) {
                Some(c) if c.hash == hash && c.len == text.len() => {
                    c.stat = stat;
                    c.read_at_ns = read_at_ns;
                }
                _ => {
                    changed = true;
                    let docs = parse_file(&text);
                    let file = CachedFile { hash, len: text.len(), docs, stat, read_at_ns, typed: None };
                    self.files.insert(rel.clone(), file);
                }
            }
            order.push(rel);
        }
        changed |= order != self.order;
        let seen: HashSet<&PathBuf> = order.iter().collect();
        self.files.retain(|k, _| seen.contains(k));
        self.order = order;
        (changed, errors)
    }

    /// The parsed documents of the files of the last refresh, in walk order.
    fn parsed(&self) -> Vec<(PathBuf, Parsed)> {
        self.order.iter().filter_map(|rel| self.files.get(rel).map(|c| (rel.clone(), c.docs.clone()))).collect()
    }
}

/// [`load_dir`], reusing (and updating) `cache` when given.
pub fn load_dir_cached(dir: &Path, cache: Option<&mut ParseCache>) -> (PolicySet, Vec<LoadError>) {
    let Some(cache) = cache else {
        let (files, mut errors) = walk_dir(dir);
        let mut texts = Vec::new();
        for (rel, _) in files {
            match read_text(dir, &rel) {
                Ok(text) => texts.push((rel, text)),
                Err(e) => errors.push(e),
            }
        }
        let (set, mut more) = load_sources(texts);
        errors.append(&mut more);
        return (set, errors);
    };
    let (_, mut errors) = cache.refresh(dir);
    let (set, mut more) = load_parsed(cache.parsed());
    errors.append(&mut more);
    (set, errors)
}

/// [`load_repository_refreshed`], reusing what each unchanged file gave when loaded on its own.
///
/// Loading, defaulting and validating are per object except for three things: the CRD scopes
/// (collected from every file first, so each file is typed with the repository's scopes and
/// typed again when they change), the duplicate check and the one-interpreter-per-kind check
/// across files (checked when merging). The per-file results are merged in walk order and
/// sorted as a whole load sorts. When any file has an error, or the merge finds a duplicate,
/// the whole repository is loaded again instead ([`load_repository_refreshed`]), so the errors
/// and their order are exactly a whole load's. The result equals a whole load (tested).
pub fn load_repository_incremental(cache: &mut ParseCache, io_errors: Vec<LoadError>) -> (PolicySet, Vec<LoadError>) {
    if !io_errors.is_empty() {
        return load_repository_refreshed(cache, io_errors);
    }
    // The repository's CRD scopes, first definition wins (as a whole load).
    let mut crd_scopes: BTreeMap<(String, String), bool> = BTreeMap::new();
    for rel in &cache.order {
        let Some(file) = cache.files.get(rel) else { continue };
        for (_, doc) in &file.docs {
            let Ok(value) = doc else { continue };
            for_each_crd(value, &mut |group, kind, namespaced| {
                crd_scopes.entry((group, kind)).or_insert(namespaced);
            });
        }
    }
    let crd = crd_digest(&crd_scopes);
    let mut out = PolicySet { crd_scopes: crd_scopes.clone(), ..Default::default() };
    let mut seen: HashSet<&(String, String, Option<String>, String)> = HashSet::new();
    let order = cache.order.clone();
    for rel in &order {
        let Some(file) = cache.files.get_mut(rel) else { continue };
        if file.typed.as_ref().is_none_or(|t| t.crd != crd) {
            file.typed = Some(type_file(rel, &file.docs, &crd_scopes, crd));
        }
    }
    for rel in &order {
        let Some(typed) = cache.files.get(rel).and_then(|f| f.typed.as_ref()) else { continue };
        if !typed.errors.is_empty() || !typed.seen.iter().all(|id| seen.insert(id)) {
            return load_repository_refreshed(cache, Vec::new());
        }
        extend_set(&mut out, &typed.set);
    }
    let mut targets = HashSet::new();
    if !out.workload_interpreters.iter().all(|w| targets.insert((&w.spec.target.api_version, &w.spec.target.kind))) {
        return load_repository_refreshed(cache, Vec::new());
    }
    sort_set(&mut out);
    (out, Vec::new())
}

/// Calls `f` with the (group, kind, namespaced) of every CRD in a document (lists expanded).
fn for_each_crd(value: &Value, f: &mut dyn FnMut(String, String, bool)) {
    let is_list = value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && value.get("kind").and_then(Value::as_str) == Some("List");
    if is_list {
        if let Some(Value::Array(items)) = value.get("items") {
            for item in items {
                for_each_crd(item, f);
            }
        }
        return;
    }
    if let Some(Ok((group, kind, namespaced))) = crd_scope(value) {
        f(group, kind, namespaced);
    }
}

fn crd_digest(scopes: &BTreeMap<(String, String), bool>) -> u64 {
    let mut bytes = Vec::new();
    for ((group, kind), namespaced) in scopes {
        bytes.extend_from_slice(group.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(kind.as_bytes());
        bytes.push(0);
        bytes.push(u8::from(*namespaced));
    }
    crate::util::hash::fnv1a64(&bytes)
}

/// One file loaded, defaulted and validated on its own with the repository's CRD scopes.
fn type_file(rel: &Path, docs: &Parsed, crd_scopes: &BTreeMap<(String, String), bool>, crd: u64) -> Typed {
    let mut errors = Vec::new();
    let mut items = Vec::new();
    for (number, result) in docs {
        let source = Source { file: rel.to_path_buf(), document: *number };
        match result {
            Ok(Value::Null) => {}
            Ok(value) => expand_lists(source, String::new(), value.clone(), &mut items, &mut errors),
            Err(message) => errors.push(LoadError::at(&source, "", message.clone())),
        }
    }
    let mut loader = Loader::default();
    loader.set.crd_scopes = crd_scopes.clone();
    for item in items {
        loader.classify(item);
    }
    let Loader { mut set, errors: mut more, seen } = loader;
    errors.append(&mut more);
    set.crd_scopes = BTreeMap::new();
    super::defaults::apply(&mut set);
    errors.extend(super::validate::validate(&set));
    Typed { crd, set, errors, seen: seen.into_keys().collect() }
}

/// Appends a copy of every object of `part` to `out`.
fn extend_set(out: &mut PolicySet, part: &PolicySet) {
    out.templates.extend(part.templates.iter().cloned());
    out.propagation_policies.extend(part.propagation_policies.iter().cloned());
    out.cluster_propagation_policies.extend(part.cluster_propagation_policies.iter().cloned());
    out.override_policies.extend(part.override_policies.iter().cloned());
    out.cluster_override_policies.extend(part.cluster_override_policies.iter().cloned());
    out.cluster_taint_policies.extend(part.cluster_taint_policies.iter().cloned());
    out.clusters.extend(part.clusters.iter().cloned());
    out.interpreter_objects.extend(part.interpreter_objects.iter().cloned());
    out.workload_interpreters.extend(part.workload_interpreters.iter().cloned());
}

/// [`load_repository`] of what the last [`ParseCache::refresh`] read, with its walk and read
/// errors first.
pub fn load_repository_refreshed(cache: &ParseCache, io_errors: Vec<LoadError>) -> (PolicySet, Vec<LoadError>) {
    let mut errors = io_errors;
    let (mut set, mut more) = load_parsed(cache.parsed());
    errors.append(&mut more);
    super::defaults::apply(&mut set);
    errors.extend(super::validate::validate(&set));
    (set, errors)
}

/// [`load_dir`], then [`super::defaults::apply`], then [`super::validate::validate`]: the set
/// as Karmada's API server would store it, and every load and validation error. Policies that
/// fail validation are kept in the set; callers must not act on a set with errors.
pub fn load_repository(dir: &Path) -> (PolicySet, Vec<LoadError>) {
    load_repository_cached(dir, None)
}

/// [`load_repository`], reusing (and updating) a [`ParseCache`] when given.
pub fn load_repository_cached(dir: &Path, cache: Option<&mut ParseCache>) -> (PolicySet, Vec<LoadError>) {
    let (mut set, mut errors) = load_dir_cached(dir, cache);
    super::defaults::apply(&mut set);
    errors.extend(super::validate::validate(&set));
    (set, errors)
}

/// Loads already-read files: `(path relative to the policy directory, content)`, in the given
/// order. This is [`load_dir`] without the file system, for tests and single files.
pub fn load_sources<I>(files: I) -> (PolicySet, Vec<LoadError>)
where
    I: IntoIterator<Item = (PathBuf, String)>,
{
    load_parsed(files.into_iter().map(|(file, text)| (file, parse_file(&text))))
}

/// [`load_sources`] after parsing.
fn load_parsed(files: impl IntoIterator<Item = (PathBuf, Parsed)>) -> (PolicySet, Vec<LoadError>) {
    let mut errors = Vec::new();
    let mut docs = Vec::new();
    for (file, parsed) in files {
        for (number, result) in parsed {
            let source = Source { file: file.clone(), document: number };
            match result {
                Ok(Value::Null) => {}
                Ok(value) => docs.push((source, value)),
                Err(message) => errors.push(LoadError::at(&source, "", message)),
            }
        }
    }

    // Expand `kind: List` into its items; each keeps the list's source and a field prefix.
    let mut items = Vec::new();
    for (source, value) in docs {
        expand_lists(source, String::new(), value, &mut items, &mut errors);
    }

    let mut loader = Loader::default();
    // CRD scopes first: a custom resource may come before its CRD.
    for item in &items {
        if let Some(Ok((group, kind, namespaced))) = crd_scope(&item.value) {
            loader.set.crd_scopes.entry((group, kind)).or_insert(namespaced);
        }
    }
    for item in items {
        loader.classify(item);
    }
    let Loader { mut set, errors: mut more, .. } = loader;
    errors.append(&mut more);
    sort_set(&mut set);
    (set, errors)
}

// ---------------------------------------------------------------------------------------------
// Directory walk

fn walk(
    abs: &Path,
    rel: &Path,
    visited: &mut HashSet<PathBuf>,
    files: &mut Vec<(PathBuf, Option<FileStat>)>,
    errors: &mut Vec<LoadError>,
) {
    match fs::canonicalize(abs) {
        Ok(canonical) => {
            if !visited.insert(canonical) {
                return; // already walked (symlink loop or alias)
            }
        }
        Err(e) => {
            errors.push(LoadError::file(rel, format!("cannot resolve directory: {e}")));
            return;
        }
    }
    let entries = match fs::read_dir(abs) {
        Ok(entries) => entries,
        Err(e) => {
            errors.push(LoadError::file(rel, format!("cannot read directory: {e}")));
            return;
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => names.push(entry.file_name()),
            Err(e) => errors.push(LoadError::file(rel, format!("cannot read directory: {e}"))),
        }
    }
    names.sort();
    for name in names {
        let Some(name_str) = name.to_str() else {
            errors.push(LoadError::file(rel.join(&name), "file name is not UTF-8"));
            continue;
        };
        if skipped_name(name_str) {
            continue;
        }
        let child_abs = abs.join(&name);
        let child_rel = rel.join(&name);
        // `metadata` follows symlinks.
        let meta = match fs::metadata(&child_abs) {
            Ok(m) => m,
            Err(e) => {
                if is_yaml_name(name_str) {
                    errors.push(LoadError::file(child_rel, format!("cannot read file: {e}")));
                }
                continue;
            }
        };
        if meta.is_dir() {
            walk(&child_abs, &child_rel, visited, files, errors);
        } else if meta.is_file() && is_yaml_name(name_str) {
            files.push((child_rel, Some(FileStat::of(&meta))));
        }
    }
}

fn skipped_name(name: &str) -> bool {
    name.starts_with('.') || name.ends_with('~') || name.ends_with(".swp")
}

fn is_yaml_name(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml")
}

// ---------------------------------------------------------------------------------------------
// Splitting and parsing

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

/// Parses one document with [`yaml_options`]. Errors read `invalid YAML at line N, column C:
/// ...` with the line number in the whole file; when that line holds a `{{...}}` template
/// placeholder (Helm, clusterloader2), the message says so.
pub fn parse_document(doc: &RawDocument) -> Result<Value, String> {
    serde_saphyr::from_str_with_options::<Value>(&doc.text, yaml_options()).map_err(|e| {
        let rendered =
            e.render_with_options(serde_saphyr::render_options! { snippets: serde_saphyr::SnippetMode::Off });
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

// ---------------------------------------------------------------------------------------------
// Classification

/// A document (or an item of a `kind: List`) waiting to be classified.
struct Item {
    source: Source,
    /// Field-path prefix (`items[2]`) of list items; "" for whole documents.
    prefix: String,
    value: Value,
}

fn join_path(prefix: &str, field: &str) -> String {
    match (prefix.is_empty(), field.is_empty()) {
        (true, _) => field.to_string(),
        (_, true) => prefix.to_string(),
        _ if field.starts_with('[') => format!("{prefix}{field}"),
        _ => format!("{prefix}.{field}"),
    }
}

fn expand_lists(source: Source, prefix: String, value: Value, out: &mut Vec<Item>, errors: &mut Vec<LoadError>) {
    let is_list = value.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && value.get("kind").and_then(Value::as_str) == Some("List");
    let Value::Object(mut map) = value else {
        out.push(Item { source, prefix, value });
        return;
    };
    if !is_list {
        out.push(Item { source, prefix, value: Value::Object(map) });
        return;
    }
    match map.remove("items") {
        Some(Value::Array(items)) => {
            for (i, item) in items.into_iter().enumerate() {
                let p = join_path(&prefix, &format!("items[{i}]"));
                expand_lists(source.clone(), p, item, out, errors);
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => {
            errors.push(LoadError::at(&source, join_path(&prefix, "items"), "items of a List must be a sequence"))
        }
    }
}

/// (group, kind, namespaced) of a CRD, or (field, message) of what is wrong with it.
type CrdScope = Result<(String, String, bool), (String, String)>;

/// Scope of a CustomResourceDefinition: `Some(Ok((group, kind, namespaced)))`, `Some(Err(..))`
/// for a CRD missing one of the fields, None for other objects.
fn crd_scope(value: &Value) -> Option<CrdScope> {
    let api = value.get("apiVersion")?.as_str()?;
    if group_of(api) != "apiextensions.k8s.io" || value.get("kind")?.as_str()? != "CustomResourceDefinition" {
        return None;
    }
    let text = |path: &[&str]| -> Result<String, (String, String)> {
        let mut v = value;
        for p in path {
            v = match v.get(p) {
                Some(v) => v,
                None => return Err((path.join("."), "required field is missing".into())),
            };
        }
        match v.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err((path.join("."), "must be a non-empty string".into())),
        }
    };
    Some((|| {
        let group = text(&["spec", "group"])?;
        let kind = text(&["spec", "names", "kind"])?;
        let scope = text(&["spec", "scope"])?;
        let namespaced = match scope.as_str() {
            "Namespaced" => true,
            "Cluster" => false,
            other => {
                return Err((
                    "spec.scope".to_string(),
                    format!("unknown scope `{other}`, expected `Namespaced` or `Cluster`"),
                ));
            }
        };
        Ok((group, kind, namespaced))
    })())
}

/// API group of an apiVersion (`apps/v1` → `apps`, `v1` → "").
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

fn version_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(_, v)| v).unwrap_or(api_version)
}

/// Kinds whose objects are cluster-scoped, by (group, kind). CRD-declared kinds are looked up
/// in [`PolicySet::crd_scopes`] first.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("node.k8s.io", "RuntimeClass"),
    ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("policy", "PodSecurityPolicy"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceSlice"),
    ("cert-manager.io", "ClusterIssuer"),
    ("work.karmada.io", "ClusterResourceBinding"),
    ("search.karmada.io", "ResourceRegistry"),
    ("apps.karmada.io", "WorkloadRebalancer"),
];

/// Whether objects of this kind live in a namespace: CRD scopes of the repository first, then
/// the built-in list of cluster-scoped kinds; unknown kinds are namespaced (as most are).
pub fn is_namespaced(crd_scopes: &BTreeMap<(String, String), bool>, group: &str, kind: &str) -> bool {
    if let Some(namespaced) = crd_scopes.get(&(group.to_string(), kind.to_string())) {
        return *namespaced;
    }
    !CLUSTER_SCOPED.iter().any(|(g, k)| *g == group && *k == kind)
}

#[derive(Default)]
struct Loader {
    set: PolicySet,
    errors: Vec<LoadError>,
    /// (group, kind, namespace, name) → where first seen.
    seen: HashMap<(String, String, Option<String>, String), Source>,
}

/// How a classified document is stored.
enum Class {
    Template,
    PropagationPolicy,
    ClusterPropagationPolicy,
    OverridePolicy,
    ClusterOverridePolicy,
    ClusterTaintPolicy,
    Cluster,
    Interpreter,
    WorkloadInterpreter,
}

impl Loader {
    fn err(&mut self, item: &Item, field: &str, message: impl Into<String>) {
        self.errors.push(LoadError::at(&item.source, join_path(&item.prefix, field), message));
    }

    fn classify(&mut self, item: Item) {
        let Some(obj) = item.value.as_object() else {
            let what = match &item.value {
                Value::Array(_) => "a sequence",
                _ => "a scalar",
            };
            self.err(&item, "", format!("document must be a mapping (a Kubernetes object), found {what}"));
            return;
        };
        let (Some(api_version), Some(kind)) =
            (self.required_str(&item, obj, "apiVersion"), self.required_str(&item, obj, "kind"))
        else {
            return;
        };
        let group = group_of(&api_version).to_string();
        let version = version_of(&api_version).to_string();

        let class = match group.as_str() {
            POLICY_GROUP => {
                if version != "v1alpha1" {
                    self.err(
                        &item,
                        "apiVersion",
                        format!("unknown version {version} of {POLICY_GROUP} (expected v1alpha1)"),
                    );
                    return;
                }
                match kind.as_str() {
                    "PropagationPolicy" => Class::PropagationPolicy,
                    "ClusterPropagationPolicy" => Class::ClusterPropagationPolicy,
                    "OverridePolicy" => Class::OverridePolicy,
                    "ClusterOverridePolicy" => Class::ClusterOverridePolicy,
                    "ClusterTaintPolicy" => Class::ClusterTaintPolicy,
                    "FederatedResourceQuota" => {
                        self.err(&item, "kind", format!(
                            "kind FederatedResourceQuota of {POLICY_GROUP}/v1alpha1 is a Karmada control-plane object that fedsched does not support"
                        ));
                        return;
                    }
                    other => {
                        self.err(&item, "kind", format!("unknown kind {other} in {POLICY_GROUP}/v1alpha1"));
                        return;
                    }
                }
            }
            CLUSTER_GROUP => {
                if version != "v1alpha1" {
                    self.err(
                        &item,
                        "apiVersion",
                        format!("unknown version {version} of {CLUSTER_GROUP} (expected v1alpha1)"),
                    );
                    return;
                }
                if kind != "Cluster" {
                    self.err(&item, "kind", format!("unknown kind {kind} in {CLUSTER_GROUP}/v1alpha1"));
                    return;
                }
                Class::Cluster
            }
            CONFIG_GROUP => {
                if version != "v1alpha1" {
                    self.err(
                        &item,
                        "apiVersion",
                        format!("unknown version {version} of {CONFIG_GROUP} (expected v1alpha1)"),
                    );
                    return;
                }
                match kind.as_str() {
                    "ResourceInterpreterCustomization" | "ResourceInterpreterWebhookConfiguration" => {
                        Class::Interpreter
                    }
                    other => {
                        self.err(&item, "kind", format!("unknown kind {other} in {CONFIG_GROUP}/v1alpha1"));
                        return;
                    }
                }
            }
            FEDSCHED_GROUP => {
                if version != "v1alpha1" || kind != "WorkloadInterpreter" {
                    self.err(
                        &item,
                        "kind",
                        format!(
                            "unknown kind {api_version} {kind} (expected {FEDSCHED_GROUP}/v1alpha1 WorkloadInterpreter)"
                        ),
                    );
                    return;
                }
                Class::WorkloadInterpreter
            }
            _ => Class::Template,
        };

        // metadata
        let meta_value = match obj.get("metadata") {
            None | Some(Value::Null) => {
                self.err(&item, "metadata.name", "required field is missing");
                return;
            }
            Some(v @ Value::Object(_)) => strip_nulls(v.clone()),
            Some(_) => {
                self.err(&item, "metadata", "must be a mapping");
                return;
            }
        };
        match meta_value.get("name") {
            None => {
                self.err(&item, "metadata.name", "required field is missing");
                return;
            }
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(_) => {
                self.err(&item, "metadata.name", "must be a non-empty string");
                return;
            }
        }
        let mut meta: ObjectMeta = match decode(&meta_value) {
            Ok(m) => m,
            Err((field, msg)) => {
                self.err(&item, &join_path("metadata", &field), msg);
                return;
            }
        };

        match class {
            Class::Template => self.template(item, api_version, kind, group, meta),
            Class::Interpreter => {
                if !self.check_subdomain(&item, &meta.name) {
                    return;
                }
                let key = ObjectKey { api_version, kind, namespace: None, name: meta.name };
                if self.duplicate(&item, &group, &key) {
                    return;
                }
                self.set.interpreter_objects.push(RawObject { key, object: item.value, source: item.source });
            }
            Class::WorkloadInterpreter => {
                if !self.check_subdomain(&item, &meta.name) {
                    return;
                }
                meta.namespace = None;
                let spec: WorkloadInterpreterSpec = match decode(&spec_or_empty(obj)) {
                    Ok(s) => s,
                    Err((field, msg)) => return self.err(&item, &join_path("spec", &field), msg),
                };
                for (field, path) in [
                    ("spec.replicasPath", &spec.replicas_path),
                    ("spec.podTemplatePath", &spec.pod_template_path),
                    ("spec.requestsPath", &spec.requests_path),
                ] {
                    if let Some(p) = path
                        && !p.starts_with('/')
                    {
                        self.err(&item, field, format!("{p:?} is not a JSON pointer (write /spec/replicas)"));
                        return;
                    }
                }
                let key = key_of(&api_version, &kind, None, &meta.name);
                if self.duplicate(&item, &group, &key) {
                    return;
                }
                let target = (spec.target.api_version.clone(), spec.target.kind.clone());
                if let Some(other) = self
                    .set
                    .workload_interpreters
                    .iter()
                    .find(|w| (w.spec.target.api_version.clone(), w.spec.target.kind.clone()) == target)
                {
                    let msg = format!("{} {} already has a WorkloadInterpreter ({})", target.0, target.1, other.source);
                    self.err(&item, "spec.target", msg);
                    return;
                }
                self.set.workload_interpreters.push(Policy { meta, spec, source: item.source });
            }
            Class::Cluster => {
                if !self.check_cluster_name(&item, &meta.name) {
                    return;
                }
                meta.namespace = None;
                let spec_value = spec_or_empty(obj);
                let spec: ClusterSpec = match decode(&spec_value) {
                    Ok(s) => s,
                    Err((field, msg)) => return self.err(&item, &join_path("spec", &field), msg),
                };
                let status: Option<ClusterStatus> = match obj.get("status") {
                    None | Some(Value::Null) => None,
                    Some(v) => match decode(&strip_nulls(v.clone())) {
                        Ok(s) => Some(s),
                        Err((field, msg)) => {
                            return self.err(&item, &join_path("status", &field), msg);
                        }
                    },
                };
                let key = key_of(&api_version, &kind, None, &meta.name);
                if self.duplicate(&item, &group, &key) {
                    return;
                }
                self.set.clusters.push(ClusterObject { meta, spec, status, source: item.source });
            }
            Class::PropagationPolicy | Class::OverridePolicy => {
                let ns = meta.namespace.clone().unwrap_or_else(|| "default".to_string());
                if !self.check_subdomain(&item, &meta.name) || !self.check_namespace(&item, &ns) {
                    return;
                }
                meta.namespace = Some(ns);
                let spec_value = spec_or_empty(obj);
                let key = key_of(&api_version, &kind, meta.namespace.clone(), &meta.name);
                if matches!(class, Class::PropagationPolicy) {
                    let Some(spec) = self.decode_spec(&item, &spec_value) else {
                        return;
                    };
                    if self.duplicate(&item, &group, &key) {
                        return;
                    }
                    self.set.propagation_policies.push(Policy { meta, spec, source: item.source });
                } else {
                    let Some(spec) = self.decode_spec(&item, &spec_value) else {
                        return;
                    };
                    if self.duplicate(&item, &group, &key) {
                        return;
                    }
                    self.set.override_policies.push(Policy { meta, spec, source: item.source });
                }
            }
            Class::ClusterPropagationPolicy | Class::ClusterOverridePolicy | Class::ClusterTaintPolicy => {
                if !self.check_subdomain(&item, &meta.name) {
                    return;
                }
                meta.namespace = None; // cluster-scoped: a namespace is ignored, as the API server does
                let spec_value = spec_or_empty(obj);
                let key = key_of(&api_version, &kind, None, &meta.name);
                match class {
                    Class::ClusterPropagationPolicy => {
                        let Some(spec) = self.decode_spec(&item, &spec_value) else {
                            return;
                        };
                        if self.duplicate(&item, &group, &key) {
                            return;
                        }
                        self.set.cluster_propagation_policies.push(Policy { meta, spec, source: item.source });
                    }
                    Class::ClusterOverridePolicy => {
                        let Some(spec) = self.decode_spec(&item, &spec_value) else {
                            return;
                        };
                        if self.duplicate(&item, &group, &key) {
                            return;
                        }
                        self.set.cluster_override_policies.push(Policy { meta, spec, source: item.source });
                    }
                    _ => {
                        let Some(spec) = self.decode_spec(&item, &spec_value) else {
                            return;
                        };
                        if self.duplicate(&item, &group, &key) {
                            return;
                        }
                        self.set.cluster_taint_policies.push(Policy { meta, spec, source: item.source });
                    }
                }
            }
        }
    }

    fn template(&mut self, item: Item, api_version: String, kind: String, group: String, mut meta: ObjectMeta) {
        if let Some(Err((field, msg))) = crd_scope(&item.value) {
            return self.err(&item, &field, msg);
        }
        if let Err(msg) = check_template_name(&meta.name) {
            return self.err(&item, "metadata.name", msg);
        }
        let namespace = if is_namespaced(&self.set.crd_scopes, &group, &kind) {
            let ns = meta.namespace.clone().unwrap_or_else(|| "default".to_string());
            if !self.check_namespace(&item, &ns) {
                return;
            }
            Some(ns)
        } else {
            None
        };
        meta.namespace = namespace.clone();
        let key = ObjectKey { api_version, kind, namespace, name: meta.name.clone() };
        if self.duplicate(&item, &group, &key) {
            return;
        }
        self.set.templates.push(Template { key, meta, object: item.value, source: item.source });
    }

    fn decode_spec<T: DeserializeOwned>(&mut self, item: &Item, spec: &Value) -> Option<T> {
        match decode(spec) {
            Ok(s) => Some(s),
            Err((field, msg)) => {
                self.err(item, &join_path("spec", &field), msg);
                None
            }
        }
    }

    fn required_str(&mut self, item: &Item, obj: &Map<String, Value>, field: &str) -> Option<String> {
        match obj.get(field) {
            None | Some(Value::Null) => {
                self.err(item, field, "required field is missing");
                None
            }
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(_) => {
                self.err(item, field, "must be a non-empty string");
                None
            }
        }
    }

    /// Records the object; if one with the same group/kind/namespace/name was seen before,
    /// reports an error naming both sources and returns true.
    fn duplicate(&mut self, item: &Item, group: &str, key: &ObjectKey) -> bool {
        let id = (group.to_string(), key.kind.clone(), key.namespace.clone(), key.name.clone());
        if let Some(first) = self.seen.get(&id) {
            let msg = format!("duplicate {} {}: already defined in {first}", key.kind, describe(key));
            self.err(item, "metadata.name", msg);
            return true;
        }
        self.seen.insert(id, item.source.clone());
        false
    }

    fn check_subdomain(&mut self, item: &Item, name: &str) -> bool {
        match check_dns1123_subdomain(name) {
            Ok(()) => true,
            Err(msg) => {
                self.err(item, "metadata.name", msg);
                false
            }
        }
    }

    fn check_cluster_name(&mut self, item: &Item, name: &str) -> bool {
        match check_dns1123_label(name, 48) {
            Ok(()) => true,
            Err(msg) => {
                self.err(item, "metadata.name", format!("{msg} (cluster names are limited to 48 characters)"));
                false
            }
        }
    }

    fn check_namespace(&mut self, item: &Item, ns: &str) -> bool {
        match check_dns1123_label(ns, 63) {
            Ok(()) => true,
            Err(msg) => {
                self.err(item, "metadata.namespace", msg);
                false
            }
        }
    }
}

fn describe(key: &ObjectKey) -> String {
    match &key.namespace {
        Some(ns) => format!("{ns}/{}", key.name),
        None => key.name.clone(),
    }
}

fn key_of(api_version: &str, kind: &str, namespace: Option<String>, name: &str) -> ObjectKey {
    ObjectKey { api_version: api_version.to_string(), kind: kind.to_string(), namespace, name: name.to_string() }
}

fn spec_or_empty(obj: &Map<String, Value>) -> Value {
    match obj.get("spec") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v) => strip_nulls(v.clone()),
    }
}

/// Removes map entries whose value is `null`, recursively: Kubernetes treats `field: null`
/// like an absent field, serde would not.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// Typed decode; on error returns (field path relative to `value`, message).
fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        (path, e.into_inner().to_string())
    })
}

fn sort_set(set: &mut PolicySet) {
    set.templates.sort_by(|a, b| a.key.cmp(&b.key));
    let by_ns_name = |m: &ObjectMeta| (m.namespace.clone(), m.name.clone());
    set.propagation_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.cluster_propagation_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.override_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.cluster_override_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.cluster_taint_policies.sort_by_key(|p| by_ns_name(&p.meta));
    set.clusters.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    set.interpreter_objects.sort_by(|a, b| a.key.cmp(&b.key));
    set.workload_interpreters.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
}

// ---------------------------------------------------------------------------------------------
// Names

/// DNS-1123 label: 1..=`max` chars of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn check_dns1123_label(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > max {
        return Err(format!("`{name}` is longer than {max} characters"));
    }
    let ok_chars = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    if !ok_chars || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return Err(format!(
            "`{name}` is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit)"
        ));
    }
    Ok(())
}

/// DNS-1123 subdomain: ≤ 253 chars, dot-separated DNS-1123 labels.
pub fn check_dns1123_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > 253 {
        return Err(format!("`{name}` is longer than 253 characters"));
    }
    if name.split('.').all(|label| check_dns1123_label(label, 63).is_ok()) {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)"
        ))
    }
}

/// Template names end up in file names of the output directory: non-empty, ≤ 253 chars,
/// `[a-z0-9.-]` only, not `.` or `..`.
pub fn check_template_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > 253 {
        return Err(format!("`{name}` is longer than 253 characters"));
    }
    if name == "." || name == ".." {
        return Err(format!("`{name}` is not a valid object name"));
    }
    if name.contains('/') || name.contains('\0') {
        return Err(format!("`{}` must not contain '/' or NUL", name.escape_debug()));
    }
    if name.contains(':') {
        return Err(format!(
            "`{name}`: names with ':' (such as RBAC `system:` names) are not supported by fedsched yet"
        ));
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-') {
        return Err(format!("`{}` may contain only lowercase letters, digits, '.' and '-'", name.escape_debug()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(parse_document(doc).is_err());
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

    #[test]
    fn templates_get_namespaces_by_scope() {
        let text = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: v1
kind: Namespace
metadata: {name: team, namespace: ignored}
---
apiVersion: example.io/v1
kind: Widget
metadata: {name: w, namespace: team}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec: {group: example.io, names: {kind: Widget}, scope: Cluster}
"#;
        let (set, errors) = load(&[("a.yaml", text)]);
        assert!(errors.is_empty(), "{errors:?}");
        let ns: Vec<_> = set.templates.iter().map(|t| (t.key.kind.as_str(), t.key.namespace.as_deref())).collect();
        assert!(ns.contains(&("Deployment", Some("default"))));
        assert!(ns.contains(&("Namespace", None)));
        assert!(ns.contains(&("Widget", None)));
        assert!(ns.contains(&("CustomResourceDefinition", None)));
        assert_eq!(set.crd_scopes.get(&("example.io".into(), "Widget".into())), Some(&false));
    }

    #[test]
    fn classification_and_errors() {
        let text = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: pp}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement: {replicaScheduling: {replicaSchedulingType: Dividedd}}
---
apiVersion: policy.karmada.io/v1beta1
kind: PropagationPolicy
metadata: {name: pp2}
---
apiVersion: policy.karmada.io/v1alpha1
kind: Frobnicator
metadata: {name: f}
---
kind: ConfigMap
metadata: {name: c}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: x}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: in-list}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: Bad_Name}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:foo"}
"#;
        let (set, errors) = load(&[("a.yaml", text)]);
        let shown: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 7, "{shown:#?}");
        assert_eq!(errors[0].field, "spec.placement.replicaScheduling.replicaSchedulingType");
        assert!(errors[0].message.contains("unknown variant `Dividedd`"));
        assert!(errors[1].message.contains("unknown version v1beta1"));
        assert!(errors[2].message.contains("unknown kind Frobnicator in policy.karmada.io/v1alpha1"));
        assert_eq!(errors[3].field, "apiVersion");
        assert_eq!(errors[4].field, "metadata.name");
        assert_eq!(errors[5].field, "items[1].metadata.name");
        assert_eq!(errors[5].document, Some(6));
        assert!(errors[6].message.contains("':'"));
        assert_eq!(set.templates.len(), 1);
        assert_eq!(set.templates[0].key.name, "in-list");
    }

    #[test]
    fn duplicates_name_both_sources() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
        let (set, errors) = load(&[("a.yaml", cm), ("b.yaml", cm)]);
        assert_eq!(set.templates.len(), 1);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, PathBuf::from("b.yaml"));
        assert!(errors[0].message.contains("a.yaml: document 1"), "{}", errors[0]);
    }

    #[test]
    fn cluster_scoped_policies_lose_namespace_and_pp_gets_default() {
        let text = r#"
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: cpp, namespace: x}
spec: {resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: op}
spec: {}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1, namespace: karmada-cluster}
spec: {syncMode: Pull}
status: {kubernetesVersion: v1.30.0, somethingNew: 1}
"#;
        let (set, errors) = load(&[("a.yaml", text)]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(set.cluster_propagation_policies[0].meta.namespace, None);
        assert_eq!(set.override_policies[0].meta.namespace.as_deref(), Some("default"));
        assert_eq!(set.clusters[0].meta.namespace, None);
        assert_eq!(set.clusters[0].status.as_ref().and_then(|s| s.kubernetes_version.as_deref()), Some("v1.30.0"));
    }

    #[test]
    fn cluster_spec_is_strict_and_name_limited() {
        let long = "c".repeat(49);
        let text = format!(
            "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: a}}\nspec: {{syncMode: Push, zonez: [a]}}\n---\napiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {{name: {long}}}\nspec: {{syncMode: Push}}\n"
        );
        let (set, errors) = load(&[("c.yaml", &text)]);
        assert!(set.clusters.is_empty());
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].message.contains("unknown field `zonez`"), "{}", errors[0]);
        assert!(errors[1].message.contains("48"));
    }

    #[test]
    fn names() {
        assert!(check_dns1123_subdomain("a.b-c").is_ok());
        assert!(check_dns1123_subdomain("A").is_err());
        assert!(check_dns1123_subdomain("a..b").is_err());
        assert!(check_dns1123_label("a.b", 63).is_err());
        assert!(check_template_name("..").is_err());
        assert!(check_template_name("a/b").is_err());
        assert!(check_template_name("-ok.").is_ok());
    }

    #[test]
    fn walk_skips_hidden_and_survives_symlink_loops() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let root = dir.path();
        let cm = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\n");
        let _ = fs::create_dir_all(root.join("sub/deeper"));
        let _ = fs::create_dir_all(root.join(".git"));
        let _ = fs::write(root.join("sub/deeper/a.yaml"), cm("a"));
        let _ = fs::write(root.join("b.yml"), cm("b"));
        let _ = fs::write(root.join(".git/c.yaml"), cm("c"));
        let _ = fs::write(root.join("d.yaml~"), cm("d"));
        let _ = fs::write(root.join("e.txt"), cm("e"));
        #[cfg(unix)]
        {
            let _ = std::os::unix::fs::symlink(root, root.join("sub/loop"));
            // ConfigMap-volume layout: `x.yaml -> ..data/x.yaml`, `..data -> ..2024_01`.
            let _ = fs::create_dir_all(root.join("cm/..2024_01"));
            let _ = fs::write(root.join("cm/..2024_01/x.yaml"), cm("x"));
            let _ = std::os::unix::fs::symlink("..2024_01", root.join("cm/..data"));
            let _ = std::os::unix::fs::symlink("..data/x.yaml", root.join("cm/x.yaml"));
        }
        let (set, errors) = load_dir(root);
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<_> = set.templates.iter().map(|t| t.key.name.as_str()).collect();
        let want: &[&str] = if cfg!(unix) { &["a", "b", "x"] } else { &["a", "b"] };
        assert_eq!(names, want);
        let (_, errors) = load_dir(&root.join("missing"));
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn refresh_reports_changes_and_reads_only_what_stat_cannot_vouch_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cm = |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: a\n");
        fs::write(dir.path().join("a.yaml"), cm("one")).expect("write");
        fs::write(dir.path().join("b.yaml"), cm("two")).expect("write");
        let mut cache = ParseCache::default();
        let (changed, errors) = cache.refresh(dir.path());
        assert!(changed && errors.is_empty());
        // Just written: racy, read again, but the bytes are the same.
        let (changed, _) = cache.refresh(dir.path());
        assert!(!changed);
        // Age the cache entries: stats are trusted, so a file replaced by a different one
        // with the same stat would not be seen; a real edit changes the stat.
        for c in cache.files.values_mut() {
            c.read_at_ns = c.read_at_ns.saturating_add(10 * RACY_NS);
        }
        assert!(cache.files.values().all(|c| c.clean(c.stat)));
        fs::write(dir.path().join("a.yaml"), cm("three")).expect("write");
        let (changed, _) = cache.refresh(dir.path());
        assert!(changed);
        let (set, errors) = load_repository_refreshed(&cache, Vec::new());
        assert!(errors.is_empty(), "{errors:?}");
        let names: Vec<&str> = set.templates.iter().map(|t| t.key.name.as_str()).collect();
        assert_eq!(names, ["three", "two"]);
        // A file added, then removed.
        fs::write(dir.path().join("c.yaml"), cm("four")).expect("write");
        assert!(cache.refresh(dir.path()).0);
        fs::remove_file(dir.path().join("c.yaml")).expect("remove");
        assert!(cache.refresh(dir.path()).0);
        assert!(!cache.refresh(dir.path()).0);
        // A racy entry (modified within RACY_NS of its read) is not trusted.
        for c in cache.files.values_mut() {
            c.read_at_ns = c.stat.map_or(0, |s| s.mtime_ns);
        }
        assert!(cache.files.values().all(|c| !c.clean(c.stat)));
    }

    #[test]
    fn incremental_load_equals_a_whole_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let put = |name: &str, text: &str| fs::write(dir.path().join(name), text).expect("write");
        let crd = |scope: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.io\nspec:\n  group: example.io\n  names:\n    kind: Widget\n  scope: {scope}\n"
            )
        };
        let widget = "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: shop\n";
        let deploy = |name: &str, replicas: i64| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: shop\nspec:\n  replicas: {replicas}\n"
            )
        };
        let policy = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: p\n  namespace: shop\nspec:\n  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: Divided\n";
        put("a-widget.yaml", widget);
        put("b-crd.yaml", &crd("Cluster"));
        put("c-deploy.yaml", &format!("{}---\n{}", deploy("web", 2), deploy("api", 3)));
        put("d-policy.yaml", policy);
        let mut cache = ParseCache::default();
        let check = |cache: &mut ParseCache, what: &str| {
            let (_, io) = cache.refresh(dir.path());
            let incremental = load_repository_incremental(cache, io);
            let whole = load_repository(dir.path());
            assert!(incremental.0 == whole.0, "{what}: sets differ");
            assert_eq!(incremental.1, whole.1, "{what}");
            incremental.1.len()
        };
        assert_eq!(check(&mut cache, "first"), 0);
        put("c-deploy.yaml", &format!("{}---\n{}", deploy("web", 5), deploy("api", 3)));
        assert_eq!(check(&mut cache, "an edit"), 0);
        // A CRD's scope changes how an earlier file's custom resource is typed.
        put("b-crd.yaml", &crd("Namespaced"));
        assert_eq!(check(&mut cache, "a scope change"), 0);
        // A duplicate across files, then an error in one file: a whole load's errors.
        put("e-dup.yaml", &deploy("web", 1));
        assert_eq!(check(&mut cache, "a duplicate"), 1);
        put("e-dup.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\n");
        assert!(check(&mut cache, "an invalid name") > 0);
        fs::remove_file(dir.path().join("e-dup.yaml")).expect("remove");
        assert_eq!(check(&mut cache, "fixed"), 0);
    }
}
