//! [`ParseCache`]: what a previous load parsed, per file, so that a reload reads and parses
//! only the files that changed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::LoadError;
use super::incremental::Typed;
use super::parse::{Parsed, parse_file};
use super::persist::{self, ParseStore};
use super::walk::{FileStat, WalkOptions, read_text, walk_dir};
pub use crate::util::stat::RACY_NS;
use crate::util::stat::wall_ns;

/// The parsed documents of every file loaded before, keyed by path and content hash (FNV-1a
/// 64): a file whose bytes did not change is not parsed again (YAML parsing is most of a
/// load). Files that disappear are forgotten at the next load.
///
/// Each file's length, modification time and inode are kept too: a file whose stat did not
/// change is not even read, unless it is "racy" (git's rule): modified within
/// [`RACY_NS`] of when it was read, when a second write in the same clock tick could have
/// left the stat unchanged. [`ParseCache::refresh`] says whether anything changed at all, so
/// a caller can reuse what it built from the previous load.
///
/// With a [`ParseStore`] ([`ParseCache::keep_in`]), what is parsed is also kept there, and a
/// file read for the first time (a restart) takes its documents from there when its bytes
/// were parsed before: a restart reads the repository but parses only what changed.
#[derive(Default)]
pub struct ParseCache {
    pub(super) files: HashMap<PathBuf, CachedFile>,
    /// The files of the last refresh, in walk order (those that were read).
    pub(super) order: Vec<PathBuf>,
    /// How the repository is walked.
    pub(super) options: WalkOptions,
    /// What the last walk skipped, and why ([`crate::policy::PolicySet::notes`]).
    pub(super) notes: Vec<LoadError>,
    /// Whether the last walk reached the repository through a symbolic link
    /// ([`ParseCache::through_links`]).
    pub(super) links: bool,
    /// Where parsed documents are kept across processes, if anywhere.
    persisted: Option<std::sync::Arc<dyn ParseStore>>,
    /// The files the refreshes since the last merge of the set ([`super::load_repository_incremental`])
    /// found with other bytes, with what each gave before: what [`super::load_repository_spliced`]
    /// puts into that set instead of merging every file again. `None` when a refresh since
    /// changed more than bytes (a file added, removed or unreadable, other notes) or stopped
    /// half-way: then only a merge makes the set.
    pub(super) replaced: Option<Vec<super::incremental::ReplacedFile>>,
    /// Made for one load ([`ParseCache::one_shot`]): the load moves the documents out instead of
    /// copying them, so every refresh starts afresh.
    one_shot: bool,
}

impl std::fmt::Debug for ParseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParseCache")
            .field("files", &self.files.len())
            .field("options", &self.options)
            .field("notes", &self.notes)
            .field("links", &self.links)
            .field("persisted", &self.persisted.is_some())
            .finish()
    }
}

#[derive(Debug, Clone)]
pub(super) struct CachedFile {
    pub(super) hash: u64,
    pub(super) len: usize,
    /// Shared: an overlay ([`ParseCache::overlay`]) copies a file without its documents.
    pub(super) docs: std::sync::Arc<Parsed>,
    /// The file's text (stored with the decisions of a pass, for replay).
    pub(super) text: std::sync::Arc<str>,
    /// Stat taken when the file was walked before it was read; None = not trusted.
    pub(super) stat: Option<FileStat>,
    /// Wall clock (ns since the epoch) just before the file was read.
    pub(super) read_at_ns: i128,
    /// The file loaded on its own ([`super::load_repository_incremental`]); forgotten when its bytes
    /// change.
    pub(super) typed: Option<Typed>,
    /// The CRDs its documents define (group, kind, namespaced), in order; listed on first use
    /// ([`super::load_repository_incremental`]) and forgotten with the documents.
    pub(super) crds: Option<Vec<(String, String, bool)>>,
    /// Its key in the [`ParseStore`] ([`persist::digest`]), when one is used.
    pub(super) digest: Option<[u8; 32]>,
}

