//! The policy repository target: the demo repository and the fuzzer's own seed documents
//! (every kind the loader classifies), some files mutated as documents and some as bytes,
//! odd file names and symbolic links added; then what `check` runs (the loader of `check`,
//! `render` and the daemon, defaults, validation, the per-workload findings, warnings, claims)
//! and, for one case in [`PASS_EVERY`], a whole pass into a fresh store and output directory.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::mutate::{Rng, mutate_bytes, mutate_value, to_text};
use crate::config::Config;
use crate::policy::load::{parse_document, split_documents};
use crate::reconcile::{self, Reconciler, Settings};

/// One case in this many also runs a whole pass (a store and an output directory each).
const PASS_EVERY: u64 = 8;

/// The seed files: the demo repository and `seeds.yaml`.
const SEEDS: &[(&str, &str)] = &[
    ("apps/api.yaml", include_str!("../../../config/demo/apps/api.yaml")),
    ("apps/edge.yaml", include_str!("../../../config/demo/apps/edge.yaml")),
    ("apps/namespaces.yaml", include_str!("../../../config/demo/apps/namespaces.yaml")),
    ("apps/trainer.yaml", include_str!("../../../config/demo/apps/trainer.yaml")),
    ("apps/web.yaml", include_str!("../../../config/demo/apps/web.yaml")),
    ("clusters/eu-west.yaml", include_str!("../../../config/demo/clusters/eu-west.yaml")),
    ("clusters/us-east.yaml", include_str!("../../../config/demo/clusters/us-east.yaml")),
    ("policies/ml.yaml", include_str!("../../../config/demo/policies/ml.yaml")),
    ("policies/platform.yaml", include_str!("../../../config/demo/policies/platform.yaml")),
    ("policies/shop.yaml", include_str!("../../../config/demo/policies/shop.yaml")),
    ("seeds.yaml", include_str!("seeds.yaml")),
];

/// The seed files, with extra ones read from `--corpus` directories.
pub struct Corpus {
    files: Vec<(String, String)>,
    /// Each file's documents, parsed once (not once per case that mutates the file).
    parsed: Vec<Vec<Value>>,
    /// Every seed document, parsed (subtrees of them are spliced into others).
    docs: Vec<Value>,
}

impl Corpus {
    pub fn new(extra: &[(String, String)]) -> Corpus {
        let files: Vec<(String, String)> =
            SEEDS.iter().map(|(n, t)| (n.to_string(), t.to_string())).chain(extra.iter().cloned()).collect();
        let parsed: Vec<Vec<Value>> = files.iter().map(|(_, t)| parse_all(t)).collect();
        let docs = parsed.iter().flatten().cloned().collect();
        Corpus { files, parsed, docs }
    }

    pub(super) fn docs(&self) -> &[Value] {
        &self.docs
    }
}

fn parse_all(text: &str) -> Vec<Value> {
    split_documents(text).iter().filter_map(|d| parse_document(d).ok()).filter(|v| !v.is_null()).collect()
}

/// A generated repository.
#[derive(Debug)]
pub struct RepoCase {
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// (link, where it points).
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Whether a whole pass runs too.
    pub pass: bool,
}

const ODD_NAMES: &[&str] = &[
    ".fedschedignore",
    "kustomization.yaml",
    "values.yaml",
    "Chart.yaml",
    "deep/a/b/c/d/e/f.yaml",
    "x.yml",
    "é.yaml",
    "-.yaml",
    "a b.yaml",
    ".hidden.yaml",
    "editor.yaml~",
];

