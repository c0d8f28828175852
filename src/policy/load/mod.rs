//! Walks a policy directory and sorts its YAML documents into a [`PolicySet`].
//!
//! The steps, in order:
//!
//! 1. [`load_dir`] walks the directory (sorted, recursive, hidden entries, editor leftovers,
//!    ignore globs and known non-Kubernetes YAML skipped, symbolic links followed only inside
//!    the repository and every directory at most once; see `walk.rs` and [`WalkOptions`]) and
//!    reads every `*.yaml` / `*.yml`. What it skipped and why are the set's notes.
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
//!
//! Files, one concept each: this file holds the entry points (`load_*`); `walk.rs` the
//! directory walk and its skip rules; `parse.rs` document splitting, parsing and
//! [`yaml_options`]; `classify.rs` the classification of a document into a kind and its
//! checks; `scope.rs` which kinds are namespaced (CRD scopes, the built-in list);
//! `names.rs` the DNS-1123 and template name rules; `cache.rs` the [`ParseCache`];
//! `incremental.rs` [`load_repository_incremental`]; `error.rs` [`LoadError`].

mod cache;
mod classify;
mod decode;
mod error;
mod incremental;
mod names;
mod parse;
mod persist;
mod schema;
mod scope;
mod walk;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use cache::{ParseCache, RACY_NS};
pub(crate) use classify::{OBJECT_META_FIELDS, unknown_metadata_fields};
pub(crate) use decode::nearest;
pub use error::LoadError;
pub use incremental::{Spliced, load_repository_incremental, load_repository_spliced};
pub use names::{check_api_version, check_dns1123_label, check_dns1123_subdomain, check_kind, check_template_name};
pub use parse::{RawDocument, parse_document, split_documents, yaml_error, yaml_options};
pub use persist::{ParseStore, digest as parse_digest};
pub use schema::{SCHEMA_VERSION, UnknownField, known_kinds as schema_kinds, unknown_fields as schema_unknown_fields};
pub use scope::is_namespaced;
pub use walk::{IGNORE_FILE, Symlinks, WalkOptions};

use super::{PolicySet, Source};
use classify::{Loader, expand_lists, sort_set};
use parse::{Parsed, parse_file};
use scope::crd_scope;
use walk::{read_text, walk_dir};

/// Loads every `*.yaml` / `*.yml` file below `dir`. Returns the set of valid documents and
/// every error found (all of them, not only the first). A document with an error is dropped;
/// the other documents of the same file are still loaded.
///
/// Walk rules: entries are visited in byte order of their names, at any depth; hidden entries
/// (`.git`, `..data`, `.#foo.yaml`) and editor leftovers (`*~`, `*.swp`) are skipped, as are
/// the globs of a `.fedschedignore` and known non-Kubernetes YAML (Helm charts and values,
/// kustomizations: a note each); symbolic links are followed only when they resolve inside the
/// repository, and every directory is entered at most once (by canonical path), so symlink
/// loops and aliases do not load files twice (a note). A missing or unreadable `dir` is an
/// error. Uses the default [`WalkOptions`]; [`load_dir_cached`] with a [`ParseCache::with_options`]
/// for others.
///
/// Defaults and validation are not applied; see [`load_repository`].
pub fn load_dir(dir: &Path) -> (PolicySet, Vec<LoadError>) {
    load_dir_cached(dir, None)
}

/// [`load_dir`], reusing (and updating) `cache` when given.
pub fn load_dir_cached(dir: &Path, cache: Option<&mut ParseCache>) -> (PolicySet, Vec<LoadError>) {
    let Some(cache) = cache else { return load_dir_walked(dir, &WalkOptions::default()) };
    let (_, mut errors) = cache.refresh(dir);
    let (mut set, mut more) = load_parsed(cache.parsed_for_load());
    set.notes = cache.notes.clone();
    errors.append(&mut more);
    (set, errors)
}

/// [`load_dir`] walked with `options`, without a cache: every file read and parsed once, its
/// documents moved (not copied) into the set. What a one-shot command that keeps nothing
/// between loads uses (`fedsched plan`).
pub fn load_dir_walked(dir: &Path, options: &WalkOptions) -> (PolicySet, Vec<LoadError>) {
    let (read, mut errors) = read_repository(dir, options);
    let (mut set, mut more) = load_sources(read.files);
    set.notes = read.notes;
    errors.append(&mut more);
    (set, errors)
}

/// A repository's files as a load reads them, without the file system: what `fedsched plan`
/// sends to a running daemon ([`ParseCache::overlay`] loads it there).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepositoryFiles {
    /// Path relative to the repository and text, in walk order.
    pub files: Vec<(PathBuf, String)>,
    /// What the walk skipped, and why ([`PolicySet::notes`]).
    pub notes: Vec<LoadError>,
}

/// Walks `dir` with `options` and reads every file it loads ([`load_dir`]'s rules); the walk
/// and read errors beside.
pub fn read_repository(dir: &Path, options: &WalkOptions) -> (RepositoryFiles, Vec<LoadError>) {
    let walk = walk_dir(dir, options);
    let mut errors = walk.errors;
    let mut files = Vec::new();
    for (rel, _) in walk.files {
        match read_text(dir, &rel) {
            Ok(text) => files.push((rel, text)),
            Err(e) => errors.push(e),
        }
    }
    (RepositoryFiles { files, notes: walk.notes }, errors)
}

/// [`load_repository`] of what the last [`ParseCache::refresh`] read, with its walk and read
/// errors first.
pub fn load_repository_refreshed(cache: &ParseCache, io_errors: Vec<LoadError>) -> (PolicySet, Vec<LoadError>) {
    let mut errors = io_errors;
    let (mut set, mut more) = load_parsed(cache.parsed());
    set.notes = cache.notes.clone();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A load through a parse cache walks with the cache's options and gives what an
    /// uncached whole load walked with the same options gives: set, notes and errors.
    #[test]
    fn a_walked_load_equals_a_cached_one_with_the_same_options() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deploy = |name: &str| {
            format!("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: shop\n")
        };
        fs::create_dir_all(dir.path().join("apps/skip")).expect("mkdir");
        fs::write(dir.path().join("apps/web.yaml"), deploy("web")).expect("write");
        fs::write(dir.path().join("apps/skip/api.yaml"), deploy("api")).expect("write");
        fs::write(
            dir.path().join("apps/bad.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: Bad_Name\n",
        )
        .expect("write");
        fs::write(dir.path().join("apps/values.yaml"), "replicas: 3\n").expect("write");
        let options = WalkOptions { ignore: vec!["skip".into()], ..WalkOptions::default() };
        let walked = {
            let (mut set, mut errors) = load_dir_walked(dir.path(), &options);
            super::super::defaults::apply(&mut set);
            errors.extend(super::super::validate::validate(&set));
            (set, errors)
        };
        let cached = load_repository_cached(dir.path(), Some(&mut ParseCache::with_options(options)));
        assert!(walked.0 == cached.0, "sets differ");
        assert_eq!(walked.1, cached.1);
        assert!(!walked.1.is_empty(), "the invalid name is an error");
        let names: Vec<&str> = walked.0.templates.iter().map(|t| t.key.name.as_str()).collect();
        assert_eq!(names, ["web"], "the ignored directory is not read");
    }
}