impl CachedFile {
    /// Whether `now` (the stat of the file now) proves the bytes are those cached.
    fn clean(&self, now: Option<FileStat>) -> bool {
        match (self.stat, now) {
            (Some(then), Some(now)) => then == now && now.settled_at(self.read_at_ns),
            _ => false,
        }
    }
}

/// What [`ParseCache::refresh`] read of a file its stat did not vouch for.
enum Read {
    /// The bytes are the cached ones: only the stat and the time of the read are new.
    Same { stat: Option<FileStat>, read_at_ns: i128 },
    /// Other bytes, parsed (or their documents taken from the [`ParseStore`]), with the
    /// encoded documents to keep there when they were parsed here.
    New(Box<CachedFile>, Option<Vec<u8>>),
}

/// The documents of `text`: from `persisted` when kept there, else parsed (and encoded to be
/// kept there). Returns them, the file's key in the store and the encoding to keep.
fn parse_kept(
    text: &str,
    persisted: Option<&dyn ParseStore>,
) -> (std::sync::Arc<Parsed>, Option<[u8; 32]>, Option<Vec<u8>>) {
    let Some(store) = persisted else { return (std::sync::Arc::new(parse_file(text)), None, None) };
    let digest = persist::digest(text);
    if let Some(docs) = store.get(&digest).and_then(|bytes| persist::decode(&bytes)) {
        return (std::sync::Arc::new(docs), Some(digest), None);
    }
    let docs = parse_file(text);
    // A Secret's data is never stored: a file with one is parsed again after a restart.
    if docs.iter().any(|(_, d)| d.as_ref().is_ok_and(is_secret)) {
        return (std::sync::Arc::new(docs), None, None);
    }
    let kept = persist::encode(&docs);
    (std::sync::Arc::new(docs), Some(digest), Some(kept))
}

/// Whether a document is a core/v1 Secret.
fn is_secret(v: &serde_json::Value) -> bool {
    v.get("apiVersion").and_then(serde_json::Value::as_str) == Some("v1")
        && v.get("kind").and_then(serde_json::Value::as_str) == Some("Secret")
}

/// Reads the file at `rel` (its stat taken before the read: `stat`) and says whether its bytes
/// are the cached ones (`files`), or parses them (or takes their documents from `persisted`).
fn read_one(
    files: &HashMap<PathBuf, CachedFile>,
    persisted: Option<&dyn ParseStore>,
    dir: &Path,
    rel: &Path,
    stat: Option<FileStat>,
) -> Result<Read, LoadError> {
    let read_at_ns = wall_ns();
    let text = read_text(dir, rel)?;
    let hash = crate::util::hash::fnv1a64(text.as_bytes());
    Ok(match files.get(rel) {
        Some(c) if c.hash == hash && c.len == text.len() => Read::Same { stat, read_at_ns },
        _ => {
            let (docs, digest, kept) = parse_kept(&text, persisted);
            let (len, text) = (text.len(), std::sync::Arc::from(text));
            let file = CachedFile { hash, len, docs, text, stat, read_at_ns, typed: None, crds: None, digest };
            Read::New(Box::new(file), kept)
        }
    })
}

impl ParseCache {
    /// An empty cache whose walks use `options`.
    pub fn with_options(options: WalkOptions) -> Self {
        ParseCache { options, ..Default::default() }
    }

    /// A cache for one load that keeps nothing for another (`check`, `render`): the load moves
    /// every document out of it into the set instead of copying it (a copy of every parsed
    /// document was a third of `check`'s peak memory on a large repository, BENCHMARKS.md); the
    /// files' texts stay ([`ParseCache::sources`]).
    pub fn one_shot(options: WalkOptions) -> Self {
        ParseCache { options, one_shot: true, ..Default::default() }
    }

    /// The documents of the last refresh for a load: moved out of a one-shot cache, else copied.
    pub(super) fn parsed_for_load(&mut self) -> Vec<(PathBuf, Parsed)> {
        if self.one_shot { self.take_parsed() } else { self.parsed() }
    }