pub(crate) fn generate(rng: &mut Rng, corpus: &Corpus) -> RepoCase {
    let mut files = Vec::new();
    for ((name, text), parsed) in corpus.files.iter().zip(&corpus.parsed) {
        // The clusters are usually kept: without them nothing is placed.
        let keep = if name.starts_with("clusters/") { 90 } else { 70 };
        if !rng.chance(keep) {
            continue;
        }
        let mut bytes = if rng.chance(45) {
            let mut docs = parsed.clone();
            let n = docs.len() as u64;
            for _ in 0..rng.range(1, 3) {
                if n > 0 {
                    let i = rng.below(n) as usize;
                    mutate_value(rng, &mut docs[i], &corpus.docs, 4);
                }
            }
            let texts: Option<Vec<String>> = docs.iter().map(|d| to_text(rng, d)).collect();
            texts.map(|t| t.join("---\n")).unwrap_or_else(|| text.clone()).into_bytes()
        } else {
            text.clone().into_bytes()
        };
        if rng.chance(20) {
            mutate_bytes(rng, &mut bytes, 3);
        }
        files.push((PathBuf::from(name), bytes));
    }
    if rng.chance(10) {
        let name = *rng.pick(ODD_NAMES);
        let content = match name {
            ".fedschedignore" => rng.pick(&["*.yaml\n", "apps/\n", "[\n", "**\n", "!x\n"]).as_bytes().to_vec(),
            _ => {
                let d = rng.pick(&corpus.docs).clone();
                to_text(rng, &d).unwrap_or_default().into_bytes()
            }
        };
        files.push((PathBuf::from(name), content));
    }
    let mut links = Vec::new();
    if rng.chance(4) {
        let (link, to) =
            *rng.pick(&[("loop", "."), ("root", "/"), ("up", ".."), ("apps/again", "../apps"), ("gone", "nowhere")]);
        links.push((PathBuf::from(link), PathBuf::from(to)));
    }
    let size: usize = files.iter().map(|(_, b)| b.len()).sum();
    RepoCase { files, links, pass: rng.chance(100 / PASS_EVERY) && size < (4 << 20) }
}

/// Writes the case under `work` and runs it. `Err`: what went wrong other than a panic (none
/// is expected: every input is either loaded or refused with errors).
pub fn run(case: &RepoCase, work: &Path) -> Result<(), String> {
    let dir = work.join("repo");
    fresh(&dir)?;
    for (name, bytes) in &case.files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    for (link, to) in &case.links {
        let path = dir.join(link);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let _ = std::os::unix::fs::symlink(to, &path);
    }
    let settings = settings()?;
    // What `check` runs, but its Secret findings (private to `cli::check`, which the test bed
    // cannot name: `cli` dispatches into it).
    let inputs = match reconcile::load_inputs(reconcile::Repository::Dir(&dir), &settings) {
        Ok(inputs) => inputs,
        Err(_) => return Ok(()),
    };
    let _ = reconcile::template_errors(&inputs);
    let _ = crate::policy::validate::warnings(&inputs.set);
    // Every Cluster offline (the default configuration has no live access): every stage named.
    let _ = crate::policy::validate::rollout_offline_notes(&inputs.set, |_| false);
    for t in &inputs.set.templates {
        if let Some(c) = crate::policy::matching::claim(&inputs.set, t) {
            for sh in &c.shadowed {
                let _ = crate::policy::matching::shadow_reason(&inputs.set, t, &c, sh);
            }
        }
    }
    if !case.pass {
        return Ok(());
    }
    // A whole pass, as `render` runs it.
    let (state, out) = (work.join("state"), work.join("out"));
    fresh(&state)?;
    fresh(&out)?;
    let store = crate::store::Store::open(&state).map_err(|e| format!("store: {e}"))?;
    let reconciler = Reconciler::new(store, settings);
    let _ = reconciler.reconcile(&inputs, &out, crate::publish::Trigger::Render, 1_767_225_600_000);
    Ok(())
}

fn settings() -> Result<Settings, String> {
    Settings::from_config(&Config::default(), true).map_err(|e| e.to_string())
}

/// `dir` empty (made, or emptied).
pub(super) fn fresh(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The case as text, for a person: each file (lossy UTF-8) and link.
pub fn show(case: &RepoCase) -> String {
    let mut s = String::new();
    for (name, bytes) in &case.files {
        s.push_str(&format!("==> {} ({} bytes)\n{}\n", name.display(), bytes.len(), String::from_utf8_lossy(bytes)));
    }
    for (link, to) in &case.links {
        s.push_str(&format!("==> {} -> {}\n", link.display(), to.display()));
    }
    s
}