    /// [`ParseCache::parsed`], moved out of the cache: each file keeps its text and stat but not
    /// its documents (a one-shot cache's next refresh reads and parses everything again).
    fn take_parsed(&mut self) -> Vec<(PathBuf, Parsed)> {
        let files = &mut self.files;
        self.order
            .iter()
            .filter_map(|rel| {
                let c = files.get_mut(rel)?;
                let docs = std::mem::take(&mut c.docs);
                Some((rel.clone(), std::sync::Arc::try_unwrap(docs).unwrap_or_else(|shared| (*shared).clone())))
            })
            .collect()
    }

    /// Whether the last walk reached the repository through a symbolic link (one followed in
    /// it, or one on its path): a watch of the directory does not see such a link swapped.
    pub fn through_links(&self) -> bool {
        self.links
    }

    /// Uses `options` from now on; forgets everything when they differ from the current ones
    /// (the [`ParseStore`] stays).
    pub fn set_options(&mut self, options: &WalkOptions) {
        if &self.options != options {
            let persisted = self.persisted.take();
            *self = ParseCache::with_options(options.clone());
            self.persisted = persisted;
        }
    }

    /// Keeps what is parsed in `store` too, and takes what a file parsed to from there when
    /// its bytes were parsed before (a restart).
    pub fn keep_in(&mut self, store: std::sync::Arc<dyn ParseStore>) {
        self.persisted = Some(store);
    }

    /// Walks `dir` and brings the cache up to date: files whose stat proves them unchanged are
    /// not read, files read are parsed only when their bytes changed. Returns whether the
    /// repository differs from the previous refresh (a file added, removed, renamed or with
    /// other bytes; always true on the first refresh and when a file could not be read) and
    /// the walk and read errors.
    pub fn refresh(&mut self, dir: &Path) -> (bool, Vec<LoadError>) {
        if self.one_shot {
            self.files.clear();
            self.order.clear();
        }
        let first = self.order.is_empty() && self.files.is_empty();
        let walk = walk_dir(dir, &self.options);
        let (walked, mut errors) = (walk.files, walk.errors);
        let mut changed = first || !errors.is_empty() || walk.notes != self.notes;
        let changed_shape = changed;
        self.notes = walk.notes;
        self.links = walk.links;
        // Files whose stat does not vouch for them are read, and parsed when their bytes
        // changed, on every core (a first load parses every file: most of a restart's load);
        // the answers are applied in walk order.
        let unclean: Vec<(&PathBuf, Option<FileStat>)> = walked
            .iter()
            .filter(|(rel, stat)| !self.files.get(rel).is_some_and(|c| c.clean(*stat)))
            .map(|(r, s)| (r, *s))
            .collect();
        let (files, persisted) = (&self.files, self.persisted.as_deref());
        let read = crate::util::threads::map_ordered(&unclean, crate::util::threads::workers(), |(rel, stat)| {
            read_one(files, persisted, dir, rel, *stat)
        });
        let mut answers = unclean.iter().map(|(rel, _)| *rel).zip(read).peekable();
        let mut order = Vec::with_capacity(walked.len());
        // Parsed here, to keep in the store; the keys of the files replaced or removed.
        let (mut to_keep, mut gone) = (Vec::new(), Vec::new());
        for (rel, _) in &walked {
            let answer = match answers.peek() {
                Some((r, _)) if *r == rel => answers.next().map(|(_, a)| a),
                _ => None,
            };
            match answer {
                None => {}
                Some(Err(e)) => {
                    errors.push(e);
                    changed = true;
                    continue;
                }
                Some(Ok(read)) => changed |= self.apply(rel, read, &mut to_keep, &mut gone),
            }
            order.push(rel.clone());
        }
        // More than bytes changed: the set is merged again.
        if changed_shape || order != self.order {
            self.replaced = None;
        }
        changed |= order != self.order;
        let seen: HashSet<&PathBuf> = order.iter().collect();
        self.files.retain(|k, f| {
            let keep = seen.contains(k);
            if !keep {
                gone.extend(f.digest);
            }
            keep
        });
        self.order = order;
        if let Some(store) = self.persisted.as_deref() {
            self.keep(store, first, to_keep, gone);
        }
        (changed, errors)
    }

    /// [`ParseCache::refresh`] when only the files at `changed` (relative to `dir`) may differ
    /// from the last refresh: what a watch of the directory says (the daemon's). Reads those
    /// files only, and does not walk. `None` when that cannot be vouched for, so the caller
    /// walks ([`ParseCache::refresh`]): a path that is not a file the last walk read (added,
    /// or not a YAML file: a directory, the ignore file), a file that is gone or no longer a
    /// regular file (a link now), one that cannot be read, no refresh before, or a repository
    /// the last walk reached through a symbolic link, or a one-shot cache.
    pub fn refresh_files(&mut self, dir: &Path, changed: &[PathBuf]) -> Option<(bool, Vec<LoadError>)> {
        if self.order.is_empty() || self.links || self.one_shot {
            return None;
        }
        let mut stats = Vec::with_capacity(changed.len());
        for rel in changed {
            if !self.files.contains_key(rel) {
                return None;
            }
            stats.push((rel, Some(FileStat::of_path(&dir.join(rel))?)));
        }
        let (mut to_keep, mut gone) = (Vec::new(), Vec::new());
        let mut any = false;
        for (rel, stat) in stats {
            if self.files.get(rel).is_some_and(|c| c.clean(stat)) {
                continue;
            }
            let Ok(read) = read_one(&self.files, self.persisted.as_deref(), dir, rel, stat) else {
                // Stopped half-way (the caller walks): the set is merged again.
                self.replaced = None;
                return None;
            };
            any |= self.apply(rel, read, &mut to_keep, &mut gone);
        }
        if let Some(store) = self.persisted.as_deref() {
            self.keep(store, false, to_keep, gone);
        }
        Some((any, Vec::new()))
    }

    /// Applies what a refresh read of the file at `rel`: returns whether its bytes changed;
    /// what to keep in the store and the keys it no longer needs go to `to_keep` and `gone`.
    fn apply(
        &mut self,
        rel: &Path,
        read: Read,
        to_keep: &mut Vec<([u8; 32], Vec<u8>)>,
        gone: &mut Vec<[u8; 32]>,
    ) -> bool {
        match read {
            Read::Same { stat, read_at_ns } => {
                if let Some(c) = self.files.get_mut(rel) {
                    c.stat = stat;
                    c.read_at_ns = read_at_ns;
                }
                false
            }
            Read::New(file, kept) => {
                if let (Some(digest), Some(kept)) = (file.digest, kept) {
                    to_keep.push((digest, kept));
                }
                if let Some(old) = self.files.insert(rel.to_path_buf(), *file) {
                    gone.extend(old.digest);
                    if let Some(replaced) = self.replaced.as_mut() {
                        replaced.push(super::incremental::ReplacedFile::of(rel, old));
                    }
                }
                true
            }
        }
    }

    /// Keeps what a refresh parsed in `store` and forgets what the repository no longer
    /// holds: after the first refresh of a process, every entry of no current file (files
    /// changed while no process ran, if anything was parsed); later, the keys of the files
    /// replaced or removed, unless another file has the same bytes.
    fn keep(&self, store: &dyn ParseStore, first: bool, to_keep: Vec<([u8; 32], Vec<u8>)>, gone: Vec<[u8; 32]>) {
        if to_keep.is_empty() && gone.is_empty() {
            return;
        }
        if !to_keep.is_empty() {
            store.put(to_keep);
        }
        if first {
            let current: HashSet<[u8; 32]> = self.files.values().filter_map(|f| f.digest).collect();
            store.retain(&current);
        } else if !gone.is_empty() {
            // The few digests gone are looked for among the current files' (an edit has one):
            // no set of every file's digest is built for them.
            let mut gone = gone;
            gone.sort_unstable();
            gone.dedup();
            for f in self.files.values() {
                if let Some(d) = &f.digest
                    && let Ok(i) = gone.binary_search(d)
                {
                    gone.remove(i);
                    if gone.is_empty() {
                        return;
                    }
                }
            }
            store.remove(gone);
        }
    }

    /// The files of the last refresh, in walk order: path relative to the repository, content
    /// hash (FNV-1a 64), text. What a pass stores so that it can be replayed.
    pub fn sources(&self) -> Vec<(PathBuf, u64, std::sync::Arc<str>)> {
        self.order.iter().filter_map(|rel| self.files.get(rel).map(|c| (rel.clone(), c.hash, c.text.clone()))).collect()
    }

    /// The content hash and text of the file at `rel`, as [`ParseCache::sources`] lists it.
    pub fn source_of(&self, rel: &Path) -> Option<(u64, std::sync::Arc<str>)> {
        self.files.get(rel).map(|c| (c.hash, c.text.clone()))
    }

    /// The parsed documents of the files of the last refresh, in walk order.
    pub(super) fn parsed(&self) -> Vec<(PathBuf, Parsed)> {
        self.order.iter().filter_map(|rel| self.files.get(rel).map(|c| (rel.clone(), (*c.docs).clone()))).collect()
    }

    /// A cache of the repository given as `files` (path relative to the repository, text, in
    /// walk order) and the walk's `notes`, made without the file system: a file whose path and
    /// bytes this cache holds keeps what was parsed and typed of it here (shared, not copied),
    /// the others are parsed. What `fedsched plan` through the daemon loads a pull request's
    /// repository with: a one-file change parses one file. This cache is not changed.
    pub fn overlay(&self, files: Vec<(PathBuf, String)>, notes: Vec<LoadError>) -> ParseCache {
        let mut out = ParseCache { options: self.options.clone(), notes, ..Default::default() };
        for (rel, text) in files {
            let hash = crate::util::hash::fnv1a64(text.as_bytes());
            let file = match self.files.get(&rel) {
                Some(c) if c.hash == hash && c.len == text.len() => c.clone(),
                _ => {
                    let docs = std::sync::Arc::new(parse_file(&text));
                    let (len, text) = (text.len(), std::sync::Arc::from(text));
                    CachedFile {
                        hash,
                        len,
                        docs,
                        text,
                        stat: None,
                        read_at_ns: 0,
                        typed: None,
                        crds: None,
                        digest: None,
                    }
                }
            };
            if out.files.insert(rel.clone(), file).is_none() {
                out.order.push(rel);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load::load_repository_refreshed;
    use std::fs;

    /// A one-shot cache's load takes the documents (no copy of each) and gives the same set; its
    /// sources stay, and a refresh after the take reads and parses everything again.
    #[test]
    fn a_one_shot_load_moves_the_documents_out_and_loads_the_same_set() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cm = |name: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: a}}\ndata: {{k: v}}\n")
        };
        fs::write(dir.path().join("a.yaml"), cm("one") + "---\n" + &cm("two")).expect("write");
        let mut kept = ParseCache::default();
        let (want, _) = crate::policy::load::load_dir_cached(dir.path(), Some(&mut kept));
        assert!(kept.files.values().all(|c| !c.docs.is_empty()), "a kept cache keeps its documents");
        let mut once = ParseCache::one_shot(WalkOptions::default());
        let (got, errors) = crate::policy::load::load_dir_cached(dir.path(), Some(&mut once));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(got.templates, want.templates);
        assert!(once.files.values().all(|c| c.docs.is_empty()), "the documents were copied, not moved");
        assert_eq!(once.sources().len(), 1);
        let (again, _) = crate::policy::load::load_dir_cached(dir.path(), Some(&mut once));
        assert_eq!(again.templates, want.templates);
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
}
